"""Malformed output is read as far as it goes and never raises (hypothesis)."""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rates import rates
from tests.telemetry.core.helpers import T0, fuse_spec, openzfs_spec
from tests.telemetry.fixtures import captured, frame, openzfs_sections

REAL = [captured(1)[0], captured(2)[0], frame(openzfs_sections())]
SPECS = [fuse_spec(), fuse_spec(), openzfs_spec()]


@st.composite
def mangled(draw):
    """A real answer with lines dropped, duplicated, cut, garbled or replaced by noise."""
    index = draw(st.integers(0, len(REAL) - 1))
    lines = REAL[index].splitlines()
    for _ in range(draw(st.integers(1, 12))):
        at = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "dup", "cut", "noise", "swap", "digit"]))
        if action == "drop":
            del lines[at]
        elif action == "dup":
            lines.insert(at, lines[at])
        elif action == "cut":
            lines[at] = lines[at][:draw(st.integers(0, max(0, len(lines[at]) - 1)))]
        elif action == "digit":  # isdigit() says yes, int() says no
            lines[at] = re.sub(r"[0-9]", draw(st.sampled_from(["²", "٣", "x"])), lines[at],
                               count=1)
        elif action == "noise":
            lines[at] = draw(st.text(max_size=40))
        else:
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        if not lines:
            break
    return index, "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(mangled())
def test_mangled_real_answers_never_raise(case):
    index, text = case
    sample = parse_sample(text, SPECS[index], T0)
    before = parse_sample(REAL[index], SPECS[index], T0 - timedelta(minutes=1))
    assert rates(before, sample).seconds == 60


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_never_raises(text):
    sample = parse_sample(text, openzfs_spec(), T0)
    assert sample.arc is None or sample.arc.hits is None or sample.arc.hits >= 0
