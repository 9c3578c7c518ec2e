"""Every profile write is validated, unique and atomic, and none of them is a 500:
names taken (also by concurrent saves), bodies that are not profiles, values a
host cannot take, deleting what plans used, and hostile UI posts."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.tuning.models import Assignment, Plan, Profile, ProfileVersion
from tests.racing import race

pytestmark = pytest.mark.django_db

SETTINGS = {"zfs": {"data": {"atime": "off"}}, "postgres": {"work_mem": "ram / 256"}}
# Valid without a host; on the zfs-fuse host (a few GB of RAM) far below work_mem's 64kB.
TINY_WORK_MEM = {"postgres": {"work_mem": "ram / 100000000"}}


def create(api, name: str = "Mine", settings: dict = SETTINGS):
    return api.post("/api/profiles/", {"name": name, "settings": settings}, format="json")


def error(response) -> dict:
    return response.json()["error"]


# -- unique names -----------------------------------------------------------------------------

def test_a_taken_name_is_a_409_on_create_copy_and_rename(api):
    mine = create(api).json()
    other = create(api, "Other").json()
    assert create(api).status_code == 409
    copied = api.post(f"/api/profiles/{other['id']}/copy/", {"name": "Mine"}, format="json")
    assert copied.status_code == 409 and "already exists" in error(copied)["message"]
    renamed = api.patch(f"/api/profiles/{other['id']}/", {"name": "Mine"}, format="json")
    assert renamed.status_code == 409 and error(renamed)["fields"]["name"]
    assert api.patch(f"/api/profiles/{mine['id']}/", {"name": "Mine"},
                     format="json").status_code == 200  # its own name is not taken


def test_ui_copies_get_free_names_within_the_length_limit(client, operator):
    client.force_login(operator)
    long = Profile.objects.create(name="L" * 100, slug="long")
    ProfileVersion.objects.create(profile=long, number=1, settings=SETTINGS)
    for _ in range(3):
        response = client.post(f"/tuning/profiles/{long.pk}/copy/")
        assert response.status_code == 302
    names = sorted(Profile.objects.filter(name__startswith="L").values_list("name", flat=True))
    assert len(names) == 4 and all(len(name) <= 100 for name in names)
    assert {name[-9:] for name in names} >= {"L (copy 2)"[-9:], "L (copy 3)"[-9:]}
    assert any(name.endswith(" (copy)") for name in names)


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_creates_of_one_name_make_one_profile_and_409s(operator):
    from apps.accounts.models import ApiToken

    _, raw = ApiToken.objects.issue(operator, "race")

    def post() -> int:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
        return create(client, "Raced").status_code

    statuses = race(20, post)
    assert sorted(set(statuses)) == [201, 409] and statuses.count(201) == 1
    assert Profile.objects.filter(name="Raced").count() == 1


# -- bodies -----------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    {"note": "n" * 301}, {"description": "nul\x00"}, {"name": "nul\x00"},
    {"settings": {"postgres": {"work_mem": "4MB\x00"}}}, {"settings": ["zfs"]},
    {"settings": "zfs"}, {"description": ["a", "b"]}, {"name": "n" * 101},
    {"description": "d" * 2001},
])
def test_patch_refuses_what_is_not_a_profile_field(api, body):
    mine = create(api).json()
    response = api.patch(f"/api/profiles/{mine['id']}/", body, format="json")
    assert response.status_code == 400, response.content
    assert Profile.objects.get(pk=mine["id"]).versions.count() == 1


@pytest.mark.parametrize("body", [["settings"], "settings", 5])
def test_a_body_that_is_not_an_object_is_refused(api, body):
    mine = create(api).json()
    assert api.put(f"/api/profiles/{mine['id']}/", body, format="json").status_code == 400
    assert create(api, "X", settings=body).status_code == 400


def test_put_replaces_and_patch_changes_only_what_it_names(api):
    mine = create(api).json()
    patched = api.patch(f"/api/profiles/{mine['id']}/", {"name": "Renamed",
                                                         "description": "why"}, format="json")
    assert patched.status_code == 200 and patched.json()["name"] == "Renamed"
    assert patched.json()["current"]["number"] == 1  # no settings: no new version
    assert patched.json()["slug"] == "renamed"
    missing = api.put(f"/api/profiles/{mine['id']}/", {"name": "Renamed"}, format="json")
    assert missing.status_code == 400 and "settings" in error(missing)["fields"]
    put = api.put(f"/api/profiles/{mine['id']}/", {"name": "Renamed", "settings": SETTINGS},
                  format="json").json()
    assert put["current"]["number"] == 2 and put["description"] == ""


# -- values against hosts ---------------------------------------------------------------------

def test_a_pathological_formula_is_refused_when_saved(api):
    response = create(api, settings={"postgres": {"work_mem": "-" * 400 + "ram"}})
    assert response.status_code == 400 and "nested deeper" in error(response)["message"]


def test_assigning_a_profile_the_host_cannot_take_keeps_the_old_assignment(api,
                                                                           replayed_host):
    good, tiny = create(api).json(), create(api, "Tiny", TINY_WORK_MEM).json()
    assert api.put(f"/api/hosts/{replayed_host.pk}/profile/", {"profile": good["id"]},
                   format="json").status_code == 200
    refused = api.put(f"/api/hosts/{replayed_host.pk}/profile/", {"profile": tiny["id"]},
                      format="json")
    assert refused.status_code == 400
    assert "postgres.work_mem" in error(refused)["message"]
    assert "below the minimum" in error(refused)["fields"]["profile"][0]
    assert Assignment.objects.get(host=replayed_host).profile_id == good["id"]


def test_saving_values_an_assigned_host_cannot_take_is_refused(api, replayed_host):
    mine = create(api).json()
    api.put(f"/api/hosts/{replayed_host.pk}/profile/", {"profile": mine["id"]}, format="json")
    response = api.patch(f"/api/profiles/{mine['id']}/", {"settings": TINY_WORK_MEM},
                         format="json")
    assert response.status_code == 400
    assert error(response)["fields"]["settings"][0].startswith("db1: postgres.work_mem")
    assert Profile.objects.get(pk=mine["id"]).versions.count() == 1


def test_a_broken_stored_profile_never_500s_and_never_looks_in_line(api, client, operator,
                                                                    replayed_host):
    mine = create(api).json()
    api.put(f"/api/hosts/{replayed_host.pk}/profile/", {"profile": mine["id"]}, format="json")
    # As saved before today's checks: a formula that blew the evaluator's stack.
    ProfileVersion.objects.create(profile_id=mine["id"], number=2,
                                  settings={"postgres": {"work_mem": "-" * 400 + "ram"}})
    assert api.get(f"/api/hosts/{replayed_host.pk}/findings/").status_code == 200
    plan = api.post(f"/api/hosts/{replayed_host.pk}/plan/", {}, format="json")
    assert plan.status_code == 400 and "not a valid profile" in error(plan)["message"]
    client.force_login(operator)
    page = client.get(f"/hosts/{replayed_host.pk}/tuning/")
    assert page.status_code == 200
    assert 'id="profile-problems"' in page.content.decode()
    assert "in line with the profile" not in page.content.decode()


def test_a_plan_from_values_out_of_range_on_this_host_is_refused(api, replayed_host):
    tiny = create(api, "Tiny", TINY_WORK_MEM).json()
    response = api.post(f"/api/hosts/{replayed_host.pk}/plan/", {"profile": tiny["id"]},
                        format="json")
    assert response.status_code == 400 and "work_mem" in error(response)["message"]
    assert not Plan.objects.exists()


# -- delete and archive -----------------------------------------------------------------------

def test_delete_removes_an_unused_profile_and_archives_a_planned_one(api, replayed_host):
    unused, planned = create(api, "Unused").json(), create(api, "Planned").json()
    assert api.delete(f"/api/profiles/{unused['id']}/").status_code == 204
    assert not Profile.objects.filter(pk=unused["id"]).exists()

    plan = api.post(f"/api/hosts/{replayed_host.pk}/plan/", {"profile": planned["id"]},
                    format="json")
    assert plan.status_code == 201
    assert api.delete(f"/api/profiles/{planned['id']}/").status_code == 204
    assert Profile.objects.get(pk=planned["id"]).archived_at is not None
    assert api.get(f"/api/plans/{plan.json()['id']}/").json()["profile"] == "Planned"
    listed = {p["name"] for p in api.get("/api/profiles/").json()["results"]}
    archived = {p["name"] for p in api.get("/api/profiles/?archived=true").json()["results"]}
    assert "Planned" not in listed and archived == {"Planned"}
    assign = api.put(f"/api/hosts/{replayed_host.pk}/profile/", {"profile": planned["id"]},
                     format="json")
    assert assign.status_code == 400


def test_builtins_and_assigned_profiles_are_not_deleted(api, replayed_host):
    safe = Profile.objects.get(slug="oltp-safe")
    response = api.delete(f"/api/profiles/{safe.pk}/")
    assert response.status_code == 409 and "built in" in error(response)["message"]
    mine = create(api).json()
    api.put(f"/api/hosts/{replayed_host.pk}/profile/", {"profile": mine["id"]}, format="json")
    assert api.delete(f"/api/profiles/{mine['id']}/").status_code == 409


def test_ui_delete_of_a_planned_profile_archives_it(api, client, operator, replayed_host):
    planned = create(api, "Planned").json()
    api.post(f"/api/hosts/{replayed_host.pk}/plan/", {"profile": planned["id"]}, format="json")
    client.force_login(operator)
    response = client.post(f"/tuning/profiles/{planned['id']}/delete/")
    assert response.status_code == 302
    assert Profile.objects.get(pk=planned["id"]).archived
    assert ">Planned</a>" not in client.get("/tuning/profiles/").content.decode()
    assert ">Planned</a>" in client.get("/tuning/profiles/?archived=1").content.decode()


# -- hostile UI posts -------------------------------------------------------------------------

@pytest.mark.parametrize("data", [{}, {"profile": "abc"}, {"profile": "99999"},
                                  {"profile": "1; drop"}])
def test_ui_assign_answers_hostile_values_without_a_500(client, operator, replayed_host, data):
    client.force_login(operator)
    response = client.post(f"/tuning/hosts/{replayed_host.pk}/assign/", data)
    assert response.status_code in (302, 400, 404)
    assert not Assignment.objects.exists()


def test_ui_apply_with_an_unknown_acknowledgement_is_not_a_500(api, client, operator,
                                                              replayed_host, delivered):
    plan = api.post(f"/api/hosts/{replayed_host.pk}/plan/",
                    {"profile": Profile.objects.get(slug="oltp-bounded-loss").pk},
                    format="json").json()
    client.force_login(operator)
    response = client.post(f"/tuning/plans/{plan['id']}/apply/", {"acknowledge": "yolo"})
    assert response.status_code == 302 and Plan.objects.get(pk=plan["id"]).status == "draft"


def test_ui_edit_shows_refusals_on_the_form(client, operator):
    client.force_login(operator)
    taken = Profile.objects.get(slug="analytics").name
    for data in ({"name": taken, "settings": "{}"}, {"name": "x\x00", "settings": "{}"},
                 {"name": "Deep", "settings": "[" * 5000}):
        response = client.post("/tuning/profiles/new/", data)
        assert response.status_code == 200 and "errorlist" in response.content.decode(), data


def test_the_delete_confirmation_is_not_an_inline_script(client, operator):
    client.force_login(operator)
    hostile = Profile.objects.create(name="x');alert(1);('", slug="hostile")
    ProfileVersion.objects.create(profile=hostile, number=1, settings=SETTINGS)
    page = client.get(f"/tuning/profiles/{hostile.pk}/").content.decode()
    assert "onsubmit" not in page
    assert 'data-confirm="Delete x&#x27;);alert(1);(&#x27;?' in page  # read by static JS as text
    assert "alert(1);(&#x27;" in page  # escaped, and only ever shown as text
