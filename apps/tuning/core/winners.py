"""Values a profile leaves to this host's experiments ("recordsize": "experiment").

The service looks up what the newest finished experiment on each dataset named the
winner (apps/tuning/evidence.py) and hands the planner a `Winners` mapping, so a plan
stays a pure function of facts and desired state. A value no experiment has decided is
never guessed: its change is shown as not planned, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from apps.remote.facts.host import HostFacts
from apps.tuning.core import facts as r
from apps.tuning.core.profiles import EXPERIMENT, ProfileSettings


@dataclass(frozen=True)
class Winner:
    value: str | None  # what the newest finished experiment named the winner; None: nothing
    reason: str  # which experiment said so, or why there is no value


# (dataset, property) -> what this host's experiments decided for it
Winners = Mapping[tuple[str, str], Winner]


def none_yet(dataset: str, key: str) -> Winner:
    return Winner(None, f"no {key} experiment on this host has named a winner for {dataset};"
                        " run one")


def wanted(facts: HostFacts, settings: ProfileSettings) -> list[tuple[str, str]]:
    """(dataset, property) for every value the profile leaves to an experiment here."""
    return sorted({(name, key) for cluster in facts.clusters
                   for role, names in r.roles(facts, cluster).items() for name in names
                   for key, value in settings.zfs.get(role, {}).items() if value == EXPERIMENT})


def winner_of(winners: Winners | None, dataset: str, key: str) -> Winner:
    return (winners or {}).get((dataset, key)) or none_yet(dataset, key)
