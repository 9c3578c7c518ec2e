"""A fleet of N hosts in the control-plane database, fast, for scale tests and
the scale benchmark: copies of one really discovered host (its facts, pools,
datasets, clusters with their pg_settings rows and disks) and a history of
operations with log lines, all written with bulk_create."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from apps.alerts.models import Alert
from apps.fleet.models import Dataset, Disk, Host, PgCluster, Pool
from apps.ops.models import Operation

BATCH = 2000


def _address(index: int) -> str:
    return f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"


def _copies(template: Host, count: int, prefix: str) -> list[Host]:
    now = timezone.now()
    return [Host(name=f"{prefix}{i:05d}", address=_address(i), port=22, user=template.user,
                 work_dir=template.work_dir, credential_kind=template.credential_kind,
                 private_key_encrypted=template.private_key_encrypted,
                 host_key_state=Host.KeyState.PINNED, host_key="ssh-ed25519 AAAA" + "x" * 64,
                 host_key_fingerprint="SHA256:" + "A" * 43, reachable=True, last_seen_at=now,
                 last_discovery_at=now, facts=template.facts,
                 zfs_version=template.zfs_version)
            for i in range(count)]


def _fields(row, *skip: str) -> dict:
    """A row's column values, without its id and host (and the foreign keys in skip)."""
    leave_out = {"id", "host", *skip}
    return {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields
            if f.name not in leave_out}


def clone_hosts(template: Host, count: int, prefix: str = "h") -> list[Host]:
    """count copies of template with copies of its pools, datasets, clusters and disks."""
    hosts = Host.objects.bulk_create(_copies(template, count, prefix), batch_size=BATCH)
    pools = list(template.pools.all())
    datasets = list(template.datasets.select_related("pool"))
    clusters = list(template.clusters.select_related("data_dataset", "wal_dataset"))
    disks = list(template.disks.all())

    new_pools = Pool.objects.bulk_create(
        [Pool(host=h, **_fields(p)) for h in hosts for p in pools], batch_size=BATCH)
    pool_of = {(p.host_id, p.name): p for p in new_pools}
    new_datasets = Dataset.objects.bulk_create(
        [Dataset(host=h, pool=pool_of.get((h.pk, d.pool.name)) if d.pool else None,
                 **_fields(d, "pool"))
         for h in hosts for d in datasets], batch_size=BATCH)
    dataset_of = {(d.host_id, d.name): d for d in new_datasets}

    def dataset(host: Host, original: Dataset | None) -> Dataset | None:
        return dataset_of.get((host.pk, original.name)) if original else None

    PgCluster.objects.bulk_create(
        [PgCluster(host=h, data_dataset=dataset(h, c.data_dataset),
                   wal_dataset=dataset(h, c.wal_dataset),
                   **_fields(c, "data_dataset", "wal_dataset"))
         for h in hosts for c in clusters], batch_size=BATCH)
    Disk.objects.bulk_create([Disk(host=h, **_fields(d)) for h in hosts for d in disks],
                             batch_size=BATCH)
    return hosts


def raise_alerts(hosts: list[Host]) -> None:
    """One open and one resolved alert per host: the lists must show only the open one."""
    now = timezone.now()
    Alert.objects.bulk_create(
        [Alert(host=h, kind="unreachable", message=f"{h.name} did not answer")
         for h in hosts]
        + [Alert(host=h, kind="unreachable", message="old", resolved_at=now)
           for h in hosts], batch_size=BATCH)


@contextlib.contextmanager
def _settable_created_at() -> Iterator[None]:
    """created_at is auto_now_add; history needs it in the past."""
    field = Operation._meta.get_field("created_at")
    field.auto_now_add = False
    try:
        yield
    finally:
        field.auto_now_add = True


def seed_operations(hosts: list[Host], per_host: int, *, users: list | None = None,
                    every: timedelta = timedelta(minutes=15),
                    now: datetime | None = None) -> int:
    """per_host finished discoveries per host, one every `every` back from now, each
    triggered by one of users in turn (None: the schedule)."""
    now = now or timezone.now()
    users = users or [None]
    rows = []
    for i, host in enumerate(hosts):
        for n in range(per_host):
            at = now - every * n - timedelta(seconds=i % 900)
            user = users[(i * per_host + n) % len(users)]
            rows.append(Operation(
                kind="fleet.discover", host=host, subject=host.name, step="record",
                status=Operation.Status.SUCCEEDED, progress=100, message="discovery complete",
                result={"pools": 1, "datasets": 3, "clusters": 1, "disks": 1},
                trigger=Operation.Trigger.UI if user else Operation.Trigger.SCHEDULE,
                triggered_by=user, created_at=at, started_at=at, finished_at=at))
    with _settable_created_at():
        Operation.objects.bulk_create(rows, batch_size=BATCH)
    return len(rows)


def seed_log_lines(per_operation: int, line_bytes: int, after_id: int = 0) -> int:
    """per_operation log lines of about line_bytes each for every operation with an id
    above after_id, written by the database itself (the ORM would take minutes)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ops_logline (operation_id, at, level, text) "
            "SELECT o.id, o.created_at, 'command', "
            "'$ zfs get -Hp -o name,property,value,source all ' || repeat('x', %s) "
            "FROM ops_operation o CROSS JOIN generate_series(1, %s) WHERE o.id > %s",
            [max(0, line_bytes - 48), per_operation, after_id])
        return cursor.rowcount


def follow_profiles(hosts: list[Host]) -> None:
    """Every host follows a built-in profile, every other one drifted from it, with
    the advisor's findings counted: what the overview's summaries show."""
    from apps.tuning.models import Assignment, Profile

    profile = Profile.objects.order_by("pk").first()
    version = profile.current
    now = timezone.now()
    Assignment.objects.bulk_create(
        [Assignment(host=h, profile=profile, applied_version=version, drift_checked_at=now,
                    drift=[{"key": "recordsize", "current": "128K", "desired": "16K"}] * (i % 2))
         for i, h in enumerate(hosts)], batch_size=BATCH)
    Host.objects.filter(pk__in=[h.pk for h in hosts]).update(
        findings_by_severity={"critical": 1, "warning": 2})


def start_work(hosts: list[Host]) -> None:
    """An operation running now on each host."""
    Operation.objects.bulk_create(
        [Operation(kind="benchmarks.run", host=h, subject=h.name, step="run",
                   status=Operation.Status.RUNNING, progress=40) for h in hosts],
        batch_size=BATCH)


# -- what a fleet has beside its hosts: telemetry, snapshots, links, clones, history ------

def telemetry(hosts: list[Host], now: datetime) -> None:
    """Each host's telemetry as the collector leaves it: its two newest raw samples
    (the OpenZFS 2.3 VM test host's captured sample, a minute apart, its
    counters grown), its state row with the last sample, the current values the
    overview shows and sorts by (and /metrics serves), and `recent`, the last hour's
    ARC hit rate and TPS the sparklines draw, made by the product's own
    apps.telemetry.core.current.remember."""
    import json
    import math

    from apps.telemetry.core.current import RECENT_POINTS, Current, remember
    from apps.telemetry.models import HostTelemetry
    from tests.bench.telemetry_scale import _base_sample, _moved

    base, last_sample = _base_sample()
    rows = [(now - timedelta(seconds=90), json.dumps(_moved(base, 0))),
            (now - timedelta(seconds=30), json.dumps(_moved(base, 1)))]
    with connection.cursor() as cursor:
        with cursor.connection.cursor().copy(
                'COPY telemetry_rawsample (host_id, taken_at, "values", missing) '
                "FROM STDIN") as out:
            for host in hosts:
                for at, text in rows:
                    out.write_row((host.pk, at, text, "{}"))
    last_at = rows[-1][0]
    last_sample = {**last_sample, "taken_at": last_at.isoformat()}

    def values(index: int, minute: int) -> Current:
        wave = math.sin((minute + index) / 9)
        return Current(arc_hit_rate=0.9 + 0.09 * wave, tps=400 + 300 * wave + index % 97,
                       capacity=20 + index % 70, used=(50 + index % 400) << 30,
                       space_saved=(10 + index % 90) << 30,
                       cache_hit_rate=0.98 + 0.01 * wave)

    states = []
    for index, host in enumerate(hosts):
        recent: dict = {}
        start = last_at.timestamp() - 60 * RECENT_POINTS
        for minute in range(RECENT_POINTS):
            recent = remember(recent, start + 60 * (minute + 1), values(index, minute))
        now_values = values(index, RECENT_POINTS - 1)
        states.append(HostTelemetry(
            host=host, last_sample=last_sample, last_sample_at=last_at, last_duration=0.2,
            arc_hit_rate=now_values.arc_hit_rate, tps=now_values.tps,
            capacity=now_values.capacity, used=now_values.used,
            space_saved=now_values.space_saved, cache_hit_rate=now_values.cache_hit_rate,
            recent=recent))
    HostTelemetry.objects.bulk_create(states, batch_size=500)


def snapshots(hosts: list[Host], now: datetime, per_host: int = 10) -> None:
    """per_host snapshots of tank/pg per host, an hour apart."""
    from apps.snapshots.models import Snapshot

    Snapshot.objects.bulk_create(
        [Snapshot(host=host, dataset="tank/pg", name=f"auto-{n}", seen_at=now,
                  created_at=now - timedelta(hours=n), used=n << 20, referenced=1 << 30)
         for host in hosts for n in range(per_host)], batch_size=5000)


def links(hosts: list[Host], now: datetime, every: int = 10) -> None:
    """A replication link from every `every`th host to the next one."""
    from apps.replication.models import ReplicationLink

    ReplicationLink.objects.bulk_create(
        [ReplicationLink(name=f"link-{source.pk}", source_host=source,
                         target_host=hosts[index + 1], target_parent="backup",
                         sources=["tank/pg"], newest_received_at=now - timedelta(minutes=7))
         for index, source in enumerate(hosts[:-1]) if index % every == 0],
        batch_size=1000)


def clones(hosts: list[Host], every: int = 10, per_host: int = 2) -> None:
    """per_host ready clones on every `every`th host."""
    from apps.clones.models import Clone

    Clone.objects.bulk_create(
        [Clone(host=host, cluster_data_dir="/tank/pg/data", name=f"c{host.pk}-{n}",
               snapshot="tank/pg@auto-0", port=6500 + n, role=f"clone_{n}",
               password_encrypted="unused", state=Clone.State.READY,
               connection_string=f"postgresql://clone_{n}@{host.address}:{6500 + n}/postgres",
               ready_at=timezone.now())
         for host in hosts[::every] for n in range(per_host)], batch_size=2000)


HISTORY_KINDS = ("fleet.discover", "snapshots.refresh", "snapshots.take", "clones.create",
                 "replication.run", "tuning.apply")


def history(after_host_id: int, days: int, per_day: int, now: datetime) -> int:
    """per_day finished operations a day for `days` days on every host with an id above
    after_host_id, of kinds in turn, written by the database itself (a year at 10,000
    hosts is millions of rows: the ORM would take an hour)."""
    every = timedelta(days=1) / per_day
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ops_operation (kind, host_id, subject, mutating, step, state, status, "
            "progress, message, result, error, error_code, lease_owner, attempts, trigger, "
            "created_at, started_at, finished_at, updated_at) "
            "SELECT (%s::text[])[1 + (h.id + n) %% %s], h.id, h.name, false, 'done', '{}', "
            "'succeeded', 100, 'done', '{}', '', '', '', 0, 'schedule', t, t, t, t "
            "FROM fleet_host h CROSS JOIN generate_series(1, %s) n "
            "CROSS JOIN LATERAL (SELECT %s::timestamptz - %s * n "
            "- make_interval(secs => h.id %% 900)) at(t) WHERE h.id > %s",
            [list(HISTORY_KINDS), len(HISTORY_KINDS), days * per_day, now, every,
             after_host_id])
        return cursor.rowcount
