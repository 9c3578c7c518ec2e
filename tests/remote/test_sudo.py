"""A login other than root: routes through sudo, the generated sudoers file, and the
check of `sudo -n -l`, on output captured from a real sudo 1.9.13 (fixtures/sudo/)."""

import time
from pathlib import Path

import pytest

from apps.remote import keys, signed, sudo
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
    found = sudo.check("pozol", 0, read("sudo/list_without_run.txt"), "", NEEDED)
    assert not found.ok
    assert found.missing == [{"rule": "run",
                              "line": "pozol ALL=(root) NOPASSWD: /usr/local/sbin/pozol-run",
                              "grants": sudo.RULES_TEXT["run"]}]


def test_without_lc_all_kept_the_locale_default_is_missing():
    assert missing("list_without_locale.txt") == ["locale"]


def test_aliases_and_globs_still_grant():
    # A Runas_Alias (postgres, pg-admin) and a bin glob cover the cluster; a glob of
    # /usr/local/sbin/pozol-* the helper; LC_* keeps LC_ALL.
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
    assert missing("list_without_run.txt") == ["run"]  # not saved by any (ALL) ALL


@pytest.mark.parametrize("name", ["list_no_rules", "list_password_only"])
def test_sudo_refusing_to_list_misses_every_rule_and_says_why(name):
    stderr = read(f"sudo/{name}.stderr")
    found = sudo.check("pozol", 1, read(f"sudo/{name}.stdout"), stderr, NEEDED)
    assert found.refused == "sudo: a password is required"
    assert [m["rule"] for m in found.missing] == ["run", "cluster:postgres"]


def test_refusal_is_read_from_sudo_words_only():
    assert sudo.refusal(read("sudo/refused_zfs.stderr")) == "sudo: a password is required"
    assert sudo.refusal("sh: 1: sudo: not found\n") == "sh: 1: sudo: not found"
    assert sudo.refusal("cannot open 'tank/x': dataset does not exist\n") is None
    assert sudo.refusal("pozol-run: refused: this signed script already ran once\n") == (
        "pozol-run refused: this signed script already ran once")


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
        "pozol ALL=(root) NOPASSWD: /usr/local/sbin/pozol-run",
        "pozol ALL=(postgres) NOPASSWD: /usr/lib/postgresql/15/bin/psql, "
        "/usr/lib/postgresql/15/bin/pg_ctl, /usr/lib/postgresql/15/bin/pgbench",
    ]
    # No rule names a shell, zfs or sysctl: each is root to whoever holds the login.
    assert not [line for line in lines if "/bin/sh" in line or "/usr/sbin/" in line]


def test_a_hostile_login_or_owner_never_reaches_the_file():
    with pytest.raises(ValueError):
        sudo.sudoers("pozol ALL=(ALL) ALL\n#")
    with pytest.raises(ValueError):
        sudo.rules([sudo.Cluster("root) ALL\n", "/usr/bin")])


SIGNED = signed.Signed("0" * 32, 1_900_000_000, "U1NIU0lH")


def unsigned(text: str, seconds: int) -> signed.Signed:
    assert seconds == 67  # the deadline and its grace
    return SIGNED


def wrapped(command) -> str:
    return sudo.wrap(command, path="/usr/bin:/bin", grace=5, seconds=62, sign=unsigned).text


def test_a_plain_zfs_or_sysctl_command_runs_through_the_helper():
    assert sudo.route(cmd("zpool", "status", "tank")) == sudo.Route("run")
    assert sudo.route(cmd("sysctl", "-n", "vm.swappiness")) == sudo.Route("run")
    assert wrapped(cmd("zfs", "list", "-H")) == (
        "PATH=/usr/bin:/bin LC_ALL=C timeout -k 5 62 sudo -n /usr/local/sbin/pozol-run "
        f"{SIGNED.nonce} {SIGNED.expires} {SIGNED.signature} "
        "'PATH=/usr/bin:/bin; LC_ALL=C; export PATH LC_ALL\nzfs list -H'")


def test_a_cluster_program_runs_as_its_owner_from_the_root_directory():
    target = ClusterTarget(owner="pg-admin", bin_dir="/usr/lib/postgresql/15/bin",
                           socket_dir="/run/postgresql", port=5432)
    command = target.psql("select 1")
    assert sudo.route(command) == sudo.Route("cluster", "pg-admin")
    assert wrapped(command).startswith(
        "cd / && PATH=/usr/bin:/bin LC_ALL=C timeout -k 5 62 timeout 30 sudo -n -u pg-admin -- "
        "/usr/lib/postgresql/15/bin/psql -h /run/postgresql -p 5432 -X -At")


def test_a_script_runs_through_the_helper_signed_as_it_is_sent():
    assert sudo.route(script("zfs list | head -1")) == sudo.Route("run")
    assert sudo.route(listing(["tank/pg@a"])) == sudo.Route("run")
    assert wrapped(script("echo {x}", x="a b")).endswith(
        "'PATH=/usr/bin:/bin; LC_ALL=C; export PATH LC_ALL\necho '\"'\"'a b'\"'\"''")
    sent = []

    def sign(text, seconds):
        sent.append(text)
        return SIGNED

    command = script("echo {x}", x="a b")
    sudo.wrap(command, path="/usr/bin:/bin", grace=5, seconds=62, sign=sign)
    assert sent == ["PATH=/usr/bin:/bin; LC_ALL=C; export PATH LC_ALL\n" + command.text]


def test_a_signature_is_good_for_one_message_and_some_minutes():
    key = keys.load_private_key(keys.generate_keypair("t")[0])
    host = "SHA256:" + "A" * 43
    made = signed.sign_script(key, "true", host=host, seconds=60, now=1_000_000)
    assert made.expires == 1_000_000 + 60 + signed.CLOCK_SKEW
    assert len(made.nonce) == 32 and made.nonce != signed.sign_script(
        key, "true", host=host, seconds=60).nonce
    assert signed.message(made.nonce, made.expires, host, "a\nb\n") == (
        f"pozol-run 2\n{host}\n{made.nonce}\n{made.expires}\na\nb\n".encode())
    assert time.time() < signed.sign_script(key, "true", host=host, seconds=0).expires


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
