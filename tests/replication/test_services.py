"""Links are checked before they are saved, run on their schedule, alert on lag and protect
their newest common snapshot; the operations they start are not run here (see
tests/integration/test_replication.py for real transfers)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.alerts.models import Alert
from apps.common.errors import Conflict
from apps.fleet.models import Pool
from apps.ops.models import Operation
from apps.replication import services
from apps.replication.models import ReplicationLink
from apps.snapshots import protection
from tests.snapshots import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def hosts():
    source = factories.host("src")
    target = factories.host("dst", datasets=("tank",))
    Pool.objects.create(host=target, name="tank")
    factories.cluster(source)
    return source, target


def make(hosts, name="l1", **changes) -> ReplicationLink:
    source, target = hosts
    values = {"name": name, "source_host": source, "target_host": target,
              "target_parent": "tank/backup",
              "cluster_data_dir": source.clusters.get().data_dir, **changes}
    return services.create_link(**values)


def test_a_cluster_link_carries_data_and_wal(hosts):
    link = make(hosts)
    assert link.sources == ["tank/pg/data", "tank/pg/wal"]
    assert services.core_link(link).targets() == {
        "tank/pg/data": "tank/backup/pg/data", "tank/pg/wal": "tank/backup/pg/wal"}


@pytest.mark.parametrize(("changes", "field"), [
    ({"name": "a;b"}, "name"),
    ({"name": "-x"}, "name"),
    ({"target_parent": "tank/$(id)"}, "target_parent"),
    ({"target_parent": "tank/a\nb"}, "target_parent"),
    ({"target_parent": "other/backup"}, "target_parent"),  # no such pool on the target
    ({"cluster_data_dir": "", "dataset": "tank/'x'"}, "dataset"),
    ({"cluster_data_dir": "", "dataset": "tank/nope"}, "dataset"),
    ({"cluster_data_dir": "/nowhere"}, "cluster_data_dir"),
    ({"bandwidth_limit": 10}, "bandwidth_limit"),
    ({"interval_minutes": -1}, "interval_minutes"),
    ({"lag_threshold_minutes": 0}, "lag_threshold_minutes"),
    ({"keep_hourly": 10**9}, "keep_hourly"),
    ({"mode": "-R"}, "mode"),
])
def test_bad_values_are_refused_naming_the_field(hosts, changes, field):
    with pytest.raises(services.LinkError) as refused:
        make(hosts, **changes)
    assert field in refused.value.fields
    assert not ReplicationLink.objects.exists()


def test_the_target_must_be_another_host_and_not_another_links(hosts):
    source, target = hosts
    with pytest.raises(services.LinkError, match="another host"):
        make((source, source))
    make(hosts)
    with pytest.raises(services.LinkError, match="already receives") as refused:
        make(hosts, name="l2")
    assert refused.value.status == 409


def test_identity_cannot_change_but_settings_can(hosts):
    link = make(hosts)
    with pytest.raises(services.LinkError, match="cannot be changed"):
        services.update_link(link, {"target_parent": "tank/elsewhere"})
    link = services.update_link(link, {"keep_daily": 7, "interval_minutes": 15})
    assert (link.keep_daily, link.interval_minutes) == (7, 15)


def test_one_run_at_a_time_and_the_schedule_starts_due_links(hosts, delivered):
    link = make(hosts, interval_minutes=30)
    now = timezone.now()
    [first] = services.tick(now)
    assert first.kind == "replication.run" and first.trigger == Operation.Trigger.SCHEDULE
    with pytest.raises(Conflict, match="running already"):
        services.run_now(link)
    Operation.objects.filter(pk=first.pk).update(status=Operation.Status.SUCCEEDED)
    ReplicationLink.objects.filter(pk=link.pk).update(last_run_at=now)
    assert services.tick(now + timedelta(minutes=10)) == []
    assert len(services.tick(now + timedelta(minutes=31))) == 1


def test_a_paused_link_is_not_scheduled_but_runs_on_demand(hosts, delivered):
    link = services.pause(make(hosts, interval_minutes=1))
    assert services.tick() == []
    assert services.run_now(link).kind == "replication.run"


def test_lag_alerts_over_the_threshold_and_resolves(hosts, delivered):
    link = make(hosts, interval_minutes=0, lag_threshold_minutes=60)
    now = timezone.now()
    ReplicationLink.objects.filter(pk=link.pk).update(
        newest_received="s1", newest_received_at=now - timedelta(hours=2))
    services.tick(now)
    alert = Alert.objects.get(kind="replication_lag", resolved_at=None)
    assert "link l1: 2 h behind (@s1), over the 1 h threshold" in alert.message
    ReplicationLink.objects.filter(pk=link.pk).update(newest_received_at=now)
    services.tick(now)
    assert not Alert.objects.filter(kind="replication_lag", resolved_at=None).exists()


def test_the_newest_common_snapshot_is_protected_on_both_sides(hosts):
    source, target = hosts
    link = make(hosts)
    ReplicationLink.objects.filter(pk=link.pk).update(common_snapshot="s9")
    assert protection.protected(source, ["tank/pg/data"]) == {
        "tank/pg/data@s9": "last common snapshot of link l1"}
    assert protection.protected(target, ["tank/backup/pg/wal"]) == {
        "tank/backup/pg/wal@s9": "last common snapshot of link l1"}
    assert protection.protected(source, ["tank/other"]) == {}


def test_rollback_opt_in_records_who_and_when(hosts, operator):
    link = services.opt_in_rollback(make(hosts), by=operator)
    assert link.rollback_opt_in and link.rollback_opted_in_by == operator
    assert link.rollback_opted_in_at is not None
    link = services.opt_out_rollback(link)
    assert not link.rollback_opt_in and link.rollback_opted_in_by is None


def test_deleting_starts_the_removal_and_forgets_the_link(hosts, delivered):
    link = make(hosts)
    operation = services.delete_link(link)
    assert operation.kind == "replication.remove" and operation.host == hosts[1]
    assert operation.state["link"] == "l1"
    assert not ReplicationLink.objects.exists()


def test_an_unreachable_target_fails_the_run_and_says_so_on_the_link(hosts, delivered):
    from tests.driving import drive

    source, target = hosts
    source.host_key = target.host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFh0Uie4e0b3plRJ"
    source.address = target.address = "127.0.0.254"  # nothing listens there
    source.port = target.port = 9
    source.save()
    target.save()
    link = make(hosts)
    operation = drive(services.run_now(link))
    assert operation.status == Operation.Status.FAILED
    link.refresh_from_db()
    assert link.state == ReplicationLink.State.FAILED
    assert "127.0.0.254" in link.last_error


def test_a_policy_snapshot_starts_the_links_that_wait_for_one(hosts, delivered):
    source, _ = hosts
    waiting = make(hosts, interval_minutes=0, after_policy=True)
    protection.policy_snapshot_taken(source, ["tank/pg", "tank/pg/data", "tank/pg/wal"])
    [run] = Operation.objects.filter(kind="replication.run")
    assert run.state == {"link": waiting.pk} and run.trigger == Operation.Trigger.SCHEDULE
    protection.policy_snapshot_taken(source, ["tank/other"])  # not a source of the link
    assert Operation.objects.filter(kind="replication.run").count() == 1


def test_a_link_cannot_be_renamed_even_by_code(hosts):
    link = make(hosts)
    link.name = "other"
    with pytest.raises(ValueError, match="link 'l1' cannot be renamed: its name is its "
                                         "identity on the hosts"):
        link.save()


def test_a_run_into_a_target_pool_at_its_reserve_is_refused_with_the_figures(hosts, delivered):
    from apps.fleet.models import Dataset

    link = make(hosts)
    _, target = hosts
    Dataset.objects.filter(host=target, name="tank").update(used=960 * 2**20,
                                                            available=40 * 2**20)
    with pytest.raises(Conflict) as refused:
        services.run_now(link)
    assert refused.value.code == "no_room" and refused.value.status == 409
    assert refused.value.message.startswith("pool tank has 40.0 MiB free and keeps a reserve "
                                            "of 100 MiB (10% of the pool)")
    assert not Operation.objects.filter(kind="replication.run").exists()
    assert services.tick() == []  # the schedule skips it too
    Dataset.objects.filter(host=target, name="tank").update(available=400 * 2**20)
    assert services.run_now(link).kind == "replication.run"


def test_a_scheduled_run_skipped_for_room_says_so_on_the_link_and_as_an_operation(
        hosts, delivered):
    """Issue 19: the schedule skipped a link whose target was at its reserve and recorded
    nothing, so nobody saw why it did not run."""
    from apps.alerts.evaluate import operation_failed
    from apps.fleet.models import Dataset

    link = make(hosts, interval_minutes=30)
    source, target = hosts
    Dataset.objects.filter(host=target, name="tank").update(used=960 * 2**20,
                                                            available=40 * 2**20)
    now = timezone.now()
    assert services.tick(now) == []
    link.refresh_from_db()
    assert link.state == ReplicationLink.State.REFUSED
    assert link.last_error.startswith("scheduled run refused: pool tank has 40.0 MiB free")
    [skipped] = Operation.objects.filter(kind="replication.run")
    assert link.last_operation == skipped and delivered == []  # nothing for a worker
    assert skipped.status == Operation.Status.FAILED and skipped.error_code == "no_room"
    assert skipped.trigger == Operation.Trigger.SCHEDULE and skipped.host == source
    assert skipped.finished_at is not None and skipped.state == {"link": link.pk}
    assert "keeps a reserve of" in skipped.log_lines.get().text
    assert f"operation #{skipped.pk} replication.run failed: refused: pool tank" in (
        operation_failed(source, None, False, timezone.now()))
    # Once a run of the interval: the next tick within it records nothing more.
    services.tick(now + timedelta(minutes=5))
    assert Operation.objects.filter(kind="replication.run").count() == 1
    Dataset.objects.filter(host=target, name="tank").update(available=400 * 2**20)
    [run] = services.tick(now + timedelta(minutes=31))
    assert run.status == Operation.Status.PENDING


def test_an_openzfs_source_to_a_zfs_fuse_target_is_refused_before_any_send():
    """Seen on the OpenZFS VM host: zfs-fuse refuses OpenZFS streams (SA_SPILL) after the
    send has started; the link is refused when it is made, naming the reason."""
    openzfs = {"dialect": "openzfs", "implementation": "OpenZFS",
               "version": "2.3.9-0+deb13u1", "userland_version": "2.3.9-0+deb13u1",
               "kernel_version": "2.3.9-0+deb13u1", "capabilities": {"multi_snapshot": True}}
    source = factories.host("oz", zfs=openzfs)
    factories.cluster(source)
    target = factories.host("fuse", datasets=("tank",))
    Pool.objects.create(host=target, name="tank")
    with pytest.raises(services.LinkError, match="cannot receive a stream from OpenZFS") as no:
        make((source, target))
    assert "target_host" in no.value.fields
    assert not ReplicationLink.objects.exists()
