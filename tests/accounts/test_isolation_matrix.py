"""The isolation matrix: every page and API route (walked from the URL conf) x every
method x six personas: an operator, a member of tenant A, a member of tenant B, a
tenant admin of A, a revoked token (A's member's) and an anonymous visitor.

The URLs name tenant A's objects (its tenant, membership, cluster, clone, token) and
the fleet's first object of every other kind. Each answer is checked against the
status its persona and route should get, and every body a tenant's persona gets is
searched for the other tenant's names: none may appear. The matrix's size is printed.
"""

from __future__ import annotations

import time

import pytest
from django.test import Client
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken
from apps.tenants import services as tenant_services
from apps.tenants.models import Membership
from tests.accounts.api_seed import seed
from tests.accounts.test_authorization import METHODS, _first, concrete, routes
from tests.clones import factories as clones
from tests.tenants import factories as tenants

pytestmark = pytest.mark.django_db

# Routes a member opens (each scopes what it shows); ADMIN_ONLY: a tenant admin's too.
MEMBER_ROUTES = {"/account/", "/account/tokens/", "/api/tenants/", "/api/memberships/",
                 "/api/tokens/", "/api/clones/", "/api/cluster-assignments/", "/clones/",
                 "/api/schema/", "/api/clones/usage/"}
ADMIN_ONLY_PREFIXES = ("/audit/", "/api/audit-events/")
PUBLIC = {"/login/", "/api/docs/"}
SCRAPER_ONLY = {"/metrics"}
# Routes naming one of tenant A's objects: A's personas reach it, B's find nothing.
TENANT_OBJECT_PREFIXES = (
    "/tenants/{tenant}/", "/api/tenants/{tenant}/", "/api/memberships/{membership}/",
    "/tenants/members/{membership}/", "/api/cluster-assignments/{assignment}/",
    "/clones/clusters/{assignment}/", "/api/clones/{clone}/", "/clones/{clone}/",
    "/api/tokens/{token}/", "/account/tokens/{token}/")
# Where members may read but never write: a write is refused before any lookup (403,
# the same answer whether the object exists or not).
MEMBERS_READ_ONLY = ("/api/tenants/", "/api/cluster-assignments/")
# The seed's own tenant ("fuzz tenant") is a third one neither may read.
OTHERS = ("fuzz tenant", "fuzz-member")
MARKS = {"A": ("Acmecorp", "anasecret", "acme-clone", "acme-db", "anas-token", "bossacme",
               *OTHERS),
         "B": ("Zorgcorp", "olafsecret", "zorg-clone", "zorg-db", "olafs-token", *OTHERS)}


@pytest.fixture
def world(operator):
    seed(operator)
    acme, zorg = tenants.tenant("Acmecorp"), tenants.tenant("Zorgcorp")
    made = {}
    for tag, tenant, member, token_name in (("acme", acme, "anasecret", "anas-token"),
                                            ("zorg", zorg, "olafsecret", "olafs-token")):
        host = clones.host(f"{tag}-db")
        clones.cluster(host)
        clones.snapshots(host)
        assignment = tenant_services.assign_cluster(tenant, host, "/tank/pg/data/pgdata")
        user = tenants.member(tenant, member)
        clone = clones.clone(host, f"{tag}-clone", tenant=tenant, created_by=user)
        token, _ = ApiToken.objects.issue(user, token_name)
        made[tag] = {"tenant": tenant, "host": host, "assignment": assignment, "user": user,
                     "clone": clone, "token": token}
    boss = tenants.member(acme, "bossacme", Membership.Role.TENANT_ADMIN)
    a = made["acme"]
    ids = {label: _first(label) for label in set(_labels())}
    ids.update({"tenants.Tenant": a["tenant"].pk, "tenants.Membership": a["user"].membership.pk,
                "tenants.ClusterAssignment": a["assignment"].pk, "clones.Clone": a["clone"].pk,
                "accounts.ApiToken": a["token"].pk})
    return {"ids": ids, "made": made, "boss": boss, "operator": operator}


def _labels():
    from apps.audit.subjects import SEGMENT_MODELS

    return SEGMENT_MODELS.values()


def _tenant_object_paths(made: dict) -> tuple[str, ...]:
    a = made["acme"]
    values = {"tenant": a["tenant"].pk, "membership": a["user"].membership.pk,
              "assignment": a["assignment"].pk, "clone": a["clone"].pk, "token": a["token"].pk}
    return tuple(prefix.format(**values) for prefix in TENANT_OBJECT_PREFIXES)


def _personas(world) -> dict:
    """name -> (page client, API client, tenant tag or None)."""
    made = world["made"]

    def as_user(user):
        page = Client()
        page.force_login(user)
        _, raw = ApiToken.objects.issue(user, "matrix")
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
        return page, api

    revoked, raw = ApiToken.objects.issue(made["acme"]["user"], "matrix-revoked")
    revoked.revoked_at = revoked.created_at
    revoked.save()
    gone = APIClient()
    gone.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    gone_page = Client(HTTP_AUTHORIZATION=f"Token {raw}")
    # Strangers first: the tenant's own personas and the operator change things.
    return {"anonymous": (Client(), APIClient(), None),
            "revoked token": (gone_page, gone, None),
            "member of B": (*as_user(made["zorg"]["user"]), "B"),
            "member of A": (*as_user(made["acme"]["user"]), "A"),
            "tenant admin of A": (*as_user(world["boss"]), "A"),
            "operator": (*as_user(world["operator"]), None)}


def expected(persona: str, path: str, method: str, own: tuple[str, ...], status: int,
             owners: int | None) -> bool:
    """Whether `status` is what `persona` should get for `method` on `path`; `owners` is
    what tenant A's member got for the same request."""
    api = path.startswith("/api/")
    if path in SCRAPER_ONLY:
        return status in (401, 403, 405)  # its own bearer token or address, no one's session
    if path in PUBLIC:
        # A token sent to the API's docs is checked like any other: a revoked one is a 401.
        return status < 500 and status not in (401, 403) or (
            persona == "revoked token" and status == 401)
    if persona == "anonymous":
        return status in ((401, 403) if api else (302, 405))
    if persona == "revoked token":
        return status == 401 if api else status in (302, 405)  # a page: no one signed in
    if persona == "operator":
        return status < 500 and status not in (401, 403)
    if path == "/":
        return status == 302  # the member's landing
    if path.startswith(own):
        if persona != "member of B":
            return status < 500 and status != 401
        # Another tenant's object is not found; a request refused whoever asks (a method
        # the route does not take, a route members may not use) is refused the same way
        # as for the object's own tenant, which tells nothing.
        return status == 404 or (status in (403, 405) and status == owners)
    if path.startswith(ADMIN_ONLY_PREFIXES):
        if persona == "tenant admin of A":
            return status < 500 and status != 401
        return status in (403, 405)
    if path in MEMBER_ROUTES:
        return status < 500 and status not in (401, 404)
    return status in (403, 405)  # operator-only by default


def test_the_isolation_matrix(world, capsys):
    own = _tenant_object_paths(world["made"])
    paths = sorted({concrete(route, world["ids"]) for route in routes()} - {"/logout/"})
    personas = _personas(world)
    statuses, leaks, took = {}, [], {}
    for persona, (page, api, tag) in personas.items():
        started = time.monotonic()
        theirs = MARKS["B" if tag == "A" else "A"] if tag else ()
        for path in paths:
            api_route = path.startswith("/api/")
            client = api if api_route else page
            # Pages take GET and POST only (Django's forms); the API every method,
            # OPTIONS too (its metadata must not tell that a hidden object exists).
            for method in (*METHODS, "options") if api_route else ("get", "post"):
                response = getattr(client, method)(path)
                statuses[persona, path, method] = response.status_code
                body = response.content.decode(errors="replace")
                leaks += [(persona, method, path, mark) for mark in theirs if mark in body]
        took[persona] = round(time.monotonic() - started, 1)
    wrong = [(persona, method, path, status)
             for (persona, path, method), status in statuses.items()
             if not expected(persona, path, method, own, status,
                             statuses.get(("member of A", path, method)))]
    with capsys.disabled():
        print(f"\nisolation matrix: {len(paths)} routes x {len(personas)} personas = "
              f"{len(paths) * len(personas)} (x methods = {len(statuses)} requests); "
              f"{len(wrong)} unexpected statuses, {len(leaks)} leaks; seconds per persona "
              f"{took}")
        for row in wrong[:80] + leaks[:40]:
            print(row)
    assert wrong == [] and leaks == []
    assert len(statuses) > 2000
