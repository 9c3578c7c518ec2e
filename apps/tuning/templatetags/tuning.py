from django import template

from apps.tuning import services
from apps.tuning.models import Assignment, Profile

register = template.Library()


@register.inclusion_tag("tuning/_host.html", takes_context=True)
def tuning_card(context, host) -> dict:
    """The host page's tuning card; tuning supplies its own context, so the
    fleet app needs to know nothing about profiles."""
    return {
        "host": host,
        "csrf_token": context.get("csrf_token"),
        "profiles": Profile.objects.all(),
        "assignment": Assignment.objects.filter(host=host)
        .select_related("profile", "applied_version").first(),
        "findings": services.findings(host),
        "plans": host.plans.all()[:5],
    }
