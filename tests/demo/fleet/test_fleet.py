"""The test hosts are real: checked over real ssh with a pinned host key.

The tests in this module share one fleet and run in file order; the last
one takes it down (and the one before it rebuilds host2).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest

from apps.demo.fleet import Host, down, status, up
from apps.demo.fleet.client import ssh
from apps.demo.fleet.model import PROCESSES, Layout, Record
from apps.demo.fleet.procs import Proc, cmdline, identify, pid_namespace
from tests.demo.fleet.conftest import fresh_state_dir

pytestmark = pytest.mark.fleet

# Not the demo's 127.0.77, so a demo fleet may keep running during the tests.
SUBNET = "127.0.79"


@pytest.fixture(scope="module")
def state_dir() -> Iterator[Path]:
    yield from fresh_state_dir("pozol-fleet-test-")


@pytest.fixture(scope="module")
def hosts(state_dir: Path) -> list[Host]:
    return up(2, state_dir=state_dir, subnet=SUBNET)




def test_hosts_have_their_own_addresses_and_keys(hosts: list[Host]) -> None:
    assert [h.address for h in hosts] == [f"{SUBNET}.1", f"{SUBNET}.2"]
    assert len({h.host_public_key for h in hosts}) == 2
    for host in hosts:
        pub = Path(host.known_hosts_path).parent / "host_keys" / f"{host.name}_ed25519.pub"
        listed = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True)
        assert listed.stdout.split()[1] == host.host_key_fingerprint


def test_each_host_sees_only_its_own_pool(hosts: list[Host], tmp_path: Path) -> None:
    guids = set()
    for host in hosts:
        # zpool get has no -H on zfs-fuse; zpool list -H works on both dialects.
        pools = ssh(host, "zpool list -H -o name,guid").splitlines()
        assert [line.split("\t")[0] for line in pools] == ["tank"]
        guids.add(pools[0].split("\t")[1])
        mountpoint = ssh(host, "zfs get -H -o value mountpoint tank").strip()
        assert mountpoint.startswith(str(Path(host.work_dir).parent) + "/")
    assert len(guids) == 2


def test_machine_mounts_nothing_of_the_fleet(state_dir: Path, hosts: list[Host]) -> None:
    # Pools and private tmpfs live only inside each host's namespace.
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    assert [m for m in mounts if str(state_dir) in m or " pozol-fleet " in m] == []


def test_datasets_keep_stock_zfs_defaults(hosts: list[Host], tmp_path: Path) -> None:
    for host in hosts:
        out = ssh(
            host, f"zfs get -Hp recordsize,compression,atime {host.pg_data_dataset}"
        )
        values = {line.split("\t")[1]: line.split("\t")[2] for line in out.splitlines()}
        assert values == {"recordsize": "131072", "compression": "off", "atime": "on"}


def test_postgres_answers_over_its_own_socket(hosts: list[Host], tmp_path: Path) -> None:
    for host in hosts:
        assert _count_accounts(host, tmp_path) == "100000"


def _count_accounts(host: Host, tmp_path: Path) -> str:
    psql = [
        "runuser", "-u", host.pg_os_user, "--", f"{host.pg_bin_dir}/psql",
        "-h", host.pg_socket_dir, "-p", str(host.pg_port), "-d", host.pg_database,
        "-Atc", "select count(*) from pgbench_accounts",
    ]  # fmt: skip
    # cd /: the postgres user may not enter root's home, where ssh starts.
    return ssh(host, "cd / && " + shlex.join(psql)).strip()


def test_each_host_sees_only_its_own_processes(hosts: list[Host], tmp_path: Path) -> None:
    # What the product's discovery does: ps over ssh, then /proc/PID/cwd of
    # each postmaster. A real server lists only its own processes.
    for host, other in ((hosts[0], hosts[1]), (hosts[1], hosts[0])):
        lines = ssh(host, "ps -eo pid,args").splitlines()[1:]
        # Visible from the machine, so the checks below are not vacuous.
        assert _machine_pids_with(_host_dir(other))
        assert [line for line in lines if _host_dir(other) in line] == []
        assert [line for line in lines if SYSTEM_PG_DATA in line] == []
        postmasters = [line for line in lines if f"postgres -D {host.pg_data_dir}" in line]
        assert len(postmasters) == 1
        # PID 1 is the host's namespace holder, as init would be on a server.
        assert _host_dir(host) in next(line for line in lines if line.split()[0] == "1")
        inner_pid = postmasters[0].split()[0]
        cwd = ssh(host, f"readlink /proc/{inner_pid}/cwd").strip()
        assert cwd == host.pg_data_dir
        pids = ssh(host, "ls /proc").split()
        assert 5 < len([p for p in pids if p.isdigit()]) < 40


SYSTEM_PG_DATA = "/var/lib/postgresql/15/main"


def _host_dir(host: Host) -> str:
    return str(Path(host.work_dir).parent) + "/"


def _machine_pids_with(text: str) -> list[int]:
    return [pid for pid in _all_pids() if text in cmdline(pid)]


def test_wal_lives_on_its_own_dataset(hosts: list[Host], tmp_path: Path) -> None:
    for host in hosts:
        link = ssh(host, f"readlink {shlex.quote(host.pg_data_dir)}/pg_wal").strip()
        assert link == host.pg_wal_dir
        dataset = ssh(host, f"df --output=source {shlex.quote(link)} | tail -1")
        assert dataset.strip() == host.pg_wal_dataset


def test_up_again_leaves_running_hosts_alone(state_dir: Path, hosts: list[Host]) -> None:
    before = {s.name: s for s in status(state_dir)}
    again = up(2, state_dir=state_dir, subnet=SUBNET)
    assert [h.to_dict() for h in again] == [h.to_dict() for h in hosts]
    after = {s.name: s for s in status(state_dir)}
    assert {n: s.alive for n, s in after.items()} == {n: s.alive for n, s in before.items()}
    assert all(s.up for s in after.values())


def test_a_postgresql_restarted_in_place_keeps_its_host(
    state_dir: Path, hosts: list[Host], tmp_path: Path
) -> None:
    # A tuning apply restarts PostgreSQL with pg_ctl: a new postmaster, the same
    # host. Rebuilding it would lose its data (the sshd and the count below say).
    host = hosts[0]
    old = Record.load(Layout(state_dir / host.name))
    assert old is not None
    pg_ctl = [
        "runuser", "-u", host.pg_os_user, "--", f"{host.pg_bin_dir}/pg_ctl",
        "-D", host.pg_data_dir, "-l", host.pg_log_file, "-w", "restart",
    ]  # fmt: skip
    ssh(host, "cd / && " + shlex.join(pg_ctl))
    assert all(s.up for s in status(state_dir))
    again = up(2, state_dir=state_dir, subnet=SUBNET)
    assert again[0].host_key_fingerprint == host.host_key_fingerprint
    new = Record.load(Layout(state_dir / host.name))
    assert new is not None and new.procs["postgres"] != old.procs["postgres"]
    assert new.procs["sshd"] == old.procs["sshd"]
    assert _count_accounts(again[0], tmp_path) == "100000"


def test_killing_a_holder_ends_its_host_and_up_rebuilds_it(
    state_dir: Path, hosts: list[Host], tmp_path: Path
) -> None:
    layout = Layout(state_dir / "host2")
    record = Record.load(layout)
    assert record is not None
    host1_before = _record_dict(state_dir / "host1")
    os.kill(record.procs["namespace"].pid, signal.SIGKILL)
    # PID 1 of the namespace gone: the kernel takes every process of the host with it.
    deadline = time.monotonic() + 5
    while any(identify(p.pid) == p for p in record.procs.values()):
        assert time.monotonic() < deadline, "host2's processes outlived its namespace"
        time.sleep(0.05)
    assert not next(s for s in status(state_dir) if s.name == "host2").up
    again = up(2, state_dir=state_dir, subnet=SUBNET)
    assert all(s.up for s in status(state_dir))
    assert _record_dict(state_dir / "host1") == host1_before
    assert _count_accounts(again[1], tmp_path) == "100000"
    lines = ssh(again[1], "ps -eo pid,args").splitlines()
    assert [line for line in lines if f"postgres -D {again[1].pg_data_dir}" in line]


def _record_dict(host_dir: Path) -> dict[str, object]:
    record = Record.load(Layout(host_dir))
    assert record is not None
    return {"host": record.host.to_dict(), "procs": record.procs}


def test_down_stops_everything_and_removes_the_state_dir(
    state_dir: Path, hosts: list[Host]
) -> None:
    recorded = _recorded_processes(state_dir)
    assert recorded, "status should list the processes up started"
    namespaces = {pid_namespace(p.pid) for p in recorded} - {pid_namespace(os.getpid()), None}
    assert len(namespaces) == 2, "each host should have a PID namespace of its own"
    down(state_dir)
    assert not state_dir.exists()
    assert _machine_pids_with(str(state_dir)) == []
    assert [p for p in recorded if identify(p.pid) == p] == []
    assert [pid for pid in _all_pids() if pid_namespace(pid) in namespaces] == []


def _recorded_processes(state_dir: Path) -> list[Proc]:
    found: list[Proc] = []
    for host_dir in sorted(state_dir.glob("host*")):
        record = Record.load(Layout(host_dir))
        found += list(record.procs.values()) if record else []
    return found


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def test_down_spares_a_process_a_stale_record_points_at(tmp_path: Path) -> None:
    """A record whose PIDs were reused (or that was edited) must not kill a stranger."""
    # The stranger's command line names the data directory the record claims,
    # as the machine's own PostgreSQL would.
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "/srv/pgdata"])
    try:
        stranger = _wait_identify(decoy.pid)
        state = tmp_path / "fleet"
        (state / "host1").mkdir(parents=True)
        (state / "fleet.json").write_text('{"subnet": "127.0.79", "ssh_port": 22}\n')
        host = Host(**{f.name: _fake_value(f.name) for f in fields(Host)})
        record = Record(host=host, procs=dict.fromkeys(PROCESSES, stranger))
        record.save(Layout(state / "host1"))
        down(state)
        assert not state.exists()
        assert identify(decoy.pid) == stranger
    finally:
        decoy.kill()
        decoy.wait()


def _wait_identify(pid: int) -> Proc:
    for _ in range(100):
        proc = identify(pid)
        if proc is not None and "/srv/pgdata" in cmdline(pid):
            return proc
        time.sleep(0.01)
    raise AssertionError(f"decoy {pid} did not start")


def _fake_value(name: str) -> object:
    return {"port": 22, "pg_port": 5432, "pools": ["tank"], "pg_data_dir": "/srv/pgdata"}.get(
        name, "x"
    )


def test_down_empties_a_state_dir_that_is_a_mount_point(tmp_path: Path) -> None:
    """demo-host's state dir is a Docker volume: the kernel refuses to remove a
    mount point (EBUSY), so down must empty it and leave the directory."""
    state = tmp_path / "volume"
    state.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "pozol-test", str(state)], check=True)
    try:
        (state / "fleet.json").write_text('{"subnet": "127.0.79", "ssh_port": 22}\n')
        (state / "host_keys").mkdir()
        (state / "host_keys" / "host1_ed25519").write_text("key\n")
        (state / "id_ed25519").write_text("key\n")
        down(state)
        assert state.is_dir() and os.path.ismount(state)
        assert list(state.iterdir()) == []
    finally:
        subprocess.run(["umount", str(state)], check=True)
