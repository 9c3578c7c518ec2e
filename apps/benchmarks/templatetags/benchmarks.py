"""The run-pgbench form a host page includes, drawn from the benchmark's own tables.

`{% run_form host clusters %}`: the modes, protocols, limits and defaults are
those the service checks (apps.benchmarks.core.commands and services), so the form
cannot offer what the service refuses.
"""

from __future__ import annotations

from django import template

from apps.benchmarks import services
from apps.benchmarks.core import commands

register = template.Library()

# What the form proposes: a short, light run (the API's defaults are the minimum).
FORM_DEFAULTS = {"clients": 4, "threads": 2, "duration": 60, "scale": 10}


@register.inclusion_tag("benchmarks/_run_form.html")
def run_form(host, clusters) -> dict:
    return {"host": host, "clusters": clusters, "modes": commands.MODES,
            "protocols": commands.PROTOCOLS, "limits": services.LIMITS,
            "defaults": services.DEFAULTS, "form_defaults": FORM_DEFAULTS}
