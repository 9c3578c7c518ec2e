"""Long remote work (pgbench, zfs send, initdb) detached on the host, then polled.

A step starts the work under a unit name that is its idempotency key and
returns; later steps poll it and read its output. A worker that crashes and
re-runs the step calls `start` again and finds the unit already there, so the
work never runs twice.

Everything lives in files under `work_dir` on the host, written by one small
wrapper script whether or not the host has systemd:

    <unit>.pid     the wrapper's PID (its process group); created exclusively,
                   so it is also the claim that makes `start` idempotent
    <unit>.out     the command's stdout      <unit>.err  its stderr
    <unit>.status  its exit code, written atomically (tmp + mv) when it ends
    <unit>.sh      the wrapper          <unit>.cmd  the command (mode 0600: it may
                   hold a secret, which a command line would show to every user)

With systemd the wrapper runs as transient unit `pozol-<unit>` (systemd-run),
so logind's KillUserProcesses cannot reap it when the SSH session ends and it
is supervised like any service; without systemd `setsid` puts it in its own
session, away from the SSH session's hang-up. The command runs under `sh` from
its file `<unit>.cmd` in `work_dir`, with stdin from /dev/null.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from apps.remote.commands import Command, abs_path, integer, script, unit_name
from apps.remote.errors import RemoteError
from apps.remote.shell import Runner

State = Literal["running", "succeeded", "failed", "missing"]
Stream = Literal["stdout", "stderr"]

READ_LIMIT = 1024 * 1024  # bytes per read_output call, so progress reads stay small
STOP_GRACE = 10  # seconds between TERM and KILL in `stop`


class UnitStillRunning(RemoteError):
    code = "unit_running"


@dataclass(frozen=True)
class UnitStatus:
    state: State
    exit_code: int | None = None  # None while running, when missing, or if it vanished
    started_at: datetime | None = None
    finished_at: datetime | None = None


# Run as `sh UNIT.sh UNIT`: $1 is the unit; the command is the file UNIT.cmd. Both are
# written by _START, so this text is the same for every unit and systemd-run is given no
# `$` at all (see _LAUNCH_SYSTEMD). TERM/HUP/INT are trapped (not ignored, which
# children would inherit) so that when `stop` signals the process group the command dies
# but the wrapper lives to record its status.
_WRAPPER = """\
trap : TERM HUP INT
echo $$ > "$1.pid.tmp" && mv -f "$1.pid.tmp" "$1.pid"
sh "$1.cmd" > "$1.out" 2> "$1.err" < /dev/null
echo $? > "$1.status.tmp" && mv -f "$1.status.tmp" "$1.status"
"""

# Claims the unit by creating its pid file exclusively (set -C), writes the wrapper and
# the command beside it, then launches.
_START = """\
umask 077 && mkdir -p {dir} && cd {dir} || exit 1
if ! (set -C; : > {pid}) 2>/dev/null; then echo exists; exit 0; fi
printf '%s' {wrapper} > {unit}.sh && printf '%s\\n' {text} > {unit}.cmd \
  || {{ rm -f {pid}; exit 1; }}
{launch}
echo started
"""
_LAUNCH_SETSID = "setsid sh {unit}.sh {unit} < /dev/null > /dev/null 2>&1 &"
# systemd-run returns once the unit runs; if it cannot, release the claim. systemd
# expands $VAR and turns $$ into $ in the command line it is given: 252 (Debian 12)
# always, 254 and later unless --expand-environment=no. Given the command itself, the
# wrapper's `echo $$` wrote "$" as its PID and every unit looked vanished at once (seen
# on 252 and 257), and a command's own $VAR would have been emptied; given only two
# file names, nothing is there to expand, whatever the version.
_LAUNCH_SYSTEMD = (
    "systemd-run --quiet --collect --unit={sd_unit} -p WorkingDirectory={dir}"
    " -p UMask=0077 -- sh {unit}.sh {unit} < /dev/null > /dev/null"
    " || {{ rm -f {pid}; exit 1; }}"
)


# Prints: <running|finished|vanished|missing> <exit code|-> <started|-> <finished|->
# Alive means the PID exists and is still our wrapper for this unit (a PID can
# be reused after a reboot). An empty pid file is a unit being launched.
_POLL = """\
cd {dir} 2>/dev/null && [ -e {pid} ] || {{ echo missing - - -; exit 0; }}
p=$(cat {pid}); started=$(stat -c %Y {pid})
if [ -z "$p" ] || {{ kill -0 "$p" 2>/dev/null \
&& tr '\\000' '\\n' < "/proc/$p/cmdline" 2>/dev/null | grep -qxF -- {unit}; }}; then
  echo running - "$started" -
elif [ -e {status} ]; then
  echo finished "$(cat {status})" "$started" "$(stat -c %Y {status})"
else
  echo vanished - "$started" -
fi
"""

# Prints the byte count it returns on the first line, then those bytes.
_READ = """\
f={dir}/{file}
[ -e "$f" ] || {{ echo 0; exit 0; }}
n=$(( $(wc -c < "$f") - {offset} ))
[ "$n" -gt {limit} ] && n={limit}
[ "$n" -gt 0 ] || {{ echo 0; exit 0; }}
echo "$n"
tail -c +{start} "$f" | head -c "$n"
"""

_STOP = """\
cd {dir} 2>/dev/null && [ ! -e {status} ] || exit 0
p=$(cat {pid} 2>/dev/null); [ -n "$p" ] || exit 0
kill -TERM "-$p" 2>/dev/null || exit 0
i=0
while [ "$i" -lt {grace} ] && [ ! -e {status} ]; do sleep 1; i=$((i + 1)); done
[ -e {status} ] && exit 0
kill -KILL "-$p" 2>/dev/null
echo 137 > {status}.tmp && mv -f {status}.tmp {status}
"""


def start(run: Runner, unit: str, command: Command, work_dir: str, use_systemd: bool) -> bool:
    """Start `command` detached as `unit`; False if the unit already exists (running or not).

    Nothing is started twice: a unit that exists, finished or not, is left as it
    is until `forget`.
    """
    unit, work_dir = unit_name(unit), abs_path(work_dir)
    # The log shows the command the unit runs, not the wrapper that launches it.
    started = run(script(_START, **_start_values(unit, command, work_dir, use_systemd),
                         secrets=command.secrets,
                         shown=f"detached {unit}: {command.redacted()}"))
    return started.stdout.strip() == "started"


def _start_values(unit: str, command: Command, work_dir: str, use_systemd: bool) -> dict:
    launch = (script(_LAUNCH_SYSTEMD, sd_unit=f"pozol-{unit}", dir=work_dir, unit=unit,
                     pid=f"{unit}.pid")
              if use_systemd else script(_LAUNCH_SETSID, unit=unit))
    return {"dir": work_dir, "pid": f"{unit}.pid", "unit": unit, "wrapper": _WRAPPER,
            "text": command.text, "launch": launch}


def poll(run: Runner, unit: str, work_dir: str) -> UnitStatus:
    unit, work_dir = unit_name(unit), abs_path(work_dir)
    result = run(script(_POLL, dir=work_dir, pid=f"{unit}.pid", status=f"{unit}.status",
                        unit=unit, shown=f"detached {unit}: poll"))
    return _parse_status(result.stdout)


WAIT_TICK = 0.05  # seconds between a follow's looks for the unit's end

_WAIT = """\
cd {dir} 2>/dev/null || exit 0
i=0
while [ ! -e {status} ] && [ "$i" -lt {ticks} ]; do sleep 0.05; i=$((i + 1)); done
"""


_FOLLOW = """\
rc=0
{first}
echo @@pozol:wait
[ "$rc" -ne 0 ] || ( {wait} )
( {poll} )
echo @@pozol:err
tail -c {tail} {dir}/{err} 2>/dev/null || true
( {after} )
"""
# The unit is started only if `first` succeeded; its output and exit status come first.
_FIRST = """\
( {first}
); rc=$?
printf '\\n@@pozol:first %s\\n' "$rc"
[ "$rc" -ne 0 ] || ( {start} )
"""
# `after` runs only once the unit has ended with exit status 0, its output last.
_AFTER = """\
echo; echo @@pozol:after
[ "$(cat {dir}/{status} 2>/dev/null)" = 0 ] || exit 0
( {after}
); printf '\\n@@pozol:after-rc %s\\n' "$?"
"""


@dataclass(frozen=True)
class Followed:
    """What one follow saw: whether it started the unit, where the unit stands, the end
    of its stderr; `first`'s output and exit status (None: not given), and `after`'s
    (None: not given, or not run since the unit has not ended well)."""

    started: bool
    status: UnitStatus
    err: str
    first: str | None = None
    first_code: int | None = None
    after: str | None = None
    after_code: int | None = None


def follow(run: Runner, unit: str, command: Command, work_dir: str, use_systemd: bool,
           seconds: float, tail: int = 64 * 1024) -> tuple[bool, UnitStatus, str]:
    """start, wait and poll in one round trip, plus the last `tail` bytes of stderr:
    whether this call started the unit, where it stands, and what it said last.

    A poller that sleeps between polls pays several round trips per interval and
    notices the end up to an interval late; this costs one and notices it within
    WAIT_TICK seconds.
    """
    found = follow_with(run, unit, command, work_dir, use_systemd, seconds, tail=tail)
    return found.started, found.status, found.err


def follow_with(run: Runner, unit: str, command: Command, work_dir: str, use_systemd: bool,
                seconds: float, *, first: Command | None = None,
                after: Command | None = None, tail: int = 64 * 1024) -> Followed:
    """`follow`, with the work around the unit in its round trip too: `first` before the
    start (the unit is started only if `first` exits 0: what must hold before it runs),
    and `after` once it has ended with exit status 0 (what comes after it)."""
    unit, work_dir = unit_name(unit), abs_path(work_dir)
    # A tick of 0.05 s: a short transfer (an increment) is noticed ending sooner; the
    # wait is a `test` and a `sleep` per tick, nothing the host notices.
    ticks = integer(int(seconds / WAIT_TICK), minimum=0, maximum=12000)
    status = f"{unit}.status"
    start = script(_START, **_start_values(unit, command, work_dir, use_systemd))
    text = script(_FOLLOW,
                  first=script(_FIRST, first=first, start=start) if first is not None
                  else script("( {start} )", start=start),
                  wait=script(_WAIT, dir=work_dir, status=status, ticks=ticks),
                  poll=script(_POLL, dir=work_dir, pid=f"{unit}.pid", status=status,
                              unit=unit),
                  tail=integer(tail, minimum=1), dir=work_dir, err=f"{unit}.err",
                  after=script(_AFTER, dir=work_dir, status=status, after=after)
                  if after is not None else script(":"))
    secrets = command.secrets + tuple(s for c in (first, after) if c is not None
                                      for s in c.secrets)
    result = run(Command(text.text, secrets=secrets, shown=f"detached {unit}: follow"),
                 timeout=seconds + 60)
    return _followed(result.stdout, first is not None)


def _followed(stdout: str, with_first: bool) -> Followed:
    head, _, rest = stdout.partition("@@pozol:wait\n")
    state, _, rest = rest.partition("@@pozol:err\n")
    err, marker, after_text = rest.partition("\n@@pozol:after\n")
    first, first_code = None, None
    if with_first:
        first, _, head = head.rpartition("\n@@pozol:first ")
        code, _, head = head.partition("\n")
        first_code = int(code)
    after, after_code = None, None
    if marker:
        output, found, code = after_text.rpartition("\n@@pozol:after-rc ")
        if found:
            after, after_code = output, int(code.strip())
    return Followed(head.strip() == "started", _parse_status(state.strip()), err, first,
                    first_code, after, after_code)


def read_output(
    run: Runner, unit: str, work_dir: str, offset: int = 0, stream: Stream = "stdout",
) -> tuple[str, int]:
    """Output from byte `offset` on, and the offset to ask for next time.

    At most READ_LIMIT bytes per call. Offsets count bytes; a multi-byte
    character cut at a read boundary shows as a replacement character.
    """
    unit, work_dir = unit_name(unit), abs_path(work_dir)
    offset = integer(offset)
    suffix = {"stdout": "out", "stderr": "err"}[stream]
    result = run(script(_READ, dir=work_dir, file=f"{unit}.{suffix}", offset=offset,
                        limit=READ_LIMIT, start=offset + 1,
                        shown=f"detached {unit}: read {stream} from byte {offset}"))
    count, _, text = result.stdout.partition("\n")
    return text, offset + int(count)


def stop(run: Runner, unit: str, work_dir: str) -> None:
    """TERM the unit's process group, KILL it after STOP_GRACE s; no-op if it ended."""
    unit, work_dir = unit_name(unit), abs_path(work_dir)
    run(script(_STOP, dir=work_dir, pid=f"{unit}.pid", status=f"{unit}.status",
               grace=STOP_GRACE, shown=f"detached {unit}: stop"), timeout=STOP_GRACE + 30)


def forget(run: Runner, unit: str, work_dir: str) -> None:
    """Remove a finished unit's files, so its name can be used again."""
    unit, work_dir = unit_name(unit), abs_path(work_dir)
    if poll(run, unit, work_dir).state == "running":
        raise UnitStillRunning(f"unit {unit} is still running; stop it before forgetting it")
    files = [f"{unit}{suffix}" for suffix in
             (".pid", ".out", ".err", ".status", ".pid.tmp", ".status.tmp", ".sh", ".cmd")]
    run(script("cd {dir} 2>/dev/null || exit 0; rm -f -- {files}", dir=work_dir, files=files,
               shown=f"detached {unit}: forget"))


def _parse_status(line: str) -> UnitStatus:
    state, code, started, finished = line.split()
    started_at, finished_at = _time(started), _time(finished)
    if state == "missing":
        return UnitStatus("missing")
    if state == "running":
        return UnitStatus("running", None, started_at)
    if state == "vanished":  # killed with the wrapper (KILL, reboot): no exit code
        return UnitStatus("failed", None, started_at)
    exit_code = int(code)
    return UnitStatus("succeeded" if exit_code == 0 else "failed", exit_code, started_at,
                      finished_at)


def _time(epoch: str) -> datetime | None:
    return None if epoch == "-" else datetime.fromtimestamp(int(epoch), tz=UTC)
