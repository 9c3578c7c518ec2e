"""Sparklines and current values for the overview and the Metrics tab.

A sparkline is a small inline SVG drawn here (no script, so the CSP holds and a page
of 50 hosts costs no chart objects); a None in the values breaks the line."""

from __future__ import annotations

import functools

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()

WIDTH, HEIGHT = 80, 18


@functools.cache
def _xs(points: int) -> tuple[str, ...]:
    """The x of each point, the same for every sparkline of as many points."""
    step = WIDTH / (points - 1)
    return tuple(f"{i * step:.1f}" for i in range(points))


@register.simple_tag
def sparkline(recent: dict | None, name: str, label: str = "") -> str:
    values = (recent or {}).get(name) or []
    known = [v for v in values if v is not None]
    if len(values) < 2 or not known:
        return ""
    low, high = min(known), max(known)
    scale = (HEIGHT - 2) / ((high - low) or 1.0)
    xs = _xs(len(values))
    # Built as plain text (the overview draws 100 of these a page; format_html per
    # run was a sixth of its time): the points are numbers formatted here, and only
    # the label comes from outside, escaped.
    runs, run = [], []
    for i, value in enumerate(values):
        if value is None:
            if run:
                runs.append(run)
            run = []
            continue
        run.append("%s,%.1f" % (xs[i], HEIGHT - 1 - (value - low) * scale))  # noqa: UP031
    if run:
        runs.append(run)
    lines = "".join(f'<polyline points="{" ".join(r)}"/>' for r in runs)
    label = escape(label or f"last {len(values)} samples")
    return mark_safe(  # noqa: S308 - numbers formatted above and an escaped label
        f'<svg class="sparkline" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{label}">{lines}</svg>')


@register.filter
def percent(ratio: float | None) -> str:
    """0..1 as "97.3 %"; "—" when not known."""
    return "—" if ratio is None else f"{ratio * 100:.1f} %"


@register.filter
def per_second(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}/s" if value >= 100 else f"{value:.1f}/s"


@register.simple_tag
def not_sampled() -> str:
    return mark_safe('<span class="muted">not sampled</span>')  # noqa: S308
