"""Creating and retiring a cluster as Operations: each step safe to run again.

Create: datasets (the pool's room read again first; their properties set
before anything is written), initdb (as the owner, or pg_createcluster on a
packaged host; checksums on, WAL on its dataset), settings (postgresql.auto.conf)
and start (its unit on a packaged host, else pg_ctl, as PoZoL starts its clones)
in one step, then discovery, so the cluster appears with its id. Retire: stop, a
final snapshot, destroy the datasets, forget the row; each only when asked.
"""

from __future__ import annotations

from django.db import transaction

from apps.fleet import reserves
from apps.fleet import steps as fleet_steps
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, register
from apps.provisioning.core import commands
from apps.provisioning.core.layout import DATA_BELOW, WAL_BELOW, Plan
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import script
from apps.remote.gather import discover

INITDB_TIMEOUT = 300
START_TIMEOUT = 180


def _plan(ctx: StepContext) -> Plan:
    return Plan.from_dict(ctx.state["plan"])


def datasets(ctx: StepContext) -> Next | Fail:
    """The pool read again (room above its reserve), then the datasets."""
    run = ctx.runner()
    shortage = reserves.refusal_in_step(run, ctx.host, ctx.state.get("room"))
    if shortage:
        return Fail(str(shortage), code="no_room")
    plan = _plan(ctx)
    data_mount, wal_mount = commands.mounts(
        run(commands.create_datasets(plan), timeout=120).stdout)
    ctx.state["mounts"] = [data_mount, wal_mount]
    return Next("initdb", f"{plan.parent} with data and wal made", progress=30)


def initdb(ctx: StepContext) -> Next:
    """initdb, the settings, the start: one round trip (each part safe to repeat)."""
    plan, run = _plan(ctx), ctx.runner()
    data_mount, wal_mount = ctx.state["mounts"]
    run(commands.initialise_and_start(plan, data_mount, wal_mount),
        timeout=INITDB_TIMEOUT + START_TIMEOUT)
    return Next("discover", "initialised with data checksums, settings written, started",
                progress=80)


def rediscover(ctx: StepContext) -> Done | Fail:
    data_dir = f"{ctx.state['mounts'][0]}/{DATA_BELOW}"
    ctx.state["facts"] = discover(ctx.runner(), login=ctx.host.user).to_dict()
    # Discovery's own record step: the rows, and what listens to discovery (the
    # snapshot inventory, the advisor's counts) hears of the new cluster.
    fleet_steps.record(ctx)
    cluster = ctx.host.clusters.filter(data_dir=data_dir).first()
    if cluster is None:
        return Fail(f"the cluster at {data_dir} started but discovery did not find it",
                    code="not_found")
    return Done({"cluster": cluster.pk, "data_dir": data_dir, "port": cluster.port,
                 "wal_dir": f"{ctx.state['mounts'][1]}/{WAL_BELOW}"},
                message=f"cluster {_plan(ctx).name} is running on port {cluster.port}")


CREATE = register(Kind(
    name="provisioning.create_cluster",
    steps={"datasets": datasets, "initdb": initdb, "discover": rediscover},
    first_step="datasets",
    mutating=True,
))


# -- retiring ---------------------------------------------------------------------------

def stop(ctx: StepContext) -> Next:
    if ctx.state.get("stop"):
        target = ClusterTarget.of(**ctx.state["target"])
        run = ctx.runner()
        if run(target.pg_ctl("status"), check=False).exit_code == 0:
            run(target.control("stop"), timeout=180)
            ctx.log(f"stopped the cluster at {ctx.state['data_dir']}")
        else:
            ctx.log("the cluster was not running")
        if target.packaged_as and not ctx.state.get("destroy"):
            # Kept, a retired cluster must not come back at the next boot.
            run(script(_MANUAL, start_conf=_etc(target.packaged_as, "start.conf")))
            ctx.log(f"start.conf of {target.packaged_as} set to manual: not started at boot")
    return Next("snapshot", progress=30)


_MANUAL = "[ ! -f {start_conf} ] || printf 'manual\\n' > {start_conf}"
# pg_dropcluster refuses a running cluster; it removes /etc/postgresql/<major>/<name>
# and what is in the data and WAL directories, whose datasets go next anyway.
_DROPCLUSTER = "[ ! -d {etc} ] || pg_dropcluster {major} {name}"


def _etc(packaged_as: str, file: str = "") -> str:
    return "/".join(["/etc/postgresql", packaged_as, *([file] if file else [])])


_SNAPSHOT = "zfs list -H -o name {name} > /dev/null 2>&1 || zfs snapshot {flags} {name}"


def snapshot(ctx: StepContext) -> Next:
    taken = ctx.state.get("snapshot")
    if taken:
        run = ctx.runner()
        for name in taken["names"]:
            run(script(_SNAPSHOT, name=name, flags=["-r"] if taken["recursive"] else []))
        ctx.log("final snapshot: " + ", ".join(taken["names"]))
    return Next("destroy", progress=50)


# zfs-fuse keeps a mount busy for a moment after a server stopped reading it.
_DESTROY = """\
zfs list -H -o name {name} > /dev/null 2>&1 || exit 0
i=0
until zfs destroy -r {name}; do
  i=$((i + 1)); [ "$i" -ge 40 ] && exit 1; sleep 0.25
done"""


def destroy(ctx: StepContext) -> Next:
    run = ctx.runner()
    packaged_as = ctx.state["target"].get("packaged_as")
    if ctx.state.get("destroy") and packaged_as:
        major, name = packaged_as.split("/", 1)
        run(script(_DROPCLUSTER, etc=_etc(packaged_as), major=major, name=name), timeout=120)
        ctx.log(f"pg_dropcluster {major} {name}: its configuration under /etc/postgresql gone")
    for name in ctx.state.get("destroy") or []:
        run(script(_DESTROY, name=name), timeout=300)
        ctx.log(f"destroyed {name} (with its snapshots)")
    return Next("forget", progress=80)


def forget(ctx: StepContext) -> Done:
    with transaction.atomic():
        ctx.host.hold_discovered_rows()
        ctx.host.clusters.filter(pk=ctx.state["cluster"]).delete()
        names = ctx.state.get("destroy") or []
        for name in names:
            ctx.host.datasets.filter(name=name).delete()
            ctx.host.datasets.filter(name__startswith=f"{name}/").delete()
        fleet_steps.check_clusters(ctx.host)
    return Done({"cluster": ctx.state["cluster"], "destroyed": names,
                 "snapshot": (ctx.state.get("snapshot") or {}).get("names", [])},
                message=f"retired the cluster at {ctx.state['data_dir']}")


RETIRE = register(Kind(
    name="provisioning.retire_cluster",
    steps={"stop": stop, "snapshot": snapshot, "destroy": destroy, "forget": forget},
    first_step="stop",
    mutating=True,
))
