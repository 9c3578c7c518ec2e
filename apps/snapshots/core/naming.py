"""Names of the snapshots PoZoL makes: `pozol_<policy or "manual">_<YYYYmmddTHHMMSSZ>`.

UTC, so names sort as times do whatever the host's or the viewer's zone, and
the same on every host of a fleet. The name is for people and sorting; whether
a snapshot is PoZoL's is decided by its user properties, never by its name.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

PREFIX = "pozol"
MANUAL = "manual"
STAMP = "%Y%m%dT%H%M%SZ"
_NAME = re.compile(r"pozol_(?P<policy>[A-Za-z0-9][A-Za-z0-9_.:-]*)_(?P<stamp>\d{8}T\d{6}Z)\Z")


def snapshot_name(at: datetime, policy: str | None = None, prefix: str = PREFIX) -> str:
    """The name after '@' for a snapshot taken at `at` (an aware datetime) under
    `policy`; a policy may choose its own prefix."""
    if at.tzinfo is None:
        raise ValueError("the time of a snapshot name must be timezone-aware")
    return f"{prefix}_{policy or MANUAL}_{at.astimezone(UTC).strftime(STAMP)}"


def parse_name(name: str) -> tuple[str, datetime] | None:
    """(policy, time) from a name snapshot_name() made; None for any other name."""
    match = _NAME.match(name)
    if not match:
        return None
    at = datetime.strptime(match["stamp"], STAMP).replace(tzinfo=UTC)
    return match["policy"], at
