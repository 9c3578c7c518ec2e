"""Driving an Operation to its end in this process, as a worker would."""

from __future__ import annotations

import time

from django.utils import timezone

from apps.ops import engine
from apps.ops.models import Operation


def drive(operation: Operation, *, limit: int = 50, pause: float = 0.0) -> Operation:
    """Run an operation's steps until it ends. Waits are cut short; `pause`
    between steps lets work on the host take its real time (a pgbench run)."""
    for _ in range(limit):
        operation.refresh_from_db()
        if not operation.is_active:
            return operation
        Operation.objects.filter(pk=operation.pk, wake_at__isnull=False).update(
            wake_at=timezone.now())
        engine.run_step(operation.pk, owner="test-driver")
        time.sleep(pause)
    raise AssertionError(f"operation {operation} did not end in {limit} steps")
