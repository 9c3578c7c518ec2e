"""Discovery as an Operation: the fleet app's steps (pin the host key, gather facts, record them).

Gathering only reads (so discovery is not mutating and runs beside other
work); recording updates the host's pools, datasets, clusters and disks in place
(apps/fleet/recording.py) in one transaction, so a failure part-way leaves the
previous picture whole. Recording also raises the host's pool_capacity alert
while a pool is fuller than POZOL_POOL_CAPACITY_ALERT percent, and its
cluster_down alert while a cluster it found before is not running; each
resolves once its condition is gone.

Gathering notes when its read began (`read_at`): a cluster retired after that
moment is not recorded again, nor the datasets destroyed with it
(recording.without_retired); the discovery's result and log name it.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.fleet import recording
from apps.fleet.alert_kinds import CLUSTER_DOWN, POOL_CAPACITY
from apps.fleet.capacity import pool_capacity_message
from apps.fleet.capacity import threshold as capacity_threshold
from apps.fleet.models import Host
from apps.fleet.recording import record_cluster, record_rows, without_retired
from apps.fleet.signals import discovered, facts_recorded
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, register
from apps.remote.errors import CommandFailed, HostKeyMismatch, RemoteError, SudoRefused
from apps.remote.gather import discover, under


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
        read_facts(ctx)
    except HostKeyMismatch:
        raise  # the engine records it and raises its own alert
    except (CommandFailed, SudoRefused) as exc:
        ctx.host.record_error(exc)  # reached, but refused there: not unreachable
        raise
    except RemoteError as exc:
        ctx.host.record_unreachable(exc)
        raise
    return Next("record", "facts gathered", progress=80)


def read_facts(ctx: StepContext) -> None:
    """The host's facts into the state, with when the read began: what a retire
    stopped after that moment may still be in them."""
    ctx.state["read_at"] = timezone.now().isoformat()
    ctx.state["facts"] = discover(ctx.runner(), login=ctx.host.user).to_dict()


def _read_at(ctx: StepContext) -> datetime:
    read_at = ctx.state.get("read_at")
    # An operation that gathered before read_at was kept (in flight across an upgrade)
    # read after it started: its start is a safe bound, if earlier than needed.
    return datetime.fromisoformat(read_at) if read_at else ctx.operation.started_at


def record(ctx: StepContext) -> Done:
    # Dropped from the state only once recorded: a retry must see what failed to record.
    summary = record_facts(ctx.host, ctx.state["facts"], read_at=_read_at(ctx))
    ctx.state.pop("facts")
    ctx.state.pop("read_at", None)
    ctx.log("recorded " + ", ".join(f"{n} {k}" for k, n in summary.items()
                                    if k != NOT_RECORDED))
    for data_dir in summary.get(NOT_RECORDED, []):
        ctx.log(f"not recorded: the cluster at {data_dir}, retired after this discovery "
                "read the host; a discovery that reads it from now on records a cluster "
                "there if there is one", level="warning")
    for receiver, outcome in discovered.send_robust(sender=Host, host=ctx.host,
                                                    runner=ctx.runner(), log=ctx.log):
        if isinstance(outcome, Exception):
            ctx.log(f"{getattr(receiver, '__module__', receiver)}: {outcome}",
                    level="warning")
        elif isinstance(outcome, dict):
            summary.update(outcome)
    return Done(summary, message="discovery complete")


# The summary's list of the data directories of retired clusters left out.
NOT_RECORDED = "not_recorded_retired"


@transaction.atomic
def record_facts(host: Host, facts: dict, read_at: datetime | None = None) -> dict:
    """The host's rows and facts made what `facts` say, less what was retired after
    `read_at` (when the read began; None: just now). Counts of what was recorded, and
    NOT_RECORDED when a retired cluster was left out."""
    now = timezone.now()
    host.hold_discovered_rows()
    facts, left_out = without_retired(host, facts, read_at or now)
    summary: dict = record_rows(host, facts, now)
    if left_out:
        summary[NOT_RECORDED] = left_out
    # The whole picture stays on the host too: plans and the advisor read it as
    # discovery produced it; the rows above serve the UI, API and queries.
    host.facts = facts
    host.zfs_version = Host.zfs_version_of(facts)
    host.reachable, host.last_seen_at, host.last_discovery_at = True, now, now
    host.last_error = host.last_error_code = ""
    host.save()
    host.resolve_unreachable()
    _check_pool_capacity(host)
    check_clusters(host)
    transaction.on_commit(lambda: facts_recorded.send(sender=Host, host=host))
    return summary


@transaction.atomic
def record_new_cluster(host: Host, cluster: dict, datasets: list[dict], parent: str,
                       read_at: datetime) -> bool:
    """A cluster PoZoL has just made, and its datasets (`parent` and below), added to the
    host's rows and to its facts as its last discovery recorded them (read again under
    the lock, so a discovery that recorded meanwhile is kept); the rest waits for the
    host's next discovery. False, and nothing recorded, when the cluster was retired
    after `read_at`, when it was read."""
    host.hold_discovered_rows()
    if without_retired(host, {"clusters": [cluster]}, read_at)[1]:
        return False
    host.refresh_from_db(fields=["facts"])
    facts = dict(host.facts or {})
    facts["datasets"] = [d for d in facts.get("datasets") or []
                         if not under(d["name"], parent)] + datasets
    facts["clusters"] = [c for c in facts.get("clusters") or []
                         if c["data_dir"] != cluster["data_dir"]] + [cluster]
    record_cluster(host, cluster, datasets, timezone.now())
    host.facts = facts
    host.save(update_fields=["facts"])
    check_clusters(host)
    transaction.on_commit(lambda: facts_recorded.send(sender=Host, host=host))
    return True


@transaction.atomic
def forget_cluster(host: Host, data_dir: str, destroyed: list[str] | None = None) -> None:
    """A retired cluster forgotten (its row and facts, and the datasets `destroyed` with
    it), leaving the tombstone that keeps a discovery which read the host before now
    from recording it again."""
    host.hold_discovered_rows()
    recording.forget_cluster(host, data_dir, destroyed or [], timezone.now())
    check_clusters(host)


def _check_pool_capacity(host: Host) -> None:
    """Raise, update or resolve the pool_capacity alert from the facts just recorded."""
    typed = host.typed_facts()
    message = typed and pool_capacity_message(typed.pools, typed.datasets,
                                              capacity_threshold())
    POOL_CAPACITY.raise_or_resolve(host, message)


def check_clusters(host: Host) -> None:
    """Raise, update or resolve the cluster_down alert: open while a cluster discovery
    found before has no running postmaster (until it runs again or is retired)."""
    down = [f"{c.data_dir} (port {c.port or '?'}, last seen "
            f"{c.last_seen_at:%Y-%m-%d %H:%M} UTC)" if c.last_seen_at else c.data_dir
            for c in host.clusters.filter(running=False)]
    message = (f"PostgreSQL not running on {host.name}: " + "; ".join(down)) if down else None
    CLUSTER_DOWN.raise_or_resolve(host, message)


KIND = register(Kind(
    name="fleet.discover",
    steps={"check_host_key": check_host_key, "gather": gather, "record": record},
    first_step="check_host_key",
    mutating=False,
))
