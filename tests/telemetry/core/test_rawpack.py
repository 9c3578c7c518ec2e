"""Raw samples packed an hour at a time: the same rows back, value for value and type for
type."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from apps.telemetry.core import rawpack
from apps.telemetry.core.packing import PackingError
from tests.telemetry.core.test_packing import START, _rows


def _samples(minutes: int = 60) -> list[rawpack.Sample]:
    """A real sample's rows (ints and floats, values now and then unknown, the pool
    gone a while), as JSON gives them back, with an empty object in some."""
    samples = []
    for n, (at, values) in enumerate(_rows(minutes)):
        values = json.loads(json.dumps(values))
        if n % 7 == 0:
            values["clusters"] = {}
        samples.append((at, values, {"zfs": "not available"} if n == 3 else {}))
    return samples


def _text(rows: list[rawpack.Sample]) -> list[str]:
    """Each row as JSON text with its keys sorted: values and their types compared."""
    return [json.dumps([at.isoformat(), values, missing], sort_keys=True)
            for at, values, missing in rows]


def test_an_hour_of_samples_unpacks_to_the_same_rows_and_types():
    samples = _samples()
    layout, data = rawpack.pack_samples(START, samples)
    back = rawpack.unpack_samples(layout, START, data)
    assert _text(back) == _text(samples)
    assert back == samples
    assert len(data) < sum(len(json.dumps(values)) for _, values, _ in samples) / 5


def test_only_the_paths_asked_for_are_unpacked():
    layout, data = rawpack.pack_samples(START, _samples(5))
    back = rawpack.unpack_samples(layout, START, data, lambda path: path[0] == "arc")
    assert all(list(values) == ["arc"] for _, values, _ in back)


def test_objects_come_back_with_their_keys_in_jsonb_order():
    layout, data = rawpack.pack_samples(START, [(START, {"bb": 1, "a": {"zz": 2, "y": 3.5}},
                                                 {})])
    [(_, values, _)] = rawpack.unpack_samples(layout, START, data)
    assert json.dumps(values) == '{"a": {"y": 3.5, "zz": 2}, "bb": 1}'


@pytest.mark.parametrize("value", ["text", True, None, 1 << 64, [1]])
def test_a_row_with_anything_but_numbers_is_refused(value):
    with pytest.raises(PackingError):
        rawpack.pack_samples(START, [(START, {"arc": {"size": value}}, {})])


def test_samples_outside_the_chunks_day_are_refused():
    with pytest.raises(PackingError):
        rawpack.pack_samples(START, [(START - timedelta(seconds=1), {"uptime": 1}, {})])
    with pytest.raises(PackingError):
        rawpack.pack_samples(START, [])


@pytest.mark.parametrize("data", [b"", b"\x03not deflated", b"\x02" + bytes(8),
                                  b"\x03" + __import__("zlib").compress(bytes(8)),
                                  b"\x03" + __import__("zlib").compress(b"\x01" + bytes(7))])
def test_bytes_that_are_not_packed_samples_are_refused(data):
    layout, _ = rawpack.pack_samples(START, _samples(2))
    with pytest.raises(PackingError):
        rawpack.unpack_samples(layout, START, data)
