"""An experiment's runs, pure: their alternating order, the WAL each transaction
wrote, and the room a run needs on the pool."""

from __future__ import annotations

# Measured on a test host (issue 12): a 120 s full_page_writes=on run at scale 10 wrote
# about 1.2 GB, so 10 MB a second; a pgbench database takes about 16 MiB per scale unit.
WAL_BYTES_PER_SECOND = 10 * 10**6
BYTES_PER_SCALE = 16 * 2**20
ROOM_MARGIN = 1.25


def alternating(values: list[str], repetitions: int) -> list[tuple[str, int]]:
    """Each round runs every value once, every other round in reverse (a b b a a b ...):
    a drift of the host over time (a filling pool, a warming cache) then weighs on every
    value alike instead of always on the last one."""
    order: list[tuple[str, int]] = []
    for rep in range(repetitions):
        round_ = values if rep % 2 == 0 else list(reversed(values))
        order.extend((value, rep) for value in round_)
    return order


def wal_per_transaction(before: int | None, after: int | None,
                        transactions: int | None) -> float | None:
    """WAL bytes (pg_current_wal_lsn difference) per transaction; None when not known."""
    if before is None or after is None or not transactions or after < before:
        return None
    return (after - before) / transactions


def room_needed(scale: int, duration: int, runs: int, reinit: bool) -> int:
    """Bytes one run may add to the pool: the pgbench tables (twice when they are
    re-initialised: the old copy is freed only after the new one is written) and the WAL
    of the run; checked before each experiment starts."""
    data = scale * BYTES_PER_SCALE * (2 if reinit else 1)
    return int((data + duration * WAL_BYTES_PER_SECOND) * ROOM_MARGIN)
