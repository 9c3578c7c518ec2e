"""WAL segment names and LSNs: pure arithmetic, as PostgreSQL's xlog_internal.h does it.

A segment file is named TTTTTTTTXXXXXXXXYYYYYYYY (hexadecimal): the timeline, then the
segment number split in "xlogid" and the segment within it, with
0x100000000 / wal_segment_size segments per xlogid. An LSN `X/Y` is the 64-bit byte
position X << 32 | Y; it lies in segment LSN // wal_segment_size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_SEGMENT_SIZE = 16 * 2**20
_NAME = re.compile(r"[0-9A-F]{24}\Z")
_LSN = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})\Z")


class BadWal(ValueError):
    """A segment name or LSN that is not one."""


@dataclass(frozen=True, order=True)
class Segment:
    """One segment: its timeline and number (comparable, and consecutive by number)."""

    timeline: int
    number: int

    def name(self, segment_size: int = DEFAULT_SEGMENT_SIZE) -> str:
        per = per_xlogid(segment_size)
        return f"{self.timeline:08X}{self.number // per:08X}{self.number % per:08X}"


def per_xlogid(segment_size: int) -> int:
    if segment_size <= 0 or segment_size & (segment_size - 1) or segment_size > 2**30:
        raise BadWal(f"not a WAL segment size: {segment_size}")
    return 0x100000000 // segment_size


def is_segment_name(text: str) -> bool:
    return bool(_NAME.match(text))


def parse_name(text: str, segment_size: int = DEFAULT_SEGMENT_SIZE) -> Segment:
    if not is_segment_name(text):
        raise BadWal(f"not a WAL segment file name: {text!r}")
    per = per_xlogid(segment_size)
    timeline, xlogid, within = int(text[:8], 16), int(text[8:16], 16), int(text[16:], 16)
    if within >= per or timeline == 0:
        raise BadWal(f"not a WAL segment file name for {segment_size}-byte segments: {text!r}")
    return Segment(timeline, xlogid * per + within)


def parse_lsn(text: str) -> int:
    """`16/B374D848` as a byte position; anything else is refused."""
    match = _LSN.match(text.strip()) if isinstance(text, str) else None
    if not match:
        raise BadWal(f"not an LSN (write it as PostgreSQL does, e.g. 0/16B3748): {text!r}")
    return int(match.group(1), 16) << 32 | int(match.group(2), 16)


def format_lsn(position: int) -> str:
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


def segment_of(position: int, timeline: int, segment_size: int = DEFAULT_SEGMENT_SIZE) -> Segment:
    per_xlogid(segment_size)
    return Segment(timeline, position // segment_size)
