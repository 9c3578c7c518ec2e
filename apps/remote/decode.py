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
    return cls(**{f.name: _absent(f, hint) if data.get(f.name) is None
                  else _typed(hint, data[f.name]) for f, hint in _fields(cls)})


@cache
def _fields(cls: type) -> tuple[tuple[Field, Any], ...]:
    # Hints resolved once per class: a host has hundreds of settings, a collector
    # round decodes thousands of samples after a restart.
    hints = typing.get_type_hints(cls)
    return tuple((f, hints[f.name]) for f in fields(cls) if f.init)


def _typed(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    kind, inner = _plan(hint)
    if kind == "union":
        return _typed(inner, value)
    if kind == "dataclass":
        return decode(inner, value)
    if kind == "list":
        return [_typed(inner, item) for item in value]
    if kind == "list_plain":
        return list(value)
    if kind == "tuple_of":
        return tuple(_typed(inner, item) for item in value)
    if kind == "tuple":
        return tuple(value)
    if kind == "dict":
        return {key: _typed(inner, item) for key, item in value.items()}
    if kind == "datetime":
        return datetime.fromisoformat(value)
    if kind == "float":
        return float(value)
    return value


@cache
def _plan(hint: Any) -> tuple[str, Any]:
    """How a value of this hint is typed (worked out once per hint)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        [inner, *others] = [arg for arg in args if arg is not type(None)]
        return ("union", inner) if not others else ("as_is", None)  # JSON kept the type
    if is_dataclass(hint):
        return "dataclass", hint
    if origin is list:
        return ("list", args[0]) if args else ("list_plain", None)
    if origin is tuple:
        return ("tuple_of", args[0]) if len(args) == 2 and args[1] is Ellipsis else (
            "tuple", None)
    if origin is dict:
        return ("dict", args[1]) if args else ("as_is", None)
    if hint is datetime:
        return "datetime", None
    if hint is float:
        return "float", None
    return "as_is", None


def _absent(f: Field, hint: Any) -> Any:
    """What a field missing from the data (or stored as null) reads as."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    origin = typing.get_origin(hint)
    return origin() if origin in (list, dict) else None
