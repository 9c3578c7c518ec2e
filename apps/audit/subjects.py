"""Which object a request is about, read from its URL alone.

Every page and API address names its object the same way: a collection's
segment, then the id (`/hosts/3/delete/`, `/api/replication-links/5/run/`,
`/tuning/hosts/3/plan/`). So one table from segment to model names the object of
every view, old and new, without any view saying so.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.apps import apps
from django.db.models import Model

SEGMENT_MODELS = {
    "hosts": "fleet.Host",
    "profiles": "tuning.Profile",
    "plans": "tuning.Plan",
    "benchmarks": "benchmarks.Benchmark",
    "validations": "benchmarks.Validation",
    "operations": "ops.Operation",
    "snapshots": "snapshots.Snapshot",
    "policies": "snapshots.SnapshotPolicy",
    "snapshot-policies": "snapshots.SnapshotPolicy",
    "assignments": "snapshots.PolicyAssignment",
    "policy-assignments": "snapshots.PolicyAssignment",
    "replication": "replication.ReplicationLink",
    "replication-links": "replication.ReplicationLink",
    "tenants": "tenants.Tenant",
    "members": "tenants.Membership",
    "memberships": "tenants.Membership",
    "clusters": "tenants.ClusterAssignment",
    "cluster-assignments": "tenants.ClusterAssignment",
    "tokens": "accounts.ApiToken",
    "clones": "clones.Clone",
    "experiments": "experiments.Experiment",
    "experiment-scripts": "experiments.Script",
    "drills": "drills.DrillRun",
    "runs": "drills.DrillRun",
    "drill-schedules": "drills.DrillSchedule",
    "schedules": "drills.DrillSchedule",
    "alerts": "alerts.Alert",
    "channels": "alerts.Channel",
    "alert-channels": "alerts.Channel",
    "silences": "alerts.Silence",
    "alert-silences": "alerts.Silence",
    "deliveries": "alerts.Delivery",
    "alert-deliveries": "alerts.Delivery",
    "scrubs": "alerts.ScrubSchedule",
    "scrub-schedules": "alerts.ScrubSchedule",
}


@dataclass
class Subject:
    type: str = ""
    id: str = ""
    text: str = ""
    tenant_id: int | None = None


def of_path(path: str) -> tuple[str, str]:
    """(model label or segment, id) of the last collection named in the path; id may be ""."""
    segments = [s for s in path.split("/") if s]
    found = ("", "")
    for index, segment in enumerate(segments):
        if segment in SEGMENT_MODELS:
            following = segments[index + 1] if index + 1 < len(segments) else ""
            found = (SEGMENT_MODELS[segment],
                     following if following.isascii() and following.isdecimal() else "")
    return found


def load(label: str, object_id: str) -> Subject:
    """The subject with its text and tenant, read before the request changes it."""
    subject = Subject(type=label.rpartition(".")[2].lower() if label else "", id=object_id)
    if not label or not object_id or len(object_id) > 18:
        return subject
    instance = apps.get_model(label).objects.filter(pk=int(object_id)).first()
    if instance is not None:
        subject.text = str(instance)[:300]
        subject.tenant_id = tenant_of(instance)
    return subject


def tenant_of(instance: Model) -> int | None:
    if instance._meta.label == "tenants.Tenant":
        return instance.pk
    if hasattr(instance, "tenant_id"):
        return instance.tenant_id
    if instance._meta.label == "accounts.ApiToken":
        from apps.tenants.models import Membership

        return Membership.objects.filter(user_id=instance.user_id).values_list(
            "tenant_id", flat=True).first()
    return None
