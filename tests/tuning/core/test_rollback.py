"""What a rollback row restores and shows as current, from what the apply step recorded
(before: read just before writing; after: read back)."""

from __future__ import annotations

from pathlib import Path

from apps.remote.shell import Result
from apps.tuning import appliers
from apps.tuning.core.rollback import Undo, undo

OPENZFS_22 = Path(__file__).parents[2] / "remote" / "fixtures" / "openzfs-2.2"


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


def _answers(params: str, arcstats: str):
    """A runner answering read_module's two reads from fixture outputs."""
    def run(command, *, timeout=60.0, check=True, stdin=None) -> Result:
        if command.text == "cat /sys/module/zfs/parameters/zfs_arc_max":
            return Result(command.text, 0, params, "")
        if command.text == "cat /proc/spl/kstat/zfs/arcstats":
            return Result(command.text, 0, arcstats, "")
        raise AssertionError(command.text)
    return run


def test_reading_zfs_arc_max_records_the_arcs_ceiling_in_force():
    # Written fixtures (openzfs-2.2): no OpenZFS output is captured yet.
    arcstats = (OPENZFS_22 / "arcstats.txt").read_text()
    params = (OPENZFS_22 / "module_params.txt").read_text()
    value = next(line.split(":", 1)[1] for line in params.splitlines()
                 if "/zfs_arc_max:" in line)
    assert appliers.read_module(_answers(value + "\n", arcstats), "zfs_arc_max") == \
        {"value": "34359738368", "arc_c_max": "34359738368"}
    assert appliers.read_module(_answers("0\n", arcstats), "zfs_arc_max") == \
        {"value": "0", "arc_c_max": "34359738368"}


def test_an_automatic_arc_is_restored_by_its_ceiling_not_by_writing_0():
    """A running OpenZFS ignores 0 (arc_tuning_update): writing the recorded c_max back
    restores the size now; removing the modprobe.d line gives automatic sizing at boot."""
    restore = undo("module", "zfs_arc_max", {"value": "0", "arc_c_max": "67528642560"},
                   "8589934592")
    assert (restore.key, restore.current, restore.desired, restore.action) == \
        ("zfs_arc_max", "8589934592", "67528642560", "reset")
    assert "restores the ARC's previous effective size now: writes 67528642560" in restore.note
    assert "a running OpenZFS ignores 0" in restore.note
    assert "the next boot sizes the ARC automatically" in restore.note


def test_an_arc_ceiling_never_recorded_is_not_claimed_restored():
    restore = undo("module", "zfs_arc_max", {"value": "0"}, "8589934592")
    assert restore.desired == "0"
    assert restore.note.startswith("writing 0 does not restore automatic sizing on a running")
    assert "was not recorded" in restore.note


def test_other_module_parameters_write_their_old_value_back():
    assert undo("module", "zfs_txg_timeout", {"value": "5"}, "1") == \
        Undo("zfs_txg_timeout", "1", "5", "reset")
