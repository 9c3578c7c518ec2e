"""Profiles, assignment, plans and their refusals through the API, on facts
recorded from a real zfs-fuse host (no SSH: applying is proven on real hosts
in tests/integration/test_tuning.py)."""

import pytest

from apps.ops.models import Operation
from apps.tuning.models import Plan, Profile

pytestmark = pytest.mark.django_db

SETTINGS = {"zfs": {"data": {"atime": "off"}, "wal": {}}, "module": {}, "sysctl": {},
            "postgres": {"work_mem": "ram / 256"}}


@pytest.fixture
def host(replayed_host):
    return replayed_host


def builtin(slug: str) -> Profile:
    return Profile.objects.get(slug=slug)


def test_the_builtin_profiles_exist_with_their_reasons(api):
    profiles = {p["slug"]: p for p in api.get("/api/profiles/").json()["results"]}
    assert {"oltp-safe", "oltp-bounded-loss", "analytics", "clone-dev"} <= set(profiles)
    safe = profiles["oltp-safe"]["current"]
    assert safe["settings"]["postgres"]["full_page_writes"] == "off"
    assert safe["citations"]
    assert profiles["oltp-bounded-loss"]["current"]["settings"]["requires_acknowledgement"]


def test_editing_makes_a_new_version_and_builtins_are_copied_not_edited(api):
    created = api.post("/api/profiles/", {"name": "Mine", "settings": SETTINGS},
                       format="json").json()
    edited = api.put(f"/api/profiles/{created['id']}/",
                     {"name": "Mine", "settings": {**SETTINGS, "sysctl": {"vm.swappiness": "1"}},
                      "note": "no swapping"}, format="json")
    assert edited.status_code == 200 and edited.json()["current"]["number"] == 2
    versions = api.get(f"/api/profiles/{created['id']}/versions/").json()
    assert [v["number"] for v in versions["results"]] == [2, 1] and versions["count"] == 2

    safe = builtin("oltp-safe")
    refused = api.put(f"/api/profiles/{safe.pk}/", {"name": safe.name, "settings": SETTINGS},
                      format="json")
    assert refused.status_code == 400 and "copy it" in refused.json()["error"]["message"]
    copy = api.post(f"/api/profiles/{safe.pk}/copy/", {"name": "Safe, mine"}, format="json")
    assert copy.status_code == 201 and not copy.json()["builtin"]


def test_invalid_settings_are_refused(api):
    for settings in ({"zfs": {"data": {"recordsize; rm": "1"}}}, {"nonsense": {}},
                     {"postgres": {"work_mem": "__import__('os')"}}):
        response = api.post("/api/profiles/", {"name": "Bad", "settings": settings},
                            format="json")
        assert response.status_code == 400, settings
    assert not Profile.objects.filter(name="Bad").exists()


def test_an_assigned_profile_cannot_be_deleted(api, host):
    created = api.post("/api/profiles/", {"name": "Mine", "settings": SETTINGS},
                       format="json").json()
    assert api.put(f"/api/hosts/{host.pk}/profile/", {"profile": created["id"]},
                   format="json").status_code == 200
    response = api.delete(f"/api/profiles/{created['id']}/")
    assert response.status_code == 409 and "db1" in response.json()["error"]["message"]


def test_a_plan_lists_changes_with_resolved_formulas(api, host):
    api.put(f"/api/hosts/{host.pk}/profile/", {"profile": builtin("oltp-safe").pk},
            format="json")
    plan = api.post(f"/api/hosts/{host.pk}/plan/", {}, format="json")
    assert plan.status_code == 201
    changes = plan.json()["changes"]
    keys = {(c["layer"], c["key"]) for c in changes}
    assert ("postgres", "full_page_writes") in keys and ("zfs", "recordsize") in keys
    shared_buffers = next(c for c in changes if c["key"] == "shared_buffers")
    assert shared_buffers["formula"] and shared_buffers["method"] == "pg_restart"
    arc_max = next(c for c in changes if c["key"] == "zfs_arc_max")
    assert not arc_max["supported"] and "zfs-fuse" in arc_max["reason"]


def test_the_bounded_loss_profile_is_refused_without_acknowledgement(api, host, delivered):
    plan = api.post(f"/api/hosts/{host.pk}/plan/",
                    {"profile": builtin("oltp-bounded-loss").pk}, format="json").json()
    assert plan["requires_acknowledgement"] == ["bounded_loss"]
    refused = api.post(f"/api/plans/{plan['id']}/apply/", {}, format="json")
    assert refused.status_code == 400 and "bounded_loss" in refused.json()["error"]["message"]
    assert not Operation.objects.filter(kind="tuning.apply").exists()
    accepted = api.post(f"/api/plans/{plan['id']}/apply/", {"acknowledge": ["bounded_loss"]},
                        format="json")
    assert accepted.status_code == 202
    assert Plan.objects.get(pk=plan["id"]).acknowledged == ["bounded_loss"]


def test_a_plan_is_applied_once(api, host, delivered):
    plan = api.post(f"/api/hosts/{host.pk}/plan/", {"profile": builtin("oltp-safe").pk},
                    format="json").json()
    assert api.post(f"/api/plans/{plan['id']}/apply/", {}, format="json").status_code == 202
    again = api.post(f"/api/plans/{plan['id']}/apply/", {}, format="json")
    assert again.status_code == 400 and "make a new plan" in again.json()["error"]["message"]


def test_findings_and_the_schema(api, host):
    findings = api.get(f"/api/hosts/{host.pk}/findings/").json()
    ids = {f["id"] for f in findings}
    assert ids and all(f["source"] for f in findings)
    schema = api.get("/api/schema/").content.decode()
    for path in ("/api/profiles/", "/api/hosts/{id}/profile/", "/api/hosts/{id}/findings/",
                 "/api/hosts/{id}/plan/", "/api/plans/{id}/apply/", "/api/plans/{id}/rollback/"):
        assert path in schema, path


def test_the_host_page_shows_tuning_and_the_plan_page_shows_changes(api, client, operator,
                                                                   host):
    api.put(f"/api/hosts/{host.pk}/profile/", {"profile": builtin("oltp-safe").pk},
            format="json")
    client.force_login(operator)
    page = client.get(f"/hosts/{host.pk}/tuning/").content.decode()
    assert 'id="tuning"' in page and "OLTP on ZFS (safe)" in page
    assert 'name="csrfmiddlewaretoken"' in page.split('id="tuning"')[1]
    assert "Source:" in page  # advisor findings with their sources

    response = client.post(f"/tuning/hosts/{host.pk}/plan/")
    assert response.status_code == 302
    plan_page = client.get(response.url).content.decode()
    assert "full_page_writes" in plan_page and "pg_restart" in plan_page
    assert 'id="apply"' in plan_page
    assert client.get("/tuning/profiles/").status_code == 200


def test_a_host_is_returned_to_no_profile_without_touching_it(api, host, delivered):
    api.put(f"/api/hosts/{host.pk}/profile/", {"profile": builtin("oltp-safe").pk},
            format="json")
    assigned = api.get(f"/api/hosts/{host.pk}/profile/").json()
    assert (assigned["state"], assigned["drifted"]) == ("not_applied", False)
    assert any(d["target"] == "tank/pg/data" and d["key"] == "recordsize"
               for d in assigned["drift"])

    assert api.delete(f"/api/hosts/{host.pk}/profile/").status_code == 204
    assert api.get(f"/api/hosts/{host.pk}/profile/").status_code == 404
    assert api.delete(f"/api/hosts/{host.pk}/profile/").status_code == 204  # idempotent
    assert api.delete("/api/hosts/999999/profile/").status_code == 404
    assert not Operation.objects.exists()  # nothing ran on the host
    schema = api.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/hosts/{id}/profile/"]["delete"]
    assert "Nothing on the host changes" in operation["description"]


def test_a_plan_row_carries_the_hazard_it_introduces(api, host):
    plan = api.post(f"/api/hosts/{host.pk}/plan/", {"profile": builtin("oltp-safe").pk},
                    format="json").json()
    hazards = {c["key"]: [h["id"] for h in c["hazards"]] for c in plan["changes"] if c["hazards"]}
    assert hazards["shared_buffers"][0] == "zfs_fuse_large_shared_buffers"
    assert any(f["stage"] == "resolved" for f in plan["findings"])
