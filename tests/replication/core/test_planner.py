"""Every decision of plan_link, on both dialects."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apps.replication.core.capabilities import OPENZFS_0_7_CAPABILITIES
from apps.replication.core.commands import send_argv
from apps.replication.core.link import Mode, ReplicationError
from apps.replication.core.planner import (
    Action,
    Side,
    StepKind,
    plan_link,
    protected_snapshots,
)
from apps.replication.core.streams import Encryption
from tests.replication.core.helpers import (
    DATA,
    FUSE,
    MISSING,
    OZ,
    WAL,
    chain,
    cluster,
    single,
    snap,
    source,
    target,
)

SRC = chain("a", "b", "c")


def kinds(plan) -> list[StepKind]:
    return [s.kind for s in plan.steps]


def sends(plan):
    return [s.send for s in plan.steps if s.kind is StepKind.SEND]


def plan(link=None, src=SRC, tgt=MISSING, caps=(OZ, OZ), held=()):
    link = link or single()
    return plan_link(link, {"tank/db": source(*src)}, {"tank/db": tgt}, *caps, held=held)


class TestFull:
    def test_with_intermediates_sends_oldest_full_then_dash_capital_i_to_newest(self):
        p = plan()
        assert p.action is Action.FULL and p.sending == "c"
        first, second = sends(p)
        assert (first.snapshot, first.from_snapshot) == ("tank/db@a", None)
        assert (second.from_snapshot, second.snapshot, second.intermediates) == (
            "tank/db@a", "tank/db@c", True)
        assert first.target == "backup/h1/db"

    def test_newest_only_sends_the_newest_full(self):
        p = plan(single(mode=Mode.NEWEST_ONLY))
        (only,) = sends(p)
        assert (only.snapshot, only.from_snapshot) == ("tank/db@c", None)

    def test_one_snapshot_is_one_full_send(self):
        assert len(sends(plan(src=chain("a")))) == 1

    def test_parent_is_created_before_sending_and_snapshots_held_during(self):
        p = plan()
        assert kinds(p) == [StepKind.HOLD, StepKind.HOLD, StepKind.ENSURE_PARENT,
                            StepKind.SEND, StepKind.SEND, StepKind.RELEASE, StepKind.RELEASE]
        assert [s.dataset for s in p.steps if s.kind is StepKind.HOLD] == [
            "tank/db@a", "tank/db@c"]
        assert p.steps[2].dataset == "backup/h1"

    def test_zfs_fuse_target_gets_readonly_after_receive(self):
        p = plan(caps=(FUSE, FUSE))
        assert StepKind.FIX_PROPERTIES in kinds(p)
        assert StepKind.FIX_PROPERTIES not in kinds(plan())

    def test_properties_are_sent(self):
        assert all(s.properties for s in sends(plan()))
        assert all(s.properties for s in sends(plan(caps=(FUSE, FUSE))))

    def test_local_mountpoint_drops_p_where_the_target_cannot_exclude_it(self):
        link = single()
        p = plan_link(link, {"tank/db": source(*SRC, local=frozenset({"mountpoint"}))},
                      {"tank/db": MISSING}, FUSE, FUSE)
        assert not any(s.properties for s in sends(p))
        assert "mountpoint" in " ".join(p.datasets[0].notes)
        p = plan_link(link, {"tank/db": source(*SRC, local=frozenset({"mountpoint"}))},
                      {"tank/db": MISSING}, OZ, OZ)
        assert all(s.properties for s in sends(p))


class TestIncremental:
    def test_from_newest_common_to_newest_source(self):
        p = plan(tgt=target(*SRC[:2]))
        assert p.action is Action.INCREMENTAL
        (send,) = sends(p)
        assert (send.from_snapshot, send.snapshot, send.intermediates) == (
            "tank/db@b", "tank/db@c", True)
        assert p.datasets[0].common == "b"

    def test_dash_i_mode(self):
        (send,) = sends(plan(single(mode=Mode.NEWEST_ONLY), tgt=target(SRC[0])))
        assert (send.from_snapshot, send.intermediates) == ("tank/db@a", False)

    def test_common_is_matched_by_guid_not_name(self):
        impostor = snap("b", 999, 1)  # same name as the source's b, another guid
        p = plan(tgt=target(SRC[0], impostor))
        assert p.action is Action.REFUSED  # @b on the target is newer than common @a
        assert "@b" in p.reasons()[0]

    def test_renamed_snapshot_is_still_common(self):
        renamed = snap("renamed", SRC[1].guid, 1)
        p = plan(tgt=target(renamed))
        (send,) = sends(p)
        assert send.from_snapshot == "tank/db@b"
        assert p.steps[2].dataset == "backup/h1/db@renamed"  # target hold uses its name

    def test_holds_common_on_both_sides_and_the_sent_snapshot(self):
        p = plan(tgt=target(*SRC[:2]))
        holds = [(s.side, s.dataset) for s in p.steps if s.kind is StepKind.HOLD]
        assert holds == [(Side.SOURCE, "tank/db@b"), (Side.SOURCE, "tank/db@c"),
                         (Side.TARGET, "backup/h1/db@b")]
        releases = [(s.side, s.dataset) for s in p.steps if s.kind is StepKind.RELEASE]
        assert releases == holds
        assert kinds(p).index(StepKind.SEND) > max(
            i for i, k in enumerate(kinds(p)) if k is StepKind.HOLD)

    def test_unknown_written_is_said_not_refused(self):
        p = plan(tgt=target(*SRC[:2], written=None), caps=(FUSE, FUSE))
        assert p.action is Action.INCREMENTAL
        assert "written" in " ".join(p.datasets[0].notes)


class TestInSync:
    def test_nothing_to_do(self):
        p = plan(tgt=target(*SRC))
        assert p.action is Action.IN_SYNC and p.steps == ()

    def test_in_sync_with_older_target_history_pruned(self):
        assert plan(tgt=target(SRC[2])).action is Action.IN_SYNC


class TestDiverged:
    def test_newer_target_snapshot_is_refused(self):
        p = plan(tgt=target(*SRC[:2], snap("mine", 5, 5)))
        assert p.refused and p.steps == ()
        assert "@mine" in p.reasons()[0] and "Opt in" in p.reasons()[0]

    def test_written_since_common_is_refused(self):
        p = plan(tgt=target(*SRC[:2], written=4096))
        assert p.refused and "4096 bytes" in p.reasons()[0]

    def test_opt_in_rolls_back_then_sends(self):
        p = plan(single(rollback_opt_in=True), tgt=target(*SRC[:2], snap("mine", 5, 5)))
        assert p.action is Action.INCREMENTAL
        rollback = next(s for s in p.steps if s.kind is StepKind.ROLLBACK)
        assert rollback.dataset == "backup/h1/db@b"
        assert rollback.destroys == ("backup/h1/db@mine",)
        assert kinds(p).index(StepKind.ROLLBACK) < kinds(p).index(StepKind.SEND)

    def test_opt_in_with_nothing_to_send_is_a_rollback(self):
        p = plan(single(rollback_opt_in=True), tgt=target(*SRC, written=10))
        assert p.action is Action.ROLLBACK
        assert kinds(p) == [StepKind.ROLLBACK]

    def test_opt_in_refused_when_rollback_would_destroy_a_held_or_cloned_snapshot(self):
        for newer in (snap("mine", 5, 5, userrefs=1), snap("mine", 5, 5, clones=("t/c",))):
            p = plan(single(rollback_opt_in=True), tgt=target(*SRC[:2], newer))
            assert p.refused and "@mine" in p.reasons()[0]


class TestNoCommon:
    def test_target_exists_without_snapshots(self):
        p = plan(tgt=target())
        assert p.refused and "never destroys" in p.reasons()[0]

    def test_target_exists_with_unrelated_snapshots_even_with_opt_in(self):
        p = plan(single(rollback_opt_in=True), tgt=target(snap("x", 1, 0)))
        assert p.refused and "shares no snapshot" in p.reasons()[0]

    def test_same_name_other_guid_is_explained(self):
        p = plan(tgt=target(snap("a", 4242, 0)))
        assert "another guid" in p.reasons()[0]

    def test_source_without_snapshot(self):
        p = plan(src=())
        assert p.refused and "no snapshot" in p.reasons()[0]


class TestResume:
    def test_resumes_with_token_when_both_can(self):
        p = plan(tgt=target(*SRC[:1], token="1-abc-def"))
        assert p.action is Action.RESUME
        (send,) = sends(p)
        assert send.resume_token == "1-abc-def"
        holds = [s.dataset for s in p.steps if s.kind is StepKind.HOLD]
        assert holds == ["tank/db@a", "backup/h1/db@a"]

    def test_source_without_resume_discards_and_restarts_from_common(self):
        p = plan(tgt=target(*SRC[:1], token="1-abc"), caps=(FUSE, OZ))
        assert p.action is Action.INCREMENTAL
        assert kinds(p).index(StepKind.DISCARD_PARTIAL) < kinds(p).index(StepKind.SEND)
        assert "restarts" in " ".join(p.datasets[0].notes)

    def test_a_failed_resume_is_discarded_not_retried(self):
        p = plan_link(single(), {"tank/db": source(*SRC)},
                      {"tank/db": target(*SRC[:1], token="1-abc")}, OZ, OZ, resume_failed=True)
        assert p.action is Action.INCREMENTAL
        assert StepKind.DISCARD_PARTIAL in kinds(p)
        assert "resuming it failed" in " ".join(p.datasets[0].notes)

    def test_discarded_partial_first_receive_becomes_a_full_send(self):
        p = plan(tgt=target(token="1-abc"), caps=(FUSE, OZ))
        assert p.action is Action.FULL

    def test_zfs_fuse_says_transfers_restart(self):
        assert any("restarts" in n for n in plan(caps=(FUSE, FUSE)).notes)
        assert not any("restarts" in n for n in plan().notes)


class TestCluster:
    def test_each_dataset_goes_to_its_place_under_the_target_parent(self):
        link = cluster()
        p = plan_link(link, {DATA: source(*chain("a", "b")),
                             WAL: source(*chain("a", "b", base=50))},
                      {DATA: MISSING, WAL: MISSING}, OZ, OZ)
        assert {s.target for s in sends(p)} == {"backup/h1/main/data", "backup/h1/main/wal"}
        assert kinds(p).count(StepKind.ENSURE_PARENT) == 1

    def test_sends_the_newest_name_both_datasets_have(self):
        link = cluster()
        p = plan_link(link, {DATA: source(*chain("a", "b", "c")),
                             WAL: source(*chain("a", "b", base=50))},
                      {DATA: MISSING, WAL: MISSING}, OZ, OZ)
        assert p.sending == "b"
        assert {s.snapshot.split("@")[1] for s in sends(p)} == {"a", "b"}

    def test_one_refused_dataset_refuses_the_link(self):
        link = cluster()
        p = plan_link(link, {DATA: source(*chain("a", "b")),
                             WAL: source(*chain("a", "b", base=50))},
                      {DATA: target(*chain("a")), WAL: target(snap("x", 1, 0))}, OZ, OZ)
        assert p.refused and p.steps == ()
        assert p.datasets[0].action is Action.INCREMENTAL
        assert p.reasons()[0].startswith(WAL)

    def test_missing_listing_is_an_error(self):
        with pytest.raises(ReplicationError):
            plan_link(cluster(), {DATA: source()}, {DATA: MISSING}, OZ, OZ)


class TestBusy:
    def test_a_running_receive_makes_the_link_wait(self):
        link = cluster()
        p = plan_link(link, {DATA: source(*chain("a", "b")),
                             WAL: source(*chain("a", "b", base=50))},
                      {DATA: target(*chain("a")), WAL: replace(MISSING, busy=True)}, OZ, OZ)
        assert p.action is Action.BUSY and p.steps == ()
        assert "already running" in p.datasets[1].reason

    def test_refusal_wins_over_busy(self):
        link = cluster()
        p = plan_link(link, {DATA: source(), WAL: source(*chain("a"))},
                      {DATA: MISSING, WAL: replace(MISSING, busy=True)}, OZ, OZ)
        assert p.action is Action.REFUSED


class TestHoldsAndProtection:
    def test_stale_holds_are_released_first_unless_needed_again(self):
        p = plan(tgt=target(*SRC[:2]), held=("source:tank/db@a", "source:tank/db@b"))
        stale = [s for s in p.steps if s.kind is StepKind.RELEASE_STALE]
        assert [s.dataset for s in stale] == ["tank/db@a"]
        assert p.steps[0] is stale[0]

    def test_protected_names_the_common_snapshot_on_each_side(self):
        p = plan(tgt=target(*SRC[:2]))
        assert protected_snapshots(p) == {"tank/db@b": "last common snapshot of link l1"}
        assert protected_snapshots(p, Side.TARGET) == {
            "backup/h1/db@b": "last common snapshot of link l1"}

    def test_bandwidth_note_when_no_limiter(self):
        p = plan(single(bandwidth_limit=10_000_000))
        assert any("neither pv nor mbuffer" in n for n in p.notes)


class TestStreamFormat:
    """The flags of streams.decide on every send of a plan, full and incremental alike,
    and each dataset's flags with their reasons in the plan."""

    def test_openzfs_to_openzfs_sends_compressed_large_block_streams(self):
        full = plan()
        incremental = plan(tgt=target(*chain("a")))
        for send in (*sends(full), *sends(incremental)):
            assert send.compressed and send.large_blocks and not send.raw
            assert send_argv(send)[:5] == ["zfs", "send", "-p", "-c", "-L"]
        (dataset,) = full.datasets
        assert dataset.stream.flags == ("-c", "-L")
        assert "-w off: the dataset is not encrypted" in dataset.stream.text

    @pytest.mark.parametrize("caps", [(FUSE, OZ), (FUSE, FUSE)])
    def test_a_zfs_fuse_end_gets_plain_streams_and_the_plan_says_why(self, caps):
        p = plan(src=SRC, caps=caps)
        assert all(not s.compressed and not s.large_blocks for s in sends(p))
        assert all("-c" not in send_argv(s) and "-L" not in send_argv(s) for s in sends(p))
        assert "the source (zfs-fuse, pool version 23) cannot send compressed streams" in (
            p.datasets[0].stream.text)

    def test_zfs_fuse_listings_have_no_encryption_and_that_reads_as_not_encrypted(self):
        p = plan_link(single(), {"tank/db": source(*SRC, encryption=None)},
                      {"tank/db": MISSING}, FUSE, OZ)
        assert p.action is Action.FULL and not any(s.raw for s in sends(p))

    def test_the_link_opts_out(self):
        p = plan(single(compressed_streams=False, large_block_streams=False))
        assert all(send_argv(s)[:3] == ["zfs", "send", "-p"] and "-c" not in send_argv(s)
                   and "-L" not in send_argv(s) for s in sends(p))

    def test_large_blocks_stay_as_the_first_send_had_them(self):
        p = plan(single(large_block_streams=False, large_blocks_sent=True),
                 tgt=target(*chain("a")))
        assert all(s.large_blocks for s in sends(p))


ENCRYPTED = Encryption("aes-256-gcm", "available")


def encrypted_plan(tgt=MISSING, caps=(OZ, OZ), encryption=ENCRYPTED, link=None):
    return plan_link(link or single(), {"tank/db": source(*SRC, encryption=encryption)},
                     {"tank/db": tgt}, *caps)


class TestEncrypted:
    def test_an_encrypted_dataset_is_sent_raw_full_and_incremental(self):
        raw_copy = replace(target(*chain("a")), encryption="aes-256-gcm",
                           encryption_root="backup/h1/db")
        for p in (encrypted_plan(), encrypted_plan(raw_copy)):
            assert p.action in (Action.FULL, Action.INCREMENTAL)
            for send in sends(p):
                assert send.raw and send.properties
                assert send_argv(send)[:4] == ["zfs", "send", "-p", "-w"]
                assert "-c" not in send_argv(send) and "-L" not in send_argv(send)
            assert p.datasets[0].stream.text.startswith("-w (-w on: the dataset is encrypted")

    @pytest.mark.parametrize("copy", [
        {"encryption": "off", "encryption_root": "-"},  # received decrypted
        {"encryption": "aes-256-gcm", "encryption_root": "backup"},  # by an encrypted parent
    ])
    def test_a_copy_received_decrypted_continues_decrypted_without_properties(self, copy):
        p = encrypted_plan(replace(target(*chain("a")), **copy))
        assert p.action is Action.INCREMENTAL
        (send,) = sends(p)
        assert not send.raw and not send.properties and send.compressed
        assert send_argv(send)[:4] == ["zfs", "send", "-c", "-L"]
        assert any("-p only raw" in note for note in p.datasets[0].notes)

    def test_a_decrypted_copy_with_the_key_unloaded_is_refused(self):
        p = encrypted_plan(replace(target(*chain("a")), encryption="off"),
                           encryption=Encryption("aes-256-gcm", "unavailable"))
        assert p.action is Action.REFUSED and "needs the key loaded" in p.reasons()[0]

    def test_an_in_sync_dataset_is_not_refused_for_its_stream(self):
        p = encrypted_plan(replace(target(*SRC), encryption="off"),
                           encryption=Encryption("aes-256-gcm", "unavailable"))
        assert p.action is Action.IN_SYNC

    def test_a_target_without_native_encryption_is_refused(self):
        p = encrypted_plan(caps=(OZ, OPENZFS_0_7_CAPABILITIES))
        assert p.action is Action.REFUSED and not p.steps
        assert "never sends an encrypted dataset decrypted" in p.reasons()[0]

    def test_an_openzfs_source_whose_encryption_was_not_read_is_refused(self):
        p = encrypted_plan(encryption=None)
        assert p.action is Action.REFUSED
        assert "whether the dataset is encrypted was not read" in p.reasons()[0]


def test_an_openzfs_source_to_a_zfs_fuse_target_is_refused_with_the_reason():
    p = plan(caps=(OZ, FUSE))
    assert p.action is Action.REFUSED and not p.steps
    assert all("stream has unsupported feature" in d.reason for d in p.datasets)


class TestCarriedArchive:
    ARCHIVE = "tank/pozol_wal/pg:main:data"

    def carried(self, arch_src, arch_tgt=MISSING, data_tgt=MISSING):
        link = cluster(archive=self.ARCHIVE)
        snaps = chain("a", "b")
        return plan_link(link, {DATA: source(*snaps), WAL: source(*snaps),
                                self.ARCHIVE: source(*arch_src)},
                         {DATA: data_tgt, WAL: data_tgt, self.ARCHIVE: arch_tgt}, OZ, OZ)

    def test_the_archive_lands_beside_the_cluster_under_pozol_wal(self):
        link = cluster(archive=self.ARCHIVE)
        assert link.archive_target == "backup/h1/pozol_wal/pg:main:data"
        assert link.receiving() == ("backup/h1/main/data", "backup/h1/main/wal",
                                    "backup/h1/pozol_wal/pg:main:data")
        assert cluster().receiving() == tuple(cluster().targets().values())
        with pytest.raises(ReplicationError, match="archive"):
            cluster(archive=DATA)

    def test_only_the_links_own_newest_archive_snapshot_goes_full(self):
        p = self.carried(chain("pozol-carry-pg-1", "pozol-pitr-x", "pozol-carry-pg-2"))
        archive = next(d for d in p.datasets if d.source == self.ARCHIVE)
        assert archive.action is Action.FULL
        (only,) = [s.send for s in archive.steps if s.send]
        assert only.snapshot == f"{self.ARCHIVE}@pozol-carry-pg-2" and only.from_snapshot is None
        assert only.target == "backup/h1/pozol_wal/pg:main:data"

    def test_then_newest_only_from_the_common_one_even_when_the_link_sends_every_snapshot(self):
        src = chain("pozol-carry-pg-1", "pozol-carry-pg-2", "pozol-carry-pg-3")
        p = self.carried(src, arch_tgt=target(src[0]), data_tgt=target(*chain("a", "b")))
        archive = next(d for d in p.datasets if d.source == self.ARCHIVE)
        (only,) = [s.send for s in archive.steps if s.send]
        assert (only.from_snapshot, only.snapshot, only.intermediates) == (
            f"{self.ARCHIVE}@pozol-carry-pg-1", f"{self.ARCHIVE}@pozol-carry-pg-3", False)
        assert p.action is Action.INCREMENTAL  # the cluster is in sync, the archive is not

    def test_a_diverged_copy_of_the_archive_refuses_the_link(self):
        src = chain("pozol-carry-pg-1")
        mine = target(src[0], snap("by-hand", 9, 5))
        p = self.carried(src, arch_tgt=mine, data_tgt=target(*chain("a", "b")))
        assert p.refused and any("diverged" in r for r in p.reasons())
