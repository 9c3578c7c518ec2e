"""The remote commands of a benchmark: templates whose every value is validated and quoted.

Everything runs as the cluster's owner through `runuser`, over the cluster's
unix socket: peer authentication lets the owner in on a stock cluster without
a password, as discovery does.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.remote.commands import (
    Command,
    InvalidValue,
    abs_path,
    cmd,
    integer,
    pg_identifier,
    script,
)
from apps.remote.discovery import os_user
from apps.remote.facts import pgbench as facts

PSQL_TIMEOUT_SECONDS = 30
SAMPLER_GRACE_SECONDS = 10  # the sampler ends by itself this long after the run should have
PROTOCOLS = ("simple", "extended", "prepared")
MODES = ("tpcb", "select-only")


@dataclass(frozen=True)
class Target:
    """Where a benchmark connects: checked against the naming rules once, here."""

    owner: str
    bin_dir: str
    socket_dir: str
    port: int
    database: str

    @classmethod
    def of(cls, *, owner, bin_dir, socket_dir, port, database) -> Target:
        if not socket_dir:
            raise InvalidValue("socket directory", socket_dir,
                               "the cluster listens on no unix socket (TCP is not tried)")
        return cls(owner=os_user(owner), bin_dir=abs_path(bin_dir),
                   socket_dir=abs_path(socket_dir),
                   port=integer(port, minimum=1, maximum=65535),
                   database=pg_identifier(database))

    def argv(self, program: str, *args: str | int) -> list[str | int]:
        return ["runuser", "-u", self.owner, "--", f"{self.bin_dir}/{program}",
                "-h", self.socket_dir, "-p", self.port, *args]

    def as_owner(self, program: str, *args: str | int) -> Command:
        return cmd(*self.argv(program, *args))


def initialise(target: Target, scale: int) -> Command:
    """`pgbench -i -s SCALE DB`: drops and re-creates the pgbench tables."""
    return target.as_owner("pgbench", "-i", "-s", integer(scale, minimum=1, maximum=10000),
                           target.database)


def wal_bytes(target: Target, server_version_num: int | None) -> Command:
    return cmd("timeout", PSQL_TIMEOUT_SECONDS,
               *target.argv("psql", "-X", "-At", "-d", target.database,
                            "-c", facts.wal_query(server_version_num)))


def run(target: Target, *, clients: int, threads: int, duration: int, mode: str,
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
    pgbench = target.as_owner(
        "pgbench", "-c", clients, "-j", integer(threads, minimum=1, maximum=clients),
        "-T", integer(duration, minimum=1, maximum=3600), "--progress=1", "-M", protocol,
        *(["-S"] if mode == "select-only" else []), "-r", target.database)
    return script('echo "pozol-start $(date +%s.%N)" >&2; exec {pgbench}', pgbench=pgbench)


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
    return script(_SAMPLER, limit=limit, until_file=abs_path(until_file))
