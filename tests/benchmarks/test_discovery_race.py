"""A run started while a discovery replaces the host's clusters.

Applying a plan ends with a discovery, and the README starts the next benchmark
right after the plan reads "applied": the two meet. Discovery once deleted the
host's cluster rows and recorded them again; a benchmark that read the old
cluster and committed after that discovery pointed at a row that no longer
existed, and the API answered 500 (an IntegrityError at commit). Discovery now
updates rows in place (and still takes the host's lock, Host.hold_discovered_rows):
both succeed and the benchmark keeps the very cluster it read.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from apps.benchmarks import services
from apps.benchmarks.models import Benchmark
from apps.fleet.models import Host
from apps.fleet.steps import record_facts

PARAMS = {"clients": 4, "threads": 2, "duration": 5}


def _in_thread(call, errors: list) -> threading.Thread:
    def run() -> None:
        try:
            call()
        except Exception as exc:  # what a request would have turned into a 500
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _finished_or_waiting_on_a_lock(thread: threading.Thread, others: int) -> None:
    """Until `thread` has ended or some other connection waits on a row lock."""
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                           "current_database() AND wait_event_type = 'Lock'")
            if cursor.fetchone()[0] >= others:
                return
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first", ["benchmark", "discovery"])
def test_a_benchmark_and_a_discovery_at_once_both_succeed(replayed_host, delivered,
                                                          monkeypatch, first):
    facts = replayed_host.facts
    paused, go = threading.Event(), threading.Event()
    real_start = services.engine.start

    def start_after_a_pause(*args, **kwargs):
        paused.set()
        go.wait(30)
        return real_start(*args, **kwargs)

    errors: list[Exception] = []
    benchmark = lambda: services.run_benchmark(replayed_host, None, dict(PARAMS))  # noqa: E731
    discovery = lambda: record_facts(Host.objects.get(pk=replayed_host.pk), facts)  # noqa: E731
    if first == "benchmark":
        monkeypatch.setattr(services.engine, "start", start_after_a_pause)
        bench_thread = _in_thread(benchmark, errors)
        assert paused.wait(30)
        discovery_thread = _in_thread(discovery, errors)
        _finished_or_waiting_on_a_lock(discovery_thread, 1)
        go.set()
    else:
        # Stop inside discovery's transaction, after the rows are recorded.
        monkeypatch.setattr("apps.fleet.steps._check_pool_capacity",
                            lambda host: (paused.set(), go.wait(30)))
        discovery_thread = _in_thread(discovery, errors)
        assert paused.wait(30)
        bench_thread = _in_thread(benchmark, errors)
        _finished_or_waiting_on_a_lock(bench_thread, 1)
        go.set()
    bench_thread.join(60)
    discovery_thread.join(60)

    assert errors == []
    bench = Benchmark.objects.get()
    clusters = list(Host.objects.get(pk=replayed_host.pk).clusters.all())
    assert len(clusters) == 1
    assert bench.cluster_id == clusters[0].pk
    assert bench.data_dir == clusters[0].data_dir
