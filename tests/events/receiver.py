"""A real local HTTP receiver of events that does what an automation's should: verify
the signature and timestamp, refuse what does not match (401), dedupe by event id."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from apps.events.core import signing
from tests.alerts.receivers import QuietHandler, serving


@dataclass
class EventReceiver:
    secret: str = ""
    statuses: list[int] = field(default_factory=list)  # answered in turn (then 200)
    events: dict[str, dict] = field(default_factory=dict)  # by id: what it accepted
    requests: int = 0
    refused: int = 0
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/events"

    def kinds(self) -> list[str]:
        return sorted(event["kind"] for event in self.events.values())


@contextmanager
def event_receiver(statuses: list[int] | None = None) -> Iterator[EventReceiver]:
    receiver = EventReceiver(statuses=list(statuses or []))
    lock = threading.Lock()

    class Handler(QuietHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            good = signing.verify(receiver.secret, self.headers.get("X-PoZoL-Timestamp"),
                                  body, self.headers.get("X-PoZoL-Signature"),
                                  now=int(time.time()))
            with lock:
                receiver.requests += 1
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                if not good:
                    receiver.refused += 1
                    status = 401
                elif status < 300:
                    event = json.loads(body)
                    assert event["id"] == self.headers["X-PoZoL-Event-Id"]
                    receiver.events.setdefault(event["id"], event)  # dedupe by id
            self.answer(status)

    with serving(Handler) as receiver.port:
        yield receiver
