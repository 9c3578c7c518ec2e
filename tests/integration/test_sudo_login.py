"""A host reached as an ordinary user with sudo (issue 21, section 3): a test host whose
sshd lets in `pozol`, who exists only inside the host, with the sudoers file and the
helper PoZoL generates (apps/demo/fleet/login.py). Discovery through that login sees
what root sees and its check of `sudo -n -l` passes; with a rule taken away, discovery
names it, and the command that needs it fails naming it; the login on its own runs
nothing as root that PoZoL did not sign; snapshots, tuning, clones, replication work."""

from __future__ import annotations

import dataclasses
import shlex
import tempfile
import time
from pathlib import Path

import pytest
from django.utils import timezone

from apps.alerts import services as alerts
from apps.benchmarks import services as benchmarks
from apps.clones import services as clones
from apps.demo.fleet import down, up
from apps.demo.fleet.client import ssh as openssh
from apps.demo.fleet.login import SUDOERS_FILE, write_sudoers
from apps.demo.fleet.model import Layout
from apps.drills import services as drills
from apps.drills import table_recovery
from apps.fleet import services as fleet
from apps.fleet.models import PgCluster
from apps.ops.models import Operation
from apps.remote import keys, signed, ssh
from apps.remote.commands import cmd
from apps.remote.errors import SudoRefused
from apps.remote.gather import discover
from apps.replication import services as replication
from apps.replication.core import commands as replication_commands
from apps.replication.core.link import Link
from apps.replication.models import ReplicationLink
from apps.snapshots import services as snapshots
from apps.snapshots.models import Snapshot
from apps.telemetry import tasks as telemetry
from apps.telemetry.models import HostTelemetry, RawSample
from apps.tuning import services as tuning
from apps.tuning.models import PlanChange
from tests.conftest import TEST_FLEET_SUBNET
from tests.driving import drive
from tests.integration.conftest import register
from tests.integration.test_clones import connect

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

# Far above the session fleet's hosts and test_pg18's (18) on the same subnet.
INDEX = 21
LOGIN = "pozol"


@pytest.fixture(scope="module")
def sudo_fleet():
    """Host 21 reached as pozol, its cluster in Debian's packaged layout (configuration
    in /etc/postgresql/15/main); host 22 as root (the other end of a replication link)."""
    state_dir = Path(tempfile.mkdtemp(prefix="pozol-test-sudo-"))
    try:
        yield up(2, state_dir=state_dir, subnet=TEST_FLEET_SUBNET, first=INDEX,
                 logins={INDEX: LOGIN}, debian={INDEX})
    finally:
        down(state_dir)


@pytest.fixture
def sudo_host(sudo_fleet):
    return sudo_fleet[0]


@pytest.fixture
def rules(sudo_host):
    """The host's sudoers file as the fleet wrote it (PoZoL's own), put back after."""
    original = Path(sudo_host.etc_sudoers_file).read_text()
    yield original
    set_sudoers(sudo_host, original)


def set_sudoers(sudo_host, text: str) -> None:
    """The host's /etc/sudoers.d/pozol becomes text. On the zfs-fuse fleet the file is
    `etc_sudoers_file` in the host's state dir, bind-mounted in the host; another kind
    of test host (a VM) writes it its own way here, and the tests stay as they are."""
    write_sudoers(Layout(Path(sudo_host.etc_sudoers_file).parents[2]), text)


def without(sudo_host, original: str, needle: str) -> None:
    kept = [line for line in original.splitlines() if needle not in line or line.startswith("#")]
    assert len(kept) == len(original.splitlines()) - 1, needle
    set_sudoers(sudo_host, "\n".join(kept) + "\n")


def as_login(sudo_host, command: str, *, check: bool = True) -> str:
    """A command on the host over OpenSSH as pozol, independently of the product's code."""
    return openssh(sudo_host, command, check=check)


def as_root(sudo_host, command: str) -> str:
    """A command on the host over OpenSSH as root (its sshd lets root in too): what the
    tests check with, since the login itself can run no zfs as root."""
    return openssh(dataclasses.replace(sudo_host, user="root"), command)


def setting(sudo_host, name: str) -> str:
    return as_login(sudo_host, (
        f"cd / && sudo -n -u {sudo_host.pg_os_user} -- {sudo_host.pg_bin_dir}/psql -X -At "
        f"-h {sudo_host.pg_socket_dir} -p {sudo_host.pg_port} -d postgres "
        f"-c 'show {name}'")).strip()


def work_mem(sudo_host) -> str:
    return setting(sudo_host, "work_mem")


def discovered(sudo_host):
    host = register(sudo_host)
    assert host.user == LOGIN
    operation = drive(host.operations.get())
    host.refresh_from_db()
    return host, operation


def logged(operation) -> str:
    return "\n".join(operation.log_lines.values_list("text", flat=True))


def test_the_login_is_an_ordinary_user_with_pozols_sudoers(sudo_host, rules):
    assert (sudo_host.user, sudo_host.login_user) == (LOGIN, LOGIN)
    assert as_login(sudo_host, "id -un").strip() == LOGIN
    assert as_login(sudo_host, "id -u").strip() != "0"
    assert "Matching Defaults entries" in as_login(sudo_host, "sudo -n -l")
    # The user is the host's own: the machine's files know nothing of it.
    assert f"\n{LOGIN}:" not in "\n" + Path("/etc/passwd").read_text()
    assert not Path("/etc/sudoers.d", SUDOERS_FILE).exists()


def test_discovery_through_sudo_sees_what_root_sees_and_every_rule_is_granted(
        sudo_host, rules, api):
    host, operation = discovered(sudo_host)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    assert host.facts["sudo"] == {"login": LOGIN, "ok": True, "refused": None, "missing": []}
    assert "sudo -n -l" in logged(operation)
    cluster = PgCluster.objects.get(host=host)
    assert (cluster.owner, cluster.data_dir, cluster.port) == (
        sudo_host.pg_os_user, sudo_host.pg_data_dir, sudo_host.pg_port)
    assert cluster.config_file == sudo_host.pg_config_file  # Debian's layout, read via sudo

    # The same host discovered as root (its sshd lets root in too): the same facts.
    target = dataclasses.replace(host.ssh_target(), user="root")
    as_root = discover(ssh.session(target))
    as_pozol = host.typed_facts()
    assert as_root.sudo is None
    assert [d.name for d in as_pozol.datasets] == [d.name for d in as_root.datasets]
    assert {d.name: d.properties["recordsize"] for d in as_pozol.datasets} == {
        d.name: d.properties["recordsize"] for d in as_root.datasets}
    assert [(p.name, p.health, [v.name for v in p.vdevs]) for p in as_pozol.pools] == [
        (p.name, p.health, [v.name for v in p.vdevs]) for p in as_root.pools]
    assert [(c.data_dir, c.owner, c.wal_dir, c.config_file, len(c.settings))
            for c in as_pozol.clusters] == [
        (c.data_dir, c.owner, c.wal_dir, c.config_file, len(c.settings))
        for c in as_root.clusters]
    assert (as_pozol.tools, as_pozol.sysctls.keys(), as_pozol.skipped) == (
        as_root.tools, as_root.sysctls.keys(), as_root.skipped)

    # The file PoZoL prints for the host is the one that makes it work.
    answer = api.get(f"/api/hosts/{host.pk}/sudoers/")
    assert answer.status_code == 200
    assert answer.json()["sudoers"] == rules
    assert answer.json()["check"]["ok"] is True
    helper = Path(sudo_host.etc_sudoers_file).parents[2] / "usr-local-sbin" / "pozol-run"
    assert answer.json()["helper"] == helper.read_text().replace(
        str(helper.parents[1] / "pozol-run"), signed.STATE_DIR)


def test_a_removed_rule_is_named_by_discovery_and_by_what_needs_it(
        sudo_host, rules, signed_in):
    cluster_rule = f"{LOGIN} ALL=(postgres) NOPASSWD:"
    without(sudo_host, rules, cluster_rule)
    host, operation = discovered(sudo_host)
    # Discovery's bundles run through the helper, as root: it still sees the host.
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    check = host.facts["sudo"]
    assert not check["ok"]
    assert [m["rule"] for m in check["missing"]] == ["cluster:postgres"]
    assert check["missing"][0]["line"].startswith(cluster_rule)
    page = signed_in.get(f"/hosts/{host.pk}/").content.decode()
    assert 'id="sudo-missing"' in page and "/usr/lib/postgresql/15/bin/psql" in page

    cluster = PgCluster.objects.get(host=host)
    run = ssh.session(host.ssh_target())
    with pytest.raises(SudoRefused) as refused:
        run(cluster.target().psql("select 1"))
    assert refused.value.rule == "cluster:postgres"
    assert "sudo: a password is required" in str(refused.value)
    # The rest still runs: a plain zfs and a plain sysctl go through the helper.
    assert run(cmd("sysctl", "-n", "vm.swappiness")).stdout.strip().isdigit()
    assert sudo_host.pg_data_dataset in run(cmd("zfs", "list", "-H", "-o", "name")).stdout


def test_the_login_alone_runs_nothing_as_root_that_pozol_did_not_sign(
        sudo_host, rules, monkeypatch):
    host, operation = discovered(sudo_host)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    for command in ("sudo -n /bin/sh -c id", "sudo -n /usr/sbin/zfs list",
                    "sudo -n /usr/sbin/sysctl -n vm.swappiness"):
        said = as_login(sudo_host, f"{command} 2>&1; echo status=$?", check=False)
        assert "status=1" in said and "sudo: a password is required" in said, (command, said)

    # A signature of another key, a changed script, one made for another host with the
    # same key, a replay: each refused, never run.
    other = keys.load_private_key(keys.generate_keypair("not the host's")[0])
    mine = keys.load_private_key(host.ssh_target().private_key)
    here = host.host_key_fingerprint
    elsewhere = keys.fingerprint(keys.public_line_of(keys.generate_keypair("B's host key")[0]))
    text = "touch /pozol-was-here"
    forged = signed.sign_script(other, text, host=here, seconds=60)
    changed = signed.sign_script(mine, "true", host=here, seconds=60)
    for_b = signed.sign_script(mine, text, host=elsewhere, seconds=60)
    honest = signed.sign_script(mine, "id -un", host=here, seconds=60)
    for signature, script_text, words in ((forged, text, "bad signature"),
                                          (changed, text, "bad signature"),
                                          (for_b, text, "bad signature"),
                                          (honest, "id -un", None),
                                          (honest, "id -un", "this signed script already ran")):
        argv = " ".join(shlex.quote(a) for a in signature.argv(script_text))
        said = as_login(sudo_host, f"sudo -n {argv} 2>&1; echo status=$?", check=False)
        if words is None:
            assert said.split() == ["root", "status=0"], said
        else:
            assert f"pozol-run: refused: {words}" in said and "status=126" in said, said
    assert as_root(sudo_host, "test -e /pozol-was-here; echo $?").strip() == "1"

    # Through the product, the helper's refusal is a SudoRefused naming the rule: here a
    # host whose clock runs far ahead of the control plane's.
    monkeypatch.setattr(signed, "CLOCK_SKEW", -3600)
    with pytest.raises(SudoRefused) as refused:
        ssh.session(host.ssh_target())(cmd("true"), check=False)
    assert refused.value.rule == "run"
    assert "pozol-run refused: the signature expired" in str(refused.value)


def test_without_the_run_rule_discovery_fails_saying_so(sudo_host, rules, api):
    without(sudo_host, rules, "NOPASSWD: /usr/local/sbin/pozol-run")
    host, operation = discovered(sudo_host)
    assert operation.status == Operation.Status.FAILED
    assert f"{LOGIN} ALL=(root) NOPASSWD: /usr/local/sbin/pozol-run" in operation.error, \
        operation.error
    assert host.last_error_code == "sudo_refused" and host.reachable is not False


def test_without_the_helper_or_with_an_old_one_discovery_fails_saying_so(sudo_host, rules):
    helper = Path(sudo_host.etc_sudoers_file).parents[2] / "usr-local-sbin" / "pozol-run"
    current = helper.read_text()
    try:
        version = signed.HELPER_VERSION
        helper.write_text(current.replace(f"# pozol-run {version}:", "# pozol-run 0:", 1))
        host, operation = discovered(sudo_host)
        assert operation.status == Operation.Status.FAILED
        assert "/usr/local/sbin/pozol-run" in operation.error
        assert f"is version 0, not {version}" in operation.error, operation.error
        helper.unlink()
        operation = drive(fleet.discover(host))
        assert operation.status == Operation.Status.FAILED
        assert "pozol-run that pozol runs as root is missing" in operation.error, operation.error
        # One made for another host (the same key, another host key): nothing it is sent
        # runs, and the error says why.
        elsewhere = keys.fingerprint(keys.public_line_of(keys.generate_keypair("B")[0]))
        helper.write_text(current.replace(host.host_key_fingerprint, elsewhere))
        helper.chmod(0o755)
        operation = drive(fleet.discover(host))
        assert operation.status == Operation.Status.FAILED
        assert f"made for another host (host key {elsewhere})" in operation.error, \
            operation.error
    finally:
        helper.write_text(current)
        helper.chmod(0o755)


def test_a_snapshot_and_a_tuning_apply_work_through_sudo(sudo_host, rules):
    host, operation = discovered(sudo_host)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    cluster = PgCluster.objects.get(host=host)

    taken = drive(snapshots.snapshot_now(host, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    listed = as_root(sudo_host, "zfs list -H -t snapshot -o name").split()
    assert f"{sudo_host.pg_data_dataset}@{taken.state['snapshot']}" in listed, listed

    memory = "11MB" if work_mem(sudo_host) != "11MB" else "13MB"
    profile = tuning.create_profile(name="Through sudo", settings={
        "zfs": {"data": {"atime": "off"}}, "module": {}, "sysctl": {},
        "postgres": {"work_mem": memory}})
    plan = tuning.make_plan(host, version=profile.current)
    applied = drive(tuning.apply_plan(plan))
    assert applied.status == Operation.Status.SUCCEEDED, applied.error
    assert {c.status for c in plan.changes.all()} == {PlanChange.Status.APPLIED}
    assert work_mem(sudo_host) == memory
    atime = as_root(sudo_host, f"zfs get -H -o value atime {sudo_host.pg_data_dataset}")
    assert atime.strip() == "off"


def psql_as_login(sudo_host, sql: str) -> str:
    return as_login(sudo_host, (
        f"cd / && sudo -n -u {sudo_host.pg_os_user} -- {sudo_host.pg_bin_dir}/psql -X -At "
        f"-v ON_ERROR_STOP=1 -h {sudo_host.pg_socket_dir} -p {sudo_host.pg_port} -d postgres "
        f"-c \"{sql}\"")).strip()


def test_a_clone_and_a_rollback_work_through_sudo(sudo_host, rules):
    """The broad operations: scripts run through the helper, as root."""
    host, operation = discovered(sudo_host)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    cluster = PgCluster.objects.get(host=host)
    psql_as_login(sudo_host, "DROP TABLE IF EXISTS through_sudo; "
                             "CREATE TABLE through_sudo AS SELECT generate_series(1, 21) AS id")

    clone, made, password = clones.create_clone(host, cluster, name="sudo1")
    made = drive(made)
    assert made.status == Operation.Status.SUCCEEDED, made.error
    clone.refresh_from_db()
    assert connect(clone, password, "SELECT count(*) FROM through_sudo") == "21"
    assert drive(clones.destroy_clone(clone)).status == Operation.Status.SUCCEEDED

    taken = drive(snapshots.snapshot_now(host, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error
    psql_as_login(sudo_host, "INSERT INTO through_sudo SELECT generate_series(22, 40)")
    point = Snapshot.objects.get(host=host, dataset=sudo_host.pg_data_dataset,
                                 name=taken.state["snapshot"])
    rolled = drive(snapshots.rollback(point, destroy_newer=True))
    assert rolled.status == Operation.Status.SUCCEEDED, rolled.error
    assert psql_as_login(sudo_host, "SELECT count(*) FROM through_sudo") == "21"


def test_replication_to_and_from_the_sudo_login(sudo_fleet, rules):
    """To it: the link's forced command receives through the helper's standing script of
    the link, removed with the link; from it: the send runs as a detached unit through
    the helper."""
    pozol_host, root_host = sudo_fleet
    pozol_row, operation = discovered(pozol_host)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    root_row = register(root_host)
    assert drive(root_row.operations.get()).status == Operation.Status.SUCCEEDED
    root_row.refresh_from_db()
    try:
        for source, target, name in ((root_row, pozol_row, "to-pozol"),
                                     (pozol_row, root_row, "from-pozol")):
            cluster = source.clusters.get()
            link = replication.create_link(
                name=name, source_host=source, target_host=target, target_parent=f"tank/{name}",
                cluster_data_dir=cluster.data_dir, interval_minutes=0)
            for action in ("full", "incremental"):
                taken = drive(snapshots.snapshot_now(source, cluster=cluster))
                assert taken.status == Operation.Status.SUCCEEDED, taken.error
                ran = drive(replication.run_now(link), limit=600, pause=0.2)
                assert ran.status == Operation.Status.SUCCEEDED, (name, ran.error)
                assert ran.result["action"] == action
                link.refresh_from_db()
                assert link.newest_received == taken.state["snapshot"]
                time.sleep(1.1)  # snapshot names have a one-second resolution
        # The receive of the link to pozol is a root-owned standing script, gone with it.
        standing = (Path(pozol_host.etc_sudoers_file).parents[2] / "pozol-run" / "standing"
                    / signed.standing_name("to-pozol"))
        assert "exec zfs recv" in standing.read_text() and standing.stat().st_uid == 0
        link = ReplicationLink.objects.get(name="to-pozol")
        removed = drive(replication.delete_link(link))
        assert removed.status == Operation.Status.SUCCEEDED, removed.error
        assert not standing.exists()
    finally:
        for fleet_host, parent in ((pozol_host, "tank/to-pozol"), (root_host, "tank/from-pozol")):
            as_root(fleet_host, f"zfs destroy -r {parent} || true")


def test_a_link_key_with_no_file_named_goes_to_the_login_s_own_home(sudo_host, rules):
    """Run as root through the helper, where $HOME is root's: the key still goes where
    sshd looks for the login's keys, in a directory and file the login owns."""
    host, operation = discovered(sudo_host)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    run = ssh.session(host.ssh_target())
    link = Link(name="homeward", sources=("tank/pg",), target_parent="tank/homeward")
    line = "restrict ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHomeward pozol-link-homeward"
    run(replication_commands.install_key("", link, line, login=LOGIN))
    home = Path(sudo_host.etc_sudoers_file).parents[2] / "home"
    keys_file = home / ".ssh" / "authorized_keys"
    uid = home.stat().st_uid
    assert keys_file.read_text() == line + "\n"
    assert (keys_file.stat().st_uid, keys_file.parent.stat().st_uid) == (uid, uid)
    assert keys_file.parent.stat().st_mode & 0o777 == 0o700
    run(replication_commands.remove_key("", "homeward", LOGIN))
    assert keys_file.read_text() == ""
    assert not Path("/root/.ssh/authorized_keys").exists() or \
        "pozol-link-homeward" not in Path("/root/.ssh/authorized_keys").read_text()


def test_telemetry_a_scrub_a_benchmark_and_a_restart_work_through_sudo(sudo_host, rules):
    host, operation = discovered(sudo_host)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error

    assert telemetry.collect() == 1
    state = HostTelemetry.objects.get(host=host)
    assert state.last_error == "" and RawSample.objects.filter(host=host).count() == 1

    pool = host.pools.get().name
    schedule = alerts.schedule_scrub(host, pool, every_days=30)
    assert alerts.scrub_tick(timezone.now()) == 1
    schedule.refresh_from_db()
    scrubbed = drive(schedule.last_operation)
    assert scrubbed.status == Operation.Status.SUCCEEDED, scrubbed.error
    assert scrubbed.result["pool"] == pool and scrubbed.result["errors"] == 0

    bench = benchmarks.run_benchmark(host, None, {"clients": 1, "threads": 1, "duration": 3})
    ran = drive(bench.operation, limit=200, pause=0.5)
    assert ran.status == Operation.Status.SUCCEEDED, ran.error
    bench.refresh_from_db()
    assert bench.summary["tps"] > 0

    buffers = "24MB" if setting(sudo_host, "shared_buffers") != "24MB" else "32MB"
    profile = tuning.create_profile(name="Restart through sudo", settings={
        "zfs": {}, "module": {}, "sysctl": {}, "postgres": {"shared_buffers": buffers}})
    plan = tuning.make_plan(host, version=profile.current)
    applied = drive(tuning.apply_plan(plan, allow_restart=True))
    assert applied.status == Operation.Status.SUCCEEDED, applied.error
    assert setting(sudo_host, "shared_buffers") == buffers


def test_a_restore_drill_and_a_table_recovery_work_through_sudo(sudo_host, rules):
    host, operation = discovered(sudo_host)
    assert operation.status == Operation.Status.SUCCEEDED, operation.error
    cluster = PgCluster.objects.get(host=host)
    psql_as_login(sudo_host, "DROP TABLE IF EXISTS dropped_by_mistake; "
                             "CREATE TABLE dropped_by_mistake AS SELECT generate_series(1, 7) id")
    taken = drive(snapshots.snapshot_now(host, cluster=cluster))
    assert taken.status == Operation.Status.SUCCEEDED, taken.error

    run = drills.run_now(drills.save_schedule(host=host, cluster=cluster))
    assert drive(run.operation).status == Operation.Status.SUCCEEDED
    run.refresh_from_db()
    assert run.status == "passed", run.error

    psql_as_login(sudo_host, "DROP TABLE dropped_by_mistake")
    point = Snapshot.objects.get(host=host, dataset=sudo_host.pg_data_dataset,
                                 name=taken.state["snapshot"])
    recovered = drive(table_recovery.recover_table(point, database="postgres",
                                             table="dropped_by_mistake", into="back_again"))
    assert recovered.status == Operation.Status.SUCCEEDED, recovered.error
    assert psql_as_login(sudo_host, "SELECT count(*) FROM back_again") == "7"
