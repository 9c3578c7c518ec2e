"""What the UI and API ask of tuning: one function each, no SSH here.

Plans are computed from the facts discovery recorded (pure functions of
facts and desired state); applying and rolling back start Operations.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils import timezone
from django.utils.text import slugify

from apps.common.errors import Conflict, DomainError
from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from apps.tuning import evidence, steps
from apps.tuning.core import advisor, drift, evaluate, planner
from apps.tuning.core import rollback as rollback_core
from apps.tuning.core.changes import Change, compute_changes
from apps.tuning.core.profiles import BUILTINS, ProfileSettings
from apps.tuning.models import Assignment, Plan, PlanChange, Profile, ProfileVersion


class TuningError(DomainError):
    """A tuning request that cannot be honoured as asked; the message says why."""


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


NAME_LENGTH = Profile._meta.get_field("name").max_length


def _checked(settings: object) -> dict:
    try:
        return ProfileSettings.from_dict(settings).to_dict()
    except (ValueError, TypeError, KeyError) as exc:
        raise TuningError(f"invalid profile settings: {exc}",
                          fields={"settings": [str(exc)]}) from None


def settings_of(version: ProfileVersion) -> ProfileSettings:
    """A stored version as settings; one saved before today's checks may fail them."""
    try:
        return version.profile_settings
    except (ValueError, TypeError, KeyError) as exc:
        raise TuningError(f"{version} is not a valid profile any more: {exc}; "
                          "save a corrected version", fields={"settings": [str(exc)]}) from None


def _taken(name: str) -> Conflict:
    return Conflict(f"a profile named {name!r} (or with the same short name) already exists; "
                    "choose another name", fields={"name": ["a profile with this name exists"]})


def _check_name_free(name: str, *, but: Profile | None = None) -> None:
    if Profile.objects.filter(name=name).exclude(pk=but.pk if but else None).exists():
        raise _taken(name)


@contextmanager
def _unique(name: str) -> Iterator[None]:
    """Map the unique constraints' IntegrityError (a concurrent save won) to a 409."""
    try:
        yield
    except IntegrityError as exc:
        raise _taken(name) from exc


def create_profile(*, name: str, description: str = "", settings: dict, by=None) -> Profile:
    content = _checked(settings)
    _check_name_free(name)
    with _unique(name), transaction.atomic():
        profile = Profile.objects.create(name=name, slug=_free_slug(name),
                                         description=description)
        _add_version(profile, content, [], "created", by)
    return profile


def edit_profile(profile: Profile, *, settings: dict | None = None, note: str = "",
                 name: str | None = None, description: str | None = None,
                 by=None) -> ProfileVersion:
    """Rename, describe and/or add a version; new settings are checked on every host
    that follows the profile, in the same transaction as the save."""
    content = _checked(settings) if settings is not None else None
    new_name = name if name is not None and name != profile.name else None
    if new_name:
        _check_name_free(new_name, but=profile)
    with _unique(new_name or profile.name), transaction.atomic():
        profile = Profile.objects.select_for_update().get(pk=profile.pk)
        _editable(profile)
        if new_name:
            profile.name, profile.slug = new_name, _free_slug(new_name, but=profile)
        if description is not None:
            profile.description = description
        profile.save(update_fields=["name", "slug", "description"])
        if content is None:
            return profile.current
        _check_on_assigned_hosts(profile, ProfileSettings.from_dict(content))
        return _add_version(profile, content, profile.current.citations,
                            note or "edited", by)


def _editable(profile: Profile) -> None:
    if profile.builtin:
        raise TuningError(f"{profile.name!r} is built in; copy it to make your own version")
    if profile.archived:
        raise Conflict(f"{profile.name!r} is archived; copy it to make a new profile")


def _check_on_assigned_hosts(profile: Profile, settings: ProfileSettings) -> None:
    found = [f"{a.host.name}: {problem}"
             for a in profile.assignments.select_related("host")
             for problem in _problems_on(a.host, settings)]
    if found:
        raise TuningError(f"{profile.name!r} would not apply on the hosts that follow it: "
                          f"{found[0]}", fields={"settings": found})


def copy_profile(profile: Profile, *, name: str, by=None) -> Profile:
    _check_name_free(name)
    source = profile.current
    with _unique(name), transaction.atomic():
        copy = Profile.objects.create(name=name, slug=_free_slug(name),
                                      description=profile.description)
        _add_version(copy, source.settings, source.citations,
                     f"copied from {profile.name} v{source.number}", by)
    return copy


def copy_name(profile: Profile) -> str:
    """"X (copy)", else "X (copy 2)", ...: a free name within the length limit."""
    for n in range(1, 1000):
        suffix = " (copy)" if n == 1 else f" (copy {n})"
        name = profile.name[:NAME_LENGTH - len(suffix)] + suffix
        if not Profile.objects.filter(name=name).exists():
            return name
    raise Conflict(f"{profile.name!r} has been copied too often; name the copy yourself")


@transaction.atomic
def delete_profile(profile: Profile) -> str:
    """Delete a profile no plan used; archive one that plans refer to. Says which."""
    profile = Profile.objects.select_for_update().get(pk=profile.pk)
    if profile.builtin:
        raise Conflict(f"{profile.name!r} is built in and cannot be deleted")
    hosts = list(profile.assignments.values_list("host__name", flat=True))
    if hosts:
        raise Conflict(f"{profile.name!r} is assigned to {', '.join(hosts)}; "
                       "assign them another profile first")
    if not Plan.objects.filter(profile_version__profile=profile).exists():
        try:
            with transaction.atomic():
                profile.delete()
            return "deleted"
        except ProtectedError:
            pass  # a plan was made meanwhile: keep its version, archive instead
    if not profile.archived:
        profile.archived_at = timezone.now()
        profile.save(update_fields=["archived_at"])
    return "archived"


def _free_slug(name: str, *, but: Profile | None = None) -> str:
    base = slugify(name)[:90] or "profile"
    taken = Profile.objects.exclude(pk=but.pk if but else None)
    slug, n = base, 2
    while taken.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


# ---- hosts -----------------------------------------------------------------------

@transaction.atomic
def assign(host: Host, profile: Profile, *, by=None) -> Assignment:
    """Assign only what this host can take: a refusal leaves the old assignment."""
    profile = Profile.objects.select_for_update().get(pk=profile.pk)
    if profile.archived:
        raise Conflict(f"{profile.name!r} is archived and cannot be assigned")
    found = _problems_on(host, settings_of(profile.current))
    if found:
        raise TuningError(f"{profile.name!r} cannot be applied to {host.name}: {found[0]}",
                          fields={"profile": found})
    assignment, _ = Assignment.objects.update_or_create(
        host=host, defaults={"profile": profile,
                             "assigned_by": by if by and by.is_authenticated else None})
    refresh_drift(host)
    assignment.refresh_from_db()
    return assignment


def unassign(host: Host) -> bool:
    """Return the host to "no profile": PoZoL stops planning and checking drift for it.
    Nothing on the host changes (roll back a plan to undo what it wrote). Says whether
    the host had a profile."""
    deleted, _ = Assignment.objects.filter(host=host).delete()
    return bool(deleted)


def _assigned_settings(host: Host) -> ProfileSettings | None:
    """The host's profile as settings; None when none is assigned or it is broken."""
    assignment = Assignment.objects.filter(host=host).select_related("profile").first()
    if assignment is None:
        return None
    try:
        return settings_of(assignment.profile.current)
    except TuningError:
        return None  # shown as a problem on the host page, never a crash


def findings(host: Host) -> list[dict]:
    facts = host.typed_facts()
    if facts is None:
        return []
    settings = _assigned_settings(host)
    won = evidence.winners(host, facts, settings) if settings else None
    return [_as_dict(f) for f in advisor.advise(facts, settings, winners=won)]


def host_card(host: Host) -> dict:
    """What the host page's tuning card shows; the fleet view asks for it in one call,
    so the fleet app needs to know nothing about profiles."""
    return {
        "profiles": Profile.objects.filter(archived_at=None),
        "assignment": Assignment.objects.filter(host=host)
        .select_related("profile", "applied_version").first(),
        "findings": findings(host),
        "problems": problems(host),
        "awaiting": awaiting_experiments(host),
        "plans": host.plans.all()[:5],
    }


def awaiting_experiments(host: Host) -> list[dict]:
    """The profile's values left to an experiment that has named no winner on this host:
    drift leaves them out rather than guess, so the card says why they are missing."""
    settings, facts = _assigned_settings(host), host.typed_facts()
    if settings is None or facts is None:
        return []
    won = evidence.winners(host, facts, settings)
    return [{"target": c.target, "key": c.key, "reason": c.reason}
            for c in compute_changes(facts, settings, won) if c.awaits_experiment]


def problems(host: Host) -> list[str]:
    """Why the host's profile could not be planned here now ([] when it could)."""
    assignment = Assignment.objects.filter(host=host).select_related("profile").first()
    if assignment is None:
        return []
    try:
        return _problems_on(host, settings_of(assignment.profile.current))
    except TuningError as exc:
        return [exc.message]


def _problems_on(host: Host, settings: ProfileSettings) -> list[str]:
    """Nothing is known of a host not yet discovered, so nothing there is refused yet."""
    facts = host.typed_facts()
    return evaluate.problems(facts, settings) if facts else []


def problems_with(host: Host, version: ProfileVersion) -> list[str]:
    """Why `version` could not be planned on this host now ([] when it could): what a
    rollout asks of every host before it starts."""
    return _problems_on(host, settings_of(version))


def values_to_change(host: Host, version: ProfileVersion) -> dict[str, str | None] | None:
    """'layer target key' -> the host's current value, for every supported value the
    version would change, from the host's last discovery (None: never discovered). A
    rollout compares two of these to notice a host changed by hand meanwhile."""
    facts = host.typed_facts()
    if facts is None:
        return None
    settings = settings_of(version)
    changes = compute_changes(facts, settings, evidence.winners(host, facts, settings))
    return {f"{c.layer} {c.target} {c.key}": c.current for c in changes if c.supported}


def critical_findings(host: Host) -> list[str]:
    """The host's critical findings now ('rule subject'), from its last discovery."""
    facts = host.typed_facts()
    if facts is None:
        return []
    return sorted(f"{f.id} {f.subject}" for f in advisor.advise(facts)
                  if f.severity == "critical")


def refresh_drift(host: Host) -> None:
    assignment = Assignment.objects.filter(host=host).select_related("profile").first()
    settings = _assigned_settings(host)
    if assignment is None or settings is None:
        return
    facts = host.typed_facts()
    if facts is None:
        return
    found = drift.assess(facts, settings, _written_awaiting_restart(host),
                         evidence.winners(host, facts, settings))
    assignment.drift = [_as_dict(c) for c in found.differences]
    assignment.pending_restart = [_as_dict(p) for p in found.pending]
    assignment.drift_checked_at = timezone.now()
    assignment.save(update_fields=["drift", "pending_restart", "drift_checked_at"])


def _written_awaiting_restart(host: Host) -> dict[tuple[str, str], str | None]:
    """(data_dir, setting) -> the value PoZoL last wrote that waits for a restart; the
    newest write wins, and a reset (a rollback's) leaves the value unknown (None)."""
    rows = PlanChange.objects.filter(plan__host=host, layer=PlanChange.Layer.POSTGRES,
                                     status=PlanChange.Status.AWAITING_RESTART) \
        .order_by("plan__created_at", "plan_id")
    return {(row.target, row.key): row.desired if row.action == "set" else None
            for row in rows}


# ---- plans -----------------------------------------------------------------------

@transaction.atomic
def make_plan(host: Host, *, version: ProfileVersion | None = None, by=None) -> Plan:
    """A dry run: every change the profile would make on this host, stored."""
    facts = host.typed_facts()
    if facts is None:
        raise TuningError(f"{host.name} has not been discovered yet")
    if version is None:
        assignment = Assignment.objects.filter(host=host).first()
        if assignment is None:
            raise TuningError(f"{host.name} has no profile assigned; assign one or name one")
        version = assignment.profile.current
    settings = settings_of(version)
    found = evaluate.problems(facts, settings)
    if found:
        raise TuningError(f"{version} cannot be applied to {host.name}: {found[0]}",
                          fields={"settings": found})
    computed = planner.plan(facts, settings, winners=evidence.winners(host, facts, settings))
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
        hazards=_hazards(change),
        status=_status(change))


def _status(change: Change) -> str:
    if change.supported:
        return PlanChange.Status.PENDING
    if change.awaits_experiment:
        return PlanChange.Status.NOT_PLANNED
    return PlanChange.Status.UNSUPPORTED


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
    plan.operation = engine.start(steps.KIND.name, host=plan.host, trigger=trigger,
                                  user=by, subject=_subject(plan),
                                  state={"plan": plan.pk})
    plan.save(update_fields=["status", "allow_restart", "acknowledged", "operation"])
    return plan.operation


def _subject(plan: Plan) -> str:
    if plan.kind == Plan.Kind.ROLLBACK:
        return f"{plan.host.name}: rollback #{plan.pk} of plan #{plan.rollback_of_id}"
    return f"{plan.host.name}: plan #{plan.pk}"


@transaction.atomic
def rollback(plan: Plan, *, allow_restart: bool = False, trigger: str = Operation.Trigger.API,
             by=None) -> tuple[Plan, Operation]:
    """A plan that writes back every recorded before-value, applied the same way."""
    applied = plan.changes_to_roll_back()
    if not applied.exists():
        raise TuningError(f"plan #{plan.pk} changed nothing on the host; nothing to roll back")
    back = Plan.objects.create(host=plan.host, profile_version=plan.profile_version,
                               kind=Plan.Kind.ROLLBACK, rollback_of=plan,
                               created_by=by if by and by.is_authenticated else None)
    rows = [_undo(back, position, change)
            for position, change in enumerate(applied.order_by("-position"))]
    _advise_rollback(back, rows, frozenset(plan.acknowledged))
    PlanChange.objects.bulk_create(rows)
    return back, apply_plan(back, allow_restart=allow_restart, trigger=trigger, by=by)


def _advise_rollback(back: Plan, rows: list[PlanChange], acknowledged: frozenset[str]) -> None:
    """A rollback is a plan too: the advisor judges the host as it would leave it."""
    facts = back.host.typed_facts()
    if facts is None:
        return
    changes = [Change(row.layer, row.target, row.key, row.current, row.desired, None,
                      row.method, True, "", None, row.risk) for row in rows]
    findings, linked = planner.judge(facts, changes, acknowledged)
    for row, change in zip(rows, linked, strict=True):
        row.findings, row.hazards = list(change.findings), _hazards(change)
    back.findings = [_as_dict(f) for f in findings]
    back.save(update_fields=["findings"])


def _undo(plan: Plan, position: int, change: PlanChange) -> PlanChange:
    restore = rollback_core.undo(change.layer, change.key, change.before, change.after)
    return PlanChange(plan=plan, position=position, layer=change.layer, target=change.target,
                      key=restore.key, current=restore.current, desired=restore.desired,
                      method=change.method, action=restore.action, risk=change.risk,
                      reason="; ".join(filter(None, (
                          f"restores what plan #{change.plan_id} changed", restore.note))))


def _hazards(change: Change) -> list[dict]:
    return [{"id": f.id, "severity": f.severity, "title": f.title, "subject": f.subject}
            for f in change.hazards]


def _as_dict(item) -> dict:
    return asdict(item)
