"""How a plan's values read: byte counts (vm.dirty_bytes, zfs_arc_max ...) as
sizes with the exact number on hover; every other value as the host spells it."""

from django import template
from django.utils.html import format_html

from apps.common.formatting import NOTHING, human_bytes
from apps.remote.facts.numbers import is_digits
from apps.tuning.core.changes import BYTE_VALUED

register = template.Library()


@register.simple_tag
def plan_value(key: str, value) -> str:
    if value is None or value == "":
        return NOTHING
    text = str(value)
    if key in BYTE_VALUED and is_digits(text) and int(text) >= 1024:
        return format_html('<span title="{} bytes">{}</span>', text, human_bytes(text))
    return text
