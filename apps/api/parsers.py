"""JSON bodies with bounded nesting.

Python's json module recurses once per level: about 200 KB of `[` exhausts the
interpreter's recursion limit (a 500), and a body nested a few hundred levels
deep would make every serializer and profile parser that walks it recurse too.
No PoZoL request needs more than a handful of levels, so deeper is refused as
bad input before anything walks it.
"""

from __future__ import annotations

import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32


def loads_bounded(text: str | bytes, max_depth: int = MAX_DEPTH):
    """json.loads, refusing (ValueError) documents nested deeper than max_depth."""
    _check_depth(text if isinstance(text, str) else text.decode("utf-8", "replace"), max_depth)
    return json.loads(text)


def _check_depth(text: str, max_depth: int) -> None:
    """One pass over the text counting open brackets outside strings."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                raise ValueError(f"JSON nested deeper than {max_depth} levels")
        elif char in "]}":
            depth -= 1


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", "utf-8")
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode(encoding)
            return loads_bounded(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error: {exc}") from None
