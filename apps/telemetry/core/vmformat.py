"""The VictoriaMetrics store's two pure halves: samples written as Prometheus text
(its /api/v1/import/prometheus), and a /api/v1/query_range answer read back into
the series the charts draw (apps.telemetry.victoria does the HTTP).

One series per metric of apps.telemetry.core.metrics, per host and key:

    pozol_telemetry_tps{host_id="7",key="/var/lib/postgresql/15/main"} 41.5 1700000000123

`host_id`, not the host's name: a renamed host keeps its history. `key` is the
pool, dataset or cluster (absent for a metric of the whole host). Rates are
written as the rate of the interval ending at the sample (a gauge), so a window
of any width reads them with avg_over_time; a reboot, reset or missed sample
writes nothing at that point, and the chart shows a gap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

PREFIX = "pozol_telemetry_"


class ParseError(ValueError):
    """An answer that is not a query_range matrix."""


def series_name(metric: str) -> str:
    return PREFIX + metric


def escape(value: str) -> str:
    """A label value as the text format quotes it."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def lines(host_id: int, at: datetime, values: Iterable[tuple[str, str | None, float]]) -> str:
    """One host's sample as text-format lines with a millisecond timestamp; values
    that are not finite numbers are left out (the format would carry them, a chart
    could not draw them)."""
    millis = round(at.timestamp() * 1000)
    out = []
    for metric, key, value in values:
        if not math.isfinite(value):
            continue
        labels = f'host_id="{host_id}"' + (f',key="{escape(key)}"' if key is not None else "")
        out.append(f"{PREFIX}{metric}{{{labels}}} {value!r} {millis}\n")
    return "".join(out)


def selector(metric: str, host_id: int) -> str:
    """The series of one metric of one host (every key)."""
    return f'{PREFIX}{metric}{{host_id="{int(host_id)}"}}'


def range_query(metric: str, host_id: int, step: timedelta) -> str:
    """Each step's average of the samples in the step before it: a 1-minute step
    draws the samples as taken, a 1-hour one the hour's average."""
    return f"avg_over_time({selector(metric, host_id)}[{int(step.total_seconds())}s])"


Points = list[tuple[datetime, float | None]]


def parse_matrix(answer: object, step: timedelta) -> dict[str | None, Points]:
    """{key: points} of a query_range answer, a missing step between two known ones
    as None (the chart breaks there, as it does at a missed sample)."""
    if not isinstance(answer, dict) or answer.get("status") != "success":
        raise ParseError(f"not a successful answer: {str(answer)[:200]}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise ParseError("not a matrix")
    found: dict[str | None, Points] = {}
    for result in data.get("result") or []:
        key = (result.get("metric") or {}).get("key")
        found[key] = _with_gaps(_points(result.get("values") or []), step)
    return found


def _points(values: list) -> Points:
    points = []
    for pair in values:
        try:
            at, text = pair
            value = float(text)
        except (TypeError, ValueError) as error:
            raise ParseError(f"not a [time, value] pair: {pair!r}") from error
        points.append((datetime.fromtimestamp(float(at), tz=UTC),
                       value if math.isfinite(value) else None))
    return points


def _with_gaps(points: Points, step: timedelta) -> Points:
    filled: Points = []
    for at, value in points:
        if filled:
            missing = filled[-1][0] + step
            while missing < at - step / 2:
                filled.append((missing, None))
                missing += step
        filled.append((at, value))
    return filled
