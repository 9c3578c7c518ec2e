"""WAL archiving that PoZoL owns, and the window of moments a clone can reach (issue 23).

Per cluster, opt in (`/api/wal-archives/`, the host page's WAL tab): `wal.enable`
creates the archive dataset `<pool>/pozol_wal/<data dataset, / as :>` (core/plan.py
says why not beside data and WAL), reads archive_mode, archive_command and
archive_timeout (kept, so `wal.disable` gives them back), writes them by ALTER SYSTEM
and restarts the cluster through its ClusterTarget.control. The archive command copies,
fsyncs and renames, fails when the copy fails and never overwrites a segment.

`wal.check` (the `wal.tick` beat, WAL_CHECK_INTERVAL) reads pg_stat_archiver and lists
the archive in one round trip, removes the segments older than what the oldest kept
snapshot needs, and records the listing, the gaps and the window
(apps/wal/core/window.py, pure); a gap or failing archiver opens the host's
`wal_archive` alert (alerting.py). A snapshot PoZoL takes of an archiving cluster is
marked with the WAL position read right after it (`WalMark`, through the snapshot
engine's `protection.TAKEN` listeners), which lets a clone to an LSN choose a snapshot
safely. `services.choose` is what a point-in-time clone asks (apps/clones: the
moment, an LSN or a `RestorePoint` PoZoL made with pg_create_restore_point); the
check also destroys the archive snapshots (`@pozol-pitr-<clone>`) a clone's replay
left behind when the orphan reconciler removed that clone.

What is not here yet (issue 23): the archive carried by replication links, a
table recovery or a restore drill to a moment, and the benchmark. The check is an
Operation per archive every WAL_CHECK_INTERVAL (60 s): a moment archived since the
last check is refused until the next one says it is in the window.
"""
