"""The plan of a new cluster, from the real zfs-fuse capture (PG 15 on tank/pg)."""

from __future__ import annotations

import shlex

import pytest

from apps.provisioning.core import commands, layout
from apps.provisioning.core.layout import Refused, Request
from apps.provisioning.core.settings import resolved
from apps.remote.commands import InvalidValue
from apps.tuning.core.profiles import ANALYTICS, OLTP_SAFE
from tests.remote.test_commands import HOSTILE
from tests.tuning.core.hosts import fuse, openzfs


def plan(request: Request, facts=None, **kw) -> layout.Plan:
    return layout.plan(facts or fuse(), request, taken_ports=kw.pop("taken", set()), **kw)


def test_one_parent_with_data_and_wal_and_the_references_properties():
    made = plan(Request(15, "app"))
    assert made.parent == "tank/postgres/app"
    assert [(d.name, d.role) for d in made.datasets] == [
        ("tank/postgres/app", "parent"), ("tank/postgres/app/data", "data"),
        ("tank/postgres/app/wal", "wal")]
    data, wal = made.datasets[1].properties, made.datasets[2].properties
    assert data["recordsize"] == "16K" and wal["recordsize"] == "128K"
    assert data["atime"] == "off" and data["logbias"] == "latency"
    # zfs-fuse has no lz4: the family's next member, said so.
    assert data["compression"] == "on"
    assert any("compression=on instead of lz4" in n for n in made.notes)


def test_initdb_has_checksums_and_the_wal_on_its_dataset():
    made = plan(Request(15, "app"))
    pool_mount = next(d.mountpoint for d in fuse().datasets if d.name == "tank")
    assert made.data_dir == f"{pool_mount}/postgres/app/data/pgdata"
    assert made.wal_dir == f"{pool_mount}/postgres/app/wal/pg_wal"
    argv = made.initdb()
    assert argv[0] == "/usr/lib/postgresql/15/bin/initdb"
    assert "--data-checksums" in argv
    assert argv[argv.index("-X") + 1] == made.wal_dir
    assert made.owner == "postgres"


def test_the_port_is_the_next_free_one_and_neighbours_give_socket_and_addresses():
    facts = fuse()
    made = plan(Request(15, "app"), facts, taken={5432, 5433})
    assert made.port == 5434  # 5499 is the captured cluster's; 5432-5433 taken elsewhere
    assert made.settings["port"] == "5434"
    assert made.socket_dir == facts.clusters[0].socket_dir
    assert made.settings["unix_socket_directories"] == made.socket_dir


@pytest.mark.parametrize(("request_", "field", "code"), [
    (Request(13, "app"), "major", "no_such_major"),
    (Request(15, "app", port=5499), "port", "port_taken"),  # the captured cluster's
])
def test_refusals_name_the_field(request_, field, code):
    with pytest.raises(Refused) as refused:
        plan(request_)
    assert refused.value.field == field and refused.value.code == code


def test_a_name_that_exists_is_refused():
    facts = fuse()
    first = plan(Request(15, "app"), facts)
    facts.datasets.append(type(facts.datasets[0])(
        name=first.data, type="filesystem", mountpoint=None, used=0, avail=0, refer=0,
        exact_sizes=True, compressratio=None))
    with pytest.raises(Refused) as refused:
        plan(Request(15, "app"), facts)
    assert refused.value.code == "cluster_exists"


@pytest.mark.parametrize("name", [*HOSTILE, "A", "1a", "a" * 32, "a-b", 5, None])
def test_hostile_names_are_refused_before_any_plan(name):
    with pytest.raises(Refused) as refused:
        plan(Request(15, name))
    assert refused.value.field == "name"


@pytest.mark.parametrize("port", [0, 80, 70000, True, "5433"])
def test_bad_ports_are_refused(port):
    with pytest.raises(Refused) as refused:
        plan(Request(15, "app", port=port))
    assert refused.value.field == "port"


def test_an_unknown_pool_is_refused():
    with pytest.raises(Refused) as refused:
        plan(Request(15, "app", pool="nope"))
    assert refused.value.code == "no_such_pool"


def test_a_profile_resolves_for_the_new_cluster():
    facts = openzfs()
    zfs, settings, notes = resolved(facts, ANALYTICS.settings, 16)
    assert zfs["data"]["recordsize"] == "128K" and zfs["data"]["compression"] == "zstd"
    assert settings["full_page_writes"] == "off"
    assert settings["default_statistics_target"] == "500"
    assert settings["shared_buffers"].endswith("MB") or settings["shared_buffers"].endswith("GB")
    made = layout.plan(facts, Request(16, "dw"), taken_ports=set(), zfs=zfs, settings=settings,
                       profile=ANALYTICS.name)
    assert made.datasets[1].properties["recordsize"] == "128K"
    assert made.settings["full_page_writes"] == "off"
    assert made.profile == ANALYTICS.name
    assert notes == []


def test_a_setting_the_major_lacks_is_left_out_with_the_reason():
    settings = OLTP_SAFE.settings.postgres | {"io_method": "worker"}
    profile = type(OLTP_SAFE.settings)(zfs={}, module={}, sysctl={}, postgres=settings)
    _, resolved_settings, notes = resolved(fuse(), profile, 15)
    assert "io_method" not in resolved_settings
    assert any("io_method" in n and "18" in n for n in notes)


def test_the_plan_round_trips_through_an_operations_state():
    made = plan(Request(15, "app"))
    assert layout.Plan.from_dict(made.to_dict()) == made


def test_the_commands_quote_every_value_and_show_what_they_do():
    made = plan(Request(15, "app"))
    create = commands.create_datasets(made)
    assert "-o recordsize=16K" in create.text and "tank/postgres/app/data" in create.text
    init = commands.initdb(made, "/m/data", "/m/wal")
    assert shlex.quote("/m/data/pgdata") in init.text
    assert init.shown.startswith("/usr/lib/postgresql/15/bin/initdb -D /m/data/pgdata -X "
                                 "/m/wal/pg_wal --data-checksums")
    assert commands.mounts("/m/data\n/m/wal\n") == ("/m/data", "/m/wal")


@pytest.mark.parametrize("value", ["a\nb", "x\x00", "\r"])
def test_a_setting_value_with_control_characters_is_refused(value):
    with pytest.raises(InvalidValue):
        commands.conf_line("work_mem", value)


def test_a_setting_value_is_quoted_as_alter_system_writes_it():
    assert commands.conf_line("search_path", "a', b\\") == "search_path = 'a'', b\\\\'\n"
    text = commands.auto_conf({"port": "5433", "listen_addresses": "*"})
    assert text.splitlines()[-2:] == ["listen_addresses = '*'", "port = '5433'"]


def packaged_host():
    """The real capture of the OpenZFS 2.1 VM host: Debian 12, postgresql-15 as 15/main,
    run by postgresql@15-main under systemd."""
    from apps.remote import gather
    from tests.remote.fixtures.hosts import FIXTURES, replay_transcript

    return gather.discover(replay_transcript(FIXTURES / "openzfs-2.1" / "captured"
                                             / "transcript.json"))


def test_a_packaged_host_gets_pg_createcluster_and_a_unit():
    made = plan(Request(15, "app"), packaged_host())
    assert made.packaged and made.unit == "postgresql@15-app.service"
    assert made.packaged_as == "15/app"
    argv = made.initdb("/tank/postgres/app/data/pgdata", "/tank/postgres/app/wal/pg_wal")
    assert argv[:4] == ["pg_createcluster", "15", "app", "-u"]
    assert argv[argv.index("--") + 1:][:2] == ["--waldir=/tank/postgres/app/wal/pg_wal",
                                               "--data-checksums"]
    assert "-p" in argv and argv[argv.index("-p") + 1] == str(made.port)
    assert made.start().startswith("systemctl start postgresql@15-app:")
    assert layout.Plan.from_dict(made.to_dict()) == made
    # On zfs-fuse's initdb-made cluster: initdb and pg_ctl, as before.
    plain = plan(Request(15, "app"))
    assert not plain.packaged and plain.unit is None
    assert plain.initdb()[0].endswith("/initdb")


def test_a_packaged_name_that_exists_is_refused():
    with pytest.raises(Refused) as refused:
        plan(Request(15, "main"), packaged_host())
    assert refused.value.code == "cluster_exists" and "15/main" in str(refused.value)


def test_a_major_installed_beside_a_running_one_takes_its_packaged_binaries():
    facts = fuse()
    facts.installed.bin_dirs["17"] = "/usr/lib/postgresql/17/bin"
    made = plan(Request(17, "app"), facts)
    assert made.bin_dir == "/usr/lib/postgresql/17/bin"
    assert made.owner == facts.clusters[0].owner  # the host's other clusters' owner
    assert not made.packaged  # the running cluster is not postgresql-common's
    assert plan(Request(15, "app"), facts).bin_dir == facts.clusters[0].bin_dir


def test_a_packaged_major_with_no_cluster_running_is_made_the_packages_way():
    facts = fuse()
    facts.clusters = []  # its 15/main stopped: pg_ctlcluster and the start.conf remain
    made = plan(Request(15, "app"), facts)
    assert made.bin_dir == "/usr/lib/postgresql/15/bin" and made.owner == "postgres"
    assert made.packaged and made.initdb()[:3] == ["pg_createcluster", "15", "app"]
    with pytest.raises(Refused) as refused:
        plan(Request(15, "main"), facts)  # stopped, but postgresql-common's
    assert refused.value.code == "cluster_exists"
    with pytest.raises(Refused) as refused:
        plan(Request(17, "app"), facts)
    assert refused.value.code == "no_such_major" and "majors found: 15" in str(refused.value)


def test_facts_from_before_discovery_asked_know_only_running_majors():
    facts = fuse()
    facts.installed = None
    assert facts.majors() == {15: (facts.clusters[0].bin_dir,
                              facts.clusters[0].owner)}


def test_a_plan_kept_before_packaged_existed_reads_back_as_initdb():
    kept = plan(Request(15, "app")).to_dict()
    del kept["packaged"], kept["unit"]
    assert not layout.Plan.from_dict(kept).packaged


def test_the_packaged_commands_are_guarded_and_start_by_the_unit():
    made = plan(Request(15, "app"), packaged_host())
    made_cluster = commands.initdb(made, "/m/data", "/m/wal").text
    assert "[ ! -f /etc/postgresql/15/app/postgresql.conf ]" in made_cluster
    assert "pg_createcluster 15 app -u postgres" in made_cluster
    assert "--waldir=/m/wal/pg_wal" in made_cluster
    assert "systemctl start postgresql@15-app" in commands.start(made, "/m/data/pgdata").text


def test_a_packaged_cluster_asks_pg_lsclusters_for_its_port_before_anything_is_made():
    made = plan(Request(15, "app", port=5440), packaged_host())
    whole = commands.make_and_start(made, None).text
    assert whole.index("awk -v port=5440") < whole.index("zfs create")
    assert "pg_lsclusters" in commands.initialise_and_start(made, "/m/data", "/m/wal").text
    assert "pg_lsclusters" not in commands.make_and_start(plan(Request(15, "app")), None).text


@pytest.mark.parametrize(("init", "settings", "start", "ran", "ok"), [
    ("echo init", "echo settings", "echo start", "init settings start", True),
    # initdb skipped (PG_VERSION there) and a server already running: `exit 0` ends
    # only its own part
    ("echo init; exit 0; echo never", "echo settings", "exit 0", "init settings", True),
    ("set -e\nfalse\necho never", "echo settings", "echo start", "", False),
    ("echo init", "echo settings", "echo start; exit 1", "init settings start", False),
])
def test_initialise_and_start_runs_its_parts_in_turn_and_stops_at_a_failure(
        monkeypatch, init, settings, start, ran, ok):
    import subprocess

    from apps.remote.commands import Command

    monkeypatch.setattr(commands, "initdb", lambda *a: Command(init))
    monkeypatch.setattr(commands, "write_settings", lambda *a: Command(settings))
    monkeypatch.setattr(commands, "start", lambda *a: Command(start))
    joined = commands.initialise_and_start(plan(Request(15, "app")), "/m/data", "/m/wal")
    done = subprocess.run(["sh", "-c", joined.text], capture_output=True, text=True)
    lines = done.stdout.splitlines()
    pid_read = [line for line in lines if line.startswith("postmaster pid:")]
    assert [line for line in lines if line not in pid_read] == ran.split()
    assert (done.returncode == 0) is ok
    assert bool(pid_read) is ok  # read last, only when every part passed


def test_initialise_and_start_shows_its_three_parts():
    shown = commands.initialise_and_start(plan(Request(15, "app")), "/m/data", "/m/wal").shown
    assert shown.startswith("/usr/lib/postgresql/15/bin/initdb -D /m/data/pgdata")
    assert "; then write /m/data/pgdata/postgresql.auto.conf" in shown
    assert "; then pg_ctl -D /m/data/pgdata" in shown


def test_the_started_postmasters_pid_is_read_from_the_last_line_that_gives_it():
    assert commands.started_pid("initdb says things\npostmaster pid: 77\n") == 77
    for bad in ("", "postmaster pid: \n", "postmaster pid: 1\n", "postmaster pid: 7;x\n"):
        with pytest.raises(InvalidValue):
            commands.started_pid(bad)


def test_initialise_and_start_prints_the_postmasters_pid_last(tmp_path):
    import subprocess

    data = tmp_path / "data"
    (data / "pgdata").mkdir(parents=True)
    (data / "pgdata" / "postmaster.pid").write_text("4321\n/data/pgdata\n")
    joined = commands.initialise_and_start(plan(Request(15, "app")), str(data), "/m/wal")
    pid_part = joined.text.rsplit("(\n", 1)[1].rsplit("\n)", 1)[0]
    printed = subprocess.run(["sh", "-c", pid_part], capture_output=True, text=True).stdout
    assert commands.started_pid(printed) == 4321


@pytest.mark.parametrize(("elsewhere", "ok"), [
    (False, True),
    (True, False),  # mounted somewhere the plan's initdb does not name
])
def test_make_and_start_goes_on_only_where_the_plan_put_the_datasets(monkeypatch, elsewhere,
                                                                     ok):
    import subprocess

    from apps.remote.commands import Command

    made = plan(Request(15, "app"))
    data, wal = commands.planned_mounts(made)
    mounted = "/elsewhere/data" if elsewhere else data
    monkeypatch.setattr(commands, "create_datasets",
                        lambda plan: Command(f"set -e\necho {mounted}\necho {wal}"))
    for name in ("initdb", "write_settings", "start"):
        monkeypatch.setattr(commands, name, lambda *a, name=name: Command(f"echo {name}"))
    whole = commands.make_and_start(made, room=Command("echo room"))
    done = subprocess.run(["sh", "-c", whole.text], capture_output=True, text=True)
    ran = [line for line in done.stdout.splitlines() if not line.startswith("postmaster")]
    if ok:
        assert ran == ["room", data, wal, "initdb", "write_settings", "start"]
    else:
        assert ran == ["room"] and done.returncode != 0
        assert "not where the plan put them" in done.stderr
