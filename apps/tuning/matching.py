"""Does what the host reads back mean the value we wrote?

zfs reads recordsize back as 16384 for 16K; PostgreSQL's SHOW prints 1GB
for 1048576kB; booleans have several spellings. Compare meanings, not text.
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b)?$", re.I)
_TIME = re.compile(r"^(\d+(?:\.\d+)?)\s*(us|ms|s|min|h|d)$")
_SIZE_FACTORS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
_TIME_FACTORS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000,
                 "d": 86_400_000}
_BOOLEANS = {"on": True, "true": True, "yes": True, "1": True,
             "off": False, "false": False, "no": False, "0": False}


def meaning(value: str | None, *, booleans: bool = True) -> object:
    """A comparable form: bytes for sizes, milliseconds for times, True/False."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if booleans and text in _BOOLEANS:
        return _BOOLEANS[text]
    if match := _TIME.match(text):
        return float(match[1]) * _TIME_FACTORS[match[2]]
    if match := _SIZE.match(text):
        return float(match[1]) * _SIZE_FACTORS[match[2].lower()]
    return text


def same(desired: str | None, actual: str | None, *, numeric_words: bool = False) -> bool:
    # Sysctls and module parameters are numbers where 0/1 are numbers, not booleans.
    return meaning(desired, booleans=not numeric_words) == meaning(actual,
                                                                   booleans=not numeric_words)


def reads_as(change, after: dict) -> bool:
    """Whether a change's desired value is what the host now reports."""
    numeric = change.layer in {"sysctl", "module"}
    return same(change.desired, after.get("value"), numeric_words=numeric)
