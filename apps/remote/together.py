"""Commands on different hosts at the same time, logged as if one ran after the other.

A step that must read two hosts (a replication link's source and target) pays one
round trip for both instead of one each. Each call runs in a thread of its own with
SSH only (no database: Django's connections are per thread); the commands each ran
are offered to the caller's `command_observer` afterwards, call by call, so an
operation's log keeps one line per command with its own duration.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from apps.remote.ssh import Result, command_observer


def concurrently(*calls: Callable[[], Any]) -> list[Any]:
    """Each call's return value, in order; the first call's exception (in order) is
    raised once every call has ended and every command has been logged."""
    if len(calls) < 2:
        return [call() for call in calls]
    observer = command_observer.get()
    heard: list[list[tuple[str, Result]]] = [[] for _ in calls]

    def run(index: int) -> tuple[Any, BaseException | None]:
        token = command_observer.set(lambda name, result: heard[index].append((name, result)))
        try:
            return calls[index](), None
        except BaseException as exc:  # raised in the caller's thread below
            return None, exc
        finally:
            command_observer.reset(token)

    with ThreadPoolExecutor(len(calls), thread_name_prefix="together") as pool:
        outcomes = list(pool.map(run, range(len(calls))))
    if observer is not None:
        for commands in heard:
            for name, result in commands:
                observer(name, result)
    for _, exc in outcomes:
        if exc is not None:
            raise exc
    return [value for value, _ in outcomes]
