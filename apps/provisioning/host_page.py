"""The New cluster tab of the host page (apps.fleet.sections): the form, which shows
the plan before anything changes."""

from __future__ import annotations

from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section
from apps.provisioning.forms import NewClusterForm


def context(host: Host) -> dict:
    return {"form": NewClusterForm(host), "plan": None}


def register() -> None:
    register_section(Section("new-cluster", "New cluster", 35,
                             "provisioning/_host_section.html", context=context))
