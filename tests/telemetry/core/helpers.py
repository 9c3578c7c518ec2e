"""Specs and samples for the telemetry core tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from apps.remote.cluster import ClusterTarget
from apps.remote.facts.host import HostFacts
from apps.telemetry.core.pgstats import PgStats
from apps.telemetry.core.sample import Arc, Pool, Sample, Txg
from apps.telemetry.core.spec import ClusterSpec, SampleSpec, spec_from_facts
from tests.telemetry.fixtures import ZFS_FUSE

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
PG_KEY = "/var/lib/postgresql/16/main"


def fuse_facts() -> HostFacts:
    return HostFacts.from_dict(json.loads((ZFS_FUSE / "facts.json").read_text()))


def fuse_spec() -> SampleSpec:
    return spec_from_facts(fuse_facts())


def openzfs_spec() -> SampleSpec:
    target = ClusterTarget(owner="postgres", bin_dir="/usr/lib/postgresql/16/bin",
                           socket_dir="/var/run/postgresql", port=5432)
    return SampleSpec(zfs=True, zpool_parsable=True, zpool_status_parsable=True,
                      zpool_fragmentation=True,
                      logicalused=True, zfs_get_types=True, pools=("tank",),
                      clusters=(ClusterSpec(PG_KEY, target, 160004),))


def arc(**values: int) -> Arc:
    return Arc(**{name: values.get(name) for name in Arc.__dataclass_fields__})


def pg(**values: float) -> PgStats:
    fields = {name: values.get(name) for name in PgStats.__dataclass_fields__
              if name != "connections"}
    return PgStats(**fields)


def txg(number: int, *, state: str = "C", nwritten: int = 0, stime: int = 0,
        ndirty: int | None = 0) -> Txg:
    return Txg(txg=number, birth=number * 5_000_000_000, state=state, ndirty=ndirty, nread=0,
               nwritten=nwritten, reads=0, writes=0, otime=0, qtime=0, wtime=0, stime=stime)


def pool(name: str = "tank", *, txgs: tuple[Txg, ...] | None = None, cksum: int | None = 0) -> Pool:
    return Pool(name=name, size=None, allocated=None, free=None, capacity=None,
                fragmentation=None, health="ONLINE", exact=True, read_errors=0,
                write_errors=0, checksum_errors=cksum, data_errors=0, scrub=None, txgs=txgs)


def sample(seconds: float = 0, *, uptime: float | None = None, arc_: Arc | None = None,
           pools: tuple[Pool, ...] | None = None, stats: PgStats | None = None) -> Sample:
    from apps.telemetry.core.sample import Cluster

    return Sample(taken_at=T0 + timedelta(seconds=seconds), uptime=uptime, memory=None,
                  load=None, arc=arc_, dmu_tx=None, pools=pools, datasets=None,
                  clusters=(Cluster(PG_KEY, stats),) if stats is not None else ())
