"""What a rollback row restores and shows as current, from what the apply step recorded
(before: read just before writing; after: read back)."""

from __future__ import annotations

from apps.tuning.core.rollback import Undo, undo


def test_moving_the_dirty_pair_to_bytes_is_undone_by_the_ratio_which_reads_0_now():
    # As read_sysctl recorded it on a host with the kernel's defaults (ratio 20, bytes 0).
    before = {"value": "0", "partner": {"name": "vm.dirty_ratio", "value": "20"}}
    assert undo("sysctl", "vm.dirty_bytes", before, "1073741824") == \
        Undo("vm.dirty_ratio", "0", "20", "reset")
    background = {"value": "0", "partner": {"name": "vm.dirty_background_ratio", "value": "10"}}
    assert undo("sysctl", "vm.dirty_background_bytes", background, "268435456") == \
        Undo("vm.dirty_background_ratio", "0", "10", "reset")


def test_a_pair_member_that_was_set_is_written_back_itself():
    before = {"value": "536870912", "partner": {"name": "vm.dirty_ratio", "value": "0"}}
    assert undo("sysctl", "vm.dirty_bytes", before, "1073741824") == \
        Undo("vm.dirty_bytes", "1073741824", "536870912", "reset")


def test_a_failed_write_leaves_the_partner_unknown():
    before = {"value": "0", "partner": {"name": "vm.dirty_ratio", "value": "20"}}
    assert undo("sysctl", "vm.dirty_bytes", before, None).current is None


def test_zfs_and_postgres_restore_by_inheritance_or_reset_unless_set_locally():
    assert undo("zfs", "atime", {"value": "on", "source": "default"}, "off").action == "reset"
    assert undo("zfs", "atime", {"value": "on", "source": "local"}, "off") == \
        Undo("atime", "off", "on", "set")
    assert undo("postgres", "work_mem", {"value": "4MB", "from_auto_conf": False},
                "8MB").action == "reset"
    assert undo("postgres", "work_mem", {"value": "4MB", "from_auto_conf": True},
                "8MB") == Undo("work_mem", "8MB", "4MB", "set")
