"""apps.remote.together: calls at once, their commands logged in call order."""

from __future__ import annotations

import threading

import pytest

from apps.remote.shell import Result
from apps.remote.ssh import command_observer
from apps.remote.together import concurrently


def _ran(name: str) -> None:
    """What a Session does after each command: offer it to this context's observer."""
    observer = command_observer.get()
    if observer is not None:
        observer(name, Result(name, 0, "", ""))


def test_calls_run_at_once_and_their_commands_are_logged_in_call_order():
    both = threading.Barrier(2, timeout=10)  # neither passes unless the other runs too
    heard = []

    def first():
        _ran("a1")
        both.wait()
        _ran("a2")
        return "A"

    def second():
        both.wait()
        _ran("b1")
        return "B"

    token = command_observer.set(lambda name, result: heard.append(name))
    try:
        assert concurrently(first, second) == ["A", "B"]
    finally:
        command_observer.reset(token)
    assert heard == ["a1", "a2", "b1"]


def test_the_first_failure_is_raised_after_every_call_ended_and_was_logged():
    heard, ended = [], []

    def fails():
        _ran("a")
        raise RuntimeError("first")

    def slow():
        _ran("b")
        ended.append(True)

    token = command_observer.set(lambda name, result: heard.append(name))
    try:
        with pytest.raises(RuntimeError, match="first"):
            concurrently(fails, slow)
    finally:
        command_observer.reset(token)
    assert ended == [True] and heard == ["a", "b"]


def test_one_call_runs_in_the_callers_thread():
    assert concurrently(threading.get_ident) == [threading.get_ident()]
