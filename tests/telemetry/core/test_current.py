"""The overview's current values from two samples, and the sparklines' last hour."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from apps.telemetry.core.current import Current, current, remember
from apps.telemetry.core.metrics import space_saved
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rates import rates
from apps.telemetry.core.spec import spec_from_facts
from tests.telemetry.core.helpers import fuse_facts
from tests.telemetry.fixtures import captured

MINUTE = timedelta(minutes=1)


def _samples():
    spec = spec_from_facts(fuse_facts())
    return [parse_sample(captured(n)[0], spec, captured(n)[1]) for n in (1, 2)]


def test_rates_over_the_last_interval_and_the_fullest_pool():
    first, second = _samples()
    now = current(rates(first, second, MINUTE), second)
    assert 0 <= now.arc_hit_rate <= 1
    assert now.tps > 0
    assert now.capacity == max(p.capacity for p in second.pools)
    assert now.used == sum(d.used for d in second.datasets if "/" not in d.name)
    assert now.space_saved == 0  # compressratio 1.00x on the test host: nothing saved


def test_the_cache_hit_is_the_worst_cluster_s_over_the_interval():
    first, second = _samples()
    interval_rates = rates(first, second, MINUTE)
    ratios = [r.cache_hit_ratio for r in interval_rates.clusters.values()]
    assert ratios and all(r is not None for r in ratios)
    assert current(interval_rates, second).cache_hit_rate == min(ratios)


def test_a_first_sample_or_a_gap_leaves_rates_unknown_not_zero():
    first, second = _samples()
    assert current(rates(None, second, MINUTE), second).arc_hit_rate is None
    late = replace(second, taken_at=first.taken_at + 10 * MINUTE)
    gap = current(rates(first, late, MINUTE), late)
    assert gap.arc_hit_rate is None and gap.tps is None and gap.capacity is not None
    assert gap.cache_hit_rate is None


def test_space_saved_uses_logicalused_or_else_the_ratio():
    assert space_saved({"used": 100, "logicalused": 250, "compressratio": 2.5}) == 150
    assert space_saved({"used": 100, "compressratio": 1.5}) == 50
    assert space_saved({"used": 100}) is None and space_saved({}) is None
    assert space_saved({"used": 300, "logicalused": 200}) == 0  # never negative


def test_remember_keeps_the_last_points_with_their_gaps():
    recent: dict = {}
    for i in range(70):
        value = None if i == 65 else i / 100
        recent = remember(recent, 1000 + 60 * i, Current(value, i * 2.0, 50, 1, 0), keep=60)
    assert len(recent["t"]) == len(recent["arc_hit_rate"]) == len(recent["tps"]) == 60
    assert recent["t"][0] == 1000 + 60 * 10 and recent["tps"][-1] == 138.0
    assert recent["arc_hit_rate"][-5] is None
    assert remember("garbage", 5, Current(None, None, None, None, None))["t"] == [5]
