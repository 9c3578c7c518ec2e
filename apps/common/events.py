"""Every kind of event automation may subscribe to, contributed by the app where its
fact happens, and the one call that announces one.

An app declares its kinds where it emits them (`CLONE_READY = register(EventKind(
"clone.ready", ...))`) and calls `CLONE_READY.emit(about, **data)` at the one
place the fact happens. apps/events keeps the events and delivers them to
subscriptions: it registers its recorder here with `set_sink()` at ready, so no
emitting app imports apps/events (as apps/common/alert_kinds.py does for alerts).
The registry is open: a later feature (rollouts) registers its own kinds and
touches nothing else.

The recorder writes the event in the caller's transaction (so an event exists
exactly when its fact was committed) and hands its deliveries to the workers
after commit. Pure: no Django.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

NAME = re.compile(r"^[a-z_]{1,24}\.[a-z_]{1,24}$")  # "<thing>.<what happened>"

log = logging.getLogger("pozol.events")

Sink = Callable[[str, dict, dict], None]


@dataclass(frozen=True)
class EventKind:
    name: str
    title: str

    def emit(self, about: dict, /, **data: Any) -> None:
        """Announce that this happened to `about` (its type, id and name). Never
        raises: a fact is not undone because telling automation about it failed."""
        if _sink is None:
            return
        try:
            _sink(self.name, about, data)
        except Exception:  # noqa: BLE001  the fact stands; the sink logs its own errors
            log.exception("event %s about %s was not recorded", self.name, about)


_kinds: dict[str, EventKind] = {}
_sink: Sink | None = None


def register(kind: EventKind) -> EventKind:
    if not NAME.match(kind.name):
        raise ValueError(f"event kind {kind.name!r}: use <thing>.<what>, a-z and _")
    if _kinds.setdefault(kind.name, kind) != kind:
        raise ValueError(f"event kind {kind.name!r} is registered twice, differently")
    return kind


def get(name: str) -> EventKind | None:
    return _kinds.get(name)


def kinds() -> list[EventKind]:
    return sorted(_kinds.values(), key=lambda kind: kind.name)


class Choices(Sequence):
    """(name, title) of the kinds registered when read, not when a field was made."""

    def _pairs(self) -> list[tuple[str, str]]:
        return [(kind.name, kind.title) for kind in kinds()]

    def __getitem__(self, index):
        return self._pairs()[index]

    def __len__(self) -> int:
        return len(self._pairs())


def set_sink(sink: Sink | None) -> None:
    global _sink
    _sink = sink
