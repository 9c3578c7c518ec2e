"""Sparklines and current values for the overview and the Metrics tab.

A sparkline is a small inline SVG drawn here (no script, so the CSP holds and a page
of 50 hosts costs no chart objects); a None in the values breaks the line."""

from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

register = template.Library()

WIDTH, HEIGHT = 80, 18


@register.simple_tag
def sparkline(recent: dict | None, name: str, label: str = "") -> str:
    values = (recent or {}).get(name) or []
    known = [v for v in values if v is not None]
    if len(values) < 2 or not known:
        return ""
    low, high = min(known), max(known)
    span = (high - low) or 1.0
    step = WIDTH / (len(values) - 1)
    runs: list[list[str]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            runs.append([])
            continue
        y = HEIGHT - 1 - (value - low) / span * (HEIGHT - 2)
        runs[-1].append(f"{i * step:.1f},{y:.1f}")
    lines = format_html_join("", '<polyline points="{}"/>', ((" ".join(r),) for r in runs if r))
    return format_html('<svg class="sparkline" viewBox="0 0 {} {}" width="{}" height="{}" '
                       'role="img" aria-label="{}">{}</svg>', WIDTH, HEIGHT, WIDTH, HEIGHT,
                       label or f"last {len(values)} samples", lines)


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
