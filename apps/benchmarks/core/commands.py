"""The remote commands of a benchmark: templates whose every value is validated and quoted.

Everything runs as the cluster's owner over the cluster's unix socket, through
apps.remote.cluster, as discovery and tuning do.
"""

from __future__ import annotations

from apps.remote.cluster import ClusterTarget
from apps.remote.commands import Command, InvalidValue, abs_path, integer, script
from apps.remote.facts import pgbench as facts

SAMPLER_GRACE_SECONDS = 10  # the sampler ends by itself this long after the run should have
# pgbench's query protocols (-M) and workloads, each with the label the UI shows.
PROTOCOLS = {"simple": "simple", "extended": "extended", "prepared": "prepared"}
MODES = {"tpcb": "TPC-B", "select-only": "select only"}



def initialise(target: ClusterTarget, scale: int) -> Command:
    """`pgbench -i -s SCALE DB`: drops and re-creates the pgbench tables."""
    return target.client("pgbench", "-i", "-s", integer(scale, minimum=1, maximum=10000),
                         target.conninfo)


def wal_bytes(target: ClusterTarget, server_version_num: int | None) -> Command:
    return target.psql(facts.wal_query(server_version_num))


def run(target: ClusterTarget, *, clients: int, threads: int, duration: int, mode: str,
        protocol: str) -> Command:
    """pgbench with a progress line a second (stderr) and per-statement latencies (-r).

    The `pozol-start <epoch>` line it writes first lets the meminfo samples be
    placed on pgbench's own clock (its progress times count from its start).
    """
    if protocol not in PROTOCOLS:
        raise InvalidValue("query protocol", protocol, f"one of {', '.join(PROTOCOLS)}")
    if mode not in MODES:
        raise InvalidValue("benchmark mode", mode, f"one of {', '.join(MODES)}")
    clients = integer(clients, minimum=1, maximum=1000)
    pgbench = target.client(
        "pgbench", "-c", clients, "-j", integer(threads, minimum=1, maximum=clients),
        "-T", integer(duration, minimum=1, maximum=3600), "--progress=1", "-M", protocol,
        *(["-S"] if mode == "select-only" else []), "-r", target.conninfo)
    return script('echo "pozol-start $(date +%s.%N)" >&2; exec {pgbench}', pgbench=pgbench,
                  shown=pgbench.shown)


# One line a second, `<epoch> <Dirty kB> <Writeback kB>` (facts.parse_meminfo_samples),
# until the run's status file appears or the time limit passes. Braces for awk are
# doubled: the template's own placeholders are single.
_SAMPLER = """\
end=$(( $(date +%s) + {limit} ))
while [ "$(date +%s)" -lt "$end" ]; do
  echo "$(date +%s.%N) $(awk '/^Dirty:/ {{d = $2}} /^Writeback:/ {{w = $2}} \
END {{print d + 0, w + 0}}' /proc/meminfo)"
  [ -e {until_file} ] && exit 0
  sleep 1
done
"""


def meminfo_sampler(until_file: str, duration: int) -> Command:
    """Samples Dirty and Writeback once a second until `until_file` exists (the
    pgbench unit's status file), and at most duration + SAMPLER_GRACE_SECONDS."""
    limit = integer(duration, minimum=1, maximum=3600) + SAMPLER_GRACE_SECONDS
    until_file = abs_path(until_file)
    return script(_SAMPLER, limit=limit, until_file=until_file,
                  shown=f"sample Dirty and Writeback in /proc/meminfo every second until "
                        f"{until_file} exists (at most {limit} s)")
