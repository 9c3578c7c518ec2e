"""The host page's Metrics charts, as the chart JSON the pages draw (ARCHITECTURE.md,
"Charts"): each chart is one or more metrics read over one window, on one time axis.

A metric the host does not offer (ZFS dirty data on zfs-fuse, PostgreSQL on a host
without a cluster) is named in `missing` with its reason, never drawn as zeros;
a chart with nothing at all carries that reason as its `note`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from apps.fleet.models import Host, PgCluster
from apps.telemetry import services
from apps.telemetry.core.metrics import METRICS
from apps.telemetry.services import TelemetryError

RANGES = {"1h": timedelta(hours=1), "6h": timedelta(hours=6), "24h": timedelta(hours=24),
          "7d": timedelta(days=7), "30d": timedelta(days=30)}
DEFAULT_RANGE = "6h"
MAX_SERIES = 12  # per chart: a host with 80 datasets gets the first 12, and says so
_UNITS = {"ratio": "ratio", "percent": "percent", "bytes": "bytes",
          "bytes_per_second": "bytes_per_second", "per_second": "per_second",
          "per_hour": "per_hour", "count": ""}


@dataclass(frozen=True)
class Line:
    metric: str
    label: str  # "{key}" is the pool, dataset or cluster
    scale: float = 1.0  # 100 turns a 0..1 ratio into percent
    unit: str | None = None  # the unit once scaled; None: the metric's


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    lines: tuple[Line, ...]
    description: str


PERCENT = {"scale": 100.0, "unit": "percent"}
CHARTS = {chart.id: chart for chart in (
    Chart("arc-hit", "ARC hit rate", (Line("arc_hit_rate", "ARC hit rate", **PERCENT),),
          "ARC hits over ARC reads in each interval between samples."),
    Chart("arc-size", "ARC size against c_max", (
        Line("arc_size", "ARC size"), Line("arc_c", "target (c)"),
        Line("arc_c_max", "c_max")), "How much memory the ARC holds and may hold."),
    Chart("dirty", "Dirty and Writeback against TPS", (
        Line("dirty", "Dirty"), Line("writeback", "Writeback"),
        Line("zfs_dirty", "ZFS dirty {key}"), Line("tps", "TPS {key}")),
        "Page-cache dirty data, ZFS's own dirty data per txg, and transactions per second."),
    Chart("wal", "WAL and checkpoints", (
        Line("wal_bytes_per_s", "WAL {key}"), Line("checkpoints", "checkpoints {key}")),
        "WAL written per second and checkpoints per hour, per cluster."),
    Chart("cache-hit", "Cache hit", (Line("cache_hit", "cache hit {key}", **PERCENT),),
          "Shared buffer hits over block reads, per cluster."),
    Chart("compression", "Compression ratio", (Line("compressratio", "{key}"),),
          "Compression ratio per dataset."),
    Chart("space-saved", "Space saved by compression", (Line("space_saved", "{key}"),),
          "Bytes compression saves per dataset, with its children."),
    Chart("capacity", "Pool capacity", (Line("pool_capacity", "{key}"),),
          "Allocated share of each pool."),
)}


def window(range_name: str | None, start: str | None, end: str | None,
           now: datetime | None = None) -> tuple[datetime, datetime]:
    """?range=1h|6h|24h|7d|30d, or ?from=&to= in unix seconds (a dragged selection)."""
    now = now or timezone.now()
    if start or end:
        first, last = _moment("from", start), _moment("to", end)
        if first >= last:
            raise TelemetryError("`from` must be before `to`.", fields={"from": ["before `to`"]})
        if last - first > RANGES["30d"] * 14:
            raise TelemetryError("A window is at most 420 days.", fields={"from": ["too far"]})
        return first, last
    name = range_name or DEFAULT_RANGE
    if name not in RANGES:
        raise TelemetryError(f"Unknown range {name[:20]!r}.",
                             fields={"range": [f"one of: {', '.join(RANGES)}"]})
    return now - RANGES[name], now


_NUMBER = re.compile(r"\d{9,11}(\.\d{1,6})?")


def _moment(name: str, text: str | None) -> datetime:
    if not text or not _NUMBER.fullmatch(text):
        raise TelemetryError(f"`{name}` must be unix seconds.", fields={name: ["unix seconds"]})
    moment = datetime.fromtimestamp(float(text), tz=UTC)
    if not datetime(2000, 1, 1, tzinfo=UTC) <= moment <= datetime(2100, 1, 1, tzinfo=UTC):
        raise TelemetryError(f"`{name}` is out of range.", fields={name: ["2000..2100"]})
    return moment


def chart_data(host: Host, chart_id: str, start: datetime, end: datetime) -> dict:
    chart = CHARTS.get(chart_id)
    if chart is None:
        raise TelemetryError(f"No chart {chart_id[:40]!r}.", fields={"chart": ["unknown"]})
    lines: list[tuple[str, str, dict[float, float | None]]] = []
    missing: list[str] = []
    resolution = None
    names = _cluster_names(host) if any(
        METRICS[line.metric].per == "cluster" for line in chart.lines) else {}
    for line in chart.lines:
        reading = services.read(host, line.metric, start, end)
        resolution = resolution or reading.resolution
        if reading.reason:
            missing.append(f"{line.label.format(key='').strip()}: {reading.reason}")
            continue
        unit = line.unit or _UNITS.get(METRICS[line.metric].unit, METRICS[line.metric].unit)
        for found in reading.series:
            points = {at.timestamp(): _scaled(v, line.scale) for at, v in found.points}
            key = names.get(found.key, found.key) if found.key else ""
            lines.append((line.label.format(key=key), unit, points))
    return _shaped(chart, lines, missing, resolution, start, end)


def _cluster_names(host: Host) -> dict[str, str]:
    """A cluster's series is keyed by its data directory; its port reads shorter."""
    return {data_dir: f":{port}" for data_dir, port in
            PgCluster.objects.filter(host=host, port__isnull=False)
            .values_list("data_dir", "port")}


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else round(value * scale, 6)


def _shaped(chart: Chart, lines: list, missing: list[str], resolution: str | None,
            start: datetime, end: datetime) -> dict:
    if len(lines) > MAX_SERIES:
        missing.append(f"{len(lines) - MAX_SERIES} more series not shown")
        lines = lines[:MAX_SERIES]
    x = sorted({at for _, _, points in lines for at in points})
    data = {"title": chart.title, "x": [round(at, 3) for at in x],
            "series": [{"label": label, "unit": unit,
                        "values": [points.get(at) for at in x]}
                       for label, unit, points in lines],
            "missing": missing, "resolution": resolution,
            "from": round(start.timestamp()), "to": round(end.timestamp())}
    if not any(v is not None for s in data["series"] for v in s["values"]):
        data["note"] = "; ".join(missing) if missing and not lines else (
            "No samples in this time range.")
    return data
