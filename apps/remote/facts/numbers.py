"""Whole numbers as hosts print them.

str.isdigit() also accepts characters such as "²" or "١" that int() refuses (or reads as
another number), so a garbled line would crash a parser instead of being unreadable.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"[0-9]+\Z")


def is_digits(text: str | None) -> bool:
    """True for one or more ASCII digits and nothing else."""
    return text is not None and _DIGITS.match(text) is not None


def int_or_none(text: str | None) -> int | None:
    """The number in `text` if it is only ASCII digits, else None."""
    return int(text) if is_digits(text) else None
