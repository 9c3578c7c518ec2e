"""The collector split across two real worker processes (issue 25: scale out on more
Celery workers): with POZOL_TELEMETRY_SHARDS=2, a real `celery beat` sends shard
0's rounds to the `telemetry` queue and shard 1's to `telemetry-1`; one worker
serves each, as a second machine would (same database, same Redis). Each real
test host is sampled by its shard's worker only; with shard 1's worker stopped
only its host goes stale, its rounds wait in its queue (/metrics shows them),
and the restarted worker drops the rounds that expired instead of running them
all."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from apps.ops import timing
from apps.ops.models import Operation
from apps.ops.schedule import ensure_periodic_tasks
from apps.telemetry.models import HostTelemetry, RawSample
from tests.driving import drive
from tests.integration.conftest import register
from tests.waiting import wait_until
from tests.workers import Beat, Worker

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

INTERVAL = 5  # POZOL_TELEMETRY_INTERVAL's minimum
TOKEN = "shards-test-token"
QUEUES = ("telemetry", "telemetry-1")


def samples(host) -> int:
    return RawSample.objects.filter(host=host).count()


def last_sampled(host):
    return HostTelemetry.objects.get(host=host).last_sample_at


def rounds_logged(worker: Worker, index: int) -> list[str]:
    """The worker's own log lines of shard `index`'s rounds (apps.telemetry.services)."""
    return re.findall(rf"telemetry shard {index} of 2: \d+ of \d+ hosts sampled",
                      worker.output())


def scraped(name: str, label: str, value: str) -> float:
    """One sample of /metrics, as a scraper reads it."""
    answer = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert answer.status_code == 200
    found = re.search(rf'^{name}{{{label}="{re.escape(value)}"}} (\S+)$',
                      answer.content.decode(), re.MULTILINE)
    assert found, f"/metrics has no {name}{{{label}={value!r}}}"
    return float(found.group(1))


def test_two_workers_on_two_queues_each_sample_only_their_shard(
        fleet_hosts, settings, tmp_path, delivered):
    settings.POZOL = {**settings.POZOL, "TELEMETRY_INTERVAL": INTERVAL, "TELEMETRY_SHARDS": 2,
                      "METRICS_TOKEN": TOKEN, "METRICS_ALLOWED_CIDRS": []}
    env = {"POZOL_TELEMETRY_INTERVAL": str(INTERVAL), "POZOL_TELEMETRY_SHARDS": "2"}
    started: list = []

    def start_worker(index: int, generation: int = 0) -> Worker:
        worker = Worker("pozol", f"shard{index}-{generation}", tmp_path,
                        queues=QUEUES[index], concurrency=1, **env)
        started.append(worker)
        return worker

    try:
        # Registered one after the other: consecutive ids, one in each shard.
        hosts = [register(fleet_host, name=f"shard-host-{i}")
                 for i, fleet_host in enumerate(fleet_hosts[:2])]
        for host in hosts:  # discovery in this process: what is proven here is collection
            discovery = drive(host.operations.get())
            assert discovery.status == Operation.Status.SUCCEEDED, discovery.error
        by_shard = {host.pk % 2: host for host in hosts}
        assert set(by_shard) == {0, 1}
        ensure_periodic_tasks()

        first, second = start_worker(0), start_worker(1)
        beat = Beat("pozol", "shards", tmp_path, **env)
        started.append(beat)
        assert wait_until(lambda: all(samples(h) >= 2 for h in hosts), 90, 1), (
            beat.output()[-3000:], first.output()[-3000:], second.output()[-3000:])

        # Each worker ran its own shard's rounds, one host each, and never the other's.
        assert rounds_logged(first, 0) and not rounds_logged(first, 1)
        assert rounds_logged(second, 1) and not rounds_logged(second, 0)
        assert all(line.endswith("1 of 1 hosts sampled")
                   for line in rounds_logged(first, 0) + rounds_logged(second, 1))

        # Shard 1's worker stops (its machine is gone): only its host goes stale.
        second.stop()
        stopped_count, stopped_at = samples(by_shard[1]), last_sampled(by_shard[1])
        kept = samples(by_shard[0])
        assert wait_until(lambda: samples(by_shard[0]) >= kept + 5, 60, 1), first.output()[-3000:]
        assert samples(by_shard[1]) == stopped_count
        assert last_sampled(by_shard[1]) == stopped_at
        assert last_sampled(by_shard[0]) > stopped_at
        # /metrics shows it: that host's sample ages, its rounds wait in its queue.
        age = {index: scraped("pozol_host_sample_age_seconds", "host", by_shard[index].name)
               for index in (0, 1)}
        assert age[1] > 3 * INTERVAL > age[0], age
        assert scraped("pozol_queue_depth", "queue", "telemetry-1") >= 3
        assert scraped("pozol_queue_depth", "queue", "telemetry") <= 1
        backlog = timing.client().llen("telemetry-1")

        # Back: the rounds that expired are dropped, not run one after another.
        before = samples(by_shard[1])
        again = start_worker(1, generation=1)
        assert wait_until(lambda: samples(by_shard[1]) > before, 60, 1), again.output()[-3000:]
        assert wait_until(lambda: timing.client().llen("telemetry-1") == 0, 30, 1)
        assert samples(by_shard[1]) - before <= 2 < backlog, (backlog, again.output()[-3000:])
        assert rounds_logged(again, 1) and not rounds_logged(again, 0)
    finally:
        for process in reversed(started):
            process.stop()
        # Rounds beat sent after the workers stopped: not left for another test's worker.
        timing.client().delete(*QUEUES)
