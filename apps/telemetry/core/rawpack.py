"""Raw samples packed a span at a time: one host's stored rows of an hour in one chunk.

A raw row (apps.telemetry.core.series' stored form) is about 1.9 KB of JSONB,
2,880 of them per host in 48 hours. Packed, one host's rows of a closed hour
are one chunk against a shared `Layout` (apps.telemetry.core.packing) of every
path any of them holds, including the objects left empty (a host without a
cluster stores `"clusters": {}`):

- the samples' times (microseconds from the chunk's start) and their
  `missing` objects (JSON text, nearly always `{}`);
- per path and sample, what is there: nothing, an int, a float or an empty
  object (a byte each);
- per path and sample, the number: an int64 for an int, the float64's bits for
  a float, 0 otherwise; each path's values of the hour side by side,
  byte-shuffled; all of it deflated.

Nothing is rounded or retyped: `unpack_samples` gives back each row as the
database gave it (ints stay ints, floats the same bits, every object's keys in
JSONB's order: shorter first, then by their bytes), so reads draw the same
points from chunks as from rows. A row with anything else (text, a bool, an int
past 64 bits) cannot be packed: `PackingError`, and its hour stays rows.
"""

from __future__ import annotations

import json
import sys
import zlib
from array import array
from collections.abc import Callable, Sequence
from datetime import datetime

from apps.telemetry.core.packing import Layout, PackingError, micros, moment
from apps.telemetry.core.series import Path, Values

FORMAT = 3  # the first byte of a packed hour of samples
ABSENT, INT, FLOAT, EMPTY = 0, 1, 2, 3
_INT64 = 1 << 63
_BIG_ENDIAN = sys.byteorder == "big"

Sample = tuple[datetime, Values, dict]  # taken at, stored values, missing


def pack_samples(start: datetime, samples: Sequence[Sample]) -> tuple[Layout, bytes]:
    """One host's rows (in time order, within a day of `start`) as one chunk."""
    if not samples:
        raise PackingError("a chunk holds at least one sample")
    leaves = [_leaves(values, (), {}) for _, values, _ in samples]
    layout = Layout.of(set().union(*leaves))
    paths = (*layout.gauges, *layout.counters)
    base = micros(start)
    times = array("q", [micros(at) - base for at, _, _ in samples])
    if any(not 0 <= us < 86400_000_000 for us in times):
        raise PackingError("a chunk's samples are taken within a day of its start")
    kinds = bytearray()
    numbers = array("q")
    for path in paths:
        _column([found.get(path, _MISSING) for found in leaves], kinds, numbers)
    missing = json.dumps([dict(m or {}) for _, _, m in samples],
                         separators=(",", ":")).encode()
    if _BIG_ENDIAN:  # pragma: no cover - stored little-endian everywhere
        times.byteswap()
        numbers.byteswap()
    body = b"".join([len(samples).to_bytes(4, "little"), len(missing).to_bytes(4, "little"),
                     times.tobytes(), missing, bytes(kinds), _shuffled(numbers.tobytes())])
    return layout, bytes([FORMAT]) + zlib.compress(body, 6)


def unpack_samples(layout: Layout, start: datetime, data: bytes,
                   keep: Callable[[Path], bool] | None = None) -> list[Sample]:
    """The chunk's rows again; only the paths `keep` says yes to, if given."""
    if not data or data[0] != FORMAT:
        raise PackingError("not packed samples (unknown format)")
    try:
        body = zlib.decompress(data[1:])
    except zlib.error as error:
        raise PackingError(f"not packed samples: {error}") from None
    paths = (*layout.gauges, *layout.counters)
    if len(body) < 8:
        raise PackingError("packed samples' size does not match their layout")
    count = int.from_bytes(body[:4], "little")
    text = int.from_bytes(body[4:8], "little")
    cells = count * len(paths)
    if count == 0 or len(body) != 8 + 8 * count + text + 9 * cells:
        raise PackingError("packed samples' size does not match their layout")
    offset = 8
    times = array("q")
    times.frombytes(body[offset:offset + 8 * count])
    offset += 8 * count
    try:
        missing = json.loads(body[offset:offset + text])
    except ValueError as error:
        raise PackingError(f"packed samples' missing is not JSON: {error}") from None
    offset += text
    kinds = body[offset:offset + cells]
    numbers = array("q")
    numbers.frombytes(_unshuffled(body[offset + cells:]))
    if _BIG_ENDIAN:  # pragma: no cover - stored little-endian everywhere
        times.byteswap()
        numbers.byteswap()
    rows: list[Values] = [{} for _ in range(count)]
    for p, path in enumerate(paths):
        if keep is not None and not keep(path):
            continue
        at = p * count
        for row, value in zip(rows, _values(kinds[at:at + count], numbers[at:at + count]),
                              strict=True):
            if value is not _MISSING:
                _put(row, path, value)
    base = micros(start)
    return [(moment(base + us), _ordered(row), dict(m)) for us, row, m
            in zip(times, rows, missing, strict=True)]


# -- one row --------------------------------------------------------------------------------

_MISSING = object()


def _leaves(values: Values, prefix: Path, found: dict[Path, object]) -> dict[Path, object]:
    """Every number's path, and every empty object's, into `found`."""
    for key, value in values.items():
        if value.__class__ is dict and value:
            _leaves(value, (*prefix, key), found)
        else:
            found[(*prefix, key)] = value
    return found


def _column(values: list, kinds: bytearray, numbers: array) -> None:
    """One path's values of every sample appended: a column of ints or of floats at
    once (the usual case), else value by value."""
    kinds_of = set(map(type, values))
    if kinds_of == {int} and -_INT64 <= min(values) and max(values) < _INT64:
        kinds.extend(bytes([INT]) * len(values))
        numbers.extend(array("q", values))
    elif kinds_of == {float}:
        kinds.extend(bytes([FLOAT]) * len(values))
        numbers.frombytes(array("d", values).tobytes())
    else:
        for value in values:
            kind, number = _coded(value)
            kinds.append(kind)
            numbers.append(number)


def _values(kinds: bytes, numbers: array) -> list:
    """_column's values again (_MISSING where a sample had none)."""
    if kinds == bytes([INT]) * len(kinds):
        return numbers.tolist()
    if kinds == bytes([FLOAT]) * len(kinds):
        floats = array("d")
        floats.frombytes(numbers.tobytes())
        return floats.tolist()
    return [_MISSING if kind == ABSENT else _decoded(kind, number)
            for kind, number in zip(kinds, numbers, strict=True)]


def _coded(value: object) -> tuple[int, int]:
    if value is _MISSING:
        return ABSENT, 0
    if isinstance(value, dict):
        return EMPTY, 0
    if isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64:
        return INT, value
    if isinstance(value, float):
        return FLOAT, int.from_bytes(array("d", [value]).tobytes(), sys.byteorder, signed=True)
    raise PackingError(f"a raw row holds {value!r}, not a number")


def _decoded(kind: int, number: int) -> object:
    if kind == INT:
        return number
    if kind == FLOAT:
        return array("d", number.to_bytes(8, sys.byteorder, signed=True))[0]
    if kind == EMPTY:
        return {}
    raise PackingError(f"packed samples hold an unknown kind {kind}")


def _put(values: Values, path: Path, value: object) -> None:
    for key in path[:-1]:
        values = values.setdefault(key, {})
    values[path[-1]] = value


def _ordered(values: Values) -> Values:
    """Keys in the order JSONB gives them: shorter first, then by their bytes."""
    return {key: _ordered(value) if isinstance(value, dict) else value
            for key, value in sorted(values.items(), key=_jsonb_key)}


def _jsonb_key(item: tuple[str, object]) -> tuple[int, bytes]:
    raw = item[0].encode()
    return len(raw), raw


def _shuffled(data: bytes) -> bytes:
    return b"".join(data[i::8] for i in range(8))


def _unshuffled(data: bytes) -> bytes:
    out = bytearray(len(data))
    step = len(data) // 8
    for i in range(8):
        out[i::8] = data[i * step:(i + 1) * step]
    return bytes(out)
