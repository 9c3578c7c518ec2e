"""Replication: links between hosts, their runs (zfs send | recv host to host), lag.

Replication (apps/replication) copies a cluster's data and WAL datasets, or one
dataset, to a target parent on another host. `ReplicationLink` is the intent
(sources fixed at creation, since the target names derive from them) plus what
the last run found; both hosts' ZFS stay the truth. apps/replication/core is
pure: the link's names and targets, capabilities by dialect and version, the
stream flags and their reasons (core/streams.py: -w for an encrypted dataset,
-c and -L where both ends take them unless the link opts out, -L fixed by the
link's first send, which the link records as `large_blocks_sent`), the planner
(full, incremental from the newest common snapshot matched by guid, resume,
diverged refused unless opted in, holds), the send pipeline and the
receive-only key's forced command, progress and lag. A `replication.run`
operation on the source host: `plan` installs the link's `restrict,command=` line
in the target's authorized_keys (the host's `authorized_keys_file`) and writes
the private key and the target's pinned host key under `<work_dir>/links/<name>/`
on the source (again after anything but a clean run), lists both sides with one
command each (core/listing.py; `encryption` where the host has native
encryption, kept on the link as `source_encryption`), plans, and logs each
dataset's flags and why; `execute` runs the quick steps back to back and a
send as a detached unit on the source, which each later call starts if missing,
waits on and polls in one round trip (detached.follow), so the data never
passes through the control plane and a dying worker does not stop it; `finish`
records the newest common and newest received snapshots and refreshes both
inventories; `prune` applies the link's keep counts on the target
(apps/replication/pruning.py). Holds are written to the link as they are taken,
so an interrupted run's holds are released by the next plan. The newest common
snapshot is protected from every pruner and from a forced destroy through
apps/snapshots/protection.py, which replication fills in at ready() (as it
registers to hear of policy snapshots, for links that run after each one), so
snapshots imports nothing of it. `replication.tick` (beat) starts due links and
raises or resolves the `replication_lag` alert.

A link of a cluster PoZoL archives (apps/wal) carries the archive: `plan` snapshots
it (`@pozol-carry-<link>-<time>`, listed before and after) and the planner sends it
as one more dataset, newest-only, to `<target parent>/pozol_wal/<leaf>` (the key's
wrapper allows it; a change of archive reinstalls the key); `finish` records the
received snapshot, its listing, the floor and the target's window (apps.wal.copies)
and destroys the older carried snapshots on both sides, and the newest is protected
like the common snapshot. A refused archive refuses the link.

Replication links are seen and driven through `/api/replication-links/` (CRUD,
`run/`, `pause/`, `resume/`, `rollback-opt-in/` POST and DELETE, `streams/`: the
flags each dataset is sent with and why, from discovery and the last run), the fleet
page `/replication/`, a page per link and the host page's Replication tab
(links sending from and receiving into the host). All of them call
apps/replication/services.py; the serializers and forms only take each value in
its type and range, and the service's refusals (LinkError, naming the field)
come back beside the fields. A link's name, hosts, sources and target parent
are its identity: a PATCH naming one is passed to the service, which refuses it
saying why, instead of being silently ignored. Every list reads links through
`apps.replication.queries.for_table()` (both hosts without their facts, the
active run's id by a subquery on the operation's `state.link`, compared as
text) and `shown()` adds each link's lag (`services.lag_of`, no query), so a
list is one query however many links there are. The private key is never
serialized. The pages poll while a link runs, as the operations list does.
"""
