"""Find, or start, the PostgreSQL and Redis that `make run` and the suite need.

A fresh machine (or CI's clean clone) has no service assumed: if nothing
answers at the URL asked for (or the usual local address), a private server is
started in a temporary directory on a free port and stopped, by its own PID,
when the process that started it exits. A URL the caller insists on
(`required=True`) that does not answer is an error instead.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")
DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/pozol"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


class ServiceUnavailable(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _pg_accepts(url: str) -> bool:
    import psycopg

    base = url.rsplit("/", 1)[0] + "/postgres"
    try:
        with psycopg.connect(base, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


def postgres_url(preferred: str | None = None) -> str:
    """`preferred` (which must answer) or the local PostgreSQL, else a private one."""
    url = preferred or DEFAULT_PG_URL
    if _pg_accepts(url):
        return url
    if preferred:
        raise ServiceUnavailable(f"{url} does not accept connections")
    return _start_private_postgres()


def _start_private_postgres() -> str:
    if not (PG_BIN / "initdb").exists():
        raise ServiceUnavailable(
            f"no PostgreSQL answers at {DEFAULT_PG_URL} and {PG_BIN}/initdb is missing: "
            "run `make deps` (installs postgresql-15) or name a PostgreSQL that answers")
    directory = Path(tempfile.mkdtemp(prefix="pozol-test-pg-"))
    port = free_port()
    as_user = _unprivileged_user()
    if as_user:
        shutil.chown(directory, as_user, as_user)
    _run([str(PG_BIN / "initdb"), "-D", str(directory / "data"), "-U", "postgres",
          "--auth=trust", "-E", "UTF8"], as_user)
    _run([str(PG_BIN / "pg_ctl"), "-D", str(directory / "data"), "-l", str(directory / "log"),
          "-w", "-o", f"-h 127.0.0.1 -p {port} -k {directory} -c fsync=off", "start"], as_user)
    atexit.register(_stop_private_postgres, directory, as_user)
    return f"postgres://postgres@127.0.0.1:{port}/pozol"


def _stop_private_postgres(directory: Path, as_user: str | None) -> None:
    _run([str(PG_BIN / "pg_ctl"), "-D", str(directory / "data"), "-m", "fast", "-w", "stop"],
         as_user, check=False)
    shutil.rmtree(directory, ignore_errors=True)


def _unprivileged_user() -> str | None:
    """initdb refuses to run as root; borrow the postgres account then."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ServiceUnavailable(
            "running as root but there is no postgres user for initdb") from None
    return "postgres"


def _run(argv: list[str], as_user: str | None, check: bool = True) -> None:
    if as_user:
        argv = ["runuser", "-u", as_user, "--", *argv]
    subprocess.run(argv, check=check, capture_output=True, timeout=120)


def redis_url(db: int = 0, preferred: str | None = None) -> str:
    """`preferred` (which must answer) or the local Redis's database `db`, else a private one."""
    url = preferred or DEFAULT_REDIS_URL.replace("/0", f"/{db}")
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    if _answers(host or "127.0.0.1", int(port or 6379)):
        return url
    if preferred:
        raise ServiceUnavailable(f"{url} does not answer")
    return _start_private_redis(db)


def _start_private_redis(db: int) -> str:
    binary = shutil.which("redis-server")
    if not binary:
        raise ServiceUnavailable("no Redis answers on 127.0.0.1:6379 and redis-server is "
                                 "missing: run `make deps` or name a Redis that answers")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atexit.register(_stop_process, process)
    deadline = time.monotonic() + 10
    while not _answers("127.0.0.1", port):
        if time.monotonic() > deadline or process.poll() is not None:
            raise ServiceUnavailable("the private redis-server did not start")
        time.sleep(0.1)
    return f"redis://127.0.0.1:{port}/{db}"


def _stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        process.wait(timeout=10)
