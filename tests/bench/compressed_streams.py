"""Replication with `zfs send -c` and without, on a compressible cluster: bytes on the
wire and seconds, in one run (issue 23's "streams that cost less").

    .venv/bin/python -m tests.bench.compressed_streams [--scale 20] [--rounds 2]
        [--subnet 127.0.96]

Not a test: it prints figures. zfs-fuse takes no -c, so this runs on the OpenZFS VM
host (apps.demo.vm, its cached image: `python -m apps.demo.vm build` makes it), under
two names as two hosts (as tests/vm does): a link between two OpenZFS ends, where -c
is chosen. It fills the guest's packaged PostgreSQL cluster (data and WAL datasets,
lz4 as the pool has it) with `pgbench -i -s SCALE`, snapshots it through PoZoL, then,
interleaved (-c, none, none, -c, ...), --rounds times each: a new link of the cluster
into a fresh target parent with `compressed_streams` on or off, `services.run_now`
timed to the finished operation with a real Celery worker. "bytes" is what the
pipeline's counter saw between `zfs send` and ssh: the stream's size on the wire. The
floor beside it: the bare `zfs send [-c] | wc -c` of the same snapshots on the guest
(no network: the stream's size and the time to produce it).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tests.bench.database import database_of_its_own
from tests.bench.fresh import register, server, wait

DATABASE = "pozol_cbench"


def main() -> None:
    args = _arguments()
    from apps.demo.vm import image, machine

    built = image.cached(image.TRIXIE)
    if built is None:
        raise SystemExit("the OpenZFS VM image is not cached: build it first "
                         "(python -m apps.demo.vm build)")
    with database_of_its_own(server(), DATABASE):
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        from django.core.management import call_command

        from tests.workers import Worker

        call_command("migrate", verbosity=0)
        state = Path(tempfile.mkdtemp(prefix=f"pozol-{DATABASE}-"))
        address, alias = f"{args.subnet}.240", f"{args.subnet}.241"
        worker = None
        try:
            started = time.monotonic()
            host = machine.boot(built, state, address, aliases=(alias,), pool_size="8G")
            machine.provision(host, built.recipe.pg_major, aliases=(alias,))
            print(f"OpenZFS VM ({built.versions}) up in {time.monotonic() - started:.0f} s")
            second = dataclasses.replace(host, name="vm2", address=alias)
            worker = Worker("pozol", DATABASE, state)
            _measure(host, second, args)
        finally:
            if worker:
                worker.stop()
            machine.shutdown(state)
            shutil.rmtree(state, ignore_errors=True)


def _measure(vm, second, args) -> None:
    from apps.demo.fleet.client import ssh
    from apps.ops.models import Operation
    from apps.replication import services
    from apps.snapshots import services as snapshot_services

    ssh(vm, f"cd / && runuser -u postgres -- sh -c 'pgbench -q -i -s {args.scale} pgbench "
            "&& psql -X -q -c CHECKPOINT' > /dev/null 2>&1", timeout=1800)
    source, target = register(vm, "cbench-a"), register(second, "cbench-b")
    cluster = source.clusters.get()
    taken = snapshot_services.snapshot_now(source, cluster=cluster)
    wait(taken.pk)
    label = Operation.objects.get(pk=taken.pk).state["snapshot"]
    ratio = ssh(vm, "zfs get -H -o value compressratio,used tank/pg/data tank/pg/wal")
    print(f"cluster: pgbench scale {args.scale}, snapshot @{label}; "
          f"compressratio and used (data, wal): {' '.join(ratio.split())}")

    floor = {}
    for flag in ("-c", ""):
        began = time.monotonic()
        sizes = [int(ssh(vm, f"zfs send {flag} {ds}@{label} | wc -c", timeout=1800))
                 for ds in ("tank/pg/data", "tank/pg/wal")]
        floor[flag or "none"] = (sum(sizes), time.monotonic() - began)

    measured: dict[str, list[tuple[int, float, float]]] = {"-c": [], "none": []}
    for index in range(args.rounds):
        order = ("-c", "none") if index % 2 == 0 else ("none", "-c")
        for kind in order:
            parent = f"tank/cb{index}{'c' if kind == '-c' else 'n'}"
            link = services.create_link(
                name=f"cb-{index}-{'c' if kind == '-c' else 'n'}", source_host=source,
                target_host=target, target_parent=parent, cluster_data_dir=cluster.data_dir,
                interval_minutes=0, compressed_streams=kind == "-c")
            began = time.monotonic()
            operation = services.run_now(link)
            wait(operation.pk, poll=0.5, limit=3600)
            seconds = time.monotonic() - began
            done = Operation.objects.get(pk=operation.pk)
            said = " ".join(done.log_lines.values_list("text", flat=True))
            expected = "zfs send -p -c" if kind == "-c" else "zfs send -p -L"
            if expected not in said:
                raise SystemExit(f"the {kind} run did not send as expected ({expected})")
            transfer = done.result["transfer"]
            measured[kind].append((transfer["bytes"], seconds, transfer["seconds"]))
            ssh(vm, f"zfs destroy -r {parent}", timeout=600)

    print(f"\n{'':<22}{'bytes on the wire':>20}{'run s (p50)':>14}{'transfer s':>12}")
    for kind in ("-c", "none"):
        rows = measured[kind]
        print(f"{'PoZoL link ' + kind:<22}{_mib(statistics.median(r[0] for r in rows)):>20}"
              f"{statistics.median(r[1] for r in rows):>14.1f}"
              f"{statistics.median(r[2] for r in rows):>12.1f}")
    for kind in ("-c", "none"):
        size, seconds = floor[kind]
        print(f"{'floor: zfs send ' + kind:<22}{_mib(size):>20}{'':>14}{seconds:>12.1f}")
    on, off = (statistics.median(r[0] for r in measured[k]) for k in ("-c", "none"))
    print(f"\n-c sends {on / off:.2f}x the bytes of a plain send "
          f"(each run: -c {[_mib(r[0]) for r in measured['-c']]}, "
          f"none {[_mib(r[0]) for r in measured['none']]})")


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=20, help="pgbench scale (15 MB each)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--subnet", default="127.0.96",
                        help="the VM's addresses: SUBNET.240 and .241")
    return parser.parse_args()


if __name__ == "__main__":
    main()
