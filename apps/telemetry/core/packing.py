"""Rolled-up buckets packed: one host's bucket as columns of numbers, or a span of them.

A rolled-up row in apps.telemetry.core.series' JSON form spells every path and
every counter's two times as text in every row (9 KB for one OpenZFS host with
one cluster, 18,000 rows per host at the default retention). Packed, a bucket is
two parts:

- its `Layout`: which paths it holds, gauges then counters, each list sorted.
  Hosts with the same pools, datasets and clusters share one, so it is stored
  once (a `telemetry_layout` row) and a bucket names it by id;
- its numbers (`pack`): gauges' min, max, average (float64) and count, counters'
  first and last values (float64), their times as microseconds from the bucket's
  start, the reset flags and counts, in that order, little-endian, deflated
  (transposing the bytes first saved nothing on real samples, and cost time).

A closed span of one host's buckets (an hour of 5-minute ones, a day of hourly
ones) is packed as one chunk (`pack_chunk`): the union of their layouts, the
buckets' starts, then each column with a path's values of every bucket side
by side, byte-shuffled (a float's sign and exponent bytes of one path barely
change from bucket to bucket) and deflated: about 770 bytes a bucket on the
benchmark's moving samples against 1.3 KB alone (more alike real samples
shrink further). A path a bucket lacks is written with count 0, and
`unpack_chunk` gives each bucket back in the layout it had.

Nothing is rounded: `values(unpack(pack(b)))` is the JSON form that
apps.telemetry.core.series.roll_up or merge would have made, so reads draw the
same points from packed and from JSON rows. `roll_up` and `merge` here make the
same buckets as series' from raw rows and from finer buckets, column by column
(the tick rolls up a whole fleet a bucket at a time).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import sys
import zlib
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apps.telemetry.core import rollup
from apps.telemetry.core.series import Path, Values, is_counter, put

FORMAT = 1  # the first byte of a packed bucket
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class PackingError(ValueError):
    """Bytes that are not a packed bucket of the layout given."""


@dataclass(frozen=True)
class Layout:
    gauges: tuple[Path, ...]
    counters: tuple[Path, ...]

    @classmethod
    def of(cls, paths: Iterable[Path]) -> Layout:
        known = set(paths)
        return cls(tuple(sorted(p for p in known if not is_counter(p))),
                   tuple(sorted(p for p in known if is_counter(p))))

    def to_json(self) -> dict:
        return {"g": [list(p) for p in self.gauges], "c": [list(p) for p in self.counters]}

    @classmethod
    def from_json(cls, data: dict) -> Layout:
        return cls(tuple(tuple(p) for p in data["g"]), tuple(tuple(p) for p in data["c"]))

    @property
    def digest(self) -> str:
        text = json.dumps(self.to_json(), separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Bucket:
    """One host's bucket, a column per figure in its layout's order; times are
    microseconds since the Unix epoch."""

    start: datetime
    layout: Layout
    g_min: list[float]
    g_max: list[float]
    g_avg: list[float]
    g_count: list[int]
    c_first: list[float]
    c_last: list[float]
    c_first_at: list[int]
    c_last_at: list[int]
    c_reset: list[bool]
    c_count: list[int]


def micros(at: datetime) -> int:
    delta = at - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def moment(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


# -- bytes ------------------------------------------------------------------------------------

_COLUMNS = (("g_min", "d"), ("g_max", "d"), ("g_avg", "d"), ("g_count", "I"),
            ("c_first", "d"), ("c_last", "d"), ("c_first_at", "q"), ("c_last_at", "q"),
            ("c_reset", "B"), ("c_count", "I"))
_SIZES = {"d": 8, "q": 8, "I": 4, "B": 1}
# A packed bucket's bytes per gauge and per counter (its columns in _COLUMNS' order).
_GAUGE_BYTES = sum(_SIZES[code] for name, code in _COLUMNS if name[0] == "g")
_COUNTER_BYTES = sum(_SIZES[code] for name, code in _COLUMNS if name[0] == "c")
_BIG_ENDIAN = sys.byteorder == "big"


# A bucket's row lives until its span is put into a chunk (an hour, a day at most), and
# the tick packs every host's one or two: the fastest level (14 us against 37 for a
# host's bucket, 6 % larger), where chunks, which stay, take level 6.
_BUCKET_LEVEL = 1


def pack(bucket: Bucket) -> bytes:
    start = micros(bucket.start)
    parts = []
    for name, code in _COLUMNS:
        column = getattr(bucket, name)
        if name in ("c_first_at", "c_last_at"):
            column = [us - start for us in column]
        raw = array(code, column)
        if raw.itemsize != _SIZES[code]:  # pragma: no cover - exotic platforms
            raise PackingError(f"array {code!r} is {raw.itemsize} bytes here")
        if _BIG_ENDIAN:  # pragma: no cover - stored little-endian everywhere
            raw.byteswap()
        parts.append(raw.tobytes())
    return bytes([FORMAT]) + zlib.compress(b"".join(parts), _BUCKET_LEVEL)


def unpack(layout: Layout, start: datetime, data: bytes) -> Bucket:
    if not data or data[0] != FORMAT:
        raise PackingError("not a packed bucket (unknown format)")
    try:
        body = memoryview(zlib.decompress(data[1:]))
    except zlib.error as error:
        raise PackingError(f"not a packed bucket: {error}") from None
    g, c = len(layout.gauges), len(layout.counters)
    if len(body) != _GAUGE_BYTES * g + _COUNTER_BYTES * c:
        raise PackingError("a packed bucket's size does not match its layout")
    # Columns of one type side by side read at once (the tick at the hour unpacks
    # every host's eleven 5-minute buckets): g_min, g_max, g_avg; c_first, c_last;
    # c_first_at, c_last_at.
    gauges, at = _numbers(body[:24 * g], "d"), 24 * g
    g_count, at = _numbers(body[at:at + 4 * g], "I"), at + 4 * g
    values, at = _numbers(body[at:at + 16 * c], "d"), at + 16 * c
    times, at = _numbers(body[at:at + 16 * c], "q"), at + 16 * c
    resets, at = _numbers(body[at:at + c], "B"), at + c
    shifted = list(map(micros(start).__add__, times))
    return Bucket(start, layout, gauges[:g], gauges[g:2 * g], gauges[2 * g:], g_count,
                  values[:c], values[c:], shifted[:c], shifted[c:],
                  list(map(bool, resets)), _numbers(body[at:], "I"))


def _numbers(data: memoryview, code: str) -> list:
    """Little-endian numbers read in place: the tick unpacks every host's eleven
    5-minute buckets at the hour, and copying each column into an array first took
    a third of the unpacking."""
    if _BIG_ENDIAN:  # pragma: no cover - stored little-endian everywhere
        raw = array(code, bytes(data))
        raw.byteswap()
        return raw.tolist()
    return data.cast(code).tolist()


# -- chunks: a host's consecutive buckets in one row ------------------------------------------

CHUNK_FORMAT = 2  # the first byte of a packed chunk


def pack_chunk(start: datetime, buckets: Sequence[Bucket]) -> tuple[Layout, bytes]:
    """Buckets of one host (in time order, each starting at or after `start`, within a
    day of it) as one chunk: their layouts' union, and the bytes. Each column holds
    every bucket's values of one path side by side (a path's figures barely move from
    one bucket to the next), byte-shuffled (the high bytes of a float of a path are
    alike across buckets) and deflated: half a bucket packed alone. A path a bucket
    lacks is written with count 0 and left out again by unpack_chunk."""
    if not buckets:
        raise PackingError("a chunk holds at least one bucket")
    layout = buckets[0].layout
    if any(b.layout is not layout and b.layout != layout for b in buckets[1:]):
        layout = Layout.of(p for b in buckets for p in (*b.layout.gauges, *b.layout.counters))
        buckets = [_widened(b, layout) for b in buckets]
    base = micros(start)
    offsets = [micros(b.start) - base for b in buckets]
    if any(not 0 <= us < 86400_000_000 or us % 1_000_000 for us in offsets):
        raise PackingError("a chunk's buckets start on whole seconds within a day of it")
    offsets = [us // 1_000_000 for us in offsets]
    parts = [array("I", [len(buckets)]), array("I", offsets)]
    for name, code in _COLUMNS:
        flat = array(code)
        for bucket in buckets:
            column = getattr(bucket, name)
            if name in ("c_first_at", "c_last_at"):
                at = micros(bucket.start)
                column = [us - at for us in column]
            flat.extend(array(code, column))
        parts.append(_by_path(flat, len(buckets)))
    body = []
    for part in parts:
        if _BIG_ENDIAN:  # pragma: no cover - stored little-endian everywhere
            part.byteswap()
        body.append(_shuffled(part.tobytes(), part.itemsize))
    return layout, bytes([CHUNK_FORMAT]) + zlib.compress(b"".join(body), 6)


def unpack_chunk(layout: Layout, start: datetime, data: bytes) -> list[Bucket]:
    """pack_chunk's buckets again, each in the layout of the paths it had."""
    if not data or data[0] != CHUNK_FORMAT:
        raise PackingError("not a packed chunk (unknown format)")
    try:
        body = memoryview(zlib.decompress(data[1:]))
    except zlib.error as error:
        raise PackingError(f"not a packed chunk: {error}") from None
    if len(body) < 4:
        raise PackingError("a packed chunk's size does not match its layout")
    count = int.from_bytes(body[:4], "little")
    lengths = {"g": len(layout.gauges) * count, "c": len(layout.counters) * count}
    sizes = [4, 4 * count, *(_SIZES[code] * lengths[name[0]] for name, code in _COLUMNS)]
    if count == 0 or len(body) != sum(sizes):
        raise PackingError("a packed chunk's size does not match its layout")
    columns, offset = [], 4
    for size, code in zip(sizes[1:], ("I", *(code for _, code in _COLUMNS)), strict=True):
        raw = array(code)
        raw.frombytes(_unshuffled(body[offset:offset + size], raw.itemsize))
        if _BIG_ENDIAN:  # pragma: no cover - stored little-endian everywhere
            raw.byteswap()
        columns.append(raw)
        offset += size
    base = micros(start)
    starts = [base + seconds * 1_000_000 for seconds in columns[0]]
    buckets = []
    for i, at in enumerate(starts):
        values = {name: columns[1 + n][i::count].tolist()
                  for n, (name, _) in enumerate(_COLUMNS)}
        values["c_first_at"] = [at + us for us in values["c_first_at"]]
        values["c_last_at"] = [at + us for us in values["c_last_at"]]
        values["c_reset"] = [bool(flag) for flag in values["c_reset"]]
        buckets.append(_narrowed(Bucket(moment(at), layout, **values)))
    return buckets


def _by_path(flat: array, count: int) -> array:
    """Bucket after bucket -> path after path: a path's `count` values side by side."""
    width = len(flat) // count
    out = array(flat.typecode)
    for i in range(width):
        out.extend(flat[i::width])
    return out


def _shuffled(data: bytes, size: int) -> bytes:
    """Every value's first byte, then every value's second, ..."""
    return data if size == 1 else b"".join(data[i::size] for i in range(size))


def _unshuffled(data: memoryview, size: int) -> bytes:
    if size == 1:
        return bytes(data)
    out = bytearray(len(data))
    step = len(data) // size
    for i in range(size):
        out[i::size] = data[i * step:(i + 1) * step]
    return bytes(out)


def _narrowed(bucket: Bucket) -> Bucket:
    """A bucket of a chunk without the paths it lacked (count 0), as it was packed."""
    if all(bucket.g_count) and all(bucket.c_count):
        return bucket
    g = [i for i, n in enumerate(bucket.g_count) if n]
    c = [i for i, n in enumerate(bucket.c_count) if n]
    layout = Layout(tuple(bucket.layout.gauges[i] for i in g),
                    tuple(bucket.layout.counters[i] for i in c))
    return Bucket(bucket.start, layout,
                  *([getattr(bucket, name)[i] for i in (g if name[0] == "g" else c)]
                    for name, _ in _COLUMNS))


# -- JSON form --------------------------------------------------------------------------------

def values(bucket: Bucket, keep: Callable[[Path], bool] | None = None) -> Values:
    """The bucket in apps.telemetry.core.series' rolled-up JSON form ({"g": [...]},
    {"c": [...]}), only the paths `keep` says yes to."""
    out: Values = {}
    for i, path in enumerate(bucket.layout.gauges):
        if keep is None or keep(path):
            put(out, path, {"g": [bucket.g_min[i], bucket.g_max[i], bucket.g_avg[i],
                                  bucket.g_count[i]]})
    for i, path in enumerate(bucket.layout.counters):
        if keep is None or keep(path):
            put(out, path, {"c": [moment(bucket.c_first_at[i]).isoformat(), bucket.c_first[i],
                                  moment(bucket.c_last_at[i]).isoformat(), bucket.c_last[i],
                                  bucket.c_reset[i], bucket.c_count[i]]})
    return out


def from_values(start: datetime, rolled: Values) -> Bucket:
    """A JSON-form rolled-up row (as rows written before packing hold) as a Bucket."""
    found: dict[Path, list] = {}
    _walk(rolled, (), found)
    layout = Layout.of(found)
    g = [found[p]["g"] for p in layout.gauges]
    c = [found[p]["c"] for p in layout.counters]
    return Bucket(start, layout, [float(x[0]) for x in g], [float(x[1]) for x in g],
                  [float(x[2]) for x in g], [int(x[3]) for x in g],
                  [float(x[1]) for x in c], [float(x[3]) for x in c],
                  [micros(datetime.fromisoformat(x[0])) for x in c],
                  [micros(datetime.fromisoformat(x[2])) for x in c],
                  [bool(x[4]) for x in c], [int(x[5]) for x in c])


def _walk(node: Values, prefix: Path, found: dict[Path, list]) -> None:
    for key, value in node.items():
        if isinstance(value, dict) and ("g" in value or "c" in value) and len(value) == 1:
            found[(*prefix, key)] = value
        elif isinstance(value, dict):
            _walk(value, (*prefix, key), found)


# -- rolling up -------------------------------------------------------------------------------

def roll_up(rows: Sequence[tuple[datetime, Values]], width: timedelta) -> list[Bucket]:
    """Raw rows (in time order) -> a Bucket per `width` bucket with any known value:
    the buckets apps.telemetry.core.series.roll_up makes, as columns."""
    by_start: dict[datetime, list[tuple[int, Values]]] = {}
    for at, row in rows:
        by_start.setdefault(rollup.bucket_start(at, width), []).append((micros(at), row))
    buckets = []
    for start, group in sorted(by_start.items()):
        bucket = _rolled_alike(start, group)
        if bucket is None:  # rows of more than one shape (or no number at all)
            points: dict[Path, tuple[list[int], list[float]]] = {}
            for us, row in group:
                _points(row, (), us, points)
            bucket = _bucket(start, points) if points else None
        if bucket is not None:
            buckets.append(bucket)
    return buckets


def _points(node: Values, prefix: Path, us: int,
            points: dict[Path, tuple[list[int], list[float]]]) -> None:
    for key, value in node.items():
        if isinstance(value, dict):
            _points(value, (*prefix, key), us, points)
        elif isinstance(value, int | float):  # as series.roll_up: unknown values skipped
            path = (*prefix, key)
            found = points.get(path)
            if found is None:
                found = points[path] = ([], [])
            found[0].append(us)
            found[1].append(float(value))


def _bucket(start: datetime, points: dict[Path, tuple[list[int], list[float]]]) -> Bucket:
    layout = Layout.of(points)
    return _bucket_of(start, layout, [points[p][1] for p in layout.gauges],
                      [points[p] for p in layout.counters])


def _bucket_of(start: datetime, layout: Layout, gauges: list[list[float]],
               counters: list[tuple[list[int], list[float]]]) -> Bucket:
    """A bucket from its gauges' values and its counters' (times, values), in the
    layout's order."""
    return Bucket(
        start, layout,
        [min(v) for v in gauges], [max(v) for v in gauges],
        [sum(v) / len(v) for v in gauges], [len(v) for v in gauges],
        [v[0] for _, v in counters], [v[-1] for _, v in counters],
        [t[0] for t, _ in counters], [t[-1] for t, _ in counters],
        [any(b < a for a, b in zip(v, v[1:], strict=False)) for _, v in counters],
        [len(v) for _, v in counters])


# A bucket's raw rows almost always have one shape (the same paths, numbers in the
# same places), and so do most hosts' of a fleet: the tick rolls up every host's
# rows each 5 minutes, and walking each row's paths one by one was most of it.
# Rows of the last shape seen are read by it, a number per place, and rolled up
# column by column; a row of another shape makes the whole bucket go path by path.


@dataclass(frozen=True)
class _Shape:
    # ((key, part), ...) in the row's order: a part is a _Shape's template for a
    # dict, _NUMBER for a number, None for anything else (skipped, as _points does)
    template: tuple
    layout: Layout
    gauges: tuple[int, ...]  # each layout gauge's place among the row's numbers
    counters: tuple[int, ...]


_NUMBER = True
_ABSENT = object()
_last_shape: list[_Shape] = []  # this process's last (one at most)


def _shape_of(row: Values) -> _Shape:
    paths: list[Path] = []

    def template(node: Values, prefix: Path) -> tuple:
        parts = []
        for key, value in node.items():
            if isinstance(value, dict):
                parts.append((key, template(value, (*prefix, key))))
            elif isinstance(value, int | float):
                paths.append((*prefix, key))
                parts.append((key, _NUMBER))
            else:
                parts.append((key, None))
        return tuple(parts)

    shape = template(row, ())
    layout = Layout.of(paths)
    place = {path: i for i, path in enumerate(paths)}
    return _Shape(shape, layout, tuple(place[p] for p in layout.gauges),
                  tuple(place[p] for p in layout.counters))


def _numbers_in(node: Values, template: tuple, out: list) -> bool:
    """`node`'s numbers appended in `template`'s order; False if it is of another shape
    (then `out` is partly filled: thrown away)."""
    if len(node) != len(template):
        return False
    for key, part in template:
        value = node.get(key, _ABSENT)
        if part is _NUMBER:
            if not isinstance(value, int | float):
                return False
            out.append(value)
        elif part is None:
            if value is _ABSENT or isinstance(value, dict | int | float):
                return False
        elif not isinstance(value, dict) or not _numbers_in(value, part, out):
            return False
    return True


def _rolled_alike(start: datetime, group: list[tuple[int, Values]]) -> Bucket | None:
    """The bucket of `group`'s rows if they are all of one shape with a number in it,
    else None."""
    shape = _last_shape[0] if _last_shape else None
    rows = []
    for _, row in group:
        numbers: list = []
        if shape is None or not _numbers_in(row, shape.template, numbers):
            if rows:  # a row unlike the ones before it
                return None
            shape = _shape_of(row)
            _last_shape[:] = [shape]
            numbers = []
            if not _numbers_in(row, shape.template, numbers):  # pragma: no cover
                return None
        rows.append(numbers)
    if not shape.gauges and not shape.counters:
        return None
    columns = [list(map(float, column)) for column in zip(*rows, strict=True)]
    times = [us for us, _ in group]  # every number is in every row
    return _bucket_of(start, shape.layout, [columns[i] for i in shape.gauges],
                      [(times, columns[i]) for i in shape.counters])


def merge(buckets: Sequence[Bucket], width: timedelta) -> list[Bucket]:
    """Finer buckets of one host (any order) -> coarser ones: series.merge's buckets."""
    by_start: dict[datetime, list[Bucket]] = {}
    for bucket in sorted(buckets, key=lambda b: b.start):
        by_start.setdefault(rollup.bucket_start(bucket.start, width), []).append(bucket)
    return [_merged(start, parts) for start, parts in sorted(by_start.items())]


def _merged(start: datetime, parts: list[Bucket]) -> Bucket:
    layout = parts[0].layout
    if all(part.layout is layout or part.layout == layout for part in parts[1:]):
        return _merged_alike(start, layout, parts)
    # Paths that come and go (a pool imported mid-hour): a figure missing from a
    # part has count 0 there, and each column merges over the parts that have it.
    layout = Layout.of(p for part in parts for p in (*part.layout.gauges,
                                                     *part.layout.counters))
    parts = [_widened(part, layout) for part in parts]
    g_counts = [sum(c for c in col if c) for col in zip(*(p.g_count for p in parts),
                                                          strict=True)]
    g_avg = []
    for i, count in enumerate(g_counts):
        total = sum(p.g_avg[i] * p.g_count[i] for p in parts if p.g_count[i])
        g_avg.append(total / count)
    c_reset = []
    for i in range(len(layout.counters)):
        known = [p for p in parts if p.c_count[i]]
        c_reset.append(any(p.c_reset[i] for p in known) or any(
            b.c_first[i] < a.c_last[i] for a, b in zip(known, known[1:], strict=False)))
    first = [next(p for p in parts if p.c_count[i]) for i in range(len(layout.counters))]
    last = [next(p for p in reversed(parts) if p.c_count[i])
            for i in range(len(layout.counters))]
    return Bucket(
        start, layout,
        [min(v for v, c in zip(col, counts, strict=True) if c)
         for col, counts in zip(zip(*(p.g_min for p in parts), strict=True),
                                zip(*(p.g_count for p in parts), strict=True), strict=True)],
        [max(v for v, c in zip(col, counts, strict=True) if c)
         for col, counts in zip(zip(*(p.g_max for p in parts), strict=True),
                                zip(*(p.g_count for p in parts), strict=True), strict=True)],
        g_avg, g_counts,
        [p.c_first[i] for i, p in enumerate(first)], [p.c_last[i] for i, p in enumerate(last)],
        [p.c_first_at[i] for i, p in enumerate(first)],
        [p.c_last_at[i] for i, p in enumerate(last)],
        c_reset, [sum(p.c_count[i] for p in parts) for i in range(len(layout.counters))])


def _merged_alike(start: datetime, layout: Layout, parts: list[Bucket]) -> Bucket:
    """Parts of one layout (the usual case): every figure known in every part, so
    each column merges with builtins over the parts (map, not a loop in Python: the
    tick at the hour merges every host's twelve), in series.merge's order."""
    g_counts = list(map(sum, zip(*(p.g_count for p in parts), strict=True)))
    weighted = zip(*(map(operator.mul, p.g_avg, p.g_count) for p in parts), strict=True)
    crossed = (map(operator.lt, b.c_first, a.c_last) for a, b in itertools.pairwise(parts))
    first, last = parts[0], parts[-1]
    return Bucket(
        start, layout,
        list(map(min, zip(*(p.g_min for p in parts), strict=True))),
        list(map(max, zip(*(p.g_max for p in parts), strict=True))),
        list(map(operator.truediv, map(sum, weighted), g_counts)),
        g_counts, list(first.c_first), list(last.c_last), list(first.c_first_at),
        list(last.c_last_at),
        list(map(any, zip(*(p.c_reset for p in parts), *crossed, strict=True))),
        list(map(sum, zip(*(p.c_count for p in parts), strict=True))))


def _widened(part: Bucket, layout: Layout) -> Bucket:
    """`part` in a wider layout: a path it lacks has count 0 (merging skips it)."""
    g = {p: i for i, p in enumerate(part.layout.gauges)}
    c = {p: i for i, p in enumerate(part.layout.counters)}

    def column(values: list, index: dict[Path, int], paths: tuple[Path, ...], empty):
        return [values[index[p]] if p in index else empty for p in paths]

    return Bucket(
        part.start, layout,
        column(part.g_min, g, layout.gauges, 0.0), column(part.g_max, g, layout.gauges, 0.0),
        column(part.g_avg, g, layout.gauges, 0.0), column(part.g_count, g, layout.gauges, 0),
        column(part.c_first, c, layout.counters, 0.0),
        column(part.c_last, c, layout.counters, 0.0),
        column(part.c_first_at, c, layout.counters, 0),
        column(part.c_last_at, c, layout.counters, 0),
        column(part.c_reset, c, layout.counters, False),
        column(part.c_count, c, layout.counters, 0))
