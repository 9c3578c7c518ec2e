"""Each host's /etc/sysctl.d and /etc/modprobe.d are its own, never the machine's;
its root's .bashrc is Debian's stock one, not the machine's.

The product persists sysctls in /etc/sysctl.d and ZFS module parameters in
/etc/modprobe.d/zfs.conf. On a test host those must land in the host's
directories of the state dir, visible to no other host and not in the
machine's /etc. Files are written over real ssh, as the product writes them.

The tests share one fleet and run in file order; the last one takes it down.
A directory the machine lacks is not created on it (not even to mount over):
the tests that need it are then skipped, and one checks the host lacks it too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from apps.demo.fleet import Host, down, up
from apps.demo.fleet.client import ssh
from apps.demo.fleet.host import DEBIAN_ROOT_BASHRC, ROOT_BASHRC
from apps.demo.fleet.preflight import PRIVATE_ETC_DIRS
from tests.demo.fleet.conftest import fresh_state_dir

pytestmark = pytest.mark.fleet

# Not 127.0.77 (the demo) nor the subnets of the other fleet tests.
SUBNET = "127.0.95"


@dataclass(frozen=True)
class EtcDir:
    machine_dir: Path
    field: str  # the Host field naming the host's copy
    file_name: str  # what the test writes there on host1
    content: str

    def backing(self, host: Host) -> str | None:
        return getattr(host, self.field)

    @property
    def machine_file(self) -> Path:
        return self.machine_dir / self.file_name


SYSCTL_D = EtcDir(
    PRIVATE_ETC_DIRS[0], "etc_sysctl_dir", "90-pozol-test.conf", "vm.dirty_bytes = 67108864\n"
)
MODPROBE_D = EtcDir(
    PRIVATE_ETC_DIRS[1], "etc_modprobe_dir", "zfs.conf", "options zfs zfs_arc_max=536870912\n"
)
ETC_DIRS = [SYSCTL_D, MODPROBE_D]


@pytest.fixture(scope="module")
def state_dir() -> Iterator[Path]:
    yield from fresh_state_dir("pozol-etc-")


@pytest.fixture(scope="module")
def hosts(state_dir: Path) -> list[Host]:
    return up(2, state_dir=state_dir, subnet=SUBNET)




def _host_mount_points(host: Host, tmp_path: Path) -> list[str]:
    return ssh(host, "cut -d' ' -f5 /proc/self/mountinfo").split()


def _host_listing(host: Host, directory: Path, tmp_path: Path) -> set[str]:
    return set(ssh(host, f"ls -A {directory}").split())


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def test_hosts_start_with_a_copy_of_the_machine_dirs(
    state_dir: Path, hosts: list[Host], tmp_path: Path
) -> None:
    present = [d for d in ETC_DIRS if d.machine_dir.is_dir()]
    assert SYSCTL_D in present, "every Debian machine has /etc/sysctl.d"
    for host in hosts:
        mounts = _host_mount_points(host, tmp_path)
        for etc in present:
            backing = etc.backing(host)
            assert backing == f"{state_dir}/{host.name}/etc/{etc.machine_dir.name}"
            assert str(etc.machine_dir) in mounts
            machine = sorted(os.listdir(etc.machine_dir))
            assert sorted(os.listdir(backing)) == machine
            assert _host_listing(host, etc.machine_dir, tmp_path) == set(machine)
            # Links stay links (Debian's 99-sysctl.conf -> ../sysctl.conf).
            for name in machine:
                link = etc.machine_dir / name
                if link.is_symlink():
                    assert os.readlink(Path(backing) / name) == os.readlink(link)
    # The bind mounts, like every mount of a host, exist only in its namespace.
    machine_mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    assert [m for m in machine_mounts if str(state_dir) in m] == []


def test_a_dir_the_machine_lacks_is_neither_created_nor_mounted(
    state_dir: Path, hosts: list[Host], tmp_path: Path
) -> None:
    missing = [d for d in ETC_DIRS if not d.machine_dir.is_dir()]
    if not missing:
        pytest.skip("the machine has both /etc/sysctl.d and /etc/modprobe.d")
    for host in hosts:
        mounts = _host_mount_points(host, tmp_path)
        for etc in missing:
            assert etc.backing(host) is None
            assert not (state_dir / host.name / "etc" / etc.machine_dir.name).exists()
            assert str(etc.machine_dir) not in mounts
            ssh(host, f"test ! -e {etc.machine_dir}")
    assert not any(os.path.lexists(d.machine_dir) for d in missing)


@pytest.mark.parametrize("etc", ETC_DIRS, ids=lambda d: d.machine_dir.name)
def test_a_file_written_on_host1_stays_on_host1(
    etc: EtcDir, hosts: list[Host], tmp_path: Path
) -> None:
    host1, host2 = hosts
    if etc.backing(host1) is None:
        # Writing there over ssh would create the directory in the machine's /etc.
        pytest.skip(f"the machine has no {etc.machine_dir}, so the hosts have none")
    machine_before = _read(etc.machine_file)
    assert machine_before != etc.content.encode()
    try:
        ssh(host1, f"cat > {etc.machine_file}", stdin=etc.content)
        assert ssh(host1, f"cat {etc.machine_file}") == etc.content
        backing1 = Path(str(etc.backing(host1)))
        assert (backing1 / etc.file_name).read_text() == etc.content
        # Not in host2's view, nor in its copy.
        seen_by_host2 = _host_listing(host2, etc.machine_dir, tmp_path)
        if machine_before is None:
            assert etc.file_name not in seen_by_host2
            assert not os.path.exists(Path(str(etc.backing(host2))) / etc.file_name)
        else:
            assert ssh(host2, f"cat {etc.machine_file}").encode() == machine_before
        # Nor in the machine's own /etc.
        if machine_before is None:
            assert not os.path.exists(etc.machine_file)
        assert _read(etc.machine_file) == machine_before
    finally:
        if machine_before is None and os.path.lexists(etc.machine_file):
            # Leaked to the machine: remove what this test wrote before failing.
            etc.machine_file.unlink()
            pytest.fail(f"{etc.machine_file} was written on the machine")


def test_root_s_shell_reads_debian_s_stock_bashrc_not_the_machine_s(
    hosts: list[Host], tmp_path: Path
) -> None:
    if not ROOT_BASHRC.is_file():
        pytest.skip("the machine has no /root/.bashrc: the hosts read none either")
    machine = ROOT_BASHRC.read_bytes()
    stock = DEBIAN_ROOT_BASHRC.read_text() if DEBIAN_ROOT_BASHRC.is_file() else ""
    for host in hosts:
        assert str(ROOT_BASHRC) in _host_mount_points(host, tmp_path)
        assert ssh(host, f"cat {ROOT_BASHRC}") == stock
    assert ROOT_BASHRC.read_bytes() == machine


def test_down_removes_the_private_dirs(state_dir: Path, hosts: list[Host]) -> None:
    backings = [Path(b) for h in hosts for d in ETC_DIRS if (b := d.backing(h)) is not None]
    assert backings and all(b.is_dir() for b in backings)
    written = [b / d.file_name for b in backings for d in ETC_DIRS if b.name == d.machine_dir.name]
    assert any(f.exists() for f in written)
    down(state_dir)
    assert not state_dir.exists()
    assert not any(os.path.lexists(b) for b in backings)
    assert not os.path.lexists(SYSCTL_D.machine_file)


@pytest.fixture
def stand_in_state_dir() -> Iterator[Path]:
    yield from fresh_state_dir("pozol-etc-")


def test_modprobe_d_is_private_on_a_machine_that_has_one(
    stand_in_state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the machine lacks /etc/modprobe.d, the same code runs for a stand-in.

    A directory named modprobe.d under /tmp plays the machine's; /etc is not
    touched. (Runs after down above, so it may reuse the subnet.)
    """
    if MODPROBE_D.machine_dir.is_dir():
        pytest.skip(f"{MODPROBE_D.machine_dir} exists and was tested itself")
    machine_dir = tmp_path / "machine" / "modprobe.d"
    machine_dir.mkdir(parents=True)
    (machine_dir / "blacklist.conf").write_text("blacklist pcspkr\n")
    monkeypatch.setattr("apps.demo.fleet.host.PRIVATE_ETC_DIRS",
                        [SYSCTL_D.machine_dir, machine_dir])
    (host,) = up(1, state_dir=stand_in_state_dir, subnet=SUBNET)
    backing = Path(str(host.etc_modprobe_dir))
    assert backing == stand_in_state_dir / host.name / "etc" / "modprobe.d"
    assert str(machine_dir) in _host_mount_points(host, tmp_path)
    ssh(host, f"cat > {machine_dir}/zfs.conf", stdin=MODPROBE_D.content)
    assert (backing / "zfs.conf").read_text() == MODPROBE_D.content
    assert sorted(os.listdir(backing)) == ["blacklist.conf", "zfs.conf"]
    assert os.listdir(machine_dir) == ["blacklist.conf"]
    down(stand_in_state_dir)
    assert not backing.exists()
    assert os.listdir(machine_dir) == ["blacklist.conf"]
