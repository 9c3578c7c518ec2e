"""Requests that race: the same call from many threads at once, released together.

Each thread has its own database connection (Django opens one per thread),
closed when its call ends so the test database can be dropped afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def race(count: int, call: Callable[[], T], timeout: float = 60) -> list[T]:
    """What `call()` returned in each of `count` threads started at the same instant."""
    start = threading.Barrier(count)
    results: list[T] = []

    def one() -> None:
        try:
            start.wait()
            results.append(call())
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return results
