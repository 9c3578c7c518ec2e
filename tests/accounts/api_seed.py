"""A small fleet in the database for fuzzing the API: every endpoint has objects
to find, so generated requests reach the code behind the 404s."""

from __future__ import annotations

from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.audit import services as audit
from apps.benchmarks import services as benchmarks
from apps.fleet.models import Host
from apps.fleet.steps import record_facts
from apps.ops.models import Operation
from apps.remote.gather import discover
from apps.rollouts.models import Rollout, RolloutHost
from apps.tenants import services as tenants
from apps.tuning import services as tuning
from apps.tuning.models import Profile
from apps.wal.models import WalArchive
from tests.benchmarks import factories
from tests.clones import factories as clone_factories
from tests.remote.fixtures.hosts import replay_transcript
from tests.replication import factories as replication_factories
from tests.snapshots import factories as snapshot_factories


def seed(user) -> tuple[str, dict[str, int]]:
    """Objects of every kind: an API token of the user's, and each object's id."""
    host = _discovered_host("fuzz-db1")
    spare_host = factories.host("fuzz-spare")
    profile = tuning.create_profile(name="fuzz profile", by=user, settings=Profile.objects.get(
        slug="oltp-safe").current.settings)
    spare_profile = tuning.create_profile(name="fuzz spare", by=user,
                                          settings=profile.current.settings)
    tuning.assign(host, profile, by=user)
    plan = tuning.make_plan(host, by=user)
    before = factories.finished(host, tps=1000, latency=2.0, wal_per_tx=500)
    after = factories.finished(host, tps=1100, latency=1.8, wal_per_tx=400)
    validation = benchmarks.validate(before, after, "fuzz")
    snapshot = snapshot_factories.snapshot(host, "tank/pg/data@pozol_manual_20261123T190000Z")
    link_target = replication_factories.target("fuzz-backup")
    link = replication_factories.synced(host, link_target, "fuzz-link", sources=["tank/pg"],
                                        cluster_data_dir="", target_parent="backup/fuzz")
    spare_link = replication_factories.link(host, link_target, "fuzz-spare",
                                            sources=["tank"], cluster_data_dir="",
                                            target_parent="backup/spare")
    clone = clone_factories.clone(host, "fuzz-clone", port=6500)
    spare_clone = clone_factories.clone(host, "fuzz-spare", port=6501)
    _sampled(host)
    _, token = ApiToken.objects.issue(user, "fuzz")
    tenants = _tenants(host)
    ids = {"HOST": host, "SPARE_HOST": spare_host, "PROFILE": profile,
           "SPARE_PROFILE": spare_profile, "PLAN": plan, "BENCHMARK": after,
           "VALIDATION": validation, "OPERATION": Operation.objects.filter(host=host).first(),
           "SNAPSHOT": snapshot, "LINK": link, "SPARE_LINK": spare_link,
           "CLONE": clone, "SPARE_CLONE": spare_clone, **tenants,
           "TOKEN": ApiToken.objects.issue(user, "fuzz spare")[0],
           "AUDIT_EVENT": audit.record(action="seed", outcome="success", user=user),
           **_alerting(host), "WAL_ARCHIVE": _archive(host),
           "ROLLOUT": _rollout(profile, host)}
    return token, {name: row.pk for name, row in ids.items()}


def _rollout(profile: Profile, host: Host) -> Rollout:
    """A running rollout of one host (no operation: nothing runs it), to pause and resume."""
    rollout = Rollout.objects.create(profile_version=profile.current, wave_size=1)
    RolloutHost.objects.create(rollout=rollout, host=host, position=0, wave=0)
    return rollout


def _archive(host: Host) -> WalArchive:
    """A cluster's WAL archive that is on, with a window (so clones to a moment and
    restore points are reached)."""
    now = timezone.now().timestamp()
    return WalArchive.objects.create(
        cluster=host.clusters.first(), dataset="tank/pozol_wal/pg:data",
        directory="/tank/pozol_wal/pg:data", state=WalArchive.State.ON,
        checked_at=timezone.now(), segment_size=16 << 20, window=[[now - 3600, now - 60]],
        listing={"timeline": 1, "segments": [[1, now - 3600], [2, now - 60]]},
        before={"archive_mode": {"value": "off", "from_auto_conf": False}})


def _sampled(host: Host) -> None:
    """Two telemetry samples (the zfs-fuse test host's captured answers) a minute ago."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.telemetry import services as telemetry
    from apps.telemetry.core.parse import parse_sample
    from tests.telemetry.core.helpers import fuse_spec
    from tests.telemetry.fixtures import captured

    for number in (1, 2):
        text, _ = captured(number)
        taken_at = timezone.now() - timedelta(seconds=120 - 60 * number)
        telemetry.record(telemetry.Taken(host.pk, parse_sample(text, fuse_spec(), taken_at), 0.2))


def _tenants(host: Host) -> dict:
    """A tenant with a member and a cluster, and spares of each for the deletes."""
    tenant = tenants.create_tenant("fuzz tenant")
    cluster = host.clusters.order_by("port").first()
    return {"TENANT": tenant, "SPARE_TENANT": tenants.create_tenant("fuzz spare tenant"),
            "MEMBERSHIP": tenants.add_member(tenant, "fuzz-member", "member"),
            "SPARE_MEMBERSHIP": tenants.add_member(tenant, "fuzz-spare", "member"),
            "CLUSTER_ASSIGNMENT": tenants.assign_cluster(tenant, host, cluster.data_dir)}


def _alerting(host: Host) -> dict:
    """An alert, a channel with a delivery, a silence and a scrub schedule (and spares
    to delete); the channel's mail goes nowhere: deliveries are not sent here."""
    from django.utils import timezone

    from apps.alerts.models import Alert, Channel, Delivery, ScrubSchedule, Silence

    alert = Alert.raise_once(host, "pool_capacity", "pool tank is 91% full")
    channel = Channel.objects.create(name="fuzz", kind="email", target="fuzz@example.com")
    spare = Channel.objects.create(name="fuzz spare", kind="email", target="f@example.com")
    delivery = Delivery.objects.create(alert=alert, channel=channel, event="firing", body={},
                                       status="failed", attempts=5)
    silence = Silence.objects.create(host=host, kind="", until=timezone.now())
    pool = host.pools.first().name
    scrub = ScrubSchedule.objects.create(host=host, pool=pool, next_at=timezone.now())
    return {"ALERT": alert, "CHANNEL": channel, "SPARE_CHANNEL": spare, "DELIVERY": delivery,
            "SILENCE": silence, "SCRUB": scrub}


def _discovered_host(name: str) -> Host:
    host = Host(name=name, address="127.0.0.9", credential_kind="pasted",
                host_key_state=Host.KeyState.PINNED)
    host.set_private_key(factories.PRIVATE_KEY)
    host.save()
    record_facts(host, discover(replay_transcript()).to_dict())
    return host
