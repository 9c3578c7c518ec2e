"""Driving an Operation to its end in this process, as a worker would."""

from __future__ import annotations

import time

from django.utils import timezone

from apps.ops import engine
from apps.ops.models import Operation

# A step that asks to wait (work on the host under way) runs again after its wait or
# this long, whichever is shorter. Cut short, waits keep tests quick; not cut to
# nothing, `limit` steps last at least limit * WAIT_CAP seconds, so a default drive
# outlasts ten seconds of work on the host however fast each step's SSH is.
WAIT_CAP = 0.2


def drive(operation: Operation, *, limit: int = 50, pause: float = 0.0) -> Operation:
    """Run an operation's steps until it ends. Waits are cut short (WAIT_CAP);
    `pause` between steps lets work on the host take its real time (a pgbench run)."""
    started = time.monotonic()
    operation.refresh_from_db()
    for _ in range(limit):
        if not operation.is_active:
            return operation
        Operation.objects.filter(pk=operation.pk, wake_at__isnull=False).update(
            wake_at=timezone.now())
        engine.run_step(operation.pk, owner="test-driver")
        operation.refresh_from_db()  # what the step left: its wait, and for the next turn
        time.sleep(max(pause, _asked_wait(operation)))
    raise AssertionError(f"operation {operation} did not end in {limit} steps "
                         f"({time.monotonic() - started:.1f} s)")


def _asked_wait(operation: Operation) -> float:
    if operation.wake_at is None:
        return 0.0
    return min(WAIT_CAP, max(0.0, (operation.wake_at - timezone.now()).total_seconds()))
