"""Benchmark charts: drawn in the browser by uPlot (static/pozol-charts.js, ARCHITECTURE.md
"Charts") from the series the page carries as JSON, with a server-side SVG of the same
series inside the figure as the fallback where scripts do not run.

`{% line_chart series "tps" "TPS" %}` draws one value of a benchmark's
per-second series against its `t`, with the axes labelled and the maximum
written on the y axis. `{% compare_chart before after "tps" "TPS" %}` draws
two runs' series in one chart, on the same axes (one y scale, one time range),
with a legend: a validation compares shapes, which separate scales would fake.
Gaps (None) break a line rather than dropping to 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from django import template
from django.utils.html import format_html, format_html_join, json_script
from django.utils.safestring import SafeString

from apps.fleet.templatetags.fleet import zfs_size

register = template.Library()

WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 14, 30  # margins for the axes and their labels
LEGEND_TOP = 16  # extra room above the plot for a legend


@dataclass(frozen=True)
class _Line:
    name: str  # the legend's text; "" for a chart of one series
    css: str  # "before", "after", or "" for a single series
    dash: str  # an SVG dash pattern, so the two runs differ in more than colour
    stroke: str
    segments: list[list[tuple[float, float]]]


def _format(value: float, unit: str) -> str:
    if unit == "bytes":
        return zfs_size(value)
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _segments(ts: list, values: list) -> list[list[tuple[float, float]]]:
    """Runs of points without a gap."""
    segments: list[list[tuple[float, float]]] = [[]]
    for t, value in zip(ts, values, strict=False):
        if value is None or t is None:
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append((float(t), float(value)))
    return [s for s in segments if s]


def _of(series: dict | None, key: str) -> list[list[tuple[float, float]]]:
    return _segments((series or {}).get("t") or [], (series or {}).get(key) or [])


@register.simple_tag
def line_chart(series: dict | None, key: str, label: str, unit: str = "") -> SafeString:
    lines = [_Line("", "", "", "currentColor", _of(series, key))]
    return _figure(key, label, unit, [(label, series)], _chart(key, label, unit, lines))


@register.simple_tag
def compare_chart(before: dict | None, after: dict | None, key: str, label: str,
                  unit: str = "", before_name: str = "before",
                  after_name: str = "after") -> SafeString:
    """Both runs of a validation in one chart: shared x range and y scale, a legend."""
    lines = [_Line(before_name, "before", "5 3", "#64748b", _of(before, key)),
             _Line(after_name, "after", "", "#2563eb", _of(after, key))]
    return _figure(key, label, unit, [(before_name, before), (after_name, after)],
                   _chart(key, label, unit, lines))


def chart_json(key: str, label: str, unit: str, runs: list[tuple[str, dict | None]]) -> dict:
    """The chart JSON (ARCHITECTURE.md "Charts") of pgbench's per-second series: x is
    seconds since the run started (not a time of day); a missing second is null, a gap."""
    points = [dict(zip((series or {}).get("t") or [], (series or {}).get(key) or [],
                       strict=False)) for _, series in runs]
    x = sorted({t for run in points for t in run if t is not None})
    return {"title": label, "x": x, "xlabel": "seconds since start",
            "series": [{"label": name, "unit": unit, "values": [run.get(t) for t in x]}
                       for (name, _), run in zip(runs, points, strict=True)]}


def _figure(key: str, label: str, unit: str, runs: list[tuple[str, dict | None]],
            svg: SafeString) -> SafeString:
    data = chart_json(key, label, unit, runs)
    if not any(v is not None for series in data["series"] for v in series["values"]):
        return svg  # "No ... samples yet."
    element = f"chart-data-{key}"
    return format_html('<figure class="chart" data-chart="{}" aria-label="{}">'
                       '<div class="chart-fallback">{}</div></figure>{}',
                       element, label, svg, json_script(data, element))


def _chart(key: str, label: str, unit: str, lines: list[_Line]) -> SafeString:
    points = [p for line in lines for seg in line.segments for p in seg]
    if not points:
        return format_html('<p class="empty chart-empty">No {} samples yet.</p>', label)
    legend = len(lines) > 1
    top = TOP + (LEGEND_TOP if legend else 0)
    height = HEIGHT + (LEGEND_TOP if legend else 0)
    t_max = max(t for t, _ in points) or 1.0
    v_max = max(v for _, v in points) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def point(t: float, v: float) -> str:
        return f"{LEFT + plot_w * t / t_max:.1f},{top + plot_h * (1 - v / v_max):.1f}"

    polylines = format_html_join(
        "", '<polyline class="line {}" fill="none" stroke="{}" stroke-width="1.5"{} '
        'points="{}"/>',
        ((line.css, line.stroke, format_html(' stroke-dasharray="{}"', line.dash)
          if line.dash else "", " ".join(point(t, v) for t, v in seg))
         for line in lines for seg in line.segments if len(seg) > 1))
    # A sample between two gaps is no line: mark it, or it would not be drawn at all.
    dots = format_html_join(
        "", '<circle class="point {}" r="2" fill="{}" cx="{}" cy="{}"/>',
        ((line.css, line.stroke, *point(*seg[0]).split(","))
         for line in lines for seg in line.segments if len(seg) == 1))
    names = " and ".join(line.name for line in lines if line.name)
    return format_html(
        '<svg class="chart" id="chart-{key}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'role="img" aria-label="{label} per second{of}, maximum {max}">'
        '<title>{label}{of}: maximum {max}</title>{legend}'
        '<line class="axis" x1="{l}" y1="{t}" x2="{l}" y2="{b}" stroke="#888"/>'
        '<line class="axis" x1="{l}" y1="{b}" x2="{r}" y2="{b}" stroke="#888"/>'
        '<text x="{lx}" y="{ty}" text-anchor="end" font-size="11">{max}</text>'
        '<text x="{lx}" y="{b}" text-anchor="end" font-size="11">0</text>'
        '<text x="4" y="{mid}" font-size="11" transform="rotate(-90 10 {mid})">{label}</text>'
        '<text x="{r}" y="{xl}" text-anchor="end" font-size="11">{tmax} s</text>'
        '<text x="{cx}" y="{xl}" text-anchor="middle" font-size="11">seconds since start</text>'
        "{lines}</svg>",
        key=key, w=WIDTH, h=height, label=label, max=_format(v_max, unit),
        of=f" ({names})" if names else "", legend=_legend(lines) if legend else "",
        l=LEFT, t=top, b=top + plot_h, r=LEFT + plot_w, lx=LEFT - 4, ty=top + 10,
        mid=top + plot_h // 2, xl=height - 8, tmax=f"{t_max:g}", cx=LEFT + plot_w // 2,
        lines=polylines + dots)


def _legend(lines: list[_Line]) -> SafeString:
    """One sample stroke and name per series, along the top right."""
    return format_html_join("", (
        '<g class="legend {}"><line x1="{}" y1="10" x2="{}" y2="10" stroke="{}" '
        'stroke-width="2"{}/><text x="{}" y="14" font-size="11">{}</text></g>'), (
        (line.css, x, x + 24, line.stroke,
         format_html(' stroke-dasharray="{}"', line.dash) if line.dash else "", x + 28, line.name)
        for line, x in zip(lines, range(LEFT, WIDTH, 200), strict=False)))


@register.filter
def ratio(value: float | None) -> str:
    """A ratio as an operator reads it: 1.23x (+23%)."""
    if value is None:
        return "—"
    return f"{value:.2f}x ({(value - 1) * 100:+.1f}%)"
