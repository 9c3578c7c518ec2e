"""The compose deployment, driven as an operator would: docker-compose and the HTTP API."""

from __future__ import annotations

import http.cookiejar
import json
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .engine import Engine
from .log import fail

PROJECT = "pozolcheck"
SHARDS = 2  # the collector shards the deployment runs with (README, "More collector machines")
DEMO_STATE = "/var/lib/pozol-demo"  # demo-host's volume, as docker-compose.yml mounts it
WAIT_HEALTHY = ("db", "redis", "web", "demo-host")


class Deployment:
    def __init__(self, engine: Engine, repo: Path, port: int) -> None:
        self.engine = engine
        self.repo = repo
        self.base = f"http://127.0.0.1:{port}"
        self.port = port
        self.token = ""

    def compose(self, *args: str, **kwargs):
        env = {"POZOL_WEB_PORT": str(self.port), "COMPOSE_PROJECT_NAME": PROJECT,
               "POZOL_TELEMETRY_SHARDS": str(SHARDS)}
        return self.engine.compose(*args, env=env, cwd=self.repo, **kwargs)

    def exec(self, service: str, *argv: str, input: str | None = None) -> str:
        return self.compose("exec", "-T", service, *argv, input=input).stdout

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).stdout.strip()

    def state(self, service: str) -> dict:
        found = self.engine.docker("inspect", "--format", "{{json .State}}",
                                   self.container(service))
        return json.loads(found.stdout)

    def wait_healthy(self, services=WAIT_HEALTHY, timeout: float = 600) -> dict[str, float]:
        """Wait until every service's health check passes; seconds each took from now."""
        began, healthy = time.monotonic(), {}
        while len(healthy) < len(services):
            for service in set(services) - set(healthy):
                state = self.state(service)
                if state.get("Health", {}).get("Status") == "healthy":
                    healthy[service] = time.monotonic() - began
                elif not state["Running"]:
                    logs = self.compose("logs", "--no-color", "--tail", "20", service).stdout
                    fail(f"{service} exited {state['ExitCode']}:\n{logs}")
            if time.monotonic() - began > timeout:
                fail(f"not healthy after {timeout}s: {set(services) - set(healthy)}")
            time.sleep(2)
        return healthy

    def network_address(self, service: str) -> tuple[str, str]:
        """The service's IP address in the project's network, and that network's subnet."""
        inspected = json.loads(self.engine.docker("inspect", self.container(service)).stdout)
        (network, attached), = inspected[0]["NetworkSettings"]["Networks"].items()
        found = json.loads(self.engine.docker("network", "inspect", network).stdout)
        return attached["IPAddress"], found[0]["IPAM"]["Config"][0]["Subnet"]

    # --- signing in -------------------------------------------------------------------------

    def make_operator(self, username: str) -> str:
        """An operator with a password (returned), made inside the web container."""
        password = secrets.token_urlsafe(18)
        self.exec("web", "sh", "-c", "umask 077; cat > /tmp/operator-password && "
                  f"python manage.py ensure_operator {username} "
                  "--password-file /tmp/operator-password; rm -f /tmp/operator-password",
                  input=password + "\n")
        return password

    def sign_in(self, username: str, password: str) -> str:
        """Sign in through /login/ as a browser does; the page it lands on."""
        jar = http.cookiejar.CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        page = browser.open(f"{self.base}/login/", timeout=30).read().decode()
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if not csrf:
            fail("no CSRF token on /login/")
        form = urllib.parse.urlencode({"username": username, "password": password,
                                       "csrfmiddlewaretoken": csrf[1]}).encode()
        request = urllib.request.Request(f"{self.base}/login/", data=form,
                                         headers={"Referer": f"{self.base}/login/"})
        landed = browser.open(request, timeout=30)
        if landed.url.rstrip("/").endswith("/login"):
            fail("signing in with the operator's password came back to /login/")
        return urllib.parse.urlparse(landed.url).path

    def issue_token(self, username: str) -> None:
        self.token = self.exec("web", "python", "manage.py", "create_api_token", username,
                               "--name", "compose-check").strip()

    # --- the API ----------------------------------------------------------------------------

    def api(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.base}{path}", data=data, method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def ok(self, method: str, path: str, body: dict | None = None) -> dict:
        code, answer = self.api(method, path, body)
        if code >= 300:
            fail(f"{method} {path} answered {code}: {answer}")
        return answer

    def wait_operation(self, operation_id: int, timeout: float = 300) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            operation = self.ok("GET", f"/api/operations/{operation_id}/")
            if operation["status"] == "succeeded":
                return operation
            if operation["status"] in ("failed", "cancelled"):
                fail(f"operation {operation_id} ({operation['kind']}) {operation['status']}: "
                     f"{operation.get('error') or operation}")
            if time.monotonic() > deadline:
                fail(f"operation {operation_id} still {operation['status']} after {timeout}s")
            time.sleep(1)

    # --- a collector of its own -------------------------------------------------------------

    def start_collector(self, queue: str, secrets_file: Path) -> str:
        """The README's `docker run` of a second collector machine, on this engine: the
        image and the same secrets, the database and Redis reached by their names in the
        project's network instead of a private address. Its container's name."""
        name = f"{PROJECT}-{queue}"
        values = dict(line.split("=", 1) for line in secrets_file.read_text().splitlines()
                      if "=" in line and not line.startswith("#"))
        env = {"POZOL_SECRET_KEY": values["POZOL_SECRET_KEY"],
               "POZOL_CREDENTIAL_KEY": values["POZOL_CREDENTIAL_KEY"],
               "POZOL_TELEMETRY_SHARDS": str(SHARDS),
               "POZOL_DATABASE_URL": "postgres://pozol:"
                                     f"{values.get('POZOL_DB_PASSWORD', 'pozol')}@db:5432/pozol",
               "POZOL_REDIS_URL": "redis://redis:6379/0"}
        self.engine.docker(
            "run", "-d", "--name", name, "--network", f"{PROJECT}_default",
            *[arg for key, value in env.items() for arg in ("-e", f"{key}={value}")],
            "pozol:latest", "celery", "-A", "pozol", "worker", "-l", "info", "-Q", queue,
            "--concurrency", "1", "-n", f"{queue}@%h", "--without-gossip", "--without-mingle")
        return name

    def last_sample(self, host: int) -> str:
        """When the collectors last sampled the host ("None": never); the line is marked,
        since the shell may print other lines (a warning) before it."""
        said = self.exec("web", "python", "manage.py", "shell", "-c",
                         "from apps.telemetry.models import HostTelemetry as T; "
                         f"t = T.objects.filter(host_id={int(host)}).first(); "
                         "print('last sample:', t.last_sample_at if t else None)")
        marked = [line for line in said.splitlines() if line.startswith("last sample: ")]
        if not marked:
            fail(f"no answer from the shell about host {host}'s last sample: {said[-500:]}")
        return marked[-1].removeprefix("last sample: ").strip()

    # --- demo-host --------------------------------------------------------------------------

    def demo_host_facts(self) -> dict:
        """What the demo host's fleet says of it (`status --json` in its container)."""
        (host,) = json.loads(self.exec("demo-host", "python", "-m", "apps.demo.fleet", "status",
                                       "--json", "--state-dir", DEMO_STATE))
        return host

    def register_demo_host(self, facts: dict) -> dict:
        key = self.exec("demo-host", "cat", facts["private_key_path"])
        return self.ok("POST", "/api/hosts/", {
            "name": facts["name"], "address": facts["address"], "port": facts["port"],
            "user": facts["user"], "work_dir": facts["work_dir"], "private_key": key,
            "authorized_keys_file": facts["authorized_keys_path"] or "",
            "expected_fingerprint": facts["host_key_fingerprint"]})
