"""OS facts and the section framing, from the zfs-fuse capture and written fixtures."""

from apps.remote.facts import system
from apps.remote.facts.sections import split_sections
from tests.remote.fixtures.hosts import fuse_extra, fuse_section, read


def test_os_release_of_the_capture_host():
    assert system.parse_os_release(fuse_section("os_release")) == system.OsRelease(
        "debian", "12", "Debian GNU/Linux 12 (bookworm)"
    )


def test_os_release_unquotes_and_survives_an_unbalanced_quote():
    parsed = system.parse_os_release('ID=ubuntu\nPRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Odd\n')
    assert (parsed.id, parsed.pretty_name) == ("ubuntu", "Ubuntu 24.04.1 LTS")


def test_meminfo_is_in_bytes_and_counts_stay_counts():
    info = system.parse_meminfo(read("openzfs-2.2/meminfo.txt"))
    assert info["MemTotal"] == 65863816 * 1024
    assert (info["Dirty"], info["Writeback"]) == (4312 * 1024, 64 * 1024)
    assert info["HugePages_Total"] == 0


def test_captured_meminfo_has_what_discovery_reads():
    info = system.parse_meminfo(fuse_section("meminfo"))
    assert {"MemTotal", "Dirty", "Writeback"} <= info.keys()


def test_sysctls_as_numbers_and_errors_skipped():
    values = system.parse_sysctls(read("plain/sysctl.txt"))
    assert values["vm.dirty_ratio"] == 20 and values["vm.dirty_bytes"] == 0
    assert "vm.nr_hugepages" not in values


def test_captured_sysctls_cover_every_asked_name():
    assert set(system.parse_sysctls(fuse_section("sysctl"))) == set(system.VM_SYSCTLS)


def test_single_values():
    assert system.parse_int(fuse_section("nproc")) >= 1
    assert system.parse_int("-1\n") == -1 and system.parse_int("abc") is None
    assert system.parse_single_line("\n6.8.0-45-generic\n") == "6.8.0-45-generic"


def test_tools_found_by_command_v():
    tools = system.parse_tools(read("openzfs-2.2/tools.txt"))
    assert tools["nvme"] == "/usr/sbin/nvme" and "psql" not in tools


def test_sections_keep_each_commands_output_and_status():
    out = "@@pozol@@ a\none\n\n@@pozol@@ rc=0\n@@pozol@@ b\nno newline\n@@pozol@@ rc=2\n"
    sections = split_sections(out)
    assert sections["a"].text == "one\n" and sections["a"].ok
    assert sections["b"].text == "no newline\n" and sections["b"].exit_code == 2


def test_a_section_cut_short_is_left_out():
    assert split_sections("@@pozol@@ a\npartial output") == {}


def test_transparent_huge_pages_captured():
    enabled = fuse_extra("thp_enabled").split("\n", 2)[2]
    defrag = fuse_extra("thp_defrag").split("\n", 2)[2]
    assert system.parse_bracketed(enabled) == "madvise"
    assert system.parse_bracketed(defrag) == "madvise"
    assert system.parse_bracketed("always defer [defer+madvise] madvise never") == \
        "defer+madvise"
    assert system.parse_bracketed("[always] madvise never\n") == "always"
    assert system.parse_bracketed("cat: /sys/kernel/mm/transparent_hugepage/enabled: No such"
                                  " file or directory") is None
