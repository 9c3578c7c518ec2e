"""The full_page_writes and recordsize experiments on a fresh test host, their figures
printed next to the published ones.

    .venv/bin/python -m tests.bench.experiments [--duration 30] [--repetitions 2]
        [--scale 10] [--clients 4] [--subnet 127.0.95]

Not a test: it prints figures. One fresh test host with a 4 GiB pool (a 120 s
full_page_writes=on run wrote about 1.2 GB, issue 12), a real Celery worker, a
throwaway control-plane database (pozol_exp_bench). Both experiments run through the
product's service (what the API's create calls), as one Operation each, with
shared_buffers held at 128MB (zfs-fuse deadlocks with 256MB or more under pgbench, see
tests/bench/oltp_safe.py), data re-initialised before every run, a CHECKPOINT forced every
10 s of every run, and runs in alternating order. Goals on the test host: WAL per
transaction with full_page_writes=off at least 3x lower, with checkpoints crossed; the
recordsize experiment names a winner or says the difference is within the spread.
"""

from __future__ import annotations

import argparse
import os
import time

from tests.bench.fresh import on_fresh_hosts, register

DATABASE = "pozol_exp_bench"
HOLD = [{"layer": "postgres", "key": "shared_buffers", "value": "128MB"}]


def main() -> None:
    args = _arguments()
    on_fresh_hosts(DATABASE, 1, args.subnet, lambda hosts: _measure(hosts[0], args),
                   pool_size=4 << 30)


def _measure(fleet_host, args) -> None:
    host = register(fleet_host, "expbench")
    work = {"scale": args.scale, "clients": args.clients, "threads": max(1, args.clients // 2),
            "duration": args.duration, "checkpoint_every": 10, "reinit": True}
    print(f"\nhost: zfs-fuse test host, {host.facts['cpus']} CPUs; pgbench scale {args.scale}, "
          f"{args.clients} clients, -M prepared, {args.duration} s per run, "
          f"{args.repetitions} repetitions alternating, CHECKPOINT every 10 s, data "
          "re-initialised before every run, shared_buffers held at 128MB")
    fpw = _run(host, "full-page-writes", work, args.repetitions)
    _report_fpw(fpw)
    recordsize = _run(host, "recordsize", work, args.repetitions)
    _report_recordsize(recordsize)


def _run(host, template: str, work: dict, repetitions: int):
    from apps.experiments import services
    from apps.experiments.core.templates import TEMPLATES

    started = time.monotonic()
    held = [*TEMPLATES[template].held, *HOLD]  # the template's own, and shared_buffers
    exp = services.create_experiment(host, None, {"template": template, "workload": work,
                                                  "repetitions": repetitions, "held": held})
    while True:
        exp.refresh_from_db()
        exp.operation.refresh_from_db()
        if not exp.operation.is_active:
            break
        time.sleep(2)
    if exp.operation.status != "succeeded":
        raise SystemExit(f"{template} failed: {exp.operation.error}")
    print(f"\n== {exp.title} (experiment #{exp.pk}, {time.monotonic() - started:.0f} s; "
          f"host restored: {exp.restored}, {exp.key} back to "
          f"{exp.original['varied']['value']!r})")
    result = services.results(exp)
    _table(result)
    print(f"verdict: {result['verdict']['text']}")
    return exp, result


def _table(result: dict) -> None:
    print(f"{'value':>8}{'runs':>6}{'TPS':>18}{'WAL B/tx':>18}{'checkpoints':>13}"
          f"{'compress':>10}{'sync s':>8}")
    for row in result["values"]:
        print(f"{row['value']:>8}{row['tps']['n']:>6}{_pm(row['tps']):>18}"
              f"{_pm(row['wal_per_tx'], 0):>18}{_num(row['checkpoints']['mean'], 1):>13}"
              f"{_num(row['compressratio']['mean'], 2):>10}"
              f"{_num(row['drain_seconds']['mean'], 2):>8}")


def _pm(stat: dict, digits: int = 1) -> str:
    if stat["mean"] is None:
        return "-"
    spread = f" ± {stat['spread']:.{digits}f}" if stat["spread"] is not None else ""
    return f"{stat['mean']:.{digits}f}{spread}"


def _num(value, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _mean(result: dict, value: str, metric: str) -> float | None:
    row = next(r for r in result["values"] if r["value"] == value)
    return row[metric]["mean"]


def _report_fpw(run) -> None:
    _exp, result = run
    on_tps, off_tps = _mean(result, "on", "tps"), _mean(result, "off", "tps")
    on_wal, off_wal = _mean(result, "on", "wal_per_tx"), _mean(result, "off", "wal_per_tx")
    ratio = on_wal / off_wal if on_wal and off_wal else None
    checkpoints = min(r["checkpoints"]["mean"] or 0 for r in result["values"])
    print(f"{'':22}{'published (PG Phriday, Shaun Thomas)':>40}{'ours':>30}")
    print(f"{'off vs on, TPS':22}{'+70%':>40}{f'{100 * (off_tps / on_tps - 1):+.0f}%':>30}")
    print(f"{'WAL, on / off':22}{'7.5x (1.2GB vs 160MB a minute)':>40}"
          f"{(f'{ratio:.1f}x per transaction' if ratio else '-'):>30}")
    goal = ratio is not None and ratio >= 3 and checkpoints >= 1
    print(f"goal (WAL per transaction >= 3x lower with off, checkpoints crossed): "
          f"{'met' if goal else 'NOT met'} ({ratio and round(ratio, 1)}x, at least "
          f"{checkpoints:.0f} checkpoints per run)")


def _report_recordsize(run) -> None:
    _exp, result = run
    t8, t16 = _mean(result, "8K", "tps"), _mean(result, "16K", "tps")
    c8, c128 = _mean(result, "8K", "compressratio"), _mean(result, "128K", "compressratio")
    print(f"{'':22}{'published':>40}{'ours':>30}")
    print(f"{'16K vs 8K, TPS':22}{'+20% (NimbusWS blog)':>40}{f'{100 * (t16 / t8 - 1):+.0f}%':>30}")
    print(f"{'compressratio 128K/8K':22}{'7.59x / 1.71x (PG Phriday)':>40}"
          f"{f'{c128:.2f}x / {c8:.2f}x':>30}")
    print(f"{'recommended':22}{'32K (OpenZFS docs)':>40}"
          f"{(result['verdict']['winner'] or 'within the spread'):>30}")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=30, help="seconds per pgbench run")
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", "127.0.95"))
    return parser.parse_args()


if __name__ == "__main__":
    main()
