"""The arithmetic of an experiment's results, pure: the metrics, each value's mean and
spread, and the verdict on a metric."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

# metric -> (label, unit, True when higher is better)
METRICS: dict[str, tuple[str, str, bool]] = {
    "tps": ("TPS", "tps", True),
    "latency_ms": ("latency", "ms", False),
    "wal_per_tx": ("WAL per transaction", "bytes", False),
    "compressratio": ("compression ratio", "x", True),
    "drain_seconds": ("dirty-data drain", "s", False),
    "checkpoints": ("checkpoints crossed", "", True),
}


@dataclass(frozen=True)
class Stat:
    mean: float | None
    spread: float | None  # sample standard deviation; None with fewer than two runs
    n: int

    def to_dict(self) -> dict:
        return {"mean": self.mean, "spread": self.spread, "n": self.n}


def stat(samples: list[float | None]) -> Stat:
    known = [float(s) for s in samples if s is not None and math.isfinite(s)]
    if not known:
        return Stat(None, None, 0)
    spread = statistics.stdev(known) if len(known) > 1 else None
    return Stat(statistics.fmean(known), spread, len(known))


def summarise(values: list[str], runs: list[dict]) -> dict[str, dict[str, Stat]]:
    """Per value, per metric: mean and spread of the finished runs (dicts with `value`
    and metric keys)."""
    return {value: {metric: stat([r.get(metric) for r in runs if r["value"] == value])
                    for metric in METRICS}
            for value in values}


@dataclass(frozen=True)
class Verdict:
    metric: str
    winner: str | None
    text: str

    def to_dict(self) -> dict:
        return {"metric": self.metric, "winner": self.winner, "text": self.text}


def verdict(summary: dict[str, dict[str, Stat]], metric: str) -> Verdict:
    """The best value on `metric`, named only when it beats the runner-up by more than
    their spreads added (mean +- one standard deviation of each do not overlap)."""
    label, unit, higher = METRICS[metric]
    ranked = [(value, stats[metric]) for value, stats in summary.items()
              if stats[metric].mean is not None]
    if len(ranked) < 2:
        return Verdict(metric, None, f"not enough finished runs to compare {label}")
    ranked.sort(key=lambda item: item[1].mean, reverse=higher)
    (best, a), (second, b) = ranked[0], ranked[1]
    if a.spread is None or b.spread is None:
        return Verdict(metric, None, f"{label}: one run per value, so no spread: repeat "
                                     "the runs before naming a winner")
    difference = abs(a.mean - b.mean)
    margin = a.spread + b.spread
    ratio = _ratio(a.mean, b.mean)
    if difference <= margin:
        return Verdict(metric, None, f"{label}: {best} and {second} differ by "
                                     f"{_num(difference)} {unit}, within the spread "
                                     f"({_num(margin)} {unit}): no winner")
    return Verdict(metric, best, f"{label}: {best} wins, {ratio} against {second} "
                                 f"(difference {_num(difference)} {unit} > spread "
                                 f"{_num(margin)} {unit})")


def _ratio(a: float, b: float) -> str:
    if not b:
        return "n/a"
    return f"{a / b:.2f}x" if a >= b else f"{b / a:.2f}x lower"


def _num(value: float) -> str:
    return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"
