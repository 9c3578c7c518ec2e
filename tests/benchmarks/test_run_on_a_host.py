"""A real pgbench run on a real test host, end to end: initialise, run detached,
poll progress, sample meminfo, read WAL, collect; then a second run and a
validation between the two. Figures are printed (run with -s to see them)."""

import re

import pytest

from apps.benchmarks import services
from apps.ops.models import Operation
from tests.driving import drive
from tests.integration.conftest import fresh_ssh_pool, register, run_on  # noqa: F401

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

PARAMS = {"clients": 2, "threads": 1, "duration": 5, "init": True, "scale": 1}


def drive_in_real_time(operation: Operation) -> Operation:
    """Polling about twice a second, as a worker would once a second: the run
    takes its real time on the host."""
    return drive(operation, limit=400, pause=0.5)


def printed_tps(fleet_host, host, operation) -> float:
    """The tps line of pgbench's own output, read on the host independently."""
    out = run_on(fleet_host, f"cat {host.work_dir}/op{operation.pk}-pgbench.out")
    return float(re.search(r"^tps = ([\d.]+) ", out, re.M)[1])


def test_pgbench_runs_end_to_end_and_two_runs_validate(fleet_hosts, delivered):
    fleet_host = fleet_hosts[0]
    host = register(fleet_host)
    assert drive(host.operations.get()).status == "succeeded"

    first = services.run_benchmark(host, None, PARAMS)
    operation = drive_in_real_time(first.operation)
    assert operation.status == "succeeded", operation.error
    first.refresh_from_db()
    summary, series = first.summary, first.series
    print(f"\nrun 1: {summary['tps']} tps, latency {summary['latency_avg_ms']} ms, "
          f"{summary['transactions']} transactions, pgbench {summary['version']}, "
          f"WAL {first.wal_bytes_after - first.wal_bytes_before} bytes, "
          f"{first.wal_bytes_per_transaction:.0f} bytes/tx ({first.wal_source})\n"
          f"series t={series['t']}\n tps={series['tps']}\n dirty={series['dirty_bytes']}\n"
          f" writeback={series['writeback_bytes']}")

    assert summary["tps"] > 0
    assert summary["tps"] == printed_tps(fleet_host, host, operation)
    assert (summary["clients"], summary["threads"], summary["duration_s"]) == (2, 1, 5)
    assert summary["scale"] == 1 and summary["version"].startswith("15")
    assert len(summary["per_statement"]) == 11
    assert len(series["t"]) >= 3 and all(tps > 0 for tps in series["tps"])
    assert len(series["tps"]) == len(series["latency_ms"]) == len(series["t"])
    assert [v for v in series["dirty_bytes"] if v is not None]
    assert [v for v in series["writeback_bytes"] if v is not None]
    assert first.wal_source == "pg_stat_wal" and first.wal_bytes_per_transaction > 0
    assert operation.progress == 100
    started = operation.log_lines.filter(text__contains=f" as detached unit op{operation.pk}-")
    units = [line.text for line in started]
    assert len(units) == 3  # init, pgbench and the sampler, each started once
    # What ran, one line each: the pgbench command line, no wrapper or sampler script.
    assert any(unit.startswith("$ pgbench -h ") and " -c 2 -j 1 -T 5 " in unit for unit in units)
    assert not [line for line in operation.log_lines.all()
                if "\n" in line.text or "awk" in line.text or "trap" in line.text]

    second = services.run_benchmark(host, None, {**PARAMS, "init": False})
    assert drive_in_real_time(second.operation).status == "succeeded"
    second.refresh_from_db()
    validation = services.validate(first, second, "same settings twice")
    print(f"run 2: {second.tps} tps; ratios tps {validation.tps_ratio:.3f}, latency "
          f"{validation.latency_ratio:.3f}, WAL/tx {validation.wal_per_tx_ratio:.3f}")
    assert validation.tps_ratio == pytest.approx(second.summary["tps"] / summary["tps"])
    assert validation.latency_ratio == pytest.approx(
        second.summary["latency_avg_ms"] / summary["latency_avg_ms"])
    assert validation.wal_per_tx_ratio == pytest.approx(
        second.wal_bytes_per_transaction / first.wal_bytes_per_transaction)
    assert validation.same_workload  # init is not part of the workload
