"""A profile's recordsize "experiment" on a host whose facts were recorded from a real
zfs-fuse discovery, with experiment rows as a real recordsize run writes them
(tests/experiments/factories.py): the API and the editor take it only for recordsize, the
plan takes the winner or says why it cannot, and drift follows a new winner."""

import json

import pytest

from apps.tuning.models import Assignment, Profile
from tests.experiments.factories import finished_recordsize_experiment
from tests.html import parse

pytestmark = pytest.mark.django_db

DATA = "tank/pg/data"
SETTINGS = {"zfs": {"data": {"recordsize": "experiment", "atime": "off"},
                    "wal": {"recordsize": "128K"}}}
CLEAR = {"8K": (1000.0, 1010.0), "32K": (1300.0, 1290.0)}
CLOSE = {"8K": (1000.0, 1100.0), "16K": (1060.0, 1080.0)}


def create(api, settings: dict, name: str = "By experiment"):
    return api.post("/api/profiles/", {"name": name, "settings": settings}, format="json")


@pytest.fixture
def following(api, replayed_host):
    """The host follows a profile that leaves its data recordsize to an experiment."""
    profile = create(api, SETTINGS).json()
    assert api.put(f"/api/hosts/{replayed_host.pk}/profile/", {"profile": profile["id"]},
                   format="json").status_code == 200
    return replayed_host


def recordsize_row(api, host) -> dict:
    plan = api.post(f"/api/hosts/{host.pk}/plan/", {}, format="json")
    assert plan.status_code == 201, plan.json()
    return next(c for c in plan.json()["changes"]
                if (c["target"], c["key"]) == (DATA, "recordsize"))


@pytest.mark.parametrize("settings, where", [
    ({"zfs": {"data": {"compression": "experiment"}}}, "zfs.data.compression"),
    ({"zfs": {"other": {"recordsize": "experiment"}}}, "zfs.other.recordsize"),
    ({"postgres": {"work_mem": "experiment"}}, "postgres.work_mem"),
    ({"sysctl": {"vm.swappiness": "experiment"}}, "sysctl.vm.swappiness"),
])
def test_the_api_takes_experiment_only_for_a_data_or_wal_recordsize(api, settings, where):
    refused = create(api, settings)
    assert refused.status_code == 400
    assert f"{where}: 'experiment'" in refused.json()["error"]["message"]
    assert create(api, SETTINGS).status_code == 201
    assert Profile.objects.filter(name="By experiment").count() == 1


def test_the_editor_offers_experiment_and_refuses_it_elsewhere_on_the_form(signed_in):
    page = parse(signed_in.get("/tuning/profiles/new/").content)
    assert 'A data or wal recordsize may be "experiment"' in page.find("form", class_="card").text
    response = signed_in.post("/tuning/profiles/new/", {
        "name": "Bad", "settings": json.dumps({"zfs": {"wal": {"logbias": "experiment"}}})})
    errors = parse(response.content).find("ul", class_="errorlist").text
    assert response.status_code == 200 and "zfs.wal.logbias: 'experiment'" in errors
    response = signed_in.post("/tuning/profiles/new/", {
        "name": "Good", "settings": json.dumps(SETTINGS)})
    assert response.status_code == 302
    assert Profile.objects.get(name="Good").current.settings["zfs"]["data"]["recordsize"] == \
        "experiment"


def test_without_an_experiment_the_plan_says_run_one(api, following):
    row = recordsize_row(api, following)
    assert (row["status"], row["supported"], row["desired"], row["formula"]) == \
        ("not_planned", False, "experiment", "experiment")
    assert row["reason"] == ("no recordsize experiment on this host has named a winner for"
                             f" {DATA}; run one")
    # Drift does not guess either: no difference for a value nobody has decided.
    drift = Assignment.objects.get(host=following).drift
    assert [d for d in drift if (d["target"], d["key"]) == (DATA, "recordsize")] == []


def test_the_plan_takes_the_winner_of_the_newest_experiment(api, following):
    finished_recordsize_experiment(following, CLOSE)
    newest = finished_recordsize_experiment(following, CLEAR)
    row = recordsize_row(api, following)
    assert (row["status"], row["current"], row["desired"], row["formula"]) == \
        ("pending", "8192", "32K", "experiment")
    assert row["reason"].startswith(f"won recordsize experiment #{newest.pk} on {DATA} (TPS:")


def test_a_newest_experiment_within_the_spread_is_not_planned(api, following):
    finished_recordsize_experiment(following, CLEAR)
    newest = finished_recordsize_experiment(following, CLOSE)
    row = recordsize_row(api, following)
    assert row["status"] == "not_planned" and f"(#{newest.pk}) named no winner" in row["reason"]


def test_the_plan_page_shows_the_row_as_not_planned_with_its_reason(api, signed_in, following):
    plan = api.post(f"/api/hosts/{following.pk}/plan/", {}, format="json").json()
    page = parse(signed_in.get(f"/tuning/plans/{plan['id']}/").content)
    row = page.find("tr", class_="not_planned")
    assert DATA in row.text and "not planned" in row.text and "run one" in row.text
    assert "= experiment" in row.text


def test_drift_follows_a_new_winner_when_the_experiment_succeeds(
        api, following, django_capture_on_commit_callbacks):
    def drift() -> list[str]:
        return [d["desired"] for d in Assignment.objects.get(host=following).drift
                if (d["target"], d["key"]) == (DATA, "recordsize")]

    assert drift() == []
    with django_capture_on_commit_callbacks(execute=True):
        finished_recordsize_experiment(following, CLEAR)
    assert drift() == ["32K"]


def test_the_host_card_says_what_waits_for_an_experiment_until_one_names_a_winner(
        signed_in, following):
    def card():
        return parse(signed_in.get(f"/hosts/{following.pk}/tuning/").content).find(
            "div", id="tuning")

    waiting = card().find("p", id="awaiting-experiment").text
    assert waiting == (f"waits for an experiment {DATA} recordsize no recordsize experiment"
                       f" on this host has named a winner for {DATA}; run one")
    finished_recordsize_experiment(following, CLEAR)
    assert card().find_all("p", id="awaiting-experiment") == []
