"""The overview's columns: the fullest pool, the assigned profile and its drift,
the advisor's findings by severity and the operation running now; and the table
polls for itself only while something runs on a host it shows."""

from __future__ import annotations

import pytest

from apps.fleet.models import Host
from apps.fleet.steps import record_facts
from apps.ops.models import Operation
from apps.tuning import services as tuning
from apps.tuning.core.findings import SEVERITIES
from apps.tuning.models import Assignment, Profile
from tests.benchmarks import factories
from tests.html import parse

pytestmark = pytest.mark.django_db


def row_of(client, name: str = "db1") -> dict[str, str]:
    table = parse(client.get("/").content).find("table", id="hosts")
    titles = [th.text for th in table.find_all("th")]
    rows = [dict(zip(titles, row, strict=True)) for row in table.rows()]
    return next(row for row in rows if row["Host"].split()[0] == name)


def test_the_fullest_pool_is_the_capacity_shown(signed_in, replayed_host):
    pools = list(replayed_host.pools.all())
    replayed_host.pools.filter(pk=pools[0].pk).update(capacity=91)
    assert row_of(signed_in)["Capacity"] == "91%"


def test_a_host_never_reached_shows_not_known_rather_than_nothing(signed_in):
    factories.host("fresh")
    row = row_of(signed_in, "fresh")
    assert row["Capacity"] == row["Findings"] == "not known"
    assert row["Reachable"] == "not yet contacted" and row["Profile"] == "none"


def test_the_profile_column_tells_not_applied_drifted_and_in_line(signed_in, replayed_host):
    profile = Profile.objects.get(slug="oltp-safe")
    tuning.assign(replayed_host, profile)
    assert row_of(signed_in)["Profile"] == f"{profile.name} not applied"
    Assignment.objects.filter(host=replayed_host).update(
        applied_version=profile.current,
        drift=[{"key": "recordsize"}, {"key": "logbias"}])
    assert row_of(signed_in)["Profile"] == f"{profile.name} drifted (2)"
    Assignment.objects.filter(host=replayed_host).update(drift=[])
    assert row_of(signed_in)["Profile"] == f"{profile.name} in line"


def test_the_profile_column_follows_the_assignments_own_state(signed_in, replayed_host):
    """The overview reads its columns in SQL; they must agree with Assignment.state."""
    profile = Profile.objects.get(slug="oltp-safe")
    tuning.assign(replayed_host, profile)
    first = profile.current
    profile.versions.create(number=first.number + 1, settings=first.settings,
                            note="edited after it was applied")
    Assignment.objects.filter(host=replayed_host).update(
        applied_version=first, drift=[{"key": "recordsize"}])
    assignment = Assignment.objects.get(host=replayed_host)
    assert assignment.state == Assignment.State.NOT_APPLIED
    assert row_of(signed_in)["Profile"] == f"{profile.name} not applied"
    Assignment.objects.filter(host=replayed_host).update(drift_checked_at=None)
    assert Assignment.objects.get(host=replayed_host).state == Assignment.State.UNCHECKED
    assert row_of(signed_in)["Profile"] == f"{profile.name} not compared yet"


def test_findings_are_counted_at_discovery_and_when_the_profile_changes(
        signed_in, replayed_host, django_capture_on_commit_callbacks):
    assert row_of(signed_in)["Findings"] == "—"  # not counted yet
    with django_capture_on_commit_callbacks(execute=True):
        record_facts(replayed_host, replayed_host.facts)
    replayed_host.refresh_from_db()
    counted = replayed_host.findings_by_severity
    expected = [f["severity"] for f in tuning.findings(replayed_host)]
    assert counted == {s: expected.count(s) for s in SEVERITIES if s in expected}
    assert counted, "the replayed zfs-fuse host has findings"
    shown = " ".join(f"{counted[s]} {s}" for s in SEVERITIES if s in counted)  # worst first
    assert row_of(signed_in)["Findings"] == shown

    Host.objects.filter(pk=replayed_host.pk).update(findings_by_severity={"info": 9})
    tuning.assign(replayed_host, Profile.objects.get(slug="oltp-safe"))
    replayed_host.refresh_from_db()
    after = [f["severity"] for f in tuning.findings(replayed_host)]
    assert replayed_host.findings_by_severity == {s: after.count(s) for s in SEVERITIES
                                                  if s in after}


def test_the_running_operation_is_linked_and_the_table_polls_only_meanwhile(signed_in,
                                                                           replayed_host):
    html = signed_in.get("/").content.decode()
    assert row_of(signed_in)["Running now"] == "nothing" and "hx-trigger" not in \
        html.split('id="fleet"')[1].split(">")[0]
    running = Operation.objects.create(kind="benchmarks.run", host=replayed_host,
                                       subject="db1", status=Operation.Status.RUNNING)
    page = parse(signed_in.get("/").content)
    assert row_of(signed_in)["Running now"] == f"#{running.pk} benchmarks.run"
    link = page.find("td", class_="running").find("a")
    assert link.attrs["href"] == f"/operations/{running.pk}/"
    fleet = page.find("div", id="fleet")
    assert fleet.attrs["hx-trigger"] == "every 2s" and fleet.attrs["hx-get"] == "/"
    searched = parse(signed_in.get("/", {"q": "db"}, HTTP_HX_REQUEST="true").content)
    assert searched.find("div", id="fleet").attrs["hx-get"] == "/?q=db"

    Operation.objects.filter(pk=running.pk).update(status=Operation.Status.SUCCEEDED)
    polled = signed_in.get("/", HTTP_HX_REQUEST="true").content.decode()
    assert polled.startswith('<div id="fleet">')  # no trigger: polling stops


def test_a_new_version_of_the_assigned_profile_recounts_the_findings(replayed_host):
    from apps.tuning.models import ProfileVersion

    profile = Profile.objects.get(slug="oltp-safe")
    tuning.assign(replayed_host, profile)
    Host.objects.filter(pk=replayed_host.pk).update(findings_by_severity={"info": 99})
    current = profile.current
    ProfileVersion.objects.create(profile=profile, number=current.number + 1,
                                  settings=current.settings)
    replayed_host.refresh_from_db()
    assert replayed_host.findings_by_severity != {"info": 99}


def test_a_drift_of_another_shape_never_breaks_the_overview(signed_in, replayed_host):
    profile = Profile.objects.get(slug="oltp-safe")
    tuning.assign(replayed_host, profile)
    Assignment.objects.filter(host=replayed_host).update(
        applied_version=profile.current, drift={"tank/pg": [{"key": "recordsize"}]})
    assert row_of(signed_in)["Profile"] == f"{profile.name} drifted"
    Assignment.objects.filter(host=replayed_host).update(drift={})
    assert row_of(signed_in)["Profile"] == f"{profile.name} in line"
