"""The Clones tab of the host page (apps.fleet.sections): the host's clones that are not
destroyed, with their connection string, lifetime and size, the form that makes one,
on a replication target the form that makes one as of a moment from a link's copies
(with each link's window there), and what the operator allows clones on the host."""

from __future__ import annotations

from apps.clones import queries, services
from apps.clones.forms import NewCloneForm, TargetCloneForm
from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section


def context(host: Host) -> dict:
    copies = services.copies_on(host)
    return {"clones": list(queries.live_of(host)), "form": NewCloneForm(host),
            "copies": copies, "target_form": TargetCloneForm(host) if copies else None,
            "limits": services.settings_of(host)}


def register() -> None:
    # Clones are PoZoL's own records: they are known before discovery has run.
    register_section(Section("clones", "Clones", 48, "clones/_host_section.html",
                             context=context, needs_facts=False))
