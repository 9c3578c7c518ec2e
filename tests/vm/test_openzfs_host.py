"""The product on a real OpenZFS host: Debian 13, the OpenZFS 2.3 kernel module, Debian's
packaged PostgreSQL 17 under systemd (tests/vm/conftest.py boots it once per run).

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
from tests.integration.conftest import register, run_on
from tests.integration.test_telemetry import read

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


def test_discovery_reads_the_kernel_module_its_pool_and_the_packaged_cluster(vm_host, delivered):
    host = discovered(vm_host)
    facts = host.facts

    zfs = facts["zfs"]
    version = run_on(vm_host, "zfs version").split()
    assert zfs["dialect"] == "openzfs" and zfs["version"].startswith("2.3")
    assert version[0] == f"zfs-{zfs['userland_version']}"
    assert version[1] == f"zfs-kmod-{zfs['kernel_version']}"
    params = run_on(vm_host, "cat /sys/module/zfs/parameters/zfs_arc_max").strip()
    assert facts["module_params"]["zfs_arc_max"] == params
    assert facts["arcstats"]["c_max"] == int(run_on(
        vm_host, "awk '$1 == \"c_max\" {print $3}' /proc/spl/kstat/zfs/arcstats"))

    pool = host.pools.get()
    assert pool.name == "tank" and pool.health == "ONLINE"
    assert pool.size == int(run_on(vm_host, "zpool list -Hp -o size tank"))
    recorded = {dataset.name: dataset for dataset in host.datasets.all()}
    assert set(recorded) == set(run_on(vm_host, "zfs list -H -o name").split())
    assert recorded["tank/pg/data"].recordsize == 16384
    assert recorded["tank/pg/data"].compression == "lz4"

    cluster = host.clusters.get()
    assert cluster.port == 5432
    assert cluster.server_version_num == int(psql(vm_host, "show server_version_num"))
    assert cluster.server_version_num // 10000 == 17
    assert cluster.data_dataset.name == "tank/pg/data"
    assert cluster.wal_dataset.name == "tank/pg/wal"
    assert cluster.setting("config_file")["setting"] == "/etc/postgresql/17/main/postgresql.conf"
    assert run_on(vm_host, "systemctl is-active postgresql@17-main").strip() == "active"


def test_a_snapshot_of_the_packaged_cluster_is_one_atomic_recursive_snapshot(vm_host, delivered):
    host = discovered(vm_host)
    cluster = host.clusters.get()
    psql(vm_host, "CREATE TABLE IF NOT EXISTS pozol_vm (id int); INSERT INTO pozol_vm VALUES (1)")
    operation = drive(snapshot_services.snapshot_now(host, cluster=cluster), limit=300)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    name = operation.state["snapshot"]
    try:
        listed = run_on(vm_host, "zfs list -H -t snapshot -o name -r tank/pg").split()
        assert f"tank/pg/data@{name}" in listed and f"tank/pg/wal@{name}" in listed
        # One creation time for both: one `zfs snapshot -r` made them.
        created = run_on(vm_host, f"zfs get -Hp -o value creation tank/pg/data@{name} "
                                  f"tank/pg/wal@{name}").split()
        assert len(set(created)) == 1
    finally:
        run_on(vm_host, f"zfs release -r pozol tank/pg@{name} 2>/dev/null; "
                        f"zfs destroy -r tank/pg@{name}")
        psql(vm_host, "DROP TABLE pozol_vm")


def test_telemetry_reads_arc_and_per_txg_dirty_data_from_proc_spl(vm_host, api, delivered):
    host = discovered(vm_host)
    assert telemetry_tasks.collect() == 1
    pgbench(vm_host, seconds=3)
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
    return int(run_on(vm_host, "systemctl show -p MainPID --value postgresql@17-main").strip())


def test_a_profile_with_a_module_parameter_applies_and_rolls_back_through_systemd(
        vm_host, delivered):
    host = discovered(vm_host)
    tuning.assign(host, Profile.objects.get(slug="oltp-safe"))
    arc = "/sys/module/zfs/parameters/zfs_arc_max"
    before = {"arc_max": run_on(vm_host, f"cat {arc}").strip(), "c_max": c_max(vm_host),
              "shared_buffers": psql(vm_host, "show shared_buffers"),
              "dirty_bytes": run_on(vm_host, "sysctl -n vm.dirty_bytes").strip(),
              "pid": unit_pid(vm_host)}

    plan = tuning.make_plan(host)
    by_key = {(change.layer, change.key): change for change in plan.changes.all()}
    module = by_key[("module", "zfs_arc_max")]
    assert module.supported, module.reason
    operation = drive(tuning.apply_plan(plan, allow_restart=True), limit=600)
    assert operation.status == Operation.Status.SUCCEEDED, (operation.error, [
        line.text for line in operation.log_lines.all()][-8:])

    assert run_on(vm_host, f"cat {arc}").strip() == module.desired
    assert c_max(vm_host) == int(module.desired)  # the running ARC took it
    assert f"zfs_arc_max={module.desired}" in run_on(vm_host, "cat /etc/modprobe.d/*.conf")
    assert psql(vm_host, "show shared_buffers") != before["shared_buffers"]
    # Restarted by its own unit: systemd knows the new postmaster as the unit's main PID.
    assert run_on(vm_host, "systemctl is-active postgresql@17-main").strip() == "active"
    assert unit_pid(vm_host) != before["pid"]

    _, rollback = tuning.rollback(plan, allow_restart=True)
    rolled = drive(rollback, limit=600)
    assert rolled.status == Operation.Status.SUCCEEDED, rolled.error
    # 0 is ignored by a running OpenZFS: the ARC's size before is what comes back now.
    assert c_max(vm_host) == before["c_max"]
    assert "zfs_arc_max" not in run_on(vm_host, "cat /etc/modprobe.d/*.conf 2>/dev/null; true")
    assert psql(vm_host, "show shared_buffers") == before["shared_buffers"]
    assert run_on(vm_host, "sysctl -n vm.dirty_bytes").strip() == before["dirty_bytes"]
    assert run_on(vm_host, "systemctl is-active postgresql@17-main").strip() == "active"


def c_max(vm_host) -> int:
    return int(run_on(vm_host, "awk '$1 == \"c_max\" {print $3}' /proc/spl/kstat/zfs/arcstats"))


def test_a_scrub_runs_to_its_result_read_from_zpool_status(vm_host, delivered):
    host = discovered(vm_host)
    schedule = alerts.schedule_scrub(host, "tank", every_days=30)
    assert alerts.scrub_tick(timezone.now()) == 1
    schedule.refresh_from_db()
    operation = drive(schedule.last_operation, limit=600)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert operation.result["pool"] == "tank" and operation.result["errors"] == 0
    # What the host says, in a locale other than C: the parser does not depend on it.
    status = run_on(vm_host, "LC_ALL=C.UTF-8 LANG=de_DE.UTF-8 zpool status tank")
    assert scrub.read(status).state == "finished", status
