"""{{ event|action_label }}: the audit page's actions in words (apps.audit.labels)."""

from __future__ import annotations

from django import template

from apps.audit.labels import action_label as label

register = template.Library()


@register.filter
def action_label(event) -> str:
    return label(event.action, event.method)
