"""What telemetry costs: a collection round of the fleet against a bare `ssh host true`,
and reading a 48-hour graph from the database.

    .venv/bin/python -m tests.bench.telemetry_cost [--rounds 10] [--subnet 127.0.84]

Not a test: it prints figures side by side (the issue's goal: a round within
1.5x of a bare parallel `ssh host true` over the same hosts). It brings up two
fresh test hosts on a throwaway control-plane database (pozol_telebench,
dropped at the end), registers and discovers them in this process, then:

1. interleaved, --rounds times: a bare `ssh host true` of every host in
   parallel (OpenSSH, a new connection each time, as a cron script would) and
   one after the other, against `collect_fleet()`, the beat task's round
   (every host sampled over the pooled connection, parsed and stored); the
   first round, which connects, is shown apart;
2. 2,880 raw samples (48 h at one a minute) made from the host's real last
   sample with growing counters, then the 48-hour graph read --rounds times:
   the service (query and rates) and the whole API answer (Django's test
   client in this process, serialization included).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

from tests.bench.fresh import on_fresh_hosts

DATABASE = "pozol_telebench"
RAW_SAMPLES = 2880


def main() -> None:
    args = _arguments()
    on_fresh_hosts(DATABASE, 2, args.subnet, lambda fleet_hosts: _measure(
        fleet_hosts, [_registered(h) for h in fleet_hosts], args.rounds), worker=False)


def _registered(fleet_host):
    from apps.fleet import services as fleet
    from apps.ops.models import Operation
    from tests.driving import drive

    host, discovery = fleet.add_host(
        name=fleet_host.name, address=fleet_host.address, port=fleet_host.port,
        user=fleet_host.user, work_dir=fleet_host.work_dir,
        private_key=Path(fleet_host.private_key_path).read_text(),
        expected_fingerprint=fleet_host.host_key_fingerprint)
    if drive(discovery).status != Operation.Status.SUCCEEDED:
        raise SystemExit(f"discovery of {fleet_host.name} failed")
    host.refresh_from_db()
    return host


def _measure(fleet_hosts, hosts, rounds: int) -> None:
    from apps.telemetry import services

    first = _timed(services.collect_fleet)
    parallel, serial, collect = [], [], []
    for _ in range(rounds):
        parallel.append(_timed(lambda: _bare_parallel(fleet_hosts)))
        serial.append(_timed(lambda: [_bare(h) for h in fleet_hosts]))
        collect.append(_timed(services.collect_fleet))
    failed = [t for t in services.collect_fleet() if t.sample is None]
    if failed:
        raise SystemExit(f"a sample failed: {failed[0].error}")
    reads = _graph_reads(hosts[0], rounds)

    n = len(fleet_hosts)
    print(f"\nfleet: {n} zfs-fuse test hosts (PostgreSQL 15), median of {rounds} rounds")
    print(f"{'one collection round of the fleet':58}{'seconds':>10}{'ratio':>8}")
    print(f"{'bare: ssh host true, every host in parallel':58}{_med(parallel):>10.3f}"
          f"{1:>8.2f}")
    print(f"{'bare: ssh host true, one host after the other':58}{_med(serial):>10.3f}"
          f"{_med(serial) / _med(parallel):>8.2f}")
    print(f"{'PoZoL: collect_fleet() (pooled, sample + parse + store)':58}{_med(collect):>10.3f}"
          f"{_med(collect) / _med(parallel):>8.2f}")
    print(f"{'PoZoL: first round (connects to every host)':58}{first:>10.3f}"
          f"{first / _med(parallel):>8.2f}")
    print(f"\n48-hour graph of one host ({RAW_SAMPLES} raw samples){'seconds':>16}{'max':>8}")
    for label, times in reads.items():
        print(f"{label:58}{_med(times):>10.3f}{max(times):>8.3f}")


def _graph_reads(host, rounds: int) -> dict[str, list[float]]:
    from django.contrib.auth import get_user_model
    from django.utils import timezone
    from rest_framework.test import APIClient

    from apps.accounts.models import ApiToken
    from apps.telemetry import services

    end = timezone.now()
    start = end - timedelta(hours=48)
    _fill(host, start)
    user = get_user_model().objects.create_user("bench", is_staff=True)  # an operator
    _, raw = ApiToken.objects.issue(user, "bench")
    api = APIClient(HTTP_HOST="localhost")
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    query = {"from": start.isoformat(), "to": end.isoformat()}
    reads: dict[str, list[float]] = {}
    for metric in ("arc_hit_rate", "tps", "arc_size"):
        reading = services.read(host, metric, start, end)
        points = sum(len(s.points) for s in reading.series)
        if reading.resolution != "raw" or points < RAW_SAMPLES - 2:
            raise SystemExit(f"{metric}: {points} points at {reading.resolution}")
        reads[f"service: read({metric}), {points} points"] = [
            _timed(lambda m=metric: services.read(host, m, start, end)) for _ in range(rounds)]
        reads[f"API: GET .../telemetry/?metric={metric} (JSON)"] = [
            _timed(lambda m=metric: _get(api, host.pk, {**query, "metric": m}))
            for _ in range(rounds)]
    return reads


def _fill(host, start) -> None:
    """RAW_SAMPLES rows a minute apart from the host's real last sample, counters growing."""
    from apps.telemetry.models import RawSample

    [last] = RawSample.objects.filter(host=host).order_by("-taken_at")[:1]
    RawSample.objects.filter(host=host).delete()
    rows = []
    for minute in range(RAW_SAMPLES):
        values = _grown(last.values, minute)
        rows.append(RawSample(host=host, taken_at=start + timedelta(minutes=minute, seconds=30),
                              values=values, missing=last.missing))
    RawSample.objects.bulk_create(rows, batch_size=500)


def _grown(values, minute: int):
    from apps.telemetry.core import series

    if isinstance(values, dict):
        return {key: (_grown(value, minute) if isinstance(value, dict) else
                      value + minute * 100 if series.is_counter((key,)) else
                      value + minute * 60 if key == "uptime" else value)
                for key, value in values.items()}
    return values


def _get(api, host_id: int, query: dict) -> None:
    answer = api.get(f"/api/hosts/{host_id}/telemetry/", query)
    if answer.status_code != 200:
        raise SystemExit(f"API answered {answer.status_code}: {answer.content[:300]!r}")


def _bare_parallel(fleet_hosts) -> None:
    with ThreadPoolExecutor(len(fleet_hosts)) as pool:
        list(pool.map(_bare, fleet_hosts))


def _bare(fleet_host) -> None:
    subprocess.run(["ssh", "-F", "/dev/null", "-i", fleet_host.private_key_path, "-p",
                    str(fleet_host.port), "-o",
                    f"UserKnownHostsFile={fleet_host.known_hosts_path}", "-o", "BatchMode=yes",
                    f"{fleet_host.user}@{fleet_host.address}", "true"], check=True)


def _timed(work) -> float:
    started = time.monotonic()
    work()
    return time.monotonic() - started


def _med(values: list[float]) -> float:
    return statistics.median(values)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="timings of each kind")
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", "127.0.84"),
                        help="loopback /24 of the bench's test hosts (127.0.84)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
