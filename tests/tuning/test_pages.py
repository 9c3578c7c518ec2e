"""The tuning pages an operator uses, rendered from recorded facts (no SSH): the
profile list, a profile, a plan with its changes, and the host page's card."""

import pytest

from apps.tuning import services
from apps.tuning.models import Plan, PlanChange, Profile
from tests.html import parse

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
    assert plan_links == [f"#{plan.pk} apply"]
