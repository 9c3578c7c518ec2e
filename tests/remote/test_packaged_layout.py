"""Discovery of where a cluster's configuration lives and who starts it (issue 21):
Debian's /etc/postgresql/<major>/<name>/ layout, systemd's postgresql@ unit, and whether
postgresql-common manages the cluster."""

from __future__ import annotations

from apps.remote import gather
from apps.remote.facts import postgres
from tests.remote.fixtures.hosts import FIXTURES, fuse_section, read, replay_transcript
from tests.remote.test_gather import openzfs_22_host

DEBIAN = FIXTURES / "zfs-fuse" / "debian-layout"


def test_a_cluster_in_debians_layout_is_discovered_with_its_configuration():
    # Captured on a fleet test host (apps/demo/fleet debian=...): no systemd, no start.conf.
    cluster = gather.discover(replay_transcript(DEBIAN / "transcript.json")).clusters[0]
    assert cluster.config_file == "/etc/postgresql/15/main/postgresql.conf"
    assert cluster.hba_file == "/etc/postgresql/15/main/pg_hba.conf"
    assert cluster.ident_file == "/etc/postgresql/15/main/pg_ident.conf"
    assert cluster.packaged == "15/main"
    assert cluster.systemd_unit is None and cluster.pg_ctlcluster is False
    assert not cluster.config_file.startswith(cluster.data_dir)


def test_a_cluster_initdb_made_keeps_its_configuration_in_its_data_directory():
    cluster = gather.discover(replay_transcript()).clusters[0]
    assert cluster.config_file == f"{cluster.data_dir}/postgresql.conf"
    assert cluster.packaged is None and cluster.systemd_unit is None
    assert not cluster.pg_ctlcluster


def test_a_packaged_cluster_systemd_runs_names_its_unit():
    cluster = gather.discover(openzfs_22_host()).clusters[0]
    assert cluster.packaged == "16/main"
    assert cluster.systemd_unit == "postgresql@16-main.service"
    assert cluster.pg_ctlcluster is True


def test_cgroup_of_a_postmaster_outside_systemd_names_no_unit():
    # Captured on fleet test hosts: a container's cgroup v1 hierarchies, all "/".
    assert postgres.parse_cgroup_unit(fuse_section("pg_311_cgroup")) is None
    assert postgres.parse_cgroup_unit((DEBIAN / "sections" / "pg_154_cgroup.txt")
                                      .read_text()) is None


def test_cgroup_of_a_postmaster_systemd_runs_names_its_unit():
    # The unit's cgroup path as `systemctl status postgresql@15-main` prints it on
    # Debian 12 (public transcripts); v2 has one line, v1 names it on name=systemd.
    path = "/system.slice/system-postgresql.slice/postgresql@15-main.service"
    assert postgres.parse_cgroup_unit(f"0::{path}\n") == "postgresql@15-main.service"
    assert postgres.parse_cgroup_unit(
        f"12:memory:{path}\n1:name=systemd:{path}\n0::/\n") == "postgresql@15-main.service"
    assert postgres.parse_cgroup_unit("0::/system.slice/postgresql.service\n") is None


def test_debian_cluster_is_read_from_the_configuration_path_only():
    assert postgres.debian_cluster("/etc/postgresql/17/main/postgresql.conf") == ("17", "main")
    assert postgres.debian_cluster("/etc/postgresql/9.6/web-1/postgresql.conf") == ("9.6",
                                                                                   "web-1")
    assert postgres.debian_cluster("/var/lib/postgresql/17/main/postgresql.conf") is None
    assert postgres.debian_cluster("/etc/postgresql/17/main/conf.d/x.conf") is None
    assert postgres.debian_cluster(None) is None


def test_postgresql_common_manages_clusters_with_a_start_conf_and_pg_ctlcluster():
    # Captured: a plain fleet host sees the machine's 15/main; the Debian-layout host's
    # own /etc/postgresql hides it and has none (ls fails, pg_ctlcluster is there).
    plain = postgres.parse_postgresql_common(fuse_section("pg_common"))
    assert plain.pg_ctlcluster and plain.manages(("15", "main"))
    assert not plain.manages(("17", "main")) and not plain.manages(None)
    debian = postgres.parse_postgresql_common((DEBIAN / "sections" / "pg_common.txt")
                                              .read_text())
    assert debian.pg_ctlcluster and not debian.manages(("15", "main"))
    written = postgres.parse_postgresql_common(read("openzfs-2.2/pg_common.txt"))
    assert written.manages(("16", "main"))
    absent = postgres.parse_postgresql_common("ls: cannot access '/etc/postgresql/*/*/"
                                              "start.conf': No such file or directory\n")
    assert not absent.manages(("15", "main"))


def test_the_majors_installed_are_read_from_their_initdb_with_or_without_a_cluster():
    # Captured: the fleet hosts share this machine's /usr (Debian 12's postgresql-15).
    assert postgres.parse_installed(fuse_section("pg_installed")) == {
        "15": "/usr/lib/postgresql/15/bin"}
    facts = gather.discover(replay_transcript())
    assert facts.installed.bin_dirs == {"15": "/usr/lib/postgresql/15/bin"}
    assert facts.installed.pg_ctlcluster and facts.installed.packaged == ["15/main"]
    debian = gather.discover(replay_transcript(DEBIAN / "transcript.json")).installed
    assert debian.pg_ctlcluster and debian.packaged == []
    assert postgres.parse_installed("") == {}


def test_a_host_with_no_postgresql_has_nothing_installed():
    from tests.remote.fakeshell import FakeShell
    from tests.remote.fixtures.hosts import FixtureHost

    shell = FixtureHost("plain").script(FakeShell(), gather.host_probes())
    installed = gather.discover(shell).installed
    assert installed.bin_dirs == {} and not installed.pg_ctlcluster
    assert installed.packaged == []
