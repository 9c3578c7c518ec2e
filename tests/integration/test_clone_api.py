"""A clone through the API on a real test host: the password from the creation's answer
opens the clone from the address its connection string names, the clone's page shows
it ready (never the password), the host's clone settings give it its port, destroy is
refused while protected, and destroy removes it from ZFS."""

from __future__ import annotations

import subprocess

import pytest

from apps.clones.models import Clone
from apps.ops.models import Operation
from tests.driving import drive
from tests.integration.conftest import run_on
from tests.integration.test_clones import TABLE, host  # noqa: F401  the fixture

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def test_a_clone_made_through_the_api_opens_with_the_password_shown(api, host):  # noqa: F811
    fleet_host, row = host
    settings = api.put(f"/api/hosts/{row.pk}/clone-settings/",
                       {"port_min": 6610, "port_max": 6620, "listen_address": None,
                        "allowed_networks": ["127.0.0.0/8"]}, format="json")
    assert settings.status_code == 200, settings.content
    response = api.post("/api/clones/", {"host": row.pk, "cluster": row.clusters.get().pk,
                                         "name": "api1", "protected_minutes": 60},
                        format="json")
    assert response.status_code == 202, response.content
    answer = response.json()
    operation = drive(Operation.objects.get(pk=answer["operation"]["id"]))
    assert operation.status == Operation.Status.SUCCEEDED, operation.error

    shown = api.get(f"/api/clones/{answer['clone']['id']}/").json()
    assert shown["state"] == "ready" and shown["port"] == 6610
    assert answer["password"] not in str(shown)
    url = shown["connection_string"].replace(f"{shown['role']}@",
                                             f"{shown['role']}:{answer['password']}@")
    done = subprocess.run(["psql", url, "-XAtc", f"SELECT count(*) FROM {TABLE}"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "321"

    refused = api.delete(f"/api/clones/{shown['id']}/")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "protected"
    Clone.objects.filter(pk=shown["id"]).update(protected_until=None)
    destroyed = api.delete(f"/api/clones/{shown['id']}/")
    assert destroyed.status_code == 202, destroyed.content
    assert drive(Operation.objects.get(pk=destroyed.json()["id"])).status == \
        Operation.Status.SUCCEEDED
    assert api.get(f"/api/clones/{shown['id']}/").json()["state"] == "destroyed"
    assert "pozol_clones/api1" not in run_on(fleet_host, "zfs list -H -o name")
