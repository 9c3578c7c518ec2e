"""Properties of rates over arbitrary counter sequences (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.telemetry.core.rates import delta, rates
from tests.telemetry.core.helpers import PG_KEY, arc, pg, sample

counters = st.integers(min_value=0, max_value=2**63 - 1)
seconds = st.integers(min_value=1, max_value=86_400)


@given(counters, counters, counters, counters, seconds)
def test_never_negative_and_unknown_exactly_when_a_counter_went_down(c1, r1, c2, r2, interval):
    before = sample(0, stats=pg(xact_commit=c1, xact_rollback=r1))
    after = sample(interval, stats=pg(xact_commit=c2, xact_rollback=r2))
    tps = rates(before, after).clusters[PG_KEY].tps
    if c2 < c1 or r2 < r1:
        assert tps is None
    else:
        assert tps is not None and tps >= 0
        assert tps == pytest.approx(((c2 - c1) + (r2 - r1)) / interval, rel=1e-9)


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=3, max_size=30),
       st.lists(seconds, min_size=29, max_size=29))
def test_a_missed_sample_gives_the_interval_average_of_the_rates_it_skipped(steps, gaps):
    # A monotonic counter sampled at increasing times: the rate over a skipped sample is
    # the time-weighted mean of the two rates it replaces.
    values = [sum(steps[:i + 1]) for i in range(len(steps))]
    times = [sum(gaps[:i]) for i in range(len(values))]
    samples = [sample(t, stats=pg(xact_commit=v, xact_rollback=0)) for t, v in zip(times, values,
                                                                               strict=False)]
    for a, b, c in zip(samples, samples[1:], samples[2:], strict=False):
        ab, bc = rates(a, b).clusters[PG_KEY].tps, rates(b, c).clusters[PG_KEY].tps
        ac = rates(a, c).clusters[PG_KEY].tps
        t_ab = (b.taken_at - a.taken_at).total_seconds()
        t_bc = (c.taken_at - b.taken_at).total_seconds()
        assert abs(ac - (ab * t_ab + bc * t_bc) / (t_ab + t_bc)) <= 1e-6 * max(1, ac)


@given(counters, counters, counters, counters)
def test_arc_hit_ratio_is_a_ratio_or_unknown(h1, m1, h2, m2):
    result = rates(sample(0, arc_=arc(hits=h1, misses=m1)),
                   sample(60, arc_=arc(hits=h2, misses=m2))).arc
    grown = (delta(h1, h2), delta(m1, m2))
    if None in grown or sum(grown) == 0:
        assert result.hit_ratio is None
    else:
        assert 0 <= result.hit_ratio <= 1
