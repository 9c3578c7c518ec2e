"""Discovery as an Operation: the fleet app's steps (pin the host key, gather facts, record them).

Gathering only reads (so discovery is not mutating and runs beside other
work); recording replaces the host's pools, datasets, clusters and disks in
one transaction, so a failure part-way leaves the previous picture whole.
Recording also raises the host's pool_capacity alert while a pool is fuller
than POZOL_POOL_CAPACITY_ALERT percent, and resolves it once none is.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.fleet.capacity import pool_capacity_message
from apps.fleet.capacity import threshold as capacity_threshold
from apps.fleet.models import Alert, Dataset, Disk, Host, PgCluster, Pool
from apps.fleet.signals import discovered, facts_recorded
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, register
from apps.remote.errors import CommandFailed, HostKeyMismatch, RemoteError
from apps.remote.gather import discover


def check_host_key(ctx: StepContext) -> Next | Done | Fail:
    host: Host = ctx.host
    if host.is_pinned:
        return Next("gather", "host key pinned", progress=10)
    from apps.remote.ssh import fetch_host_key

    try:
        line, fingerprint = fetch_host_key(host.address, host.port,
                                           timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])
    except RemoteError as exc:
        host.record_unreachable(exc)
        raise
    ctx.log(f"host presented key {fingerprint}")
    if host.expected_fingerprint:
        return _compare_with_expected(ctx, host, line, fingerprint)
    if host.trust_on_first_use:
        host.pin_host_key(line, fingerprint)
        ctx.log(f"pinned {fingerprint} on first use, as asked")
        return Next("gather", "host key pinned on first use", progress=10)
    _present(host, line, fingerprint, Host.KeyState.AWAITING)
    return Done({"needs_confirmation": fingerprint},
                message=f"confirm the host key {fingerprint} to continue")


def _compare_with_expected(ctx: StepContext, host: Host, line: str,
                           fingerprint: str) -> Next | Fail:
    if fingerprint == host.expected_fingerprint:
        host.pin_host_key(line, fingerprint)
        ctx.log("fingerprint matches the expected one; pinned")
        return Next("gather", "host key pinned", progress=10)
    _present(host, line, fingerprint, Host.KeyState.REJECTED)
    return Fail(f"host key mismatch: {host.address}:{host.port} presented {fingerprint}, "
                f"expected {host.expected_fingerprint}; nothing was pinned",
                code="host_key_mismatch")


def _present(host: Host, line: str, fingerprint: str, state: str) -> None:
    host.presented_host_key, host.presented_fingerprint = line, fingerprint
    host.host_key_state = state
    host.save(update_fields=["presented_host_key", "presented_fingerprint", "host_key_state"])


def gather(ctx: StepContext) -> Next:
    ctx.progress(20, "gathering facts over SSH")
    try:
        facts = discover(ctx.runner())
    except HostKeyMismatch:
        raise  # the engine records it and raises its own alert
    except CommandFailed as exc:
        ctx.host.record_error(exc)
        raise
    except RemoteError as exc:
        ctx.host.record_unreachable(exc)
        raise
    ctx.state["facts"] = facts.to_dict()
    return Next("record", "facts gathered", progress=80)


def record(ctx: StepContext) -> Done:
    # Dropped from the state only once recorded: a retry must see what failed to record.
    summary = record_facts(ctx.host, ctx.state["facts"])
    ctx.state.pop("facts")
    ctx.log("recorded " + ", ".join(f"{n} {k}" for k, n in summary.items()))
    for receiver, outcome in discovered.send_robust(sender=Host, host=ctx.host,
                                                    runner=ctx.runner(), log=ctx.log):
        if isinstance(outcome, Exception):
            ctx.log(f"{getattr(receiver, '__module__', receiver)}: {outcome}",
                    level="warning")
        elif isinstance(outcome, dict):
            summary.update(outcome)
    return Done(summary, message="discovery complete")


@transaction.atomic
def record_facts(host: Host, facts: dict) -> dict[str, int]:
    now = timezone.now()
    host.hold_discovered_rows()
    host.pools.all().delete()
    host.datasets.all().delete()
    host.clusters.all().delete()
    host.disks.all().delete()
    pools = {p["name"]: _pool(host, p) for p in facts.get("pools") or []}
    datasets = {d["name"]: _dataset(host, pools, d) for d in facts.get("datasets") or []}
    clusters = [_cluster(host, datasets, c) for c in facts.get("clusters") or []]
    disks = [_disk(host, d) for d in facts.get("disks") or []]
    # The whole picture stays on the host too: plans and the advisor read it as
    # discovery produced it; the rows above serve the UI, API and queries.
    host.facts = facts
    host.zfs_version = Host.zfs_version_of(facts)
    host.reachable, host.last_seen_at, host.last_discovery_at = True, now, now
    host.last_error = host.last_error_code = ""
    host.save()
    host.resolve_unreachable()
    _check_pool_capacity(host)
    transaction.on_commit(lambda: facts_recorded.send(sender=Host, host=host))
    return {"pools": len(pools), "datasets": len(datasets), "clusters": len(clusters),
            "disks": len(disks)}


def _check_pool_capacity(host: Host) -> None:
    """Raise, update or resolve the pool_capacity alert from the facts just recorded."""
    typed = host.typed_facts()
    message = typed and pool_capacity_message(typed.pools, typed.datasets,
                                              capacity_threshold())
    Alert.raise_or_resolve(host, Alert.Kind.POOL_CAPACITY, message)


# Host output is free text. A shown value longer than its column is cut rather than
# fail the whole discovery; a path or a user name cut would name something else, so
# it is left unknown instead.
_NEVER_CUT = frozenset({"data_dir", "wal_dir", "socket_dir", "bin_dir", "owner", "mountpoint"})


def _create(row_class, /, **values):
    for field in row_class._meta.concrete_fields:
        value = values.get(field.name)
        if isinstance(value, str) and field.max_length and len(value) > field.max_length:
            values[field.name] = "" if field.name in _NEVER_CUT else value[:field.max_length]
    return row_class.objects.create(**values)


def _pool(host: Host, fact: dict) -> Pool:
    return _create(Pool,
        host=host, name=fact["name"], health=fact.get("health") or "",
        size=fact.get("size"), allocated=fact.get("allocated"), free=fact.get("free"),
        fragmentation=fact.get("fragmentation"), capacity=fact.get("capacity"),
        ashift=fact.get("ashift"), has_log=bool(fact.get("has_log")),
        has_cache=bool(fact.get("has_cache")), vdevs=fact.get("vdevs") or [],
    )


def _value(props: dict, name: str) -> str:
    entry = props.get(name) or {}
    value = entry.get("value") if isinstance(entry, dict) else entry
    return "" if value in (None, "-") else str(value)


def _number(text: str) -> float | None:
    try:
        return float(text.rstrip("x"))
    except ValueError:
        return None


def _dataset(host: Host, pools: dict, fact: dict) -> Dataset:
    props = fact.get("properties") or {}
    recordsize = _number(_value(props, "recordsize"))
    return _create(Dataset,
        host=host, pool=pools.get(fact["name"].split("/")[0]), name=fact["name"],
        type=fact.get("type") or "filesystem", mountpoint=fact.get("mountpoint") or "",
        used=fact.get("used"), available=fact.get("avail"), referenced=fact.get("refer"),
        usedbysnapshots=fact.get("usedbysnapshots"),
        recordsize=int(recordsize) if recordsize else None,
        compression=_value(props, "compression"), compressratio=fact.get("compressratio"),
        atime=_value(props, "atime"), logbias=_value(props, "logbias"),
        primarycache=_value(props, "primarycache"), sync=_value(props, "sync"),
        properties=props,
    )


def _cluster(host: Host, datasets: dict, fact: dict) -> PgCluster:
    return _create(PgCluster,
        host=host, data_dir=fact["data_dir"], port=fact.get("port"),
        version=fact.get("version") or "", server_version_num=fact.get("server_version_num"),
        wal_dir=fact.get("wal_dir") or "", socket_dir=fact.get("socket_dir") or "",
        bin_dir=fact.get("bin_dir") or "", owner=fact.get("owner") or "",
        running=fact.get("running", True), data_checksums=fact.get("data_checksums"),
        data_dataset=datasets.get(fact.get("data_dataset")),
        wal_dataset=datasets.get(fact.get("wal_dataset")),
        settings=fact.get("settings") or [],
    )


def _disk(host: Host, fact: dict) -> Disk:
    return _create(Disk,
        host=host, name=fact["name"], type=fact.get("type") or "", size=fact.get("size"),
        rotational=fact.get("rotational"), model=fact.get("model") or "",
        transport=fact.get("transport") or "", write_cache=fact.get("write_cache") or "",
        volatile_write_cache=fact.get("volatile_write_cache"),
    )


KIND = register(Kind(
    name="fleet.discover",
    steps={"check_host_key": check_host_key, "gather": gather, "record": record},
    first_step="check_host_key",
    mutating=False,
))
