"""The shared formats (apps/common/formatting.py): times, durations, sizes and
pg_settings contexts, as filters every template has without a {% load %}."""

from datetime import UTC, datetime, timedelta

import pytest
from django.template import engines
from django.test import override_settings
from django.utils import timezone

from apps.common import formatting
from tests.html import parse

NOW = datetime(2026, 11, 23, 18, 43, 10, tzinfo=UTC)


def render(source: str, **context) -> str:
    return engines["django"].from_string(source).render(context)


@pytest.fixture
def frozen(monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)


def test_when_writes_one_absolute_format_with_the_zone_and_the_distance_on_hover(frozen):
    moment = NOW - timedelta(minutes=3, seconds=10)
    time = parse(render("{{ t|when }}", t=moment)).find("time")
    assert time.text == "2026-11-23 18:40 UTC"
    assert time.attrs == {"datetime": "2026-11-23T18:40:00+00:00", "title": "3 min ago"}


@override_settings(TIME_ZONE="Europe/Paris")
def test_when_uses_the_configured_time_zone_and_names_it(frozen):
    assert parse(render("{{ t|when }}", t=NOW)).find("time").text == "2026-11-23 19:43 CET"


def test_when_says_what_it_was_told_for_a_missing_time():
    assert render('{{ t|when }}', t=None) == "—"
    assert render('{{ t|when:"never" }}', t=None) == "never"


@pytest.mark.parametrize(("offset", "says"), [
    (timedelta(seconds=3), "just now"), (timedelta(seconds=42), "42 s ago"),
    (timedelta(hours=2, minutes=59), "2 h ago"), (timedelta(days=3, hours=1), "3 days ago"),
    (timedelta(days=1), "1 day ago"), (-timedelta(minutes=5), "in 5 min")])
def test_relative_time_names_the_largest_unit(offset, says):
    assert formatting.relative_time(NOW - offset, now=NOW) == says


@pytest.mark.parametrize(("seconds", "says"), [
    (0, "0 s"), (0.4, "0 s"), (59, "59 s"), (72, "1 min 12 s"), (3600, "1 h"),
    (3605, "1 h"), (3720, "1 h 2 min"), (90061, "1 day 1 h")])
def test_durations_read_like_a_person_says_them(seconds, says):
    assert formatting.compact_duration(seconds) == says


def test_duration_filter_takes_seconds_or_a_timedelta():
    assert render("{{ d|duration }}", d=timedelta(seconds=72)) == "1 min 12 s"
    assert render("{{ d|duration }}", d=72.9) == "1 min 12 s"
    assert render("{{ d|duration }}", d=None) == "—"


def test_duration_tag_measures_start_to_finish_or_so_far(frozen):
    start = NOW - timedelta(seconds=72)
    assert render("{% duration a b %}", a=start, b=NOW) == "1 min 12 s"
    assert render("{% duration a b %}", a=start, b=None) == "1 min 12 s so far"
    assert render("{% duration a b %}", a=None, b=None) == "—"


@pytest.mark.parametrize(("value", "says"), [
    (0, "0 B"), (812, "812 B"), (1234.5, "1.2 KiB"), (8192, "8.0 KiB"),
    (150 * 1024**2, "150 MiB"), (15 * 1024**3, "15.0 GiB"), ("2048", "2.0 KiB"),
    (None, "—"), ("", "—"), ("lots", "—")])
def test_bytes_always_carry_a_unit(value, says):
    assert render("{{ v|bytes }}", v=value) == says


def test_zfs_size_lives_here_and_the_fleet_library_still_offers_it():
    assert render("{{ v|zfs_size }}", v=128 * 1024) == "128K"
    assert render("{% load fleet %}{{ v|zfs_size }}", v=1536 * 1024**2) == "1.5G"
    assert render("{{ v|zfs_size }}", v=None) == "—"


@pytest.mark.parametrize(("context", "says"), [
    ("postmaster", "a restart"), ("sighup", "a reload"),
    ("backend", "a reload (new sessions only)"),
    ("superuser", "a reload, or SET by a superuser in a session"),
    ("user", "a reload, or SET in any session"), ("internal", "nothing can change it"),
    ("", "—"), ("something-new", "something-new")])
def test_pg_contexts_become_what_a_change_needs(context, says):
    assert render("{{ c|pg_context }}", c=context).startswith(says)
