"""The engine's promises, on a real PostgreSQL: claims, leases, outcomes,
per-host exclusion, the sweeper, and refusal on a changed host key."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.fleet.models import Host
from apps.ops import engine
from apps.ops.models import Operation
from tests.ops import kinds  # noqa: F401  registers test kinds

pytestmark = pytest.mark.django_db(transaction=True)


def make_host(name="db1") -> Host:
    host = Host(name=name, address="127.0.0.9", credential_kind="pasted",
                host_key_state=Host.KeyState.PINNED)
    host.set_private_key("not used")
    host.save()
    return host


def test_steps_move_on_wait_and_finish(delivered):
    operation = engine.start("test.story", subject="x")
    assert delivered == [operation.pk]

    assert engine.run_step(operation.pk).startswith("next")
    operation.refresh_from_db()
    assert (operation.step, operation.status, operation.progress) == ("second", "running", 40)

    assert engine.run_step(operation.pk).startswith("wait")
    operation.refresh_from_db()
    assert operation.status == "waiting" and operation.wake_at > timezone.now()
    assert engine.run_step(operation.pk) == "not due yet"

    Operation.objects.filter(pk=operation.pk).update(wake_at=timezone.now())
    engine.run_step(operation.pk)
    operation.refresh_from_db()
    assert operation.status == "succeeded" and operation.progress == 100
    assert operation.result == {"first_runs": 1, "second_runs": 2}
    assert [line.text for line in operation.log_lines.all()] == ["first step ran"]


def test_a_leased_operation_is_not_run_twice(delivered):
    operation = engine.start("test.story")
    Operation.objects.filter(pk=operation.pk).update(
        lease_owner="other-worker", lease_expires_at=timezone.now() + timedelta(seconds=60),
        status="running")
    assert engine.run_step(operation.pk) == "leased by other-worker"
    assert Operation.objects.get(pk=operation.pk).state == {}


def test_the_sweeper_redelivers_an_expired_lease_and_the_step_reruns(delivered):
    operation = engine.start("test.story")
    Operation.objects.filter(pk=operation.pk).update(
        lease_owner="dead-worker", lease_expires_at=timezone.now() - timedelta(seconds=1),
        status="running", attempts=1)
    delivered.clear()

    assert engine.sweep() == [operation.pk]
    assert delivered == [operation.pk]
    engine.run_step(operation.pk)
    operation.refresh_from_db()
    assert operation.step == "second" and operation.state["first_runs"] == 1
    assert "lease of dead-worker expired" in operation.log_lines.first().text


def test_a_worker_whose_lease_was_taken_over_discards_its_result(delivered):
    operation = engine.start("test.story")
    claimed = engine._claim(operation.pk, "slow-worker")
    Operation.objects.filter(pk=operation.pk).update(lease_owner="new-worker")
    assert engine._record(claimed, "slow-worker", engine.Done({})) == "lease lost; result discarded"
    assert Operation.objects.get(pk=operation.pk).status == "running"


def test_mutating_operations_on_one_host_wait_for_each_other(delivered):
    host = make_host()
    first = engine.start("test.story", host=host)
    second = engine.start("test.story", host=host)
    other_host = engine.start("test.story", host=make_host("db2"))

    assert engine.run_step(second.pk).startswith("waiting for operation")
    assert Operation.objects.get(pk=second.pk).status == "waiting"
    assert engine.run_step(other_host.pk).startswith("next")
    assert engine.run_step(first.pk).startswith("next")


def test_read_only_operations_do_not_wait(delivered):
    host = make_host()
    engine.start("test.story", host=host)
    refuses = engine.start("test.refuses", host=host)
    assert engine.run_step(refuses.pk).startswith("fail")
    refuses.refresh_from_db()
    assert (refuses.status, refuses.error_code, refuses.error) == ("failed", "nope", "no way")


def test_an_unexpected_exception_is_retried_then_fails(delivered, settings):
    settings.POZOL = {**settings.POZOL, "OPERATION_MAX_ATTEMPTS": 2}
    operation = engine.start("test.explodes")
    assert engine.run_step(operation.pk).startswith("wait")
    Operation.objects.filter(pk=operation.pk).update(wake_at=None)
    engine.run_step(operation.pk)
    Operation.objects.filter(pk=operation.pk).update(wake_at=None)
    assert engine.run_step(operation.pk).startswith("failed")
    operation.refresh_from_db()
    assert operation.status == "failed" and operation.error_code == "attempts"
    assert "RuntimeError: boom" in operation.log_lines.filter(level="error").first().text


def test_no_work_runs_on_a_host_whose_key_changed(delivered):
    host = make_host()
    operation = engine.start("test.story", host=host)
    Host.objects.filter(pk=host.pk).update(host_key_state=Host.KeyState.CHANGED)
    engine.run_step(operation.pk)
    operation.refresh_from_db()
    assert (operation.status, operation.error_code) == ("failed", "host_key_changed")
    assert operation.state == {}


def test_a_passed_deadline_fails_the_operation(delivered):
    operation = engine.start("test.story")
    Operation.objects.filter(pk=operation.pk).update(
        deadline=timezone.now() - timedelta(seconds=1))
    engine.run_step(operation.pk)
    operation.refresh_from_db()
    assert (operation.status, operation.error_code) == ("failed", "deadline")


def test_cancel_ends_an_active_operation(delivered, operator):
    operation = engine.start("test.story", user=operator)
    engine.cancel(operation, "changed my mind")
    operation.refresh_from_db()
    assert (operation.status, operation.error) == ("cancelled", "changed my mind")
    assert engine.run_step(operation.pk).startswith("not claimable")


def test_a_kind_that_winds_down_is_asked_woken_and_ends_cancelled(delivered):
    operation = engine.start("test.careful")
    engine.run_step(operation.pk)
    operation.refresh_from_db()
    assert operation.status == "waiting" and operation.wake_at > timezone.now()
    delivered.clear()

    engine.cancel(operation, "stop please")
    engine.cancel(operation, "and again")  # asked already: no second request
    operation.refresh_from_db()
    assert (operation.status, operation.wake_at, delivered) == ("waiting", None,
                                                                 [operation.pk])
    assert operation.state[engine.CANCEL_REQUESTED] == "stop please"
    assert engine.run_step(operation.pk).startswith("next: put_back")
    engine.run_step(operation.pk)
    operation.refresh_from_db()
    assert (operation.status, operation.error_code, operation.error) == (
        "cancelled", "cancelled", "stop please; put back")
    assert "put back" in operation.log_lines.values_list("text", flat=True)


def test_a_cancel_asked_while_a_step_runs_outlives_the_step(delivered):
    operation = engine.start("test.careful")
    claimed = engine._claim(operation.pk, "busy-worker")
    engine.cancel(operation, "stop please")
    assert Operation.objects.get(pk=operation.pk).status == "running"  # not ended under it
    engine._record(claimed, "busy-worker", engine.Wait(30))
    operation.refresh_from_db()
    # The step's own state did not hold the request; the row keeps it, and the wait is
    # cut short so that the next step hears it now.
    assert operation.state[engine.CANCEL_REQUESTED] == "stop please"
    assert operation.status == "waiting" and operation.wake_at <= timezone.now()


def test_a_kind_that_winds_down_ends_at_once_when_no_step_ran(delivered):
    operation = engine.start("test.careful")
    engine.cancel(operation, "never mind")
    operation.refresh_from_db()
    assert (operation.status, operation.error) == ("cancelled", "never mind")


def test_waiting_is_not_failing_but_retrying_is(delivered, settings):
    settings.POZOL = {**settings.POZOL, "OPERATION_MAX_ATTEMPTS": 2}
    operation = engine.start("test.story")
    engine.run_step(operation.pk)
    for _ in range(3):  # more waits than attempts allowed
        Operation.objects.filter(pk=operation.pk).update(wake_at=None)
        claimed = engine._claim(operation.pk, "poller")
        engine._record(claimed, "poller", engine.Wait(1))
    operation.refresh_from_db()
    assert (operation.status, operation.attempts) == ("waiting", 0)
