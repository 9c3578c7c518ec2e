"""Dataclasses typed again from their JSON form (what `dataclasses.asdict` made,
stored as JSON or not): a host's facts (apps.remote.facts.host) and a telemetry
sample (apps.telemetry.core.sample) are read back through this one decoder.

Driven by the dataclasses' own type hints, so a field added to any of them is
read back without a second list of fields to keep in step:

- a field missing from the data, or stored as null (an older writer, a probe
  that failed), takes its default, else an empty list or dict for a list or
  dict, else None: "not known here", which every reader treats as unknown;
- keys no field names are ignored;
- `X | None` reads as X; a union of several types (`int | str`) keeps what JSON
  kept;
- nested dataclasses, the items of lists and of `tuple[X, ...]` (stored as
  lists) and dicts' values are typed in turn; a datetime is read from its ISO
  text, a float from any number.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, fields, is_dataclass
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")
Reader = Callable[[Any], Any]


def decode(cls: type[T], data: Mapping[str, Any]) -> T:
    """An instance of the dataclass `cls` from the plain data `data`."""
    return _decoder(cls)(data)


# A decoder is worked out once per class, from its hints, into one function per field:
# a collector round decodes thousands of samples after a restart, and looking each hint
# up again (hashing `list[Txg]` and the like) cost more than the decoding itself.

@cache
def _decoder(cls: type) -> Callable[[Mapping[str, Any]], Any]:
    hints = typing.get_type_hints(cls)
    plan = [(f.name, _reader(hints[f.name]), _absent(f, hints[f.name]))
            for f in fields(cls) if f.init]
    # Most fields are a number or text kept as JSON has it, None when absent: read with
    # a plain get (about half of a telemetry sample's decoding went into calls per field).
    plain = tuple(name for name, reader, absent in plan if reader is _as_is and absent is _none)
    typed = tuple(step for step in plan if step[0] not in plain)

    def read(data: Mapping[str, Any]) -> Any:
        get = data.get
        values = {name: get(name) for name in plain}
        for name, reader, absent in typed:
            values[name] = absent() if (value := get(name)) is None else reader(value)
        return cls(**values)

    return read


def _as_is(value: Any) -> Any:
    return value


def _none() -> None:
    return None


@cache
def _reader(hint: Any) -> Reader:
    """How a value of this hint is typed (a value that is None stays None)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        [inner, *others] = [arg for arg in args if arg is not type(None)]
        return _reader(inner) if not others else _as_is  # JSON kept the type
    if is_dataclass(hint):
        return lambda value: None if value is None else _decoder(hint)(value)
    if origin is list:
        if not args:
            return lambda value: None if value is None else list(value)
        item = _reader(args[0])
        return lambda value: None if value is None else [item(x) for x in value]
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _reader(args[0])
            return lambda value: None if value is None else tuple(item(x) for x in value)
        return lambda value: None if value is None else tuple(value)
    if origin is dict:
        if not args:
            return _as_is
        item = _reader(args[1])
        return lambda value: None if value is None else {k: item(v) for k, v in value.items()}
    if hint is datetime:
        return lambda value: None if value is None else datetime.fromisoformat(value)
    if hint is float:
        return lambda value: None if value is None else float(value)
    return _as_is


def _absent(f: Field, hint: Any) -> Callable[[], Any]:
    """What a field missing from the data (or stored as null) reads as."""
    if f.default is not MISSING:
        default = f.default
        return lambda: default
    if f.default_factory is not MISSING:
        return f.default_factory
    origin = typing.get_origin(hint)
    return origin if origin in (list, dict) else _none
