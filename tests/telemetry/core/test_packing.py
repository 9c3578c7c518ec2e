"""Packed rollups: exact round trips, and the same buckets as series' JSON rollups."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from apps.telemetry.core import packing, series
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR
from tests.telemetry.core.helpers import T0, openzfs_spec
from tests.telemetry.fixtures import frame, openzfs_sections

START = datetime(2026, 11, 20, tzinfo=UTC)


def _rows(minutes: int, *, seed: int = 7,
          unknown: float = 0.03) -> list[tuple[datetime, dict]]:
    """A real OpenZFS sample's stored row, minute after minute: counters moving (down
    too, a reset at a bucket's edge), gauges moving, now and then a value unknown,
    the pool gone a while."""
    base = series.stored(parse_sample(frame(openzfs_sections()), openzfs_spec(), T0))
    chance = random.Random(seed)
    rows = []
    for m in range(minutes):
        row: dict = {}
        for path, value in series.leaves(base):
            if chance.random() < unknown:
                continue  # unknown this minute
            if series.is_counter(path):
                moved = value + m * chance.randint(0, 500) if m not in (37, 130) else m
            else:
                moved = value * (1 + chance.uniform(-0.2, 0.2))
            series.put(row, path, moved)
        if 60 <= m < 75:  # the pool was exported for a while
            row.pop("pools", None)
        rows.append((START + timedelta(minutes=m, seconds=chance.randint(0, 59),
                                       microseconds=chance.randint(0, 999_999)), row))
    return rows


def _json(buckets: list[packing.Bucket]) -> dict:
    return {b.start: packing.values(b) for b in buckets}


def test_rolling_up_makes_the_buckets_series_makes_exactly():
    rows = _rows(180)
    assert _json(packing.roll_up(rows, FIVE_MINUTES)) == series.roll_up(rows, FIVE_MINUTES)


def test_rows_of_one_shape_roll_up_as_series_does_and_unlike_ones_path_by_path(monkeypatch):
    rows = _rows(180, unknown=0)  # every value known: one shape, the pool gone a while
    for _, row in rows:
        row["arc"]["state"] = "fine"  # a value that is no number is skipped
        row["arc"]["hot"] = True  # a flag is a number (1.0), as series reads it
    rows[100][1]["arc"]["size"] = None  # unknown this minute
    rows[130][1]["arc"]["size"] = "12G"
    rows[121][1]["arc"].pop("state")
    rows[150][1]["arc"]["state"] = 3  # a number where the others have none
    path_by_path = []
    points = packing._points
    monkeypatch.setattr(packing, "_points", lambda row, prefix, us, found: (
        path_by_path.append(us) if not prefix else None, points(row, prefix, us, found)))
    assert _json(packing.roll_up(rows, FIVE_MINUTES)) == series.roll_up(rows, FIVE_MINUTES)
    unlike = {packing.rollup.bucket_start(at, FIVE_MINUTES) for at, _ in
              (rows[100], rows[121], rows[130], rows[150])}
    assert {packing.rollup.bucket_start(packing.moment(us), FIVE_MINUTES)
            for us in path_by_path} == unlike


def test_merging_makes_the_hours_series_makes_even_when_paths_come_and_go():
    rows = _rows(180)
    five = packing.roll_up(rows, FIVE_MINUTES)
    expected = series.merge(sorted(series.roll_up(rows, FIVE_MINUTES).items()), HOUR)
    assert len({b.layout for b in five}) > 1  # the pool's paths are missing from some
    assert _json(packing.merge(list(reversed(five)), HOUR)) == expected


def test_a_packed_bucket_unpacks_to_the_same_numbers_to_the_bit():
    for bucket in packing.roll_up(_rows(60), FIVE_MINUTES):
        data = packing.pack(bucket)
        assert packing.unpack(bucket.layout, bucket.start, data) == bucket
        assert len(data) < len(repr(packing.values(bucket))) / 4


def test_json_rows_written_before_packing_read_as_the_same_bucket():
    [bucket] = packing.roll_up(_rows(5), FIVE_MINUTES)
    assert packing.from_values(bucket.start, packing.values(bucket)) == bucket


def test_a_layout_lists_each_path_once_and_survives_its_json():
    [bucket] = packing.roll_up(_rows(5), FIVE_MINUTES)
    layout = bucket.layout
    assert ("arc", "hits") in layout.counters and ("arc", "size") in layout.gauges
    assert not set(layout.gauges) & set(layout.counters)
    assert packing.Layout.from_json(layout.to_json()) == layout
    assert packing.Layout.of([*layout.counters, *layout.gauges]).digest == layout.digest


def test_only_the_paths_asked_for_are_unpacked():
    [bucket] = packing.roll_up(_rows(5), FIVE_MINUTES)
    arc = packing.values(bucket, lambda path: path[:2] == ("arc", "hits"))
    assert list(arc) == ["arc"] and list(arc["arc"]) == ["hits"]


@pytest.mark.parametrize("data", [b"", b"\x09junk", b"\x01not deflated",
                                  b"\x01" + __import__("zlib").compress(b"short")])
def test_bytes_that_are_not_a_packed_bucket_are_refused(data):
    [bucket] = packing.roll_up(_rows(5), FIVE_MINUTES)
    with pytest.raises(packing.PackingError):
        packing.unpack(bucket.layout, bucket.start, data)


# -- chunks -----------------------------------------------------------------------------------

def test_a_chunk_unpacks_to_its_buckets_to_the_bit_and_is_smaller_than_them_alone():
    five = packing.roll_up(_rows(180), FIVE_MINUTES)
    hour = [b for b in five if b.start < START + 2 * HOUR]  # pool gone a while: 2 layouts
    assert len({b.layout for b in hour}) > 1
    for buckets in (hour[:12], hour[12:], packing.merge(five, HOUR)):
        layout, data = packing.pack_chunk(buckets[0].start, buckets)
        back = packing.unpack_chunk(layout, buckets[0].start, data)
        assert back == buckets  # each in the layout it had, the same numbers
        assert _json(back) == _json(buckets)
    alone = sum(len(packing.pack(b)) for b in hour[:12])
    # Noisy rows (every gauge moving 20 % at random): the saving on real ones is larger.
    assert len(packing.pack_chunk(START, hour[:12])[1]) < alone * 0.9


def test_a_chunk_keeps_the_gaps_between_its_buckets():
    five = packing.roll_up(_rows(60), FIVE_MINUTES)
    kept = [five[0], five[3], five[11]]  # no sample in the others
    layout, data = packing.pack_chunk(START, kept)
    assert [b.start for b in packing.unpack_chunk(layout, START, data)] == \
        [START, START + timedelta(minutes=15), START + timedelta(minutes=55)]


def test_a_chunk_holds_buckets_of_one_day_from_its_start():
    five = packing.roll_up(_rows(10), FIVE_MINUTES)
    with pytest.raises(packing.PackingError):
        packing.pack_chunk(START + HOUR, five)  # before the chunk
    with pytest.raises(packing.PackingError):
        packing.pack_chunk(START - timedelta(days=1), five)  # a day or more after it
    with pytest.raises(packing.PackingError):
        packing.pack_chunk(START, [])


@pytest.mark.parametrize("data", [b"", b"\x01" + __import__("zlib").compress(b""),
                                  b"\x02not deflated", b"\x02" + __import__("zlib").compress(
                                      b"\x00\x00\x00\x00"),
                                  b"\x02" + __import__("zlib").compress(b"\x02\x00\x00\x00")])
def test_bytes_that_are_not_a_packed_chunk_are_refused(data):
    five = packing.roll_up(_rows(10), FIVE_MINUTES)
    with pytest.raises(packing.PackingError):
        packing.unpack_chunk(five[0].layout, START, data)


def test_a_chunk_read_with_another_layout_is_refused():
    five = packing.roll_up(_rows(10), FIVE_MINUTES)
    _, data = packing.pack_chunk(START, five)
    narrower = packing.Layout(five[0].layout.gauges[1:], five[0].layout.counters)
    with pytest.raises(packing.PackingError):
        packing.unpack_chunk(narrower, START, data)
