"""The advisor on a real host that the test misconfigures on purpose, then
puts back. Rules a zfs-fuse test host cannot exhibit (NVMe write cache, a
SLOG, OpenZFS version bugs, module parameters) are unit-tested from facts in
tests/tuning/test_advisor.py."""

import pytest

from apps.fleet import services as fleet
from apps.tuning import services
from tests.driving import drive
from tests.integration.conftest import register, run_on

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def psql(fleet_host, sql: str) -> None:
    run_on(fleet_host, (
        f"runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -X -At "
        f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} -d postgres -c \"{sql}\""))


def test_the_advisor_reports_what_the_host_really_has(fleet_hosts, delivered):
    fleet_host = fleet_hosts[0]
    data, wal = fleet_host.pg_data_dataset, fleet_host.pg_wal_dataset
    host = register(fleet_host)
    assert drive(host.operations.get()).status == "succeeded"
    host.refresh_from_db()
    baseline = {f["id"] for f in services.findings(host)}
    # Stock host: compression off, atime on, PostgreSQL without checksums.
    assert {"compression_off", "atime_on", "data_checksums_off"} <= baseline

    run_on(fleet_host, f"zfs set recordsize=4K {data} && zfs set logbias=throughput {wal} "
                       f"&& zfs set dedup=on {data} && zfs set primarycache=metadata {data} "
                       f"&& zfs set compression=on {data}")
    psql(fleet_host, "alter system set synchronous_commit = off")
    psql(fleet_host, "select pg_reload_conf()")
    # Dead rows autovacuum may not remove (lesson 64): about 55 MB of rows, four in five
    # deleted; the session's exit hands its counts to the statistics. Unlogged: the
    # statistics count the same, and zfs-fuse is spared 55 MB of WAL.
    try:
        psql(fleet_host, "create unlogged table pozol_bloat (id int primary key, pad text)"
                         " with (autovacuum_enabled = off);"
                         " insert into pozol_bloat"
                         " select g, repeat('x', 1000) from generate_series(1, 50000) g;"
                         " delete from pozol_bloat where id % 5 <> 0")
        # Lesson 17: 70 MB of TOAST in a text column PostgreSQL may compress, on a dataset
        # ZFS compresses. Hex text is too random for pglz, so it lands in TOAST as it is.
        psql(fleet_host, "create unlogged table pozol_toast (id int, body text);"
                         " insert into pozol_toast select g, (select string_agg("
                         "md5(g || ':' || i), '') from generate_series(1, 40000) i)"
                         " from generate_series(1, 55) g")
        assert drive(fleet.discover(host)).status == "succeeded"
        host.refresh_from_db()
        found = services.findings(host)
    finally:
        run_on(fleet_host, f"zfs inherit recordsize {data} && zfs inherit logbias {wal} "
                           f"&& zfs inherit dedup {data} && zfs inherit primarycache {data} "
                           f"&& zfs inherit compression {data}")
        psql(fleet_host, "alter system reset synchronous_commit")
        psql(fleet_host, "select pg_reload_conf()")
        psql(fleet_host, "drop table if exists pozol_bloat, pozol_toast")

    findings = {f["id"]: f for f in found}
    for rule in ("recordsize_below_8k", "logbias_throughput_no_slog", "dedup_on",
                 "bounded_loss_unacknowledged", "primarycache_not_all"):
        assert rule in findings, rule
        assert findings[rule]["evidence"] and findings[rule]["source"]
    [dead] = [f for f in found if f["id"] == "dead_tuples_bloat"
              and f["subject"].endswith("(database postgres)")]
    assert "public.pozol_bloat: 40000 dead, 10000 live (80% dead)" in dead["evidence"]
    assert "autovacuum disabled on the table" in dead["evidence"]
    assert "pg_repack not available on the host" in dead["evidence"]
    assert "postgresql-15-repack" in dead["action"] and "Use pg_repack" in dead["source"]
    [toast] = [f for f in found if f["id"] == "toast_compressed_on_zfs"]
    assert toast["subject"].endswith("(database postgres)")
    assert "public.pozol_toast: TOAST" in toast["evidence"]
    assert "columns PostgreSQL compresses body (extended)" in toast["evidence"]
    assert "(compression=on)" in toast["evidence"]
    assert "ALTER TABLE public.pozol_toast ALTER COLUMN body SET STORAGE EXTERNAL;" in \
        toast["action"]

    assert drive(fleet.discover(host)).status == "succeeded"
    host.refresh_from_db()
    after = services.findings(host)
    assert not {"recordsize_below_8k", "logbias_throughput_no_slog", "dedup_on",
                "bounded_loss_unacknowledged", "primarycache_not_all"} & {f["id"] for f in after}
    assert not any("pozol_bloat" in f["evidence"] or "pozol_toast" in f["evidence"]
                   for f in after)


def test_a_replication_slot_and_wal_driven_checkpoints_on_a_real_host(fleet_hosts, delivered):
    """full_page_writes=off with a physical slot (lessons 14) and checkpoints forced by a
    small max_wal_size under a bulk insert (58), as discovery reads them from the host."""
    fleet_host = fleet_hosts[0]
    host = register(fleet_host)
    assert drive(host.operations.get()).status == "succeeded"
    host.refresh_from_db()
    baseline = {f["id"] for f in services.findings(host)}
    assert not {"full_page_writes_off_standby", "checkpoints_requested"} & baseline

    for sql in ("alter system set full_page_writes = off",
                "alter system set max_wal_size = '32MB'", "select pg_reload_conf()",
                "select pg_create_physical_replication_slot('pozol_test_slot')",
                "select pg_stat_reset_shared('bgwriter')",
                "create table pozol_checkpoints (g int, pad text)"):
        psql(fleet_host, sql)
    try:
        # About 28 MB of WAL each, against a checkpoint every 16 MB or so: the table is
        # emptied each time so the 1 GiB test pool does not fill.
        for _ in range(12):
            psql(fleet_host, "truncate pozol_checkpoints; insert into pozol_checkpoints"
                             " select g, repeat('x', 500) from generate_series(1, 50000) g")
        assert drive(fleet.discover(host)).status == "succeeded"
        host.refresh_from_db()
        findings = {f["id"]: f for f in services.findings(host)}
    finally:
        for sql in ("drop table if exists pozol_checkpoints",
                    "select pg_drop_replication_slot('pozol_test_slot')",
                    "alter system reset full_page_writes", "alter system reset max_wal_size",
                    "select pg_reload_conf()"):
            psql(fleet_host, sql)

    slot = findings["full_page_writes_off_standby"]
    assert "pozol_test_slot (inactive)" in slot["evidence"]
    checkpoints = findings["checkpoints_requested"]
    assert "max_wal_size=32MB" in checkpoints["evidence"], checkpoints["evidence"]
    assert drive(fleet.discover(host)).status == "succeeded"
    host.refresh_from_db()
    assert "full_page_writes_off_standby" not in {f["id"] for f in services.findings(host)}


def test_full_page_writes_off_off_zfs_is_critical(tmp_path, delivered):
    """This machine's own PostgreSQL is not on ZFS: as the advisor sees it with
    full_page_writes=off in its facts (set in the recorded facts, not on the
    machine's server, which this suite must not change)."""
    from apps.fleet.models import Host
    from apps.remote.keys import fingerprint
    from tests.remote.sshd import running_sshd

    with running_sshd(tmp_path) as sshd:
        host, operation = fleet.add_host(
            name="plain", address=sshd.address, port=sshd.port, user=sshd.user,
            work_dir=str(tmp_path), private_key=sshd.client_key,
            expected_fingerprint=fingerprint(sshd.host_key))
        assert drive(operation).status == "succeeded"
    host = Host.objects.get(pk=host.pk)
    if not host.facts["clusters"]:
        pytest.fail("this machine runs no PostgreSQL to look at")
    for row in host.facts["clusters"][0]["settings"]:
        if row["name"] == "full_page_writes":
            row["setting"] = "off"
    host.save()
    findings = {f["id"]: f for f in services.findings(host)}
    assert findings["full_page_writes_off_not_zfs"]["severity"] == "critical"


def test_memory_and_wal_rules_on_a_real_host(fleet_hosts, delivered):
    """wal_level=minimal with large shared_buffers, and shared_buffers above 40%
    of RAM, need a restart to show: the test restarts and restarts back. No load
    runs meanwhile (zfs-fuse stalls under load with large shared_buffers)."""
    fleet_host = fleet_hosts[1]
    pg_ctl = (f"runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/pg_ctl "
              f"-D {fleet_host.pg_data_dir} -m fast -w -l {fleet_host.pg_log_file} restart")
    ram_mb = int(open("/proc/meminfo").read().split()[1]) // 1024
    host = register(fleet_host)
    assert drive(host.operations.get()).status == "succeeded"
    host.refresh_from_db()
    assert "dirty_limit_large" in {f["id"] for f in services.findings(host)}  # 20% of RAM

    for setting in ("wal_level = minimal", "max_wal_senders = 0",
                    f"shared_buffers = '{ram_mb // 2}MB'"):
        psql(fleet_host, f"alter system set {setting}")
    try:
        run_on(fleet_host, pg_ctl)
        assert drive(fleet.discover(host)).status == "succeeded"
        host.refresh_from_db()
        findings = {f["id"]: f for f in services.findings(host)}
    finally:
        for setting in ("wal_level", "max_wal_senders", "shared_buffers"):
            psql(fleet_host, f"alter system reset {setting}")
        run_on(fleet_host, pg_ctl)
    assert "PostgreSQL 15" in findings["wal_level_minimal_copy"]["evidence"] + \
        findings["wal_level_minimal_copy"]["why"]
    assert "shared_buffers_over_40pct" in findings
    assert "zfs_fuse_large_shared_buffers" in findings
