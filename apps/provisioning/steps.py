"""Creating and retiring a cluster as Operations: each step safe to run again.

Create: the pool's room read again, the datasets (their properties set before
anything is written), initdb (as the owner, or pg_createcluster on a packaged
host; checksums on, WAL on its dataset), settings (postgresql.auto.conf) and start
(its unit on a packaged host, else pg_ctl, as PoZoL starts its clones), all in one
round trip; then the new cluster and its datasets read as discovery reads them (one
more), so the cluster appears with its id. Retire: stop, a final snapshot, destroy
the datasets, forget the row; each only when asked.
"""

from __future__ import annotations

from dataclasses import asdict

from django.utils import timezone

from apps.fleet import reserves
from apps.fleet import steps as fleet_steps
from apps.ops.engine import Done, Fail, Kind, Next, StepContext, register
from apps.provisioning.core import commands
from apps.provisioning.core.layout import DATA_BELOW, WAL_BELOW, Plan
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import script
from apps.remote.facts.host import Cluster
from apps.remote.gather import discover_cluster

DATASETS_TIMEOUT = 120
INITDB_TIMEOUT = 300
START_TIMEOUT = 180


def _plan(ctx: StepContext) -> Plan:
    return Plan.from_dict(ctx.state["plan"])


def make(ctx: StepContext) -> Next | Fail:
    """The room check, the datasets, initdb, the settings and the start: one round trip
    (commands.make_and_start; each part safe to repeat). A plan that does not know
    where the datasets will be mounted goes step by step (`datasets`, `initdb`)."""
    plan, room = _plan(ctx), ctx.state.get("room")
    command = commands.make_and_start(plan, reserves.guard_in_script(ctx.host, room))
    if command is None:
        return datasets(ctx)
    made = ctx.runner()(command, timeout=DATASETS_TIMEOUT + INITDB_TIMEOUT + START_TIMEOUT,
                        check=False)
    if not made.ok:
        shortage = reserves.refusal_in_output(ctx.host, room, made.stdout) if room else None
        if shortage:
            return Fail(shortage.message, code="no_room")
        made.check()
    ctx.state["mounts"] = list(commands.planned_mounts(plan))
    ctx.state["pid"] = commands.started_pid(made.stdout)
    return Next("discover", f"{plan.parent} made; initialised with data checksums, "
                            "settings written, started", progress=80)


def datasets(ctx: StepContext) -> Next | Fail:
    """The pool read again (room above its reserve), then the datasets."""
    run = ctx.runner()
    shortage = reserves.refusal_in_step(run, ctx.host, ctx.state.get("room"))
    if shortage:
        return Fail(shortage.message, code="no_room")
    plan = _plan(ctx)
    data_mount, wal_mount = commands.mounts(
        run(commands.create_datasets(plan), timeout=DATASETS_TIMEOUT).stdout)
    ctx.state["mounts"] = [data_mount, wal_mount]
    return Next("initdb", f"{plan.parent} with data and wal made", progress=30)


def initdb(ctx: StepContext) -> Next:
    """initdb, the settings, the start: one round trip (each part safe to repeat)."""
    plan, run = _plan(ctx), ctx.runner()
    data_mount, wal_mount = ctx.state["mounts"]
    started = run(commands.initialise_and_start(plan, data_mount, wal_mount),
                  timeout=INITDB_TIMEOUT + START_TIMEOUT)
    ctx.state["pid"] = commands.started_pid(started.stdout)
    return Next("discover", "initialised with data checksums, settings written, started",
                progress=80)


def rediscover(ctx: StepContext) -> Done | Fail:
    """The new cluster and its datasets read as discovery reads them, in one round trip,
    so the cluster appears with its id the moment it answers. The rest of the host's
    facts wait for its next discovery: only the pool's free space moved, which every
    room check reads again anyway. Not recorded if the cluster was retired after this
    read (fleet's tombstone): a retire Operation waits for this one, so only the plain
    forget of a cluster that stopped at once (and a discovery found down) could be."""
    plan = _plan(ctx)
    data_mount, wal_mount = ctx.state["mounts"]
    data_dir, wal_dir = f"{data_mount}/{DATA_BELOW}", f"{wal_mount}/{WAL_BELOW}"
    facts = ctx.host.typed_facts()
    if facts is None or "pid" not in ctx.state:  # an operation started before there was one
        return _discovered_whole(ctx, data_dir, wal_dir)
    read_at = timezone.now()
    expected = Cluster(pid=ctx.state["pid"], version=str(plan.major), server_version_num=None,
                       port=plan.port, data_dir=data_dir, wal_dir=wal_dir,
                       socket_dir=plan.socket_dir, bin_dir=plan.bin_dir, owner=plan.owner,
                       data_checksums=None)
    cluster, datasets = discover_cluster(ctx.runner(), facts, expected, plan.parent)
    if not fleet_steps.record_new_cluster(ctx.host, asdict(cluster),
                                          [asdict(d) for d in datasets], plan.parent, read_at):
        ctx.log(f"not recorded: the cluster at {data_dir}, retired since it was read",
                level="warning")
    return _found(ctx, data_dir, wal_dir)


def _discovered_whole(ctx: StepContext, data_dir: str, wal_dir: str) -> Done | Fail:
    fleet_steps.read_facts(ctx)
    # Discovery's own record step: the rows, and what listens to discovery (the
    # snapshot inventory, the advisor's counts) hears of the new cluster.
    fleet_steps.record(ctx)
    return _found(ctx, data_dir, wal_dir)


def _found(ctx: StepContext, data_dir: str, wal_dir: str) -> Done | Fail:
    cluster = ctx.host.clusters.filter(data_dir=data_dir).first()
    if cluster is None:
        return Fail(f"the cluster at {data_dir} started but discovery did not find it",
                    code="not_found")
    return Done({"cluster": cluster.pk, "data_dir": data_dir, "port": cluster.port,
                 "wal_dir": wal_dir},
                message=f"cluster {_plan(ctx).name} is running on port {cluster.port}")


CREATE = register(Kind(
    name="provisioning.create_cluster",
    steps={"make": make, "datasets": datasets, "initdb": initdb, "discover": rediscover},
    first_step="make",
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
    # With its tombstone: a discovery that read the host before the stop above, and
    # records after this, would otherwise bring the cluster and its datasets back.
    names = ctx.state.get("destroy") or []
    fleet_steps.forget_cluster(ctx.host, ctx.state["data_dir"], names)
    return Done({"cluster": ctx.state["cluster"], "destroyed": names,
                 "snapshot": (ctx.state.get("snapshot") or {}).get("names", [])},
                message=f"retired the cluster at {ctx.state['data_dir']}")


RETIRE = register(Kind(
    name="provisioning.retire_cluster",
    steps={"stop": stop, "snapshot": snapshot, "destroy": destroy, "forget": forget},
    first_step="stop",
    mutating=True,
))
