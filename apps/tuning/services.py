"""What the UI and API ask of tuning: one function each, no SSH here.

Plans are computed from the facts discovery recorded (pure functions of
facts and desired state); applying and rolling back start Operations.
"""

from __future__ import annotations

from dataclasses import asdict

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from apps.tuning.core import advisor, planner
from apps.tuning.core.profiles import BUILTINS, ProfileSettings
from apps.tuning.models import Assignment, Plan, PlanChange, Profile, ProfileVersion


class TuningError(ValueError):
    """A request that cannot be honoured as asked; the message says why."""


# ---- profiles --------------------------------------------------------------------

def ensure_builtin_profiles(**_kwargs) -> None:
    """Built-ins exist after every migrate; a changed built-in gets a new version."""
    for builtin in BUILTINS:
        profile, _ = Profile.objects.get_or_create(
            slug=builtin.slug, defaults={"name": builtin.name, "builtin": True,
                                         "description": builtin.description})
        current = profile.current
        content = builtin.settings.to_dict()
        if current is None or current.settings != content:
            _add_version(profile, content, list(builtin.citations), "shipped with PoZoL", None)


def _add_version(profile: Profile, settings: dict, citations: list, note: str,
                 by) -> ProfileVersion:
    number = (profile.current.number + 1) if profile.current else 1
    return ProfileVersion.objects.create(profile=profile, number=number, settings=settings,
                                         citations=citations, note=note,
                                         created_by=by if by and by.is_authenticated else None)


def _checked(settings: dict) -> dict:
    try:
        return ProfileSettings.from_dict(settings).to_dict()
    except (ValueError, TypeError, KeyError) as exc:
        raise TuningError(f"invalid profile settings: {exc}") from None


@transaction.atomic
def create_profile(*, name: str, description: str = "", settings: dict, by=None) -> Profile:
    profile = Profile.objects.create(name=name, slug=_free_slug(name), description=description)
    _add_version(profile, _checked(settings), [], "created", by)
    return profile


@transaction.atomic
def edit_profile(profile: Profile, *, settings: dict, note: str = "",
                 description: str | None = None, by=None) -> ProfileVersion:
    if profile.builtin:
        raise TuningError(f"{profile.name!r} is built in; copy it to make your own version")
    if description is not None:
        profile.description = description
        profile.save(update_fields=["description"])
    return _add_version(profile, _checked(settings), profile.current.citations,
                        note or "edited", by)


@transaction.atomic
def copy_profile(profile: Profile, *, name: str, by=None) -> Profile:
    copy = Profile.objects.create(name=name, slug=_free_slug(name),
                                  description=profile.description)
    _add_version(copy, profile.current.settings, profile.current.citations,
                 f"copied from {profile.name} v{profile.current.number}", by)
    return copy


def delete_profile(profile: Profile) -> None:
    if profile.builtin:
        raise TuningError(f"{profile.name!r} is built in and cannot be deleted")
    hosts = list(profile.assignments.values_list("host__name", flat=True))
    if hosts:
        raise TuningError(f"{profile.name!r} is assigned to {', '.join(hosts)}; "
                          "assign them another profile first")
    profile.delete()


def _free_slug(name: str) -> str:
    base = slugify(name)[:90] or "profile"
    slug, n = base, 2
    while Profile.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


# ---- hosts -----------------------------------------------------------------------

def assign(host: Host, profile: Profile, *, by=None) -> Assignment:
    assignment, _ = Assignment.objects.update_or_create(
        host=host, defaults={"profile": profile,
                             "assigned_by": by if by and by.is_authenticated else None})
    refresh_drift(host)
    assignment.refresh_from_db()
    return assignment


def findings(host: Host) -> list[dict]:
    desired = None
    assignment = Assignment.objects.filter(host=host).select_related("profile").first()
    if assignment:
        desired = assignment.profile.current.profile_settings
    return [_as_dict(f) for f in advisor.advise(host.facts, desired)] if host.facts else []


def refresh_drift(host: Host) -> None:
    assignment = Assignment.objects.filter(host=host).select_related("profile").first()
    if assignment is None or not host.facts:
        return
    computed = planner.plan(host.facts, assignment.profile.current.profile_settings)
    assignment.drift = [_as_dict(c) for c in computed.changes if c.supported]
    assignment.drift_checked_at = timezone.now()
    assignment.save(update_fields=["drift", "drift_checked_at"])


# ---- plans -----------------------------------------------------------------------

@transaction.atomic
def make_plan(host: Host, *, version: ProfileVersion | None = None, by=None) -> Plan:
    """A dry run: every change the profile would make on this host, stored."""
    if not host.facts:
        raise TuningError(f"{host.name} has not been discovered yet")
    if version is None:
        assignment = Assignment.objects.filter(host=host).first()
        if assignment is None:
            raise TuningError(f"{host.name} has no profile assigned; assign one or name one")
        version = assignment.profile.current
    computed = planner.plan(host.facts, version.profile_settings)
    plan = Plan.objects.create(
        host=host, profile_version=version, created_by=by if by and by.is_authenticated else None,
        findings=[_as_dict(f) for f in computed.findings],
        requires_acknowledgement=list(computed.requires_acknowledgement))
    PlanChange.objects.bulk_create([
        _change_row(plan, position, change) for position, change in enumerate(computed.changes)])
    return plan


def _change_row(plan: Plan, position: int, change) -> PlanChange:
    return PlanChange(
        plan=plan, position=position, layer=change.layer, target=change.target, key=change.key,
        current=change.current, desired=change.desired, formula=change.formula,
        method=change.method, supported=change.supported, reason=change.reason,
        fallback_for=change.fallback_for, risk=change.risk, findings=list(change.findings),
        status=PlanChange.Status.PENDING if change.supported else PlanChange.Status.UNSUPPORTED)


@transaction.atomic
def apply_plan(plan: Plan, *, allow_restart: bool = False, acknowledge: list[str] = (),
               trigger: str = Operation.Trigger.API, by=None) -> Operation:
    plan = Plan.objects.select_for_update().get(pk=plan.pk)
    if plan.status != Plan.Status.DRAFT:
        raise TuningError(f"plan #{plan.pk} is {plan.status}; make a new plan")
    missing = sorted(set(plan.requires_acknowledgement) - set(acknowledge))
    if missing:
        raise TuningError(
            f"applying this plan can lose committed data; acknowledge {missing} to proceed "
            "(up to about one second of committed transactions can be lost on a crash)")
    plan.status = Plan.Status.APPLYING
    plan.allow_restart = allow_restart
    plan.acknowledged = sorted(set(acknowledge))
    plan.operation = engine.start("tuning.apply", host=plan.host, trigger=trigger, user=by,
                                  subject=f"{plan.host.name}: plan #{plan.pk}",
                                  state={"plan": plan.pk})
    plan.save(update_fields=["status", "allow_restart", "acknowledged", "operation"])
    return plan.operation


@transaction.atomic
def rollback(plan: Plan, *, allow_restart: bool = False, trigger: str = Operation.Trigger.API,
             by=None) -> tuple[Plan, Operation]:
    """A plan that writes back every recorded before-value, applied the same way."""
    applied = plan.changes.filter(status__in=[PlanChange.Status.APPLIED,
                                              PlanChange.Status.AWAITING_RESTART,
                                              PlanChange.Status.FAILED]).exclude(before=None)
    if not applied.exists():
        raise TuningError(f"plan #{plan.pk} changed nothing on the host; nothing to roll back")
    back = Plan.objects.create(host=plan.host, profile_version=plan.profile_version,
                               kind=Plan.Kind.ROLLBACK, rollback_of=plan,
                               created_by=by if by and by.is_authenticated else None)
    PlanChange.objects.bulk_create([
        _undo(back, position, change)
        for position, change in enumerate(applied.order_by("-position"))])
    return back, apply_plan(back, allow_restart=allow_restart, trigger=trigger, by=by)


def _undo(plan: Plan, position: int, change: PlanChange) -> PlanChange:
    before = change.before
    key, desired, action = change.key, before["value"], "set"
    if change.layer == "zfs" and before.get("source") not in {"local", "received"}:
        action = "reset"  # it was inherited or default: inherit again
    elif change.layer == "postgres" and not before.get("from_auto_conf"):
        action = "reset"  # it came from postgresql.conf or a default: drop our line
    elif change.layer in {"sysctl", "module"}:
        action = "reset"  # the old value live, and PoZoL's persisted line removed
        partner = before.get("partner")
        if partner and desired == "0" and partner["value"] != "0":
            key, desired = partner["name"], partner["value"]
    return PlanChange(plan=plan, position=position, layer=change.layer, target=change.target,
                      key=key, current=change.after, desired=desired, method=change.method,
                      action=action, risk=change.risk,
                      reason=f"restores what plan #{change.plan_id} changed")


def _as_dict(item) -> dict:
    return asdict(item)
