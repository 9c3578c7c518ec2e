"""Processes the fleet starts, and how it proves a PID is still one of them.

A PID alone is not an identity: after a crash or a reboot of the fleet the
number may belong to someone else. A recorded process is therefore the pair
(pid, start time in clock ticks since boot), and before any signal is sent the
live process must also carry a marker (a path inside the state dir) in its
command line. Nothing here ever looks processes up by name.

Each host has its own PID namespace, whose processes have one PID inside it
and another in the machine's namespace. Every PID recorded, compared or
signalled here is the machine's; a PID read from inside a host (such as
postmaster.pid) is translated with outer_pid first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .settings import FleetError

# PIDs spawn started in this Python process that may still need reaping.
_spawned: set[int] = set()


@dataclass(frozen=True)
class Proc:
    pid: int
    start: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> Proc:
        return cls(pid=int(data["pid"]), start=int(data["start"]))


def identify(pid: int) -> Proc | None:
    """The live (non-zombie) process with this PID, or None."""
    _reap(pid)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    state, start = fields[0], int(fields[19])
    if state in ("Z", "X"):
        return None
    return Proc(pid=pid, start=start)


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def is_ours(proc: Proc | None, marker: str) -> bool:
    """True if the recorded process still runs and is the one we started."""
    if proc is None:
        return False
    # sshd rewrites its command line (setproctitle) on every connection and
    # it is blank for an instant while it does: look again before saying no.
    for _ in range(5):
        if identify(proc.pid) != proc:
            return False
        if marker in cmdline(proc.pid):
            return True
        time.sleep(0.02)
    return False


def spawn(argv: list[str], log: Path) -> Proc:
    """Start a long-lived process in its own session, output appended to log.

    posix_spawn rather than Popen: the fleet outlives this Python process, and
    an abandoned Popen object warns about a child that is still running.
    """
    pid = _launch(argv, log)
    _spawned.add(pid)
    proc = identify(pid)
    if proc is None:
        raise FleetError(f"{argv[0]} exited at once; see {log}")
    return proc


def _launch(argv: list[str], log: Path) -> int:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        return os.posix_spawnp(
            argv[0],
            argv,
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fd, 1),
                (os.POSIX_SPAWN_DUP2, fd, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(fd)


def stop(proc: Proc | None, marker: str, sig: int = signal.SIGTERM, grace: float = 15) -> None:
    """Signal a recorded process if it is still ours; SIGKILL it after grace seconds."""
    if not is_ours(proc, marker):
        return
    assert proc is not None
    _signal(proc.pid, sig)
    if wait_gone(proc, grace):
        return
    _signal(proc.pid, signal.SIGKILL)
    if not wait_gone(proc, 5):
        raise FleetError(f"process {proc.pid} ({cmdline(proc.pid)}) survived SIGKILL")


def wait_gone(proc: Proc, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if identify(proc.pid) != proc:
            return True
        time.sleep(0.05)
    return identify(proc.pid) != proc


def mount_namespace(pid: int) -> str | None:
    return _namespace(pid, "mnt")


def pid_namespace(pid: int) -> str | None:
    return _namespace(pid, "pid")


def _namespace(pid: int, kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def has_own_namespace(proc: Proc) -> bool:
    """True once proc has left both the machine's mount and PID namespaces.

    spawn returns while `unshare` may not have called unshare(2) yet; an
    nsenter before that moment would mount over the machine's own /run/zfs.
    """
    mine = os.getpid()
    mount, pids = mount_namespace(proc.pid), pid_namespace(proc.pid)
    return (
        mount is not None
        and pids is not None
        and mount != mount_namespace(mine)
        and pids != pid_namespace(mine)
    )


def parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def children(pid: int) -> list[int]:
    """PIDs whose parent is pid (this kernel has no /proc/PID/task/TID/children)."""
    return [p for p in _all_pids() if parent(p) == pid]


def namespace_pids(holder: Proc) -> list[int]:
    """Root-namespace PIDs of every process in the holder's PID namespace, holder included."""
    namespace = pid_namespace(holder.pid)
    # Never list the machine's own namespace, whatever a record says.
    if not has_own_namespace(holder) or namespace is None:
        return []
    return [p for p in _all_pids() if pid_namespace(p) == namespace]


def outer_pid(holder: Proc, inner: int) -> int | None:
    """The root-namespace PID of the process that is PID inner inside the holder's namespace."""
    for pid in namespace_pids(holder):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        # "NSpid: <outer> ... <inner>": one PID per nested namespace, innermost last.
        nspid = [line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")]
        if nspid and nspid[0] and int(nspid[0][-1]) == inner:
            return pid
    return None


def run(argv: list[str], timeout: float = 120) -> str:
    """Run a short command; its stdout, or a FleetError quoting its stderr."""
    try:
        done = subprocess.run(
            argv, cwd="/", capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise FleetError(f"timed out after {timeout}s: {' '.join(argv)}") from exc
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        raise FleetError(f"failed ({done.returncode}): {' '.join(argv)}\n{output}")
    return done.stdout


def in_namespace(holder: Proc, argv: list[str]) -> list[str]:
    """argv wrapped to run inside the host's mount and PID namespaces.

    nsenter -p forks (only children join a PID namespace) and waits for the
    child, whose exit status it returns: fine for short commands. Long-lived
    ones go through spawn_in, which finds the daemon's real PID.
    """
    # Checked on every call: entering the machine's own namespace by mistake
    # would mount, create pools and start daemons on the machine itself.
    if not has_own_namespace(holder):
        raise FleetError(f"process {holder.pid} is not in private mount and PID namespaces")
    return ["nsenter", "-t", str(holder.pid), "-m", "-p", "--", *argv]


def spawn_in(holder: Proc, argv: list[str], log: Path, marker: str, timeout: float = 10) -> Proc:
    """Start a daemon inside the host's namespaces; the Proc of the daemon itself.

    `setsid -f` detaches it, so nsenter returns at once and the daemon, orphaned,
    becomes a child of the holder (PID 1 of the namespace), as on a real
    server. It is then found among the holder's children by its command name
    (set by exec, unlike the command line that sshd rewrites) and the marker.
    """
    # Not through spawn: nsenter is meant to exit at once, and is waited for here.
    code = _wait_exit(_launch(in_namespace(holder, ["setsid", "-f", *argv]), log), timeout)
    if code != 0:
        raise FleetError(f"nsenter ... setsid -f {argv[0]} failed ({code}); see {log}")
    comm = Path(argv[0]).name[:15]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in children(holder.pid):
            if _comm(pid) == comm and marker in cmdline(pid):
                proc = identify(pid)
                if proc is not None and pid_namespace(pid) == pid_namespace(holder.pid):
                    return proc
        time.sleep(0.02)
    raise FleetError(f"{argv[0]} did not start inside the namespace of {holder.pid}; see {log}")


def _wait_exit(pid: int, timeout: float) -> int | None:
    """Exit code of our child pid, or None (after killing it) if it runs past timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    _signal(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def _all_pids() -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    # When up and down run in the same Python process (pytest), the processes
    # spawn started are our children: collect them so they do not linger as
    # zombies. The `unshare` above each holder is one of them, and exits when
    # its holder dies.
    for child in [pid, *list(_spawned)]:
        try:
            done, _ = os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            _spawned.discard(child)
            continue
        if done:
            _spawned.discard(child)
