"""Webhook URLs the operator allowed, and the bodies sent to them.

PoZoL must not become a way to reach internal services with a URL somebody
typed (SSRF): a webhook may only go where the operator's allowlist
(POZOL_ALERT_WEBHOOK_ALLOW) says. An entry is a network (`10.1.0.0/16`, an
address) or a host name (`hooks.slack.com`). An address is allowed when it is
inside an allowed network; a listed name allows that name, but only its
public (global) addresses, so a name pointed at 127.0.0.1 or 169.254.169.254
later is refused unless that network is listed too. The check runs when a
channel is saved and again on the addresses resolved at send time, and the
request then goes to the address that was checked (no second lookup).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Refused(ValueError):
    """A URL or an address the allowlist does not let a webhook reach."""


@dataclass(frozen=True)
class Allowlist:
    networks: tuple[Network, ...]
    names: frozenset[str]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Allowlist:
        networks, names = [], set()
        for entry in (e.strip().lower() for e in entries):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                names.add(entry.rstrip("."))
        return cls(tuple(networks), frozenset(names))

    def allows(self, host: str, address: Address) -> bool:
        if any(address in network for network in self.networks):
            return True
        return host in self.names and address.is_global


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # lower case, no brackets
    port: int
    path: str  # with the query


def parse_url(url: str, allow: Allowlist) -> Target:
    """The URL's parts, or Refused saying why. Names are resolved later."""
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise Refused("the URL contains spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise Refused("only http:// and https:// URLs are allowed")
    if parts.username or parts.password:
        raise Refused("credentials in the URL are not allowed; put a token in its path")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("the URL has no host")
    literal = _literal(host)
    if literal is not None and not allow.allows(host, literal):
        raise Refused(f"{host} is not in the allowed webhook networks "
                      "(POZOL_ALERT_WEBHOOK_ALLOW)")
    if literal is None and host not in allow.names:
        raise Refused(f"{host} is not an allowed webhook host (POZOL_ALERT_WEBHOOK_ALLOW)")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path)


def checked_address(target: Target, resolved: Iterable[str], allow: Allowlist) -> str:
    """The first resolved address, once every one of them is allowed (a name
    with one internal address among public ones is refused as a whole)."""
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolved]
    if not addresses:
        raise Refused(f"{target.host} does not resolve")
    for address in addresses:
        if not allow.allows(target.host, address):
            raise Refused(f"{target.host} resolves to {address}, which is not allowed "
                          "(POZOL_ALERT_WEBHOOK_ALLOW)")
    return str(addresses[0])


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


# -- bodies ---------------------------------------------------------------------------------

def generic_body(event: dict) -> dict:
    """The generic JSON: the event as it is (see apps.alerts.dispatch.event_of)."""
    return event


def slack_body(event: dict) -> dict:
    """Slack's incoming-webhook shape (also Mattermost, Rocket.Chat): text + blocks."""
    mark = {"firing": ":rotating_light:", "resolved": ":white_check_mark:"}.get(
        event["status"], ":bell:")
    head = f"{mark} [{event['status'].upper()}] {event['title']} on {event['host']}"
    context = f"since {event['since']} · {event['url']}"
    return {"text": f"{head}: {event['message']}",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{head}*"}},
                       {"type": "section", "text": {"type": "plain_text",
                                                    "text": event["message"][:2900]}},
                       {"type": "context", "elements": [
                           {"type": "mrkdwn", "text": context}]}]}
