"""The operations engine: steps delivered by Celery, guarded by leases.

A step is a short, idempotent function of a StepContext that returns what
happens next: Next (move on), Wait (come back later), Done or Fail. Delivery
is at-least-once: the engine claims the row with SELECT ... FOR UPDATE SKIP
LOCKED and a lease, so a duplicate message is a no-op, and the sweeper
re-delivers a step whose lease expired because its worker died. A live worker
renews its lease while the step runs (a heartbeat), however long the step
takes, and records the outcome only while it still holds that very claim.

The convention for operation kinds, the same in every app:

- an app's steps live in its `steps.py` (apps/benchmarks/steps.py,
  apps/tuning/steps.py, apps/fleet/steps.py), and nowhere else;
- that module registers its kind once, at the bottom, as
  `KIND = register(Kind(name="<app>.<verb>", ...))`, and its AppConfig.ready()
  imports the module so the kind exists before any worker runs a step;
- services start it with `engine.start(steps.KIND.name, ...)` and filter on
  `steps.KIND.name`: the name is written once, in the Kind, never as a bare
  string elsewhere in the product.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

from apps.common import events
from apps.ops import timing
from apps.ops.models import LogLine, Operation
from apps.remote.errors import HostKeyMismatch, RemoteError

log = logging.getLogger("pozol.ops")

OPERATION_FINISHED = events.register(events.EventKind(
    "operation.finished", "An operation ended (succeeded, failed or cancelled)"))


@dataclass(frozen=True)
class Next:
    step: str
    message: str = ""
    progress: int | None = None


@dataclass(frozen=True)
class Wait:
    seconds: float
    step: str | None = None  # None: run the same step again
    message: str = ""
    # A retry after an exception counts against the step's attempts; waiting
    # on a host (polling a long job) is healthy and does not.
    retry: bool = False


@dataclass(frozen=True)
class Done:
    result: dict[str, Any] = field(default_factory=dict)
    message: str = "done"


@dataclass(frozen=True)
class Fail:
    error: str
    code: str = "failed"  # CANCELLED ends the operation as cancelled, not failed


CANCELLED = "cancelled"
# Where a cancel of a kind that winds down is asked for (state key, the reason as value).
CANCEL_REQUESTED = "cancel_requested"


Outcome = Next | Wait | Done | Fail
Step = Callable[["StepContext"], Outcome]


@dataclass(frozen=True)
class Kind:
    name: str
    steps: dict[str, Step]
    first_step: str
    mutating: bool
    deadline: timedelta = timedelta(hours=1)
    # Kinds that repair a host (re-pinning its key) must run when others refuse.
    runs_on_untrusted_host: bool = False
    # Kinds that change a host for a while (an experiment) must give it back when
    # cancelled: cancel then only asks (StepContext.cancel_requested) and the kind's own
    # steps stop the work, put the host back and end with Fail(..., CANCELLED).
    winds_down_on_cancel: bool = False


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    KINDS[kind.name] = kind
    return kind


class StepContext:
    """What a step sees: its operation, its saved state, a log and the host."""

    def __init__(self, operation: Operation) -> None:
        self.operation = operation
        self.state: dict[str, Any] = operation.state
        self.host = operation.host

    def log(self, text: str, level: str = LogLine.Level.INFO) -> None:
        LogLine.objects.create(operation=self.operation, level=level, text=text)

    def progress(self, percent: int, message: str = "") -> None:
        self.operation.progress = max(0, min(100, percent))
        self.operation.message = message[:300]
        Operation.objects.filter(pk=self.operation.pk).update(
            progress=self.operation.progress, message=self.operation.message,
            updated_at=timezone.now(),
        )

    @property
    def cancel_requested(self) -> str:
        """The operator's reason when a cancel was asked for, else ""."""
        return self.state.get(CANCEL_REQUESTED, "")

    def runner(self):
        """The host's SSH session; every command it runs lands in this log."""
        from apps.remote import ssh

        return ssh.session(self.host.ssh_target(),
                           connect_timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])


# ---- starting and delivering -------------------------------------------------

def start(kind_name: str, *, host=None, subject: str = "", state: dict | None = None,
          trigger: str = Operation.Trigger.SYSTEM, user=None) -> Operation:
    kind = KINDS[kind_name]
    operation = Operation.objects.create(
        kind=kind.name, host=host, subject=subject or (host.name if host else ""),
        mutating=kind.mutating, step=kind.first_step, state=state or {},
        trigger=trigger, triggered_by=user if user and user.is_authenticated else None,
        deadline=timezone.now() + kind.deadline,
    )
    transaction.on_commit(lambda: deliver(operation.pk))
    return operation


def refused(kind_name: str, *, host=None, subject: str = "", state: dict | None = None,
            trigger: str = Operation.Trigger.SYSTEM, error: str, code: str) -> Operation:
    """An operation that was due and refused before it could start (no worker runs it):
    recorded as failed, so the operations list, its log and the operation_failed alert
    say why what was scheduled did not happen."""
    kind = KINDS[kind_name]
    now = timezone.now()
    operation = Operation.objects.create(
        kind=kind.name, host=host, subject=subject or (host.name if host else ""),
        mutating=kind.mutating, step=kind.first_step, state=state or {}, trigger=trigger,
        started_at=now)
    _finish(operation, Operation.Status.FAILED, error=error, code=code)
    return operation


def deliver(operation_id: int, countdown: float = 0) -> None:
    """Ask a worker to run the operation's next step; only log if the broker is down.

    The row is already committed when this runs (on_commit), so raising here
    would answer a 500 for work that was in fact recorded. A lost delivery is
    what the sweeper exists for: it re-delivers every pending, waiting or
    between-steps operation that nobody holds, once the broker answers again.
    """
    from apps.ops.tasks import run_step

    try:
        run_step.apply_async((operation_id,), countdown=max(0, countdown))
    except (BrokerUnavailable, OSError) as exc:
        log.warning("broker unavailable, operation %s left for the sweeper: %s",
                    operation_id, exc)


def wake(operation_id: int) -> bool:
    """Its next step now rather than at the end of the wait it chose; False when it is
    not waiting (running a step now, or ended), and its own poll stays the fallback."""
    woken = Operation.objects.filter(pk=operation_id, status=Operation.Status.WAITING) \
        .update(wake_at=timezone.now())
    if woken:
        transaction.on_commit(lambda: deliver(operation_id))
    return bool(woken)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# ---- running one step ----------------------------------------------------------

def run_step(operation_id: int, owner: str | None = None) -> str:
    """Claim, run and record one step. Returns what happened, for logs and tests."""
    owner = owner or worker_id()
    claim = _claim(operation_id, owner)
    if not isinstance(claim, Operation):
        return claim
    operation = claim
    kind = KINDS[operation.kind]
    context = StepContext(operation)
    started = time.monotonic()
    with _heartbeat(operation.pk, operation.lease_owner):
        try:
            outcome = _run_observed(kind.steps[operation.step], context)
        except Exception as exc:  # a step may raise; the engine decides what that means
            outcome = _outcome_of_exception(operation, context, exc)
    timing.record(operation.kind, operation.step, time.monotonic() - started)  # for /metrics
    return _record(operation, outcome)


def _run_observed(step: Step, context: StepContext) -> Outcome:
    from apps.remote.ssh import command_observer

    def observe(target_name: str, result) -> None:
        level = LogLine.Level.COMMAND if result.ok else LogLine.Level.WARNING
        text = f"$ {result.command}  -> exit {result.exit_code} in {result.duration:.2f}s"
        if not result.ok and result.stderr.strip():
            text += "\n" + result.stderr.strip()[-1000:]
        context.log(text, level)

    token = command_observer.set(observe)
    try:
        return step(context)
    finally:
        command_observer.reset(token)


def _claim(operation_id: int, owner: str) -> Operation | str:
    lease = settings.POZOL["OPERATION_LEASE"]
    now = timezone.now()
    with transaction.atomic():
        operation = (
            Operation.objects.select_for_update(skip_locked=True)
            .filter(pk=operation_id, status__in=Operation.ACTIVE)
            .first()
        )
        if operation is None:
            return "not claimable (finished, missing, or locked by another worker)"
        if operation.lease_expires_at and operation.lease_expires_at > now:
            return f"leased by {operation.lease_owner}"
        if operation.wake_at and operation.wake_at > now:
            return "not due yet"
        refusal = _refusal(operation, now)
        if refusal:
            _finish(operation, Operation.Status.FAILED, error=refusal[1], code=refusal[0])
            return f"failed: {refusal[1]}"
        blocker = _mutating_blocker(operation)
        if blocker:
            return _wait_for(operation, blocker)
        operation.status = Operation.Status.RUNNING
        operation.lease_owner = _lease_token(owner)
        operation.lease_expires_at = now + timedelta(seconds=lease)
        operation.wake_at = None
        operation.attempts += 1
        operation.started_at = operation.started_at or now
        operation.save()
    return operation


def _lease_token(owner: str) -> str:
    """The worker's name plus a nonce of this one claim: two claims never share a token,
    not even two of one process (a thread pool) or of the same owner given twice."""
    return f"{owner} #{secrets.token_hex(4)}"


# ---- the heartbeat -----------------------------------------------------------------

@contextmanager
def _heartbeat(operation_id: int, token: str) -> Iterator[None]:
    """Renew the claim's lease every third of it while the body runs.

    A step may take longer than the lease (a clone of a big snapshot, a drill); without
    renewal the sweeper would hand it to a second worker while the first still runs it.
    A worker that dies stops beating, its lease runs out and the step is taken over.
    """
    lease = settings.POZOL["OPERATION_LEASE"]
    stop = threading.Event()
    beat = threading.Thread(target=_beat, args=(operation_id, token, lease, stop),
                            name=f"lease-{operation_id}", daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join(timeout=lease)


def _beat(operation_id: int, token: str, lease: float, stop: threading.Event) -> None:
    try:
        while not stop.wait(lease / 3):
            if not renew_lease(operation_id, token, lease):
                log.warning("operation %s: lease %s was taken over; this run's outcome "
                            "will be discarded", operation_id, token)
                return
    finally:
        connection.close()  # this thread's own connection


def renew_lease(operation_id: int, token: str, lease: float) -> bool:
    """Extend the lease if `token` still holds it; False once another claim took over.

    A database that does not answer this once is not a lost lease: the next beat
    tries again, and the lease still has two thirds of its time."""
    try:
        renewed = Operation.objects.filter(
            pk=operation_id, lease_owner=token, status=Operation.Status.RUNNING,
        ).update(lease_expires_at=timezone.now() + timedelta(seconds=lease))
    except DatabaseError as exc:
        log.warning("operation %s: could not renew lease: %s", operation_id, exc)
        connection.close()
        return True
    return renewed == 1


def _refusal(operation: Operation, now) -> tuple[str, str] | None:
    kind = KINDS[operation.kind]
    if operation.deadline and operation.deadline < now:
        return "deadline", f"deadline passed at step {operation.step!r}"
    if operation.attempts >= settings.POZOL["OPERATION_MAX_ATTEMPTS"]:
        return "attempts", (f"step {operation.step!r} did not complete after "
                            f"{operation.attempts} attempts")
    host = operation.host
    if host is not None and host.host_key_changed and not kind.runs_on_untrusted_host:
        return "host_key_changed", (f"host {host.name} presented a changed SSH host key; "
                                    "all work on it is stopped until an operator re-pins it")
    return None


def _mutating_blocker(operation: Operation) -> Operation | None:
    """Mutating work on one host is serialised; the oldest active one goes first."""
    if not operation.mutating or operation.host_id is None:
        return None
    return (
        Operation.objects.filter(host_id=operation.host_id, mutating=True,
                                 status__in=Operation.ACTIVE, id__lt=operation.pk)
        .order_by("id")
        .first()
    )


def _wait_for(operation: Operation, blocker: Operation) -> str:
    operation.status = Operation.Status.WAITING
    operation.wake_at = timezone.now() + timedelta(seconds=5)
    operation.message = f"waiting for operation #{blocker.pk} ({blocker.kind}) on this host"
    operation.save()
    transaction.on_commit(lambda: deliver(operation.pk, countdown=5))
    return operation.message


def _outcome_of_exception(operation: Operation, context: StepContext, exc: Exception) -> Outcome:
    if isinstance(exc, RemoteError):
        if isinstance(exc, HostKeyMismatch) and operation.host is not None:
            operation.host.record_host_key_change(exc)
        context.log(str(exc), LogLine.Level.ERROR)
        return Fail(str(exc), exc.code)
    context.log("".join(traceback.format_exception(exc))[-4000:], LogLine.Level.ERROR)
    log.exception("operation %s step %s raised", operation.pk, operation.step)
    backoff = min(60, 2 ** operation.attempts)
    return Wait(backoff, message=f"step {operation.step!r} raised {exc!r}; retrying",
                retry=True)


def _record(operation: Operation, outcome: Outcome) -> str:
    """Write the outcome of the claim `operation` holds (its lease token), once."""
    with transaction.atomic():
        current = Operation.objects.select_for_update().get(pk=operation.pk)
        if (current.lease_owner != operation.lease_owner
                or current.status != Operation.Status.RUNNING):
            # Our lease expired and another claim took over: its run counts.
            return "lease lost; result discarded"
        # A cancel asked for while the step ran was written to the row's state: keep it.
        asked = current.state.get(CANCEL_REQUESTED)
        current.state = operation.state
        if asked:
            current.state[CANCEL_REQUESTED] = asked
            if isinstance(outcome, Wait):  # the next step hears it now, not after the wait
                outcome = replace(outcome, seconds=0)
        current.progress = operation.progress
        current.lease_owner = ""
        current.lease_expires_at = None
        _apply(current, outcome)
    return f"{type(outcome).__name__.lower()}: {current.step} {current.status}"


def _apply(operation: Operation, outcome: Outcome) -> None:
    if isinstance(outcome, Next):
        operation.step = outcome.step
        operation.attempts = 0
        operation.message = outcome.message or operation.message
        if outcome.progress is not None:
            operation.progress = outcome.progress
        operation.save()
        transaction.on_commit(lambda: deliver(operation.pk))
    elif isinstance(outcome, Wait):
        operation.status = Operation.Status.WAITING
        operation.step = outcome.step or operation.step
        if not outcome.retry:
            operation.attempts = 0
        operation.message = outcome.message or operation.message
        operation.wake_at = timezone.now() + timedelta(seconds=outcome.seconds)
        operation.save()
        transaction.on_commit(lambda: deliver(operation.pk, countdown=outcome.seconds))
    elif isinstance(outcome, Done):
        _finish(operation, Operation.Status.SUCCEEDED, result=outcome.result,
                message=outcome.message)
    else:
        status = (Operation.Status.CANCELLED if outcome.code == CANCELLED
                  else Operation.Status.FAILED)
        _finish(operation, status, error=outcome.error, code=outcome.code)


def _finish(operation: Operation, status: str, *, result: dict | None = None,
            error: str = "", code: str = "", message: str = "") -> None:
    operation.status = status
    operation.finished_at = timezone.now()
    operation.lease_owner = ""
    operation.lease_expires_at = None
    operation.wake_at = None
    operation.result = result
    operation.error = error
    operation.error_code = code
    operation.message = (message or error or status)[:300]
    if status == Operation.Status.SUCCEEDED:
        operation.progress = 100
    operation.save()
    if error:
        LogLine.objects.create(operation=operation, level=LogLine.Level.ERROR, text=error)
    if operation.waiter_id:
        wake(operation.waiter_id)
    # Every end passes here (steps, refusals, cancels, deadlines): the one place to say so.
    OPERATION_FINISHED.emit(
        {"type": "operation", "id": operation.pk, "name": operation.subject},
        kind=operation.kind, subject=operation.subject, outcome=status,
        host=operation.host_id, error_code=code, message=operation.message)


# ---- the sweeper -----------------------------------------------------------------

# A delivery sent moments ago is probably still in the queue: do not double it.
SWEEP_GRACE = timedelta(seconds=10)


def sweep() -> list[int]:
    """Re-deliver steps whose worker vanished, whose delivery was lost, and wake
    ones that are due."""
    now = timezone.now()
    # Locked while taken over: a heartbeat that comes now waits, then finds its
    # token gone, rather than renewing a lease the log already calls expired.
    with transaction.atomic():
        lost = list(Operation.objects.select_for_update(skip_locked=True)
                    .filter(status=Operation.Status.RUNNING, lease_expires_at__lt=now))
        for operation in lost:
            LogLine.objects.create(operation=operation, level=LogLine.Level.WARNING,
                                   text=f"lease of {operation.lease_owner} expired; "
                                        f"re-running step {operation.step!r}")
        lost_ids = [operation.pk for operation in lost]
        Operation.objects.filter(pk__in=lost_ids).update(lease_owner="", lease_expires_at=None)
    due = Operation.objects.filter(
        status__in=[Operation.Status.PENDING, Operation.Status.WAITING],
        lease_expires_at__isnull=True,
    ).exclude(wake_at__gt=now).exclude(created_at__gt=now - SWEEP_GRACE)
    # Running without a lease means "between two steps": the next step's
    # delivery is on its way, or was lost (broker down).
    between_steps = Operation.objects.filter(
        status=Operation.Status.RUNNING, lease_expires_at__isnull=True,
        updated_at__lte=now - SWEEP_GRACE)
    ids = sorted(set(lost_ids) | set(due.values_list("id", flat=True))
                 | set(between_steps.values_list("id", flat=True)))
    for operation_id in ids:
        deliver(operation_id)
    return ids


def cancel(operation: Operation, reason: str = "cancelled by an operator") -> None:
    """End an active operation between steps; a kind that winds down on cancel is asked
    to instead, and woken now so that it does not sleep through the request."""
    with transaction.atomic():
        current = Operation.objects.select_for_update().get(pk=operation.pk)
        if not current.is_active:
            return
        kind = KINDS.get(current.kind)
        if kind is None or not kind.winds_down_on_cancel or current.started_at is None:
            # Nothing of it ran yet, or nothing to put back: it simply ends.
            _finish(current, Operation.Status.CANCELLED, error=reason, code=CANCELLED)
            return
        if current.state.get(CANCEL_REQUESTED):
            return  # asked already; its steps are winding it down
        current.state[CANCEL_REQUESTED] = reason
        current.message = f"{reason}; winding down"[:300]
        LogLine.objects.create(operation=current, level=LogLine.Level.WARNING,
                               text=f"{reason}: the work stops and the host is put back "
                                    "before the operation ends")
        if not current.lease_owner:  # waiting or between steps: its next step now
            current.wake_at = None
            transaction.on_commit(lambda: deliver(current.pk))
        current.save()
