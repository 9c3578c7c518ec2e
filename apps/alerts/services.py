"""What the UI, API and beat ask of alerting; one function each. Refusals are
AlertError naming the field."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from apps.alerts import delivery, dispatch, evaluate, steps
from apps.alerts.core import conditions, webhooks
from apps.alerts.models import Alert, Channel, Delivery, Rule, ScrubSchedule, Silence
from apps.common import alert_kinds
from apps.common.errors import Conflict, DomainError
from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote import commands

MAX_SILENCE_MINUTES = 90 * 24 * 60


class AlertError(DomainError):
    code = "alert_refused"


def tick(now: datetime) -> int:
    """Beat: evaluate the rules, announce what is due, re-send lost deliveries."""
    evaluate.evaluate_all(now)
    made = dispatch.announce(now)
    delivery.resend_lost(now)
    return made


def update_rule(rule: Rule, **changes) -> Rule:
    for name, value in changes.items():
        setattr(rule, name, value)
    problems, spec = {}, alert_kinds.require(rule.kind)
    if why := conditions.check_threshold(spec, rule.threshold):
        problems["threshold"] = [why]
    if why := conditions.check_hysteresis(spec, rule.threshold, rule.hysteresis):
        problems["hysteresis"] = [why]
    if problems:
        raise AlertError("The rule was not changed: " + "; ".join(
            f"{field}: {text[0]}" for field, text in problems.items()), fields=problems)
    rule.save()
    return rule


def check_target(kind: str, target: str) -> str:
    """The target as stored, or AlertError: addresses for mail, an allowed URL else."""
    if kind == Channel.Kind.EMAIL:
        addresses = delivery.recipients(target)
        if not addresses:
            raise AlertError("Give at least one address.", fields={"target": ["required"]})
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                raise AlertError(f"{address!r} is not an e-mail address.",
                                 fields={"target": [f"{address!r} is not an e-mail address"]}
                                 ) from None
        return ", ".join(addresses)
    try:
        webhooks.parse_url(target, delivery.allowlist())
    except webhooks.Refused as exc:
        raise AlertError(f"This webhook URL is refused: {exc}.",
                         fields={"target": [str(exc)]}) from None
    return target


def save_channel(channel: Channel) -> Channel:
    channel.target = check_target(channel.kind, channel.target)
    if Channel.objects.filter(name=channel.name).exclude(pk=channel.pk).exists():
        raise AlertError(f"A channel named {channel.name!r} exists.",
                         fields={"name": ["already taken"]}, status=409, code="conflict")
    channel.save()
    return channel


def delete_channel(channel: Channel) -> None:
    channel.delete()


def test_channel(channel: Channel) -> Delivery:
    """A test event to one channel, through the same path and log as alerts."""
    now = timezone.now()
    body = {"status": "test", "alert_id": None, "kind": "test", "title": "Test message",
            "host": "-", "host_id": None, "message": f"A test of channel {channel.name}.",
            "since": now.isoformat(), "resolved_at": None,
            "url": f"{_base()}/alerts/channels/{channel.pk}/"}
    with transaction.atomic():
        row = Delivery.objects.create(channel=channel, event=Delivery.Event.TEST, body=body,
                                      next_attempt_at=now)
        delivery.enqueue([row.pk])
    return row


def _base() -> str:
    return settings.POZOL["BASE_URL"].rstrip("/")


def acknowledge(alert: Alert, by) -> Alert:
    if alert.acknowledged_at is None:
        alert.acknowledged_at, alert.acknowledged_by = timezone.now(), by
        alert.save(update_fields=["acknowledged_at", "acknowledged_by"])
    return alert


def silence(*, host: Host | None, kind: str, minutes: int, reason: str, by) -> Silence:
    if kind and alert_kinds.get(kind) is None:
        raise AlertError(f"There is no alert kind {kind!r}.", fields={"kind": ["unknown kind"]})
    if not 1 <= minutes <= MAX_SILENCE_MINUTES:
        raise AlertError(f"A silence lasts 1 to {MAX_SILENCE_MINUTES} minutes (90 days).",
                         fields={"minutes": ["out of range"]})
    return Silence.objects.create(host=host, kind=kind, reason=reason, created_by=by,
                                  until=timezone.now() + timedelta(minutes=minutes))


def silence_alert(alert: Alert, *, minutes: int, reason: str, by) -> Silence:
    return silence(host=alert.host, kind=alert.kind, minutes=minutes, reason=reason, by=by)


def end_silence(item: Silence) -> Silence:
    now = timezone.now()
    if item.until > now:
        item.until = now
        item.save(update_fields=["until"])
    return item


# -- scrubs -------------------------------------------------------------------------------

MAX_SCRUB_DAYS = 366


def _check_pool(host: Host, pool: str) -> str:
    try:
        name = commands.pool_name(pool)
    except commands.InvalidValue as exc:
        raise AlertError(str(exc), fields={"pool": [str(exc)]}) from None
    if not host.pools.filter(name=name).exists():
        raise AlertError(f"{host.name} has no pool {name} (as of its last discovery).",
                         fields={"pool": ["no such pool on this host"]})
    return name


def schedule_scrub(host: Host, pool: str, *, every_days: int = 30,
                   next_at: datetime | None = None, enabled: bool = True) -> ScrubSchedule:
    """A pool's scrub every `every_days`; the first at `next_at` (default: the next tick)."""
    name = _check_pool(host, pool)
    _check_days(every_days)
    if ScrubSchedule.objects.filter(host=host, pool=name).exists():
        raise AlertError(f"{name} on {host.name} has a scrub schedule already.",
                         fields={"pool": ["already scheduled"]}, status=409, code="conflict")
    return ScrubSchedule.objects.create(host=host, pool=name, every_days=every_days,
                                        enabled=enabled, next_at=next_at or timezone.now())


def update_scrub_schedule(schedule: ScrubSchedule, **changes) -> ScrubSchedule:
    if "every_days" in changes:
        _check_days(changes["every_days"])
    for name, value in changes.items():
        setattr(schedule, name, value)
    schedule.save()
    return schedule


def _check_days(days: int) -> None:
    if not 1 <= days <= MAX_SCRUB_DAYS:
        raise AlertError(f"A scrub is scheduled every 1 to {MAX_SCRUB_DAYS} days.",
                         fields={"every_days": ["out of range"]})


def scrub_now(schedule: ScrubSchedule, *, by=None,
              trigger: str = Operation.Trigger.API) -> Operation:
    """Start the schedule's scrub now (one at a time per pool)."""
    with transaction.atomic():
        locked = ScrubSchedule.objects.select_for_update().get(pk=schedule.pk)
        last = locked.last_operation
        if last is not None and last.status in Operation.ACTIVE:
            raise Conflict(f"A scrub of {locked.pool} is running: operation #{last.pk}.",
                           code="scrub_running")
        operation = engine.start(
            steps.SCRUB.name, host=locked.host, trigger=trigger, user=by,
            subject=f"{locked.host.name}: scrub {locked.pool}", state={"pool": locked.pool})
        locked.last_operation = operation
        locked.next_at = timezone.now() + timedelta(days=locked.every_days)
        locked.save(update_fields=["last_operation", "next_at"])
    return operation


def scrub_tick(now: datetime) -> int:
    """Beat: start every due, enabled schedule's scrub; how many started."""
    started = 0
    due = ScrubSchedule.objects.filter(enabled=True, next_at__lte=now,
                                       host__host_key_state=Host.KeyState.PINNED)
    for schedule in due.select_related("host", "last_operation"):
        try:
            scrub_now(schedule, trigger=Operation.Trigger.SCHEDULE)
        except Conflict:
            continue  # still running: the next tick looks again
        started += 1
    return started


def delete_scrub_schedule(schedule: ScrubSchedule) -> None:
    schedule.delete()
