"""Whole numbers as PoZoL takes them from a request: an int, never a bool.

JSON's true arrives as Python's True, an int equal to 1, so every check of a
count, a port or a size has to say "an int and not a bool"; it is said here
once. Each caller keeps its own words for the refusal. Pure: no Django, so
core/ modules use it too.
"""

from __future__ import annotations

from typing import TypeGuard


def is_whole(value: object) -> TypeGuard[int]:
    """An int, and not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def whole_in(value: object, low: int | None = None, high: int | None = None) -> TypeGuard[int]:
    """A whole number from `low` to `high`, both included (None: no bound that side)."""
    return (is_whole(value) and (low is None or low <= value)
            and (high is None or value <= high))


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or a float, and not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)
