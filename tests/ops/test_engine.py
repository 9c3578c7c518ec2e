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
    assert engine._record(claimed, engine.Done({})) == "lease lost; result discarded"
    assert Operation.objects.get(pk=operation.pk).status == "running"


def _expire_and_sweep(operation: Operation) -> None:
    Operation.objects.filter(pk=operation.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert operation.pk in engine.sweep()


def test_only_the_claim_that_holds_the_lease_records_even_in_one_process(delivered):
    # Two threads of one worker process share its name: the claim, not the name, counts.
    operation = engine.start("test.story")
    first = engine._claim(operation.pk, "worker-1")
    _expire_and_sweep(operation)
    second = engine._claim(operation.pk, "worker-1")
    assert engine._record(first, engine.Done({"by": "first"})) == "lease lost; result discarded"
    assert engine._record(second, engine.Done({"by": "second"})).startswith("done")
    operation.refresh_from_db()
    assert (operation.status, operation.result, operation.attempts) == (
        "succeeded", {"by": "second"}, 2)


def test_a_step_longer_than_its_lease_keeps_it_while_it_runs(delivered, settings):
    settings.POZOL = {**settings.POZOL, "OPERATION_LEASE": 1}
    operation = engine.start("test.outlives_lease", state={"seconds": 2.5})
    assert engine.run_step(operation.pk).startswith("done")
    operation.refresh_from_db()
    assert operation.status == "succeeded" and operation.attempts == 1
    assert operation.result["lease_left"] > 0  # renewed under the step, not run out
    assert operation.lease_owner == "" and operation.lease_expires_at is None


def test_a_taken_over_claim_can_no_longer_renew_its_lease(delivered):
    operation = engine.start("test.story")
    first = engine._claim(operation.pk, "worker-1")
    assert engine.renew_lease(operation.pk, first.lease_owner, 60)
    _expire_and_sweep(operation)
    second = engine._claim(operation.pk, "worker-2")
    assert not engine.renew_lease(operation.pk, first.lease_owner, 600)
    assert engine.renew_lease(operation.pk, second.lease_owner, 60)
    expires = Operation.objects.get(pk=operation.pk).lease_expires_at
    assert timedelta(seconds=50) < expires - timezone.now() < timedelta(seconds=61)


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
    engine._record(claimed, engine.Wait(30))
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
        engine._record(claimed, engine.Wait(1))
    operation.refresh_from_db()
    assert (operation.status, operation.attempts) == ("waiting", 0)


def test_an_operation_that_ends_wakes_its_waiter_at_once(delivered):
    waiter = engine.start("test.story", subject="waits")
    engine.run_step(waiter.pk)
    assert engine.run_step(waiter.pk).startswith("wait")  # asleep for 30 s
    child = engine.start("test.refuses", subject="child")
    Operation.objects.filter(pk=child.pk).update(waiter=waiter)
    delivered.clear()

    engine.run_step(child.pk)

    assert Operation.objects.get(pk=child.pk).status == "failed"
    assert delivered == [waiter.pk]
    assert engine.run_step(waiter.pk).startswith("done")


def test_a_waiter_running_a_step_is_not_woken_and_keeps_its_poll(delivered):
    waiter = engine.start("test.story", subject="busy")
    child = engine.start("test.refuses", subject="child")
    Operation.objects.filter(pk=child.pk).update(waiter=waiter)
    delivered.clear()

    engine.run_step(child.pk)  # the waiter is pending, not waiting: nothing to wake

    assert delivered == []
    assert Operation.objects.get(pk=waiter.pk).wake_at is None
