"""Before/after: apply "OLTP on ZFS (safe)" to a fresh test host and print ratios.

    .venv/bin/python -m tests.bench.oltp_safe [--duration 30] [--clients 4] [--scale 10]
        [--override postgres.shared_buffers=128MB]

Not a test: it prints figures. It brings up one fresh test host, registers it
in a throwaway control-plane database, runs pgbench on the stock host,
applies the profile (restart allowed), runs pgbench again on freshly
initialised data (recordsize and compression apply to newly written data
only), prints the validation, then rolls the plan back (sysctls are the
machine's) and takes everything down.

On zfs-fuse test hosts, pgbench with shared_buffers of 256MB or more
deadlocks the zfs-fuse daemon (seen every time; 128MB never), which the
profile's formula gives on any machine with over 1 GiB of RAM; --override
measures a copy of the profile with that setting held, and says so.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

SUBNET = "127.0.97"


def main() -> None:
    args = _arguments()
    os.environ["POZOL_DATABASE_URL"] = _bench_database()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
    import django

    django.setup()
    from django.core.management import call_command

    from apps.demo.fleet import down, up

    call_command("migrate", verbosity=0)
    state_dir = Path(tempfile.mkdtemp(prefix="pozol-bench-"))
    try:
        fleet_host = up(1, state_dir=state_dir, subnet=SUBNET)[0]
        _measure(fleet_host, args)
    finally:
        down(state_dir)


def _measure(fleet_host, args) -> None:
    from apps.benchmarks import services as benchmarks
    from apps.fleet import services as fleet
    from apps.tuning import services as tuning
    from apps.tuning.models import Profile

    host, discovery = fleet.add_host(
        name="bench", address=fleet_host.address, port=fleet_host.port, user=fleet_host.user,
        work_dir=fleet_host.work_dir, private_key=Path(fleet_host.private_key_path).read_text(),
        expected_fingerprint=fleet_host.host_key_fingerprint)
    _finish(discovery)
    params = {"database": "pgbench", "scale": args.scale, "init": True, "clients": args.clients,
              "threads": args.threads, "duration": args.duration, "mode": "tpcb",
              "protocol": "prepared"}
    host.refresh_from_db()
    before = _run(benchmarks, host, params)

    profile = _profile(tuning, Profile.objects.get(slug="oltp-safe"), args.override)
    tuning.assign(host, profile)
    plan = tuning.make_plan(host)
    _finish(tuning.apply_plan(plan, allow_restart=True))
    _finish(fleet.discover(host))
    host.refresh_from_db()
    after = _run(benchmarks, host, params)

    validation = benchmarks.validate(before, after, profile.name)
    _report(fleet_host, plan, before, after, validation, host)
    _finish(tuning.rollback(plan, allow_restart=True)[1])


def _profile(tuning, safe, overrides: list[str]):
    if not overrides:
        return safe
    settings = safe.current.settings
    for override in overrides:
        path, _, value = override.partition("=")
        layer, _, key = path.partition(".")
        settings[layer][key] = value
    name = f"{safe.name} with {', '.join(overrides)}"
    print(f"measuring a copy: {name}")
    return tuning.create_profile(name=name, settings=settings)


def _run(benchmarks, host, params):
    bench = benchmarks.run_benchmark(host, None, dict(params))
    _finish(bench.operation)
    bench.refresh_from_db()
    return bench


def _finish(operation) -> None:
    from tests.driving import drive

    operation = drive(operation, limit=100_000, pause=0.5)
    if operation.status != "succeeded":
        raise SystemExit(f"{operation.kind} failed: {operation.error}")


def _report(fleet_host, plan, before, after, validation, host) -> None:
    data = host.datasets.get(name=fleet_host.pg_data_dataset)
    print(f"\nprofile: {validation.label}")
    print(f"host: {host.facts['cpus']} CPUs, {host.facts['mem_total'] // 2**30} GiB, "
          f"{host.facts['zfs']['implementation']}; pgbench {before.parameters}")
    print(f"profile changes applied: "
          f"{plan.changes.filter(status='applied').count()} "
          f"(unsupported here: {plan.changes.filter(supported=False).count()})")
    for change in plan.changes.filter(status="applied"):
        where = f"{change.key} ({change.target})" if change.layer == "zfs" else change.key
        print(f"  {change.layer:8} {where:40} {change.before['value']!s:>12} -> "
              f"{change.after}")
    print(f"\n{'':28}{'before':>14}{'after':>14}{'ratio':>9}")
    rows = [("tps", before.summary["tps"], after.summary["tps"], validation.tps_ratio),
            ("latency avg (ms)", before.summary["latency_avg_ms"],
             after.summary["latency_avg_ms"], validation.latency_ratio),
            ("WAL bytes / transaction", before.wal_bytes_per_transaction,
             after.wal_bytes_per_transaction, validation.wal_per_tx_ratio)]
    for name, left, right, ratio in rows:
        print(f"{name:28}{left:>14.1f}{right:>14.1f}{ratio:>9.3f}")
    print(f"data dataset compressratio after: {data.compressratio:.2f}x "
          f"(compression={data.compression}, recordsize={data.recordsize})")


def _bench_database() -> str:
    import psycopg

    from apps.demo.services import postgres_url

    base = postgres_url().rsplit("/", 1)[0]
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute("drop database if exists pozol_bench")
        conn.execute("create database pozol_bench")
    return base + "/pozol_bench"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=30, help="seconds per pgbench run")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--override", action="append", default=[],
                        help="layer.key=value held in a copy of the profile")
    return parser.parse_args()


if __name__ == "__main__":
    main()
