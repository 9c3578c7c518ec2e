"""Sample script output -> Sample. Malformed text is read as far as it goes.

Formats and where they come from:

- framing: apps.remote.facts.sections (named markers, exit status per source);
  ABSENT (apps.telemetry.core.command) marks a source the host does not have;
- arcstats: apps.remote.facts.arc (OpenZFS's SPL kstat file, or zfs-fuse's
  file per field); fields by name (host-formats.md 1.1-1.2);
- dmu_tx: the same named-kstat layout (two header lines, `name type value`),
  fields from the `dmu_tx_stats` table of module/zfs/dmu_tx.c (openzfs/zfs
  zfs-2.1.0 .. zfs-2.4.0; `dmu_tx_wrlog_delay` from 2.2.0);
- txgs: module/zfs/spa_stats.c `spa_txg_history_show_header`/`_show`
  (zfs-2.1.16 .. 2.3.0): a header line `txg birth state ndirty nread nwritten
  reads writes otime qtime wtime stime`, then one row per txg, times in ns.
  0.6.x printed a kstat header line first and `nreserved` for `ndirty`
  (openzfs/zfs#2990, #4512): columns are found by their header names;
- /proc/meminfo: apps.remote.facts.system; /proc/loadavg and /proc/uptime:
  proc(5) ("0.52 0.58 0.59 1/467 12345"; "350735.47 234388.90");
- zpool list / zfs get: apps.remote.facts.zpool and .zfs (columns from the
  SampleSpec, so the dialect decides them, not the output);
- zpool status: apps.remote.facts.zpool's vdev tree; the scan line is read
  here for both dialects: OpenZFS `scan: scrub repaired 0B in 00:12:41 with 0
  errors on Sun Sep  8 00:36:42 2024` / `scrub in progress since` / `scrub
  canceled on` / `scrub paused since` / `none requested`
  (cmd/zpool/zpool_main.c print_scan_scrub_resilver_status, zfs-2.2.0), and
  zfs-fuse `scrub: scrub completed after 0h0m with 0 errors on Mon Nov 23
  21:35:44 2026` / `scrub: none requested` (captured on the test host);
- psql: apps.telemetry.core.pgstats.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TypeVar

from apps.remote.facts import arc as arcfacts
from apps.remote.facts import system, zfs, zpool
from apps.remote.facts.numbers import int_or_none, is_digits
from apps.remote.facts.sections import Section, split_sections
from apps.telemetry.core import command as sc
from apps.telemetry.core.pgstats import parse_pg_stats
from apps.telemetry.core.sample import (
    NOT_AVAILABLE,
    Arc,
    Cluster,
    Dataset,
    DmuTx,
    Load,
    Memory,
    Pool,
    Sample,
    Scrub,
    Txg,
)
from apps.telemetry.core.spec import SampleSpec

T = TypeVar("T")
_ARC_FIELDS = tuple(Arc.__dataclass_fields__)
_DMU_TX_FIELDS = tuple(DmuTx.__dataclass_fields__)
_TXG_INT_COLUMNS = ("txg", "birth", "nread", "nwritten", "reads", "writes",
                    "otime", "qtime", "wtime", "stime")


class _Reader:
    """The sections of one answer, and what each missing one is missing for."""

    def __init__(self, output: str) -> None:
        self.sections = split_sections(output)
        self.missing: dict[str, str] = {}

    def text(self, name: str, *, partial: bool = False) -> str | None:
        """The section's text, or None after noting why there is none.

        `partial`: a failed command's lines still count (zpool and zfs answer
        for the pools they found and complain about one that is gone, exit 1).
        """
        section = self.sections.get(name)
        if section is None:
            self.missing[name] = "no answer (the sample was cut short)"
            return None
        if _is_absent(section):
            self.missing[name] = NOT_AVAILABLE
            return None
        if not section.ok:
            self.missing[name] = f"failed (exit {section.exit_code}): {_first_line(section)}"
            return section.text if partial else None
        return section.text

    def parsed(self, name: str, parse: Callable[[str], T], *, partial: bool = False) -> T | None:
        text = self.text(name, partial=partial)
        if text is None:
            return None
        try:
            return parse(text)
        except ValueError as error:
            # One garbled source is unreadable; the rest of the sample still counts.
            self.missing[name] = f"unreadable: {error}"
            return None


def parse_sample(output: str, spec: SampleSpec, taken_at: datetime) -> Sample:
    reader = _Reader(output)
    sampled_zfs = spec.zfs and bool(spec.pools)
    if not spec.zfs:
        reader.missing["zfs"] = NOT_AVAILABLE
    return Sample(
        taken_at=taken_at,
        uptime=reader.parsed(sc.UPTIME, parse_uptime),
        memory=reader.parsed(sc.MEMINFO, parse_meminfo),
        load=reader.parsed(sc.LOADAVG, parse_loadavg),
        arc=reader.parsed(sc.ARCSTATS, parse_arc),
        dmu_tx=reader.parsed(sc.DMU_TX_SECTION, parse_dmu_tx),
        pools=parse_pools(reader, spec) if sampled_zfs else None,
        datasets=reader.parsed(sc.ZFS_GET, lambda text: parse_datasets(text, spec),
                               partial=True) if sampled_zfs else None,
        clusters=tuple(Cluster(cluster.key, reader.parsed(f"{sc.PG_PREFIX}{i}", parse_pg_stats))
                       for i, cluster in enumerate(spec.clusters)),
        missing=dict(reader.missing),
    )


# -- kernel ---------------------------------------------------------------------------

def parse_uptime(text: str) -> float | None:
    first = text.split()[:1]
    try:
        return float(first[0]) if first else None
    except ValueError:
        return None


def parse_meminfo(text: str) -> Memory | None:
    info = system.parse_meminfo(text)
    if not info:
        return None
    return Memory(total=info.get("MemTotal"), available=info.get("MemAvailable"),
                  free=info.get("MemFree"), cached=info.get("Cached"),
                  dirty=info.get("Dirty"), writeback=info.get("Writeback"))


_LOADAVG = re.compile(r"\s*([\d.]+) ([\d.]+) ([\d.]+)(?: (\d+)/(\d+))?")


def parse_loadavg(text: str) -> Load | None:
    match = _LOADAVG.match(text)
    if not match:
        return None
    running, threads = match[4], match[5]
    return Load(float(match[1]), float(match[2]), float(match[3]),
                int(running) if running else None, int(threads) if threads else None)


# -- ZFS kstats -----------------------------------------------------------------------

def parse_arc(text: str) -> Arc | None:
    """Either layout: the SPL file, or zfs-fuse's `grep -r .` of a file per field."""
    if text.startswith(arcfacts.FUSE_ARCSTATS_DIR):
        stats = arcfacts.parse_arcstats_files(text)
    else:
        stats = arcfacts.parse_arcstats_proc(text)
    if not stats:
        return None
    return Arc(**{name: _counter(stats.get(name)) for name in _ARC_FIELDS})


def parse_dmu_tx(text: str) -> DmuTx | None:
    stats = arcfacts.parse_arcstats_proc(text)  # the same named-kstat layout
    if not stats:
        return None
    return DmuTx(**{name: _counter(stats.get(f"dmu_tx_{name}")) for name in _DMU_TX_FIELDS})


def _counter(value: int | None) -> int | None:
    # Counters and sizes are unsigned in the kernel; a negative one is not a reading.
    return value if value is not None and value >= 0 else None


def parse_txgs(text: str) -> tuple[Txg, ...]:
    columns: list[str] | None = None
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if fields[:2] == ["txg", "birth"] or fields[:2] == ["txg", "state"]:
            columns = fields
        elif columns and len(fields) == len(columns):
            row = _txg(dict(zip(columns, fields, strict=True)))
            if row is not None:
                rows.append(row)
    return tuple(rows)


def _txg(row: dict[str, str]) -> Txg | None:
    if not all(is_digits(row.get(name, "")) for name in _TXG_INT_COLUMNS):
        return None
    ndirty = row.get("ndirty", "")
    return Txg(**{name: int(row[name]) for name in _TXG_INT_COLUMNS},
               state=row.get("state", "?"), ndirty=int_or_none(ndirty))


# -- pools and datasets ------------------------------------------------------------------

def parse_pools(reader: _Reader, spec: SampleSpec) -> tuple[Pool, ...] | None:
    columns = sc.zpool_list_columns(spec)
    rows = reader.parsed(sc.ZPOOL_LIST, lambda text: zpool.parse_zpool_list(text, columns),
                         partial=True)
    if rows is None:
        return None
    statuses, blocks = reader.parsed(sc.ZPOOL_STATUS, _statuses, partial=True) or ({}, {})
    listed = {row.name for row in rows}
    for name in spec.pools:
        if name not in listed:
            reader.missing[f"pool:{name}"] = "not in zpool list's answer (exported or destroyed?)"
    return tuple(
        pool_sample(row, statuses.get(row.name), blocks.get(row.name),
                    reader.parsed(sc.TXGS_PREFIX + row.name, parse_txgs))
        for row in rows if row.name in spec.pools)


def _statuses(text: str) -> tuple[dict[str, zpool.PoolStatus], dict[str, str]]:
    return zpool.parse_zpool_status(text), _status_blocks(text)


def pool_sample(row: zpool.PoolRow, status: zpool.PoolStatus | None, block: str | None,
                txgs: tuple[Txg, ...] | None) -> Pool:
    counts = _error_counts(status) if status else (None, None, None)
    return Pool(
        name=row.name, size=row.size, allocated=row.allocated, free=row.free,
        capacity=row.capacity, fragmentation=row.fragmentation, health=row.health or None,
        exact=row.exact, read_errors=counts[0], write_errors=counts[1],
        checksum_errors=counts[2],
        data_errors=parse_data_errors(status.errors) if status else None,
        scrub=parse_scrub(block) if block is not None else None,
        txgs=txgs,
    )


def _error_counts(status: zpool.PoolStatus) -> tuple[int | None, int | None, int | None]:
    vdevs = list(_all_vdevs([*status.vdevs, *status.logs, *status.cache, *status.special,
                             *status.dedup]))
    if not vdevs:
        return None, None, None
    return tuple(_sum(getattr(v, column) for v in vdevs)  # type: ignore[return-value]
                 for column in ("read", "write", "cksum"))


def _all_vdevs(vdevs: Iterable[zpool.Vdev]) -> Iterable[zpool.Vdev]:
    # Each vdev counts its own errors (a mirror's are not its children's sum).
    for vdev in vdevs:
        yield vdev
        yield from _all_vdevs(vdev.children)


def _sum(values: Iterable[int | None]) -> int | None:
    numbers = list(values)
    return None if any(n is None for n in numbers) else sum(numbers)  # type: ignore[arg-type]


def parse_data_errors(errors: str) -> int | None:
    if errors.startswith("No known data errors"):
        return 0
    match = re.match(r"(\d+) data errors", errors)
    return int(match[1]) if match else None


def _status_blocks(text: str) -> dict[str, str]:
    blocks = {}
    for block in re.split(r"^(?=\s*pool: )", text, flags=re.M):
        match = re.match(r"\s*pool: (\S+)", block)
        if match:
            blocks[match[1]] = block
    return blocks


_SCAN_LINE = re.compile(r"^\s*(?:scan|scrub): (.*)$", re.M)
_DATE = r"(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})"
_FINISHED = (re.compile(r"scrub repaired .* with (\d+) errors on " + _DATE),  # OpenZFS
             re.compile(r"scrub completed after .* with (\d+) errors on " + _DATE))  # zfs-fuse


def parse_scrub(block: str) -> Scrub:
    """The last scrub from a pool's `zpool status` block; no scan line is "none"."""
    match = _SCAN_LINE.search(block)
    line = match[1].strip() if match else "none requested"
    for pattern in _FINISHED:
        finished = pattern.search(line)
        if finished:
            return Scrub("finished", zpool.parse_ctime(finished[2]), int(finished[1]))
    for words, state in (("scrub in progress", "in progress"), ("scrub paused", "paused"),
                         ("scrub canceled", "canceled")):
        if line.startswith(words):
            return Scrub(state, None, None)
    # "none requested", or a resilver: nothing is known about the last scrub.
    return Scrub("none", None, None)


def parse_datasets(text: str, spec: SampleSpec) -> tuple[Dataset, ...]:
    """`zfs get -Hp -r`; zfs-fuse's get has no -t, so snapshots are dropped here."""
    properties = zfs.parse_zfs_get(text)
    return tuple(_dataset(name, props) for name, props in properties.items()
                 if "@" not in name and _in_pools(name, spec.pools))


def _in_pools(name: str, pools: tuple[str, ...]) -> bool:
    return name.split("/", 1)[0] in pools


def _dataset(name: str, props: Mapping[str, zfs.PropertyValue]) -> Dataset:
    def size(prop: str) -> int | None:
        value = props.get(prop)
        return zfs.parse_size(value.value)[0] if value and value.value else None

    ratio = props.get("compressratio")
    return Dataset(name=name, used=size("used"), logicalused=size("logicalused"),
                   usedbysnapshots=size("usedbysnapshots"),
                   compressratio=zfs.parse_ratio(ratio.value) if ratio else None)


# -- helpers -------------------------------------------------------------------------------

def _is_absent(section: Section) -> bool:
    return section.text.strip() == sc.ABSENT


def _first_line(section: Section) -> str:
    lines = [line.strip() for line in section.text.splitlines() if line.strip()]
    return lines[0][:200] if lines else "(no output)"
