"""Provisioning: creating a PostgreSQL cluster laid out for ZFS, and retiring one (issue 24 §1).

Why an app of its own: a new cluster takes a profile (tuning) and retiring one
with its datasets must ask clones, replication, tenants and WAL archiving
whether anything depends on it; fleet may import none of them. So this app owns
`/api/hosts/{id}/clusters/` (the list fleet used to answer, and POST),
`clusters/plan/` and `retire-cluster/`, and calls fleet's own retire for the
plain "forget it" that route always meant.

The plan (core/layout.py) is pure, from the host's typed facts:
- one parent `<pool>/postgres/<name>` with `data` and `wal` children: `zfs
  snapshot -r` of the parent is atomic, which is what snapshot_plan.for_cluster
  looks for, so snapshots, clones and replication work on it unchanged;
- the properties go on `zfs create -o`, so no block is written before them
  (recordsize and compression apply to new blocks only);
- the major must be one a discovered cluster runs: discovery learns binaries
  from running postmasters' /proc/PID/exe and nothing else, and PoZoL does not
  guess paths; the owner is that cluster's owner;
- the port is free of discovered clusters, stopped ones PoZoL remembers and
  live clones; the socket directory and listen_addresses are the host's
  clusters' own (a Debian host's /var/run/postgresql; a test host's), so the
  new one is reached where its neighbours are;
- settings go to postgresql.auto.conf, written whole (idempotent), quoted as
  ALTER SYSTEM quotes, so tuning later reads and changes them the usual way.
  A profile's formulas resolve as tuning's do (core/settings.py): the same
  Variables, with connections and shared_buffers from the profile or
  PostgreSQL's defaults, since there is no pg_settings row yet.

A host whose clusters postgresql-common manages (Debian's packages) gets one of
its own kind: pg_createcluster (as root; it runs initdb as the owner) on PoZoL's
datasets, configuration under /etc/postgresql/<major>/<name>, started by its
postgresql@ unit (pg_ctlcluster without systemd), start.conf auto. Elsewhere
initdb, and pg_ctl as the owner, as clones start; nothing restarts it at boot.

Each step is safe to repeat: datasets are created only when missing, initdb
only without PG_VERSION, the server started only when pg_ctl status says it is
down, and discovery ends the operation so the new cluster has its id.

Retiring with an Operation stops (through the cluster's own control: its unit,
pg_ctlcluster or pg_ctl; a packaged one kept gets start.conf manual, so the next
boot does not start it; one destroyed is pg_dropcluster'ed first), takes the final
snapshot (one per dataset is
consistent once stopped; `-r` of the parent when that covers exactly the
cluster), destroys what holds the cluster alone (the parent when data and WAL
are its only children; never a pool's root, never a dataset another cluster
lives on), then forgets the row and its datasets' rows. A final snapshot with
destroy is refused: it would go with the datasets.
"""
