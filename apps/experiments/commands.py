"""The remote commands of an experiment: templates whose every value is validated and quoted
(apps.remote.commands), run as the cluster's owner where PostgreSQL is involved."""

from __future__ import annotations

import re

from apps.benchmarks import commands as bench
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import Command, abs_path, cmd, dataset_name, integer, script

PG_CHECKPOINTER_SINCE = 170000  # PostgreSQL 17 moved the counters to pg_stat_checkpointer
TMP_PREFIX = "/tmp/pozol-exp."
COPY_FILE = "pozol-copy-source.csv"


def snapshot_query(server_version_num: int | None) -> str:
    """WAL position (bytes from 0/0) and checkpoints completed so far, in one row."""
    if server_version_num and server_version_num >= PG_CHECKPOINTER_SINCE:
        counters = "(select num_timed + num_requested from pg_stat_checkpointer)"
    else:
        counters = "(select checkpoints_timed + checkpoints_req from pg_stat_bgwriter)"
    return f"select pg_current_wal_lsn() - '0/0'::pg_lsn, {counters}"


def parse_snapshot(text: str) -> tuple[int, int]:
    line = text.strip().splitlines()[0] if text.strip() else ""
    match = re.fullmatch(r"(\d+)(?:\.0+)?\t(\d+)", line.strip())
    if not match:
        raise ValueError(f"not a WAL position and checkpoint count: {line[:80]!r}")
    return int(match.group(1)), int(match.group(2))


def snapshot(target: ClusterTarget, server_version_num: int | None) -> Command:
    return target.psql(snapshot_query(server_version_num))


def compressratio(dataset: str) -> Command:
    return cmd("zfs", "get", "-Hp", "-o", "value", "compressratio", dataset_name(dataset))


def parse_ratio(text: str) -> float | None:
    match = re.fullmatch(r"([\d.]+)x?", text.strip())
    return float(match.group(1)) if match else None


# Dirty + Writeback (kB) at the run's end, then how long `sync` takes to return: the time
# the host needs to put the run's dirty data on disk (syncfs reaches ZFS too). Braces for
# awk are doubled: the template's own placeholders are single.
_DRAIN = """\
awk '/^Dirty:/ {{d = $2}} /^Writeback:/ {{w = $2}} END {{print d + w}}' /proc/meminfo
s=$(date +%s.%N); sync; e=$(date +%s.%N)
echo "$s $e"
"""


def drain() -> Command:
    return script(_DRAIN, shown="read Dirty+Writeback, then time `sync`")


def parse_drain(text: str) -> tuple[int | None, float | None]:
    lines = text.split()
    try:
        return int(lines[0]) * 1024, round(float(lines[2]) - float(lines[1]), 3)
    except (IndexError, ValueError):
        return None, None


_CHECKPOINTER = """\
end=$(( $(date +%s) + {limit} ))
while [ "$(date +%s)" -lt "$end" ]; do
  sleep {every}
  [ -e {until_file} ] && exit 0
  {checkpoint} >/dev/null || true
done
"""


# Sent first so that the -c string never begins with a backslash (psql would run it as
# one meta-command); the server reads it as a comment.
SETUP_LEAD = "/* pozol: the script's setup */\n"
COPY_FILE_VARIABLE = ":'copy_file'"


def setup(target: ClusterTarget, text: str, copy_file: str) -> Command:
    """A script's setup SQL as one string for the server (`psql -c`): psql runs no
    meta-command in it (\\!, \\o |cmd, \\gexec anywhere in it are the server's syntax
    errors) and interpolates no variable, so `:'copy_file'` becomes the file's path as
    a SQL literal here (abs_path: no quote can be in it)."""
    literal = "'" + abs_path(copy_file) + "'"
    return target.psql(SETUP_LEAD + text.replace(COPY_FILE_VARIABLE, literal))


def checkpointer(target: ClusterTarget, every: int, until_file: str, limit: int) -> Command:
    """CHECKPOINT every `every` seconds until the run's status file exists (at most
    `limit` s): the same cadence for every value, so every run crosses checkpoints."""
    return script(_CHECKPOINTER, every=integer(every, minimum=1, maximum=3600),
                  until_file=abs_path(until_file), limit=integer(limit, minimum=1),
                  checkpoint=target.psql("checkpoint"),
                  shown=f"CHECKPOINT every {every} s during the run")


def pgbench(target: ClusterTarget, workload: dict, script_file: str | None) -> Command:
    """The built-in TPC-B-like run (apps.benchmarks), or `-n -f FILE` for a stored script."""
    if script_file is None:
        return bench.run(target, clients=workload["clients"], threads=workload["threads"],
                         duration=workload["duration"], mode=workload["mode"],
                         protocol=workload["protocol"])
    clients = integer(workload["clients"], minimum=1, maximum=1000)
    run = target.client(
        "pgbench", "-n", "-f", abs_path(script_file), "-c", clients,
        "-j", integer(workload["threads"], minimum=1, maximum=clients),
        "-T", integer(workload["duration"], minimum=1, maximum=3600), "--progress=1",
        "-M", "simple", "-r", target.conninfo)
    return script('echo "pozol-start $(date +%s.%N)" >&2; exec {run}', run=run, shown=run.shown)


_WRITE_SCRIPT = """\
set -e
d=$(mktemp -d {prefix}XXXXXX)
chmod 755 "$d"
cat > "$d/script.sql"
chmod 644 "$d/script.sql"
echo "$d"
"""


def write_script() -> Command:
    """A private directory under /tmp holding the script (text on stdin, never on the
    command line), readable by the cluster's owner; prints the directory."""
    return script(_WRITE_SCRIPT, prefix=TMP_PREFIX, shown="write the pgbench script to /tmp")


def remove_dir(path: str) -> Command:
    path = abs_path(path)
    if not path.startswith(TMP_PREFIX) or "/" in path[len("/tmp/"):]:
        raise ValueError(f"not an experiment directory: {path}")
    return cmd("rm", "-rf", "--", path)


def remove_copy_file(data_dir: str) -> Command:
    return cmd("rm", "-f", "--", f"{abs_path(data_dir)}/{COPY_FILE}")
