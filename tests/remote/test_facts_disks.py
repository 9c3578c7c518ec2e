"""Block devices and write caches: lsblk JSON and pairs, nvme get-feature, sysfs."""

from apps.remote.facts import disks
from tests.remote.fixtures.hosts import fuse_section, read


def test_lsblk_json_flattens_partitions_under_their_disk():
    devices = {d.name: d for d in disks.parse_lsblk_json(read("openzfs-2.2/lsblk.txt"))}
    assert devices["nvme0n1"].transport == "nvme" and devices["nvme0n1"].rotational is False
    assert devices["nvme0n1p1"].parent == "nvme0n1"
    assert devices["sda"].model == "INTEL SSDSC2KB480G8"


def test_captured_lsblk_json():
    devices = disks.parse_lsblk_json(fuse_section("lsblk"))
    assert devices and all(d.size is not None for d in devices)


def test_old_lsblk_strings_and_pairs():
    old = '{"blockdevices": [{"name": "sda", "type": "disk", "size": "512", "rota": "1"}]}'
    assert disks.parse_lsblk_json(old)[0].rotational is True
    pairs = disks.parse_lsblk_pairs(read("plain/lsblk.txt"))
    assert [d.name for d in pairs] == ["mmcblk0", "mmcblk0p1", "sda"]
    assert pairs[2].size == 2000398934016 and pairs[2].model == "WDC WD20EFRX-68E"


def test_broken_lsblk_json_is_no_devices():
    assert disks.parse_lsblk_json("lsblk: unknown column") == []


def test_nvme_volatile_write_cache():
    assert disks.parse_nvme_vwc(read("openzfs-2.2/nvme_nvme0n1.txt"), 0) is True
    # printf "%#x" prints no 0x for zero: disabled reads 00000000.
    assert disks.parse_nvme_vwc(read("openzfs-2.2/nvme_nvme1n1.txt"), 0) is False
    assert disks.parse_nvme_vwc("", 1) is None


def test_kernel_write_cache_view():
    modes = disks.parse_write_cache(fuse_section("write_cache"))
    assert set(modes.values()) <= {"write back", "write through"} and modes
