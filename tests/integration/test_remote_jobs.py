"""Long remote work runs detached under its unit name and is polled; a step
re-run after a lost worker polls the same unit instead of starting another."""

import pytest
from django.utils import timezone

from apps.ops import engine
from apps.ops.models import Operation
from tests.driving import drive
from tests.integration.conftest import register, run_on
from tests.ops import kinds  # noqa: F401  registers test.detached_sleep

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def test_a_detached_job_is_started_once_and_polled_to_its_end(fleet_hosts, delivered):
    host = register(fleet_hosts[0])
    assert drive(host.operations.get()).status == "succeeded"
    operation = engine.start("test.detached_sleep", host=host)

    assert engine.run_step(operation.pk).startswith("wait")
    # The worker is lost and the step delivered again before the job ends.
    Operation.objects.filter(pk=operation.pk).update(wake_at=timezone.now())
    assert engine.run_step(operation.pk).startswith("wait")

    done = drive(operation)
    assert done.status == "succeeded", done.error
    assert done.result["output"] == "slept"
    assert run_on(fleet_hosts[0], f"cat {done.result['marks']}").split() == ["ran"]
    assert done.log_lines.filter(text__contains=f" as detached unit op{done.pk}-").count() == 1
