"""A pool's scrub from `zpool status <pool>`: state (apps.telemetry.core.parse's
reading of the scan line, both dialects) and how far a running one is.

OpenZFS: `scan: scrub in progress since Sun Jul 25 16:07:49 2021` then a line
`0B repaired, 16.91% done, 00:00:04 to go` (zpool_main.c
print_scan_scrub_resilver_status, zfs-2.2); zfs-fuse: `scrub: scrub in progress
for 0h0m, 45.23% done, 0h1m to go` (its zpool_main.c print_scrub_status).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.telemetry.core.parse import parse_scrub

_DONE = re.compile(r"(\d+(?:\.\d+)?)% done")


@dataclass(frozen=True)
class ScrubState:
    state: str  # "none", "finished", "in progress", "canceled", "paused"
    percent: float | None  # of one in progress, where the host says
    ended: str | None
    errors: int | None


def read(status: str) -> ScrubState:
    scrub = parse_scrub(status)
    done = _DONE.search(status) if scrub.state == "in progress" else None
    return ScrubState(scrub.state, float(done[1]) if done else None, scrub.ended,
                      scrub.errors)


def already_running(stderr: str) -> bool:
    """`zpool scrub` on a pool being scrubbed: OpenZFS "currently scrubbing",
    zfs-fuse "currently scrubbing" too (both: "use 'zpool scrub -s' to cancel")."""
    return "currently scrubbing" in stderr
