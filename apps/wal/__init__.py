"""WAL archiving that PoZoL owns, and the window of moments a clone can reach (issue 23).

Per cluster, opt in (`/api/wal-archives/`, the host page's WAL tab): `wal.enable`
creates the archive dataset `<pool>/pozol_wal/<data dataset, / as :>` (core/plan.py
says why not beside data and WAL), reads archive_mode, archive_command and
archive_timeout (kept, so `wal.disable` gives them back), writes them by ALTER SYSTEM
and restarts the cluster through its ClusterTarget.control. The archive command copies,
fsyncs and renames, fails when the copy fails and never overwrites a segment.

The routine check is the `wal.tick` beat (WAL_CHECK_INTERVAL, 60 s), and it is not an
Operation: like telemetry's collection it reads each due archive over SSH from the
worker (apps/wal/inspection.py: pg_stat_archiver and the listing in one read-only round
trip, archives read in threads: with the newest transaction in the newest segments, from
the cluster's pg_waldump, where the window ends) and records the listing, the gaps and
the window (apps/wal/core/window.py computes them, pure, from what apps/wal/recorded.py
reads of the database); a gap or failing archiver opens the host's `wal_archive` alert
(alerting.py), which names the cause: the reason the archive command noted in the data
directory for its last failure (core/plan.py; read in the same round trip, kept as
`failure_reason`), and a full archive (its `available` below a segment: a quota or a
full pool). An Operation a minute per archive would be half a
million rows a year for one archive, and would hide the operations an operator must
see. What changes the host is still an Operation: when a read finds segments older
than what the oldest kept snapshot needs, or replay snapshots a removed clone left
(older than STALE_REPLAY, and no clone of them on record), the tick starts a
`wal.check` Operation that reads again, removes them (each `rm` and `zfs destroy` in its log) and
records; that happens when a snapshot ages out, not every minute. A read that fails
(host unreachable) is logged by the worker and leaves the archive as its last check
recorded it: `read_error` (on the WAL tab and in the API) says when the read failed,
why, and how old the shown window is, until a read succeeds. It opens no alert of its
own; the host's unreachable alert already does. "Check now" (API, page) is always a
`wal.check` Operation, since an operator asked for it. PostgreSQL settings are read and
written through apps/remote/alter_system.py, which tuning shares.

A snapshot PoZoL takes of an archiving cluster is marked with the WAL position read
right after it (`WalMark`, through the snapshot engine's `protection.TAKEN`
listeners), which lets a clone to an LSN choose a snapshot safely. `services.choose`
is what a point-in-time clone asks (apps/clones: the moment, an LSN or a
`RestorePoint` PoZoL made with pg_create_restore_point); the check also destroys the
archive snapshots (`@pozol-pitr-<clone>`) a clone's replay left behind when the
orphan reconciler removed that clone.

A table recovery as of a moment (`POST /api/clusters/{id}/recover-table/`, or the
page `/drills/hosts/<id>/recover-table/` linked from the host's Restore drills tab,
apps/drills/table_recovery.py) and a restore drill to a random moment of the window
(`DrillSchedule.target = random_moment`, apps/drills/services.py) reuse the
point-in-time clone path (apps.clones.services.moment_for); the drill passes only when
the replay's last transaction is at or before the moment and within archive_timeout
of it.

Replication links carry the archive (apps/replication's steps): each run of a link
whose source cluster archives snapshots the archive (`@pozol-carry-<link>-<time>`,
core/commands.carry lists it before and after, so the listing is what the snapshot
holds) and sends it beside the cluster. copies.py computes the target's window from
that listing and the target's received snapshots (core/window's `floor`), and chooses
the snapshot a drill on the target replays from; the replay clones the received
archive snapshot and never takes one there. A moment archived since the last read
(or, on a target, since the link's last run) is refused until the next one says it is
in the window.
"""
