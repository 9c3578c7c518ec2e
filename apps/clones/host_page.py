"""The Clones tab of the host page (apps.fleet.sections): the host's clones that are not
destroyed, with their connection string, lifetime and size, the form that makes one,
and what the operator allows clones on the host."""

from __future__ import annotations

from apps.clones import queries, services
from apps.clones.forms import NewCloneForm
from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section


def context(host: Host) -> dict:
    return {"clones": list(queries.live_of(host)), "form": NewCloneForm(host),
            "limits": services.settings_of(host)}


def register() -> None:
    # Clones are PoZoL's own records: they are known before discovery has run.
    register_section(Section("clones", "Clones", 48, "clones/_host_section.html",
                             context=context, needs_facts=False))
