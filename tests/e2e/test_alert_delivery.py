"""An alert that reaches people, end to end: a real test host's pool filled over
the threshold raises pool_capacity in a discovery run by a real Celery worker,
the worker's alerts tick delivers it to a real SMTP sink and a real webhook
receiver, and freeing the space delivers the resolution the same way.

Reuses tests/integration/test_pool_capacity.py's small second pool (256 MiB),
filled by data only a snapshot holds, so freeing it is one `zfs destroy`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.alerts import tasks
from apps.alerts.models import Alert, Channel, Delivery, Rule
from apps.fleet import services as fleet_services
from apps.ops.models import Operation
from tests.alerts.receivers import http_receiver, smtp_sink
from tests.integration.conftest import register, run_on
from tests.integration.test_pool_capacity import (
    POOL,
    WRITTEN_MIB,
    capacity,
    destroyed,
    sync_pool,
)
from tests.integration.test_snapshots import run_anyway
from tests.waiting import wait_until
from tests.workers import Worker

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

SUBJECT = "[PoZoL] {}: Pool capacity on alerted"


def discover_on_the_worker(host) -> None:
    before = set(host.operations.values_list("pk", flat=True))
    fleet_services.discover(host)
    (operation,) = host.operations.exclude(pk__in=before)
    assert wait_until(lambda: Operation.objects.get(pk=operation.pk).status
                      in (Operation.Status.SUCCEEDED, Operation.Status.FAILED), 90, 0.5)
    operation.refresh_from_db()
    assert operation.status == Operation.Status.SUCCEEDED, operation.error


def delivered(sink, hook, status: str) -> bool:
    """Ticks on the worker until both receivers have the event (a tick is cheap)."""
    tasks.tick.delay()
    return (SUBJECT.format(status.upper()) in sink.subjects()
            and any(b["status"] == status and b["kind"] == "pool_capacity"
                    for b in hook.bodies))


def test_a_full_pool_is_mailed_and_posted_and_so_is_its_resolution(fleet_hosts, tmp_path):
    fleet_host = fleet_hosts[0]
    where = Path(fleet_host.work_dir).parent
    disk, mnt = where / f"{POOL}.img", where / f"{POOL}-mnt"
    Rule.objects.update_or_create(kind="pool_capacity",
                                  defaults={"threshold": 80, "clear_minutes": 0})
    with smtp_sink() as sink, http_receiver(statuses=[502]) as hook:
        worker = Worker("pozol", "alerts", tmp_path, POZOL_EMAIL_HOST="127.0.0.1",
                        POZOL_EMAIL_PORT=str(sink.port), POZOL_ALERT_RETRY_SECONDS="1",
                        POZOL_ALERT_WEBHOOK_ALLOW="127.0.0.1/32")
        try:
            Channel.objects.create(name="ops mail", kind="email", target="ops@example.com")
            Channel.objects.create(name="ops hook", kind="webhook", target=hook.url)
            host = register(fleet_host, name="alerted")
            assert wait_until(lambda: host.operations.filter(
                status=Operation.Status.SUCCEEDED).exists(), 90, 0.5), worker.output()[-3000:]
            run_on(fleet_host, (
                f"truncate -s 256M {disk} && zpool create -m {mnt} {POOL} {disk} 2>&1 && "
                f"zfs create -o compression=off {POOL}/data && "
                f"dd if=/dev/urandom of={mnt}/data/blob bs=1M count={WRITTEN_MIB} status=none "
                f"&& zfs snapshot {POOL}/data@held && rm {mnt}/data/blob"))
            sync_pool(fleet_host)
            assert capacity(fleet_host) > 80

            discover_on_the_worker(host)
            alert = Alert.objects.get(host=host, kind="pool_capacity", resolved_at=None)
            assert wait_until(lambda: delivered(sink, hook, "firing"), 60, 1), \
                worker.output()[-3000:]
            mail = sink.messages[sink.subjects().index(SUBJECT.format("FIRING"))]
            assert f"pool {POOL} is " in mail.get_payload()
            # The receiver answered the first POST 502: retried, and the log says so.
            posted = Delivery.objects.get(alert=alert, event="firing", channel__kind="webhook")
            assert [e["outcome"] for e in posted.log] == ["Failed: HTTP 502 Bad Gateway", "sent"]

            run_on(fleet_host, f"zfs destroy {POOL}/data@held")
            assert wait_until(lambda: sync_pool(fleet_host) or capacity(fleet_host) <= 80, 60, 1)
            discover_on_the_worker(host)
            assert wait_until(lambda: delivered(sink, hook, "resolved"), 60, 1), \
                worker.output()[-3000:]
            resolved = next(b for b in hook.bodies if b["status"] == "resolved")
            assert resolved["alert_id"] == alert.pk and resolved["resolved_at"]
            assert sink.subjects().count(SUBJECT.format("FIRING")) == 1  # fired once
        finally:
            worker.stop()
            # zfs-fuse may still call the pool busy: the next test's pool must not find it.
            assert wait_until(lambda: destroyed(fleet_host), 60, 1)
            run_anyway(fleet_host, f"rm -rf {disk} {mnt}")
