"""Every kind of alert, contributed by the app that raises it, and the calls that raise
and resolve one.

An app that sees a condition declares its kinds in its own `alert_kinds.py`
(`NAME = register(AlertKind(...))`, imported by its AppConfig.ready()) and raises
them with `NAME.raise_or_resolve(host, message)` and friends. apps/alerts stores
the alerts (its Alert model, registered here with `set_store()` at ready), gives
each kind a Rule and delivers them; it reads the kinds from here, so adding one
touches the app that raises it and nothing else: no list to extend, no migration.

Here rather than in apps/alerts because fleet raises alerts too, and snapshots and
replication, which apps/alerts' evaluator sits above (through telemetry): they
reach the store through this module and import nothing of apps/alerts. Pure: no
Django, so apps/alerts/core can read the kinds as well.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Any, Protocol

NAME = re.compile(r"^[a-z_]{1,32}$")  # the Alert and Rule columns, and the rule's URL


@dataclass(frozen=True)
class AlertKind:
    name: str
    title: str
    _: KW_ONLY
    evaluated: bool = False  # decided by apps/alerts' evaluator; else raised by its source
    unit: str = ""  # of the threshold; "" when the rule has none
    minimum: float = 0
    maximum: float = 0
    threshold: float | None = None  # the default
    hysteresis: float = 0  # the default margin before a numeric condition clears
    for_minutes: int = 0  # the default time open before it is delivered
    clear_minutes: int = 5  # the default time resolved before that is delivered

    def raise_once(self, host: Any, message: str) -> None:
        """Open on `host` (an open one keeps its message)."""
        _the_store().raise_once(host, self.name, message)

    def raise_or_resolve(self, host: Any, message: str | None) -> None:
        """Open and saying `message` while there is one; resolved when it is None."""
        _the_store().raise_or_resolve(host, self.name, message)

    def resolve(self, host: Any, at: datetime | None = None) -> None:
        _the_store().resolve(self.name, host=host, at=at)

    def resolve_except(self, host_ids: list[int], at: datetime | None = None) -> None:
        """Resolved on every host but these."""
        _the_store().resolve(self.name, except_host_ids=host_ids, at=at)


class Store(Protocol):
    """Where alerts are kept: apps.alerts.models.Alert."""

    def raise_once(self, host: Any, kind: str, message: str) -> Any: ...

    def raise_or_resolve(self, host: Any, kind: str, message: str | None) -> None: ...

    def resolve(self, kind: str, *, host: Any = None, except_host_ids: list[int] | None = None,
                at: datetime | None = None) -> None: ...


_kinds: dict[str, AlertKind] = {}
_store: Store | None = None


def register(kind: AlertKind) -> AlertKind:
    if not NAME.match(kind.name):
        raise ValueError(f"alert kind {kind.name!r}: use 1 to 32 of a-z and _")
    if _kinds.setdefault(kind.name, kind) != kind:
        raise ValueError(f"alert kind {kind.name!r} is registered twice, differently")
    return kind


def get(name: str) -> AlertKind | None:
    return _kinds.get(name)


def require(name: str) -> AlertKind:
    """The kind, or LookupError: a kind nobody registered is a bug, not a condition."""
    kind = _kinds.get(name)
    if kind is None:
        raise LookupError(f"no alert kind {name!r} is registered")
    return kind


def kinds() -> list[AlertKind]:
    return sorted(_kinds.values(), key=lambda kind: kind.name)


def choices() -> list[tuple[str, str]]:
    """(name, title) of every kind: the API's AlertKindEnum."""
    return list(Choices())


class Choices(Sequence):
    """(name, title or name) of the kinds registered when they are read, not when the
    field holding them was made: a serializer, form or filter field defined at import
    lists every kind (DRF and django-filter copy their fields for each use)."""

    def __init__(self, *, titles: bool = True, blank: str | None = None) -> None:
        self.titles, self.blank = titles, blank

    def _pairs(self) -> list[tuple[str, str]]:
        pairs = [(kind.name, kind.title if self.titles else kind.name) for kind in kinds()]
        return pairs if self.blank is None else [("", self.blank), *pairs]

    def __getitem__(self, index):
        return self._pairs()[index]

    def __len__(self) -> int:
        return len(self._pairs())


def set_store(store: Store) -> None:
    global _store
    _store = store


def _the_store() -> Store:
    if _store is None:
        raise RuntimeError("no alert store: apps.alerts registers one when it is ready")
    return _store
