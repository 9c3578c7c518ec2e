from django.template import Context, Template


def rendered(key: str, value) -> str:
    return Template("{% load tuning %}{% plan_value key value %}").render(
        Context({"key": key, "value": value}))


def test_byte_counts_read_as_sizes_with_the_exact_number_on_hover():
    assert rendered("vm.dirty_bytes", "1073741824") == \
        '<span title="1073741824 bytes">1.0 GiB</span>'
    assert rendered("zfs_arc_max", 268435456) == '<span title="268435456 bytes">256 MiB</span>'


def test_other_values_read_as_the_host_spells_them():
    assert rendered("vm.dirty_ratio", "20") == "20"
    assert rendered("vm.dirty_bytes", "0") == "0"  # 0 means "use the ratio": no unit
    assert rendered("recordsize", "16K") == "16K"
    assert rendered("shared_buffers", None) == "—"
    assert rendered("work_mem", "<b>") == "&lt;b&gt;"
