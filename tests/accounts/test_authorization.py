"""Operator-only by default: every page and API route, walked from the URL conf, as a
tenant member and as a tenant admin, with ids of real objects (another tenant's where
the object belongs to a tenant). Nothing answers 2xx except the few pages and
endpoints members are given, and those never show another tenant's object.
"""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.urls import URLResolver, get_resolver
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken
from apps.audit.subjects import SEGMENT_MODELS
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.tenants import services
from apps.tenants.models import ClusterAssignment, Membership
from tests.accounts.api_seed import seed
from tests.tenants import factories

pytestmark = pytest.mark.django_db

# What a member may open (each scopes what it shows); "admin" only for tenant admins.
MEMBER_PAGES = {"/account/", "/account/tokens/", "/login/", "/api/schema/", "/api/docs/",
                "/api/tenants/", "/api/memberships/", "/api/tokens/", "/api/clones/",
                "/api/cluster-assignments/", "/clones/", "/api/clones/usage/"}
ADMIN_PAGES = {"/audit/", "/api/audit-events/"}
METHODS = ("get", "post", "put", "patch", "delete")


def routes(resolver=None, prefix: str = ""):
    for pattern in (resolver or get_resolver()).url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if not route.startswith("admin/"):
                yield from routes(pattern, route)
        elif "format" not in route:
            yield route


def concrete(route: str, ids: dict[str, int]) -> str:
    """A route with each id of a real object named by the segment before it."""
    path = route.replace("^", "").replace("\\Z", "").replace("$", "")
    path = re.sub(r"\(\?P<action>([a-z-]+)[^)]*\)", r"\1", path)
    path = path.replace("<slug:section>", "datasets").replace("<slug:chart_id>", "arc-hit")
    path = path.replace("<str:pool>", "tank")
    path = re.sub(r"\(\?P<kind>[^)]*\)|<slug:kind>", "pool_capacity", path)  # alert rules
    parts = re.split(r"(<int:\w+>|\(\?P<pk>[^)]*\))", path)
    built = ""
    for part in parts:
        if part.startswith("<int:") or part.startswith("(?P<pk>"):
            segment = built.rstrip("/").rpartition("/")[2]
            built += str(ids[SEGMENT_MODELS.get(segment, "fleet.Host")])
        else:
            built += part
    return "/" + built


@pytest.fixture
def world(operator):
    seed(operator)
    acme, other = factories.tenant("Acme"), factories.tenant("Zorgco")
    ana = factories.member(acme, "ana")
    boss = factories.member(acme, "boss", Membership.Role.TENANT_ADMIN)
    olaf = factories.member(other, "olafsecret")
    olafs_token, _ = ApiToken.objects.issue(olaf, "olafs-token")
    host = Host.objects.filter(clusters__isnull=False).first()
    ClusterAssignment.objects.all().delete()  # the seed gave the cluster to its own tenant
    services.assign_cluster(other, host, host.clusters.first().data_dir)
    theirs = {"tenants.Tenant": other.pk, "tenants.Membership": olaf.membership.pk,
              "tenants.ClusterAssignment": other.clusters.get().pk,
              "accounts.ApiToken": olafs_token.pk}
    ids = {label: theirs.get(label) or _first(label) for label in set(SEGMENT_MODELS.values())}
    return {"ids": ids, "ana": ana, "boss": boss, "other": other}


def _first(label: str) -> int:
    """The first object's id; a kind the seed has none of still gets a well-formed id."""
    row = apps.get_model(label).objects.order_by("pk").first()
    return row.pk if row else 999999


def answers(client, path: str) -> dict[str, int]:
    return {method: getattr(client, method)(path).status_code for method in METHODS}


@pytest.mark.parametrize("who", ["ana", "boss"])
def test_no_operator_page_or_endpoint_answers_a_member(world, who, client):
    user = world[who]
    _, raw = ApiToken.objects.issue(user, "walk")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    client.force_login(user)
    allowed = MEMBER_PAGES | (ADMIN_PAGES if who == "boss" else set())
    hosts, operations = Host.objects.count(), Operation.objects.count()
    walked, leaks = 0, []
    for route in routes():
        path = concrete(route, world["ids"])
        if path in allowed or path == "/logout/":
            continue
        by = api if path.startswith("/api/") else client
        for method, status in answers(by, path).items():
            walked += 1
            redirect_home = path == "/" and status == 302
            if status < 300 or (300 <= status < 400 and not redirect_home):
                leaks.append((method, path, status))
    assert walked > 400 and leaks == []
    assert (Host.objects.count(), Operation.objects.count()) == (hosts, operations)


def test_what_members_may_open_shows_nothing_of_another_tenant(world, client):
    for who in ("ana", "boss"):
        client.force_login(world[who])
        _, raw = ApiToken.objects.issue(world[who], "look")
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
        for path in sorted(MEMBER_PAGES | ADMIN_PAGES):
            if path in ("/api/schema/", "/api/docs/", "/login/"):
                continue
            by = api if path.startswith("/api/") else client
            response = by.get(path, follow=True)
            body = response.content.decode()
            assert response.status_code in (200, 403), path
            for theirs in ("olafsecret", "Zorgco", "fuzz tenant", "fuzz-member"):
                assert theirs not in body, (who, path, theirs)


def test_an_operator_page_refuses_a_member_with_403_and_the_api_keeps_its_shape(world,
                                                                                client):
    client.force_login(world["ana"])
    assert client.get("/hosts/add/").status_code == 403
    api = APIClient()
    _, raw = ApiToken.objects.issue(world["ana"], "t")
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    response = api.get("/api/hosts/")
    assert response.status_code == 403
    assert response.json()["error"]["message"] == "This part of PoZoL is for operators."


def test_anonymous_visitors_get_nothing_either(world, client):
    for route in routes():
        path = concrete(route, world["ids"])
        if path in ("/login/", "/logout/", "/api/docs/"):
            continue
        status = client.get(path).status_code
        assert status in (302, 401, 403), path
        if status == 302:
            assert client.get(path).url.startswith("/login/"), path


def test_a_revoked_token_gets_401_everywhere_in_the_api(world, operator):
    token, raw = ApiToken.objects.issue(operator, "gone")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert api.get("/api/hosts/").status_code == 200
    token.revoked_at = token.created_at
    token.save()
    api_paths = [p for p in (concrete(r, world["ids"]) for r in routes())
                 if p.startswith("/api/") and p != "/api/docs/"]
    for path in api_paths:
        for method, status in answers(api, path).items():
            assert status == 401, (method, path, status)
