"""ZFS dialect, version, capabilities, `zfs list` and `zfs get`, in both dialects and JSON."""

import pytest

from apps.remote.facts import zfs
from apps.remote.facts.host import dataset_from
from tests.remote.fixtures.hosts import fuse_extra, fuse_section, read


def test_openzfs_version_two_lines():
    version = zfs.parse_zfs_version(read("openzfs-2.2/zfs_version.txt"))
    assert version == zfs.ZfsVersion("2.2.4-1", "2.2.4-1")
    assert zfs.version_tuple(version.kernel) == (2, 2, 4)


def test_userland_and_kmod_may_differ():
    version = zfs.parse_zfs_version(read("openzfs-2.1/zfs_version_mismatch.txt"))
    assert version.userland == "2.2.0-1" and version.kernel == "2.1.5-1ubuntu6~22.04.1"


def test_zfs_fuse_has_no_version_command():
    refused = fuse_section("zfs_version")
    assert zfs.is_unknown_command(refused)
    assert zfs.parse_zfs_version(refused) == zfs.ZfsVersion(None, None)


def test_zfs_fuse_refusals_are_recognised():
    assert zfs.is_invalid_option(fuse_section("zfs_list_p"), "p")
    assert zfs.is_invalid_property(fuse_section("zfs_get_sync"), "sync")
    assert zfs.is_invalid_property(fuse_section("zfs_get_redundant_metadata"),
                                   "redundant_metadata")
    assert "too many arguments" in fuse_extra("snapshot_two_datasets")
    assert "invalid option 'n'" in fuse_extra("send_dry_run")


def test_zfs_fuse_names_its_compression_algorithms_when_refusing():
    assert zfs.usage_values(fuse_section("zfs_get_sync"), "compression") == (
        "on", "off", "lzjb", "gzip", "gzip-[1-9]", "zle")
    assert "'on | off | lzjb | gzip | gzip-[1-9] | zle'" in fuse_extra("set_compression_lz4")
    assert "fragmentation" not in zfs.usage_properties(fuse_section("zpool_list_p"))
    assert "ashift" in zfs.usage_properties(fuse_section("zpool_list_p"))


@pytest.mark.parametrize(("userland", "zstd", "json"), [
    ("2.1.16-1", True, False), ("2.2.4-1", True, False), ("2.3.0-1", True, True),
    ("0.8.6-1", False, False),
])
def test_openzfs_capabilities_by_version(userland, zstd, json):
    caps = zfs.baseline_capabilities(zfs.OPENZFS, zfs.ZfsVersion(userland, userland))
    assert ("zstd" in caps.compression) is zstd and "lz4" in caps.compression
    assert caps.json_output is json and caps.sync_property and caps.multi_snapshot


def test_zfs_fuse_capabilities():
    caps = zfs.baseline_capabilities(zfs.ZFS_FUSE, zfs.ZfsVersion(None, None))
    assert not (caps.list_parsable or caps.sync_property or caps.resumable_send
                or caps.json_output or caps.module_params or caps.multi_snapshot)
    assert "lz4" not in caps.compression


@pytest.mark.parametrize(("text", "expected"), [
    ("12345", (12345, True)), ("-", (None, True)), ("1.06M", (1111491, False)),
    ("1016M", (1016 * 2**20, False)), ("512K", (512 * 1024, False)), ("0", (0, True)),
    ("1.2G", (1288490189, False)), ("lots", (None, False)),
])
def test_sizes_exact_or_from_human_units(text, expected):
    assert zfs.parse_size(text) == expected


def test_openzfs_zfs_list_exact():
    rows = {r.name: r for r in zfs.parse_zfs_list(read("openzfs-2.2/zfs_list.txt"))}
    assert rows["tank/pg/data"].used == 193273528320 and rows["tank/pg/data"].exact
    assert rows["tank/vol1"].type == "volume" and rows["tank/vol1"].mountpoint is None


def test_zfs_fuse_zfs_list_human_sizes():
    rows = {r.name: r for r in zfs.parse_zfs_list(fuse_section("zfs_list"))}
    assert set(rows) == {"fast", "tank", "tank/pg", "tank/pg/data", "tank/pg/wal"}
    data = rows["tank/pg/data"]
    assert not data.exact and data.used > 10 * 2**20
    assert data.mountpoint.endswith("/mnt/pg/data")


def test_zfs_get_sources_with_spaces():
    props = zfs.parse_zfs_get(read("openzfs-2.2/zfs_get.txt"))
    recordsize = props["tank/pg/data"]["recordsize"]
    assert recordsize == zfs.PropertyValue("32768", "inherited", "tank/pg")
    assert props["tank/vol1"]["recordsize"] == zfs.PropertyValue(None, "-")


def test_zfs_fuse_get_captured():
    props = zfs.parse_zfs_get(fuse_section("zfs_get"))
    assert props["tank/pg"]["recordsize"] == zfs.PropertyValue("8192", "local")
    assert props["tank/pg/data"]["compression"].inherited_from == "tank/pg"
    assert props["tank/pg/wal"]["logbias"].value == "throughput"
    assert props["tank/pg/data"]["compressratio"].value.endswith("x")


def test_compressratio_with_or_without_x():
    assert zfs.parse_ratio("3.86x") == 3.86 and zfs.parse_ratio("2.10") == 2.1
    assert zfs.parse_ratio(None) is None and zfs.parse_ratio("-x") is None


def test_usedbysnapshots_captured_on_a_test_host():
    # tank/scratch: 40 MiB written, snapshotted, deleted; tank/pg/data: snapshotted,
    # then pgbench -i rewrote its tables. Snapshots themselves answer "-".
    text = fuse_extra("zfs_get_usedbysnapshots")
    props = zfs.parse_zfs_get(text)
    held = {name: p["usedbysnapshots"].value for name, p in props.items()}
    assert held["tank/scratch"] == "42082304" and held["tank/pg/data"] == "16277504"
    assert held["tank"] == held["tank/pg/wal"] == "0"
    assert held["tank/scratch@before_rm"] is None


def test_datasets_carry_usedbysnapshots_in_bytes():
    props = zfs.parse_zfs_get(fuse_extra("zfs_get_usedbysnapshots"))
    rows = {r.name: r for r in zfs.parse_zfs_list(fuse_extra("zfs_list_human"))}
    data = dataset_from(rows["tank/pg/data"], props["tank/pg/data"])
    assert data.usedbysnapshots == 16277504
    assert dataset_from(rows["tank/pg/wal"], props["tank/pg/wal"]).usedbysnapshots == 0
    assert dataset_from(rows["tank/pg"], {}).usedbysnapshots is None  # not asked: unknown
