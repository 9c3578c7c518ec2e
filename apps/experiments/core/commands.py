"""The remote commands of an experiment: templates whose every value is validated and quoted
(apps.remote.commands), run as the cluster's owner where PostgreSQL is involved, except
a custom script's.

A custom pgbench script and its setup are the operator's text, and the owner is a
superuser (COPY ... TO PROGRAM, lo_export, COPY ... TO a file, ALTER SYSTEM and the
server-file functions all work for it; a text check is bypassed by building the
statement in a DO block). So they run as a role made for the experiment (`confine`):
LOGIN and nothing else (NOSUPERUSER, NOCREATEDB, NOCREATEROLE, NOREPLICATION,
NOBYPASSRLS, no membership), owning a database of its own, where the runs happen. It
logs in over the cluster's socket with a password (scram-sha-256) that reaches the
host on stdin only and is kept in a pgpass file of the owner's, mode 600, in the
experiment's directory; a pg_hba line for that role and database alone goes first in
the cluster's pg_hba.conf. `release` removes the line, the database and the role.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.benchmarks.core import commands as bench
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import (
    Command,
    abs_path,
    cmd,
    dataset_name,
    dbname_conninfo,
    integer,
    pg_identifier,
    script,
)

PG_CHECKPOINTER_SINCE = 170000  # PostgreSQL 17 moved the counters to pg_stat_checkpointer
TMP_PREFIX = "/tmp/pozol-exp."
COPY_FILE = "pozol-copy-source.csv"
ROLE_PREFIX = "pozol_exp_"
PASSFILE = "pgpass"


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


def setup(target: ClusterTarget, text: str, copy_file: str,
          confined: Confined | None = None) -> Command:
    """A script's setup SQL as one string for the server (`psql -c`): psql runs no
    meta-command in it (\\!, \\o |cmd, \\gexec anywhere in it are the server's syntax
    errors) and interpolates no variable, so `:'copy_file'` becomes the file's path as
    a SQL literal here (abs_path: no quote can be in it). A custom script's setup runs
    as its `confined` role, in that role's database."""
    literal = "'" + abs_path(copy_file) + "'"
    sql = SETUP_LEAD + text.replace(COPY_FILE_VARIABLE, literal)
    if confined is None:
        return target.psql(sql)
    command = confined.client(target, "psql", "-X", "-At", "-v", "ON_ERROR_STOP=1",
                              "-d", confined.conninfo, "-c", sql)
    return Command(command.text, shown=f"psql -d {confined.role}  (as role {confined.role}):"
                                       f" {' '.join(sql.split())[:300]}")


def checkpointer(target: ClusterTarget, every: int, until_file: str, limit: int) -> Command:
    """CHECKPOINT every `every` seconds until the run's status file exists (at most
    `limit` s): the same cadence for every value, so every run crosses checkpoints."""
    return script(_CHECKPOINTER, every=integer(every, minimum=1, maximum=3600),
                  until_file=abs_path(until_file), limit=integer(limit, minimum=1),
                  checkpoint=target.psql("checkpoint"),
                  shown=f"CHECKPOINT every {every} s during the run")


def pgbench(target: ClusterTarget, workload: dict, script_file: str | None,
            confined: Confined | None = None) -> Command:
    """The built-in TPC-B-like run (apps.benchmarks), or `-n -f FILE` for a stored script
    (as its `confined` role, in that role's database, when it is a custom one)."""
    if script_file is None:
        return bench.run(target, clients=workload["clients"], threads=workload["threads"],
                         duration=workload["duration"], mode=workload["mode"],
                         protocol=workload["protocol"])
    clients = integer(workload["clients"], minimum=1, maximum=1000)
    arguments = (
        "-n", "-f", abs_path(script_file), "-c", clients,
        "-j", integer(workload["threads"], minimum=1, maximum=clients),
        "-T", integer(workload["duration"], minimum=1, maximum=3600), "--progress=1",
        "-M", "simple", "-r")
    if confined is None:
        run = target.client("pgbench", *arguments, target.conninfo)
    else:
        run = confined.client(target, "pgbench", *arguments, confined.conninfo)
    return script('echo "pozol-start $(date +%s.%N)" >&2; exec {run}', run=run, shown=run.shown)


def initialise(target: ClusterTarget, scale: int, confined: Confined | None = None) -> Command:
    """`pgbench -i` (apps.benchmarks), as the `confined` role in its database when given:
    the tables a custom script reads are that role's own."""
    if confined is None:
        return bench.initialise(target, scale)
    return confined.client(target, "pgbench", "-i", "-s",
                           integer(scale, minimum=1, maximum=10000), confined.conninfo)


@dataclass(frozen=True)
class Confined:
    """The role a custom script runs as; its database has its name."""

    role: str
    passfile: str

    def __post_init__(self) -> None:
        if not pg_identifier(self.role).startswith(ROLE_PREFIX):
            raise ValueError(f"not an experiment's role: {self.role}")
        abs_path(self.passfile)

    @classmethod
    def of(cls, operation_id: int, tmp_dir: str) -> Confined:
        return cls(role=f"{ROLE_PREFIX}{integer(operation_id, minimum=1)}",
                   passfile=f"{abs_path(tmp_dir)}/{PASSFILE}")

    @property
    def conninfo(self) -> str:
        return dbname_conninfo(self.role)

    @property
    def mark(self) -> str:
        """Ends the role's pg_hba line, so that `release` finds it and no other."""
        return f"#pozol-experiment:{self.role}:"

    def client(self, target: ClusterTarget, program: str, *args: str | int) -> Command:
        """`program` of the cluster's bin_dir, run by the owner's OS user (who may read
        the pgpass file) but logged in as the role, over the cluster's socket."""
        command = cmd("sh", "-c", 'cd / && exec "$@"', "sh", "runuser", "-u", target.owner,
                      "--", "env", f"PGPASSFILE={self.passfile}", f"{target.bin_dir}/{program}",
                      "-h", target.socket_dir, "-p", target.port, "-U", self.role, *args)
        plain = " ".join(str(a) for a in (program, *args))
        return Command(command.text, shown=f"{plain}  (as role {self.role})")


# Run by the owner in the postgres database; the role's name in :"role", its password
# in :'pw' (set by a \set line the script writes from stdin). Dropped first: a step run
# again after its worker died finds them made. INHERIT (the default), for its one
# implicit membership: pg_database_owner, which owns schema public from PostgreSQL 15.
_CONFINE_SQL = r"""
DROP DATABASE IF EXISTS :"role";
DROP ROLE IF EXISTS :"role";
SET password_encryption = 'scram-sha-256';
CREATE ROLE :"role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
  CONNECTION LIMIT 100 PASSWORD :'pw';
CREATE DATABASE :"role" OWNER :"role";
"""

_RELEASE_SQL = r"""
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
 WHERE datname = :'role' OR usename = :'role';
DROP DATABASE IF EXISTS :"role";
DROP ROLE IF EXISTS :"role";
"""

# The cluster's pg_hba.conf rewritten without this role's line (and, to confine, with
# it first), keeping the file's owner and mode; then a reload.
_HBA = """f=$(o -d postgres -c 'SHOW hba_file')
[ -f "$f" ] || {{ echo "no pg_hba.conf at $f" >&2; exit 1; }}
t=$(mktemp "$f.pozol.XXXXXX")
{{ {first} grep -v -F -e {mark} "$f" || true; }} > "$t"
chown --reference="$f" "$t" && chmod --reference="$f" "$t" && mv -f "$t" "$f"
o -d postgres -c 'SELECT pg_reload_conf()' > /dev/null
"""

_CONFINE = r"""set -e
cd /
o() {{ runuser -u {owner} -- {psql} -X -At -v ON_ERROR_STOP=1 -h {socket_dir} -p {port} "$@"; }}
IFS= read -r pw
case $pw in *[!0-9a-f]*|'') echo "a bad password on stdin" >&2; exit 1;; esac
{{ printf '%s\n' "\\set pw '$pw'"; cat; }} | o -d postgres -q --set=role={role} -f -
(umask 077 && printf '*:*:%s:%s:%s\n' {role} {role} "$pw" > {passfile})
chown {owner} {passfile}
{hba}
i=0
until {check} > /dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -ge 100 ] && {{ {check} >&2; exit 1; }}
  sleep 0.05
done
"""

_RELEASE = """cd /
o() {{ runuser -u {owner} -- {psql} -X -At -v ON_ERROR_STOP=1 -h {socket_dir} -p {port} "$@"; }}
{hba}
i=0
until printf '%s' {sql} | o -d postgres -q --set=role={role} > /dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -ge 20 ] && {{ printf '%s' {sql} | o -d postgres -q --set=role={role}; exit 1; }}
  sleep 0.25
done
rm -f {passfile}
"""


def confine(target: ClusterTarget, confined: Confined, password: str) -> Command:
    """Make the role and its database, its pgpass file and its pg_hba line; wait until
    it can log in. `password` (hex) goes on stdin, never on a command line."""
    if not re.fullmatch(r"[0-9a-f]{32,128}", password):
        raise ValueError("an experiment role's password is 32-128 hex digits")
    line = f"local {confined.role} {confined.role} scram-sha-256 {confined.mark}"
    hba = script(_HBA, mark=confined.mark, first=script("printf '%s\\n' {line};", line=line))
    command = script(_CONFINE, owner=target.owner, psql=f"{target.bin_dir}/psql",
                     socket_dir=target.socket_dir, port=target.port, role=confined.role,
                     passfile=confined.passfile, hba=hba,
                     check=confined.client(target, "psql", "-X", "-At", "-d",
                                           confined.conninfo, "-c", "SELECT 1"))
    return Command(command.text, secrets=(password,),
                   stdin=(password + "\n" + _CONFINE_SQL).encode(),
                   shown=f"make role {confined.role} (no superuser, no membership) owning "
                         f"database {confined.role}, and its pg_hba line")


def release(target: ClusterTarget, confined: Confined) -> Command:
    """The role's pg_hba line, database, role and pgpass file gone; safe to run again."""
    hba = script(_HBA, mark=confined.mark, first=Command(""))
    return script(_RELEASE, owner=target.owner, psql=f"{target.bin_dir}/psql",
                  socket_dir=target.socket_dir, port=target.port, role=confined.role,
                  passfile=confined.passfile, hba=hba, sql=_RELEASE_SQL,
                  shown=f"drop database and role {confined.role}, remove its pg_hba line")


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
