"""Boot, provision and stop an OpenZFS test host: a QEMU guest of a cached image.

Each boot runs on a throw-away copy of the root image (QEMU's snapshot=on: the cached
image is never written) with a fresh sparse pool disk in the state dir, so every run
starts from the same host. The guest's sshd is forwarded to ADDRESS:22 on the
machine's loopback, like a zfs-fuse test host's. Provisioning then makes what an
operator's host has: a pool on the second disk, datasets for PostgreSQL's data and WAL
under one parent, and Debian's packaged cluster on them (`pg_createcluster`, started by
its systemd unit `postgresql@<major>-main`).

The QEMU process is the only thing started on the machine; it is recorded as
(pid, start time) and stopped by that PID only (apps.demo.fleet.procs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from apps.demo.fleet import keys
from apps.demo.fleet.client import close_shared, ssh_argv
from apps.demo.fleet.model import Host
from apps.demo.fleet.procs import Proc, is_ours, spawn, stop

from .image import Image, ImageError

MARKER = "pozol-vm"
STATE_FILE = "vm.json"
SHARED_PREFIX = "ssh-"  # the ssh client's shared connections: Host.control_path
BOOT_DEADLINE_TCG = 420.0
BOOT_DEADLINE_KVM = 120.0


def accelerator() -> str:
    """'kvm' where a guest really runs under KVM here, else 'tcg' (software emulation).

    /dev/kvm opening is not enough: without nested paging (EPT/NPT, seen as
    kvm's tdp_mmu) a KVM guest ran ~100x slow and died on an emulation failure.
    POZOL_VM_ACCEL overrides.
    """
    if forced := os.environ.get("POZOL_VM_ACCEL"):
        return forced
    tdp = Path("/sys/module/kvm/parameters/tdp_mmu")
    if os.access("/dev/kvm", os.R_OK | os.W_OK) and tdp.exists() and tdp.read_text().strip() == "Y":
        return "kvm"
    return "tcg"


def qemu_argv(image: Image, state: Path, addresses: list[str], accel: str) -> list[str]:
    forwards = ",".join(f"hostfwd=tcp:{address}:22-:22" for address in addresses)
    machine = ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else [
        "-accel", "tcg,thread=multi", "-cpu", "max"]
    return [
        "qemu-system-x86_64", *machine, "-m", "2048", "-smp", "2",
        "-name", f"{MARKER}:{state}", "-display", "none", "-no-reboot",
        "-kernel", str(image.kernel), "-initrd", str(image.initrd),
        "-append", "root=/dev/vda rw console=ttyS0 net.ifnames=0 quiet",
        "-drive", f"file={image.root_disk},if=virtio,format=raw,snapshot=on",
        "-drive", f"file={state / 'pool.img'},if=virtio,format=raw",
        "-netdev", f"user,id=net0,{forwards}",
        "-device", "virtio-net-pci,netdev=net0",
        "-serial", f"file:{state / 'console.log'}",
    ]  # fmt: skip


def boot(image: Image, state: Path, address: str, *, aliases: tuple[str, ...] = (),
         pool_size: str = "4G", name: str = "vm1") -> Host:
    """Start the guest and wait for its sshd; the host as the fleet describes hosts.

    `aliases`: more loopback addresses forwarded to the same sshd, so that the one
    guest can be registered as a second host (a replication link between two OpenZFS
    hosts with one VM)."""
    if shutil.which("qemu-system-x86_64") is None:
        raise ImageError("qemu-system-x86_64 is not installed")
    state.mkdir(parents=True, exist_ok=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "raw", str(state / "pool.img"), pool_size],
                   check=True)
    host = _host(image, state, address, name)
    accel = accelerator()
    proc = spawn(qemu_argv(image, state, [address, *aliases], accel), state / "qemu.log")
    (state / STATE_FILE).write_text(json.dumps({"qemu": proc.to_dict(), "host": asdict(host)}))
    deadline = BOOT_DEADLINE_KVM if accel == "kvm" else BOOT_DEADLINE_TCG
    _wait_for_ssh(host, proc, state, deadline)
    return host


def provision(host: Host, pg_major: int, aliases: tuple[str, ...] = ()) -> None:
    """Make the pool, the datasets and the packaged cluster, and start it by its unit;
    let the guest reach the machine's loopback addresses (the zfs-fuse test hosts)."""
    own = (host.address, *aliases)
    _ssh(host, _network_script(own) + _provision_script(pg_major), timeout=300)


def _network_script(addresses: tuple[str, ...]) -> str:
    # The test hosts listen on 127.0.N.M of the machine. Inside the guest all of 127/8 is
    # its own loopback, so replication from the guest to a test host would stay inside
    # it: keep the guest's own 127.0.0.0/24 and 127.0.1.0/24 local, and the addresses it
    # is registered by (its own names, as a server's address is its own: clones listen
    # there), and send the rest of 127/8 to QEMU's user-mode NAT, which connects to
    # that address on the machine.
    own = "".join(f"ip addr add {address}/32 dev lo\n" for address in addresses)
    return (
        "set -e\n"
        "sysctl -qw net.ipv4.conf.all.route_localnet=1 net.ipv4.conf.eth0.route_localnet=1\n"
        "ip route del local 127.0.0.0/8 dev lo table local\n"
        "ip route add local 127.0.0.0/24 dev lo table local\n"
        "ip route add local 127.0.1.0/24 dev lo table local\n"
        f"{own}"
        "ip route add 127.0.0.0/8 via 10.0.2.2 dev eth0\n"
    )


def shutdown(state: Path) -> None:
    """Stop the guest started in state (by its recorded PID) and remove its disks."""
    for shared in state.glob(f"{SHARED_PREFIX}*"):
        close_shared(str(shared))
    record = state / STATE_FILE
    if record.exists():
        proc = Proc.from_dict(json.loads(record.read_text())["qemu"])
        stop(proc, str(state), grace=10)
        record.unlink()
    for disk in ("pool.img",):
        (state / disk).unlink(missing_ok=True)


def running(state: Path) -> bool:
    record = state / STATE_FILE
    if not record.exists():
        return False
    return is_ours(Proc.from_dict(json.loads(record.read_text())["qemu"]), str(state))


def _provision_script(major: int) -> str:
    data, wal = f"/var/lib/postgresql/{major}", f"/var/lib/postgresql/{major}-wal"
    return f"""set -e
modprobe zfs
zpool create -f -o ashift=12 -O atime=off -O compression=lz4 tank /dev/vdb
zfs create -o mountpoint=none tank/pg
zfs create -o recordsize=16k -o mountpoint={data} tank/pg/data
zfs create -o mountpoint={wal} tank/pg/wal
chown postgres:postgres {data} {wal}
pg_createcluster --start-conf=auto {major} main -d {data}/main -- --waldir={wal}/main >/dev/null
systemctl start postgresql@{major}-main
cd / && runuser -u postgres -- sh -c 'createdb pgbench && pgbench -q -i -s 1 pgbench' \
    >/dev/null 2>&1
mkdir -p /var/lib/pozol
"""


def _host(image: Image, state: Path, address: str, name: str) -> Host:
    key = state / "client_key"
    shutil.copyfile(image.client_key, key)
    key.chmod(0o600)
    shutil.copyfile(f"{image.client_key}.pub", f"{key}.pub")
    public = image.host_public_key
    known_hosts = state / "known_hosts"
    known_hosts.write_text(keys.known_hosts_line(address, 22, public) + "\n")
    major = image.recipe.pg_major
    return Host(
        name=name, address=address, port=22, user="root",
        private_key_path=str(key), known_hosts_path=str(known_hosts),
        host_key_fingerprint=keys.fingerprint(public), host_public_key=public,
        pools=["tank"], pg_port=5432, pg_bin_dir=f"/usr/lib/postgresql/{major}/bin",
        pg_os_user="postgres", pg_socket_dir="/var/run/postgresql",
        pg_data_dir=f"/var/lib/postgresql/{major}/main",
        pg_wal_dir=f"/var/lib/postgresql/{major}-wal/main",
        pg_data_dataset="tank/pg/data", pg_wal_dataset="tank/pg/wal", pg_database="pgbench",
        pg_log_file=f"/var/log/postgresql/postgresql-{major}-main.log",
        work_dir="/var/lib/pozol", authorized_keys_path="/root/.ssh/authorized_keys",
        pg_major=major, control_path=str(state / f"{SHARED_PREFIX}%C"),
    )  # fmt: skip


def _wait_for_ssh(host: Host, proc: Proc, state: Path, deadline: float) -> None:
    started = time.monotonic()
    while time.monotonic() - started < deadline:
        if not is_ours(proc, str(state)):
            raise ImageError(f"QEMU exited during boot; see {state / 'qemu.log'} and console.log")
        if _ssh_answers(host):
            return
        time.sleep(3)
    raise ImageError(f"no ssh on {host.address} after {deadline:.0f}s; see {state / 'console.log'}")


def _ssh_answers(host: Host) -> bool:
    try:
        _ssh(host, "true", timeout=20)
    except (ImageError, subprocess.TimeoutExpired):
        return False
    return True


def _ssh(host: Host, command: str, timeout: float) -> str:
    done = subprocess.run(ssh_argv(host, command), capture_output=True, text=True,
                          timeout=timeout, check=False)
    if done.returncode != 0:
        raise ImageError(f"{command.splitlines()[0]!r} on {host.name}: {done.stderr.strip()}")
    return done.stdout
