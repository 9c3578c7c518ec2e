"""The New cluster tab: the plan shown before anything changes, refusals beside their
fields, Create starting the Operation and sending the browser to it."""

from __future__ import annotations

import pytest

from apps.ops.models import Operation

pytestmark = pytest.mark.django_db


def test_the_tab_shows_the_form(signed_in, replayed_host):
    page = signed_in.get(f"/hosts/{replayed_host.pk}/new-cluster/")
    assert page.status_code == 200
    assert 'id="cluster-form"' in page.content.decode()
    # The captured host runs 15 and has only 15 installed.
    assert "has installed, as discovery found: 15." in page.content.decode()


def test_plan_shows_the_plan_and_changes_nothing(signed_in, replayed_host):
    page = signed_in.post(f"/provisioning/hosts/{replayed_host.pk}/new/",
                          {"major": 15, "name": "app", "plan": "1"})
    text = page.content.decode()
    assert page.status_code == 200
    assert "tank/postgres/app/data" in text and "--data-checksums" in text
    assert 'name="create"' in text
    assert not Operation.objects.exists()


def test_create_starts_the_operation_and_redirects_to_it(signed_in, replayed_host, delivered):
    page = signed_in.post(f"/provisioning/hosts/{replayed_host.pk}/new/",
                          {"major": 15, "name": "app", "create": "1"})
    operation = Operation.objects.get(kind="provisioning.create_cluster")
    assert page.status_code == 302 and page.url == f"/operations/{operation.pk}/"


@pytest.mark.parametrize(("data", "field_text"), [
    ({"major": 13, "name": "app"}, "PostgreSQL 13 is not installed"),
    ({"major": 15, "name": "$(id)"}, "a cluster name is"),
    ({"major": 15, "name": "app", "port": 5499}, "port 5499 is taken"),
    ({"major": "x", "name": "app"}, "Enter a whole number"),
])
def test_refusals_land_beside_the_form(signed_in, replayed_host, data, field_text):
    page = signed_in.post(f"/provisioning/hosts/{replayed_host.pk}/new/",
                          {**data, "create": "1"})
    assert page.status_code == 200
    assert field_text in page.content.decode()
    assert not Operation.objects.exists()
