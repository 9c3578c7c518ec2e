"""Restore drills, recovering a dropped table, and the orphan clone reconciler.

Restore drills (apps/drills) reuse the clone engine rather than a second
script. A `DrillSchedule` names a cluster on its host, or a replication link
(the drill then runs on the link's target, from the received datasets laid out
as the source cluster's); a `DrillRun` records the snapshot, the seconds of
each part, the check's first answer line per database, the error and
PostgreSQL's log tail. The service resolves the source when a drill starts (the
newest snapshot name present on every dataset, apps/drills/core/check.py),
builds a clones `Layout` named `pozol-drill-<run>` (a prefix clone names
refuse) on a port taken from the top of the clone range (clones take theirs
from the bottom), with no network in pg_hba, and starts one `drills.run`
operation: its one step runs apps/clones/core/commands.create (whose
`pozol-mark` lines time the clone and the start), the check (query on stdin,
`psql -c`, as a role the check script makes in the clone: NOSUPERUSER,
pg_read_all_data, no CREATE or TEMP, let in by a pg_hba line over the clone's
socket, which PoZoL enters as root naming the owner; `timeout` on the host
around each database's psql; databases listed by oid and reached by a quoted
`dbname='...'` conninfo; the log tail on failure) and destroy, always
destroying before it returns; a re-delivered step destroys the first attempt's
clone first (the clone step does the same, its `began` flag saved before the
script runs). Each run ends in `RESTORE_DRILL_FAILED.raise_or_resolve(host,
...)` (apps/drills/alert_kinds.py) over the last run of every schedule of the
host. `drills.tick` (beat) starts due schedules. The orphan reconciler
(apps/drills/reconcile.py, `drills.reconcile` per host, beat and on demand)
reads `pozol:clone`/`pozol:owner` of everything under `<pool>/pozol_clones` and
the postmasters' data directories in one command; core/orphans.py decides
(unknown to the database, ours, past the grace period, no active operation) and
removes with SIGQUIT to the postmaster, then `zfs destroy -r`.

Recovering a dropped table (lesson 61, apps/drills/table_recovery.py, `POST
/api/snapshots/{id}/recover-table/`) is a drill's clone put to work: one
`drills.recover_table` operation first asks the origin whether `into` exists
(then it fails with code `exists`, nothing cloned), clones the snapshot as a
drill does (`pozol-recover-<random>`, top of the clone range), renames the
table inside the disposable clone, `pg_dump -t` it to a root-only temporary
file (the clone's uid cannot rewrite what the origin's superuser then runs) and
restores that into the origin with `psql --single-transaction`, so the origin
only ever sees a `CREATE TABLE <into>` that rolls back whole if the name was
taken meanwhile or anything fails; the clone is always destroyed and the result
records the rows recovered. The route lives in apps/drills (snapshots never
import drills).

To a moment (issue 23): `POST /api/clusters/{id}/recover-table/` takes `at`, `lsn` or
`restore_point` instead of a snapshot; apps.clones.services.moment_for chooses the
snapshot and the replay (a 400 with the window when the archive does not reach it),
and the recovery's clone is a point-in-time clone (the layout's `Recovery`: the
creation script replays and promotes); the result adds `reached_at`. A drill schedule
with `target = random_moment` draws, at each run, a moment uniformly over the window
its cluster's WAL archive last recorded (services.random_moment), clones to it the
same way, and records `target_time`, `reached_at` and `archive_timeout`; the run
fails (core/check.moment_missed) when the replay applied nothing, went past the
moment, or stopped more than archive_timeout before it, since archiving leaves at
most that much WAL unarchived. A cluster that committed nothing in that time before
the moment fails it too, and the run says so: the drill cannot tell quiet from
missing. Such a schedule needs archiving on (409). For a link it runs on the target:
the moment is drawn in the window the link's last run recorded, and apps.wal.copies
chooses the received snapshot, replayed with the copy of the archive the link carried
(the layout's `Recovery.received`: its received snapshot is cloned, never taken nor
destroyed); a link that has not carried the archive yet is a 409. `run/` takes an
optional `at`: a drill to that moment (a 400 with the window when outside it).
"""
