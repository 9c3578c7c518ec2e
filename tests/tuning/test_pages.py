"""The tuning pages an operator uses, rendered from recorded facts (no SSH): the
profile list, a profile, a plan with its changes, and the host page's card."""

from dataclasses import asdict

import pytest

from apps.remote.facts import bloat
from apps.remote.facts.bloat import ClusterBloat
from apps.tuning import services
from apps.tuning.models import Assignment, Plan, PlanChange, Profile
from tests.html import parse
from tests.remote.fixtures.hosts import fuse_extra

pytestmark = pytest.mark.django_db


@pytest.fixture
def host(replayed_host):
    return replayed_host



def planned(host) -> Plan:
    services.assign(host, Profile.objects.get(slug="oltp-safe"))
    return services.make_plan(host)


def test_the_tuning_pages_need_a_sign_in(client, host):
    plan = planned(host)
    profile = Profile.objects.get(slug="oltp-safe")
    for url in ("/tuning/profiles/", f"/tuning/profiles/{profile.pk}/",
                f"/tuning/plans/{plan.pk}/"):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/login/"), url


def test_the_profile_list_shows_each_builtin_with_its_version(signed_in):
    rows = parse(signed_in.get("/tuning/profiles/").content).find("table", id="profiles").rows()
    safe = Profile.objects.get(slug="oltp-safe")
    versions = {row[0]: row[1] for row in rows}
    assert versions[f"{safe.name} built in"] == f"v{safe.current.number}"
    assert len(rows) == Profile.objects.filter(archived_at=None).count()


def test_a_profile_page_names_the_profile(signed_in):
    profile = Profile.objects.get(slug="oltp-safe")
    page = parse(signed_in.get(f"/tuning/profiles/{profile.pk}/").content)
    assert page.find("h1").text.startswith(profile.name)


def test_a_plan_page_lists_every_change_and_offers_apply_not_rollback(signed_in, host):
    plan = planned(host)
    page = parse(signed_in.get(f"/tuning/plans/{plan.pk}/").content)
    rows = page.find("table", id="changes").rows()
    keys = [row[2] for row in rows]
    assert keys == [change.key for change in plan.changes.all()]
    assert page.find_all("form", id="apply") and not page.find_all("form", id="rollback")


@pytest.mark.parametrize(("status", "offered"), [("applied", True), ("failed", True),
                                                 ("applying", False), ("rolled_back", False)])
def test_rollback_is_offered_for_an_apply_plan_that_ended(signed_in, host, status, offered):
    plan = planned(host)
    Plan.objects.filter(pk=plan.pk).update(status=status)
    plan.changes.filter(pk=plan.changes.first().pk).update(
        status=PlanChange.Status.APPLIED, before={"value": "on"})
    page = parse(signed_in.get(f"/tuning/plans/{plan.pk}/").content)
    assert bool(page.find_all("form", id="rollback")) is offered


def test_a_failed_plan_that_wrote_nothing_offers_no_rollback(signed_in, host):
    plan = planned(host)
    Plan.objects.filter(pk=plan.pk).update(status=Plan.Status.FAILED)
    plan.changes.filter(pk=plan.changes.first().pk).update(status=PlanChange.Status.FAILED)
    page = parse(signed_in.get(f"/tuning/plans/{plan.pk}/").content)
    assert not page.find_all("form", id="rollback")


def test_the_host_page_card_shows_the_assigned_profile_and_its_plans(signed_in, host):
    plan = planned(host)
    page = parse(signed_in.get(f"/hosts/{host.pk}/tuning/").content)
    card = page.find("div", id="tuning")
    selected = [o.text for o in card.find_all("option") if "selected" in o.attrs]
    assert selected == [Profile.objects.get(slug="oltp-safe").name]
    plan_links = [a.text for a in page.find_all("a") if a.attrs.get("href") ==
                  f"/tuning/plans/{plan.pk}/"]
    assert plan_links == [f"Plan #{plan.pk}"]


def test_unassigning_returns_the_host_to_no_profile_and_says_nothing_changed(signed_in, host):
    planned(host)
    card = parse(signed_in.get(f"/hosts/{host.pk}/tuning/").content).find("div", id="tuning")
    form = card.find("form", id="unassign")
    assert "Nothing on the host changes" in form.attrs["data-confirm"]
    response = signed_in.post(form.attrs["action"], follow=True)
    assert not Assignment.objects.filter(host=host).exists()
    page = parse(response.content)
    assert "Nothing on the host was changed" in page.text
    card = page.find("div", id="tuning")
    assert [o.text for o in card.find_all("option") if "selected" in o.attrs] == ["No profile"]
    assert not card.find_all("form", id="unassign")


def applied_plan(host) -> Plan:
    plan = planned(host)
    Plan.objects.filter(pk=plan.pk).update(status=Plan.Status.APPLIED)
    plan.changes.filter(key="vm.dirty_bytes").update(
        status=PlanChange.Status.APPLIED, after="268435456",
        before={"value": "0", "partner": {"name": "vm.dirty_ratio", "value": "20"}})
    return plan


def test_a_rollback_asks_first_and_is_called_a_rollback_everywhere(signed_in, host, delivered):
    plan = applied_plan(host)
    host.facts["sysctls"].update({"vm.dirty_bytes": 268435456, "vm.dirty_ratio": 0})
    host.save()  # as discovery read the host after the apply
    form = parse(signed_in.get(f"/tuning/plans/{plan.pk}/").content).find("form", id="rollback")
    assert form.attrs["data-confirm"].startswith(f"Roll back plan #{plan.pk}")

    response = signed_in.post(form.attrs["action"])
    back = Plan.objects.get(rollback_of=plan)
    assert back.operation.subject == f"db1: rollback #{back.pk} of plan #{plan.pk}"
    page = parse(signed_in.get(f"/tuning/plans/{back.pk}/").content)
    assert page.find("title").text.startswith(f"Rollback #{back.pk}")
    assert page.find("h1").text.startswith(f"Rollback #{back.pk}")
    # The kernel zeroed vm.dirty_ratio when vm.dirty_bytes was written: that is its current.
    assert page.find("table", id="changes").rows()[0][2:4] == ["vm.dirty_ratio", "0"]
    # Judged like any plan: a 20% dirty ratio of this host's RAM is more than its disks drain.
    assert "introduces: kernel dirty limit larger than the storage drains" in \
        page.find("tr", class_="hazard").text
    host_page = parse(signed_in.get(f"/hosts/{host.pk}/tuning/").content)
    assert host_page.find("ul", id="plans").find("li").text.startswith(
        f"Rollback #{back.pk} of plan #{plan.pk}")
    assert response.status_code == 302


def test_a_profile_never_applied_is_not_called_drifted(signed_in, host):
    planned(host)
    card = parse(signed_in.get(f"/hosts/{host.pk}/tuning/").content).find("div", id="tuning")
    assert card.find_all(id="not-applied") and not card.find_all(id="drifted")
    drift = [li.text for li in card.find("ul", id="drift").find_all("li")]
    assert "tank/pg/data recordsize 8192→16K" in drift


def test_a_host_that_left_the_applied_profile_is_drifted(signed_in, host):
    planned(host)
    assignment = Assignment.objects.get(host=host)
    assignment.applied_version = assignment.profile.current
    assignment.save()
    card = parse(signed_in.get(f"/hosts/{host.pk}/tuning/").content).find("div", id="tuning")
    assert card.find(id="drifted") and not card.find_all(id="not-applied")


def test_a_setting_waiting_for_a_restart_is_pending_with_its_value(signed_in, host):
    plan = planned(host)
    change = plan.changes.get(key="shared_buffers")
    change.status = PlanChange.Status.AWAITING_RESTART
    change.save()
    rows = host.facts["clusters"][0]["settings"]
    next(r for r in rows if r["name"] == "shared_buffers")["pending_restart"] = True
    host.save()
    services.refresh_drift(host)
    card = parse(signed_in.get(f"/hosts/{host.pk}/tuning/").content).find("div", id="tuning")
    assert f"shared_buffers 128MB→{change.desired}" in card.find("p", id="pending-restart").text
    assert "shared_buffers" not in card.find("ul", id="drift").text


def test_a_plan_row_that_introduces_a_hazard_is_marked(signed_in, host):
    plan = planned(host)  # oltp-safe: shared_buffers = RAM/4, GBs on a zfs-fuse host
    page = parse(signed_in.get(f"/tuning/plans/{plan.pk}/").content)
    marked = {row.find_all("td")[2].text: row.find("div", class_="hazard-note").text
              for row in page.find("table", id="changes").find_all("tr", class_="hazard")}
    assert list(marked) == ["shared_buffers"]
    assert "warning introduces: zfs-fuse stalls with large shared_buffers" in \
        marked["shared_buffers"]
    assert page.find(id="introduces")
    assert page.find(id="findings-resolved")


def test_the_advisor_folds_under_its_heading_with_its_count(signed_in, host):
    planned(host)
    page = parse(signed_in.get(f"/hosts/{host.pk}/tuning/").content)
    advisor = page.find("details", id="advisor")
    count = len(advisor.find("ul", class_="findings").find_all("li", class_="finding"))
    assert "open" in advisor.attrs
    noun = "finding" if count == 1 else "findings"
    assert advisor.find("summary").text.split()[:3] == ["Advisor", str(count), f"{noun};"]


def test_the_dead_rows_finding_renders_in_the_advisors_list(signed_in, host):
    """Lesson 64's finding needs no template of its own: the advisor's list shows it."""
    captured = fuse_extra("psql_tables_bloat").split("\n", 2)[2]
    dead = ClusterBloat(1, [bloat.parse_tables("postgres", None, captured)])
    host.facts["clusters"][0]["bloat"] = asdict(dead)
    host.save()
    page = parse(signed_in.get(f"/hosts/{host.pk}/tuning/").content)
    [item] = [li for li in page.find("details", id="advisor").find_all("li", class_="finding")
              if "dead rows pile up in database postgres" in li.text]
    assert "public.pozol_bloat: 40000 dead" in item.text
    assert "What to do: VACUUM (VERBOSE, ANALYZE) public.pozol_bloat" in item.text
    assert "Use pg_repack" in item.text
