"""The Replication tab of the host page (apps.fleet.sections): the links that send
from the host and those that receive into it, with their state and lag."""

from __future__ import annotations

from django.db.models import Exists, F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from apps.fleet.models import Host
from apps.fleet.sections import Section, Summary, register_section, register_summary
from apps.replication import queries
from apps.replication.models import ReplicationLink


def context(host: Host) -> dict:
    links = queries.shown(queries.of_host(host))
    outgoing = [link for link in links if link.source_host_id == host.pk]
    incoming = [link for link in links if link.target_host_id == host.pk]
    return {"directions": [(f"Sent from {host.name}", outgoing, "target"),
                           (f"Received into {host.name}", incoming, "source")]}


def with_lag(hosts: QuerySet) -> QuerySet:
    """The oldest "newest received snapshot" of the host's active outgoing links (a
    link that never delivered counts from its creation, as its lag does): the host's
    worst replication lag, in the hosts' own query. None: no active link."""
    active = ReplicationLink.objects.filter(source_host=OuterRef("pk"), paused=False)
    behind = (active.annotate(since=Coalesce("newest_received_at", "created_at"))
              .order_by("since").values("since")[:1])
    return hosts.annotate(replication_since=Subquery(behind), replication_never=Exists(
        active.filter(newest_received_at__isnull=True)))


def register() -> None:
    register_summary(Summary("replication_lag", "Replication lag", 70,
                             "replication/_summary_lag.html", annotate=with_lag,
                             worst_first=(F("replication_since").asc(nulls_last=True),),
                             sort_label="most replication lag"))
    # Links are PoZoL's own records: they are known before discovery has run.
    register_section(Section("replication", "Replication", 47,
                             "replication/_host_section.html", context=context,
                             needs_facts=False))
