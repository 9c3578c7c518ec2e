"""The Restore drills tab of the host page: the host's drill schedules, their recent runs
with the time each part took, and the form that adds a schedule."""

from __future__ import annotations

from apps.drills import queries
from apps.drills.forms import ScheduleForm
from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section


def context(host: Host) -> dict:
    return {**queries.of_host(host), "form": ScheduleForm(host)}


def register() -> None:
    register_section(Section("drills", "Restore drills", 49, "drills/_host_section.html",
                             context=context, needs_facts=False))
