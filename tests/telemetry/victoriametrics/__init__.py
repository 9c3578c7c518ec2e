"""A real VictoriaMetrics (/usr/bin/victoria-metrics, Debian's package) for one test
module, and the answers captured from it (README.md beside this file)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

HERE = Path(__file__).parent
BINARY = "/usr/bin/victoria-metrics"
# Loopback ports this checkout's VictoriaMetrics may take (never the default 8428,
# which a real one may hold); POZOL_TEST_VICTORIAMETRICS_PORTS=first-last moves them.
PORTS = os.environ.get("POZOL_TEST_VICTORIAMETRICS_PORTS", "18428-18438")
# Retention passed here and in the README: 400 days, the hourly rollups' default.
RETENTION = "400d"
# Samples visible to queries as soon as they are written (the default 30 s hides the
# newest sample of a chart that ends now; PoZoL writes each round whole, in one request).
LATENCY_OFFSET = "0s"


def captured(name: str) -> dict:
    return json.loads((HERE / name).read_text())


class VictoriaMetrics:
    """One victoria-metrics process on 127.0.0.1, its data in a temporary directory,
    stopped (and started again) by its own PID."""

    def __init__(self, binary: str = BINARY) -> None:
        self.binary = binary
        self.port = _free_port()
        self.data = Path(tempfile.mkdtemp(prefix="pozol-vm-"))
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, f"-httpListenAddr=127.0.0.1:{self.port}",
             f"-storageDataPath={self.data}", f"-retentionPeriod={RETENTION}",
             f"-search.latencyOffset={LATENCY_OFFSET}", "-loggerLevel=ERROR"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while not self._healthy():
            if self.process.poll() is not None:
                raise RuntimeError(f"victoria-metrics exited ({self.process.returncode})")
            if time.monotonic() > deadline:
                raise RuntimeError("victoria-metrics did not answer /health in 30 s")
            time.sleep(0.1)

    def _healthy(self) -> bool:
        try:
            return requests.get(f"{self.url}/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def flush(self) -> None:
        """Make what was written searchable now (it is, within a second, anyway)."""
        requests.get(f"{self.url}/internal/force_flush", timeout=10).raise_for_status()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.data, ignore_errors=True)


def _free_port() -> int:
    first, _, last = PORTS.partition("-")
    for port in range(int(first), int(last or first) + 1):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS} for victoria-metrics")


@pytest.fixture
def victoriametrics(settings) -> Iterator[VictoriaMetrics]:
    """A started VictoriaMetrics, and the product's settings pointing at it."""
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"{BINARY} is missing: `make debs` installs Debian's victoria-metrics")
    from apps.telemetry import victoria

    victoria._backlog.clear()  # no round left waiting by an earlier test
    server = VictoriaMetrics()
    server.start()
    settings.POZOL = {**settings.POZOL, "TELEMETRY_STORE": "victoriametrics",
                      "VICTORIAMETRICS_URL": server.url, "VICTORIAMETRICS_TIMEOUT": 5}
    try:
        yield server
    finally:
        server.remove()
        victoria._backlog.clear()
