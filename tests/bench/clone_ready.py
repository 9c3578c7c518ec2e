"""A clone ready to connect to: PoZoL against the floor of the same script, side by side,
for a small database and one 20x larger.

    .venv/bin/python -m tests.bench.clone_ready [--rounds 20] [--scales 5,100]
        [--subnet 127.0.92] [--database pozol_clonebench_<pid>] [--redis-url URL]

Not a test: it prints figures and the issue's goals next to them (p50 under 1.5 s
from the API request to a clone answering a query, within 1.3x of the floor, and the
large/small ratio under 1.3). It brings up one fresh test host with a pool big
enough for pgbench scale 100 per scale (two by default) and a real Celery worker on
a throwaway control-plane database (dropped at the end). The database (by default
named after this process), the test hosts' subnet and the Redis database are
arguments, so two runs on one machine never meet; the header says which were used.
Each host gets its scale of pgbench data and a CHECKPOINT (a clone of a cluster
with WAL not yet checkpointed replays it first: that time is the database's, not
the clone's), then, interleaved, --rounds times, host after host:

- floor: the very script PoZoL's worker sends for a clone "now" (apps.clones.steps.
  one_trip: the pool's room check, `zfs snapshot -r` with the clone's properties, its
  listing, the two `zfs clone` with their properties and quota, the uid checks and
  confinement, the copy's settings and pg_hba, `pg_ctl -w start` as the clone's uid,
  pg_isready, the role SQL on stdin), wrapped as apps.remote.ssh wraps it (PATH,
  LC_ALL=C, `timeout`), through one paramiko connection opened before timing; then
  the same psql query over TCP as the clone's role with its password;
- PoZoL "now": POST /api/clones/ with no snapshot (DRF's whole stack, a real token),
  timed from the request until a psql connection as the clone's role with the
  password the answer shows gets an answer, through the real worker;
- PoZoL from an existing snapshot: the same with the snapshot named.

Each clone (and the floor's snapshot) is destroyed before the next round, untimed.
`uptime`'s load is printed before and after.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import time
from pathlib import Path

from tests.bench import isolation
from tests.bench.fresh import on_fresh_hosts, register, wait

GOAL_SECONDS, GOAL_FLOOR_FACTOR, GOAL_RATIO = 1.5, 1.3, 1.3


def main() -> None:
    args = _arguments()
    print(f"{isolation.apply(args)}; load before: {_load_average()}", flush=True)
    on_fresh_hosts(args.database, len(args.scales), args.subnet,
                   lambda hosts: _measure(hosts, args), pool_size=args.pool_gib << 30)


def _measure(fleet_hosts, args) -> None:
    """One host per scale, loaded first; then the rounds go host after host, so a busy
    moment of the machine falls on every size alike."""
    client = api_client("clone bench")
    sizes, hosts = {}, {}
    for scale, fleet_host in zip(args.scales, fleet_hosts, strict=True):
        sizes[scale] = _load(fleet_host, scale)
        print(f"scale {scale} loaded: {sizes[scale] / 2**20:.0f} MiB", flush=True)
        hosts[scale] = register(fleet_host, f"clonebench{scale}")
    timings = {scale: ([], [], [], []) for scale in args.scales}
    connections = {scale: _open(hosts[scale]) for scale in args.scales}
    for index in range(args.rounds):
        for scale in args.scales:
            host = hosts[scale]
            cluster = host.clusters.get()
            floor, now, existing, scripts = timings[scale]
            floor.append(_floor(connections[scale], host, cluster, f"floor{index}"))
            now.append(_pozol(client, host, cluster, None, f"now{index}", scripts))
            existing.append(_pozol(client, host, cluster, _snapshot(host, cluster),
                                   f"old{index}"))
    _print({scale: (sizes[scale], *timings[scale]) for scale in args.scales}, args.rounds)


def _load(fleet_host, scale: int) -> int:
    """pgbench data of `scale` (replacing the last), checkpointed; the data dataset's
    referenced bytes."""
    from apps.demo.fleet.client import ssh

    connect = (f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port}")
    ssh(fleet_host, f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/"
                    f"pgbench -q -i -s {scale} {connect} {fleet_host.pg_database} && "
                    f"runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -XAt "
                    f"{connect} -d postgres -c CHECKPOINT", timeout=3600)
    return int(ssh(fleet_host, "zfs get -Hp -o value referenced tank/pg/data").strip())


def api_client(label: str):
    """A DRF client with a real token of a new staff user, as automation calls the API."""
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from apps.accounts.models import ApiToken

    user = get_user_model().objects.create_user("bench", is_staff=True)
    _, raw = ApiToken.objects.issue(user, label)
    client = APIClient(HTTP_HOST="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


def _snapshot(host, cluster) -> str:
    from apps.snapshots import services

    time.sleep(1.1)  # names have one-second resolution
    operation = services.snapshot_now(host, cluster=cluster)
    wait(operation.pk, poll=0.02)
    return operation.state["snapshot"]


def _pozol(client, host, cluster, snapshot: str | None, name: str,
           scripts: list[float] | None = None) -> float:
    """Seconds from the request to the clone's answer; `scripts` gets the worker's SSH
    time of its one command, as the operation's log says."""
    from apps.clones import services
    from apps.clones.models import Clone

    body = {"host": host.pk, "cluster": cluster.pk, "name": name}
    if snapshot:
        body["snapshot"] = snapshot
    time.sleep(1.1)
    started = time.monotonic()
    response = client.post("/api/clones/", body, format="json")
    if response.status_code != 202:
        raise SystemExit(f"POST /api/clones/ answered {response.status_code}: "
                         f"{response.content[:500]!r}")
    answer = response.json()
    wait(answer["operation"]["id"], poll=0.01)
    clone = Clone.objects.get(pk=answer["clone"]["id"])
    subprocess.run(["psql", f"postgresql://{clone.role}:{answer['password']}@"
                            f"{clone.layout['listen']}:{clone.port}/postgres", "-XAtc",
                    "select 1"], check=True, capture_output=True)
    seconds = time.monotonic() - started
    if scripts is not None:
        scripts.append(_script_seconds(answer["operation"]["id"]))
    wait(services.destroy_clone(clone).pk)
    return seconds


def _script_seconds(operation_id: int) -> float:
    from apps.ops.models import LogLine

    trips = [line for line in LogLine.objects.filter(operation_id=operation_id)
             .values_list("text", flat=True) if line.startswith("$ ")]
    if len(trips) != 1:
        raise SystemExit(f"operation {operation_id} ran {len(trips)} commands, not one")
    return float(re.search(r" in ([0-9.]+)s$", trips[0].splitlines()[0]).group(1))


def _open(host):
    """A paramiko connection to the host, its key pinned, opened before any timing, on a
    socket set up as PoZoL's are (TCP_NODELAY: without it each exchange waited 40 ms
    for a delayed ACK, and the floor was slower than PoZoL's own command)."""
    import paramiko

    from apps.fleet import credentials
    from apps.remote import keys, ssh

    client = paramiko.SSHClient()
    key = keys.public_key_of(host.host_key)
    client.get_host_keys().add(f"[{host.address}]:{host.port}" if host.port != 22
                               else host.address, key.get_name(), key)
    client.connect(host.address, host.port, username=host.user, allow_agent=False,
                   look_for_keys=False, sock=ssh._open_socket(host.address, host.port, 10),
                   pkey=keys.load_private_key(credentials.decrypt(host.private_key_encrypted)))
    _exec(client, "true")
    return client


def _exec(client, text: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """One exec over the open connection: what `ssh host 'text' < stdin` would do."""
    channel = client.get_transport().open_session()
    channel.exec_command(text)
    if stdin:
        channel.sendall(stdin)
    channel.shutdown_write()
    out, err = channel.makefile("rb").read(), channel.makefile_stderr("rb").read()
    code = channel.recv_exit_status()
    channel.close()
    return code, out.decode(errors="replace"), err.decode(errors="replace")


def _floor(connection, host, cluster, name: str) -> float:
    """The script PoZoL's worker sends for a clone "now" of `cluster`, built by the same
    code from the same inputs (apps.clones.services' own checks and layout), timed over
    the open connection with the query after it; then removed, untimed."""
    from apps.clones import services, steps
    from apps.clones.core import commands
    from apps.clones.models import Clone
    from apps.fleet import credentials
    from apps.remote import ssh
    from apps.snapshots.core import commands as snapshots

    time.sleep(1.1)  # snapshot names have one-second resolution, as for PoZoL's rounds
    origin = services.origin_of(host, cluster)
    snapshot, state = services._source_snapshot(host, cluster, origin, None, name)
    limits = services.settings_of(host)
    quota = limits.clone_quota
    layout = services._layout(host, limits, origin, name, snapshot,
                              services._free_port(host, limits), "dev")
    password = services._password()
    row = Clone(host=host, cluster_data_dir=cluster.data_dir, name=name, snapshot=snapshot,
                port=layout.port, role="dev", layout=layout.stored(), quota=quota,
                password_encrypted=credentials.encrypt(password))
    state |= {"take_snapshot": True, "room": services._room(host, origin, quota)}
    command, chosen = steps.one_trip(row, state, host)
    wrapped = ssh._with_remote_deadline(command, 602, host.user)
    started = time.monotonic()
    code, _, err = _exec(connection, wrapped.text, command.stdin)
    if code != 0:
        raise SystemExit(f"the floor's script failed ({code}): {err[-800:]}")
    subprocess.run(["psql", f"postgresql://dev:{password}@{layout.listen}:{layout.port}/"
                            "postgres", "-XAtc", "select 1"], check=True, capture_output=True)
    seconds = time.monotonic() - started
    removed = ssh._with_remote_deadline(commands.destroy(layout), 180, host.user)
    _exec(connection, removed.text)
    for full_name in chosen.taken:
        _exec(connection, ssh._with_remote_deadline(snapshots.destroy(full_name), 60,
                                                    host.user).text)
    return seconds
def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def _print(results: dict, rounds: int) -> None:
    print(f"\nhosts: zfs-fuse test hosts, one per scale, one Celery worker; {rounds} clones "
          "of each kind and size, seconds from the request to a clone answering a query; "
          f"load after: {_load_average()}")
    print(f"\n{'':50}{'scale':>6}{'MiB':>7}{'p50':>7}{'p95':>7}{'max':>7}")
    for scale, (size, floor, now, existing, scripts) in results.items():
        for label, values in (("floor: PoZoL's script, open connection, query", floor),
                              ("PoZoL: POST /api/clones/, snapshot now", now),
                              ("  of which the worker's one SSH command", scripts),
                              ("PoZoL: POST /api/clones/, existing snapshot", existing)):
            print(f"{label:50}{scale:>6}{size / 2**20:>7.0f}"
                  f"{statistics.median(values):>7.2f}{p95(values):>7.2f}{max(values):>7.2f}")
    print("\ngoals (p50 of PoZoL 'snapshot now'):")
    medians = {scale: (statistics.median(r[1]), statistics.median(r[2]))  # floor, now
               for scale, r in results.items()}
    for scale, (floor, now) in medians.items():
        print(f"  scale {scale}: p50 {now:.2f} s < {GOAL_SECONDS} s: "
              f"{_verdict(now < GOAL_SECONDS)}; {now / floor:.2f}x the floor "
              f"< {GOAL_FLOOR_FACTOR}x: {_verdict(now / floor < GOAL_FLOOR_FACTOR)}")
    if len(medians) >= 2:
        small, large = min(medians), max(medians)
        ratio = medians[large][1] / medians[small][1]
        print(f"  scale {large} / scale {small}: {ratio:.2f} < {GOAL_RATIO}: "
              f"{_verdict(ratio < GOAL_RATIO)}")


def _load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="clones of each kind and size")
    parser.add_argument("--scales", type=lambda text: [int(s) for s in text.split(",")],
                        default=[5, 100], help="pgbench scales, small first (5,100)")
    parser.add_argument("--pool-gib", type=int, default=6,
                        help="the test host's pool in GiB (scale 100 needs about 4)")
    isolation.add_arguments(parser, subnet="127.0.92", database="pozol_clonebench")
    return parser.parse_args()


if __name__ == "__main__":
    main()
