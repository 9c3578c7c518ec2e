"""The Rollouts tab of the host page (apps.fleet.sections): every rollout this host is
part of, newest first, with its wave, where it stands on this host and why."""

from __future__ import annotations

from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section
from apps.rollouts.models import RolloutHost

RECENT_ROLLOUTS = 20


def context(host: Host) -> dict:
    rows = (RolloutHost.objects.filter(host=host)
            .select_related("rollout__profile_version__profile", "rollout__operation")
            .defer("rollout__operation__state")
            .order_by("-rollout__created_at", "-rollout_id")[:RECENT_ROLLOUTS])
    return {"rows": rows, "recent_rollouts": RECENT_ROLLOUTS}


def register() -> None:
    register_section(Section("rollouts", "Rollouts", 42, "rollouts/_host_section.html",
                             context=context, needs_facts=False))
