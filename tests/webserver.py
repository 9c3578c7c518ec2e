"""A real gunicorn for tests, on the test database and Redis, with production settings.

live_server runs the test settings in-process; this runs `pozol.settings` from
the environment, as a deployment does, so settings that only exist with
POZOL_DEBUG=false (HTTPS redirect, HSTS, secure cookies) and rates read from
POZOL_* variables are tested in their real shape.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import requests
from django.conf import settings

from apps.demo.services import free_port
from tests.workers import ROOT, ProcessGroup, test_database_url


class Gunicorn(ProcessGroup):
    def __init__(self, log_dir: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log_dir / "gunicorn.log"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("POZOL_")}
        environment.update({
            "DJANGO_SETTINGS_MODULE": "pozol.settings",
            "POZOL_DEBUG": "false",
            "POZOL_SECRET_KEY": "gunicorn-test-secret-key",
            "POZOL_CREDENTIAL_KEY": os.environ["POZOL_CREDENTIAL_KEY"],
            "POZOL_DATABASE_URL": test_database_url(),
            "POZOL_REDIS_URL": settings.CELERY_BROKER_URL,
            # Counts of this server only, shared by its workers.
            "POZOL_CACHE_KEY_PREFIX": f"pozol-gunicorn-test-{uuid.uuid4().hex}",
            "POZOL_STATIC_ROOT": str(settings.STATIC_ROOT),
            **env,
        })
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "pozol.wsgi", "--bind",
             f"127.0.0.1:{self.port}", "--workers", "2", "--access-logfile", "-",
             # Not gunicorn's default control socket in $HOME, shared by every server.
             "--no-control-socket"],
            cwd=ROOT, env=environment, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
            start_new_session=True)
        self._wait_until_answering()

    def _wait_until_answering(self, timeout: float = 120) -> None:
        # The port opens when the master binds it, before any worker has loaded Django;
        # on a loaded machine that load alone took over a request's 10 s. Ready is when
        # a page answers.
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.output()[-3000:]}")
            try:
                requests.get(f"{self.url}/login/", timeout=left, allow_redirects=False)
                return
            except requests.ConnectionError:
                time.sleep(0.2)
            except requests.Timeout:
                break
        self.stop()
        raise RuntimeError(f"gunicorn did not answer in {timeout}s: {self.output()[-3000:]}")
