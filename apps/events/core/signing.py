"""The bytes sent for an event and their signature.

The body is the event as JSON with sorted keys and no spaces, so the same event
is the same bytes on every attempt. Each attempt carries its own timestamp and
signs `"<timestamp>." + body` with HMAC-SHA256 under the subscription's secret
(the scheme Stripe and Slack use): a receiver recomputes it, compares in
constant time and refuses a timestamp older than it tolerates (a replay of a
captured request), then dedupes by the event id (a retry of a delivery it had
taken is the same id).

Headers: X-PoZoL-Event (the kind), X-PoZoL-Event-Id, X-PoZoL-Timestamp (unix
seconds) and X-PoZoL-Signature (`v1=<hex>`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

VERSION = "v1"
DEFAULT_TOLERANCE = 300  # seconds a receiver should accept a timestamp for


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def body_of(event: dict) -> bytes:
    return json.dumps(event, sort_keys=True, separators=(",", ":"), default=str).encode()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"{VERSION}={mac.hexdigest()}"


def headers(secret: str, timestamp: int, body: bytes, kind: str, event_id: str) -> dict:
    return {"Content-Type": "application/json", "User-Agent": "PoZoL-events",
            "X-PoZoL-Event": kind, "X-PoZoL-Event-Id": event_id,
            "X-PoZoL-Timestamp": str(timestamp),
            "X-PoZoL-Signature": signature(secret, timestamp, body)}


def verify(secret: str, timestamp: str, body: bytes, given: str, *, now: int,
           tolerance: int = DEFAULT_TOLERANCE) -> bool:
    """What a receiver does (and the tests do): the signature matches and is recent."""
    try:
        at = int(timestamp)
    except (TypeError, ValueError):
        return False
    if abs(now - at) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, at, body), given or "")
