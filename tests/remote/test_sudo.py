"""A login other than root: routes through sudo, the generated sudoers file, and the
check of `sudo -n -l`, on output captured from a real sudo 1.9.13 (fixtures/sudo/)."""

from pathlib import Path

import pytest

from apps.remote import sudo
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import cmd, script
from apps.snapshots.core.commands import listing
from tests.remote.fixtures.hosts import read

PG15 = sudo.Cluster("postgres", "/usr/lib/postgresql/15/bin")
NEEDED = sudo.rules([PG15])


def missing(name: str, exit_code: int = 0, stderr: str = "") -> list[str]:
    found = sudo.check("pozol", exit_code, read(f"sudo/{name}"), stderr, NEEDED)
    return [m["rule"] for m in found.missing]


def test_the_generated_rules_grant_everything_pozol_asks():
    found = sudo.check("pozol", 0, read("sudo/list_all_rules.txt"), "", NEEDED)
    assert found.ok and found.missing == [] and found.refused is None


def test_a_removed_rule_is_named_with_the_line_to_add():
    found = sudo.check("pozol", 0, read("sudo/list_without_zfs.txt"), "", NEEDED)
    assert not found.ok
    assert found.missing == [{"rule": "zfs",
                              "line": "pozol ALL=(root) NOPASSWD: /usr/sbin/zfs, /usr/sbin/zpool",
                              "grants": sudo.RULES_TEXT["zfs"]}]


def test_without_lc_all_kept_the_locale_default_is_missing():
    assert missing("list_without_locale.txt") == ["locale"]


def test_aliases_globs_merged_usr_and_a_shell_limited_to_dash_c_still_grant():
    # /sbin/zfs on a merged /usr is /usr/sbin/zfs; (postgres, pg-admin) and a bin glob
    # cover the cluster; `/bin/sh -c *` is what PoZoL runs; LC_* keeps LC_ALL.
    assert missing("list_aliases_and_globs.txt") == []


def test_a_cluster_of_another_owner_or_bin_dir_is_missing_its_rule():
    other = sudo.rules([sudo.Cluster("pg-admin", "/opt/pg18/bin")])
    found = sudo.check("pozol", 0, read("sudo/list_all_rules.txt"), "", other)
    assert [m["rule"] for m in found.missing] == ["cluster:pg-admin"]
    assert found.missing[0]["line"] == ("pozol ALL=(pg-admin) NOPASSWD: /opt/pg18/bin/psql, "
                                        "/opt/pg18/bin/pg_ctl, /opt/pg18/bin/pgbench")


def test_a_password_protected_entry_grants_nothing():
    listing = sudo.parse_listing(read("sudo/list_aliases_and_globs.txt"))
    assert listing.privileges[-1] == sudo.Privilege(("ALL",), (("ALL", False),))
    assert missing("list_without_zfs.txt") == ["zfs"]  # not saved by any (ALL) ALL


@pytest.mark.parametrize("name", ["list_no_rules", "list_password_only"])
def test_sudo_refusing_to_list_misses_every_rule_and_says_why(name):
    stderr = read(f"sudo/{name}.stderr")
    found = sudo.check("pozol", 1, read(f"sudo/{name}.stdout"), stderr, NEEDED)
    assert found.refused == "sudo: a password is required"
    assert [m["rule"] for m in found.missing] == ["zfs", "sysctl", "cluster:postgres", "shell"]


def test_refusal_is_read_from_sudo_words_only():
    assert sudo.refusal(read("sudo/refused_zfs.stderr")) == "sudo: a password is required"
    assert sudo.refusal("sh: 1: sudo: not found\n") == "sh: 1: sudo: not found"
    assert sudo.refusal("cannot open 'tank/x': dataset does not exist\n") is None


def test_defaults_split_on_commas_outside_quotes_and_escapes():
    listing = sudo.parse_listing(read("sudo/list_aliases_and_globs.txt"))
    assert listing.defaults[-1] == 'env_keep+="LC_* LANG"'
    assert "secure_path=/usr/local/sbin\\:/usr/local/bin\\:/usr/sbin\\:/usr/bin\\:/sbin\\:/bin" \
        in listing.defaults


def test_the_sudoers_file_lists_each_rule_with_what_it_grants():
    text = sudo.sudoers("pozol", [PG15])
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines == [
        'Defaults:pozol env_keep += "LC_ALL"',
        "pozol ALL=(root) NOPASSWD: /usr/sbin/zfs, /usr/sbin/zpool",
        "pozol ALL=(root) NOPASSWD: /usr/sbin/sysctl",
        "pozol ALL=(postgres) NOPASSWD: /usr/lib/postgresql/15/bin/psql, "
        "/usr/lib/postgresql/15/bin/pg_ctl, /usr/lib/postgresql/15/bin/pgbench",
        "pozol ALL=(root) NOPASSWD: /bin/sh",
    ]
    assert "# shell: /bin/sh as root: any command as root." in text


def test_a_hostile_login_or_owner_never_reaches_the_file():
    with pytest.raises(ValueError):
        sudo.sudoers("pozol ALL=(ALL) ALL\n#")
    with pytest.raises(ValueError):
        sudo.rules([sudo.Cluster("root) ALL\n", "/usr/bin")])


def wrapped(command) -> str:
    return sudo.wrap(command, path="/usr/bin:/bin", grace=5, seconds=62).text


def test_a_plain_zfs_command_runs_through_the_zfs_rule():
    assert sudo.route(cmd("zpool", "status", "tank")) == sudo.Route("zfs")
    assert wrapped(cmd("zfs", "list", "-H")) == (
        "PATH=/usr/bin:/bin LC_ALL=C timeout -k 5 62 sudo -n -- zfs list -H")


def test_a_cluster_program_runs_as_its_owner_from_the_root_directory():
    target = ClusterTarget(owner="pg-admin", bin_dir="/usr/lib/postgresql/15/bin",
                           socket_dir="/run/postgresql", port=5432)
    command = target.psql("select 1")
    assert sudo.route(command) == sudo.Route("cluster", "pg-admin")
    assert wrapped(command).startswith(
        "cd / && PATH=/usr/bin:/bin LC_ALL=C timeout -k 5 62 timeout 30 sudo -n -u pg-admin -- "
        "/usr/lib/postgresql/15/bin/psql -h /run/postgresql -p 5432 -X -At")


def test_a_script_or_another_program_needs_the_shell_rule():
    assert sudo.route(script("zfs list | head -1")) == sudo.Route("shell")
    assert sudo.route(cmd("cat", "/proc/meminfo")) == sudo.Route("shell")
    assert wrapped(script("echo {x}", x="a b")) == (
        "PATH=/usr/bin:/bin LC_ALL=C timeout -k 5 62 sudo -n /bin/sh -c "
        "'PATH=/usr/bin:/bin; LC_ALL=C; export PATH LC_ALL\necho '\"'\"'a b'\"'\"''")


def test_the_snapshot_inventory_is_one_zfs_program_for_the_zfs_rule():
    command = listing(["tank/pg@a"])
    assert sudo.route(command) == sudo.Route("zfs")
    assert command.redacted() == "list 1 snapshots (zfs get -Hp)"


def test_the_readme_shows_the_file_pozol_generates():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    shown = readme.split("## Non-root login", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    generated = sudo.sudoers("pozol", [PG15])
    assert shown.strip() and generated.endswith(shown)


@pytest.mark.parametrize("bin_dir", ["/opt/pg/bin, /bin/sh", "/opt/pg:x/bin", "relative/bin",
                                     "/opt/pg bin", "/opt/pg/bin\nALL"])
def test_a_path_a_host_reports_never_writes_a_rule_of_its_own(bin_dir):
    with pytest.raises(ValueError):
        sudo.Cluster("postgres", bin_dir)
    with pytest.raises(ValueError):
        sudo.rules(paths={"zfs": bin_dir})
