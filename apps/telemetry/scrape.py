"""GET /metrics for a Prometheus server: a scrape token or an allowed address.

Not the API (no user, no session): a scraper presents the bearer token of
POZOL_METRICS_TOKEN, or scrapes from an address inside POZOL_METRICS_ALLOWED_CIDRS
(the client address as the API throttles see it, honouring POZOL_PROXY_COUNT).
Either suffices. With neither configured /metrics is off (403). A missing or
wrong token is a 401 naming the Bearer scheme; an address outside the list with
no token to try is a 403. The body is the Prometheus text format, made by
apps.telemetry.prometheus in a registry of this request's own.
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from apps.accounts.roles import members_allowed
from apps.accounts.throttling import client_ip
from apps.telemetry.prometheus import FleetCollector

OFF = ("/metrics is off: set POZOL_METRICS_TOKEN (a bearer token for the scraper) or "
       "POZOL_METRICS_ALLOWED_CIDRS (the scraper's addresses).\n")


@members_allowed  # its own authorization below: a signed-in session plays no part
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    refused = refusal(request)
    if refused is not None:
        return refused
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def refusal(request: HttpRequest) -> HttpResponse | None:
    token: str = settings.POZOL["METRICS_TOKEN"]
    networks = settings.POZOL["METRICS_ALLOWED_CIDRS"]
    if not token and not networks:
        return _text(403, OFF)
    if networks and _address_allowed(client_ip(request), networks):
        return None
    if token:
        given = _bearer(request)
        if given is not None and hmac.compare_digest(given.encode(), token.encode()):
            return None
        answer = _text(401, "A scrape token is needed: Authorization: Bearer <token>.\n"
                       if given is None else "The scrape token is wrong.\n")
        answer["WWW-Authenticate"] = 'Bearer realm="pozol-metrics"'
        return answer
    return _text(403, "This address may not scrape /metrics.\n")


def _bearer(request: HttpRequest) -> str | None:
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def _address_allowed(address: str | None, networks: list) -> bool:
    try:
        client = ipaddress.ip_address(address or "")
    except ValueError:
        return False  # no readable address: never inside a list
    if isinstance(client, ipaddress.IPv6Address) and client.ipv4_mapped:
        client = client.ipv4_mapped
    return any(client in network for network in networks)


def _text(status: int, text: str) -> HttpResponse:
    return HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")
