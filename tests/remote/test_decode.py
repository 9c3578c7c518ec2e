from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from apps.remote.decode import decode


@dataclass(frozen=True)
class Inner:
    name: str
    ratio: float | None


@dataclass
class Outer:
    at: datetime
    inners: tuple[Inner, ...] | None
    names: list[str]
    by_name: dict[str, Inner]
    either: int | str | None
    kept: tuple[str, int] | None = None
    flags: dict[str, str] = field(default_factory=dict)
    note: str = "none"


def test_what_asdict_made_reads_back_equal_through_json():
    outer = Outer(datetime(2026, 1, 1, tzinfo=UTC), (Inner("a", 1.5),), ["x"],
                  {"b": Inner("b", None)}, "text", ("k", 1), {"f": "on"}, "n")
    data = json.loads(json.dumps({**asdict(outer), "at": outer.at.isoformat()}))
    assert decode(Outer, data) == outer


def test_missing_or_null_fields_read_as_their_default_else_empty_else_unknown():
    outer = decode(Outer, {"at": None, "names": None, "note": None, "extra": 1})
    assert outer.at is None and outer.inners is None and outer.either is None
    assert outer.names == [] and outer.by_name == {} and outer.flags == {}
    assert outer.note == "none"


def test_a_float_from_any_number_and_a_union_of_types_as_json_kept_it():
    data = {"at": "2026-01-01T00:00:00+00:00", "inners": [{"name": "a", "ratio": 2}],
            "either": 3}
    outer = decode(Outer, data)
    [inner] = outer.inners
    assert type(inner.ratio) is float and outer.either == 3
