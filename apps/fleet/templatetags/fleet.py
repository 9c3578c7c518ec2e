from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from apps.remote.sizes import unit_bytes
from pozol.formatting import zfs_size

register = template.Library()
# Its home is pozol/formatting.py (a builtin); `{% load fleet %}` keeps offering it.
register.filter("zfs_size", zfs_size)


@register.simple_tag
def reachability(host) -> str:
    if host.host_key_changed:
        return mark_safe('<span class="badge bad">host key changed</span>')  # noqa: S308
    if host.reachable is None:
        return format_html('<span class="badge">{}</span>', host.get_host_key_state_display())
    if host.reachable:
        return mark_safe('<span class="badge good">reachable</span>')  # noqa: S308
    return format_html('<span class="badge bad" title="{}">unreachable</span>', host.last_error)


@register.simple_tag
def capacity_bar(pool) -> str:
    percent = pool.capacity or 0
    level = "bad" if percent >= 80 else "warn" if percent >= 60 else "good"
    return format_html(
        '<div class="bar" title="{}% used of {}"><div class="fill {}" style="width:{}%"></div>'
        "</div>", percent, zfs_size(pool.size), level, percent)


@register.filter
def pg_value(row: dict) -> str:
    """A pg_settings row as an operator writes it: 16384 × 8kB is 128MB."""
    setting, unit = row.get("setting", ""), row.get("unit") or ""
    unit_size = unit_bytes(unit)
    if unit_size is not None and setting.lstrip("-").isdigit() and int(setting) >= 0:
        size = zfs_size(int(setting) * unit_size)
        return size + "B" if size[-1].isalpha() else size + " bytes"
    return f"{setting}{unit}" if unit in {"s", "ms", "min"} else f"{setting} {unit}".strip()
