"""How far a transfer is: the expected size, and the bytes the counter saw.

Expected size, where the source has `zfs send -nvP` (OpenZFS), from its dry
run. Documented output (OZ@zfs-2.3.0 libzfs_sendrecv.c send_print_verbose,
verbose output goes to STDOUT for a dry run), e.g. for -I:

    incremental	pozol_a	tank/db@pozol_b	1048576
    incremental	pozol_b	tank/db@pozol_c	2097152
    size	3145728

and `full	tank/db@pozol_a	123456789` / `size	123456789` for a full send.
Upstream's own tests read it with `awk '/^size/ {print $2}'`; so does this.

Elsewhere (zfs-fuse), an ESTIMATE from the listing: a full send is about the
snapshot's `referenced`; an incremental about the growth of `referenced` plus
the `used` (unique bytes) of each snapshot sent. It is labelled an estimate
and the bar stops at 99% until the transfer ends.

Bytes so far: `pv -n -b` prints one number per line on stderr; GNU
`dd status=progress` (LC_ALL=C) writes `123456 bytes (123 kB, 121 KiB) copied,
1.0 s, 123 kB/s` records separated by carriage returns, and the same record
as its final summary. The newest record wins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from apps.replication.core.planner import Send, Snap, ordered

_SIZE_LINE = re.compile(r"^size\t(\d+)\s*$", re.M)
_DD_RECORD = re.compile(r"(\d+) bytes(?: \([^)]*\))? copied")
_PV_LINE = re.compile(r"^\s*(\d+)\s*$")


@dataclass(frozen=True)
class Expected:
    bytes: int
    exact: bool  # False: an estimate from used/referenced

    @property
    def label(self) -> str:
        return "expected" if self.exact else "estimated"


@dataclass(frozen=True)
class Progress:
    sent: int
    expected: Expected | None
    finished: bool = False

    @property
    def fraction(self) -> float | None:
        """0..1 for a progress bar; None when nothing is known to compare with."""
        if self.finished:
            return 1.0
        if not self.expected or self.expected.bytes <= 0:
            return None
        ceiling = 1.0 if self.expected.exact else 0.99
        return min(self.sent / self.expected.bytes, ceiling)


def parse_send_estimate(stdout: str) -> int | None:
    """The total of `zfs send -nvP`: the last `size` line; None when there is none."""
    sizes = _SIZE_LINE.findall(stdout)
    return int(sizes[-1]) if sizes else None


def estimate_from_listing(snapshots: Sequence[Snap], to: str,
                          from_: str | None = None) -> Expected | None:
    """The fallback estimate for sending `to` (labels), from `from_` when incremental."""
    listed = ordered(snapshots)
    names = [s.name for s in listed]
    if to not in names or (from_ is not None and from_ not in names):
        return None
    target = listed[names.index(to)]
    if target.referenced is None:
        return None
    if from_ is None:
        return Expected(target.referenced, exact=False)
    start = listed[names.index(from_)]
    if start.referenced is None:
        return None
    sent = listed[names.index(from_) + 1:names.index(to) + 1]
    unique = sum(s.used or 0 for s in sent)
    return Expected(max(target.referenced - start.referenced, 0) + unique, exact=False)


def receive_sizes(sends: Sequence[Send | None],
                  expected: dict[str, dict]) -> dict[str, int]:
    """Bytes each target pool receives in a run: the sends' expected sizes (`expected`
    maps send<i>, i the send's index in `sends`, to {"bytes": ...}) added per target
    pool, for the room check before anything is sent. A send whose size is not known
    (a resumed one: the rest of it) counts as nothing."""
    sizes: dict[str, int] = {}
    for index, send in enumerate(sends):
        if send is None:
            continue
        pool = send.target.split("/")[0]
        size = (expected.get(f"send{index}") or {}).get("bytes") or 0
        sizes[pool] = sizes.get(pool, 0) + size
    return sizes


def parse_counter(stderr: str) -> int | None:
    """Bytes so far from pv -n -b or dd status=progress output; None before the first."""
    newest = None
    for record in re.split(r"[\r\n]", stderr):
        match = _DD_RECORD.search(record) or _PV_LINE.match(record)
        if match:
            newest = int(match[1])
    return newest


def pipeline_messages(err: str, limit: int = 600) -> str:
    """What the pipeline's programs said, without the byte counter's records (dd writes
    them without a newline, so a message of zfs recv may follow one on the same line)."""
    text = _COUNTER_RECORD.sub("\n", err)
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines()]
    return "\n".join(line for line in lines if line and not line.isdigit())[-limit:]


_COUNTER_RECORD = re.compile(
    r"\d+ bytes(?: \([^)]*\))? copied, [0-9.]+ s, [0-9.,]+ ?[kMGTP]?i?B/s"
    r"|\d+\+\d+ records (?:in|out)")


def next_wait(sent: int, expected: int | None, elapsed: float, least: float,
              most: float) -> float:
    """How long a follow of a transfer should wait on the host for its end: past the
    end its rate so far foresees (so that one follow sees the end, rather than the
    next one a round trip after it), `least` at least and `most` at most (the progress
    shown between follows is that old at worst)."""
    if not expected or sent <= 0 or elapsed <= 0:
        return least
    remaining = max(0, expected - sent) / (sent / elapsed)
    return min(most, max(least, remaining * 1.25 + 1))
