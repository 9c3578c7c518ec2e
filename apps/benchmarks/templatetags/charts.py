"""Server-side SVG line charts: no JavaScript library, no CDN, just the series.

`{% line_chart series "tps" "TPS" %}` draws one value of a benchmark's
per-second series against its `t`, with the axes labelled and the maximum
written on the y axis. Gaps (None) break the line rather than dropping to 0.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from apps.fleet.templatetags.fleet import zfs_size

register = template.Library()

WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 14, 30  # margins for the axes and their labels


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


@register.simple_tag
def line_chart(series: dict | None, key: str, label: str, unit: str = "") -> SafeString:
    ts = (series or {}).get("t") or []
    segments = _segments(ts, (series or {}).get(key) or [])
    if not segments:
        return format_html('<p class="empty chart-empty">No {} samples yet.</p>', label)
    t_max = max(t for seg in segments for t, _ in seg) or 1.0
    v_max = max(v for seg in segments for _, v in seg) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def point(t: float, v: float) -> str:
        return f"{LEFT + plot_w * t / t_max:.1f},{TOP + plot_h * (1 - v / v_max):.1f}"

    lines = format_html_join("", '<polyline class="line" fill="none" stroke="currentColor" '
                             'stroke-width="1.5" points="{}"/>',
                             ((" ".join(point(t, v) for t, v in seg),) for seg in segments))
    return format_html(
        '<svg class="chart" id="chart-{key}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'role="img" aria-label="{label} per second, maximum {max}">'
        '<title>{label}: maximum {max}</title>'
        '<line class="axis" x1="{l}" y1="{t}" x2="{l}" y2="{b}" stroke="#888"/>'
        '<line class="axis" x1="{l}" y1="{b}" x2="{r}" y2="{b}" stroke="#888"/>'
        '<text x="{lx}" y="{ty}" text-anchor="end" font-size="11">{max}</text>'
        '<text x="{lx}" y="{b}" text-anchor="end" font-size="11">0</text>'
        '<text x="4" y="{mid}" font-size="11" transform="rotate(-90 10 {mid})">{label}</text>'
        '<text x="{r}" y="{xl}" text-anchor="end" font-size="11">{tmax} s</text>'
        '<text x="{cx}" y="{xl}" text-anchor="middle" font-size="11">seconds since start</text>'
        "{lines}</svg>",
        key=key, w=WIDTH, h=HEIGHT, label=label, max=_format(v_max, unit),
        l=LEFT, t=TOP, b=TOP + plot_h, r=LEFT + plot_w, lx=LEFT - 4, ty=TOP + 10,
        mid=TOP + plot_h // 2, xl=HEIGHT - 8, tmax=f"{t_max:g}", cx=LEFT + plot_w // 2,
        lines=lines)


@register.filter
def ratio(value: float | None) -> str:
    """A ratio as an operator reads it: 1.23x (+23%)."""
    if value is None:
        return "—"
    return f"{value:.2f}x ({(value - 1) * 100:+.1f}%)"
