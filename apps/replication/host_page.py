"""The Replication tab of the host page (apps.fleet.sections): the links that send
from the host and those that receive into it, with their state and lag."""

from __future__ import annotations

from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section
from apps.replication import queries


def context(host: Host) -> dict:
    links = queries.shown(queries.of_host(host))
    outgoing = [link for link in links if link.source_host_id == host.pk]
    incoming = [link for link in links if link.target_host_id == host.pk]
    return {"directions": [(f"Sent from {host.name}", outgoing, "target"),
                           (f"Received into {host.name}", incoming, "source")]}


def register() -> None:
    # Links are PoZoL's own records: they are known before discovery has run.
    register_section(Section("replication", "Replication", 47,
                             "replication/_host_section.html", context=context,
                             needs_facts=False))
