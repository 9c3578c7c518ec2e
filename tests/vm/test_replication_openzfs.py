"""Replication with a real OpenZFS host: a zfs-fuse test host to the OpenZFS VM (full,
then incremental; plain streams, since zfs-fuse sends no other), not back (zfs-fuse
cannot receive an OpenZFS stream: refused when the link is made), and the VM to
itself under a second name (two OpenZFS ends: compressed, large-block streams, progress
from `zfs send -nvP`, a transfer interrupted mid-way and resumed with its token, holds
listed by `zfs holds`; an encrypted dataset sent raw, a plain one with the link's
opt-outs). Checked with plain zfs over OpenSSH."""

from __future__ import annotations

import threading
import time

import pytest

from apps.ops.models import Operation
from apps.replication import services
from apps.replication.core import progress
from apps.replication.models import ReplicationLink
from tests.driving import drive
from tests.integration.test_replication import run_link, snapshot
from tests.integration.test_snapshots import discovered as discovered_fuse
from tests.vm.conftest import run_on
from tests.vm.test_openzfs_host import discovered
from tests.waiting import wait_for

pytestmark = [pytest.mark.vm, pytest.mark.django_db(transaction=True)]


def snapshots_of(host, dataset: str) -> list[str]:
    out = run_on(host, f"zfs list -H -t snapshot -o name -r {dataset} 2>/dev/null; true")
    return sorted(line.partition("@")[2] for line in out.split()
                  if line.startswith(dataset + "@"))


def cleanup(host, *datasets: str) -> None:
    for dataset in datasets:
        run_on(host, f"for s in $(zfs list -H -t snapshot -o name -r {dataset} 2>/dev/null); "
                     "do for t in $(zfs holds -H $s 2>/dev/null | cut -f2); do "
                     "zfs release $t $s; done; done; "
                     f"zfs destroy -r {dataset} 2>/dev/null; true")


def link_between(name, source, target, parent, **settings) -> ReplicationLink:
    cluster = source.clusters.get()
    return services.create_link(name=name, source_host=source, target_host=target,
                                target_parent=parent, cluster_data_dir=cluster.data_dir,
                                interval_minutes=0, **settings)


def full_then_incremental(link, source_host, target_fleet_host, parent) -> list[str]:
    cluster = source_host.clusters.get()
    names = [snapshot(source_host, cluster)]
    first = run_link(link)
    assert first.status == Operation.Status.SUCCEEDED, first.error
    assert first.result["action"] == "full"
    time.sleep(1.1)  # snapshot names have a one-second resolution
    names.append(snapshot(source_host, cluster))
    second = run_link(link)
    assert second.status == Operation.Status.SUCCEEDED, second.error
    assert second.result["action"] == "incremental"
    for copy in (f"{parent}/pg/data", f"{parent}/pg/wal"):
        assert snapshots_of(target_fleet_host, copy) == sorted(names), copy
    return names


def test_a_zfs_fuse_host_to_openzfs_full_then_incremental_and_not_back(
        vm_host, fleet_hosts, delivered):
    fuse = fleet_hosts[0]
    fuse_host, vm = discovered_fuse(fuse), discovered(vm_host)
    try:
        there = link_between("fuse-to-vm", fuse_host, vm, "tank/from-fuse")
        full_then_incremental(there, fuse_host, vm_host, "tank/from-fuse")
        # The copy on OpenZFS is read-only and not mounted, as the receive was told.
        assert run_on(vm_host, "zfs get -H -o value readonly,mounted tank/from-fuse/pg/data"
                      ).split() == ["on", "no"]

        # And back: zfs-fuse cannot receive OpenZFS streams at all; refused up front.
        with pytest.raises(services.LinkError, match="cannot receive a stream from OpenZFS"):
            link_between("vm-to-fuse", vm, fuse_host, "tank/from-vm")
    finally:
        cleanup(vm_host, "tank/from-fuse")
        for host in (fuse, vm_host):
            for name in run_on(host, "zfs list -H -t snapshot -o name -r tank/pg").split():
                if "@pozol_" in name:
                    run_on(host, f"for t in $(zfs holds -H {name} | cut -f2); do "
                                 f"zfs release $t {name}; done; zfs destroy {name}")


def _sent(vm_host, pid_file: str) -> int:
    """Bytes the unit's counter has seen, read from its stderr as the product reads it."""
    err = f"{vm_host.work_dir}/{pid_file.removesuffix('.pid')}.err"
    return progress.parse_counter(run_on(vm_host, f"cat {err} 2>/dev/null || true")) or 0


def _unit_pid_files(vm_host, operation_id: int) -> list[str]:
    # The run's plan rewrites this guest's authorized_keys in place (the link's key, for
    # vm2): a login in that instant is refused, which is no answer, not a failure.
    try:
        names = run_on(vm_host, f"ls {vm_host.work_dir}").split()
    except AssertionError as refused:
        if "Permission denied" not in str(refused):
            raise
        return []
    return [name for name in names
            if name.startswith(f"op{operation_id}-send") and name.endswith(".pid")]


def test_openzfs_to_openzfs_compressed_resumed_after_an_interruption(
        vm_host, vm_second_name, delivered):
    source, target = discovered(vm_host), discovered(vm_second_name)
    # Incompressible, and sent through pv at 1 MiB/s: long enough to interrupt.
    run_on(vm_host, "dd if=/dev/urandom of=/var/lib/postgresql/17/ballast bs=1M count=12 "
                    "status=none")
    link = link_between("vm-to-vm2", source, target, "tank/copy", bandwidth_limit=2**20,
                        mode="-i")
    try:
        snapshot(source, source.clusters.get())
        operation = services.run_now(link)
        cut: list[str] = []

        def interrupt() -> None:
            pid_file = wait_for(lambda: _unit_pid_files(vm_host, operation.pk), 300,
                                "the transfer to start")[0]
            # Cut once the target has received some of it (resumable from there): a cut
            # before the first records leaves no partial receive to resume. A fixed wait
            # did, once the test's own commands came back sooner (a shared connection).
            wait_for(lambda: _sent(vm_host, pid_file) >= 2 * 2**20, 300,
                     "the transfer to carry 2 MiB")
            held = run_on(vm_host, "zfs holds -H $(zfs list -H -t snapshot -o name -r tank/pg)")
            cut.append(held)
            # The whole pipeline (its process group), as a dropped connection would.
            run_on(vm_host, f"kill -TERM -- -$(cat {vm_host.work_dir}/{pid_file})")

        worker = threading.Thread(target=interrupt)
        worker.start()
        first = drive(operation, limit=900, pause=0.5)
        worker.join()
        assert first.status == Operation.Status.FAILED, "the transfer ended before the cut"
        assert services.core_link(link).hold_tag in cut[0]  # held in flight: `zfs holds`
        token = run_on(vm_host, "zfs get -H -o value receive_resume_token tank/copy/pg/data")
        assert token.strip() not in ("", "-"), "the target kept no partial receive"
        logged = " ".join(line.text for line in first.log_lines.all())
        assert "zfs send -p -c -L" in logged, logged[-3000:]
        assert first.state["expected"] and any(  # sized by zfs send -nvP
            entry.get("exact") for entry in first.state["expected"].values()), first.state

        resumed = run_link(link)
        assert resumed.status == Operation.Status.SUCCEEDED, resumed.error
        assert "zfs send -t" in " ".join(line.text for line in resumed.log_lines.all())
        for copy, dataset in (("tank/copy/pg/data", "tank/pg/data"),
                              ("tank/copy/pg/wal", "tank/pg/wal")):
            assert snapshots_of(vm_host, copy) == snapshots_of(vm_host, dataset)
        link.refresh_from_db()
        assert link.state == ReplicationLink.State.IN_SYNC
    finally:
        run_on(vm_host, "rm -f /var/lib/postgresql/17/ballast")
        cleanup(vm_host, "tank/copy")


KEY_FILE = "/root/pozol-test-raw.key"


def test_an_encrypted_dataset_goes_raw_and_a_plain_one_takes_the_opt_outs(
        vm_host, vm_second_name, delivered):
    """Two OpenZFS ends: an encrypted dataset is sent raw (-w), its copy stays encrypted
    under the source's key, which the target never gets, and its incremental needs no
    key loaded on the source; the link's opt-outs of -c and -L do not apply to it. A
    plain dataset of a link that opts out goes without -c and -L, and that -L is then
    fixed for the link."""
    run_on(vm_host, f"head -c 32 /dev/urandom > {KEY_FILE} && zfs create -o encryption=on "
                    f"-o keyformat=raw -o keylocation=file://{KEY_FILE} -o recordsize=1M "
                    "tank/secret && zfs create -o recordsize=1M tank/plain && "
                    "for d in secret plain; do dd if=/dev/urandom of=/tank/$d/f bs=1M count=2 "
                    "status=none; zfs snapshot tank/$d@s1; done")
    try:
        source, target = discovered(vm_host), discovered(vm_second_name)
        secret = services.create_link(
            name="secret", source_host=source, target_host=target, target_parent="tank/enc",
            dataset="tank/secret", interval_minutes=0, compressed_streams=False,
            large_block_streams=False)
        full = run_link(secret)
        assert full.status == Operation.Status.SUCCEEDED, full.error
        logged = " ".join(line.text for line in full.log_lines.all())
        assert "zfs send -p -w tank/secret@s1" in logged, logged[-3000:]
        assert "-w on: the dataset is encrypted (aes-256-gcm)" in logged
        assert "the link's opt-outs do not apply to an encrypted dataset" in logged
        copy = "tank/enc/secret"
        assert run_on(vm_host, f"zfs get -H -o value encryption,encryptionroot,keystatus,"
                               f"readonly {copy}").split() == [
            "aes-256-gcm", copy, "unavailable", "on"]

        # The next incremental is raw too, and needs no key on the source.
        run_on(vm_host, "dd if=/dev/urandom of=/tank/secret/g bs=1M count=1 status=none && "
                        "zfs snapshot tank/secret@s2 && zfs unmount tank/secret && "
                        "zfs unload-key tank/secret")
        incremental = run_link(secret)
        assert incremental.status == Operation.Status.SUCCEEDED, incremental.error
        assert incremental.result["action"] == "incremental"
        assert "zfs send -p -w -I tank/secret@s1 tank/secret@s2" in " ".join(
            line.text for line in incremental.log_lines.all())
        assert snapshots_of(vm_host, copy) == ["s1", "s2"]
        secret.refresh_from_db()
        assert secret.source_encryption == {"tank/secret": "aes-256-gcm"}
        assert secret.large_blocks_sent is None  # raw sends imply -L, whatever the link says
        [(_, stream)] = services.streams_of(secret)
        assert stream.flags == ("-w",)

        plain = services.create_link(
            name="plain", source_host=source, target_host=target, target_parent="tank/enc",
            dataset="tank/plain", interval_minutes=0, compressed_streams=False,
            large_block_streams=False)
        sent = run_link(plain)
        assert sent.status == Operation.Status.SUCCEEDED, sent.error
        logged = " ".join(line.text for line in sent.log_lines.all())
        assert "zfs send -p tank/plain@s1" in logged and "the link opts out" in logged
        plain.refresh_from_db()
        assert plain.large_blocks_sent is False
        with pytest.raises(services.LinkError, match="received without -L"):
            services.update_link(plain, {"large_block_streams": True})
    finally:
        cleanup(vm_host, "tank/enc", "tank/secret", "tank/plain")
        run_on(vm_host, f"rm -f {KEY_FILE}")
