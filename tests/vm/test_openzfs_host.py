"""The product on real OpenZFS hosts: Debian 13 with the OpenZFS 2.3 kernel module and
Debian's packaged PostgreSQL 17 under systemd, and Debian 12 with OpenZFS 2.1 and
PostgreSQL 15 packaged (tests/vm/conftest.py boots each once per run; `vm`
runs a test on both).

Each test checks the product's record against what zfs, zpool, psql, systemctl and
/proc/spl say on the host over OpenSSH, independently of the product's code. Tests share
the host: each one removes what it made.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.alerts import services as alerts
from apps.alerts.core import scrub
from apps.ops.models import Operation
from apps.snapshots import services as snapshot_services
from apps.telemetry import tasks as telemetry_tasks
from apps.telemetry.models import RawSample
from apps.tuning import services as tuning
from apps.tuning.models import Profile
from tests.driving import drive
from tests.integration.conftest import register
from tests.integration.test_telemetry import read
from tests.vm.conftest import run_on

pytestmark = [pytest.mark.vm, pytest.mark.django_db(transaction=True)]


def psql(vm_host, sql: str) -> str:
    return run_on(vm_host, f"cd / && runuser -u postgres -- psql -X -At -d postgres -c \"{sql}\""
                  ).strip()


def pgbench(vm_host, seconds: int) -> None:
    run_on(vm_host, "cd / && runuser -u postgres -- sh -c 'createdb bench 2>/dev/null; "
                    "pgbench -q -i -s 1 bench >/dev/null 2>&1; "
                    f"pgbench -c 2 -j 1 -T {seconds} bench >/dev/null'", timeout=300)


def discovered(vm_host):
    host = register(vm_host)
    operation = drive(host.operations.get(), limit=300)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    host.refresh_from_db()
    return host


def test_discovery_reads_the_kernel_module_its_pool_and_the_packaged_cluster(vm, delivered):
    host = discovered(vm)
    facts = host.facts

    zfs = facts["zfs"]
    version = run_on(vm, "zfs version").split()
    assert zfs["dialect"] == "openzfs" and zfs["version"].startswith(zfs_series(vm))
    assert version[0] == f"zfs-{zfs['userland_version']}"
    assert version[1] == f"zfs-kmod-{zfs['kernel_version']}"
    params = run_on(vm, "cat /sys/module/zfs/parameters/zfs_arc_max").strip()
    assert facts["module_params"]["zfs_arc_max"] == params
    assert facts["arcstats"]["c_max"] == int(run_on(
        vm, "awk '$1 == \"c_max\" {print $3}' /proc/spl/kstat/zfs/arcstats"))

    pool = host.pools.get()
    assert pool.name == "tank" and pool.health == "ONLINE"
    assert pool.size == int(run_on(vm, "zpool list -Hp -o size tank"))
    recorded = {dataset.name: dataset for dataset in host.datasets.all()}
    assert set(recorded) == set(run_on(vm, "zfs list -H -o name").split())
    assert recorded["tank/pg/data"].recordsize == 16384
    assert recorded["tank/pg/data"].compression == "lz4"

    cluster = host.clusters.get()
    assert cluster.port == 5432
    assert cluster.server_version_num == int(psql(vm, "show server_version_num"))
    assert cluster.server_version_num // 10000 == vm.pg_major
    assert cluster.data_dataset.name == "tank/pg/data"
    assert cluster.wal_dataset.name == "tank/pg/wal"
    assert cluster.setting("config_file")["setting"] == (
        f"/etc/postgresql/{vm.pg_major}/main/postgresql.conf")
    assert run_on(vm, f"systemctl is-active {unit(vm)}").strip() == "active"


def test_a_snapshot_of_the_packaged_cluster_is_one_atomic_recursive_snapshot(vm, delivered):
    host = discovered(vm)
    cluster = host.clusters.get()
    psql(vm, "CREATE TABLE IF NOT EXISTS pozol_vm (id int); INSERT INTO pozol_vm VALUES (1)")
    operation = drive(snapshot_services.snapshot_now(host, cluster=cluster), limit=300)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    name = operation.state["snapshot"]
    try:
        listed = run_on(vm, "zfs list -H -t snapshot -o name -r tank/pg").split()
        assert f"tank/pg/data@{name}" in listed and f"tank/pg/wal@{name}" in listed
        # One creation time for both: one `zfs snapshot -r` made them.
        created = run_on(vm, f"zfs get -Hp -o value creation tank/pg/data@{name} "
                                  f"tank/pg/wal@{name}").split()
        assert len(set(created)) == 1
    finally:
        run_on(vm, f"zfs release -r pozol tank/pg@{name} 2>/dev/null; "
                        f"zfs destroy -r tank/pg@{name}")
        psql(vm, "DROP TABLE pozol_vm")


def test_telemetry_reads_arc_and_per_txg_dirty_data_from_proc_spl(vm, api, delivered):
    host = discovered(vm)
    assert telemetry_tasks.collect() == 1
    pgbench(vm, seconds=3)
    assert telemetry_tasks.collect() == 1

    sample = RawSample.objects.filter(host=host).latest("taken_at")
    # zfs-fuse has neither txg history nor dmu_tx kstats; the kernel module has both.
    assert not [name for name in sample.missing if "txg" in name or "dmu" in name or
                name == "arc"], sample.missing
    arc = read(api, host, "arc_hit_rate")
    assert arc["available"] and 0 <= arc["series"][0]["points"][-1]["v"] <= 1
    dirty = read(api, host, "zfs_dirty")
    assert dirty["available"], dirty
    assert {series["key"] for series in dirty["series"]} == {"tank"}


def unit_pid(vm_host) -> int:
    return int(run_on(vm_host, f"systemctl show -p MainPID --value {unit(vm_host)}").strip())


def unit(vm_host) -> str:
    """The packaged cluster's systemd unit."""
    return f"postgresql@{vm_host.pg_major}-main"


def zfs_series(vm_host) -> str:
    """The OpenZFS series of the image the host was booted from ("2.3", "2.1")."""
    from apps.demo.vm import image

    [recipe] = [r for r in image.RECIPES.values() if r.pg_major == vm_host.pg_major]
    return recipe.zfs_version[:3]


def test_a_profile_with_a_module_parameter_applies_and_rolls_back_through_systemd(
        vm, delivered):
    host = discovered(vm)
    tuning.assign(host, Profile.objects.get(slug="oltp-safe"))
    arc = "/sys/module/zfs/parameters/zfs_arc_max"
    before = {"arc_max": run_on(vm, f"cat {arc}").strip(), "c_max": c_max(vm),
              "shared_buffers": psql(vm, "show shared_buffers"),
              "dirty_bytes": run_on(vm, "sysctl -n vm.dirty_bytes").strip(),
              "pid": unit_pid(vm)}

    plan = tuning.make_plan(host)
    by_key = {(change.layer, change.key): change for change in plan.changes.all()}
    module = by_key[("module", "zfs_arc_max")]
    assert module.supported, module.reason
    operation = drive(tuning.apply_plan(plan, allow_restart=True), limit=600)
    assert operation.status == Operation.Status.SUCCEEDED, (operation.error, [
        line.text for line in operation.log_lines.all()][-8:])

    assert run_on(vm, f"cat {arc}").strip() == module.desired
    assert c_max(vm) == int(module.desired)  # the running ARC took it
    assert f"zfs_arc_max={module.desired}" in run_on(vm, "cat /etc/modprobe.d/*.conf")
    assert psql(vm, "show shared_buffers") != before["shared_buffers"]
    # Restarted by its own unit: systemd knows the new postmaster as the unit's main PID.
    assert run_on(vm, f"systemctl is-active {unit(vm)}").strip() == "active"
    assert unit_pid(vm) != before["pid"]

    _, rollback = tuning.rollback(plan, allow_restart=True)
    rolled = drive(rollback, limit=600)
    assert rolled.status == Operation.Status.SUCCEEDED, rolled.error
    # 0 is ignored by a running OpenZFS: the ARC's size before is what comes back now.
    assert c_max(vm) == before["c_max"]
    assert "zfs_arc_max" not in run_on(vm, "cat /etc/modprobe.d/*.conf 2>/dev/null; true")
    assert psql(vm, "show shared_buffers") == before["shared_buffers"]
    assert run_on(vm, "sysctl -n vm.dirty_bytes").strip() == before["dirty_bytes"]
    assert run_on(vm, f"systemctl is-active {unit(vm)}").strip() == "active"


def c_max(vm_host) -> int:
    return int(run_on(vm_host, "awk '$1 == \"c_max\" {print $3}' /proc/spl/kstat/zfs/arcstats"))


def test_a_scrub_runs_to_its_result_read_from_zpool_status(vm, delivered):
    host = discovered(vm)
    schedule = alerts.schedule_scrub(host, "tank", every_days=30)
    assert alerts.scrub_tick(timezone.now()) == 1
    schedule.refresh_from_db()
    operation = drive(schedule.last_operation, limit=600)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert operation.result["pool"] == "tank" and operation.result["errors"] == 0
    # What the host says, in a locale other than C: the parser does not depend on it.
    status = run_on(vm, "LC_ALL=C.UTF-8 LANG=de_DE.UTF-8 zpool status tank")
    assert scrub.read(status).state == "finished", status
