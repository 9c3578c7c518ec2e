"""The step-by-step log: every step with the time it started and how long it took."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

STARTED = time.monotonic()


def say(text: str) -> None:
    print(f"[{time.monotonic() - STARTED:7.1f}s] {text}", flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    began = time.monotonic()
    say(f"{name} ...")
    try:
        yield
    except BaseException as exc:
        say(f"{name}: FAILED after {time.monotonic() - began:.1f}s: {exc}")
        raise
    say(f"{name}: ok ({time.monotonic() - began:.1f}s)")


class CheckFailed(Exception):
    """Something the deployment should do, it did not; the message says what."""


def fail(text: str) -> None:
    raise CheckFailed(text)


def detail(text: str) -> None:
    for line in text.rstrip().splitlines():
        print(f"           {line}", file=sys.stdout, flush=True)
