"""arcstats in both layouts, the hit ratio by the keys present, module parameters."""

from apps.remote.facts import arc
from tests.remote.fixtures.hosts import fuse_section, read


def test_openzfs_22_arcstats_parsed_by_name_with_signed_values():
    stats = arc.parse_arcstats_proc(read("openzfs-2.2/arcstats.txt"))
    assert len(stats) == 147
    assert stats["memory_available_bytes"] == -412090368
    assert "p" not in stats and "iohits" in stats


def test_hit_ratio_on_22_counts_iohits():
    summary = arc.summarize_arc(arc.parse_arcstats_proc(read("openzfs-2.3/arcstats.txt")))
    assert summary.ratio_formula == "hits/(hits+iohits+misses)"
    assert summary.hit_ratio == round(184467301 / (184467301 + 2013442 + 9127734), 4)
    assert (summary.size, summary.c, summary.c_max) == (27917287424, 28991029248, 34359738368)


def test_hit_ratio_on_21_has_no_iohits():
    summary = arc.summarize_arc(arc.parse_arcstats_proc(read("openzfs-2.1/arcstats.txt")))
    assert summary.iohits is None and summary.ratio_formula == "hits/(hits+misses)"
    assert summary.raw["arc_meta_limit"] == 25769803776


def test_zfs_fuse_one_file_per_field():
    stats = arc.parse_arcstats_files(fuse_section("arcstats"))
    assert {"hits", "misses", "size", "c", "c_max"} <= stats.keys()
    summary = arc.summarize_arc(stats)
    assert summary.ratio_formula == "hits/(hits+misses)" and 0 < summary.hit_ratio <= 1


def test_no_counters_no_ratio():
    assert arc.hit_ratio({}) == (None, "unavailable")
    assert arc.hit_ratio({"hits": 0, "misses": 0}) == (None, "hits/(hits+misses)")


def test_module_params_and_grep_noise():
    text = read("openzfs-2.2/module_params.txt") + "grep: /sys/module/zfs/parameters/x: denied\n"
    params = arc.parse_module_params(text)
    assert params["zfs_arc_max"] == "34359738368" and params["zfs_bclone_enabled"] == "0"
    assert "x" not in params


def test_module_params_absent_on_zfs_fuse():
    assert "No such file or directory" in fuse_section("module_params")
    assert arc.parse_module_params(fuse_section("module_params")) == {}
