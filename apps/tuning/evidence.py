"""What this host's experiments decided, for the profile values left to them.

Experiments are built on tuning (they write through apps.tuning.appliers), so tuning
imports nothing of them: apps.experiments registers a finder here in its
AppConfig.ready(). A finder answers, for a host and (dataset, property) pairs, the
winner of the newest finished experiment on each pair it knows; a pair nobody answers
has no winner yet, and its change is not planned.
"""

from __future__ import annotations

from collections.abc import Callable

from apps.fleet.models import Host
from apps.remote.facts.host import HostFacts
from apps.tuning.core.profiles import ProfileSettings
from apps.tuning.core.winners import Winner, Winners, wanted

Finder = Callable[[Host, list[tuple[str, str]]], dict[tuple[str, str], Winner]]

FINDERS: list[Finder] = []


def winners(host: Host, facts: HostFacts, settings: ProfileSettings) -> Winners:
    """No query at all unless the profile leaves a value to an experiment."""
    pairs = wanted(facts, settings)
    found: dict[tuple[str, str], Winner] = {}
    if pairs:
        for finder in FINDERS:
            found.update(finder(host, pairs))
    return found
