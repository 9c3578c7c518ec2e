"""Where a new cluster goes and how it is made: the plan, a pure function of facts.

One parent dataset per cluster, `<pool>/postgres/<name>`, with `data` and `wal`
children: `zfs snapshot -r` of the parent is one atomic snapshot of both, the
layout snapshots, clones and replication expect (apps/remote/snapshot_plan.py
finds the common parent). The data directory is `pgdata` inside the data
dataset and the WAL `pg_wal` inside the wal dataset (initdb -X), not the
mountpoints themselves: initdb wants a directory it makes, owned by the owner.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from apps.remote.facts.host import HostFacts

PARENT = "postgres"
DATA_BELOW, WAL_BELOW = "pgdata", "pg_wal"
FIRST_PORT = 5432
# initdb writes about 40 MiB (a 16 MiB WAL segment among it); the first minutes more.
ROOM_NEEDED = 128 * 2**20
NAME_MAX = 31
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
# Without a profile: the references' layout (the oltp-safe built-in's datasets).
DEFAULT_ZFS = {
    "data": {"recordsize": "16K", "compression": "lz4", "atime": "off",
             "logbias": "latency", "primarycache": "all"},
    "wal": {"recordsize": "128K", "compression": "lz4", "atime": "off",
            "logbias": "latency", "primarycache": "all"},
}
# Properties a ZFS may lack (zfs-fuse has neither): left out, with the reason.
OPTIONAL_PROPERTIES = {"sync": "sync_property", "redundant_metadata": "redundant_metadata_property"}
# Weaker members of the compression families, tried in order when the host lacks one.
COMPRESSION_CHAIN = ("zstd", "lz4", "on")


class Refused(ValueError):
    """A request the host cannot take: the field at fault, the reason, an API code."""

    def __init__(self, field: str, message: str, code: str = "invalid") -> None:
        super().__init__(message)
        self.field, self.code = field, code


@dataclass(frozen=True)
class Request:
    major: int
    name: str
    port: int | None = None
    pool: str | None = None


@dataclass(frozen=True)
class DatasetPlan:
    name: str
    role: str  # parent | data | wal
    properties: dict[str, str]
    mountpoint: str | None  # as inherited from the nearest dataset discovery saw


@dataclass(frozen=True)
class Plan:
    name: str
    major: int
    port: int
    owner: str
    bin_dir: str
    pool: str
    parent: str
    datasets: tuple[DatasetPlan, ...]
    data_dir: str | None
    wal_dir: str | None
    socket_dir: str
    settings: dict[str, str]
    profile: str | None
    notes: tuple[str, ...] = field(default=())
    # The host runs its clusters as postgresql-common's (Debian's packages): this one is
    # made by pg_createcluster as <major>/<name> and started by its unit (or by
    # pg_ctlcluster where systemd is not), as the host's own are; else initdb and pg_ctl.
    packaged: bool = False
    unit: str | None = None  # postgresql@<major>-<name>.service when systemd runs it

    @property
    def data(self) -> str:
        return f"{self.parent}/data"

    @property
    def wal(self) -> str:
        return f"{self.parent}/wal"

    def initdb(self, data_dir: str | None = None, wal_dir: str | None = None) -> list[str]:
        """initdb's argument vector (as the owner), or pg_createcluster's (as root, which
        runs initdb as the owner): checksums on, WAL on its dataset."""
        data_dir, wal_dir = data_dir or self.data_dir or "", wal_dir or self.wal_dir or ""
        options = ["--data-checksums", "--encoding=UTF8", "--auth-local=peer",
                   "--auth-host=scram-sha-256"]
        if self.packaged:
            return ["pg_createcluster", str(self.major), self.name, "-u", self.owner,
                    "-p", str(self.port), "-d", data_dir, "-s", self.socket_dir,
                    "--start-conf=auto", "--", f"--waldir={wal_dir}", *options]
        return [f"{self.bin_dir}/initdb", "-D", data_dir, "-X", wal_dir, *options]

    @property
    def packaged_as(self) -> str | None:
        return f"{self.major}/{self.name}" if self.packaged else None

    def start(self, data_dir: str | None = None) -> str:
        data_dir = data_dir or self.data_dir
        if self.unit:
            return (f"systemctl start {self.unit.removesuffix('.service')}: the host's "
                    "unit, which starts it at boot (start.conf auto)")
        if self.packaged:
            return (f"pg_ctlcluster {self.major} {self.name} start: postgresql-common's, "
                    "which starts it at boot (start.conf auto)")
        return (f"pg_ctl -D {data_dir} -l {data_dir}/../server.log -w start (as "
                f"{self.owner}): no unit or pg_ctlcluster knows it, as PoZoL's clones")

    def to_dict(self) -> dict:
        shown = asdict(self)
        shown["datasets"] = [asdict(d) for d in self.datasets]
        shown["notes"] = list(self.notes)
        shown["initdb"] = self.initdb()
        shown["start"] = self.start()
        shown["snapshot"] = f"zfs snapshot -r {self.parent}@<name>: data and WAL at once"
        return shown

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        values = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        values["datasets"] = tuple(DatasetPlan(**x) for x in d["datasets"])
        values["notes"] = tuple(d["notes"])
        return cls(**values)


def cluster_name(value: object) -> str:
    if not isinstance(value, str) or not _NAME.match(value) or len(value) > NAME_MAX:
        raise Refused("name", f"a cluster name is 1-{NAME_MAX} characters of a-z 0-9 _, "
                              f"starting with a letter, not {value!r}")
    return value


def _packaged(facts: HostFacts) -> bool:
    """Whether the host makes its clusters with postgresql-common: its running ones say
    so; with none running, having the package does."""
    if facts.clusters:
        return any(c.pg_ctlcluster for c in facts.clusters)
    return bool(facts.installed and facts.installed.pg_ctlcluster)


def _packaged_names(facts: HostFacts) -> set[str]:
    stopped = set(facts.installed.packaged) if facts.installed else set()
    return stopped | {c.packaged for c in facts.clusters if c.packaged}


def plan(facts: HostFacts, request: Request, *, taken_ports: set[int], zfs: dict | None = None,
         settings: dict[str, str] | None = None, profile: str | None = None) -> Plan:
    """The plan for a new cluster on this host, or Refused with the reason.

    `taken_ports`: ports PoZoL knows of beyond the facts (a stopped cluster, a clone);
    `zfs` and `settings`: the profile's dataset properties by role and its PostgreSQL
    settings, resolved for this host (None: the references' layout, stock settings).
    """
    name = cluster_name(request.name)
    majors = facts.majors()
    if request.major not in majors:
        known = ", ".join(str(m) for m in sorted(majors)) or "none"
        raise Refused("major", f"PostgreSQL {request.major} is not installed on this host as "
                               f"discovery found it (majors found: {known})", "no_such_major")
    bin_dir, owner = majors[request.major]
    pool = _pool(facts, request.pool)
    parent = f"{pool}/{PARENT}/{name}"
    names = {d.name for d in facts.datasets}
    if any(n == parent or n.startswith(parent + "/") for n in names):
        raise Refused("name", f"a cluster named {name} exists: {parent} is on the host",
                      "cluster_exists")
    port = _port(facts, request.port, taken_ports)
    notes: list[str] = []
    zfs = zfs or DEFAULT_ZFS
    datasets = (
        DatasetPlan(parent, "parent", {}, _mountpoint(facts, parent)),
        DatasetPlan(f"{parent}/data", "data", _properties(facts, zfs.get("data", {}), notes),
                    _mountpoint(facts, f"{parent}/data")),
        DatasetPlan(f"{parent}/wal", "wal", _properties(facts, zfs.get("wal", {}), notes),
                    _mountpoint(facts, f"{parent}/wal")),
    )
    socket_dir, listen = _neighbours(facts)
    # pg_ctlcluster is postgresql-common's, which pg_createcluster comes with.
    packaged = _packaged(facts)
    if packaged and f"{request.major}/{name}" in _packaged_names(facts):
        raise Refused("name", f"a cluster {request.major}/{name} exists (pg_lsclusters)",
                      "cluster_exists")
    unit = f"postgresql@{request.major}-{name}.service" if packaged and facts.has_systemd \
        else None
    own = {"port": str(port), "listen_addresses": listen, "unix_socket_directories": socket_dir}
    return Plan(
        name=name, major=request.major, port=port, owner=owner, bin_dir=bin_dir, pool=pool,
        parent=parent, datasets=datasets,
        data_dir=_below(datasets[1].mountpoint, DATA_BELOW),
        wal_dir=_below(datasets[2].mountpoint, WAL_BELOW), socket_dir=socket_dir,
        settings={**(settings or {}), **own}, profile=profile, notes=tuple(notes),
        packaged=packaged, unit=unit)


def _pool(facts: HostFacts, wanted: str | None) -> str:
    pools = [p.name for p in facts.pools]
    if wanted is not None:
        if wanted not in pools:
            raise Refused("pool", f"the host has no pool {wanted!r} (pools: "
                                  f"{', '.join(pools) or 'none'})", "no_such_pool")
        return wanted
    if not pools:
        raise Refused("pool", "the host has no ZFS pool (as discovery found it)", "no_pool")
    free = {p.name: p.free or 0 for p in facts.pools}
    return max(pools, key=lambda name: (free[name], name))


def _port(facts: HostFacts, wanted: int | None, taken_ports: set[int]) -> int:
    taken = {c.port for c in facts.clusters if c.port} | set(taken_ports)
    if wanted is not None:
        if isinstance(wanted, bool) or not isinstance(wanted, int) or not 1024 <= wanted <= 65535:
            raise Refused("port", "a port from 1024 to 65535")
        if wanted in taken:
            raise Refused("port", f"port {wanted} is taken on this host", "port_taken")
        return wanted
    port = FIRST_PORT
    while port in taken:
        port += 1
    return port


def _properties(facts: HostFacts, wanted: dict[str, str], notes: list[str]) -> dict[str, str]:
    caps = facts.zfs.capabilities if facts.zfs else None
    chosen: dict[str, str] = {}
    for key, value in wanted.items():
        if value == "experiment":
            value = DEFAULT_ZFS["data"].get(key, "")
            notes.append(f"{key}: no experiment has run on a new dataset; the reference "
                         f"value {value} instead")
            if not value:
                continue
        flag = OPTIONAL_PROPERTIES.get(key)
        if flag and caps is not None and getattr(caps, flag) is False:
            notes.append(f"{key}={value} left out: this ZFS has no {key} property")
            continue
        if key == "compression" and caps is not None and value not in caps.compression:
            better = best_compression(value, caps.compression)
            if better is None:
                notes.append(f"compression={value} left out: this ZFS has none of its family")
                continue
            notes.append(f"compression={better} instead of {value}: the best this ZFS has")
            value = better
        chosen[key] = value
    return chosen


def best_compression(wanted: str, available: tuple[str, ...]) -> str | None:
    family = "zstd" if wanted.startswith("zstd") else wanted
    chain = COMPRESSION_CHAIN[COMPRESSION_CHAIN.index(family):] \
        if family in COMPRESSION_CHAIN else (wanted,)
    return next((c for c in (wanted, *chain) if c in available), None)


def _mountpoint(facts: HostFacts, name: str) -> str | None:
    """Where `name` mounts when it inherits from its nearest dataset discovery saw."""
    mounts = {d.name: d.mountpoint for d in facts.datasets}
    below: list[str] = []
    current = name
    while "/" in current:
        current, part = current.rsplit("/", 1)
        below.insert(0, part)
        mount = mounts.get(current)
        if mount and mount.startswith("/"):
            return "/".join([mount.rstrip("/"), *below])
        if current in mounts:
            return None  # legacy or none: not known until made
    return None


def _below(mountpoint: str | None, part: str) -> str | None:
    return f"{mountpoint}/{part}" if mountpoint else None


def _neighbours(facts: HostFacts) -> tuple[str, str]:
    """The socket directory and listen addresses the host's clusters use (its way),
    else PostgreSQL's packaged defaults."""
    for cluster in facts.clusters:
        rows = {s.name: s.setting for s in cluster.settings}
        if cluster.socket_dir:
            return cluster.socket_dir, rows.get("listen_addresses", "localhost")
    return "/var/run/postgresql", "localhost"
