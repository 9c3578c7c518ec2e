"""The stream flags (-w, -c, -L) a link's sends use, and the reason given for each:
every combination of both ends' ZFS, the dataset's encryption, what the target holds
and the link's choices, against the rules written out once more here; then the
capabilities behind them from captured `zfs version` output."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from apps.remote.facts.zfs import ZfsVersion, parse_zfs_version
from apps.replication.core.capabilities import (
    OPENZFS_0_7_CAPABILITIES,
    OPENZFS_CAPABILITIES,
    ZFS_FUSE_CAPABILITIES,
    replication_capabilities,
)
from apps.replication.core.streams import NOT_ENCRYPTED, Copy, Encryption, decide
from tests.replication.core.helpers import single

OZ, OZ07, FUSE = OPENZFS_CAPABILITIES, OPENZFS_0_7_CAPABILITIES, ZFS_FUSE_CAPABILITIES
LOADED = Encryption("aes-256-gcm", "available")
UNLOADED = Encryption("aes-256-gcm", "unavailable")
FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "remote" / "fixtures"


def expected(source, target, encryption, copy, compressed, large, sent):
    """The rules of apps/replication/core/streams.py, said independently."""
    encrypted = encryption is not None and encryption.on
    raw = encrypted and copy is not Copy.PLAIN and target.raw_stream
    refusal = (encrypted and copy is Copy.PLAIN and encryption.keystatus != "available") or (
        encrypted and copy is not Copy.PLAIN and not target.raw_stream)
    both_c = source.compressed_stream and target.compressed_stream
    both_l = source.large_block_stream and target.large_block_stream
    if raw:
        return ("-w",), False
    c = compressed and both_c
    big = sent if sent is not None else large and both_l
    refusal = refusal or bool(sent and not both_l)
    return ("-c",) * c + ("-L",) * big, refusal


def encryptions(source):
    # A ZFS without native encryption is never asked: its encryption is never read.
    return [None, NOT_ENCRYPTED, LOADED, UNLOADED] if source.raw_stream else [None]


COMBINATIONS = [
    (source, target, encryption, copy, compressed, large, sent)
    for source, target in itertools.product((OZ, OZ07, FUSE), repeat=2)
    for encryption in encryptions(source)
    for copy in (None, Copy.NONE, Copy.RAW, Copy.PLAIN)
    for compressed, large in itertools.product((True, False), repeat=2)
    for sent in (None, True, False)
]


def test_every_combination_follows_the_rules_and_gives_a_reason_per_flag():
    wrong = []
    for combination in COMBINATIONS:
        source, target, encryption, copy, compressed, large, sent = combination
        link = single(compressed_streams=compressed, large_block_streams=large,
                      large_blocks_sent=sent)
        stream = decide(link, source, target, encryption, copy)
        flags, refused = expected(*combination)
        reasons_ok = [c.flag for c in stream.choices] == ["-w", "-c", "-L"] and all(
            c.why for c in stream.choices)
        preview = encryption is None and source.raw_stream
        if (stream.flags, bool(stream.refusal), reasons_ok,
                stream.choices[0].on is None) != (flags, refused, True, preview):
            wrong.append((combination, stream))
    assert not wrong, f"{len(wrong)} of {len(COMBINATIONS)}: {wrong[:3]}"
    assert len(COMBINATIONS) == 864  # 3 x 3 ends, 4 or 1 encryptions, 4 x 4 x 3


def texts(stream) -> dict[str, str]:
    return {choice.flag: choice.text for choice in stream.choices}


class TestReasons:
    def test_two_openzfs_ends_send_compressed_large_block_streams(self):
        stream = decide(single(), OZ, OZ, NOT_ENCRYPTED, Copy.NONE)
        assert stream.flags == ("-c", "-L") and stream.properties
        said = texts(stream)
        assert said["-w"] == "-w off: the dataset is not encrypted"
        assert said["-c"].startswith("-c on: both ends take compressed streams")
        assert said["-L"].startswith("-L on: both ends take large blocks")
        assert stream.text.startswith("-c -L (-w off: the dataset is not encrypted; -c on: ")

    @pytest.mark.parametrize(("source", "target", "who"), [
        (FUSE, OZ, "the source (zfs-fuse, pool version 23) cannot send"),
        (OZ, FUSE, "the target (zfs-fuse, pool version 23) cannot receive"),
        (replace(OZ07, compressed_stream=False), OZ, "the source (OpenZFS before 0.7) cannot send"),
    ])
    def test_an_end_that_lacks_a_flag_is_named(self, source, target, who):
        said = texts(decide(single(), source, target, None, Copy.NONE))
        assert said["-c"].startswith(f"-c off: {who} compressed streams")

    def test_zfs_fuse_has_no_encryption_property_which_reads_as_not_encrypted(self):
        stream = decide(single(), FUSE, FUSE, None, Copy.NONE)
        assert stream.flags == () and not stream.refusal
        assert texts(stream)["-w"] == ("-w off: the source (zfs-fuse, pool version 23) has "
                                       "no native encryption")
        assert stream.text.startswith("no -w/-c/-L (")

    def test_the_opt_outs_say_so(self):
        stream = decide(single(compressed_streams=False, large_block_streams=False), OZ, OZ,
                        NOT_ENCRYPTED, Copy.NONE)
        assert stream.flags == ()
        assert "the link opts out" in texts(stream)["-c"]
        assert "the link opts out" in texts(stream)["-L"]

    def test_the_first_send_fixes_large_blocks_and_says_the_setting_waits_for_a_new_link(self):
        stream = decide(single(large_block_streams=False, large_blocks_sent=True), OZ, OZ,
                        NOT_ENCRYPTED, Copy.RAW)
        assert stream.flags == ("-c", "-L")
        said = texts(stream)["-L"]
        assert "kept as the link's first send had it" in said
        assert "the link's setting (off) applies to a new link only" in said

    def test_large_blocks_the_ends_no_longer_take_are_refused(self):
        stream = decide(single(large_blocks_sent=True), OZ, FUSE, None, Copy.PLAIN)
        assert "received with -L and the target (zfs-fuse" in stream.refusal

    def test_an_encrypted_dataset_goes_raw_and_the_opt_outs_do_not_apply(self):
        stream = decide(single(compressed_streams=False, large_block_streams=False), OZ, OZ,
                        UNLOADED, Copy.NONE)
        assert stream.flags == ("-w",) and stream.raw and stream.properties
        said = texts(stream)
        assert said["-w"].startswith("-w on: the dataset is encrypted (aes-256-gcm): sent as "
                                     "stored, still encrypted, and received raw")
        assert said["-w"].endswith("its key is not loaded, and a raw send needs none")
        assert "the link's opt-outs do not apply to an encrypted dataset" in said["-c"]

    def test_a_target_without_encryption_gets_no_new_copy_of_an_encrypted_dataset(self):
        stream = decide(single(), OZ, OZ07, LOADED, Copy.NONE)
        assert not stream.raw
        assert "PoZoL never sends an encrypted dataset decrypted" in stream.refusal

    def test_a_copy_received_decrypted_continues_decrypted_without_properties(self):
        stream = decide(single(), OZ, OZ, LOADED, Copy.PLAIN)
        assert stream.flags == ("-c", "-L") and not stream.properties and not stream.refusal
        assert "received decrypted" in texts(stream)["-w"]
        refused = decide(single(), OZ, OZ, UNLOADED, Copy.PLAIN)
        assert "needs the key loaded on the source (keystatus unavailable)" in refused.refusal

    def test_a_preview_before_any_run_says_the_raw_choice_is_made_at_each_run(self):
        stream = decide(single(), OZ, OZ, None)
        assert texts(stream)["-w"].startswith("-w at each run: used if the dataset is "
                                              "encrypted")
        assert stream.flags == ("-c", "-L")


class TestCapabilities:
    """Which ZFS takes which flag, from the versions discovery reads."""

    def test_the_captured_openzfs_2_3_host_takes_all_three(self):
        text = (FIXTURES / "openzfs-2.3" / "captured" / "extra" / "1.txt").read_text()
        version = parse_zfs_version(text.split("# exit 0", 1)[1])
        assert version.userland == "2.3.9-0+deb13u1"
        caps = replication_capabilities("openzfs", version)
        assert caps.compressed_stream and caps.large_block_stream and caps.raw_stream

    def test_the_captured_zfs_fuse_host_takes_none(self):
        facts = json.loads((FIXTURES / "zfs-fuse" / "captured" / "facts.json").read_text())
        zfs = facts["zfs"]
        caps = replication_capabilities(zfs["dialect"], ZfsVersion(
            zfs.get("userland_version"), zfs.get("kernel_version")))
        assert zfs["dialect"] == "zfs-fuse"
        assert not (caps.compressed_stream or caps.large_block_stream or caps.raw_stream)

    @pytest.mark.parametrize(("userland", "kernel", "c", "raw"), [
        ("2.3.9-0+deb13u1", "2.3.9-0+deb13u1", True, True),
        ("0.8.6-1", None, True, True),
        ("0.7.13-1", None, True, False),
        ("0.6.5.9-5", None, False, False),
        (None, "2.1.5-1ubuntu6", True, True),  # no userland version: the module's decides
        (None, None, True, False),  # no `zfs version` at all: before 0.8, as 0.7
    ])
    def test_openzfs_by_version(self, userland, kernel, c, raw):
        caps = replication_capabilities("openzfs", ZfsVersion(userland, kernel))
        assert (caps.compressed_stream, caps.large_block_stream, caps.raw_stream) == (
            c, True, raw)
