"""Several commands on one host in one round trip: a run's overhead is its round trips.

`chained`: commands that must all succeed, run one after the other (a link's key
files, then its listing, then the inventory's listing); it stops at the first that
fails, and `parts` splits its output back into each one's. One of them may read
stdin (the key's private half, never on a command line).

`batch`: a plan's quick steps on one side (holds, releases, the target's parent,
its properties), every one run whatever the others did (each is safe alone and
judged alone, in order, by the caller), each one's exit status and merged output
reported after a marker; or, first, one command that does them all at once, each
then run alone only if that one failed. A batch cut short (the connection lost)
reports the steps it did not reach as not run.

Nothing is run here.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.remote.commands import Command

PART = "@@pozol:part"
STEP = "@@pozol:step"
RC = "@@pozol:rc"
NOT_RUN = -1


def chained(*commands: Command, shown: str) -> Command:
    """Each command in a subshell of its own (a listing's `exit 0` ends only its own),
    a marker line between their outputs, stopping at the first that fails."""
    marker = f"printf '\\n%s\\n' '{PART}'"
    text = f" && {marker} && ".join(f"( {c.text}\n)" for c in commands)
    inputs = [c.stdin for c in commands if c.stdin is not None]
    if len(inputs) > 1:
        raise ValueError("at most one of the chained commands may read stdin")
    return Command(text, secrets=_secrets(commands), shown=shown,
                   stdin=inputs[0] if inputs else None)


def parts(stdout: str, count: int) -> list[str]:
    """`chained`'s output, one text per command; ValueError when some are missing."""
    found = stdout.split(f"\n{PART}\n")
    if len(found) != count:
        raise ValueError(f"expected the output of {count} commands, got {len(found)}")
    return found


def batch(commands: list[Command], shown: str, together: Command | None = None,
          *, strict: bool = False) -> Command:
    """`together`, when given, does what all of `commands` do in one command (one
    `zfs hold` of several snapshots: one transaction group to wait for, not one per
    snapshot); when it succeeds every step reports success, else each runs alone.
    `strict`: the batch exits 1 when any step failed (what must succeed before a
    transfer starts, in its round trip), else always 0."""
    lines = [f"printf '%s\\n' '{STEP}'; ( {c.text}\n) 2>&1; rc=$?; "
             f"printf '\\n{RC} %s\\n' \"$rc\"; [ \"$rc\" -eq 0 ] || failed=1"
             for c in commands]
    text = "\n".join(lines)
    if together is not None:
        done = "; ".join(f"printf '%s\\n\\n{RC} 0\\n' '{STEP}'" for _ in commands)
        text = f"if ( {together.text}\n) >/dev/null 2>&1; then {done}\nelse\n{text}\nfi"
    ending = "exit ${failed:-0}" if strict else "exit 0"
    return Command(f"failed=0\n{text}\n{ending}", secrets=_secrets(commands), shown=shown)


@dataclass(frozen=True)
class Outcome:
    """One command of a batch: its exit status (NOT_RUN when the batch never reached
    it) and its stdout and stderr together."""

    exit_code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def outcomes(stdout: str, count: int) -> list[Outcome]:
    found = []
    for chunk in stdout.split(f"{STEP}\n")[1:count + 1]:
        output, marker, code = chunk.rpartition(f"\n{RC} ")
        try:
            found.append(Outcome(int(code.strip()), output.strip()) if marker
                         else Outcome(NOT_RUN, chunk.strip()))
        except ValueError:
            found.append(Outcome(NOT_RUN, chunk.strip()))
    return found + [Outcome(NOT_RUN, "not run: the batch ended before it")] * (
        count - len(found))


def _secrets(commands: tuple[Command, ...] | list[Command]) -> tuple[str, ...]:
    return tuple(s for c in commands for s in c.secrets)
