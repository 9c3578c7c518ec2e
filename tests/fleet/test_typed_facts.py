"""Recorded facts read back typed, the shape tuning reads: Host.typed_facts."""

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
