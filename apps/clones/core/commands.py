"""The commands that make, reset and destroy a clone: one round trip each
(`create_after` puts the room check and a snapshot "now" in creation's trip).

Creation is one script, because the floor this has to beat is about 0.4 s
(measured on a test host) and each SSH exec costs 0.11-0.14 s here: clone both
datasets, rewrite what a copy must not share (core/layout.py), start
PostgreSQL, then give the clone's role its password. The password never
appears on a command line: the SQL that sets it comes on the script's stdin
(kept on fd 3, everything else reads /dev/null) and goes to psql.

`pg_ctl -w start` returns once the pid file says "ready" or "standby", and
PostgreSQL 15 writes "standby" when crash recovery starts (a clone of a live
cluster always recovers), so with hot_standby off the first connection would be
refused: the script waits for pg_isready before it sets the password.

The clone's role (a member's: any role of the origin, or a new one) can never
reach superuser, server programs or server files, whatever the origin's roles
say (issue 19): it is made NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS,
and every membership edge from it, or from a role it reaches, into a dangerous
role (one with those attributes, pg_execute_server_program, pg_read_server_files,
pg_write_server_files, pg_signal_backend) is revoked in the clone; then a check
that nothing dangerous is reachable fails the script otherwise, so a path the
revocations missed fails the clone instead of handing it out. No other role logs
in but the owner over the socket (pg_hba), so the roles it reaches serve only it.
It reads and writes every table (pg_read_all_data, pg_write_all_data, from 14)
and runs DDL (issue 20): it owns the clone's databases (so, from 15, their public
schema) and is a member of the other roles owning objects, so migrations create
and alter. Objects the superuser owns stay its own.

The clone's PostgreSQL runs as an OS user of its own (core/layout.py says why):
the script refuses a uid that passwd or a group names, that a process runs as or
that owns a file in the clones' datasets, before anything is made; it
then gives that user the clone's datasets (recursively) and socket directory,
0700, and starts PostgreSQL with setpriv. PoZoL's own psql runs as root, naming
the owner role, over the socket directory only root and that user can enter. The
chown is the price: about 0.5 s more per clone for a fresh cluster's 1,300 files
on zfs-fuse, growing with the number of files (not their size).
"""

from __future__ import annotations

import re

from apps.clones.core.layout import CLONES_PARENT, CloneError, Layout
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
{uid_check}
wm=
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
{carry_config}
printf '%s' {auto_conf} >> postgresql.auto.conf
printf '%s' {hba} > pg_hba.conf
mkdir -p {socket_dir}
{confine}
{recovery}
cd /
log() {{ echo "the clone's server log ends:" >&2; tail -n 8 "$m"/pozol-clone.log >&2; }}
{server} {pg_ctl} -D "$d" -w -t 120 -l "$m"/pozol-clone.log start > /dev/null \
|| {{ log; exit 1; }}
i=0
until {pg_isready} -q -h {socket_dir} -p {port}; do
  i=$((i + 1)); [ "$i" -ge 2400 ] && {{ log; exit 1; }}
  # A postmaster that gave up (a replay that ended before its target) removes its pid file.
  [ -f "$d"/postmaster.pid ] || {{ log; exit 1; }}
  sleep 0.05
done
echo "pozol-mark started $(date +%s.%N)"
{client} {psql} -X -At -v ON_ERROR_STOP=1 -h {socket_dir} -p {port} -U {owner} \
-d postgres --set=role={role} <&3 || {{ log; exit 1; }}
{replayed}
"""

# A point-in-time clone (layout.Recovery): a ZFS clone of the archive's snapshot under the
# clone's root, given to the clone's user, named by restore_command; recovery.signal makes
# the start replay to the target and promote (hot_standby is off, so pg_isready answers
# only once promoted).
_RECOVERY = """\
{take_archive_snapshot}
zfs clone -p {properties} {archive_snapshot} {archive_clone}
am=$(zfs get -H -o value mountpoint {archive_clone})
case "$am" in /*) ;; *) echo "{archive_clone} is not mounted" >&2; exit 1;; esac
case "$am" in *[!A-Za-z0-9_./:-]*) echo "cannot name $am in restore_command" >&2; exit 1;; esac
{own_archive}
printf "restore_command = 'cp %s/%%f %%p'\\n" "$am" >> postgresql.auto.conf
: > recovery.signal
{own_signal}"""
# Once promoted the archive clone is not read again: it goes (destroy takes it otherwise;
# zfs-fuse holds a mount busy for a moment after its files were read).
_REPLAYED = """\
i=0
until zfs destroy {archive_clone} > /dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -ge 40 ] && break; sleep 0.25
done
zfs destroy {archive_snapshot} > /dev/null 2>&1 \
|| echo "the archive clone {archive_clone} stays until the clone is destroyed" >&2"""

# On a replication target the archive's snapshot is the link's: only the clone goes.
_REPLAYED_RECEIVED = """\
i=0
until zfs destroy {archive_clone} > /dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -ge 40 ] && break; sleep 0.25
done"""

# Refused before anything is made: a uid someone has. getent asks NSS (passwd, group);
# ps the processes; find the clones' datasets, where another clone's files would be.
# Not the socket directories' parent: a reconciled orphan leaves its (empty) one there,
# and a stale directory gives the next clone with that uid nothing.
_UID_CHECK = """\
u={uid}
if getent passwd "$u" > /dev/null || getent group "$u" > /dev/null; then
  echo "uid $u is a user or group of this host (passwd/group): set another clone uid \
base for this host" >&2; exit 1
fi
if ps -e -o uid= | awk -v u="$u" '$1 == u {{ f = 1 }} END {{ exit !f }}'; then
  echo "uid $u runs processes on this host: stop them, or set another clone uid base" >&2
  exit 1
fi
cm=$(zfs get -H -o value mountpoint {clones_parent} 2> /dev/null || true)
f=
if [ -d "$cm" ]; then f=$(find "$cm" -maxdepth 3 -uid "$u" -print -quit 2> /dev/null || true); fi
if [ -n "$f" ]; then
  echo "uid $u owns $f on this host: remove it, or set another clone uid base" >&2; exit 1
fi"""

# The clone's user owns its datasets and socket directory, 0700: no other clone's user
# enters them, and it enters nothing of the origin's.
_CONFINE = """\
chown -R {uid}:{uid} "$m" && chmod 700 "$m"
if [ -n "$wm" ]; then chown -R {uid}:{uid} "$wm" && chmod 700 "$wm"; fi
chown {uid}:{uid} {socket_dir} && chmod 700 {socket_dir}"""
# The quota sits on the clone's root dataset, so it covers data and WAL (its children)
# and whatever else the clone writes there (its server log).
_ROOT = """\
zfs list {root} > /dev/null 2>&1 || zfs create -p {root}
zfs set quota={quota} {root}"""

# The origin's configuration, copied into the clone (core/layout.py): read, never written.
# The data directory's path goes into the copied postgresql.conf, so it must need no
# quoting there. Without an outside postgresql.conf (only pg_hba/pg_ident are outside, or
# a drill on a replication target, where the origin's files are not) the data
# directory's own is kept, or an empty one made.
_CARRY = """\
case "$d" in *[!A-Za-z0-9_./-]*) echo "cannot name $d in the clone's postgresql.conf" >&2; \
exit 1;; esac
[ -f postgresql.conf ] || : > postgresql.conf
{copy_config}
[ -f pg_ident.conf ] || : > pg_ident.conf
{copy_ident}
printf "\\n# PoZoL clone: its own files, never the origin's\\ndata_directory = '%s'\\n\
hba_file = '%s/pg_hba.conf'\\nident_file = '%s/pg_ident.conf'\\n" "$d" "$d" "$d" \
>> postgresql.conf"""
_COPY_CONFIG = """\
: > postgresql.conf
if [ -f {config_file} ]; then
  cp {config_file} postgresql.conf
  if [ -d {conf_d} ]; then rm -rf conf.d && cp -R {conf_d} conf.d; fi
fi"""
_COPY_IDENT = "if [ -f {ident_file} ]; then cp {ident_file} pg_ident.conf; fi"

_WAL_CLONE = "zfs clone -p {properties} {wal_snapshot} {wal_clone}"
_WAL_LINK = """\
wm=$(zfs get -H -o value mountpoint {wal_clone})
if [ -L pg_wal ]; then ln -sfn "$wm"/{wal_below} pg_wal; fi"""

# A role is dangerous when it is, or gives, what a clone's role must never have.
_DANGEROUS = ("SELECT oid FROM pg_roles WHERE rolsuper OR rolcreaterole OR rolreplication "
              "OR rolbypassrls OR rolname IN ('pg_execute_server_program', "
              "'pg_read_server_files', 'pg_write_server_files', 'pg_signal_backend')")
# Every role `who` reaches through memberships (inherited, SET ROLE or admin alike).
_REACHED = ("WITH RECURSIVE reached(oid) AS (SELECT oid FROM pg_roles WHERE rolname = WHO "
            "UNION SELECT m.roleid FROM pg_auth_members m JOIN reached r "
            "ON m.member = r.oid)")

# On psql's stdin after `\set pw '<password>'`; run by the clone's superuser before the
# role can log in. GRANTED BY names each edge's grantor: from 16 a superuser's REVOKE
# removes only its own grants otherwise (15 and older accept it and ignore it).
_ROLE_SQL = r"""SELECT format('CREATE ROLE %I LOGIN', :'role')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role') \gexec
ALTER ROLE :"role" LOGIN NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'pw';
SELECT format('GRANT pg_read_all_data, pg_write_all_data TO %I', :'role')
 WHERE current_setting('server_version_num')::int >= 140000 \gexec
SELECT format('ALTER DATABASE %I OWNER TO %I', datname, :'role') FROM pg_database
 WHERE NOT datistemplate \gexec
SELECT format('GRANT %I TO %I', o.rolname, :'role') FROM pg_roles o
 WHERE o.oid IN (SELECT refobjid FROM pg_shdepend WHERE deptype = 'o'
                 AND refclassid = 'pg_authid'::regclass)
   AND o.rolname <> :'role' AND o.oid NOT IN (DANGEROUS)
   AND NOT pg_has_role(o.oid, :'role', 'MEMBER')
   AND NOT pg_has_role(:'role', o.oid, 'MEMBER') \gexec
REACHED
SELECT format('REVOKE %I FROM %I GRANTED BY %I CASCADE', g.rolname, m.rolname,
              coalesce(b.rolname, current_user))
  FROM pg_auth_members e JOIN reached r ON e.member = r.oid
  JOIN pg_roles g ON g.oid = e.roleid JOIN pg_roles m ON m.oid = e.member
  LEFT JOIN pg_roles b ON b.oid = e.grantor
 WHERE e.roleid IN (DANGEROUS) \gexec
SELECT set_config('pozol.clone_role', :'role', false) \g /dev/null
DO $check$
DECLARE found text;
BEGIN
  REACHED_IN_DO
  SELECT string_agg(p.rolname, ', ') INTO found FROM reached r JOIN pg_roles p USING (oid)
   WHERE p.oid IN (DANGEROUS);
  IF found IS NOT NULL THEN
    RAISE EXCEPTION 'the clone''s role % still reaches %', current_setting(
      'pozol.clone_role'), found;
  END IF;
END
$check$;
"""
_ROLE_SQL = (_ROLE_SQL.replace("REACHED_IN_DO", _REACHED.replace(
    "WHO", "current_setting('pozol.clone_role')"))
    .replace("REACHED", _REACHED.replace("WHO", ":'role'"))
    .replace("DANGEROUS", _DANGEROUS))


# Stop PostgreSQL if it runs (immediate: a clone's data is disposable), then destroy
# the clone's datasets and its socket directory. It is safe to run again, and beside a
# first run still going on the host (its worker died; sshd does not stop a command
# whose client went away): the loop ends once the datasets are gone, whoever destroyed
# them, and a destroy that failed because the other run won is not an error.
# zfs-fuse holds a mount busy for a moment after a stop.
_DESTROY = """\
m=$(zfs get -H -o value mountpoint {data_clone} 2>/dev/null || true)
if [ -n "$m" ] && [ -f "$m"/{data_below}/postmaster.pid ]; then
  cd / && {server} {pg_ctl} -D "$m"/{data_below} -m immediate -w stop \
> /dev/null 2>&1 || true
fi
{kill_rest}
i=0
while zfs list {root} > /dev/null 2>&1; do
  zfs destroy -r {root} && break
  i=$((i + 1)); [ "$i" -ge 40 ] && exit 1; sleep 0.25
done
rm -f {socket_dir}/.s.PGSQL.{port} {socket_dir}/.s.PGSQL.{port}.lock
rmdir {socket_dir} 2> /dev/null || true
{archive_snapshot}
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
              "port": layout.port, "role": layout.role, "make_root": make_root,
              "server": layout.server_user(), "client": layout.client_user(),
              **_confinement(layout)}
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
    values["carry_config"] = _carry(origin)
    values |= _recovery(layout, options)
    command = script(_CREATE, **values)
    reached = _REACHED_SQL if layout.recovery else ""
    return Command(command.text, secrets=(password,),
                   stdin=(f"\\set pw '{password}'\n" + _ROLE_SQL + reached).encode(),
        shown=f"clone {layout.data_clone} from @{layout.snapshot}, start PostgreSQL on "
              f"port {layout.port}, set the password of role {layout.role}")


SECTION = "pozol-section"
# What runs before the clone in its one round trip, each in a subshell (backup mode's
# script ends with `exit`) reading nothing of the script's stdin (the role SQL, for
# the clone's psql). The listing never stops the clone: the step lists again when it
# finds the snapshots missing from it.
_BEFORE = """\
echo {section} room
( {room} ) < /dev/null || exit 1
echo {section} snapshot
( {snapshot} ) < /dev/null || exit 1
echo {section} listing
( {listing} ) < /dev/null || true
echo {section} clone
{create}"""


def create_after(create_command: Command, *, room: Command | None = None,
                 snapshot: Command | None = None, listing: Command | None = None) -> Command:
    """`create_command` (`create`'s) after the pools' room check and the snapshot it
    clones, with the snapshot's listing, in ONE script: one SSH round trip for a clone
    "now". Its stdout is in sections (`sections` reads them): the last one begun is
    where a failed script stopped, so `room` or `snapshot` made nothing."""
    nothing = Command(":")
    text = script(_BEFORE, section=SECTION, room=room or nothing,
                  snapshot=snapshot or nothing, listing=listing or nothing,
                  create=create_command)
    shown = "; ".join(part.redacted() for part in (room, snapshot, listing, create_command)
                      if part is not None)
    return Command(text.text, secrets=create_command.secrets, stdin=create_command.stdin,
                   shown=f"in one script: {shown}")


def sections(stdout: str) -> dict[str, str]:
    """`create_after`'s output by section, in the order they began."""
    found: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        parts = line.split(" ")
        if len(parts) == 2 and parts[0] == SECTION:
            current = parts[1]
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return {name: "".join(f"{line}\n" for line in lines) for name, lines in found.items()}


# After the role SQL, on the same stdin: where the replay stopped. The last replayed
# transaction's time stays as recovery left it after the promotion.
_REACHED_SQL = ("SELECT 'pozol-reached', coalesce(extract(epoch from "
                "pg_last_xact_replay_timestamp())::text, '');\n")


def _recovery(layout: Layout, options: list[str]) -> dict[str, Command]:
    if layout.recovery is None:
        return {"recovery": Command(":"), "replayed": Command(":")}
    names = {"archive_snapshot": f"{layout.recovery.archive}@{layout.recovery.label}",
             "archive_clone": layout.archive_clone}
    uid = layout.os_uid
    own_archive = (script('chown -R {uid}:{uid} "$am" && chmod 700 "$am"', uid=uid)
                   if uid is not None else Command(":"))
    own_signal = (script("chown {uid}:{uid} recovery.signal postgresql.auto.conf", uid=uid)
                  if uid is not None else script("chown {owner} recovery.signal",
                                                 owner=layout.origin.owner))
    if layout.recovery.received:
        take = script('zfs list {s} > /dev/null 2>&1 || {{ echo "{s} is not on this host '
                      '(a later replication run replaced it): ask again" >&2; exit 1; }}',
                      s=names["archive_snapshot"])
        replayed = script(_REPLAYED_RECEIVED, archive_clone=names["archive_clone"])
    else:
        take = script("zfs list {s} > /dev/null 2>&1 || zfs snapshot {s}",
                      s=names["archive_snapshot"])
        replayed = script(_REPLAYED, **names)
    return {"recovery": script(_RECOVERY, properties=options, own_archive=own_archive,
                               own_signal=own_signal, take_archive_snapshot=take, **names),
            "replayed": replayed}


def reached(stdout: str) -> float | None:
    """The epoch seconds of the last transaction a point-in-time clone replayed (the
    `pozol-reached|<epoch>` line), None when it replayed none."""
    for line in stdout.splitlines():
        if line.startswith("pozol-reached|"):
            value = line.split("|", 1)[1].strip()
            try:
                return float(value) if value else None
            except ValueError:
                return None
    return None


def _carry(origin) -> Command:
    """The copy of an outside configuration into the clone; nothing for one inside."""
    if not origin.external_config:
        return Command(":")
    config = (script(_COPY_CONFIG, config_file=origin.config_file,
                     conf_d=origin.config_file.rsplit("/", 1)[0] + "/conf.d")
              if origin.config_file else Command(":"))
    ident = (script(_COPY_IDENT, ident_file=origin.ident_file) if origin.ident_file
             else Command(":"))
    return script(_CARRY, copy_config=config, copy_ident=ident)


def _confinement(layout: Layout) -> dict[str, Command]:
    """The uid check and the ownership of the clone's files, for its own OS user or (a
    layout made before confinement) for the owner."""
    if layout.os_uid is None:
        return {"uid_check": Command(":"), "confine": script(
            "chown {owner} {socket_dir} && chmod 700 {socket_dir}",
            owner=layout.origin.owner, socket_dir=layout.socket_dir)}
    return {"uid_check": script(_UID_CHECK, uid=layout.os_uid,
                                clones_parent=f"{layout.pool}/{CLONES_PARENT}"),
            "confine": script(_CONFINE, uid=layout.os_uid, socket_dir=layout.socket_dir)}


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


# A confined clone's uid is its own (checked when it was made): whatever still runs as
# it (a program its superuser left behind, a postmaster the stop missed) goes with it,
# so nothing of the clone outlives it or waits for the next clone on its port.
_KILL_REST = """\
for p in $(ps -e -o pid=,uid= | awk -v u={uid} '$2 == u {{ print $1 }}'); do
  kill -KILL "$p" 2> /dev/null || true
done"""


def destroy(layout: Layout) -> Command:
    origin = layout.origin
    # Never for a clone running as the owner (made before confinement): its uid is
    # production's too.
    kill_rest = (script(_KILL_REST, uid=layout.os_uid) if layout.os_uid is not None
                 else Command(":"))
    return script(_DESTROY, root=dataset_name(layout.root), data_clone=layout.data_clone,
                  kill_rest=kill_rest,
                  data_below=layout.data_below or ".", server=layout.server_user(),
                  pg_ctl=f"{origin.bin_dir}/pg_ctl", socket_dir=layout.socket_dir,
                  port=layout.port, archive_snapshot=(
                      script("zfs destroy {s} > /dev/null 2>&1 || true",
                             s=f"{layout.recovery.archive}@{layout.recovery.label}")
                      if layout.recovery and not layout.recovery.received
                      else Command(":")),
                  shown=f"stop the clone {layout.name} and destroy {layout.root}")
