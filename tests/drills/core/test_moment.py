"""A drill to a moment: the moment drawn over the window's intervals, and the verdict on
the transaction the replay reached."""

import pytest

from apps.drills.core.check import moment_missed
from apps.drills.services import random_moment


def test_the_moment_is_drawn_over_every_interval_of_the_window():
    spans = [[100.0, 110.0], [200.0, 230.0]]
    assert random_moment(spans, pick=lambda low, high: low) == 100.0
    assert random_moment(spans, pick=lambda low, high: 10.0) == 110.0
    assert random_moment(spans, pick=lambda low, high: 10.5) == 200.5
    assert random_moment(spans, pick=lambda low, high: high) == 230.0
    assert high_seen(spans) == 40.0
    assert random_moment([]) is None and random_moment([[5.0, 5.0]]) is None
    for _ in range(200):
        moment = random_moment(spans)
        assert 100 <= moment <= 110 or 200 <= moment <= 230


def high_seen(spans) -> float:
    seen = []
    random_moment(spans, pick=lambda low, high: seen.append(high) or low)
    return seen[0]


@pytest.mark.parametrize(("reached", "words"), [
    (995.0, ""), (1000.0, ""), (1000.0005, ""),
    (None, "applied no transaction"),
    (1001.0, "went past the moment"),
    (900.0, "100 s before the moment, more than archive_timeout (60 s)"),
])
def test_the_replay_must_end_at_the_moment_within_archive_timeout(reached, words):
    verdict = moment_missed(1000.0, reached, 60)
    assert (words in verdict) if words else verdict == ""
