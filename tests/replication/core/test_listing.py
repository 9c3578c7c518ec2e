"""Both sides of a link from the listing commands' real output (captured from zfs-fuse
test hosts: host1's cluster, host2 holding a received data dataset with a clone of its
snapshot, and no WAL dataset yet; and from the OpenZFS 2.3 VM host: encrypted and plain
sources, raw and decrypted copies; see tests/replication/fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.remote.commands import InvalidValue
from apps.replication.core.capabilities import OPENZFS_CAPABILITIES, ZFS_FUSE_CAPABILITIES
from apps.replication.core.link import Link
from apps.replication.core.listing import (
    parse_source,
    parse_target,
    source_command,
    target_command,
)
from apps.replication.core.planner import Action, plan_link
from apps.replication.core.progress import parse_counter, pipeline_messages
from apps.replication.core.streams import Copy, Encryption, decide

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SOURCES = ["tank/pg/data", "tank/pg/wal"]
TARGETS = ["tank/backup/host1/pg/data", "tank/backup/host1/pg/wal"]


def test_the_source_listing_gives_each_dataset_its_snapshots():
    listed = parse_source((FIXTURES / "zfs-fuse-source.txt").read_text(), SOURCES)
    data = listed.sources["tank/pg/data"].snapshots
    assert [(s.name, s.guid, s.createtxg, s.userrefs) for s in data] == [
        ("s1", 7595933110844600657, 27, 1)]
    assert data[0].referenced == 47316992 and data[0].used == 675840
    assert listed.sources["tank/pg/wal"].snapshots[0].guid == 11143533972532583347
    # The mountpoint is inherited from the pool, not set here: -p may be sent.
    assert listed.sources["tank/pg/data"].local_properties == frozenset()
    assert listed.tools == ()


def test_the_target_listing_tells_missing_datasets_clones_and_unknown_written():
    listed = parse_target((FIXTURES / "zfs-fuse-target.txt").read_text(), TARGETS)
    data, wal = listed.targets[TARGETS[0]], listed.targets[TARGETS[1]]
    assert data.exists and not wal.exists
    assert data.snapshots[0].guid == 7595933110844600657  # the same snapshot as the source's
    assert data.snapshots[0].clones == ("tank/clone1",)
    assert data.written is None and data.resume_token is None and not data.busy


def test_markers_for_tools_busy_targets_and_resume_tokens():
    text = ("pozol-tool\tpv\n"
            "tank/b/db\tguid\t1\t-\ntank/b/db\tcreation\t1700000000\t-\n"
            "tank/b/db\twritten\t4096\t-\ntank/b/db\treceive_resume_token\t1-abc-def\t-\n"
            "pozol-busy\ttank/b/db\n")
    target = parse_target(text, ["tank/b/db"]).targets["tank/b/db"]
    assert target.busy and target.written == 4096 and target.resume_token == "1-abc-def"
    assert parse_source(text, ["tank/db"]).tools == ("pv",)


def test_properties_a_host_lacks_are_not_asked_for():
    assert "written" not in target_command(TARGETS, ZFS_FUSE_CAPABILITIES).text
    assert "receive_resume_token" in target_command(TARGETS, OPENZFS_CAPABILITIES).text
    # zfs-fuse refuses a `zfs get` naming `encryption` (it has no such property)
    for command in (source_command(SOURCES, ZFS_FUSE_CAPABILITIES),
                    target_command(TARGETS, ZFS_FUSE_CAPABILITIES)):
        assert "encryption" not in command.text
    assert ",encryption,keystatus " in source_command(SOURCES, OPENZFS_CAPABILITIES).text
    assert ",encryption,encryptionroot " in target_command(TARGETS, OPENZFS_CAPABILITIES).text


def test_a_zfs_fuse_source_has_no_encryption_listed_which_plans_as_not_encrypted():
    listed = parse_source((FIXTURES / "zfs-fuse-source.txt").read_text(), SOURCES)
    state = listed.sources["tank/pg/data"]
    assert state.encryption is None
    stream = decide(Link("l", ("tank/pg/data",), "b"), ZFS_FUSE_CAPABILITIES,
                    ZFS_FUSE_CAPABILITIES, state.encryption, Copy.NONE)
    assert not stream.raw and not stream.refusal


OZ_SOURCES = ["tank/secret", "tank/encp/child", "tank/pg/data"]


def test_openzfs_sources_say_whether_they_are_encrypted_and_their_key_status():
    listed = parse_source((FIXTURES / "openzfs-2.3-source.txt").read_text(), OZ_SOURCES)
    assert listed.sources["tank/secret"].encryption == Encryption("aes-256-gcm", "available")
    assert listed.sources["tank/encp/child"].encryption.on  # encrypted by its parent
    assert listed.sources["tank/pg/data"].encryption == Encryption("off", "")
    assert not listed.sources["tank/pg/data"].encryption.on
    assert [s.name for s in listed.sources["tank/secret"].snapshots] == ["s1"]
    assert listed.tools == ("pv", "mbuffer")
    unloaded = parse_source((FIXTURES / "openzfs-2.3-source-key-unloaded.txt").read_text(),
                            ["tank/secret"]).sources["tank/secret"]
    assert unloaded.encryption == Encryption("aes-256-gcm", "unavailable")


def test_openzfs_targets_tell_a_raw_copy_from_a_decrypted_one():
    names = ["tank/copy/secret", "tank/copy/plain-secret", "tank/copy/missing"]
    listed = parse_target((FIXTURES / "openzfs-2.3-target.txt").read_text(), names).targets
    raw, plain, missing = (listed[name] for name in names)
    assert (raw.encryption, raw.encryption_root) == ("aes-256-gcm", "tank/copy/secret")
    assert (plain.encryption, plain.encryption_root) == ("off", "-")
    assert not missing.exists
    assert raw.written == 0 and raw.resume_token is None
    source = parse_source((FIXTURES / "openzfs-2.3-source-key-unloaded.txt").read_text(),
                          ["tank/secret"]).sources["tank/secret"]
    link = Link("l", ("tank/secret",), "tank/copy")
    assert link.target_of("tank/secret") == "tank/copy/secret"
    # the raw copy is in sync (@s2 arrived raw); the decrypted one would need the key
    in_sync = plan_link(link, {"tank/secret": source}, {"tank/secret": raw},
                        OPENZFS_CAPABILITIES, OPENZFS_CAPABILITIES)
    assert in_sync.action is Action.IN_SYNC
    behind = plan_link(link, {"tank/secret": source}, {"tank/secret": plain},
                       OPENZFS_CAPABILITIES, OPENZFS_CAPABILITIES)
    assert behind.action is Action.REFUSED and "needs the key loaded" in behind.reasons()[0]


@pytest.mark.parametrize("hostile", ["tank/a;reboot", "tank/$(id)", "-tank", "tank/a\nb",
                                     "tank/'x'"])
def test_hostile_names_never_reach_a_command(hostile):
    with pytest.raises(InvalidValue):
        source_command([hostile], OPENZFS_CAPABILITIES)
    with pytest.raises(InvalidValue):
        target_command([hostile], OPENZFS_CAPABILITIES)


def test_the_receivers_message_is_kept_when_it_follows_a_counter_record():
    err = ("\r1048576 bytes (1.0 MB, 1.0 MiB) copied, 1.0 s, 1.0 MB/s"
           "\r95420416 bytes (95 MB, 91 MiB) copied, 2 s, 47.7 MB/s"
           "cannot receive new filesystem stream: out of space\n"
           "warning: cannot send 'tank/pg/data@s': Broken pipe\npozol: zfs send failed (141)\n"
           "0+3099 records in\n0+3099 records out\n"
           "95420416 bytes (95 MB, 91 MiB) copied, 2.3 s, 41.5 MB/s\n")
    assert pipeline_messages(err).splitlines() == [
        "cannot receive new filesystem stream: out of space",
        "warning: cannot send 'tank/pg/data@s': Broken pipe", "pozol: zfs send failed (141)"]
    assert parse_counter(err) == 95420416


# A zfs that knows tank/ok, not tank/gone, and fails to read tank/bad (which exists).
FAKE_ZFS = """#!/bin/sh
case "$*" in
  *tank/gone*) echo "cannot open 'tank/gone': dataset does not exist" >&2; exit 1 ;;
  *tank/bad*) [ "$1" = list ] && exit 0; echo "I/O error" >&2; exit 2 ;;
  get*) printf 'tank/ok\\tguid\\t1\\t-\\n' ;;
esac
exit 0
"""


@pytest.mark.parametrize("command", [source_command, target_command])
def test_a_missing_dataset_is_told_from_one_that_cannot_be_read(command, tmp_path):
    import os
    import subprocess

    fake = tmp_path / "zfs"
    fake.write_text(FAKE_ZFS)
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}

    def run(datasets):
        text = command(datasets, ZFS_FUSE_CAPABILITIES).text
        return subprocess.run(["/bin/sh", "-c", text], env=env, capture_output=True,
                              text=True, timeout=30, check=False)

    missing = run(["tank/ok", "tank/gone"])
    assert missing.returncode == 0
    assert "tank/ok\tguid\t1\t-\n" in missing.stdout
    assert "pozol-missing\ttank/gone\n" in missing.stdout
    unreadable = run(["tank/ok", "tank/bad"])
    assert unreadable.returncode == 1 and "I/O error" in unreadable.stderr
    assert "pozol-missing" not in unreadable.stdout
