"""Every page of fleet, operations and benchmarks, driven with hostile, missing
and malformed values: each answers a page, a form error, a redirect with a
message or a 4xx, never a 500."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.fleet.models import Host
from tests.benchmarks import factories

pytestmark = pytest.mark.django_db

HOSTILE = ["abc", "1.5", "", "\x00", "1\x00", "-1", "0", "99999999999999999999", "²", "١٢",
           "$(reboot)", "' OR 1=1 --", "x" * 10_000, "🙂", " 7 "]


@pytest.fixture
def world(operator):
    """A host with a cluster, two finished benchmarks and a validation; an
    operator's client that reports a 500 as a status, not an exception."""
    host = factories.host()
    factories.cluster(host)
    before = factories.finished(host, 100.0, 1.0, 10.0)
    after = factories.finished(host, 120.0, 0.9, 9.0)
    client = Client(raise_request_exception=False)
    client.force_login(operator)
    return {"client": client, "host": host, "before": before, "after": after}


def get_urls(w) -> list[str]:
    return ["/", "/hosts/add/", f"/hosts/{w['host'].pk}/", "/operations/",
            *(f"/hosts/{w['host'].pk}/{section}/" for section in
              ("datasets", "postgresql", "tuning", "benchmarks", "operations")),
            f"/operations/{w['before'].operation_id}/", "/benchmarks/",
            f"/benchmarks/{w['before'].pk}/", "/hosts/999999/", "/operations/999999/",
            "/benchmarks/999999/", "/benchmarks/validations/999999/",
            "/hosts/99999999999999999999/", "/operations/99999999999999999999/"]


@pytest.mark.parametrize("value", HOSTILE)
def test_pages_ignore_hostile_query_strings(world, value):
    for url in get_urls(world):
        response = world["client"].get(url, {"page": value, "before": value, "pk": value},
                                        HTTP_REFERER=value[:200])
        assert response.status_code < 500, url


ADD_FIELDS = ["name", "address", "port", "user", "work_dir", "key_source", "private_key",
              "expected_fingerprint"]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("field", [*ADD_FIELDS, "missing"])
def test_the_add_host_form_never_fails(world, field, value):
    data = {"name": "db7", "address": "10.0.0.7", "port": "22", "user": "root",
            "work_dir": "/var/lib/pozol", "key_source": "paste", "private_key": "x"}
    if field == "missing":
        data = {name: value for name in ADD_FIELDS}
    else:
        data[field] = value
    response = world["client"].post("/hosts/add/", data)
    assert response.status_code < 500
    assert not Host.objects.filter(name="db7").exists()


def post_targets(w) -> list[tuple[str, dict, list[str]]]:
    """(url, valid values, fields to spoil one at a time)."""
    host, before, after = w["host"].pk, w["before"].pk, w["after"].pk
    cluster = w["host"].clusters.get().pk
    return [
        (f"/hosts/{host}/confirm-host-key/", {}, ["fingerprint"]),
        (f"/hosts/{host}/discover/", {}, ["x"]),
        (f"/hosts/{host}/forget-host-key/", {}, ["x"]),
        (f"/benchmarks/hosts/{host}/run/",
         {"cluster": cluster, "scale": 1, "clients": 1, "threads": 1, "duration": 5,
          "database": "pgbench", "mode": "tpcb", "protocol": "simple"},
         ["cluster", "scale", "clients", "threads", "duration", "database", "mode",
          "protocol", "init"]),
        (f"/benchmarks/{after}/compare/", {"before": before, "label": "x"}, ["before", "label"]),
        (f"/benchmarks/{before}/compare/", {"before": before}, ["before", "label"]),
    ]


@pytest.mark.parametrize("value", HOSTILE)
def test_actions_answer_hostile_posts_without_failing(world, value):
    for url, valid, fields in post_targets(world):
        for field in fields:
            response = world["client"].post(url, {**valid, field: value}, HTTP_REFERER="/")
            assert response.status_code < 500, (url, field)
        response = world["client"].post(url, {field: value for field in fields})
        assert response.status_code < 500, (url, "all fields")


@pytest.mark.parametrize("value", ["abc", "1.5", "\x00", "99999999999999999999"])
def test_a_non_numeric_cluster_is_a_message_not_a_500(world, value):
    host = world["host"]
    response = world["client"].post(f"/benchmarks/hosts/{host.pk}/run/", {"cluster": value})
    assert response.status_code in (302, 404)
    assert not host.benchmarks.exclude(pk__in=[world["before"].pk, world["after"].pk]).exists()


def test_deleting_a_host_with_junk_still_deletes_only_that_host(world):
    response = world["client"].post(f"/hosts/{world['host'].pk}/delete/", {"pk": "\x00"})
    assert response.status_code == 302 and not Host.objects.exists()
