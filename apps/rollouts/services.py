"""What the UI and API ask of rollouts: start one, pause it, resume it. No SSH here."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from apps.common.errors import Conflict, DomainError
from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from apps.rollouts import steps
from apps.rollouts.core import waves
from apps.rollouts.models import Rollout, RolloutHost
from apps.tuning import services as tuning
from apps.tuning.models import Profile, ProfileVersion


class RolloutError(DomainError):
    """A rollout that cannot be started or changed as asked; the message says why."""


def version_of(profile: Profile, number: int | None) -> ProfileVersion:
    """The profile's version `number`, or its newest."""
    if profile.archived:
        raise Conflict(f"{profile.name!r} is archived and cannot be rolled out",
                       fields={"profile": ["archived"]})
    if number is None:
        return profile.current
    version = profile.versions.filter(number=number).first()
    if version is None:
        raise RolloutError(f"{profile.name!r} has no version {number}",
                           fields={"version": [f"no version {number}"]})
    return version


@transaction.atomic
def start_rollout(version: ProfileVersion, hosts: Sequence[Host], *, wave_size: int,
                  canary: Host | None = None, validation: str = Rollout.Validation.HEALTH,
                  pgbench_seconds: int = 10, max_tps_drop_percent: int = 10,
                  rollback_earlier_waves: bool = False, allow_restart: bool = False,
                  acknowledge: Sequence[str] = (), trigger: str = Operation.Trigger.API,
                  by=None) -> Rollout:
    layout = _waves(hosts, canary, wave_size)
    by_id = {host.pk: host for host in hosts}
    _check_hosts(version, hosts)
    rollout = Rollout.objects.create(
        profile_version=version, wave_size=wave_size, validation=validation,
        pgbench_seconds=pgbench_seconds, max_tps_drop_percent=max_tps_drop_percent,
        rollback_earlier_waves=rollback_earlier_waves, allow_restart=allow_restart,
        acknowledged=sorted(set(acknowledge)), waves=len(layout),
        created_by=by if by and by.is_authenticated else None)
    RolloutHost.objects.bulk_create([
        RolloutHost(rollout=rollout, host=by_id[host_id], position=position, wave=number)
        for position, (number, host_id) in enumerate(
            (number, host_id) for number, wave in enumerate(layout) for host_id in wave)])
    rollout.operation = engine.start(
        steps.KIND.name, subject=f"rollout #{rollout.pk}: {version} to {len(hosts)} host(s)",
        state={"rollout": rollout.pk}, trigger=trigger, user=by)
    rollout.save(update_fields=["operation"])
    return rollout


def _waves(hosts: Sequence[Host], canary: Host | None, wave_size: int) -> list[list[int]]:
    try:
        return waves.plan_waves([host.pk for host in hosts],
                                canary.pk if canary else None, wave_size)
    except waves.WavePlanError as exc:
        raise RolloutError(str(exc), fields={exc.field: [str(exc)]}) from None


def _check_hosts(version: ProfileVersion, hosts: Sequence[Host]) -> None:
    """Every host discovered, trusted, in no other running rollout, and able to take
    the version: refused before anything starts, naming the hosts."""
    problems = []
    busy = set(RolloutHost.objects.filter(
        rollout__status=Rollout.Status.RUNNING, rollout__operation__status__in=Operation.ACTIVE,
        host__in=hosts).values_list("host__name", flat=True))
    for host in hosts:
        if host.name in busy:
            problems.append(f"{host.name}: already in a running rollout")
        elif not host.facts:
            problems.append(f"{host.name}: not discovered yet")
        elif host.host_key_state != Host.KeyState.PINNED:
            problems.append(f"{host.name}: its SSH host key is not pinned")
        else:
            problems += [f"{host.name}: {found}"
                         for found in tuning.problems_with(host, version)]
    if problems:
        raise RolloutError(f"{version} cannot be rolled out as asked: {problems[0]}",
                           fields={"hosts": problems})


@transaction.atomic
def pause(rollout: Rollout) -> Rollout:
    """No host starts after this; what runs ends (an apply is never cut in half)."""
    rollout = Rollout.objects.select_for_update().get(pk=rollout.pk)
    _running(rollout, "paused")
    if rollout.paused_at is None:
        rollout.paused_at = timezone.now()
        rollout.save(update_fields=["paused_at"])
    return rollout


@transaction.atomic
def resume(rollout: Rollout) -> Rollout:
    rollout = Rollout.objects.select_for_update().get(pk=rollout.pk)
    _running(rollout, "resumed")
    if rollout.paused_at is not None:
        rollout.paused_at = None
        rollout.save(update_fields=["paused_at"])
        _wake(rollout.operation)
    return rollout


def _running(rollout: Rollout, verb: str) -> None:
    if not rollout.is_active:
        raise Conflict(f"rollout #{rollout.pk} is {rollout.outcome}; it cannot be {verb}")


def _wake(operation: Operation | None) -> None:
    """Its next step now rather than after the wait it was told to sleep."""
    if operation is not None:
        engine.wake(operation.pk)
