"""`make run` restarts a service that exits (a worker after a broker outage, say)
and gives up on one that keeps exiting (issue 19 §5)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from apps.demo.supervise import Service, Supervisor


def supervisor(tmp_path: Path, *services: tuple[str, str], **limits) -> Supervisor:
    said: list[str] = []
    made = [Service(name, [sys.executable, "-c", code], tmp_path / f"{name}.log")
            for name, code in services]
    result = Supervisor(made, cwd=tmp_path, env=dict(os.environ), say=said.append, **limits)
    result.said = said
    return result


def wait_exit(service: Service) -> None:
    service.process.wait(timeout=10)


def test_a_service_that_exits_is_started_again(tmp_path):
    runs = tmp_path / "runs"
    code = f"open({str(runs)!r}, 'a').write('x'); import time; time.sleep(60)"
    sup = supervisor(tmp_path, ("worker", code))
    sup.start_all()
    try:
        worker = sup.services[0]
        first = worker.process
        deadline = time.monotonic() + 10
        while not runs.exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        first.kill()  # the worker died
        wait_exit(worker)
        assert sup.check() is None
        assert worker.process.pid != first.pid and worker.process.poll() is None
        assert any("worker" in line and "exited" in line for line in sup.said)
        assert sup.check() is None  # a running service is left alone
    finally:
        sup.stop_all()
    assert worker.process.poll() is not None


def test_a_service_that_keeps_exiting_is_given_up(tmp_path):
    sup = supervisor(tmp_path, ("beat", "raise SystemExit(3)"),
                     ("web", "import time; time.sleep(60)"), max_starts=3)
    sup.start_all()
    try:
        beat = sup.services[0]
        given_up = None
        for _ in range(3):
            wait_exit(beat)
            given_up = sup.check()
        assert given_up == "beat" and len(beat.starts) == 3
        assert sup.services[1].process.poll() is None
    finally:
        sup.stop_all()
