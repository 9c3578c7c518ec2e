"""The commands that make, reset and destroy a clone: one round trip each.

Creation is one script, because the floor this has to beat is about 0.4 s
(../shared/test-fleet.md) and each SSH exec costs 0.11-0.14 s here: clone both
datasets, rewrite what a copy must not share (core/layout.py), start
PostgreSQL, then give the clone's role its password. The password never
appears on a command line: the SQL that sets it comes on the script's stdin
(kept on fd 3, everything else reads /dev/null) and goes to psql.

`pg_ctl -w start` returns once the pid file says "ready" or "standby", and
PostgreSQL 15 writes "standby" when crash recovery starts (a clone of a live
cluster always recovers), so with hot_standby off the first connection would be
refused: the script waits for pg_isready before it sets the password.

The clone's role logs in with that password, is never a superuser (a superuser
runs programs on the host: COPY ... PROGRAM) and, from PostgreSQL 14, reads and
writes every table (pg_read_all_data, pg_write_all_data). A member who names an
existing role (the application's) gets that role, with its own privileges.
"""

from __future__ import annotations

import re

from apps.clones.core.layout import CloneError, Layout
from apps.remote.commands import (
    Command,
    InvalidValue,
    dataset_name,
    integer,
    script,
    zfs_property,
    zfs_property_value,
)

_PASSWORD = re.compile(r"[A-Za-z0-9]{16,128}\Z")

_CREATE = """\
set -e
exec 3<&0 < /dev/null
echo "pozol-mark begin $(date +%s.%N)"
{make_root}
zfs clone -p {properties} {data_snapshot} {data_clone}
{wal_clone_command}
echo "pozol-mark cloned $(date +%s.%N)"
m=$(zfs get -H -o value mountpoint {data_clone})
d="$m"/{data_below}
cd "$d"
rm -f postmaster.pid postmaster.opts standby.signal recovery.signal
rm -rf pg_replslot/*
{wal_link}
printf '%s' {auto_conf} >> postgresql.auto.conf
printf '%s' {hba} > pg_hba.conf
mkdir -p {socket_dir} && chown {owner} {socket_dir} && chmod 700 {socket_dir}
cd /
log() {{ echo "the clone's server log ends:" >&2; tail -n 8 "$m"/pozol-clone.log >&2; }}
runuser -u {owner} -- {pg_ctl} -D "$d" -w -t 120 -l "$m"/pozol-clone.log start > /dev/null \
|| {{ log; exit 1; }}
i=0
until {pg_isready} -q -h {socket_dir} -p {port}; do
  i=$((i + 1)); [ "$i" -ge 2400 ] && {{ log; exit 1; }}; sleep 0.05
done
echo "pozol-mark started $(date +%s.%N)"
runuser -u {owner} -- {psql} -X -At -v ON_ERROR_STOP=1 -h {socket_dir} -p {port} \
-d postgres --set=role={role} <&3 || {{ log; exit 1; }}
"""

# The quota sits on the clone's root dataset, so it covers data and WAL (its children)
# and whatever else the clone writes there (its server log).
_ROOT = """\
zfs list {root} > /dev/null 2>&1 || zfs create -p {root}
zfs set quota={quota} {root}"""

_WAL_CLONE = "zfs clone -p {properties} {wal_snapshot} {wal_clone}"
_WAL_LINK = """\
w=$(zfs get -H -o value mountpoint {wal_clone})/{wal_below}
if [ -L pg_wal ]; then ln -sfn "$w" pg_wal; fi"""

_ROLE_SQL = r"""\set pw '{password}'
SELECT format('CREATE ROLE %I LOGIN', :'role')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role') \gexec
ALTER ROLE :"role" LOGIN NOSUPERUSER PASSWORD :'pw';
SELECT format('GRANT pg_read_all_data, pg_write_all_data TO %I', :'role')
 WHERE current_setting('server_version_num')::int >= 140000 \gexec
"""

# Stop PostgreSQL if it runs (immediate: a clone's data is disposable), then destroy
# the clone's datasets and its socket directory. It is safe to run again, and beside a
# first run still going on the host (its worker died; sshd does not stop a command
# whose client went away): the loop ends once the datasets are gone, whoever destroyed
# them, and a destroy that failed because the other run won is not an error.
# zfs-fuse holds a mount busy for a moment after a stop.
_DESTROY = """\
m=$(zfs get -H -o value mountpoint {data_clone} 2>/dev/null || true)
if [ -n "$m" ] && [ -f "$m"/{data_below}/postmaster.pid ]; then
  cd / && runuser -u {owner} -- {pg_ctl} -D "$m"/{data_below} -m immediate -w stop \
> /dev/null 2>&1 || true
fi
i=0
while zfs list {root} > /dev/null 2>&1; do
  zfs destroy -r {root} && break
  i=$((i + 1)); [ "$i" -ge 40 ] && exit 1; sleep 0.25
done
rm -f {socket_dir}/.s.PGSQL.{port} {socket_dir}/.s.PGSQL.{port}.lock
rmdir {socket_dir} 2> /dev/null || true
"""


def create(layout: Layout, password: str, properties: dict[str, str] | None = None,
           quota: int | None = None) -> Command:
    """The script making the clone. Its datasets carry `pozol:clone=<name>` and
    `properties` (the control plane's identity: apps.drills.reconcile reads them back),
    its root dataset `quota` bytes when given, and its stdout marks when the clones were
    made and PostgreSQL answered (`pozol-mark <what> <epoch>`, read by `marks`)."""
    if not isinstance(password, str) or not _PASSWORD.match(password):
        raise CloneError("password", "A clone password is 16-128 letters and digits.")
    origin = layout.origin
    make_root = Command(":") if quota is None else script(
        _ROOT, root=dataset_name(layout.root), quota=integer(quota, minimum=1))
    options = _options({"pozol:clone": layout.name, **(properties or {})})
    values = {"properties": options, "data_clone": layout.data_clone,
              "data_snapshot": f"{origin.data_dataset}@{layout.snapshot}",
              "data_below": layout.data_below or ".", "auto_conf": layout.auto_conf(),
              "hba": layout.hba(), "socket_dir": layout.socket_dir, "owner": origin.owner,
              "pg_ctl": f"{origin.bin_dir}/pg_ctl", "psql": f"{origin.bin_dir}/psql",
              "pg_isready": f"{origin.bin_dir}/pg_isready",
              "port": layout.port, "role": layout.role, "make_root": make_root}
    if layout.wal_clone:
        wal = {"wal_snapshot": f"{origin.wal_dataset}@{layout.snapshot}",
               "wal_clone": layout.wal_clone, "wal_below": layout.wal_below or "."}
        values["wal_clone_command"] = script(_WAL_CLONE, properties=options,
                                             wal_snapshot=wal["wal_snapshot"],
                                             wal_clone=wal["wal_clone"])
        values["wal_link"] = script(_WAL_LINK, **wal)
    else:
        values["wal_clone_command"] = Command(":")
        values["wal_link"] = Command(":")
    command = script(_CREATE, **values)
    return Command(command.text, secrets=(password,), stdin=_ROLE_SQL.format(
        password=password).encode(),
        shown=f"clone {layout.data_clone} from @{layout.snapshot}, start PostgreSQL on "
              f"port {layout.port}, set the password of role {layout.role}")


def _options(properties: dict[str, str]) -> list[str]:
    options = []
    for name, value in properties.items():
        try:
            options += ["-o", f"{zfs_property(name)}={zfs_property_value(value)}"]
        except InvalidValue as exc:
            raise CloneError("properties", str(exc)) from None
    return options


def marks(stdout: str) -> dict[str, float]:
    """The `pozol-mark <what> <epoch seconds>` lines of the create script's output."""
    found = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "pozol-mark":
            try:
                found[parts[1]] = float(parts[2])
            except ValueError:
                continue
    return found


def destroy(layout: Layout) -> Command:
    origin = layout.origin
    return script(_DESTROY, root=dataset_name(layout.root), data_clone=layout.data_clone,
                  data_below=layout.data_below or ".", owner=origin.owner,
                  pg_ctl=f"{origin.bin_dir}/pg_ctl", socket_dir=layout.socket_dir,
                  port=layout.port,
                  shown=f"stop the clone {layout.name} and destroy {layout.root}")
