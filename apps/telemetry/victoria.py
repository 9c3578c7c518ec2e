"""Telemetry history in VictoriaMetrics (POZOL_TELEMETRY_STORE=victoriametrics).

A collector round's samples go to VictoriaMetrics in one POST of Prometheus text
(/api/v1/import/prometheus, apps.telemetry.core.vmformat), sent from a thread of its
own while the round's database writes run; a chart's series come back from
/api/v1/query_range with a step that fits its window (the sampling interval up to
the raw retention's 48 hours, 5 minutes up to 1,000 points, then an hour: the
resolutions of the PostgreSQL store). The database keeps what the overview, /metrics
and alerts read now (HostTelemetry, a few minutes of raw rows); VictoriaMetrics'
-retentionPeriod keeps the history, and the rollup upkeep does not run.

A VictoriaMetrics that is down, slow or refusing: the round's write is logged as
failed (the database's part is written either way) and the round is sent again
before the next one, up to BACKLOG_BYTES of rounds (the oldest dropped beyond,
logged as lost; a round refused with a client error is dropped at once, logged);
a chart's read raises StoreUnavailable, a 503 with a sentence.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from datetime import datetime, timedelta

import requests
from django.conf import settings

from apps.telemetry.core import vmformat
from apps.telemetry.core.metrics import Metric, Series

logger = logging.getLogger("pozol.telemetry")


class StoreUnavailable(Exception):
    """VictoriaMetrics did not take or answer a request (down, slow, refusing)."""


class StoreRefused(StoreUnavailable):
    """VictoriaMetrics answered a write with a client error: sent again, it would be
    refused again."""


def enabled() -> bool:
    return settings.POZOL["TELEMETRY_STORE"] == "victoriametrics"


def _url(path: str) -> str:
    return settings.POZOL["VICTORIAMETRICS_URL"] + path


def _timeout() -> float:
    return settings.POZOL["VICTORIAMETRICS_TIMEOUT"]


# One session per process: the round's POST reuses the connection of the last.
_session = requests.Session()


def write(payload: str) -> None:
    """One round's text-format lines in one request."""
    if not payload:
        return
    try:
        answer = _session.post(_url("/api/v1/import/prometheus"), data=payload.encode(),
                               timeout=_timeout())
    except requests.RequestException as error:
        raise StoreUnavailable(f"VictoriaMetrics at {settings.POZOL['VICTORIAMETRICS_URL']} "
                               f"did not take the samples: {error}") from error
    if answer.status_code >= 300:
        refused = StoreRefused if 400 <= answer.status_code < 500 else StoreUnavailable
        raise refused(f"VictoriaMetrics refused the samples: HTTP "
                      f"{answer.status_code} {answer.text[:300]}")


# Rounds VictoriaMetrics did not take wait here, in the collector's memory, and are
# sent again before the next round's, oldest first, each in its own request: an
# outage of a quarter of an hour loses nothing. Past this many bytes (17 rounds of
# 10,000 hosts, days of a small fleet) the oldest are dropped.
BACKLOG_BYTES = 256 * 1024 * 1024
_backlog: deque[str] = deque()


def write_round(payload: str, hosts: int) -> bool:
    """This round (after any waiting); a failure logged, never raised: the round's
    database part is written either way. A round VictoriaMetrics could not take waits
    for the next; one it refused (a client error) is dropped, logged as lost."""
    started = time.monotonic()
    _backlog.append(payload)
    sent = 0
    try:
        while _backlog:
            write(_backlog[0])
            _backlog.popleft()
            sent += 1
    except StoreRefused as error:
        lost = _backlog.popleft()
        logger.error("telemetry: VictoriaMetrics refused a round's samples (%d lines lost): "
                     "%s", lost.count("\n"), error)
        return False
    except StoreUnavailable as error:
        _trim()
        logger.error("telemetry: VictoriaMetrics did not take this round's samples of %d "
                     "hosts (%d lines); %d rounds wait in this process to be sent again "
                     "with the next: %s", hosts, payload.count("\n"), len(_backlog), error)
        return False
    logger.info("telemetry: %d hosts' samples written to VictoriaMetrics in %.3f s%s", hosts,
                time.monotonic() - started,
                f" after {sent - 1} earlier rounds it had not taken" if sent > 1 else "")
    return True


def _trim() -> None:
    while sum(len(p) for p in _backlog) > BACKLOG_BYTES and len(_backlog) > 1:
        dropped = _backlog.popleft()
        logger.error("telemetry: the oldest round waiting for VictoriaMetrics was dropped "
                     "(over %d MiB wait): %d lines lost", BACKLOG_BYTES >> 20,
                     dropped.count("\n"))


def query_range(query: str, start: datetime, end: datetime, step: timedelta) -> object:
    """/api/v1/query_range's JSON answer."""
    # nocache: with its result cache VictoriaMetrics moves the window to multiples of
    # the step, and a chart that ends now would end up to a step before its newest
    # sample; one host's series read from the samples is cheap.
    params = {"query": query, "start": f"{start.timestamp():.3f}",
              "end": f"{end.timestamp():.3f}", "step": f"{int(step.total_seconds())}s",
              "nocache": "1"}
    try:
        answer = _session.get(_url("/api/v1/query_range"), params=params, timeout=_timeout())
    except requests.RequestException as error:
        raise StoreUnavailable(f"VictoriaMetrics did not answer: {error}") from error
    if answer.status_code != 200:
        raise StoreUnavailable(f"VictoriaMetrics refused the query: HTTP "
                               f"{answer.status_code} {answer.text[:300]}")
    try:
        return answer.json()
    except ValueError as error:
        raise StoreUnavailable("VictoriaMetrics answered something that is not JSON") from error


def series(host_id: int, metric: Metric, start: datetime, end: datetime,
           step: timedelta) -> list[Series]:
    """The metric's series of one host, one per key (sorted), as the charts draw them."""
    answer = query_range(vmformat.range_query(metric.name, host_id, step), start, end, step)
    try:
        found = vmformat.parse_matrix(answer, step)
    except vmformat.ParseError as error:
        raise StoreUnavailable(f"VictoriaMetrics' answer could not be read: {error}") from error
    return [Series(key, found[key]) for key in sorted(found, key=lambda k: k or "")]
