"""`make run`: the control plane, a worker, beat and a demo fleet, for a newcomer.

Everything it starts is a child it knows by PID; one that exits is started
again (apps/demo/supervise.py); Ctrl-C (or SIGTERM) stops them and the demo
fleet. Running it again is safe: secrets and the operator password are kept in
.pozol/, migrations are idempotent, the fleet's `up` is idempotent and hosts
already registered are left as they are.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from apps.demo.supervise import Service, Supervisor

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / ".pozol"
ENV_FILE = STATE / "env"
PY = sys.executable
HOST, PORT = "127.0.0.1", int(os.environ.get("POZOL_DEMO_PORT", "8000"))
FLEET_STATE = Path(os.environ.get("POZOL_FLEET_STATE_DIR", "/tmp/pozol-fleet"))
# The fleet has one host more than the demo registers: the README adds it
# through the API, with the request body written to SPARE_HOST_FILE.
DEMO_HOSTS = 2
SPARE_HOST = f"host{DEMO_HOSTS + 1}"
SPARE_HOST_FILE = STATE / "spare-host.json"


def say(text: str) -> None:
    print(f"PoZoL: {text}", flush=True)


def kept_secret(name: str, make) -> str:
    path = STATE / name
    if not path.exists():
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


def choose_database() -> str:
    if os.environ.get("POZOL_DATABASE_URL"):
        say(f"database: POZOL_DATABASE_URL ({os.environ['POZOL_DATABASE_URL'].split('@')[-1]})")
        return os.environ["POZOL_DATABASE_URL"]
    from apps.demo.services import ServiceUnavailable, postgres_url

    try:
        url = postgres_url()
    except ServiceUnavailable as exc:
        url = f"sqlite:///{STATE / 'pozol.sqlite3'}"
        say(f"database: embedded SQLite at {STATE / 'pozol.sqlite3'} ({exc}); "
            "production uses PostgreSQL")
        return url
    ensure_pg_database(url)
    say(f"database: PostgreSQL at {url.split('@')[-1]}")
    return url


def ensure_pg_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchone():
            conn.execute(f'create database "{name}"')


def environment() -> dict[str, str]:
    from cryptography.fernet import Fernet

    from apps.demo.services import ServiceUnavailable, redis_url

    STATE.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.setdefault("POZOL_SECRET_KEY", kept_secret("secret_key", lambda: secrets.token_urlsafe(48)))
    env.setdefault("POZOL_CREDENTIAL_KEY",
                   kept_secret("credential_key", lambda: Fernet.generate_key().decode()))
    env["POZOL_DATABASE_URL"] = choose_database()
    # /metrics for a local Prometheus (README: Prometheus and Grafana).
    env.setdefault("POZOL_METRICS_TOKEN",
                   kept_secret("metrics_token", lambda: secrets.token_urlsafe(32)))
    env.setdefault("POZOL_STATIC_ROOT", str(ROOT / ".staticfiles"))
    env.setdefault("POZOL_DISCOVERY_INTERVAL", "300")
    env["DJANGO_SETTINGS_MODULE"] = "pozol.settings"
    try:
        env.setdefault("POZOL_REDIS_URL", redis_url())
    except ServiceUnavailable as exc:
        sys.exit(f"PoZoL: cannot run without Redis: {exc}")
    write_env_file(env)
    return env


def write_env_file(env: dict[str, str]) -> None:
    """What this run chose, for manage.py in a new shell (pozol.settings.load_demo_env)."""
    lines = [f"{name}={value}" for name, value in sorted(env.items())
             if name.startswith("POZOL_") and "\n" not in value]
    text = "# written by `make run`; read when no POZOL_ variable is set\n"
    text += "".join(f"{line}\n" for line in lines)
    write_private(ENV_FILE, text)


def write_private(path: Path, text: str) -> None:
    """Secret keys inside: never readable by others, not even for an instant."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def write_spare_host() -> None:
    """The body of `POST /api/hosts/` for the fleet host the demo left unregistered."""
    from apps.demo.fleet import status

    (spare,) = [host for host in status(FLEET_STATE) if host.name == SPARE_HOST]
    body = {"name": spare.name, "address": spare.address, "port": spare.port,
            "user": spare.user, "work_dir": spare.work_dir,
            "authorized_keys_file": spare.authorized_keys_path or "",
            "private_key": Path(spare.private_key_path).read_text(),
            "expected_fingerprint": spare.host_key_fingerprint}
    write_private(SPARE_HOST_FILE, json.dumps(body, indent=2) + "\n")


def manage(env: dict[str, str], *args: str, capture: bool = False) -> str:
    result = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, check=True,
                            text=True, capture_output=capture)
    return result.stdout if capture else ""


def already_serving() -> bool:
    with socket.socket() as sock:
        return sock.connect_ex((HOST, PORT)) == 0


def fleet_problem() -> str | None:
    if os.geteuid() != 0:
        return "not root: the demo fleet needs root for mount namespaces, zfs-fuse and sshd"
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse: zfs-fuse cannot run here (in Docker: --device /dev/fuse)"
    for binary in ("/usr/sbin/zfs-fuse", "/usr/sbin/sshd", "/usr/lib/postgresql/15/bin/initdb"):
        if not Path(binary).exists():
            return f"{binary} is missing (run `make deps` as root)"
    return None


def start_fleet(env: dict[str, str]) -> bool:
    problem = fleet_problem()
    if problem:
        say(f"no demo fleet: {problem}. The control plane runs anyway.")
        return False
    say(f"starting a demo fleet of {DEMO_HOSTS + 1} hosts (zfs-fuse + sshd + PostgreSQL 15 "
        f"each); {SPARE_HOST} is left for the README to add")
    subprocess.run([PY, "-m", "apps.demo.fleet", "up", "--hosts", str(DEMO_HOSTS + 1),
                    "--state-dir", str(FLEET_STATE)], cwd=ROOT, env=env, check=True)
    manage(env, "register_demo_fleet", str(FLEET_STATE), "--spare", SPARE_HOST)
    write_spare_host()
    return True


def services(env: dict[str, str]) -> Supervisor:
    log_dir = STATE / "logs"
    log_dir.mkdir(exist_ok=True)
    # Workers without gossip and mingle (PoZoL uses neither): restarting gossip after a
    # Redis outage is where kombu fails ('NoneType' object has no attribute 'hostname').
    quiet = ["--without-gossip", "--without-mingle"]
    commands = {
        # gunicorn's control socket (for gunicornc) in the demo's state, not one path
        # in $HOME that every gunicorn of the user shares and the first to stop removes.
        "web": [PY, "-m", "gunicorn", "pozol.wsgi", "--bind", f"{HOST}:{PORT}",
                "--workers", "2", "--access-logfile", "-",
                "--control-socket", str(STATE / "gunicorn.ctl")],
        "worker": [PY, "-m", "celery", "-A", "pozol", "worker", "-l", "info",
                   "--concurrency", "4", "-n", f"demo-{os.getpid()}@%h", *quiet],
        # Telemetry's collector: one process holds the pooled connections (settings),
        # serving every shard's queue here (one machine; apps.telemetry.shards).
        "telemetry": [PY, "-m", "celery", "-A", "pozol", "worker", "-l", "info", "-Q",
                      collector_queues(env), "--concurrency", "1",
                      "-n", f"telemetry-{os.getpid()}@%h", *quiet],
        "beat": [PY, "-m", "celery", "-A", "pozol", "beat", "-l", "info",
                 "-s", str(STATE / "celerybeat-schedule")],
    }
    return Supervisor([Service(name, argv, log_dir / f"{name}.log")
                       for name, argv in commands.items()], cwd=ROOT, env=env, say=say)


def collector_queues(env: dict[str, str]) -> str:
    """`telemetry`, and `telemetry-1`... when POZOL_TELEMETRY_SHARDS splits the fleet
    (migrate, run before, has refused a bad value). The names of
    apps.telemetry.shards.queue, written here because demo imports only remote
    (ARCHITECTURE.md); tests/pozol/test_demo_env.py checks that they agree."""
    count = int(env.get("POZOL_TELEMETRY_SHARDS", "").strip() or 1)
    return ",".join(["telemetry", *(f"telemetry-{index}" for index in range(1, count))])


def stop(supervisor: Supervisor | None, fleet: bool, env: dict[str, str]) -> None:
    say("stopping what this run started")
    if supervisor is not None:
        supervisor.stop_all()
    if fleet:
        subprocess.run([PY, "-m", "apps.demo.fleet", "down", "--state-dir", str(FLEET_STATE)],
                       cwd=ROOT, env=env, check=False)


def stop_requested(signum: int, _frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main() -> None:
    os.chdir(ROOT)
    if already_serving():
        sys.exit(f"PoZoL: something already answers on http://{HOST}:{PORT}/ (is `make run` "
                 "running in another terminal?); set POZOL_DEMO_PORT to use another port")
    env = environment()
    manage(env, "migrate", "--no-input", "-v", "0")
    manage(env, "collectstatic", "--no-input", "-v", "0")
    password = kept_secret("operator_password", lambda: secrets.token_urlsafe(12))
    manage(env, "ensure_operator", "operator", "--password-file", str(STATE / "operator_password"))
    supervisor: Supervisor | None = None
    fleet = False
    # Installed explicitly: a shell that starts us in the background leaves
    # SIGINT ignored, and Python keeps an inherited "ignore".
    signal.signal(signal.SIGINT, stop_requested)
    signal.signal(signal.SIGTERM, stop_requested)
    try:
        supervisor = services(env)
        supervisor.start_all()
        fleet = start_fleet(env)
        say(f"ready: http://{HOST}:{PORT}/  login: operator / {password}")
        say("API token, in any shell (it reads .pozol/env), as the README's REST API "
            "section does: export TOKEN=$(.venv/bin/python manage.py create_api_token operator)")
        say("Ctrl-C stops everything this run started")
        # A service that exits is started again; one that keeps exiting ends the run.
        while (failing := supervisor.check()) is None:
            time.sleep(1)
        say(f"{failing} keeps exiting; see .pozol/logs/{failing}.log")
    except KeyboardInterrupt:
        pass
    finally:
        stop(supervisor, fleet, env)


if __name__ == "__main__":
    main()
