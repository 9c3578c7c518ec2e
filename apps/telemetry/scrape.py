"""GET /metrics for a Prometheus server: a scrape token or an allowed address.

Not the API (no user, no session): a scraper presents the bearer token of
POZOL_METRICS_TOKEN, or scrapes from an address inside POZOL_METRICS_ALLOWED_CIDRS
(the client address as the API throttles see it, honouring POZOL_PROXY_COUNT).
Either suffices. With neither configured /metrics is off (403). A missing or
wrong token is a 401 naming the Bearer scheme; an address outside the list with
no token to try is a 403. The body is the Prometheus text format, made by
apps.telemetry.prometheus for this request. `?shard=I&shards=N` (both, whole
numbers, 0 <= I < N <= MAX_SHARDS) serves one shard of the hosts (Shard); a
missing half, a bad number or a shard out of range is a 400 saying the form.
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from apps.accounts.roles import members_allowed
from apps.accounts.throttling import client_ip
from apps.telemetry.prometheus import FleetCollector
from apps.telemetry.shards import MAX_SHARDS, WHOLE, Shard

OFF = ("/metrics is off: set POZOL_METRICS_TOKEN (a bearer token for the scraper) or "
       "POZOL_METRICS_ALLOWED_CIDRS (the scraper's addresses).\n")


@members_allowed  # its own authorization below: a signed-in session plays no part
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    refused = refusal(request)
    if refused is not None:
        return refused
    shard = _shard(request)
    if isinstance(shard, HttpResponse):
        return shard
    return HttpResponse(FleetCollector(shard=shard).text(), content_type=CONTENT_TYPE_LATEST)


def _shard(request: HttpRequest) -> Shard | HttpResponse:
    """?shard=I&shards=N: one shard of the hosts (both or neither); a 400 otherwise."""
    index, count = request.GET.get("shard"), request.GET.get("shards")
    if index is None and count is None:
        return WHOLE
    usage = (f"Shard with both ?shard=I&shards=N, whole numbers with 0 <= I < N <= "
             f"{MAX_SHARDS} (each host is in shard host id mod N).\n")
    if index is None or count is None:
        return _text(400, usage)
    try:
        return Shard(_whole_number(index), _whole_number(count))
    except ValueError:
        return _text(400, usage)


def _whole_number(text: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        raise ValueError(text)
    return int(text)


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
