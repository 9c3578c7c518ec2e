"""The collector split into shards (apps.telemetry.shards): which hosts each shard
samples, the queue each shard's round goes to, and the beat entries that send them.
Two real workers on two queues: tests/e2e/test_telemetry_shards.py."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from apps.fleet.models import Host
from apps.ops.schedule import ensure_periodic_tasks
from apps.telemetry import services, shards
from apps.telemetry.models import RawSample
from apps.telemetry.shards import Shard
from apps.telemetry.tasks import collect
from pozol.celery import app
from tests.benchmarks import factories
from tests.telemetry.fixtures import captured
from tests.telemetry.test_services import fake_ssh, pinned  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

NAME = "pozol: sample every host's telemetry"


@pytest.fixture
def sharded(settings):
    def set_count(count: int) -> None:
        settings.POZOL = {**settings.POZOL, "TELEMETRY_SHARDS": count}
    return set_count


def collect_entries() -> dict[str, PeriodicTask]:
    return {task.name: task for task in PeriodicTask.objects.filter(task="telemetry.collect")}


# -- which hosts ------------------------------------------------------------------------

@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_every_host_is_in_exactly_one_shard_the_same_in_python_and_sql(count):
    hosts = [factories.host(f"h{i}") for i in range(10)]
    found = {}
    for index in range(count):
        shard = Shard(index, count)
        ids = set(shard.filter(Host.objects, "pk").values_list("pk", flat=True))
        condition, params = shard.sql("id")
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id FROM fleet_host WHERE {condition}", params)
            assert {row[0] for row in cursor.fetchall()} == ids
        assert ids == {h.pk for h in hosts if shard.holds(h.pk)}
        for pk in ids:
            assert pk not in found  # in one shard only
            found[pk] = index
    assert set(found) == {h.pk for h in hosts}
    assert all(found[h.pk] == h.pk % count for h in hosts)  # the id decides, nothing else


def test_a_shard_out_of_range_is_refused():
    for index, count in ((0, 0), (2, 2), (-1, 2), (0, shards.MAX_SHARDS + 1)):
        with pytest.raises(ValueError, match="0 <= shard < shards"):
            Shard(index, count)


def test_a_shard_s_round_samples_and_writes_only_its_hosts_in_one_batch(fake_ssh):  # noqa: F811
    hosts = [pinned(f"db{i}") for i in range(4)]
    fake = fake_ssh({h.name: [captured(1)[0]] for h in hosts})
    odd = Shard(1, 2)
    with CaptureQueriesContext(connection) as queries:
        taken = services.collect_fleet(odd)
    mine = sorted(h.pk for h in hosts if odd.holds(h.pk))
    assert sorted(t.host_id for t in taken) == mine and len(mine) == 2
    assert sorted(name for name, _ in fake.runs) == sorted(h.name for h in hosts
                                                          if odd.holds(h.pk))
    assert sorted(RawSample.objects.values_list("host_id", flat=True)) == mine
    # The shard's hosts' states written by one UPDATE (from one COPY), not one per host.
    updates = [q["sql"] for q in queries.captured_queries
               if q["sql"].lstrip().startswith("UPDATE telemetry_hosttelemetry")]
    assert len(updates) == 1


# -- which queue ------------------------------------------------------------------------

def queue_of(args=(), kwargs=None) -> str:
    return app.amqp.router.route({}, collect.name, args, kwargs or {})["queue"].name


def test_shard_zero_keeps_the_telemetry_queue_and_shard_k_has_telemetry_k():
    assert queue_of() == "telemetry"  # a round sent without a shard, as before shards
    assert queue_of((0, 1)) == "telemetry"
    assert queue_of((0, 3)) == "telemetry"
    assert queue_of((1, 3)) == "telemetry-1"
    assert queue_of((), {"index": 2, "count": 3}) == "telemetry-2"
    assert app.amqp.router.route({}, "telemetry.maintain", (), {})["queue"].name == "celery"


def test_metrics_lists_every_shard_s_queue(sharded):
    from apps.telemetry.prometheus import _queues

    assert _queues() == ["celery", "telemetry"]
    sharded(3)
    assert _queues() == ["celery", "telemetry", "telemetry-1", "telemetry-2"]


# -- the schedule -----------------------------------------------------------------------

def test_one_shard_is_the_one_entry_of_before(settings):
    [entry] = collect_entries().values()
    assert entry.name == NAME and json.loads(entry.args) == [0, 1]
    assert entry.interval.every == settings.POZOL["TELEMETRY_INTERVAL"]


def test_each_shard_has_a_beat_entry_that_sends_its_round_to_its_queue(sharded, settings):
    sharded(3)
    ensure_periodic_tasks()
    entries = collect_entries()
    assert {name: json.loads(e.args) for name, e in entries.items()} == {
        NAME: [0, 3], f"{NAME}, shard 1": [1, 3], f"{NAME}, shard 2": [2, 3]}
    interval = settings.POZOL["TELEMETRY_INTERVAL"]
    for task in entries.values():
        assert task.interval.every == interval and task.enabled
        # What beat sends: the entry's arguments, through the router.
        entry = ModelEntry(task, app=app)
        index, count = entry.args
        assert queue_of(entry.args, entry.kwargs) == shards.queue(index)
    # Each shard's round is dropped when still queued at the next: per message.
    assert collect.expires == interval


def test_a_lowered_count_deletes_the_shards_past_it_and_keeps_what_operators_set(sharded):
    sharded(3)
    ensure_periodic_tasks()
    PeriodicTask.objects.filter(name=f"{NAME}, shard 1").update(enabled=False)
    every, _ = IntervalSchedule.objects.get_or_create(every=30, period="seconds")
    PeriodicTask.objects.create(name="an operator's own round", task="telemetry.collect",
                                interval=every, args="[]")

    sharded(2)
    ensure_periodic_tasks()
    entries = collect_entries()
    assert set(entries) == {NAME, f"{NAME}, shard 1", "an operator's own round"}
    assert json.loads(entries[f"{NAME}, shard 1"].args) == [1, 2]
    assert not entries[f"{NAME}, shard 1"].enabled  # the operator's choice stays

    sharded(1)
    ensure_periodic_tasks()
    assert set(collect_entries()) == {NAME, "an operator's own round"}
    assert json.loads(collect_entries()[NAME].args) == [0, 1]
