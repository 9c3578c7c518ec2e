"""A snapshot policy driven by a real `celery beat` (django-celery-beat's
DatabaseScheduler) and a real worker: snapshots appear on a real test host
without the test ever calling tick, and the schedule survives a restart of beat.

Wall time is set by the policy's granularity, not by the tick: the shortest
period is one minute (frequently, frequent_minutes=1) and slots are aligned to
the minute, so the second snapshot can only come in the minute after the
first. The tick runs every 10 s (POZOL_SNAPSHOT_POLICY_INTERVAL's minimum), so
beat is restarted right after the first snapshot and the second comes at most
~10 s after the next minute starts: about 30-80 s of beat time, whatever the
second of the minute the test starts at.
"""

from __future__ import annotations

import time

import pytest
from django_celery_beat.models import PeriodicTask

from apps.ops.models import Operation
from apps.ops.schedule import ensure_periodic_tasks
from apps.snapshots import policies
from apps.snapshots.models import SnapshotPolicy
from tests.e2e.test_follow_log import wait_until_ended
from tests.integration.conftest import register, run_on
from tests.integration.test_snapshots import destroy
from tests.waiting import wait_until
from tests.workers import Beat, Worker

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

NAME = "beat-driven"
INTERVAL = "10"  # POZOL_SNAPSHOT_POLICY_INTERVAL's minimum
TICK = "snapshots.policy_tick"


def policy_snapshots(fleet_host, dataset: str | None = "tank/pg/data") -> set[str]:
    """The policy's snapshots of `dataset` (None: of every dataset), read with plain zfs."""
    names = run_on(fleet_host, "zfs list -H -t snapshot -o name").split()
    ours = {n for n in names if f"@pozol_{NAME}_" in n}
    return ours if dataset is None else {n for n in ours if n.split("@")[0] == dataset}


def ticks_sent(beat: Beat) -> int:
    return beat.output().count(f"({TICK})")


def test_beat_takes_policy_snapshots_and_its_schedule_survives_a_restart(
        fleet_hosts, settings, tmp_path):
    fleet_host = fleet_hosts[0]
    env = {"POZOL_SNAPSHOT_POLICY_INTERVAL": INTERVAL}
    worker = Worker("pozol", "beat-e2e", tmp_path, **env)
    beats: list[Beat] = []
    try:
        host = register(fleet_host, name="beaten")
        discovery = wait_until_ended(host.operations.get(), worker, 60)
        assert discovery.status == Operation.Status.SUCCEEDED, discovery.error
        policy = SnapshotPolicy.objects.create(name=NAME, frequently=2, frequent_minutes=1)
        policies.assign(policy, host, cluster_data_dir=host.clusters.get().data_dir)
        # What migrate does in a deployment, with the interval a deployment would set.
        settings.POZOL = {**settings.POZOL, "SNAPSHOT_POLICY_INTERVAL": int(INTERVAL)}
        ensure_periodic_tasks()
        assert policy_snapshots(fleet_host) == set()

        beats.append(Beat("pozol", "first", tmp_path, **env))
        assert wait_until(lambda: policy_snapshots(fleet_host), 45, 1), (
            beats[0].output()[-3000:], worker.output()[-3000:])
        first = policy_snapshots(fleet_host)
        assert ticks_sent(beats[0]) >= 1

        beats[0].stop()  # SIGTERM to its own process group, by PID
        assert beats[0].process.poll() is not None
        # The schedule's state is in the database, where the next beat finds it.
        task = PeriodicTask.objects.get(task=TICK)
        assert task.interval.every == int(INTERVAL) and task.last_run_at is not None
        runs = task.total_run_count
        assert runs >= 1

        restarted = time.monotonic()
        beats.append(Beat("pozol", "second", tmp_path, **env))
        # The next minute's snapshot, from the restarted beat's ticks.
        assert wait_until(lambda: policy_snapshots(fleet_host) - first, 85, 1), (
            beats[1].output()[-3000:], worker.output()[-3000:])
        assert ticks_sent(beats[1]) >= 1
        print(f"\nsecond snapshot {time.monotonic() - restarted:.0f} s after the restart")
        beats[1].stop()
        assert PeriodicTask.objects.get(task=TICK).total_run_count > runs  # counted on
    finally:
        for beat in beats:
            beat.stop()
        worker.stop()
        leftovers = policy_snapshots(fleet_host, dataset=None)
        if leftovers:
            destroy(fleet_host, *sorted(leftovers))
