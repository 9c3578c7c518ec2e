"""`make run`'s services kept running: one that exits is started again.

A worker or beat may exit on its own (a broker outage it did not survive, a crash):
`make run` is a newcomer's whole control plane, so it restarts the process, as
docker-compose's `restart: unless-stopped` does, instead of leaving operations
pending until someone notices. A service that keeps exiting (MAX_STARTS in WINDOW
seconds) is a real fault; the supervisor then gives up so the newcomer sees it.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

WINDOW = 60.0
MAX_STARTS = 5


@dataclass
class Service:
    name: str
    argv: list[str]
    log: Path
    process: subprocess.Popen | None = None
    starts: list[float] = field(default_factory=list)


class Supervisor:
    def __init__(self, services: list[Service], *, cwd: Path, env: dict[str, str],
                 say: Callable[[str], None], window: float = WINDOW,
                 max_starts: int = MAX_STARTS) -> None:
        self.services, self.cwd, self.env, self.say = services, cwd, env, say
        self.window, self.max_starts = window, max_starts

    def start(self, service: Service) -> None:
        now = time.monotonic()
        service.starts = [*(t for t in service.starts if t > now - self.window), now]
        with service.log.open("a") as log:
            # A session of its own: Ctrl-C in the terminal reaches us, and we stop it.
            service.process = subprocess.Popen(
                service.argv, cwd=self.cwd, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.say(f"started {service.name} (pid {service.process.pid}, log {service.log})")

    def start_all(self) -> None:
        for service in self.services:
            self.start(service)

    def check(self) -> str | None:
        """Restart every service that exited; the name of one that keeps exiting, if any."""
        for service in self.services:
            code = service.process.poll() if service.process else None
            if code is None:
                continue
            self.say(f"{service.name} (pid {service.process.pid}) exited with {code}; "
                     f"see {service.log}")
            if len(service.starts) >= self.max_starts:
                return service.name
            self.start(service)
        return None

    def stop_all(self, timeout: float = 20) -> None:
        running = [s.process for s in self.services if s.process and s.process.poll() is None]
        for process in running:
            process.terminate()
        for process in running:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout)
