from datetime import UTC, datetime, timedelta

import pytest
from django_celery_beat.models import PeriodicTask

from apps.fleet import services
from apps.fleet.models import Host
from apps.ops.schedule import declared, due, ensure_periodic_tasks

pytestmark = pytest.mark.django_db


def test_migrate_leaves_the_sweeper_and_discovery_scheduled(settings):
    tasks = {task.task: task for task in PeriodicTask.objects.all()}
    assert tasks["fleet.discover_all"].interval.every == settings.POZOL["DISCOVERY_INTERVAL"]
    assert tasks["ops.sweep"].interval.every == settings.POZOL["SWEEP_INTERVAL"]
    assert tasks["snapshots.policy_tick"].interval.every == \
        settings.POZOL["SNAPSHOT_POLICY_INTERVAL"]
    assert tasks["replication.tick"].interval.every == \
        settings.POZOL["REPLICATION_TICK_INTERVAL"]
    assert tasks["telemetry.collect"].interval.every == settings.POZOL["TELEMETRY_INTERVAL"]
    assert tasks["telemetry.maintain"].interval.every == \
        settings.POZOL["TELEMETRY_ROLLUP_INTERVAL"]


def test_each_app_declares_its_beat_tasks_under_the_names_operators_know():
    # Operators may have re-timed or disabled these in the admin by name: a renamed one
    # would come back as a second, enabled task.
    assert {p.name: p.task for p in declared()} == {
        "pozol: re-deliver lost and due operation steps": "ops.sweep",
        "pozol: discover every host": "fleet.discover_all",
        "pozol: delete operations past their retention": "ops.purge",
        "pozol: take and prune policy snapshots": "snapshots.policy_tick",
        "pozol: run due replication links, check their lag": "replication.tick",
        "pozol: destroy clones whose time is up": "clones.expire",
        "pozol: check WAL archives": "wal.tick",
        "pozol: run due restore drills": "drills.tick",
        "pozol: find and remove orphan clones": "drills.reconcile",
        "pozol: sample every host's telemetry": "telemetry.collect",
        "pozol: roll telemetry up, prune it": "telemetry.maintain",
        "pozol: evaluate alert rules, send due deliveries": "alerts.tick",
        "pozol: start due pool scrubs": "alerts.scrub_tick",
        "pozol: re-send lost event deliveries": "events.tick",
    }
    names = set(PeriodicTask.objects.values_list("name", flat=True))
    assert {p.name for p in declared()} <= names


def test_work_is_due_when_never_done_or_once_its_interval_has_passed():
    now, hour = datetime(2026, 1, 1, 12, tzinfo=UTC), timedelta(hours=1)
    assert due(None, hour, now)
    assert due(now - hour, hour, now)
    assert not due(now - hour + timedelta(seconds=1), hour, now)


def test_the_collector_runs_on_its_own_queue_and_a_late_round_is_dropped(settings):
    from apps.telemetry.tasks import collect
    from pozol.celery import app

    assert app.amqp.router.route({}, collect.name)["queue"].name == "telemetry"
    assert collect.expires == settings.POZOL["TELEMETRY_INTERVAL"]


def test_a_changed_interval_is_applied_on_the_next_migrate(settings):
    settings.POZOL = {**settings.POZOL, "DISCOVERY_INTERVAL": 600}
    ensure_periodic_tasks()
    ensure_periodic_tasks()
    tasks = PeriodicTask.objects.filter(task="fleet.discover_all")
    assert tasks.count() == 1 and tasks.get().interval.every == 600


def make_host(name: str, state: str) -> Host:
    host = Host(name=name, address="127.0.0.9", credential_kind="pasted", host_key_state=state)
    host.set_private_key("unused")
    host.save()
    return host


def test_scheduled_discovery_skips_unpinned_hosts_and_never_doubles_up(delivered):
    pinned = make_host("pinned", Host.KeyState.PINNED)
    make_host("changed", Host.KeyState.CHANGED)
    make_host("awaiting", Host.KeyState.AWAITING)
    first = services.discover_all()
    again = services.discover_all()
    assert [op.host for op in first] == [pinned]
    assert [op.pk for op in again] == [op.pk for op in first]
    assert all(op.trigger == "schedule" for op in first)
