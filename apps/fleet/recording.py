"""Discovery's facts onto a host's rows: updated in place, so ids hold.

A pool, dataset, cluster or disk keeps its row (and id) for as long as the host
has it, matched by its natural identity: a pool and a dataset by name (the
facts carry no pool guid), a cluster by its data directory, a disk by its
device name (the facts carry no serial). What is gone from the host is deleted,
except a cluster: its row is kept, marked not running, so what points at it
(benchmarks, experiments, tenants' assignments, policies, links, clones) keeps
pointing at the same cluster, and the cluster_down alert can say so. A cluster
the facts name as one of PoZoL's clones is no cluster of the host: its row (left
by a discovery from before clones were told apart) is deleted.

A cluster the operator retired stays retired: the retire leaves a tombstone
(RetiredCluster: the data directory, the datasets destroyed with it, when), and
facts read before that moment are recorded without them (without_retired). The
host may have shown the cluster still running to a discovery that read it just
before the retire stopped it and records after the retire forgot it. Facts read
after the retire are recorded as they are: a cluster made again at that data
directory (by hand, say) is the host's. A tombstone is kept a day (TOMBSTONE_KEPT)
and removed by the host's next recording after that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import TypeVar

from django.db import models

from apps.fleet.models import Dataset, Disk, Host, PgCluster, Pool, RetiredCluster
from apps.remote.gather import under

Row = TypeVar("Row", bound=models.Model)
# How long a retired cluster's tombstone is kept (without_retired).
TOMBSTONE_KEPT = timedelta(days=1)


def match(rows: Iterable[Row], facts: Iterable[dict], row_key: Callable[[Row], object],
          fact_key: Callable[[dict], object]) -> tuple[list[tuple[Row | None, dict]], list[Row]]:
    """Pair each fact with the row of the same key (None: a new one), and list the rows
    no fact names. Of facts sharing a key the last one counts, as a dict would."""
    by_key = {row_key(row): row for row in rows}
    facts_by_key = {fact_key(fact): fact for fact in facts}
    pairs = [(by_key.pop(key, None), fact) for key, fact in facts_by_key.items()]
    return pairs, list(by_key.values())


def record_rows(host: Host, facts: dict, now: datetime) -> dict[str, int]:
    """Make the host's rows say what `facts` say; the caller holds the host's lock
    (Host.hold_discovered_rows) inside one transaction."""
    pool_pairs, gone_pools = match(host.pools.all(), facts.get("pools") or [],
                                   lambda row: row.name, _key(Pool, "name"))
    dataset_pairs, gone_datasets = match(host.datasets.all(), facts.get("datasets") or [],
                                         lambda row: row.name, _key(Dataset, "name"))
    disk_pairs, gone_disks = match(host.disks.all(), facts.get("disks") or [],
                                   lambda row: row.name, _key(Disk, "name"))
    # Gone first: a name may come back under another row only once its old row is gone.
    for gone in (gone_datasets, gone_pools, gone_disks):
        _delete(gone)
    pools = {fact["name"]: _save(row or Pool(host=host), _pool_values(fact))
             for row, fact in pool_pairs}
    datasets = {fact["name"]: _save(row or Dataset(host=host), _dataset_values(pools, fact))
                for row, fact in dataset_pairs}
    clusters = _record_clusters(host, facts, datasets, now)
    for row, fact in disk_pairs:
        _save(row or Disk(host=host), _disk_values(fact))
    return {"pools": len(pools), "datasets": len(datasets), "clusters": clusters,
            "disks": len(disk_pairs)}


def record_cluster(host: Host, cluster: dict, datasets: list[dict], now: datetime) -> None:
    """One cluster and its datasets onto their rows (made or updated), every other row
    of the host left as it is: a cluster PoZoL has just made (apps.provisioning)."""
    pools = {row.name: row for row in host.pools.all()}
    rows = {row.name: row for row in host.datasets.filter(
        name__in=[fact["name"] for fact in datasets])}
    saved = {fact["name"]: _save(rows.get(fact["name"]) or Dataset(host=host),
                                 _dataset_values(pools, fact)) for fact in datasets}
    row = host.clusters.filter(data_dir=cluster["data_dir"]).first()
    _save(row or PgCluster(host=host), {**_cluster_values(saved, cluster), "last_seen_at": now})


def forget_cluster(host: Host, data_dir: str, destroyed: list[str], now: datetime) -> None:
    """A retired cluster gone from the host's rows and facts, with the datasets destroyed
    with it (each with what is below it), and its tombstone left at `now`; the caller
    holds the host's lock (Host.hold_discovered_rows) inside one transaction."""
    host.clusters.filter(data_dir=data_dir).delete()
    for name in destroyed:
        host.datasets.filter(models.Q(name=name) | models.Q(name__startswith=f"{name}/")) \
            .delete()
    RetiredCluster.objects.update_or_create(
        host=host, data_dir=data_dir, defaults={"datasets": destroyed, "retired_at": now})
    # The facts too: plans and the advisor read them, and would count the cluster (its
    # port, its datasets' names) until the next discovery.
    host.refresh_from_db(fields=["facts"])
    if host.facts:
        host.facts = _without(host.facts, {data_dir}, destroyed)
        host.save(update_fields=["facts"])


def without_retired(host: Host, facts: dict, read_at: datetime) -> tuple[dict, list[str]]:
    """`facts`, read from the host at `read_at`, without the clusters retired since and
    the datasets destroyed with them; and the data directories of the clusters left out,
    for the discovery to say so. Read under the host's lock, as the retire writes."""
    # A tombstone matters only to a discovery that read the host before it, and none
    # reads that long before it records (its probes and steps have deadlines of
    # minutes): the host's older tombstones go, so they do not pile up forever.
    host.retired_clusters.filter(retired_at__lt=read_at - TOMBSTONE_KEPT).delete()
    retired = list(host.retired_clusters.filter(retired_at__gt=read_at))
    if not retired:
        return facts, []
    data_dirs = {row.data_dir for row in retired}
    left_out = [fact["data_dir"] for fact in facts.get("clusters") or []
                if fact["data_dir"] in data_dirs]
    return _without(facts, data_dirs, [name for row in retired for name in row.datasets]), \
        left_out


def _without(facts: dict, data_dirs: set[str], destroyed: list[str]) -> dict:
    return {**facts,
            "clusters": [fact for fact in facts.get("clusters") or []
                         if fact["data_dir"] not in data_dirs],
            "datasets": [fact for fact in facts.get("datasets") or []
                         if not any(under(fact["name"], name) for name in destroyed)]}


def _record_clusters(host: Host, facts: dict, datasets: dict[str, Dataset],
                     now: datetime) -> int:
    pairs, missing = match(host.clusters.all(), facts.get("clusters") or [],
                           lambda row: row.data_dir, _key(PgCluster, "data_dir"))
    for row, fact in pairs:
        _save(row or PgCluster(host=host), {**_cluster_values(datasets, fact),
                                            "last_seen_at": now})
    clones = set(facts.get("clones") or [])
    _delete([row for row in missing if row.data_dir in clones])
    PgCluster.objects.filter(pk__in=[row.pk for row in missing if row.data_dir not in clones],
                             running=True).update(running=False)
    return len(pairs)


def _delete(rows: list[models.Model]) -> None:
    if rows:
        type(rows[0]).objects.filter(pk__in=[row.pk for row in rows]).delete()


# Host output is free text. A shown value longer than its column is cut rather than
# fail the whole discovery; a path or a user name cut would name something else, so
# it is left unknown instead.
_NEVER_CUT = frozenset({"data_dir", "wal_dir", "socket_dir", "bin_dir", "owner", "mountpoint"})


def _fit(field: models.Field, value: object) -> object:
    if isinstance(value, str) and field.max_length and len(value) > field.max_length:
        return "" if field.name in _NEVER_CUT else value[:field.max_length]
    return value


def _key(model: type[models.Model], name: str) -> Callable[[dict], object]:
    """A fact's key as its row stores it, so a value cut to fit still finds its row."""
    field = model._meta.get_field(name)
    return lambda fact: _fit(field, fact[name])


def _save(row: Row, values: dict) -> Row:
    for field in row._meta.concrete_fields:
        if field.name in values:
            values[field.name] = _fit(field, values[field.name])
    for name, value in values.items():
        setattr(row, name, value)
    row.save()
    return row


def _pool_values(fact: dict) -> dict:
    return dict(
        name=fact["name"], health=fact.get("health") or "",
        size=fact.get("size"), allocated=fact.get("allocated"), free=fact.get("free"),
        fragmentation=fact.get("fragmentation"), capacity=fact.get("capacity"),
        ashift=fact.get("ashift"), has_log=bool(fact.get("has_log")),
        has_cache=bool(fact.get("has_cache")), vdevs=fact.get("vdevs") or [],
        block_cloning=fact.get("block_cloning") or "",
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


def _dataset_values(pools: dict[str, Pool], fact: dict) -> dict:
    props = fact.get("properties") or {}
    recordsize = _number(_value(props, "recordsize"))
    return dict(
        pool=pools.get(fact["name"].split("/")[0]), name=fact["name"],
        type=fact.get("type") or "filesystem", mountpoint=fact.get("mountpoint") or "",
        used=fact.get("used"), available=fact.get("avail"), referenced=fact.get("refer"),
        usedbysnapshots=fact.get("usedbysnapshots"),
        recordsize=int(recordsize) if recordsize else None,
        compression=_value(props, "compression"), compressratio=fact.get("compressratio"),
        atime=_value(props, "atime"), logbias=_value(props, "logbias"),
        primarycache=_value(props, "primarycache"), sync=_value(props, "sync"),
        properties=props,
    )


def _cluster_values(datasets: dict[str, Dataset], fact: dict) -> dict:
    return dict(
        data_dir=fact["data_dir"], port=fact.get("port"),
        version=fact.get("version") or "", server_version_num=fact.get("server_version_num"),
        wal_dir=fact.get("wal_dir") or "", socket_dir=fact.get("socket_dir") or "",
        bin_dir=fact.get("bin_dir") or "", owner=fact.get("owner") or "",
        running=fact.get("running", True), data_checksums=fact.get("data_checksums"),
        data_dataset=datasets.get(fact.get("data_dataset")),
        wal_dataset=datasets.get(fact.get("wal_dataset")),
        settings=fact.get("settings") or [],
        config_file=fact.get("config_file") or "", hba_file=fact.get("hba_file") or "",
        ident_file=fact.get("ident_file") or "", packaged_as=fact.get("packaged") or "",
        systemd_unit=fact.get("systemd_unit") or "",
        pg_ctlcluster=bool(fact.get("pg_ctlcluster")),
    )


def _disk_values(fact: dict) -> dict:
    return dict(
        name=fact["name"], type=fact.get("type") or "", size=fact.get("size"),
        rotational=fact.get("rotational"), model=fact.get("model") or "",
        transport=fact.get("transport") or "", write_cache=fact.get("write_cache") or "",
        volatile_write_cache=fact.get("volatile_write_cache"),
    )
