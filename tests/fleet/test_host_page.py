"""The host page tells what is known of a host (never reached, not reachable now,
reached), is organised in sections at their own URLs, and an unreachable host
raises an alert. Rendered from recorded facts (no SSH: the web never opens it);
the discovery step is driven with a fake connection that fails."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from apps.alerts.models import Alert
from apps.fleet import sections, services
from apps.fleet.models import Host
from apps.ops.engine import StepContext
from apps.remote.errors import AuthenticationFailed, CommandFailed, Unreachable
from apps.remote.shell import Result
from tests.benchmarks import factories
from tests.driving import drive
from tests.html import parse

pytestmark = pytest.mark.django_db

SECTIONS = ("overview", "metrics", "datasets", "postgresql", "new-cluster", "tuning",
            "rollouts", "snapshots", "replication", "clones", "drills", "wal", "benchmarks",
            "operations")
NOT_KNOWN = "Not known: the host has not been reached"
FACT_LOOKING_EMPTIES = ("No pools found", "No datasets found", "No running PostgreSQL found",
                        "No findings", "No disks reported")


def section_url(host: Host, section: str) -> str:
    return f"/hosts/{host.pk}/" if section == "overview" else f"/hosts/{host.pk}/{section}/"


def never_reached(error: str = "") -> Host:
    host = factories.host("fresh")
    if error:
        host.record_unreachable(Unreachable(error))
    return host


def header(page) -> dict[str, str]:
    """The summary header's terms and their values."""
    items = page.find("dl", id="host-summary").children
    return {item.find("dt").text: item.find("dd").text
            for item in items if not isinstance(item, str) and item.tag == "div"}


# ---- what is known -------------------------------------------------------------------

def test_a_host_never_reached_says_so_in_every_section(signed_in):
    host = never_reached()
    for section in SECTIONS:
        html = signed_in.get(section_url(host, section)).content.decode()
        page = parse(html)
        banner = page.find("div", id="reach-banner")
        assert "has not reached this host yet" in banner.text
        assert "No discovery has finished yet" in banner.text
        assert "Discover now" in banner.text and "authorized_keys" in banner.text
        for empty in FACT_LOOKING_EMPTIES:
            assert empty not in html, (section, empty)
        # Sections of records of their own say nothing of facts.
        if section not in ("overview", "replication", "clones", "drills", "rollouts",
                           "operations"):
            assert NOT_KNOWN in page.find("section", class_="host-section").text, section
    summary = header(page)
    assert summary["ZFS"] == summary["PostgreSQL"] == summary["Pool capacity"] == "not known"
    assert summary["Findings"] == "not known"


def test_a_host_whose_first_discovery_failed_shows_the_reason_and_what_to_do(signed_in):
    host = never_reached("ssh: connect to host 10.9.9.9 port 22: Connection refused")
    banner = parse(signed_in.get(f"/hosts/{host.pk}/").content).find("div", id="reach-banner")
    assert "has not reached this host yet" in banner.text
    assert "The last attempt failed: ssh: connect to host 10.9.9.9 port 22: " \
           "Connection refused" in banner.text
    assert f"root@{host.address}:22" in banner.text
    assert "unreachable" in parse(signed_in.get("/").content).find("table", id="hosts").text


def test_an_unreachable_host_shows_its_last_facts_as_possibly_stale(signed_in, replayed_host):
    seen = replayed_host.last_seen_at
    replayed_host.record_unreachable(Unreachable("no answer from 127.0.0.9:22 in 10 s"))
    page = parse(signed_in.get(f"/hosts/{replayed_host.pk}/datasets/").content)
    banner = page.find("div", id="reach-banner")
    assert "Not reachable at the last discovery: no answer from 127.0.0.9:22 in 10 s" \
        in banner.text
    assert "possibly stale" in banner.text
    assert banner.find("time").attrs["datetime"] == seen.isoformat()
    assert page.find("table", id="datasets").rows()  # the last picture is still shown
    assert "reachable" not in page.find("dl", id="host-summary").find("dd").text.split()


def test_a_reached_host_has_no_banner(signed_in, replayed_host):
    page = parse(signed_in.get(f"/hosts/{replayed_host.pk}/").content)
    assert not page.find_all(id="reach-banner")
    assert page.find("dl", id="host-summary").find("dd").text == "reachable"


# ---- the unreachable alert --------------------------------------------------------

@pytest.fixture
def fake_connection(monkeypatch):
    """Discovery's connection, failing or answering as a test says."""
    from apps.fleet import steps

    answer: dict = {}

    def discover(runner, login="root"):
        if "error" in answer:
            raise answer["error"]
        return answer["facts"]

    monkeypatch.setattr(StepContext, "runner", lambda self: object())
    monkeypatch.setattr(steps, "discover", discover)
    return answer


def test_discovery_that_cannot_connect_raises_one_alert_until_the_host_answers(
        signed_in, replayed_host, fake_connection, delivered):
    from apps.remote.gather import discover
    from tests.remote.fixtures.hosts import replay_transcript

    fake_connection["error"] = Unreachable("ssh: connect to 127.0.0.9 port 22: timed out")
    for _ in range(2):
        operation = drive(services.discover(replayed_host))
        assert (operation.status, operation.error_code) == ("failed", "unreachable")
    alert = Alert.objects.get(host=replayed_host)
    assert alert.kind == "unreachable" and alert.resolved_at is None
    assert "timed out" in alert.message
    replayed_host.refresh_from_db()
    assert replayed_host.reach == Host.Reach.STALE
    row = parse(signed_in.get("/").content).find("table", id="hosts").rows()[0]
    assert row[-1] == "1"  # the overview's alert count
    assert alert.message in signed_in.get(f"/hosts/{replayed_host.pk}/").content.decode()

    fake_connection.clear()
    fake_connection["facts"] = discover(replay_transcript())
    assert drive(services.discover(replayed_host)).status == "succeeded"
    alert.refresh_from_db()
    replayed_host.refresh_from_db()
    assert alert.resolved_at is not None and replayed_host.reach == Host.Reach.REACHED
    assert parse(signed_in.get("/").content).find("table", id="hosts").rows()[0][-1] == "—"


def test_a_refused_key_is_unreachable_too(replayed_host, fake_connection, delivered):
    fake_connection["error"] = AuthenticationFailed("root@127.0.0.9: the key was refused")
    assert drive(services.discover(replayed_host)).error_code == "auth_failed"
    assert Alert.objects.get(host=replayed_host, resolved_at=None).kind == "unreachable"


def test_a_command_failing_on_a_reached_host_is_not_unreachable(replayed_host, fake_connection,
                                                               delivered):
    fake_connection["error"] = CommandFailed(Result("zpool list", 1, "", "zpool: broken"))
    assert drive(services.discover(replayed_host)).error_code == "command_failed"
    replayed_host.refresh_from_db()
    assert replayed_host.reachable is True and "zpool" in replayed_host.last_error
    assert not Alert.objects.exists()


# ---- sections ----------------------------------------------------------------------

def test_every_section_has_its_own_url_and_marks_its_tab(signed_in, replayed_host):
    assert [s.id for s in sections.sections()][:len(SECTIONS)] == list(SECTIONS)
    for section in SECTIONS:
        response = signed_in.get(section_url(replayed_host, section))
        assert response.status_code == 200, section
        page = parse(response.content)
        nav = page.find("nav", class_="tabs")
        current = [a for a in nav.find_all("a") if a.attrs.get("aria-current") == "page"]
        assert [a.attrs["href"] for a in current] == [section_url(replayed_host, section)]
        assert {a.attrs["href"] for a in nav.find_all("a")} == \
            {section_url(replayed_host, s) for s in SECTIONS}
        assert all(a.attrs["hx-get"] == a.attrs["href"] for a in nav.find_all("a"))
        assert page.find("section", class_="host-section").attrs["id"] == f"section-{section}"
    assert signed_in.get(f"/hosts/{replayed_host.pk}/overview/").status_code == 200
    assert signed_in.get(f"/hosts/{replayed_host.pk}/nosuch/").status_code == 404
    assert signed_in.get("/hosts/999999/datasets/").status_code == 404


@pytest.mark.parametrize(("section", "element"), [
    ("overview", "kernel"), ("datasets", "pools"), ("datasets", "datasets"),
    ("datasets", "disks"), ("tuning", "tuning"), ("benchmarks", "run-pgbench"),
    ("operations", "operations")])
def test_each_element_lives_in_its_section(signed_in, replayed_host, section, element):
    page = parse(signed_in.get(section_url(replayed_host, section)).content)
    assert page.find("section", class_="host-section").find_all(id=element)
    for other in SECTIONS:
        if other != section:
            assert not parse(signed_in.get(section_url(replayed_host, other)).content) \
                .find("section", class_="host-section").find_all(id=element), other


def test_htmx_swaps_just_the_sections_and_history_gets_the_whole_page(signed_in,
                                                                      replayed_host):
    url = f"/hosts/{replayed_host.pk}/datasets/"
    partial = signed_in.get(url, HTTP_HX_REQUEST="true")
    html = partial.content.decode()
    assert html.startswith('<div id="host-sections">') and "<html" not in html
    assert 'id="datasets"' in html and 'aria-current="page"' in html
    assert "HX-Request" in partial["Vary"]
    restored = signed_in.get(url, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in restored.content.decode()
    assert "<html" in signed_in.get(url).content.decode()


def test_the_header_sums_up_the_host(signed_in, replayed_host):
    pool = max(replayed_host.pools.all(), key=lambda p: p.capacity)
    cluster = replayed_host.clusters.get()
    page = parse(signed_in.get(f"/hosts/{replayed_host.pk}/operations/").content)
    summary = header(page)
    assert summary["ZFS"] == replayed_host.zfs_version
    assert summary["PostgreSQL"] == f"{cluster.version} :{cluster.port}"
    assert summary["Pool capacity"] == f"{pool.capacity}%"
    assert summary["Profile"] == "none" and summary["Running now"] == "nothing"


def test_fleet_imports_no_app_that_adds_sections():
    """Sections come through the registry: fleet knows nothing of tuning or benchmarks."""
    fleet = Path(__file__).resolve().parents[2] / "apps" / "fleet"
    for source in fleet.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [alias.name for alias in node.names]
                assert not [n for n in names if n.startswith(("apps.tuning", "apps.benchmarks"))], \
                    source


def test_a_form_in_a_section_brings_the_operator_back_to_it(signed_in, replayed_host):
    from apps.tuning.models import Profile

    profile = Profile.objects.get(slug="oltp-safe")
    response = signed_in.post(f"/tuning/hosts/{replayed_host.pk}/assign/",
                              {"profile": profile.pk})
    assert response.url == f"/hosts/{replayed_host.pk}/tuning/"
    never = never_reached()
    response = signed_in.post(f"/tuning/hosts/{never.pk}/plan/")
    assert response.url == f"/hosts/{never.pk}/tuning/"


def test_a_failure_on_a_reached_host_is_shown_without_calling_it_unreachable(signed_in,
                                                                            replayed_host):
    replayed_host.record_error(CommandFailed(Result("zpool list", 1, "", "zpool: broken")))
    page = parse(signed_in.get(f"/hosts/{replayed_host.pk}/").content)
    assert not page.find_all(id="reach-banner")
    assert "zpool: broken" in page.find("p", id="last-error").text


def test_a_rejected_host_key_is_the_reason_given(signed_in):
    host = never_reached()
    Host.objects.filter(pk=host.pk).update(host_key_state=Host.KeyState.REJECTED)
    banner = parse(signed_in.get(f"/hosts/{host.pk}/").content).find("div", id="reach-banner")
    assert "a host key other than the expected one" in banner.text
