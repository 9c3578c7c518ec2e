"""`make run`'s demo, started for the README test where it disturbs nothing else.

It runs from a copy of this checkout (the demo keeps its state in the
checkout's .pozol/, and the README's commands read .pozol/env from the
directory they run in), with a database, a Redis, a loopback subnet, a fleet
state directory and a port of its own. It is stopped the way Ctrl-C stops
`make run`, by its own process group, and whatever that leaves is taken down
by PID: its services, its fleet, its Redis, its database, the copy.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

import psycopg

from apps.demo.services import free_port
from tests.pozol.readme_shell import SYSTEM_PATH

ROOT = Path(__file__).resolve().parents[2]
# Not copied: the VCS, caches and what a run of this checkout made (its own
# .pozol/ above all: a developer's running demo keeps its secrets there).
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", ".pozol", ".staticfiles", "test-artifacts",
                                    "__pycache__", ".pytest_cache", ".ruff_cache", "node_modules")
READY = re.compile(r"^PoZoL: ready: (http://\S+?)/? ", re.MULTILINE)
STARTED = re.compile(r"^PoZoL: started \w+ \(pid (\d+),", re.MULTILINE)


@dataclass(frozen=True)
class Demo:
    checkout: Path
    origin: str  # http://127.0.0.1:PORT, where its web answers
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def running_demo(subnet: str, timeout: float = 240):
    """Start the demo and yield it once it says it is ready; always take it all down."""
    with ExitStack() as stack:
        # The README applies a profile to a demo host, whose kernel is this machine's;
        # its rollback restores the dirty limits, and so does this if it never ran.
        stack.callback(_restore_dirty_limits, _dirty_limits())
        work = Path(tempfile.mkdtemp(prefix="pozol-readme-"))
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        checkout = _copy_of_this_checkout(work / "checkout")
        # A directory of its own (mkdtemp: short, for PostgreSQL's socket path);
        # the fleet makes it readable for the hosts' postgres user.
        fleet_dir = Path(tempfile.mkdtemp(prefix="pozol-readme-fleet-"))
        stack.callback(shutil.rmtree, fleet_dir, ignore_errors=True)
        stack.callback(_fleet_down, checkout, fleet_dir)
        database = stack.enter_context(_fresh_database())
        redis = stack.enter_context(_private_redis())
        port = free_port()
        env = {"PATH": SYSTEM_PATH, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
               "POZOL_DATABASE_URL": database, "POZOL_REDIS_URL": redis,
               "POZOL_DEMO_PORT": str(port), "POZOL_FLEET_STATE_DIR": str(fleet_dir),
               "POZOL_FLEET_SUBNET": subnet}
        log = work / "demo.log"
        # On failure, once the demo has stopped (below: callbacks run last first) and
        # before its copy is deleted.
        stack.push(lambda kind, *_: _keep_logs(checkout, log) if kind else None)
        process = subprocess.Popen(
            [str(checkout / ".venv" / "bin" / "python"), "-m", "apps.demo"], cwd=checkout,
            env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        stack.callback(_stop, process, log, checkout)
        demo = Demo(checkout, f"http://127.0.0.1:{port}", log)
        _wait_until_ready(demo, process, timeout)
        yield demo


def _keep_logs(checkout: Path, log: Path) -> None:
    """A failure's evidence outlives the copy: the services' logs go to test-artifacts/,
    and the end of the web's log to the test's output (a 500's traceback is there)."""
    kept = ROOT / "test-artifacts" / "readme-demo-logs"
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    shutil.copy(log, kept / "demo.log")
    for each in sorted((checkout / ".pozol" / "logs").glob("*.log")):
        shutil.copy(each, kept / each.name)
    web = kept / "web.log"
    tail = web.read_text(errors="replace")[-6000:] if web.exists() else "(no web.log)"
    print(f"\nthe demo's logs are in {kept}; the end of web.log:\n{tail}")


def _copy_of_this_checkout(target: Path) -> Path:
    shutil.copytree(ROOT, target, ignore=NOT_COPIED, symlinks=True)
    # The README says .venv/bin/python: the virtualenv this suite runs in.
    (target / ".venv").symlink_to(sys.prefix)
    return target


def _wait_until_ready(demo: Demo, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = READY.search(demo.output())
        if ready:
            assert ready.group(1) == demo.origin, demo.output()
            return
        if process.poll() is not None:
            raise AssertionError(f"the demo exited ({process.returncode}) before it was "
                                 f"ready:\n{demo.output()}")
        time.sleep(0.5)
    raise AssertionError(f"the demo was not ready within {timeout:.0f}s:\n{demo.output()}")


def _stop(process: subprocess.Popen, log: Path, checkout: Path) -> None:
    """As Ctrl-C stops `make run`; if that does not end it, by force, with its services."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
            return
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    # It died without stopping what it started (each in a session of its own):
    # those PIDs it printed, if they still run in this copy and are not reused.
    for pid in map(int, STARTED.findall(log.read_text(errors="replace"))):
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == checkout:
                os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            pass


DIRTY_LIMITS = ("dirty_ratio", "dirty_background_ratio", "dirty_bytes", "dirty_background_bytes")


def _dirty_limits() -> dict[str, str]:
    return {name: Path(f"/proc/sys/vm/{name}").read_text().strip() for name in DIRTY_LIMITS}


def _restore_dirty_limits(saved: dict[str, str]) -> None:
    # The kernel keeps one of each ratio/bytes pair: write the one that was set.
    for name in DIRTY_LIMITS:
        if saved[name] != "0" and _dirty_limits()[name] != saved[name]:
            Path(f"/proc/sys/vm/{name}").write_text(saved[name])


def _fleet_down(checkout: Path, fleet_dir: Path) -> None:
    """Nothing left if the demo could not take its fleet down (it does on SIGINT)."""
    subprocess.run([sys.executable, "-m", "apps.demo.fleet", "down", "--state-dir",
                    str(fleet_dir)], cwd=checkout, capture_output=True, timeout=120)


@contextmanager
def _fresh_database():
    """A database beside the suite's, named after it: empty now, dropped afterwards."""
    suite_db = urlsplit(os.environ["POZOL_DATABASE_URL"])  # tests/django_settings.py chose it
    name = f"{suite_db.path.strip('/')}_readme_demo"
    maintenance = _with_database(suite_db, "postgres")
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')
        conn.execute(f'create database "{name}"')
    try:
        yield _with_database(suite_db, name)
    finally:
        with psycopg.connect(maintenance, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')


def _with_database(url: SplitResult, name: str) -> str:
    """The URL naming another database. geturl() would drop the empty authority of
    postgres:///name (a local socket), leaving postgres:/name, which libpq refuses."""
    query = f"?{url.query}" if url.query else ""
    return f"{url.scheme}://{url.netloc}/{name}{query}"


@contextmanager
def _private_redis():
    """A Redis of its own: the demo's worker must never take the suite's tasks, nor
    leave tasks behind for the suite's workers (operation ids mean other rows there)."""
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not _answers(port):
            assert process.poll() is None and time.monotonic() < deadline, "no private Redis"
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
