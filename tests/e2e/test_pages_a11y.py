"""Every page in Debian's Chromium at desktop (1280x800), laptop (1366x768) and phone
(375x800) width, with data on it: axe-core finds no serious or critical accessibility
violation, and at 1366 and 375 px the page never scrolls sideways (wide tables scroll
inside their box).

Screenshots of the overview and the host page at both widths are saved to
test-artifacts/ (overview-desktop.png, overview-375.png, host-desktop.png,
host-375.png). One browser and one page serve the whole module.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.accounts import services as tokens
from apps.accounts.models import ApiToken
from apps.alerts.models import Alert, Channel, Delivery, ScrubSchedule, Silence
from apps.audit import services as audit
from apps.benchmarks import services as benchmarks
from apps.clones.models import Clone
from apps.drills.models import DrillRun, DrillSchedule
from apps.ops.models import LogLine, Operation
from apps.replication.models import ReplicationLink
from apps.rollouts.models import Rollout, RolloutHost
from apps.snapshots.models import PolicyAssignment, SnapshotPolicy
from apps.telemetry.models import HostTelemetry, RawSample
from apps.tenants import services as tenants
from apps.tenants.models import Membership
from apps.tuning import services as tuning
from apps.tuning.models import Profile
from apps.wal.models import WalArchive
from tests import browser as chromium
from tests.benchmarks import factories
from tests.clones import factories as clone_factories
from tests.experiments.factories import finished_experiment
from tests.replication import factories as replication_factories
from tests.snapshots import factories as snapshot_factories

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# name: (address, with {ids} filled in from the data; signed in? True: as the
# operator, "member": as a tenant admin)
PAGES = {
    "overview": ("/", True),
    "host": ("/hosts/{host}/", True),
    **{f"host-{section}": (f"/hosts/{{host}}/{section}/", True)
       for section in ("metrics", "datasets", "postgresql", "tuning", "benchmarks",
                       "snapshots", "operations", "replication", "clones", "drills",
                       "wal", "new-cluster", "rollouts")},
    "wal-enable": ("/wal/clusters/{cluster}/enable/", True),
    "wal-disable": ("/wal/{archive}/disable/", True),
    "host-never-reached": ("/hosts/{fresh}/", True),
    "host-never-reached-datasets": ("/hosts/{fresh}/datasets/", True),
    "profiles": ("/tuning/profiles/", True),
    "profile": ("/tuning/profiles/{profile}/", True),
    "plan": ("/tuning/plans/{plan}/", True),
    "operation": ("/operations/{operation}/", True),
    "operations": ("/operations/", True),
    "benchmarks": ("/benchmarks/", True),
    "benchmark": ("/benchmarks/{benchmark}/", True),
    "validation": ("/benchmarks/validations/{validation}/", True),
    "experiments": ("/experiments/", True),
    "experiment": ("/experiments/{experiment}/", True),
    "rollouts": ("/rollouts/", True),
    "rollout": ("/rollouts/{rollout}/", True),
    "add-host": ("/hosts/add/", True),
    "snapshot-policies": ("/snapshots/policies/", True),
    "snapshot-policy": ("/snapshots/policies/{policy}/", True),
    "replication": ("/replication/", True),
    "replication-new": ("/replication/new/", True),
    "replication-link": ("/replication/{link}/", True),
    "replication-link-opted-in": ("/replication/{opted_in}/", True),
    "clone-new": ("/clones/hosts/{host}/new/", True),
    "clone-on-target": ("/clones/hosts/{host}/on-target/", True),
    "cluster-new": ("/provisioning/hosts/{host}/new/", True),
    "clone-settings": ("/clones/hosts/{host}/settings/", True),
    "drills": ("/drills/", True),
    "drill-run-failed": ("/drills/runs/{drill}/", True),
    "drill-new": ("/drills/hosts/{host}/new/", True),
    "drill-recover-table": ("/drills/hosts/{host}/recover-table/", True),
    "tenants": ("/tenants/", True),
    "tenant": ("/tenants/{tenant}/", True),
    "tokens": ("/account/tokens/", True),
    "audit": ("/audit/", True),
    "alerts": ("/alerts/", True),
    "alert": ("/alerts/{alert}/", True),
    "alert-rules": ("/alerts/rules/", True),
    "alert-rule": ("/alerts/rules/arc_hit_rate/", True),
    "alert-channels": ("/alerts/channels/", True),
    "alert-channel": ("/alerts/channels/{channel}/", True),
    "alert-deliveries": ("/alerts/deliveries/", True),
    "scrubs": ("/alerts/scrubs/", True),
    "tenant-as-member": ("/tenants/{tenant}/", "member"),
    "tokens-as-member": ("/account/tokens/", "member"),
    "clones": ("/clones/", True),
    "clones-as-member": ("/clones/", "member"),
    "clone-cluster-as-member": ("/clones/clusters/{assignment}/", "member"),
    "clone-as-member": ("/clones/{clone}/", "member"),
    "clone-failed-as-member": ("/clones/{failed_clone}/", "member"),
    "login": ("/login/", False),
    "not-found": ("/hosts/999999/", True),
}
# Pages whose table shows every column at 1366 px, none hidden in a scrolling box.
WHOLE_TABLES = {"overview", "operations", "host-operations"}
SCREENSHOTS = {"overview", "host", "host-never-reached", "host-metrics", "operations"}
# Pages whose charts are drawn from JSON they fetch: checked once drawn.
DRAWN_CHARTS = {"host-metrics": "#chart-arc-hit.drawn"}


@pytest.fixture(scope="module")
def tab():
    """One Chromium and one tab for the module; each test sets its own cookies."""
    with chromium.session() as playwright:
        browser = chromium.launch(playwright)
        context = chromium.new_context(browser)
        yield context.new_page()
        browser.close()


@pytest.fixture
def site(replayed_host) -> dict:
    """A fleet with something on every page: a host with real recorded facts, a plan,
    an operation with its log, two benchmarks and the validation comparing them."""
    host = replayed_host
    profile = Profile.objects.get(slug="oltp-safe")
    tuning.assign(host, profile)
    plan = tuning.make_plan(host)
    started = timezone.now() - timedelta(minutes=5)
    operation = Operation.objects.create(
        kind="tuning.apply", host=host, subject=host.name, step="apply", mutating=True,
        status=Operation.Status.FAILED, progress=60, message="applying work_mem",
        error='invalid value for parameter "work_mem": "lots"\nHINT: Valid units are kB, MB.',
        started_at=started, finished_at=started + timedelta(seconds=72))
    # As the demo writes them: long unbroken paths in the subject and the message.
    demo_path = "/tmp/pozol-fleet/host1/mnt/pozol_clones/customer-dev-1/data/pgdata"
    Operation.objects.create(
        kind="clones.create", host=host, subject=f"{host.name}: clone customer-dev-1 of "
        "/tmp/pozol-fleet/host1/mnt/pg/data/pgdata", step="start", progress=100,
        status=Operation.Status.SUCCEEDED, message=f"{demo_path} answers",
        started_at=started, finished_at=started + timedelta(seconds=9))
    LogLine.objects.bulk_create([
        LogLine(operation=operation, level=level, text=text) for level, text in [
            ("info", "applying 3 changes"), ("command", "ALTER SYSTEM SET work_mem = 'lots'"),
            ("error", 'invalid value for parameter "work_mem": "lots"')]])
    factories.cluster(host, port=5433)
    for full_name, changes in [
            ("tank/pg@pozol_manual_20261123T190000Z", {"userrefs": 1, "label": "before upgrade"}),
            ("tank/pg/data@hand1", {"origin": "hand", "properties": {},
                                    "clones": ["tank/clone1"]}),
            ("tank/recv@s2", {"origin": "received"})]:
        snapshot_factories.snapshot(host, full_name, **changes)
    before = factories.finished(host, 1234.5, 1.6, 5321.0)
    after = factories.finished(host, 1400.2, 1.4, 812.0)
    validation = benchmarks.validate(before, after, "recordsize 16K")
    fresh = factories.host("fresh")  # never reached: its page says so
    policy = SnapshotPolicy.objects.create(name="hourly", hourly=24, daily=7)
    PolicyAssignment.objects.create(policy=policy, host=host, dataset="tank/pg")
    link, opted_in = _links(host, operation)
    _clones(host)
    _samples(host)
    drill = _drills(host, operation)
    tenant, member = _tenant(host)
    alert, channel = _alerts(host)
    archive = _wal(host)
    Clone.objects.update(tenant=tenant)  # the customer's pages show them
    return {"alert": alert.pk, "channel": channel.pk,
            "assignment": tenant.clusters.get().pk,
            "clone": Clone.objects.get(name="migration-test-of-the-main-cluster").pk,
            "failed_clone": Clone.objects.get(name="broken").pk,
            "host": host.pk, "fresh": fresh.pk, "profile": profile.pk, "plan": plan.pk,
            "operation": operation.pk, "benchmark": after.pk, "validation": validation.pk,
            "policy": policy.pk, "link": link.pk, "opted_in": opted_in.pk,
            "tenant": tenant.pk, "member": member.pk,
            "experiment": finished_experiment(host).pk,
            "drill": drill.pk, "cluster": archive.cluster_id, "archive": archive.pk,
            "rollout": _rollout(plan, operation, fresh).pk}


def _rollout(plan, operation, fresh) -> Rollout:
    """A stopped rollout: its canary rolled back with a long reason, a host never reached."""
    rollout = Rollout.objects.create(
        profile_version=plan.profile_version, wave_size=5, waves=2,
        status=Rollout.Status.STOPPED, operation=operation, finished_at=timezone.now(),
        stop_reason="the canary: db1 failed: apply failed: invalid value for parameter "
                    '"max_stack_depth": "100MB"; Stopped at postgres /tmp/pozol-fleet/host1/'
                    "mnt/pg/data/pgdata max_stack_depth")
    RolloutHost.objects.create(rollout=rollout, host=plan.host, position=0, wave=0,
                               state="rolled_back", plan=plan, operation=operation,
                               reason="apply failed: invalid value for parameter "
                                      '"max_stack_depth": "100MB"; rolled back')
    RolloutHost.objects.create(rollout=rollout, host=fresh, position=1, wave=1, state="ready")
    return rollout


def _wal(host) -> WalArchive:
    """An archive that is on, with a window split by a gap, the archiver's figures, the
    reason its archive command gave for failing (a long path: it must wrap on a phone),
    an older PoZoL's archive command (its refresh button shows) and the settings it
    replaced (so its disable page has a plan)."""
    now = timezone.now().timestamp()
    return WalArchive.objects.create(
        cluster=host.clusters.first(), dataset="tank/pozol_wal/pg:data",
        directory="/tank/pozol_wal/pg:data", state=WalArchive.State.ON,
        checked_at=timezone.now(), archived_count=420, failed_count=3,
        last_failed_wal="0000000100000000000000A5", last_failed_at=timezone.now(),
        failure_reason_wal="0000000100000000000000A5", failure_reason_at=timezone.now(),
        failure_reason="cp: cannot create regular file '/tank/pozol_wal/pg:data/"
                       "0000000100000000000000A5.tmp': Read-only file system",
        command_outdated=True, last_archived_wal="0000000100000000000000A4",
        last_archived_at=timezone.now() - timedelta(minutes=2),
        current_wal="0000000100000000000000A5", lag_segments=0, space_used=5 << 20,
        segments=40, first_segment="00000001000000000000007D",
        last_segment="0000000100000000000000A4",
        gaps=[{"first": "000000010000000000000090", "last": "000000010000000000000090",
               "after": now - 3000}],
        window=[[now - 7200, now - 3000], [now - 2000, now - 40]],
        before={"archive_mode": {"value": "off", "from_auto_conf": False},
                "archive_command": {"value": "", "from_auto_conf": False},
                "archive_timeout": {"value": "0", "from_auto_conf": False}})


def _drills(host, operation) -> DrillRun:
    """A drill schedule with a run that passed and one that failed with a long log."""
    cluster = host.clusters.order_by("port").first()
    schedule = DrillSchedule.objects.create(host=host, cluster_data_dir=cluster.data_dir,
                                            check_query="SELECT count(*) FROM accounts")
    DrillRun.objects.create(
        schedule=schedule, host=host, cluster_data_dir=cluster.data_dir, snapshot="s1",
        check_query=schedule.query, status=DrillRun.Status.PASSED, clone_seconds=0.04,
        start_seconds=0.31, check_seconds=0.12, destroy_seconds=0.4, total_seconds=0.87,
        answers={"postgres": "5123", "pgbench": "100000"}, finished_at=timezone.now())
    return DrillRun.objects.create(
        schedule=schedule, host=host, cluster_data_dir=cluster.data_dir,
        snapshot="pozol_manual_20261123T190000Z", check_query=schedule.query,
        status=DrillRun.Status.FAILED, clone_seconds=0.05, destroy_seconds=0.3,
        operation=operation, finished_at=timezone.now(),
        error="clone or start failed: pg_ctl: could not start server\nExamine the log output.",
        log_tail="LOG:  database system was interrupted; last known up at 2026-11-24\n"
                 "PANIC:  could not locate a valid checkpoint record " + "x" * 300)


def _alerts(host):
    """A firing alert delivered by mail and to a webhook that failed for good, a
    resolved one, a silence and a scrub schedule that ran."""
    firing = Alert.raise_once(host, "pool_capacity", "pool tank is 91% full; snapshots hold "
                              "412 MiB: tank/pg/data 380 MiB, tank/pg/wal 32 MiB")
    Alert.objects.filter(pk=firing.pk).update(notified_at=timezone.now())
    Alert.raise_once(host, "unreachable", "db1 could not be reached: timed out")
    Alert.objects.filter(kind="unreachable").update(resolved_at=timezone.now())
    mail = Channel.objects.create(name="on-call", kind="email", target="oncall@example.com")
    hook = Channel.objects.create(
        name="chat", kind="slack",
        target="https://hooks.slack.com/services/T000000/B0000000/XXXXXXXXXXXXXXXXXXXXXXXX")
    Delivery.objects.create(alert=firing, channel=mail, event="firing", body={}, status="sent",
                            attempts=1, sent_at=timezone.now(),
                            log=[{"at": timezone.now().isoformat(), "outcome": "sent"}])
    Delivery.objects.create(alert=firing, channel=hook, event="firing", body={},
                            status="failed", attempts=5, last_error="Failed: HTTP 502 Bad "
                            "Gateway", log=[{"at": timezone.now().isoformat(),
                                              "outcome": "Failed: HTTP 502 Bad Gateway"}] * 5)
    Silence.objects.create(host=host, kind="scrub_overdue", reason="pool being replaced",
                           until=timezone.now() + timedelta(days=1))
    ScrubSchedule.objects.create(host=host, pool="tank", next_at=timezone.now())
    return firing, hook


def _samples(host) -> None:
    """Ten minutes of samples with a missed one, and the host's current values."""
    now = timezone.now()
    data_dir = host.clusters.order_by("port").first().data_dir
    RawSample.objects.bulk_create([RawSample(
        host=host, taken_at=now - timedelta(minutes=10 - m), values={
            "uptime": 5000 + 60 * m, "memory": {"dirty": (m % 4) << 20, "writeback": 0},
            "arc": {"hits": 900 * m * m, "misses": 100 * m, "size": 80 << 20,
                    "c": 100 << 20, "c_max": 100 << 20},
            "pools": {"tank": {"capacity": 40}},
            "datasets": {"tank/pg": {"used": 80 << 20, "compressratio": 1.6}},
            "clusters": {data_dir: {"xact_commit": 3000 * m, "xact_rollback": 0,
                                    "blks_hit": 990 * m, "blks_read": 10 * m}}})
        for m in range(10) if m != 6])
    HostTelemetry.objects.create(host=host, last_sample_at=now, arc_hit_rate=0.97, tps=50.0,
                                 capacity=40, used=80 << 20, space_saved=48 << 20,
                                 recent={"t": [1, 2, 3], "arc_hit_rate": [0.9, None, 0.97],
                                         "tps": [40.0, 45.0, 50.0]})


def _tenant(host):
    """A tenant with an admin and a member, a cluster, tokens in each state, and an
    audit log with a success, a refusal and a failure."""
    tenant = tenants.create_tenant("Acme Analytics")
    admin = tenants.add_member(tenant, "ana.admin", Membership.Role.TENANT_ADMIN).user
    tenants.add_member(tenant, "bob", Membership.Role.MEMBER)
    tenants.assign_cluster(tenant, host, host.clusters.order_by("port").first().data_dir)
    ApiToken.objects.issue(admin, "ci pipeline")
    old, _ = ApiToken.objects.issue(admin, "laptop", expires_at=timezone.now()
                                    - timedelta(days=1))
    tokens.revoke(ApiToken.objects.issue(admin, "leaked")[0], by=admin)
    for outcome, message in [("success", ""), ("refused", "name: a tenant named 'Acme "
                             "Analytics' exists already."), ("failed", "the server failed")]:
        audit.record(action="tenants:list", outcome=outcome, user=admin, method="POST",
                     path="/tenants/", status_code=200, message=message, address="127.0.0.1",
                     details={"name": "Acme Analytics"})
    return tenant, admin


def _links(host, operation) -> tuple[ReplicationLink, ReplicationLink]:
    """A late link that failed, one running, and one never run (to and from `host`; it
    carries a WAL archive, so `host`'s Clones tab offers a clone as of a moment)."""
    target = replication_factories.target("backup1")
    late = replication_factories.synced(
        host, target, "nightly-copy-of-the-main-cluster", sources=["tank/pg"],
        cluster_data_dir="", target_parent="backup/db1", behind=timedelta(hours=7),
        lag_threshold_minutes=60, state=ReplicationLink.State.FAILED, last_operation=operation,
        last_error="cannot receive incremental stream: destination backup/db1/pg has been "
                   "modified since most recent snapshot\nsecond line", paused=True,
        public_key="ssh-ed25519 " + "A" * 68 + " pozol-link-nightly")
    replication_factories.running(replication_factories.synced(
        host, target, "hourly", sources=["tank/pg/data"], cluster_data_dir="",
        target_parent="backup/hourly"))
    opted_in = replication_factories.link(target, host, "back", sources=["backup"],
                                          cluster_data_dir="", target_parent="tank/back",
                                          rollback_opt_in=True,
                                          rollback_opted_in_at=timezone.now(),
                                          archive="backup/pozol_wal/pg:data")
    return late, opted_in


def _clones(host) -> None:
    """A ready clone with a size, a protected one, one being made and a failed one."""
    now = timezone.now()
    clone_factories.clone(host, "migration-test-of-the-main-cluster", port=6500)
    host.datasets.create(name="tank/pozol_clones/migration-test-of-the-main-cluster",
                         used=48 << 20)
    clone_factories.clone(host, "kept", port=6501, expires_at=None,
                          protected_until=now + timedelta(hours=5))
    clone_factories.clone(host, "new", port=6502, state="creating", connection_string="")
    clone_factories.clone(host, "broken", port=6503, state="failed", connection_string="",
                          error="PostgreSQL did not start on the clone: FATAL: could not "
                                "create shared memory segment: No space left on device")


@pytest.mark.parametrize("name", PAGES)
def test_the_page_is_accessible_and_fits_a_phone(name, tab, site, live_server, operator,
                                                 django_user_model):
    address, signed_in = PAGES[name]
    if signed_in == "member":
        member = django_user_model.objects.get(pk=site["member"])
        chromium.sign_in(tab.context, live_server.url, member)
    elif signed_in:
        chromium.sign_in(tab.context, live_server.url, operator)
    else:
        tab.context.clear_cookies()
    url = live_server.url + address.format(**site)

    problems = []
    for width, viewport in chromium.WIDTHS.items():
        tab.set_viewport_size(viewport)
        response = tab.goto(url)
        assert response.status == (404 if name == "not-found" else 200), url
        if name in DRAWN_CHARTS:
            tab.locator(DRAWN_CHARTS[name]).wait_for()
        assert bool(signed_in) == (tab.locator("nav[aria-label=Sections]").count() == 1), \
            f"{url}: expected to be signed {'in' if signed_in else 'out'}"
        if violations := chromium.axe_violations(tab):
            problems.append(f"at {width} width, axe-core found:\n{chromium.describe(violations)}")
        if width in chromium.NO_SIDEWAYS_SCROLL and (extra := chromium.sideways_scroll(tab)):
            problems.append(f"at {width} width the page scrolls sideways by {extra}px; "
                            f"sticking out: {chromium.widest_elements(tab)}")
        if width == "1366" and name in WHOLE_TABLES and (boxes := chromium.scrolled_boxes(tab)):
            problems.append(f"at 1366 width columns are hidden in a scrolling box: {boxes}")
        if name in SCREENSHOTS:
            chromium.screenshot(tab, f"{name}-{width}")
    assert not problems, f"{name} ({url}):\n" + "\n".join(problems)


def test_form_errors_stand_next_to_their_fields_and_pass_axe(tab, live_server, operator):
    chromium.sign_in(tab.context, live_server.url, operator)
    problems = []
    for width, viewport in chromium.WIDTHS.items():
        tab.set_viewport_size(viewport)
        tab.goto(f"{live_server.url}/hosts/add/")
        # The server's own checks, not the browser's: submit the empty form as is.
        tab.evaluate("() => document.querySelector('main form').noValidate = true")
        tab.click("main form button")
        name = tab.locator("input[name=name]")
        assert name.get_attribute("aria-invalid") == "true"
        error = tab.locator(f"#{name.get_attribute('aria-describedby').split()[0]}")
        assert error.is_visible() and error.inner_text().strip()
        assert error.evaluate("e => getComputedStyle(e).color") == "rgb(185, 28, 28)"
        if violations := chromium.axe_violations(tab):
            problems.append(f"at {width} width, axe-core found:\n{chromium.describe(violations)}")
        if width in chromium.NO_SIDEWAYS_SCROLL and (extra := chromium.sideways_scroll(tab)):
            problems.append(f"at {width} width the page scrolls sideways by {extra}px")
    assert not problems, "\n".join(problems)


def test_a_new_clone_shows_its_password_once_and_passes_axe(tab, live_server, operator):
    host = clone_factories.host("clones1")
    clone_factories.cluster(host)
    clone_factories.snapshots(host)
    chromium.sign_in(tab.context, live_server.url, operator)
    problems = []
    for number, (width, viewport) in enumerate(chromium.WIDTHS.items()):
        tab.set_viewport_size(viewport)
        tab.goto(f"{live_server.url}/hosts/{host.pk}/clones/")
        tab.select_option("#id_snapshot", clone_factories.SNAPSHOT)
        tab.fill("#id_name", f"dev{number}")
        tab.click("#clone-form button")
        assert tab.locator("#clone-password").is_visible()
        assert "it is not shown again" in tab.locator("#clone-password").inner_text()
        assert len(tab.input_value("#password")) == 24
        if violations := chromium.axe_violations(tab):
            problems.append(f"at {width} width, axe-core found:\n{chromium.describe(violations)}")
        if width in chromium.NO_SIDEWAYS_SCROLL and (extra := chromium.sideways_scroll(tab)):
            problems.append(f"at {width} width the page scrolls sideways by {extra}px")
    assert not problems, "\n".join(problems)
