"""Link validation, target names, and capabilities by dialect."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apps.remote.facts.zfs import Capabilities, ZfsVersion, baseline_capabilities
from apps.replication.core.capabilities import (
    OPENZFS_CAPABILITIES,
    ZFS_FUSE_CAPABILITIES,
    replication_capabilities,
)
from apps.replication.core.link import Link, Mode, ReplicationError
from tests.replication.core.helpers import DATA, WAL


class TestTargets:
    def test_single_dataset_keeps_its_last_component(self):
        assert Link("a", ("tank/db",), "backup/h1").targets() == {"tank/db": "backup/h1/db"}

    def test_cluster_keeps_its_root_name_and_layout(self):
        link = Link("a", (DATA, WAL), "backup/h1")
        assert link.root == "tank/pg/main"
        assert link.targets() == {DATA: "backup/h1/main/data", WAL: "backup/h1/main/wal"}

    def test_hold_tag_is_per_link(self):
        assert Link("pg-1", ("tank/db",), "b").hold_tag == "pozol-link-pg-1"

    def test_a_string_source_is_one_dataset(self):
        assert Link("a", "tank/db", "b").sources == ("tank/db",)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kw", "field"), [
    ({"sources": ("tank/db;rm -rf /",)}, "sources"),
    ({"sources": ("-tank/db",)}, "sources"),
    ({"sources": ("tank/../etc",)}, "sources"),
    ({"sources": ("tank/db@snap",)}, "sources"),
    ({"sources": ()}, "sources"),
    ({"sources": ("tank/db", "tank/db")}, "sources"),
    ({"sources": ("tank/pg", "tank/pg/data")}, "sources"),
    ({"sources": ("tank/a", "other/b")}, "sources"),
    ({"sources": tuple(f"tank/d{i}" for i in range(9))}, "sources"),
    ({"target_parent": "backup/$(id)"}, "target_parent"),
    ({"target_parent": "backup h1"}, "target_parent"),
    ({"target_parent": ""}, "target_parent"),
    ({"name": "Bad Name"}, "name"),
    ({"name": "-x"}, "name"),
    ({"name": "x" * 49}, "name"),
    ({"mode": "-R"}, "mode"),
    ({"rollback_opt_in": "yes"}, "rollback_opt_in"),
    ({"bandwidth_limit": 10}, "bandwidth_limit"),
    ({"bandwidth_limit": 10**15}, "bandwidth_limit"),
    ({"bandwidth_limit": -1}, "bandwidth_limit"),
    ({"bandwidth_limit": "1M"}, "bandwidth_limit"),
    ({"bandwidth_limit": True}, "bandwidth_limit"),
])
def test_bad_link_values_are_refused_with_their_field(kw, field):
    args = {"name": "l", "sources": ("tank/db",), "target_parent": "backup/h1", **kw}
    with pytest.raises(ReplicationError) as caught:
        Link(**args)
    assert caught.value.field == field
    assert str(caught.value)  # a message a person reads


def test_mode_accepts_its_flags():
    assert Link("l", ("tank/db",), "b", mode="-i").mode is Mode.NEWEST_ONLY  # type: ignore[arg-type]


class TestCapabilities:
    def test_zfs_fuse(self):
        caps = replication_capabilities("zfs-fuse", ZfsVersion(None, None))
        assert caps == ZFS_FUSE_CAPABILITIES
        assert caps.send_properties and caps.send_intermediates
        assert not (caps.send_estimate or caps.resumable or caps.recv_no_mount
                    or caps.recv_properties or caps.written_property)

    def test_openzfs_2(self):
        version = ZfsVersion("2.2.0-1", "2.2.0-1")
        observed = baseline_capabilities("openzfs", version)
        assert replication_capabilities("openzfs", version, observed) == OPENZFS_CAPABILITIES

    def test_openzfs_0_6_has_no_resume_nor_recv_o(self):
        caps = replication_capabilities("openzfs", ZfsVersion("0.6.5", None))
        assert caps.send_estimate and not caps.resumable and not caps.recv_properties

    def test_probes_win(self):
        version = ZfsVersion("2.1.5", None)
        observed: Capabilities = baseline_capabilities("openzfs", version)
        caps = replication_capabilities("openzfs", version, replace(observed, resumable_send=False))
        assert not caps.resumable

    def test_tools(self):
        caps = replication_capabilities("zfs-fuse", None, tools=["pv"])
        assert caps.pv and not caps.mbuffer and caps.can_limit_bandwidth
        assert not replication_capabilities("zfs-fuse").can_limit_bandwidth

    def test_unknown_dialect(self):
        with pytest.raises(ValueError):
            replication_capabilities("btrfs")
