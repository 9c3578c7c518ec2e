"""Whether a pool has room for what is asked of it, pure: one decision for clones,
"now" snapshots, replication receives and experiments.

A pool keeps a reserve, a free-space floor its operator sets (bytes, or percent of
the pool's usable space: the root dataset's used + available). Nothing PoZoL starts
may take the pool's free space below it, so production's own writes still find
room (issue 19: a clone's crash recovery filled a pool and production PANICked). By
default 10% is kept free, the usual ZFS advice (copy-on-write needs free space to
stay fast; TrueNAS warns at 80% used).

Free space is the pool root dataset's `available` (what ZFS will still let a
dataset write, net of its own slop), read by discovery for the service's early
refusal and read again on the host by the step just before it acts.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.common.formatting import human_bytes
from apps.remote.commands import Command, cmd, integer, pool_name, script

DEFAULT_RESERVE_PERCENT = 10
MAX_RESERVE_PERCENT = 90


@dataclass(frozen=True)
class Reserve:
    """A pool's floor: `bytes` when set, else `percent` of its usable space."""

    bytes: int | None = None
    percent: int | None = DEFAULT_RESERVE_PERCENT

    def floor(self, usable: int) -> int:
        if self.bytes is not None:
            return self.bytes
        return usable * (self.percent or 0) // 100

    def text(self) -> str:
        return human_bytes(self.bytes) if self.bytes is not None else f"{self.percent or 0}%"


@dataclass(frozen=True)
class Room:
    """A pool's space now: its root dataset's used and available bytes."""

    pool: str
    used: int
    available: int

    @property
    def usable(self) -> int:
        return self.used + self.available


@dataclass(frozen=True)
class Shortage:
    """Why `what` is refused on `pool`, with the figures."""

    pool: str
    free: int
    reserve: int
    needed: int
    what: str
    reserve_text: str

    @property
    def message(self) -> str:
        kept = f"a reserve of {human_bytes(self.reserve)}"
        if self.reserve_text.endswith("%"):
            kept += f" ({self.reserve_text} of the pool)"
        asks = (f"{self.what} may need {human_bytes(self.needed)}" if self.needed
                else f"{self.what} is refused while the pool is below it")
        return (f"pool {self.pool} has {human_bytes(self.free)} free and keeps {kept}; "
                f"{asks}: free space on the pool or lower its reserve")

    def to_dict(self) -> dict:
        return {"pool": self.pool, "free": self.free, "reserve": self.reserve,
                "needed": self.needed}


def shortage(room: Room, reserve: Reserve, needed: int, what: str) -> Shortage | None:
    """The refusal when `needed` more bytes would take `room` below `reserve`, or None."""
    floor = reserve.floor(room.usable)
    if room.available - max(needed, 0) >= floor:
        return None
    return Shortage(pool=room.pool, free=room.available, reserve=floor, needed=max(needed, 0),
                    what=what, reserve_text=reserve.text())


def read_command(pool: str) -> Command:
    """The pool's root dataset's used and available, in bytes (one line each); `zfs get
    -Hp` works on OpenZFS and zfs-fuse alike (`zpool list -p` does not)."""
    return cmd("zfs", "get", "-Hp", "-o", "value", "used,available", pool_name(pool))


def parse_room(pool: str, text: str) -> Room:
    """`read_command`'s output; ValueError when it is not two numbers."""
    values = text.split()
    if len(values) != 2:
        raise ValueError(f"expected used and available of {pool}, got {text!r}")
    return Room(pool=pool, used=int(values[0]), available=int(values[1]))


GUARD_MARK = "pozol-room"

# The same decision as `shortage`, in the host's shell, so a script that adds data to
# the pool (a clone "now": apps.clones) refuses before it makes anything, in its own
# round trip. It prints the figures it read (`pozol-room POOL USED AVAILABLE`), from
# which `parse_guard` and `shortage` write the refusal; it fails when the pool is short
# or unread. Shell arithmetic is 64-bit (dash and bash use intmax_t), and `/` truncates
# as Python's `//` does on these non-negative numbers.
_GUARD = """\
set -- $(zfs get -Hp -o value used,available {pool})
[ "$#" -eq 2 ] || {{ echo "cannot read the room of pool "{pool} >&2; exit 1; }}
echo {mark} {pool} "$1" "$2"
{floor}
[ $(($2 - {needed})) -ge "$f" ]"""


def guard_command(pool: str, reserve: Reserve, needed: int) -> Command:
    """A shell snippet failing when `needed` more bytes would take `pool` below
    `reserve` (or when the pool cannot be read), as `shortage` decides."""
    floor = (script("f={floor}", floor=integer(reserve.bytes)) if reserve.bytes is not None
             else script('f=$((($1 + $2) * {percent} / 100))',
                         percent=integer(reserve.percent or 0, maximum=100)))
    return script(_GUARD, pool=pool_name(pool), mark=GUARD_MARK, floor=floor,
                  needed=integer(max(needed, 0)),
                  shown=f"check the room on pool {pool}")


def parse_guard(text: str) -> dict[str, Room]:
    """The pools' figures `guard_command` printed, by pool."""
    found = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == GUARD_MARK and all(
                p.isdigit() for p in parts[2:]):
            found[parts[1]] = Room(pool=parts[1], used=int(parts[2]), available=int(parts[3]))
    return found
