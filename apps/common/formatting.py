"""How every page writes times, durations, sizes and pg_settings contexts.

One home for the formats an operator reads, registered as a template builtin
(TEMPLATES OPTIONS "builtins" in pozol/settings.py), so any template uses them
without a {% load %}:

    {{ op.created_at|when }}            <time datetime="…">2026-11-23 18:40 UTC</time>
    {{ host.last_seen_at|when:"never" }}
    {% duration op.started_at op.finished_at %}   1 min 12 s (so far, while running)
    {{ seconds|duration }}               1 min 12 s
    {{ bench.wal_bytes_per_transaction|bytes }}   1.2 KiB
    {{ pool.size|zfs_size }}             1.5G (as `zfs list` prints it)
    {{ row.context|pg_context }}         a restart
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.html import format_html

from apps.common.sizes import KiB, format_human_size

register = template.Library()

NOTHING = "—"


# Times: absolute, in the server's time zone with the zone written out, and the
# distance from now on hover. One format on every page.

def absolute_time(moment: datetime) -> str:
    """2026-11-23 18:40 UTC, in the configured TIME_ZONE."""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    return local.strftime("%Y-%m-%d %H:%M %Z").strip()


def relative_time(moment: datetime, now: datetime | None = None) -> str:
    """"3 min ago", "in 2 h", "just now": how far, in the largest unit that fits."""
    now = now or timezone.now()
    seconds = (now - moment).total_seconds()
    if abs(seconds) < 10:
        return "just now"
    span = compact_duration(abs(seconds), parts=1)
    return f"{span} ago" if seconds > 0 else f"in {span}"


@register.filter(is_safe=True)
def when(moment: datetime | None, missing: str = NOTHING) -> str:
    """<time datetime="ISO" title="3 min ago">2026-11-23 18:40 UTC</time>."""
    if not isinstance(moment, datetime):
        return missing
    return format_html('<time datetime="{}" title="{}">{}</time>', moment.isoformat(),
                       relative_time(moment), absolute_time(moment))


# Durations: "1 min 12 s", "2 h 5 min", "3 days 4 h".

_UNITS = ((86400, "day", "days"), (3600, "h", "h"), (60, "min", "min"), (1, "s", "s"))


def compact_duration(seconds: float, parts: int = 2) -> str:
    """At most `parts` units, largest first: 72 s is "1 min 12 s"; under 1 s, "0 s"."""
    remaining = int(seconds)
    words: list[str] = []
    for size, one, many in _UNITS:
        count, remaining = divmod(remaining, size)
        if count and len(words) < parts:
            words.append(f"{count} {one if count == 1 else many}")
        elif words:
            break  # "1 h 0 min 5 s" reads as "1 h": stop at the first empty unit after
    return " ".join(words) or "0 s"


@register.filter(name="duration")
def duration_filter(value: timedelta | float | int | None) -> str:
    """A timedelta or a number of seconds as "1 min 12 s"."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if value is None or value == "":
        return NOTHING
    try:
        return compact_duration(float(value))
    except (TypeError, ValueError):
        return NOTHING


@register.simple_tag(name="duration")
def duration_between(start: datetime | None, finish: datetime | None) -> str:
    """How long from start to finish; while there is no finish yet, so far."""
    if not isinstance(start, datetime):
        return NOTHING
    if not isinstance(finish, datetime):
        return f"{compact_duration((timezone.now() - start).total_seconds())} so far"
    return compact_duration((finish - start).total_seconds())


# Sizes.

_IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


@register.filter(name="bytes")
def human_bytes(value: float | int | str | None) -> str:
    """A number of bytes with its unit: 812 B, 1.2 KiB, 15 GiB; "—" when not known."""
    try:
        size = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return NOTHING
    sign, size = ("-" if size < 0 else ""), abs(size)
    for unit in _IEC:
        if size < KiB or unit == _IEC[-1]:
            if unit == "B":
                return f"{sign}{size:.0f} B"
            return f"{sign}{size:.0f} {unit}" if size >= 100 else f"{sign}{size:.1f} {unit}"
        size /= KiB
    return NOTHING  # unreachable: the last unit always returns


@register.filter
def zfs_size(value) -> str:
    """Bytes the way zfs prints them (128K, 1.5G); "—" when not known."""
    if value in (None, ""):
        return NOTHING
    return format_human_size(value)


# pg_settings.context, as what a change of the setting takes.

PG_CONTEXTS = {
    "internal": "nothing can change it (fixed when built or initialised)",
    "postmaster": "a restart",
    "sighup": "a reload",
    "superuser-backend": "a reload (new sessions only)",
    "backend": "a reload (new sessions only)",
    "superuser": "a reload, or SET by a superuser in a session",
    "user": "a reload, or SET in any session",
}


@register.filter
def pg_context(context: str | None) -> str:
    """"postmaster" -> "a restart": the answer to "changing it needs…"."""
    if not context:
        return NOTHING
    return PG_CONTEXTS.get(context, context)
