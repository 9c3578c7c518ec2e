"""The reserve an operator keeps free on each pool, and the room check every app asks
before it adds data to a pool (clones, "now" snapshots, replication receives,
experiments): the figures here, the decision in apps.fleet.core.room.

`refusal` reads discovery's figures, for a service's early 4xx; `refusal_on_host`
reads the pool again through the step's runner, just before the step acts
(`refusal_in_text`, from that reading made by the caller).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from apps.common.errors import DomainError
from apps.common.numbers import whole_in
from apps.fleet.core import room
from apps.fleet.models import Host, PoolReserve
from apps.remote.commands import Command, InvalidValue, pool_name, script

MAX_RESERVE_BYTES = 2**60


class ReserveRefused(DomainError):
    """A reserve the operator asked for that cannot be kept."""


def reserve_of(host: Host, pool: str) -> room.Reserve:
    """The pool's reserve, or the default (10%) when its operator set none."""
    return _reserve(PoolReserve.objects.filter(host=host, pool=pool).first())


def _reserve(row: PoolReserve | None) -> room.Reserve:
    if row is None or (row.reserve_bytes is None and row.reserve_percent is None):
        return room.Reserve()
    if row.reserve_bytes is not None:
        return room.Reserve(bytes=row.reserve_bytes, percent=None)
    return room.Reserve(percent=row.reserve_percent)


def discovered_room(host: Host, pool: str) -> room.Room | None:
    """The pool's space as the last discovery read it; None when not known."""
    root = host.datasets.filter(name=pool).only("used", "available").first()
    if root is None or root.used is None or root.available is None:
        return None
    return room.Room(pool=pool, used=root.used, available=root.available)


def refusal(host: Host, pool: str, needed: int, what: str) -> room.Shortage | None:
    """Discovery's figures: the early refusal. A pool discovery has not read is not
    refused here; the step reads it on the host."""
    found = discovered_room(host, pool)
    return room.shortage(found, reserve_of(host, pool), needed, what) if found else None


def refusal_on_host(run: Callable, host: Host, pool: str, needed: int,
                    what: str) -> room.Shortage | None:
    """The pool read again on the host (`run` is a step's runner)."""
    found = room.parse_room(pool, run(room.read_command(pool), timeout=60).stdout)
    return room.shortage(found, reserve_of(host, pool), needed, what)


def refusal_in_text(host: Host, pool: str, text: str, needed: int,
                    what: str) -> room.Shortage | None:
    """`refusal_on_host` from `room.read_command`'s output, read by the caller in a
    round trip of its own (a replication run reads it with the target's listing)."""
    return room.shortage(room.parse_room(pool, text), reserve_of(host, pool), needed, what)


def guard_in_script(host: Host, state: dict | None) -> Command | None:
    """`refusal_in_step`'s check as a snippet of the caller's own script (one round
    trip): it fails, having made nothing, when a pool is short; None when the
    operation carries no check."""
    if not state:
        return None
    guards = [room.guard_command(pool, reserve_of(host, pool), state["needed"])
              for pool in state["pools"]]
    return reduce(lambda first, second: script("{a} && {b}", a=first, b=second), guards)


def refusal_in_output(host: Host, state: dict, text: str) -> room.Shortage | None:
    """The refusal `guard_in_script`'s snippet acted on, from the figures it printed;
    None when a pool's figures are missing (it could not read them)."""
    found = room.parse_guard(text)
    for pool in state["pools"]:
        if pool not in found:
            return None
        shortage = room.shortage(found[pool], reserve_of(host, pool), state["needed"],
                                 state["what"])
        if shortage:
            return shortage
    return None


def set_reserve(host: Host, pool: object, *, reserve_bytes: int | None = None,
                reserve_percent: int | None = None) -> PoolReserve:
    """Keep `reserve_bytes`, or `reserve_percent` of the pool, free on `host`'s pool;
    neither: back to the default."""
    try:
        pool = pool_name(pool)
    except InvalidValue as exc:
        raise _refuse("pool", exc.reason) from None
    if not host.pools.filter(name=pool).exists():
        raise _refuse("pool", f"{host.name} has no pool {pool} (run discovery)", status=404)
    if reserve_bytes is not None and reserve_percent is not None:
        raise _refuse("reserve_bytes", "give bytes or a percent, not both")
    if reserve_bytes is not None and not whole_in(reserve_bytes, 0, MAX_RESERVE_BYTES):
        raise _refuse("reserve_bytes", f"bytes, from 0 to {MAX_RESERVE_BYTES}")
    if reserve_percent is not None and not whole_in(reserve_percent, 0,
                                                    room.MAX_RESERVE_PERCENT):
        raise _refuse("reserve_percent", f"a whole percent from 0 to "
                                         f"{room.MAX_RESERVE_PERCENT}")
    row, _ = PoolReserve.objects.update_or_create(
        host=host, pool=pool, defaults={"reserve_bytes": reserve_bytes,
                                        "reserve_percent": reserve_percent})
    return row


def _refuse(field: str, text: str, status: int = 400) -> ReserveRefused:
    return ReserveRefused(f"{field}: {text}", fields={field: [text]}, status=status)


def first_refusal(host: Host, pools: list[str], needed: int,
                  what: str) -> room.Shortage | None:
    """`refusal` for each of `pools` (a cluster's data and WAL may sit on two)."""
    for pool in dict.fromkeys(pools):
        found = refusal(host, pool, needed, what)
        if found:
            return found
    return None


def room_state(pools: list[str], needed: int, what: str) -> dict:
    """What a step needs to check the room again (kept in the operation's state)."""
    return {"pools": list(dict.fromkeys(pools)), "needed": needed, "what": what}


def refusal_in_step(run: Callable, host: Host, state: dict | None) -> room.Shortage | None:
    """The room check of `room_state` against the host's pools read now; None when the
    operation carries no check (started before there was one)."""
    if not state:
        return None
    for pool in state["pools"]:
        found = refusal_on_host(run, host, pool, state["needed"], state["what"])
        if found:
            return found
    return None


def shown(host: Host) -> list[dict]:
    """Each discovered pool with its reserve and the figures the room check reads (the
    API and the host page)."""
    rows = {row.pool: row for row in PoolReserve.objects.filter(host=host)}
    out = []
    for name in host.pools.values_list("name", flat=True):
        row, found = rows.get(name), discovered_room(host, name)
        reserve = _reserve(row)
        out.append({"pool": name, "reserve_bytes": row.reserve_bytes if row else None,
                    "reserve_percent": row.reserve_percent if row else None,
                    "reserve": reserve,
                    "floor": reserve.floor(found.usable) if found else None,
                    "available": found.available if found else None})
    return out


def shown_one(host: Host, pool: str) -> dict | None:
    return next((row for row in shown(host) if row["pool"] == pool), None)
