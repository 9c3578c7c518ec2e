"""The VictoriaMetrics store against the real binary, without test hosts: a round of
many hosts is one import request, a store that hangs gives the chart its 503 within
the timeout, upkeep keeps only the raw rows' tail, and the settings refuse a typo.
Real hosts: tests/integration/test_telemetry_victoriametrics.py."""

from __future__ import annotations

import logging
import socket
import threading
from datetime import timedelta

import pytest
import requests
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from apps.telemetry import services, victoria
from apps.telemetry.models import RawSample, Rollup
from pozol.settings import telemetry_store, victoriametrics_url
from tests.telemetry.fixtures import captured
from tests.telemetry.test_services import fake_ssh, pinned  # noqa: F401 (a fixture)
from tests.telemetry.victoriametrics import victoriametrics  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def posts(monkeypatch) -> list[str]:
    """The URLs the product POSTs to, each request still sent (VictoriaMetrics 1.79's
    own request counters lag, so the test counts here)."""
    sent = []
    real = victoria._session.post

    def post(url, **kwargs):
        sent.append(url)
        return real(url, **kwargs)
    monkeypatch.setattr(victoria._session, "post", post)
    return sent


def test_a_round_of_many_hosts_is_one_request_with_every_host_s_series(
        fake_ssh, victoriametrics, posts):  # noqa: F811
    hosts = [pinned(f"db{i}") for i in range(6)]
    fake_ssh({h.name: [captured(1)[0]] for h in hosts})

    taken = services.collect_fleet()

    assert all(t.sample is not None for t in taken) and len(taken) == 6
    assert posts == [f"{victoriametrics.url}/api/v1/import/prometheus"]
    victoriametrics.flush()
    now = timezone.now().timestamp()
    found = requests.get(f"{victoriametrics.url}/api/v1/series", params={
        "match[]": "pozol_telemetry_pool_capacity", "start": f"{now - 600:.0f}",
        "end": f"{now + 60:.0f}"}, timeout=10).json()["data"]
    assert sorted(int(s["host_id"]) for s in found) == sorted(h.pk for h in hosts)
    assert {s["key"] for s in found} == {"tank"}


def test_a_round_s_post_goes_while_its_database_writes_run(
        fake_ssh, victoriametrics, monkeypatch):  # noqa: F811
    """The round's INSERT and UPDATE wait here until VictoriaMetrics has the round's
    samples: a POST sent after them would never come."""
    posted = threading.Event()
    real_post, real_apply = victoria._session.post, services._apply_round

    def post(url, **kwargs):
        answer = real_post(url, **kwargs)
        posted.set()
        return answer

    waited = []

    def apply():
        waited.append(posted.wait(timeout=30))
        real_apply()
    monkeypatch.setattr(victoria._session, "post", post)
    monkeypatch.setattr(services, "_apply_round", apply)
    host = pinned("db1")
    fake_ssh({"db1": [captured(1)[0]]})

    [taken] = services.collect_fleet()

    assert taken.sample is not None and waited == [True]
    assert RawSample.objects.filter(host=host).count() == 1


@pytest.fixture
def silent(settings):
    """A port that accepts connections and never answers: a hung VictoriaMetrics."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        settings.POZOL = {**settings.POZOL, "TELEMETRY_STORE": "victoriametrics",
                          "VICTORIAMETRICS_URL": f"http://127.0.0.1:{listener.getsockname()[1]}",
                          "VICTORIAMETRICS_TIMEOUT": 1}
        yield
    victoria._backlog.clear()


def test_a_store_that_hangs_is_a_clear_503_and_a_logged_round(
        silent, fake_ssh, signed_in, caplog):  # noqa: F811
    host = pinned("db1")
    fake_ssh({"db1": [captured(1)[0]]})
    with caplog.at_level(logging.ERROR, logger="pozol.telemetry"):
        [taken] = services.collect_fleet()
    assert taken.sample is not None
    assert any("VictoriaMetrics did not take this round" in r.getMessage()
               and "timed out" in r.getMessage() for r in caplog.records)

    answer = signed_in.get(f"/telemetry/hosts/{host.pk}/charts/arc-size/", {"range": "6h"})
    assert answer.status_code == 503
    assert answer.json()["code"] == "telemetry_store_unavailable"


def test_rounds_not_taken_wait_oldest_first_and_go_past_the_limit(monkeypatch, caplog):
    """write() itself is the real request (the tests above); here it is a stand-in that
    is down, refuses, or takes, to follow what waits."""
    sent, state = [], {"now": "down"}

    def write(payload):
        if state["now"] == "down":
            raise victoria.StoreUnavailable("connection refused")
        if state["now"] == "refuse" and payload.startswith("bad"):
            raise victoria.StoreRefused("HTTP 400")
        sent.append(payload)
    monkeypatch.setattr(victoria, "write", write)
    monkeypatch.setattr(victoria, "BACKLOG_BYTES", 10)
    victoria._backlog.clear()
    with caplog.at_level(logging.ERROR, logger="pozol.telemetry"):
        assert not victoria.write_round("a 1\n", 1)
        assert not victoria.write_round("b 2\n", 1)
        assert not victoria.write_round("c 3\n", 1)  # over 10 bytes wait: "a" dropped
        state["now"] = "up"
        assert victoria.write_round("d 4\n", 1)
        state["now"] = "refuse"
        assert not victoria.write_round("bad 5\n", 1)
        assert victoria.write_round("e 6\n", 1)
    assert sent == ["b 2\n", "c 3\n", "d 4\n", "e 6\n"] and not victoria._backlog
    messages = [r.getMessage() for r in caplog.records]
    assert any("dropped" in m and "1 lines lost" in m for m in messages)
    assert any("refused a round's samples (1 lines lost)" in m for m in messages)


def test_upkeep_keeps_the_raw_tail_and_makes_no_rollups(fake_ssh, victoriametrics):  # noqa: F811
    pinned("db1")
    fake_ssh({"db1": [captured(1)[0]]})
    services.collect_fleet()
    taken_at = RawSample.objects.get().taken_at

    assert services.maintain(taken_at + timedelta(minutes=9)).pruned == 0
    assert services.maintain(taken_at + timedelta(minutes=11)).pruned == 1
    assert not RawSample.objects.exists() and not Rollup.objects.exists()


def test_the_settings_refuse_an_unknown_store_and_a_missing_or_bad_url():
    assert telemetry_store("") == "postgres"
    assert telemetry_store("VictoriaMetrics") == "victoriametrics"
    with pytest.raises(ImproperlyConfigured, match="POZOL_TELEMETRY_STORE='prometheus'"):
        telemetry_store("prometheus")
    with pytest.raises(ImproperlyConfigured, match="needs POZOL_VICTORIAMETRICS_URL"):
        victoriametrics_url("", "victoriametrics")
    with pytest.raises(ImproperlyConfigured, match="expected http"):
        victoriametrics_url("127.0.0.1:8428", "victoriametrics")
    assert victoriametrics_url("http://127.0.0.1:8428/", "victoriametrics") == (
        "http://127.0.0.1:8428")
    assert victoriametrics_url("", "postgres") == ""
