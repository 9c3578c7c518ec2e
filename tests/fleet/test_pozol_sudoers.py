"""`manage.py pozol_sudoers`: the file and the helper an operator installs by hand."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.remote import signed


def printed(*args: str) -> str:
    out = StringIO()
    call_command("pozol_sudoers", *args, stdout=out)
    return out.getvalue()


def test_the_file_and_the_helper_of_a_known_host(replayed_host):
    text = printed("--host", "db1", "--login", "pozol")
    assert "pozol ALL=(root) NOPASSWD: /usr/local/sbin/pozol-run" in text
    helper = printed("--host", "db1", "--login", "pozol", "--helper")
    assert signed.installed_version(helper) == signed.HELPER_VERSION


def test_by_hand_without_a_host_and_never_a_helper_without_one(db):
    text = printed("--login", "ops", "--cluster", "postgres:/usr/lib/postgresql/17/bin")
    assert "ops ALL=(postgres) NOPASSWD: /usr/lib/postgresql/17/bin/psql" in text
    with pytest.raises(CommandError, match="--helper needs --host"):
        printed("--helper")
    with pytest.raises(CommandError, match="no host named 'nope'"):
        printed("--host", "nope")
