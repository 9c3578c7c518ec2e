"""Fleet: hosts, credentials, pools, datasets, clusters, disks, discovery.

The host page and the overview belong to fleet, but what later apps show there
comes through a registry, `apps/fleet/sections.py`, so fleet imports none of
them: in `AppConfig.ready()` an app registers a `Section` (a tab at
`/hosts/<pk>/<id>/`: id, title, order, template, context function; htmx swaps
just the section) and a `Summary` (a fact in the host's header and an overview
column, added to the hosts' own query as annotations, never a query per host).
Tuning registers its tab, the profile/drift summary and the findings summary
(counts kept on `Host.findings_by_severity`, refreshed on discovery and
assignment, so lists never read facts); benchmarks its tab.

Discovery's record step (apps/fleet/recording.py) updates a host's rows in
place under the host's lock (`Host.hold_discovered_rows`), so ids hold: a pool
and a dataset matched by name (facts carry no pool guid), a cluster by its data
directory, a disk by its device name (no serial in the facts). A dataset, pool
or disk gone from the host is deleted; a cluster discovery no longer finds
running (discovery sees postmasters, so a stopped one is not found either)
keeps its row, `running` false and `last_seen_at` kept, and the record step
opens the host's `cluster_down` alert until it runs again or the operator
retires it (`POST /api/hosts/{id}/retire-cluster/`, refused while it runs).
Work that needs it running (a clone, a benchmark, an experiment) is refused
with the reason (a clone request: 409 `cluster_down`, "your cluster is down");
a tenant's cluster list says `cluster_state`. A postmaster whose data dataset
carries `pozol:clone` (a clone, a drill's or a table recovery's; discovery
reads the property with the others) is PoZoL's copy: the facts list it in
`clones`, never among the clusters, so no list, choice, advisor or chart offers
it.

Discovery reads each dataset's `usedbysnapshots` (the space only its snapshots
hold) with its other properties, and its record step raises the host's
`pool_capacity` alert while a pool is fuller than `POZOL_POOL_CAPACITY_ALERT`
percent (default 80), resolving it once none is. The text comes from a pure
function, apps/fleet/capacity.py: the pool, its capacity, and what snapshots
hold there with the largest holders named, so fleet needs nothing of the
snapshots app for it.

Room on a pool is one decision (issue 19 §2), apps/fleet/core/room.py, pure: a
pool's `used`/`available` (its root dataset's), its reserve and the bytes asked
for in, a `Shortage` with the figures (free, reserve, needed) or None out. The
reserve is what an operator keeps free on each pool (`PoolReserve`, keyed by
host and pool name so rediscovery keeps it; bytes, or percent of the pool's
usable space; 10% by default, the usual ZFS advice: copy-on-write slows as a
pool fills), set through `/api/hosts/<id>/pool-reserves/<pool>/` (GET, PUT) and
the "change" link of the host page's pools table. apps/fleet/reserves.py asks
the decision twice: `refusal` from discovery's figures, for the service's 409
(`no_room`) or form error before any Operation starts, and `refusal_in_step`
from the pool read again on the host (`zfs get -Hp used,available`), as the
step's first command; or, for a clone, `guard_in_script`: the same decision
in the host's shell at the head of the clone's own script (one round trip),
its figures printed and read back by `refusal_in_output`. A clone needs
min(its quota, 256 MiB) (a clone's crash recovery rewrote 153 MiB at once), a
"now" snapshot nothing (none is taken on a pool already at its reserve; a
policy's snapshot is never refused), an experiment
`experiments.core.runs.room_needed`, and a replication run the size of its
sends per target pool (`replication.core.progress.receive_sizes`: `zfs
send -nvP` where the source has it, else the listing's estimate: a full send's
`referenced`, an incremental's growth of `referenced` plus the `used` of each
snapshot sent; zfs-fuse has no `-n`), checked on the target by the plan before
anything is held or sent. A restore drill's and a table recovery's clone need
what a clone needs and get the host's per-clone quota
(`drills.services.clone_room`, the state their step reads again on the host
before it clones); a drill refused for room is a failed drill with the figures,
and raises the drill alert, since its backup was not proven. A scheduled
replication run the service refuses for room is recorded, not dropped: the link
reads `refused` with the figures, and `engine.refused` records a failed
operation no worker runs, so the operations list and the `operation_failed`
alert show it.
"""
