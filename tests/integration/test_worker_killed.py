"""A step is run by one worker at a time: a live worker keeps its lease however long
the step takes (a heartbeat), and a worker killed in the middle of a step is survived:
its lease expires, the sweeper re-delivers, another worker re-runs the step and the
operation ends."""

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


@pytest.fixture
def host(fleet_hosts, settings):
    settings.POZOL = {**settings.POZOL, "OPERATION_LEASE": int(LEASE)}
    host = register(fleet_hosts[0], expected_fingerprint="", trust_on_first_use=True)
    host.operations.all().delete()  # these tests are about their own operation only
    host.host_key_state = host.KeyState.PINNED
    host.host_key = fleet_hosts[0].host_public_key
    host.save()
    return host


def test_a_step_longer_than_its_lease_runs_once(fleet_hosts, host, tmp_path):
    """The sweeper runs all along (beat runs it every 15 s; here without pause), and
    the worker has a second slot free to take the step again: it must not."""
    worker = Worker("tests.worker_app", "steady", tmp_path, POZOL_OPERATION_LEASE=LEASE)
    try:
        operation = engine.start("test.remote_sleep", host=host,
                                 state={"seconds": 4 * int(LEASE)})
        swept = set()

        def ended():
            # Only a sweep while the step runs would take it again. One while it is
            # still pending (a loaded worker slow to claim it) re-delivers a delivery
            # that may be lost, which is the sweeper's job; attempts says it ran once.
            running = Operation.objects.filter(pk=operation.pk,
                                               status=Operation.Status.RUNNING).exists()
            found = engine.sweep()
            if running:
                swept.update(found)
            return (op := Operation.objects.get(pk=operation.pk)).is_active is False and op

        done = wait_for(ended, 90, "the step to end", interval=0.5)
    finally:
        worker.stop()
    assert done.status == "succeeded", worker.output()[-3000:]
    assert run_on(fleet_hosts[0], f"cat {done.result['marks']}").split() == ["ran"]
    assert done.attempts == 1
    assert operation.pk not in swept
    assert not done.log_lines.filter(text__contains="expired; re-running step").exists()


def test_a_killed_worker_is_survived(fleet_hosts, host, tmp_path):
    doomed = Worker("tests.worker_app", "doomed", tmp_path, POZOL_OPERATION_LEASE=LEASE)
    try:
        operation = engine.start("test.remote_sleep", host=host,
                                 state={"seconds": 3 * int(LEASE)})
        claimed = wait_for(lambda: Operation.objects.get(pk=operation.pk).lease_expires_at,
                           30, "the first worker to claim the step")
        # Its heartbeat renews the lease: the worker is alive and inside the step.
        wait_for(lambda: Operation.objects.get(pk=operation.pk).lease_expires_at > claimed,
                 30, "the first worker to renew its lease", interval=0.1)
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
