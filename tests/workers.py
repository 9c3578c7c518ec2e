"""Real Celery workers for tests, pointed at the test database, stopped by PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def test_database_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    return (f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:"
            f"{db['PORT'] or 5432}/{db['NAME']}")


class ProcessGroup:
    """A process the tests started in a session of its own (start_new_session=True),
    stopped through its process group by its own PID, never by name."""

    process: subprocess.Popen
    log: Path

    def kill(self) -> None:
        """SIGKILL the process and its children: a machine that died mid-step."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def environment(**env: str) -> dict[str, str]:
    """The environment of a Celery process on the test database and the suite's Redis.

    Not an xdist worker itself: tests/django_settings.py would then replace the broker
    given here (a test's own Redis, say) with the xdist worker's database."""
    inherited = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    return {**inherited, "POZOL_DATABASE_URL": test_database_url(),
            "POZOL_REDIS_URL": settings.CELERY_BROKER_URL,
            "DJANGO_SETTINGS_MODULE": "tests.django_settings", **env}


class Worker(ProcessGroup):
    def __init__(self, app: str, name: str, log_dir: Path, *, queues: str | None = None,
                 concurrency: int = 2, **env: str) -> None:
        # Under the test's tmp_path: pytest keeps the last few runs' and prunes the rest.
        self.log = log_dir / f"worker-{name}.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", app, "worker", "--pool", "prefork",
             "--concurrency", str(concurrency), "-l", "info", "-n", f"{name}-{os.getpid()}@%h",
             "--without-gossip", "--without-mingle",  # as make run and compose start them
             *(["-Q", queues] if queues else [])],
            cwd=ROOT, env=environment(**env), stdout=self.log.open("w"),
            stderr=subprocess.STDOUT, start_new_session=True)


class Beat(ProcessGroup):
    """`celery beat` with django-celery-beat's DatabaseScheduler, as deployed: the
    schedule is the PeriodicTask rows of the test database."""

    def __init__(self, app: str, name: str, log_dir: Path, **env: str) -> None:
        self.log = log_dir / f"beat-{name}.log"
        # Its own pid file: the default, ./celerybeat.pid in the checkout, would
        # stop a second beat from starting while a stale one is there.
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", app, "beat", "-l", "info",
             "-S", "django_celery_beat.schedulers:DatabaseScheduler",
             "--pidfile", str(log_dir / f"beat-{name}.pid")],
            cwd=ROOT, env=environment(**env), stdout=self.log.open("w"),
            stderr=subprocess.STDOUT, start_new_session=True)
