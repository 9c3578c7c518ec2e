"""Real local receivers for alert deliveries: an SMTP sink (aiosmtpd) and an HTTP
server (http.server in a thread), each on a free port, stopped by the test."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller


@dataclass
class MailSink:
    messages: list[Message] = field(default_factory=list)
    port: int = 0

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        message = message_from_bytes(envelope.content)
        message["X-Rcpt-To"] = ", ".join(envelope.rcpt_tos)
        self.messages.append(message)
        return "250 OK"

    def subjects(self) -> list[str]:
        return [str(m["Subject"]) for m in self.messages]


def free_port() -> int:
    """A port free now (aiosmtpd's start-up check cannot use port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def smtp_sink() -> Iterator[MailSink]:
    sink = MailSink(port=free_port())
    controller = Controller(sink, hostname="127.0.0.1", port=sink.port)
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()


@dataclass
class Receiver:
    """What the HTTP receiver got; `statuses` are answered in turn (then 200)."""

    statuses: list[int] = field(default_factory=list)
    bodies: list[dict] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that answers with a status and an empty body, and logs nothing."""

    def answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):  # quiet
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """An HTTP server of `handler` on a free loopback port, in a thread; yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def http_receiver(statuses: list[int] | None = None) -> Iterator[Receiver]:
    receiver = Receiver(statuses=list(statuses or []))
    lock = threading.Lock()

    class Handler(QuietHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            with lock:
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                if status < 300:
                    receiver.bodies.append(body)
            self.answer(status)

    with serving(Handler) as receiver.port:
        yield receiver
