"""Operation history is bounded: old finished operations and their logs go, what
a plan or a benchmark refers to and whatever still runs stays."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.ops import retention
from apps.ops.models import LogLine, Operation
from apps.tuning.models import Plan
from tests.benchmarks import factories

pytestmark = pytest.mark.django_db


def operation(days_old: float, status: str = Operation.Status.SUCCEEDED, **fields) -> Operation:
    row = Operation.objects.create(kind="fleet.discover", subject="db1", step="record",
                                   status=status, **fields)
    # created_at is auto_now_add: backdate it the way time would.
    Operation.objects.filter(pk=row.pk).update(
        created_at=timezone.now() - timedelta(days=days_old))
    LogLine.objects.create(operation=row, text="zpool list -Hp")
    return row


def test_old_finished_operations_and_their_logs_are_deleted(settings):
    settings.POZOL = {**settings.POZOL, "OPERATION_RETENTION_DAYS": 30}
    old = [operation(31), operation(45, Operation.Status.FAILED),
           operation(60, Operation.Status.CANCELLED)]
    recent = operation(29)
    assert retention.purge(batch=2) == 3
    assert list(Operation.objects.all()) == [recent]
    assert not LogLine.objects.filter(operation_id__in=[op.pk for op in old]).exists()
    assert LogLine.objects.filter(operation=recent).count() == 1


def test_active_and_referenced_operations_are_kept(settings):
    settings.POZOL = {**settings.POZOL, "OPERATION_RETENTION_DAYS": 7}
    host = factories.host()
    kept = [operation(90, status) for status in Operation.ACTIVE]
    bench = factories.finished(host, tps=100, latency=1.0, wal_per_tx=None)
    Operation.objects.filter(pk=bench.operation_id).update(
        created_at=timezone.now() - timedelta(days=90))
    applied = operation(90)
    Plan.objects.create(host=host, operation=applied)
    operation(90)
    assert retention.purge() == 1
    remaining = set(Operation.objects.values_list("pk", flat=True))
    assert remaining == {op.pk for op in kept} | {bench.operation_id, applied.pk}


def test_the_retention_comes_from_the_setting(settings):
    operation(10)
    settings.POZOL = {**settings.POZOL, "OPERATION_RETENTION_DAYS": 11}
    assert retention.purge() == 0
    settings.POZOL = {**settings.POZOL, "OPERATION_RETENTION_DAYS": 9}
    assert retention.purge() == 1


def test_migrate_schedules_the_purge(settings):
    task = PeriodicTask.objects.get(task="ops.purge")
    assert task.interval.every == settings.POZOL["OPERATION_PURGE_INTERVAL"]
