"""Waves, what a wave's hosts' outcomes mean, and what a stop rolls back.

A rollout is a canary wave of one host, then waves of `size` hosts in the order
given. A wave is decided only when every host in it has ended: a stop waits for
the wave's other hosts, so their rollback never races their own apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# A host's states (RolloutHost.State mirrors them).
WAITING = "waiting"          # not its turn yet
BASELINE = "baseline"        # read as the rollout starts, to notice hand changes later
READY = "ready"              # baseline taken; waits for its wave
CHECKING = "checking"        # read again at its turn: changed by hand since?
BENCH_BEFORE = "bench_before"  # pgbench before the apply (the pgbench validation)
APPLYING = "applying"        # tuning's apply runs
VERIFYING = "verifying"      # read after the apply, then validated
BENCH_AFTER = "bench_after"  # pgbench after it, compared with the one before
DONE = "done"
SKIPPED = "skipped"
FAILED = "failed"
ROLLING_BACK = "rolling_back"
ROLLED_BACK = "rolled_back"
ROLLBACK_FAILED = "rollback_failed"

ENDED = frozenset({DONE, SKIPPED, FAILED})
IN_FLIGHT = frozenset({BASELINE, CHECKING, BENCH_BEFORE, APPLYING, VERIFYING, BENCH_AFTER,
                       ROLLING_BACK})

# A value the baseline did not list: the host had the profile's value then.
AS_PROFILE = "(the profile's value)"


class WavePlanError(ValueError):
    """A rollout that cannot be planned as asked; the message says why, `field` where."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def plan_waves(hosts: Sequence[int], canary: int | None, size: int) -> list[list[int]]:
    """[[canary], [next `size` hosts], ...]; the canary is the first host unless named."""
    if not hosts:
        raise WavePlanError("name at least one host", "hosts")
    if len(set(hosts)) != len(hosts):
        raise WavePlanError("a host is named twice", "hosts")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise WavePlanError("the wave size must be a whole number of at least 1", "wave_size")
    canary = hosts[0] if canary is None else canary
    if canary not in hosts:
        raise WavePlanError("the canary must be one of the rollout's hosts", "canary")
    rest = [host for host in hosts if host != canary]
    return [[canary]] + [rest[i:i + size] for i in range(0, len(rest), size)]


@dataclass(frozen=True)
class Verdict:
    decided: bool
    passed: bool = False
    reason: str = ""


def judge_wave(states: Mapping[str, str], reasons: Mapping[str, str], *,
               canary: bool) -> Verdict:
    """`states` and `reasons` by host name. Any failure stops the rollout; a canary that
    was skipped stops it too (nothing was proven on it)."""
    if any(state not in ENDED for state in states.values()):
        return Verdict(decided=False)
    failed = sorted(name for name, state in states.items() if state == FAILED)
    if failed:
        name = failed[0]
        return Verdict(True, False, f"{name} failed: {reasons.get(name) or 'no reason given'}")
    if canary and all(state == SKIPPED for state in states.values()):
        name = sorted(states)[0]
        return Verdict(True, False, f"the canary {name} was skipped: {reasons.get(name, '')}")
    return Verdict(True, True)


def to_roll_back(waves: Sequence[Sequence[int]], failing: int, *,
                 earlier_too: bool) -> list[int]:
    """The hosts a stop in wave `failing` rolls back: that wave's, and the earlier ones'
    when the operator chose so at the start; newest first."""
    chosen = list(range(failing, -1, -1)) if earlier_too else [failing]
    return [host for index in chosen for host in waves[index]]


def changed_by_hand(baseline: Mapping[str, str | None],
                    now: Mapping[str, str | None]) -> list[str]:
    """What differs between the values the profile would change as the rollout began and
    now: a key missing on one side had the profile's value then (or has it now)."""
    return [f"{key}: {baseline.get(key, AS_PROFILE)!r} -> {now.get(key, AS_PROFILE)!r}"
            for key in sorted(set(baseline) | set(now))
            if baseline.get(key, AS_PROFILE) != now.get(key, AS_PROFILE)]


def new_findings(before: Sequence[str], after: Sequence[str]) -> list[str]:
    """Critical findings present after the apply and not before it."""
    return sorted(set(after) - set(before))


def tps_drop(before: float | None, after: float | None, max_drop_percent: int) -> str | None:
    """Why the run after the apply is worse than allowed (None: it is not): its TPS
    fell by more than `max_drop_percent` of the run before."""
    if not before or after is None:
        return "pgbench gave no TPS to compare"
    drop = 100 * (before - after) / before
    if drop > max_drop_percent:
        return (f"pgbench TPS fell {drop:.1f}% ({before:.1f} -> {after:.1f}), more than "
                f"the {max_drop_percent}% allowed")
    return None
