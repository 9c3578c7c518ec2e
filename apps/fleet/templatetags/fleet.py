from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from apps.common.formatting import zfs_size
from apps.common.sizes import unit_bytes

register = template.Library()
# Its home is apps/common/formatting.py (a builtin); `{% load fleet %}` keeps offering it.
register.filter("zfs_size", zfs_size)


@register.simple_tag
def reachability(host) -> str:
    if host.host_key_changed:
        return mark_safe('<span class="badge bad">host key changed</span>')  # noqa: S308
    if host.reachable is None:
        # Not contacted yet, or only its host key was fetched: say where it stands.
        label = ("not reached yet" if host.is_pinned
                 else host.get_host_key_state_display())
        return format_html('<span class="badge">{}</span>', label)
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


def fullest(host):
    """The pool nearest to full, from the host's prefetched pools (no query)."""
    pools = [pool for pool in host.pools.all() if pool.capacity is not None]
    return max(pools, key=lambda pool: pool.capacity, default=None)


@register.simple_tag
def fullest_pool(host) -> str:
    """The worst pool's capacity, with its bar: what fills up first."""
    pool = fullest(host)
    if pool is None:
        return mark_safe('<span class="muted">no pools</span>')  # noqa: S308
    return format_html('<div class="fullest" title="pool {} (the fullest of {})">{}% {}</div>',
                       pool.name, len(host.pools.all()), pool.capacity, capacity_bar(pool))


@register.simple_tag
def running_operation(host) -> str:
    """A link to the operation running on the host now (annotated on the host)."""
    if not getattr(host, "running_operation_id", None):
        return mark_safe('<span class="muted">nothing</span>')  # noqa: S308
    return format_html('<a href="{}" class="running">#{} {}</a>',
                       reverse("ops:operation", args=[host.running_operation_id]),
                       host.running_operation_id, host.running_operation_kind)
