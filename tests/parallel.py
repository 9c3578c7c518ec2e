"""What each pytest-xdist worker of one run keeps to itself: a Redis database and a
test-host subnet (pytest-django already gives each worker its own test database)."""

from __future__ import annotations

import os


def worker_index() -> int:
    """0 outside xdist and on gw0, N on gwN."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name.removeprefix("gw") or 0)


def worker_subnet(subnet: str) -> str:
    """127.0.88 on gw0, 127.0.89 on gw1: the third part moves by the worker's index."""
    first, second, third = subnet.split(".")
    return f"{first}.{second}.{int(third) + worker_index()}"


def worker_redis_db(db: int) -> int:
    """15 on gw0, 14 on gw1: counting down, away from `make run`'s database 0."""
    return db - worker_index()


def worker_redis_url(url: str | None) -> str | None:
    """A preferred Redis URL's database moved the same way (redis://h:p/8 -> /7 on gw1)."""
    if not url or not worker_index():
        return url
    base, _, db = url.rpartition("/")
    return f"{base}/{worker_redis_db(int(db or 0))}"
