"""Clones: writable copies of a cluster from its snapshots on the same host.

Clones (apps/clones) are writable copies of a cluster made from one of its
snapshots on the same host. `Clone` is the record (the origin cluster by host
and data directory, the snapshot after '@', port, role, the password encrypted
only so a reset can give it back, TTL and protection, and `layout`: the checked
apps/clones/core/layout.py `Layout`, frozen at creation); `CloneHostSettings`
is what the operator allows per host (port range, listen address, the CIDRs
pg_hba lets the role in from; empty means loopback only). apps/clones/core is
pure: the layout (names, `<pool>/pozol_clones/<name>/{data,wal}`, the settings
a copy must not share, pg_hba) and the commands, one script per creation so a
clone costs one SSH round trip, "now" included: the pools' room check, the
snapshot (snapshot now's own plan and properties) and its listing run in the
creation's script (`commands.create_after`), read back by section. `clones.create`
(that one trip; a run again after a dead worker: snapshot now's own step, then
`clone`), `clones.reset`
(the same layout and password on a newer snapshot) and `clones.destroy` are not
mutating; a memory limit per host counts each clone's shared buffers and
connections' work_mem; a failed creation destroys what it made with destroy's
own command. A clone is confined (issue 19), because it runs beside production
on the same host: the role SQL (on psql's stdin) makes the clone's role
NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS, revokes every membership
edge from it or a role it reaches into a dangerous role (those attributes,
pg_execute_server_program, pg_read/write_server_files, pg_signal_backend) and
fails the clone if one is still reachable; it owns the clone's databases and
joins the other object owners, so migrations run. And the clone's PostgreSQL
runs as an OS uid of its own (`CloneHostSettings.uid_base` + port, no passwd
entry, `setpriv`), owning only its datasets and 0700 socket directory, so even
its superuser cannot read the origin's data directory or another clone; PoZoL's
clients run as root with `trust` for the owner role over that socket only
(layout.py says why that is sound). The script refuses a uid passwd/group, a
process or a file in the clones' datasets already has. Layouts saved before (no
`os_uid`) run as the owner, by peer, as they did. Destroy's command is safe to
run again, also beside a first run still going on the host (a remote command
outlives the worker that started it): its retry loop ends once the datasets are
gone, whoever destroyed them, and it removes the socket directory too (and
kills whatever still runs as a confined clone's uid: nothing of it outlives
it). A clone whose operation ended without its step saying how (cancelled, past
its deadline, out of attempts) is failed by the clones tick
(`settle_interrupted`) with the operation's words, so expiry or a retry takes
it rather than it staying `destroying`. The inventory records the clone on its
origin snapshots at once, so no pruner tries them; `clones.expire` (beat)
destroys clones past their TTL unless protected. They are driven through
`/api/clones/` (list, create, retrieve, DELETE) and
`/api/hosts/<id>/clone-settings/` (GET, PUT), the host page's Clones tab and
the pages under `/clones/`, all calling apps/clones/services.py; serializers
and forms only take types and ranges (names, roles and snapshots untrimmed, so
a trailing newline is refused, not removed), and the service's refusals
(CloneRefused, naming the field) come back beside the fields; destroying a
protected clone is a Conflict (409, `protected`). The password is returned
once: in the creation's answer (the API's 202, with `Cache-Control: no-store`),
or on the page the form's POST redirects to, `/clones/<id>/password/`: the
session keeps only the clone's id, and the page decrypts the row's password the
first time it is read in that session and never after, so the password lands in
no URL, session or message and a refresh resubmits nothing. No serializer or
other page shows it or its encrypted form. Lists read
`apps.clones.queries.for_table()`: host and author joined, and the clone's size
(`used` of its `pozol_clones/<name>` dataset from the inventory, unknown until
a listing saw it) by a subquery, so a list is one query however many clones
there are.

A clone may be asked for a moment instead of a snapshot (issue 23): `at` (a time
with its zone), `lsn`, or a `restore_point` PoZoL made. apps.wal chooses the newest
snapshot its archive reaches the moment from (or refuses with the window); the
layout then carries a `Recovery`, and the creation script clones the archive's
snapshot under the clone's root for the clone's own uid (which cannot enter the
origin's archive), writes restore_command and recovery_target_* with promote and
recovery.signal, waits for the promotion (hot_standby is off, so pg_isready answers
only then; a postmaster that gave up removes its pid file and ends the wait), reads
pg_last_xact_replay_timestamp() (`Clone.reached_at`, with a note when it is further
from the moment than archive_timeout) and destroys the archive's clone. A reset
copies a newer snapshot as it is, without the replay.

On a replication link's target (operators: `link` in the request, `Clone.link`), a
clone to a moment is made from the snapshots the link received and the copy of the
archive it carried (services.origin_on_target, moment_on_target: apps.wal.copies
chooses, with the source archive's marks and restore points; drills on a target ask
the same two). The archive's received snapshot is cloned for the replay, never taken
or destroyed (`Recovery.received`); the link's next run keeps it while a clone being
made (or reset) will clone it (`replaying`). A reset makes such a clone again to the
newest moment the target holds, replayed to the end of the carried archive
(`Recovery` target `latest`); 409 once its link is gone. Operators make one on the
target host's Clones tab or `/clones/hosts/<id>/on-target/` (`TargetCloneForm`,
`services.create_on_target`: the link names the cluster), beside each link's window
there as the target's inventory is now (`services.copies_on`,
apps.wal.copies.Copy.window).

Clones have a tenant (apps/clones/tenancy.py): the tenant the origin cluster
was assigned to when the clone was made, kept on the row (`Clone.tenant`), so a
later reassignment does not hand existing clones over. `visible_clones`,
`visible_clusters` and `tenants.services.visible_assignments` scope every clone
page and API view for members (operators see everything); another tenant's
object is absent from the queryset, hence a 404. Quotas are fields of `Tenant`,
checked in `create_clone` with the tenant's row locked (`select_for_update`),
so two requests cannot both take the last place; they count every live clone of
the tenant, whoever made it. `Clone.used`/`used_at`/`active_at` are written by
the clones tick (apps/clones/usage.py: one command per host, pure parsers for
`zfs get -Hp` and /proc/net/tcp, matching a clone's listen address and port;
Unix-socket connections are PoZoL's own and do not count); lists show `used`,
else the inventory's figure. Idle deletion destroys ready, unprotected clones
whose tenant sets `clone_idle_minutes` and whose last client (or readiness) is
older. The audit middleware takes a created object or a started operation from
the view when a page renders its answer instead of redirecting
(`request.audit_created`, `request.audit_operation`); the log joins each
entry's started operation in one query (`audit.services.with_operations`) to
show how it ended. tests/accounts/test_isolation_matrix.py walks every route x
method x six personas (operator, member of A, member of B, tenant admin of A,
revoked token, anonymous) with tenant A's object ids, checks each status and
searches tenant personas' bodies for the other tenant's names.

Each clone gets a ZFS quota on its root dataset `<pool>/pozol_clones/<name>`,
made by the creation script before `zfs clone`, so data, WAL and its server log
count together (`Clone.quota`): the host's `CloneHostSettings.clone_quota` (8
GiB by default, 64 MiB at least), or what its tenant's `max_clone_space` leaves
when that is less. A write past it fails inside the clone (`could not extend
file ... Disk quota exceeded`); production's datasets are untouched. The
snapshots taken for a clone ("now") are recorded on it (`Clone.own_snapshots`)
and destroyed with it (destroy, reset, a failed creation) by
`snapshots.steps.destroy_taken`, all or none, unless
`snapshots.core.guards.cleanup_refusal` keeps them (held, cloned, a link's
newest common snapshot, a policy's); when another clone was made from them it
inherits them instead.
"""
