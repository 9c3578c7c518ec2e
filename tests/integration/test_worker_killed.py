"""A worker killed in the middle of a step is survived: the lease expires, the
sweeper re-delivers, another worker re-runs the step and the operation ends."""

import time

import pytest

from apps.ops import engine
from apps.ops.models import Operation
from tests.integration.conftest import register, run_on
from tests.ops import kinds  # noqa: F401  registers test.remote_sleep here too
from tests.waiting import wait_for
from tests.workers import Worker

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

LEASE = "3"



def test_a_killed_worker_is_survived(fleet_hosts, settings, tmp_path):
    settings.POZOL = {**settings.POZOL, "OPERATION_LEASE": int(LEASE)}
    host = register(fleet_hosts[0], expected_fingerprint="", trust_on_first_use=True)
    host.operations.all().delete()  # this test is about its own operation only
    host.host_key_state = host.KeyState.PINNED
    host.host_key = fleet_hosts[0].host_public_key
    host.save()

    doomed = Worker("tests.worker_app", "doomed", tmp_path, POZOL_OPERATION_LEASE=LEASE)
    try:
        operation = engine.start("test.remote_sleep", host=host)
        wait_for(lambda: Operation.objects.get(pk=operation.pk).lease_owner, 30,
                   "the first worker to claim the step")
        time.sleep(1)  # now inside the 4-second remote sleep
        doomed.kill()
    finally:
        doomed.stop()
    assert Operation.objects.get(pk=operation.pk).status == "running"

    rescuer = Worker("tests.worker_app", "rescuer", tmp_path, POZOL_OPERATION_LEASE=LEASE)
    try:
        time.sleep(int(LEASE) + 0.5)
        swept = wait_for(lambda: engine.sweep(), 30, "the sweeper to find the lost step")
        assert operation.pk in swept
        done = wait_for(
            lambda: (op := Operation.objects.get(pk=operation.pk)).is_active is False and op,
            60, "the rescuing worker to finish")
    finally:
        rescuer.stop()
    assert done.status == "succeeded", rescuer.output()[-3000:]
    assert run_on(fleet_hosts[0], f"cat {done.result['marks']}").split() == ["ran", "ran"]
    assert done.attempts == 2
    assert done.log_lines.filter(text__contains="expired; re-running step").exists()
