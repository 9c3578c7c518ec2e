"""The run itself, step by step (see __init__.py); exit 0 only if every step passed
and the machine is back as it was."""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys
import tempfile
import time
from pathlib import Path

from cryptography.fernet import Fernet

from . import machine
from .deployment import DEMO_STATE, PROJECT, SHARDS, Deployment
from .engine import NICENESS, Engine
from .images import ensure_base_images
from .log import CheckFailed, fail, say, step

REPO = Path(__file__).resolve().parents[3]
OPERATOR = "compose-admin"
COLLECTION_SECONDS = 60  # POZOL_TELEMETRY_INTERVAL's default: beat's telemetry rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tools.compose_check",
                                     description=__doc__)
    parser.add_argument("--cache", type=Path,
                        help="keep the debootstrapped base here between runs")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("compose-check: run as root (it installs packages and runs dockerd)",
              file=sys.stderr)
        return 2
    try:
        with step("packages: docker.io, docker-compose, nftables, debootstrap"):
            installed = machine.install_missing()
            say(f"  installed {' '.join(installed)}" if installed else "  all there already")
        before = machine.capture()
        say(f"machine before: {before.sysctls}, nft tables {sorted(before.nft_tables) or 'none'}")
        _run(args.cache, before)
    except CheckFailed as exc:
        say(f"compose-check FAILED: {exc}")
        return 1
    say("compose-check passed")
    return 0


def _run(cache: Path | None, before: machine.MachineState) -> None:
    root = Path(tempfile.mkdtemp(prefix="pozol-compose-", dir="/var/tmp"))
    engine = Engine(root)
    env_file = REPO / ".env"
    made_env_file = False
    try:
        with step(f"dockerd (data root {root}/data, nice {NICENESS})"):
            engine.start()
        with step("base images (official ones, or stand-ins)"):
            ensure_base_images(engine, cache)
        if env_file.exists():
            say(f"secrets: the {env_file} there already (left as it is)")
        else:
            _write_env_file(env_file)
            made_env_file = True
        deployment = Deployment(engine, REPO, _free_port())
        _deploy(deployment)
        _exercise(deployment, env_file)
    finally:
        try:
            _tear_down(engine, root, before)
        finally:
            if made_env_file:
                env_file.unlink()


def _write_env_file(path: Path) -> None:
    """Secrets where docker-compose reads them (and where .dockerignore must stop them)."""
    with step(f"secrets in {path.name} (removed at the end)"):
        path.write_text(f"POZOL_SECRET_KEY={secrets.token_urlsafe(48)}\n"
                        f"POZOL_CREDENTIAL_KEY={Fernet.generate_key().decode()}\n")
        path.chmod(0o600)


def _deploy(deployment: Deployment) -> None:
    with step("docker-compose build"):
        deployment.compose("build", timeout=1800)
        size = deployment.engine.docker("image", "inspect", "--format", "{{.Size}}",
                                        "pozol:latest").stdout.strip()
        say(f"  pozol:latest, {int(size) >> 20} MiB")
    with step("the image carries no .env"):
        found = deployment.engine.docker("run", "--rm", "--entrypoint", "ls", "pozol:latest",
                                         "-a", "/app").stdout.split()
        if ".env" in found:
            fail("/app/.env is in the image: .dockerignore lets the secrets in")
    with step(f"docker-compose up -d (web on 127.0.0.1:{deployment.port})"):
        deployment.compose("up", "-d")
    with step("health checks"):
        for service, seconds in sorted(deployment.wait_healthy().items(), key=lambda i: i[1]):
            say(f"  {service} healthy after {seconds:.0f}s")
        migrate = deployment.state("migrate")
        if migrate["Running"] or migrate["ExitCode"] != 0:
            fail(f"migrate: {migrate}")


def _exercise(deployment: Deployment, env_file: Path) -> None:
    with step("sign in: an operator, /login/ with its password, an API token"):
        password = deployment.make_operator(OPERATOR)
        say(f"  signed in, landed on {deployment.sign_in(OPERATOR, password)}")
        deployment.issue_token(OPERATOR)
    with step("register demo-host through the API"):
        facts = deployment.demo_host_facts()
        if facts["address"] != "demo-host":
            fail(f"the demo host's fleet advertises {facts['address']}, not demo-host")
        added = deployment.register_demo_host(facts)
        host = added["id"]
        say(f"  host {host}: {added['name']} at {added['address']}, "
            f"pinning {facts['host_key_fingerprint']}")
    with step("first discovery"):
        deployment.wait_operation(added["operation"]["id"])
        clusters = deployment.ok("GET", f"/api/hosts/{host}/clusters/")
        clusters = clusters.get("results", clusters)
        if not clusters:
            fail("discovery found no cluster on demo-host")
        cluster = clusters[0]["id"]
        say(f"  {len(clusters)} cluster(s); cluster {cluster}: {clusters[0].get('data_dir')}")
    _second_collector(deployment, host, env_file)
    with step("snapshot of the cluster"):
        taken = deployment.ok("POST", f"/api/hosts/{host}/snapshots/",
                              {"cluster": cluster, "label": "compose-check"})
        deployment.wait_operation(taken["id"])
        listed = deployment.ok("GET", f"/api/hosts/{host}/snapshots/?origin=pozol")["results"]
        snapshot = next(s for s in listed if s["dataset"].endswith("pg/data"))
        say(f"  {snapshot['full_name']}")
    with step("clone settings: listen on demo-host's address in the compose network"):
        # demo-host is registered by name and a clone listens on an IP address: the
        # container's, reachable from the other containers (the network's subnet).
        address, subnet = deployment.network_address("demo-host")
        deployment.ok("PUT", f"/api/hosts/{host}/clone-settings/", {
            "port_min": 6500, "port_max": 6599, "listen_address": address,
            "allowed_networks": [subnet]})
        say(f"  clones listen on {address}, open to {subnet}")
    with step("clone from that snapshot, then a query in it"):
        made = deployment.ok("POST", "/api/clones/", {
            "host": host, "cluster": cluster, "snapshot": snapshot["name"],
            "name": "compose-check", "ttl_minutes": 60})
        deployment.wait_operation(made["operation"]["id"])
        clone = deployment.ok("GET", f"/api/clones/{made['clone']['id']}/")
        # The connection string names the postgres database; the demo's data is in pgbench.
        pgbench = clone["connection_string"].rsplit("/", 1)[0] + "/pgbench"
        count = deployment.exec("web", "env", f"PGPASSWORD={made['password']}", "psql",
                                pgbench, "-XAtc", "select count(*) from pgbench_accounts").strip()
        say(f"  {clone['name']}: {clone['state']}, {clone['connection_string']}; "
            f"pgbench_accounts has {count} rows")
    with step("stop demo-host"):
        deployment.compose("stop", "demo-host", timeout=120)
        stopped = deployment.state("demo-host")
        if stopped["ExitCode"] != 0:
            fail(f"demo-host exited {stopped['ExitCode']}: "
                 f"{deployment.compose('logs', '--no-color', '--tail', '15', 'demo-host').stdout}")
        kept = deployment.engine.docker(
            "run", "--rm", "-v", f"{PROJECT}_demo-host:/volume", "-w", "/volume",
            "--entrypoint", "find", "pozol:latest", ".", "-type", "f").stdout.split()
        if "./id_ed25519" not in kept or "./host_keys/host1_ed25519" not in kept:
            fail(f"the volume lost its keys: {kept}")
        say(f"  exit 0; the volume keeps {' '.join(sorted(p[2:] for p in kept))}")
    with step("start demo-host and discover it again with the keys it had"):
        deployment.compose("start", "demo-host")
        deployment.wait_healthy(("demo-host",))
        again = deployment.demo_host_facts()
        if again["host_key_fingerprint"] != facts["host_key_fingerprint"]:
            fail(f"a new host key after the restart: {again['host_key_fingerprint']}")
        rediscovery = deployment.ok("POST", f"/api/hosts/{host}/discover/")
        deployment.wait_operation(rediscovery["id"])
        say(f"  same host key {again['host_key_fingerprint']}; discovery succeeded")
    with step("register_demo_fleet in demo-host finds it registered"):
        said = deployment.exec("demo-host", "python", "manage.py", "register_demo_fleet",
                               DEMO_STATE)
        if "refreshed host1" not in said or "re-pinned" in said:
            fail(f"register_demo_fleet said: {said}")
        hosts = deployment.ok("GET", "/api/hosts/")
        if hosts["count"] != 1:
            fail(f"{hosts['count']} hosts registered, not 1")
        say(f"  {said.strip()}")


def _second_collector(deployment: Deployment, host: int, env_file: Path) -> None:
    """The README's second collector machine: with two shards, demo-host (an odd id)
    is shard 1's, which the compose file's collector (shard 0) never samples; a worker
    started as the README starts it on machine 2 samples it."""
    queue = f"telemetry-{host % SHARDS}"
    with step(f"a collector of its own for {queue} (README: More collector machines)"):
        if queue == "telemetry":
            fail(f"demo-host got id {host}: shard 0, which the compose collector serves")
        time.sleep(COLLECTION_SECONDS + 10)  # a round of shard 0 has come and gone
        early = deployment.last_sample(host)
        if early != "None":
            fail(f"host {host} was sampled (at {early}) before any worker served {queue}")
        name = deployment.start_collector(queue, env_file)
        say(f"  {name} started; host {host} not sampled before it")
        deadline = time.monotonic() + 3 * COLLECTION_SECONDS
        while (sampled := deployment.last_sample(host)) == "None":
            if time.monotonic() > deadline:
                logs = deployment.engine.docker("logs", "--tail", "30", name, check=False)
                fail(f"{name} sampled nothing in {3 * COLLECTION_SECONDS}s:\n"
                     f"{logs.stdout}{logs.stderr}")
            time.sleep(3)
        say(f"  host {host} sampled at {sampled} by {name}")


def _tear_down(engine: Engine, root: Path, before: machine.MachineState) -> None:
    with step("tear down: compose down -v, dockerd stopped, the machine put back"):
        try:
            if engine.process is not None and engine.process.poll() is None:
                _show_exit_codes(engine)
                # Not compose services: removed before compose takes its network down.
                for shard in range(1, SHARDS):
                    engine.docker("rm", "-f", f"{PROJECT}-telemetry-{shard}", check=False)
                down = engine.compose("down", "-v", "--remove-orphans", "--timeout", "60",
                                      env={"COMPOSE_PROJECT_NAME": PROJECT,
                                           "POZOL_WEB_PORT": "0"},
                                      cwd=REPO, check=False, timeout=300)
                say(f"  docker-compose down exited {down.returncode}")
        finally:
            engine.stop()
            say(f"  dockerd (PID {engine.process.pid if engine.process else '-'}) stopped")
            machine.restore(before)
            machine.remove_tree(root)
            say(f"  removed {root}")


def _show_exit_codes(engine: Engine) -> None:
    """How each container stops (SIGTERM, then SIGKILL after 60 s), one by one, timed;
    db and redis last, as docker-compose would."""
    listed = engine.docker("ps", "-a", "--filter", f"label=com.docker.compose.project={PROJECT}",
                           "--format", "{{.Names}}").stdout.split()
    for name in sorted(listed, key=lambda n: (n.split("_")[1] in ("db", "redis"), n)):
        began = time.monotonic()
        engine.docker("stop", "--time", "60", name, check=False, timeout=120)
        code = engine.docker("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
        say(f"  stopped {name}: exit {code} after {time.monotonic() - began:.1f}s")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
