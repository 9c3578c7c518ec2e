"""A private dockerd: its own data root, exec root, socket and pidfile, stopped by its PID.

It runs under nice, and so do its containerd, its builds and its containers:
the machine's CPUs are shared.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .log import fail

DOCKERD = "/usr/sbin/dockerd"
# Debian's client, not a newer one earlier on PATH; compose v1 is Debian's only compose.
DOCKER = "/usr/bin/docker"
COMPOSE = "/usr/bin/docker-compose"
NICENESS = 10


class Engine:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = root / "docker.sock"
        self.log_path = root / "dockerd.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment in which docker and docker-compose talk to this engine."""
        return {**os.environ, "DOCKER_HOST": f"unix://{self.socket}"}

    def start(self, timeout: float = 60) -> None:
        argv = ["nice", "-n", str(NICENESS), DOCKERD,
                "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
                "-H", f"unix://{self.socket}", "--pidfile", str(self.root / "docker.pid")]
        with self.log_path.open("wb") as log:
            # nice execs dockerd, so this PID is dockerd's.
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + timeout
        while self.docker("version", check=False).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                fail(f"dockerd did not start: {self.log_tail()}")
            time.sleep(0.5)

    def stop(self, timeout: float = 60) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            fail(f"dockerd (PID {self.process.pid}) ignored SIGTERM for {timeout}s; killed")

    def docker(self, *args: str, check: bool = True, timeout: float = 600,
               input: str | None = None) -> subprocess.CompletedProcess[str]:
        return self._run([DOCKER, *args], check, timeout, input)

    def compose(self, *args: str, check: bool = True, timeout: float = 900,
                input: str | None = None, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return self._run([COMPOSE, *args], check, timeout, input, env, cwd)

    def _run(self, argv: list[str], check: bool, timeout: float, input: str | None,
             env: dict[str, str] | None = None,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              input=input, env={**self.env, **(env or {})}, cwd=cwd)
        if check and done.returncode != 0:
            fail(f"{' '.join(argv[:4])} ... exited {done.returncode}: "
                 f"{(done.stderr or done.stdout)[-3000:]}")
        return done

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"
