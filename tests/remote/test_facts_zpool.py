"""Pools: `zpool list`, `zpool get`, `zpool status` trees, and 2.3 JSON."""

from apps.remote.facts import zpool
from tests.remote.fixtures.hosts import fuse_extra, fuse_section, read

DEFAULT_21 = ("name", "size", "allocated", "free", "checkpoint", "expandsize",
              "fragmentation", "capacity", "dedupratio", "health", "altroot")


def test_openzfs_zpool_list_exact():
    [tank] = zpool.parse_zpool_list(read("openzfs-2.2/zpool_list.txt"),
                                    zpool.OPENZFS_LIST_COLUMNS)
    assert (tank.size, tank.fragmentation, tank.capacity, tank.health) == (
        996432412672, 12, 21, "ONLINE")
    assert tank.exact


def test_unknown_fragmentation_and_a_faulted_pool():
    tank, scratch = zpool.parse_zpool_list(
        read("openzfs-2.1/zpool_list_default_columns.txt"), DEFAULT_21)
    assert tank.fragmentation is None and tank.capacity == 43
    assert scratch.health == "FAULTED" and scratch.size is None


def test_zfs_fuse_zpool_list_without_fragmentation():
    rows = {r.name: r for r in zpool.parse_zpool_list(fuse_section("zpool_list"),
                                                      zpool.ZFS_FUSE_LIST_COLUMNS)}
    assert set(rows) == {"fast", "tank"}
    assert rows["tank"].fragmentation is None and not rows["tank"].exact
    assert rows["tank"].size == 1016 * 2**20
    assert "invalid property 'frag'" in fuse_extra("zpool_list_frag")


def test_zpool_get_both_layouts():
    assert zpool.parse_zpool_get(read("openzfs-2.1/zpool_get_ashift.txt"), "ashift") == {
        "tank": "0", "scratch": "9"}
    captured = fuse_section("zpool_get")
    assert zpool.parse_zpool_get(captured, "version") == {"fast": "23", "tank": "23"}
    assert zpool.parse_zpool_get(captured, "ashift") == {"fast": "0", "tank": "0"}
    assert "invalid property '-Hp'" in fuse_extra("zpool_get_Hp")


def test_status_tree_with_logs_cache_and_spares():
    tank = zpool.parse_zpool_status(read("openzfs-2.2/zpool_status.txt"))["tank"]
    [mirror] = tank.vdevs
    assert (mirror.kind, len(mirror.children)) == ("mirror", 2)
    assert tank.has_log and tank.has_cache
    assert tank.cache[0].name == "sda" and tank.spares[0].state == "AVAIL"
    assert tank.errors == "No known data errors"


def test_status_degraded_raidz_special_dedup_and_two_pools():
    pools = zpool.parse_zpool_status(read("openzfs-2.3/zpool_status.txt"))
    tank = pools["tank"]
    [raidz] = tank.vdevs
    assert (raidz.kind, raidz.state) == ("raidz2", "DEGRADED")
    sdb, sdc = raidz.children[1], raidz.children[2]
    assert sdb.cksum == 2 and sdc.state == "UNAVAIL" and sdc.note == "was /dev/sdc1"
    assert tank.special[0].kind == "mirror" and tank.dedup[0].children[0].name == "nvme0n1p3"
    assert tank.logs[0].kind == "mirror" and tank.has_cache
    assert pools["boot"].vdevs[0].name == "sdf1" and not pools["boot"].has_log


def test_zfs_fuse_status_captured():
    pools = zpool.parse_zpool_status(fuse_section("zpool_status"))
    fast = pools["fast"]
    assert fast.vdevs[0].kind == "mirror"
    assert [c.kind for c in fast.vdevs[0].children] == ["file", "file"]
    assert fast.has_log and not fast.has_cache
    assert pools["tank"].vdevs[0].name.endswith("disk.img")


def test_last_completed_scrub_from_the_scan_line():
    tank = zpool.parse_zpool_status(read("openzfs-2.2/zpool_status.txt"))["tank"]
    assert tank.last_scrub == "2024-09-08T00:36:42"  # "Sun Sep  8": two spaces before 8
    pools = zpool.parse_zpool_status(read("openzfs-2.3/zpool_status.txt"))
    assert pools["tank"].last_scrub is None  # a resilver is no scrub
    assert zpool.parse_scrub_end("scrub in progress since Sun Sep  8 00:24:01 2024") is None
    assert zpool.parse_scrub_end("none requested") is None
    assert zpool.parse_scrub_end(
        "scrub repaired 0B in 0 days 03:02:11 with 0 errors on Sun Nov 10 03:26:12 2024"
    ) == "2024-11-10T03:26:12"
    fuse = zpool.parse_zpool_status(fuse_section("zpool_status"))
    assert all(p.last_scrub is None for p in fuse.values())  # never scrubbed
