"""Waiting in tests on a condition with a deadline, never for a fixed time.

A fixed sleep is either too short on a loaded machine (a flaky test) or too
long everywhere (a slow one); a stopwatch around a call measures set-up too.
These wait for what the test means and give up at a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout


def wait_until(condition: Callable[[], object], seconds: float, interval: float = 0.1) -> bool:
    """Whether `condition()` became true before `seconds` passed."""
    deadline = time.monotonic() + seconds
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def wait_for(value: Callable[[], object], seconds: float, what: str,
             interval: float = 0.2) -> object:
    """The first true answer of `value()`; fails the test, naming `what`, at the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        answer = value()
        if answer:
            return answer
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def raised_within(seconds: float, call: Callable[[], object]) -> BaseException | None:
    """The exception `call()` ended with (None if it returned); fails the test if it
    has not ended within `seconds`."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(call)
    try:
        return future.exception(timeout=seconds)
    except FutureTimeout:
        raise AssertionError(f"still running after {seconds} s") from None
    finally:
        pool.shutdown(wait=False)
