"""What tuning adds to the host page and the overview (apps.fleet.sections): the
Tuning tab, the assigned profile with its drift, and the advisor's findings
counted by severity.

The counts are kept on the host (Host.findings_by_severity) because the advisor
reads a host's whole facts: the overview shows them for fifty hosts a page
without reading any. They are counted again whenever what they depend on
changes: new facts (discovery), another profile assigned, or a new version of
the assigned profile.
"""

from __future__ import annotations

import logging
from collections import Counter

from django.db.models import F, Func, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.signals import post_delete, post_save

from apps.fleet.models import Host
from apps.fleet.sections import Section, Summary, register_section, register_summary
from apps.fleet.signals import facts_recorded
from apps.tuning import services
from apps.tuning.core.findings import SEVERITIES
from apps.tuning.models import Assignment, ProfileVersion

log = logging.getLogger(__name__)
DRIFT_ONLY = frozenset({"drift", "drift_checked_at"})


def count_findings(host: Host) -> dict[str, int] | None:
    try:
        found = services.findings(host)
    except Exception:  # a summary must never fail the discovery or the edit that asked
        log.exception("could not count the findings of %s", host)
        return None
    counts = Counter(finding["severity"] for finding in found)
    by_severity = {severity: counts[severity] for severity in SEVERITIES if counts[severity]}
    Host.objects.filter(pk=host.pk).update(findings_by_severity=by_severity)
    host.findings_by_severity = by_severity
    return by_severity


def _on_facts(sender, host: Host, **kwargs) -> None:
    count_findings(host)


def _on_assignment(sender, instance: Assignment, update_fields=None, origin=None,
                   **kwargs) -> None:
    if update_fields and frozenset(update_fields) <= DRIFT_ONLY:
        return  # drift was refreshed, the profile did not change
    if isinstance(origin, Host):
        return  # the host itself is being deleted
    host = Host.objects.filter(pk=instance.host_id).first()
    if host is not None:
        count_findings(host)


def _on_new_version(sender, instance: ProfileVersion, created: bool = False, **kwargs) -> None:
    """The hosts that follow a profile are advised against its newest version."""
    if not created:
        return
    for host in Host.objects.filter(assignment__profile_id=instance.profile_id):
        count_findings(host)


class _DriftLength(Func):
    """How many changes the drift lists. A drift of another shape (not a JSON
    array) must not break the overview: -1 when it holds something (drifted, count
    unknown), 0 when it is empty."""

    template = ("CASE WHEN jsonb_typeof(%(expressions)s) = 'array' "
                "THEN jsonb_array_length(%(expressions)s) "
                "WHEN %(expressions)s IN ('{}'::jsonb, 'null'::jsonb, '\"\"'::jsonb) THEN 0 "
                "ELSE -1 END")
    output_field = IntegerField()


def with_assignment(hosts: QuerySet) -> QuerySet:
    """The assigned profile and its drift as columns of the hosts' own query, with
    what Assignment.state needs to tell "not applied yet" from "drifted"."""
    newest_version = (ProfileVersion.objects.filter(profile_id=OuterRef("assignment__profile_id"))
                      .order_by("-number").values("pk")[:1])
    return hosts.annotate(
        tuning_profile_id=F("assignment__profile_id"),
        tuning_profile_name=F("assignment__profile__name"),
        tuning_applied_version_id=F("assignment__applied_version_id"),
        tuning_current_version_id=Subquery(newest_version),
        tuning_drift_checked_at=F("assignment__drift_checked_at"),
        tuning_drift_count=_DriftLength(F("assignment__drift")),
    )


def register() -> None:
    register_section(Section("tuning", "Tuning", 40, "tuning/_host.html",
                             context=services.host_card))
    register_summary(Summary("profile", "Profile", 40, "tuning/_summary_profile.html",
                             annotate=with_assignment))
    register_summary(Summary("findings", "Findings", 50, "tuning/_summary_findings.html"))
    facts_recorded.connect(_on_facts, dispatch_uid="tuning.count_findings")
    post_save.connect(_on_assignment, sender=Assignment, dispatch_uid="tuning.findings_on_save")
    post_delete.connect(_on_assignment, sender=Assignment,
                        dispatch_uid="tuning.findings_on_delete")
    post_save.connect(_on_new_version, sender=ProfileVersion,
                      dispatch_uid="tuning.findings_on_new_version")
