"""Host output with digits int() refuses is unreadable, never a crash."""

import pytest

from apps.remote.facts import postgres, zfs, zpool
from apps.remote.facts.numbers import int_or_none, is_digits


@pytest.mark.parametrize("text", ["²", "1²", "١٢", "", " 1", "-1", "1.0", None])
def test_only_ascii_digits_are_numbers(text):
    assert not is_digits(text)
    assert int_or_none(text) is None


def test_ascii_digits_are_numbers():
    assert int_or_none("0042") == 42


def test_parsers_read_superscript_digits_as_unknown():
    assert zpool.parse_percent("²%") is None
    assert zfs.parse_size("²") == (None, False)
    assert postgres.major_of("²") is None
    assert postgres.parse_ps("PID PPID USER ARGS\n² 1 postgres postgres -D x\n") == []
