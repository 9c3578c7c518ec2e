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
from collections.abc import Mapping
from dataclasses import MISSING, Field, fields, is_dataclass
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


def decode(cls: type[T], data: Mapping[str, Any]) -> T:
    """An instance of the dataclass `cls` from the plain data `data`."""
    hints = _hints(cls)
    return cls(**{f.name: _absent(f, hints[f.name]) if data.get(f.name) is None
                  else _typed(hints[f.name], data[f.name]) for f in fields(cls) if f.init})


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)  # resolved once: a host has hundreds of settings


def _typed(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        [hint, *others] = [arg for arg in args if arg is not type(None)]
        return _typed(hint, value) if not others else value
    if is_dataclass(hint):
        return decode(hint, value)  # type: ignore[arg-type]
    if origin is list:
        return [_typed(args[0], item) for item in value] if args else list(value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]
            return tuple(_typed(args[0], item) for item in value)
        return tuple(value)
    if origin is dict:
        return {key: _typed(args[1], item) for key, item in value.items()} if args else value
    if hint is datetime:
        return datetime.fromisoformat(value)
    if hint is float:
        return float(value)
    return value


def _absent(f: Field, hint: Any) -> Any:
    """What a field missing from the data (or stored as null) reads as."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    origin = typing.get_origin(hint)
    return origin() if origin in (list, dict) else None
