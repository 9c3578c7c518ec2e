"""What every benchmark script starts from: a control-plane database of its own, fresh
test hosts on a subnet of its own, and (for most) a real Celery worker; stopped by its
own PIDs and dropped at the end, even when the measurement fails."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.bench.database import database_of_its_own


def on_fresh_hosts(database: str, count: int, subnet: str, measure: Callable[[list], None],
                   *, pool_size: int | None = None, worker: bool = True) -> None:
    """Run `measure(fleet_hosts)` against `count` new test hosts, with Django set up on
    `database` (migrated) and, if `worker`, a real Celery worker."""
    with database_of_its_own(server(), database):
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        from django.core.management import call_command

        from apps.demo.fleet import down, up
        from tests.workers import Worker

        call_command("migrate", verbosity=0)
        state_dir = Path(tempfile.mkdtemp(prefix=f"pozol-{database}-"))
        running = None
        try:
            sized = {"pool_size": pool_size} if pool_size else {}
            fleet_hosts = up(count, state_dir=state_dir, subnet=subnet, **sized)
            if worker:
                running = Worker("pozol", database, state_dir)
            measure(fleet_hosts)
        finally:
            if running:
                running.stop()
            down(state_dir)


def register(fleet_host, name: str):
    """The host added as an operator would, its discovery (and the inventory refresh it
    starts) finished before anything is timed."""
    from apps.fleet import services as fleet

    host, discovery = fleet.add_host(
        name=name, address=fleet_host.address, port=fleet_host.port, user=fleet_host.user,
        work_dir=fleet_host.work_dir, authorized_keys_file=fleet_host.authorized_keys_path or "",
        private_key=Path(fleet_host.private_key_path).read_text(),
        expected_fingerprint=fleet_host.host_key_fingerprint)
    wait(discovery.pk)
    settle(host)
    host.refresh_from_db()
    return host


def wait(operation_id: int, poll: float = 0.2, limit: float = 300) -> None:
    from apps.ops.models import Operation

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        operation = Operation.objects.only("status", "error", "kind").get(pk=operation_id)
        if operation.status == "succeeded":
            return
        if operation.status in ("failed", "cancelled"):
            raise SystemExit(f"{operation.kind} {operation.status}: {operation.error}")
        time.sleep(poll)
    raise SystemExit(f"operation {operation_id} did not end in {limit} s")


def settle(host) -> None:
    """The inventory refresh discovery started, finished."""
    from apps.ops.models import Operation

    for operation in Operation.objects.filter(host=host, kind="snapshots.refresh"):
        wait(operation.pk)


def server() -> str:
    from apps.demo.services import postgres_url

    return postgres_url(os.environ.get("POZOL_TEST_DATABASE_URL")).rsplit("/", 1)[0]
