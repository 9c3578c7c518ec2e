"""Recorded facts read back typed, the shape tuning reads: Host.typed_facts."""

import copy
import types

import pytest

from apps.fleet.models import Host
from apps.remote.gather import discover
from tests.remote.fixtures.hosts import replay_transcript

pytestmark = pytest.mark.django_db


def test_recorded_facts_read_back_as_discovery_made_them(replayed_host):
    host = Host.objects.get(pk=replayed_host.pk)  # the JSON column, as a request reads it
    assert host.typed_facts() == discover(replay_transcript())


def test_a_host_not_yet_discovered_has_no_typed_facts():
    assert Host(name="new", facts={}).typed_facts() is None


def test_free_text_longer_than_its_column_is_cut_and_a_long_owner_left_unknown(replayed_host):
    from apps.fleet.steps import record_facts

    facts = copy.deepcopy(replayed_host.facts)
    facts["clusters"][0]["version"] = "15.19 (Debian 15.19-0+deb12u1) built by a long hand"
    facts["clusters"][0]["owner"] = "u" * 40
    facts["pools"][0]["health"] = "DEGRADED " * 10
    record_facts(replayed_host, facts)
    cluster = replayed_host.clusters.get()
    assert cluster.version == facts["clusters"][0]["version"][:32]
    assert cluster.owner == ""
    assert replayed_host.pools.first().health.startswith("DEGRADED")


def test_a_record_that_fails_keeps_the_facts_for_its_retry(replayed_host, monkeypatch):
    from apps.fleet import steps

    state = {"facts": replayed_host.facts, "read_at": "2026-11-29T08:00:00+00:00"}
    monkeypatch.setattr(steps, "record_facts", lambda host, facts, read_at: 1 / 0)
    ctx = types.SimpleNamespace(host=replayed_host, state=state)
    with pytest.raises(ZeroDivisionError):
        steps.record(ctx)
    assert state["facts"] == replayed_host.facts and state["read_at"]
