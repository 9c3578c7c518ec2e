"""The Policies page: create, edit with the prune preview required before a destroying
change is saved, the htmx preview fragment, assignments, and the host's Snapshots tab."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.snapshots.models import PolicyAssignment, SnapshotPolicy
from tests.snapshots import factories

pytestmark = [pytest.mark.django_db]

NOW = datetime(2026, 11, 23, 19, 0, tzinfo=UTC)
FORM = {"name": "often", "prefix": "pozol", "frequently": "3", "frequent_minutes": "1",
        "hourly": "0", "daily": "0", "weekly": "0", "monthly": "0", "enabled": "on"}


@pytest.fixture
def host():
    row = factories.host()
    factories.cluster(row)
    return row


@pytest.fixture
def policy(host):
    row = SnapshotPolicy.objects.create(name="often", frequently=3, frequent_minutes=1)
    PolicyAssignment.objects.create(policy=row, host=host, dataset="tank/pg/data")
    for minute in range(3):
        at = NOW + timedelta(minutes=minute)
        factories.snapshot(host, f"tank/pg/data@pozol_often_{minute}", created_at=at,
                           properties={"pozol:owner": "pozol", "pozol:policy": "often",
                                       "pozol:taken": at.strftime("%Y%m%dT%H%M%SZ")})
    return row


def test_a_new_policy_is_created_and_listed(signed_in):
    response = signed_in.post("/snapshots/policies/new/", FORM)
    assert response.status_code == 302
    page = signed_in.get("/snapshots/policies/").content.decode()
    assert "often" in page and "3 every 1 min" in page


def test_a_hostile_prefix_is_a_form_error(signed_in):
    response = signed_in.post("/snapshots/policies/new/", {**FORM, "prefix": "$(reboot)"})
    assert response.status_code == 200 and "may only use letters" in response.content.decode()
    assert not SnapshotPolicy.objects.exists()


def test_a_change_that_prunes_is_saved_only_after_its_preview(signed_in, policy):
    address = f"/snapshots/policies/{policy.pk}/"
    fewer = {**FORM, "frequently": "1"}
    first = signed_in.post(address, fewer)
    page = first.content.decode()
    assert first.status_code == 200 and "Save again to confirm" in page
    assert "tank/pg/data@pozol_often_0" in page and "tank/pg/data@pozol_often_1" in page
    assert "tank/pg/data@pozol_often_2" not in page.split("would destroy")[1]
    policy.refresh_from_db()
    assert policy.frequently == 3
    signed = page.split('name="previewed" value="')[1].split('"')[0]
    assert signed
    tampered = signed_in.post(address, {**fewer, "frequently": "0", "previewed": signed})
    assert tampered.status_code == 200
    assert signed_in.post(address, {**fewer, "previewed": signed}).status_code == 302
    policy.refresh_from_db()
    assert policy.frequently == 1


def test_the_htmx_preview_lists_what_would_go(signed_in, policy):
    fragment = signed_in.post(f"/snapshots/policies/{policy.pk}/preview/",
                              {**FORM, "frequently": "2"}).content.decode()
    assert "tank/pg/data@pozol_often_0" in fragment and "pozol_often_1" not in fragment
    assert "new with this change" in fragment  # kept as saved, destroyed as proposed


def test_the_name_cannot_change_in_the_form(signed_in, policy):
    signed_in.post(f"/snapshots/policies/{policy.pk}/", {**FORM, "name": "other"})
    assert SnapshotPolicy.objects.get().name == "often"


def test_assign_and_the_host_tab_shows_the_policy(signed_in, host):
    row = SnapshotPolicy.objects.create(name="nightly", daily=7)
    cluster = host.clusters.get()
    response = signed_in.post(f"/snapshots/policies/{row.pk}/assign/",
                              {"host": host.pk, "target": f"cluster:{cluster.data_dir}"})
    assert response.status_code == 302
    page = signed_in.get(f"/hosts/{host.pk}/snapshots/").content.decode()
    assert f"cluster {cluster.data_dir}" in page and "nightly" in page


@pytest.mark.parametrize(("form", "said"), [
    ({"target": "cluster:/x"}, "host: choose one from the list."),
    ({"host": "abc", "target": "cluster:/x"}, "host: choose one from the list."),
    ({"host": "HOST", "target": "nothing"},
     "target: choose a cluster or a dataset from the list"),
    ({"host": "HOST", "target": "dataset:"},
     "target: choose a cluster or a dataset from the list"),
])
def test_a_refused_assignment_says_why(signed_in, host, form, said):
    row = SnapshotPolicy.objects.create(name="nightly", daily=7)
    form = {k: str(host.pk) if v == "HOST" else v for k, v in form.items()}
    response = signed_in.post(f"/snapshots/policies/{row.pk}/assign/", form,
                              HTTP_REFERER=f"/snapshots/policies/{row.pk}/", follow=True)
    assert [str(m) for m in response.context["messages"]] == [said]
    assert not PolicyAssignment.objects.exists()


def test_an_unknown_host_is_not_found_before_the_target_is_read(signed_in, host):
    row = SnapshotPolicy.objects.create(name="nightly", daily=7)
    response = signed_in.post(f"/snapshots/policies/{row.pk}/assign/",
                              {"host": str(host.pk + 1000), "target": "nothing"})
    assert response.status_code == 404


def test_removing_an_assignment_from_the_page_and_the_api(signed_in, api, policy):
    assignment = PolicyAssignment.objects.get()
    response = signed_in.post(f"/snapshots/policies/assignments/{assignment.pk}/delete/")
    assert response.url == f"/snapshots/policies/{policy.pk}/"
    assert not PolicyAssignment.objects.exists()
    again = PolicyAssignment.objects.create(policy=policy, host=assignment.host,
                                            dataset="tank/pg/data")
    assert api.delete(f"/api/policy-assignments/{again.pk}/").status_code == 204
    assert not PolicyAssignment.objects.exists()
