"""A scheduled scrub on a real test host (zfs-fuse): the beat's tick starts it when
due, the operation follows `zpool status` to the end and records the result, and
the schedule moves a period on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.alerts import services
from apps.alerts.core import scrub
from apps.ops.models import Operation
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_snapshots import discovered

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def test_a_due_scrub_runs_to_its_result_and_is_scheduled_again(fleet_hosts):
    fleet_host = fleet_hosts[1]
    host = discovered(fleet_host)
    pool = host.pools.first().name
    schedule = services.schedule_scrub(host, pool, every_days=30)
    assert services.scrub_tick(timezone.now()) == 1
    schedule.refresh_from_db()
    operation = drive(schedule.last_operation)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert operation.result["pool"] == pool and operation.result["errors"] == 0
    status = run_on(fleet_host, f"zpool status {pool}")
    assert scrub.read(status).state == "finished", status  # what the host says too
    assert schedule.next_at > timezone.now() + timedelta(days=29)
    assert services.scrub_tick(timezone.now()) == 0  # not due again
    with pytest.raises(services.AlertError):
        services.schedule_scrub(host, "nosuchpool")
