"""Snapshots: the inventory, snapshot now, holds, guarded destroy, rollback, policies.

Snapshots keep an inventory per host (`Snapshot`, the dataset by name, its
natural identity) that one `zfs get -Hp` of the whole host fills
(apps/remote/facts/snapshots.py; clones from each filesystem's `origin`, since
zfs-fuse has no `clones` property); where some snapshot is held and the host is
OpenZFS, `zfs holds -H` of the held ones (in chunks of 200 names) adds the tags
of their holds, while zfs-fuse, which cannot list holds, keeps the count.
Discovery's record step sends `apps.fleet.signals.discovered` with its SSH
session, and snapshots list the host there (one round trip more, in discovery's
log); destroy, hold and release list the host again when done, and "snapshot
now" reads back just the snapshots it made, so ZFS stays the truth. Whether a
snapshot is PoZoL's is its `pozol:owner` user property, set atomically by `zfs
snapshot -o`, never its name. apps/remote/snapshot_plan.py chooses how a
cluster is snapshotted consistently (`-r` on a parent holding only data and
WAL, the multi-snapshot form within one pool, or pg_backup_start/stop around
separate snapshots) and the log says why; the advisor's "no atomic snapshot"
rule asks the same function, so it warns exactly where the engine falls back to
pg_backup_start/stop; apps/snapshots/core/guards.py is the one place that
refuses a destroy (held, has clones, not PoZoL's unless forced), asked by the
service before an operation exists and again by the step against a fresh
listing. The snapshot kinds are not mutating: they must not wait behind a
benchmark, and ZFS serialises its own commands. The exception is
`snapshots.rollback` (a cluster back to one of its pairs: stop, `zfs rollback`
of data and WAL, start detached, wait for a query to answer): it stops
PostgreSQL, so it is mutating and waits its turn.
apps/snapshots/core/rollback.py plans it from a listing (the pair, the newer
snapshots `-r` would destroy); guards.rollback_refusal refuses a broken pair,
newer snapshots without the operator's yes, or a newer one the destroy guards
protect, again in the step before PostgreSQL stops. A failure after one dataset
was rolled back leaves PostgreSQL stopped rather than start data and WAL of two
moments.

Snapshot policies (`SnapshotPolicy`, `PolicyAssignment`; a cluster assigned by
its data directory, its natural identity) feed the pure apps/snapshots/core
(due, plan_prune, preview, stale) from the inventory in
apps/snapshots/policies.py (rows read for the core by
apps/snapshots/pruning.py). The beat task `snapshots.policy_tick` calls
`policies.tick(now)`: per due target it starts one `snapshots.policy` operation
(take, with snapshot now's plan and the policy's properties, then prune against
a fresh listing, re-checking core/guards.py before each destroy and skipping a
refused or busy one). The kind is not mutating, so there is no host lock; one
operation per target is kept by a row lock on the assignment and a check for an
active operation of that assignment. Staleness raises or resolves the host's
`snapshots_stale` alert on each tick.
"""
