from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

register = template.Library()

_UNITS = ["", "K", "M", "G", "T", "P"]


@register.filter
def zfs_size(value) -> str:
    """Bytes the way zfs prints them (128K, 1.5G): what operators read daily."""
    if value in (None, ""):
        return "—"
    size = float(value)
    for unit in _UNITS:
        if size < 1024 or unit == _UNITS[-1]:
            return f"{size:.0f}{unit}" if size == int(size) else f"{size:.1f}{unit}"
        size /= 1024
    return str(value)


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


_PG_BYTE_UNITS = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2, "16MB": 16 * 1024**2,
                  "GB": 1024**3}


@register.filter
def pg_value(row: dict) -> str:
    """A pg_settings row as an operator writes it: 16384 × 8kB is 128MB."""
    setting, unit = row.get("setting", ""), row.get("unit") or ""
    if unit in _PG_BYTE_UNITS and setting.lstrip("-").isdigit() and int(setting) >= 0:
        size = zfs_size(int(setting) * _PG_BYTE_UNITS[unit])
        return size + "B" if size[-1].isalpha() else size + " bytes"
    return f"{setting}{unit}" if unit in {"s", "ms", "min"} else f"{setting} {unit}".strip()
