"""What can go wrong when PoZoL talks to a host, as exceptions with clear words.

Each carries a short `code` the control plane stores and shows, so the UI and
API can tell "host key changed" from "address unreachable" without parsing
messages.
"""

from __future__ import annotations

import re
from typing import Protocol


class RemoteError(Exception):
    code = "remote_error"


class SSHForbidden(RemoteError):
    """SSH was attempted from a process that must never open it (the web)."""

    code = "ssh_forbidden"


class Unreachable(RemoteError):
    code = "unreachable"


class AuthenticationFailed(RemoteError):
    code = "auth_failed"


class HostKeyUnknown(RemoteError):
    """No key is pinned for the host and trust-on-first-use was not asked for."""

    code = "host_key_unknown"


class HostKeyMismatch(RemoteError):
    """The host presented a key other than the pinned one: refuse and alert."""

    code = "host_key_changed"

    def __init__(self, message: str, *, expected: str, presented: str) -> None:
        super().__init__(message)
        self.expected = expected
        self.presented = presented


class SudoRefused(RemoteError):
    """A login other than root: sudo would not run a command without a password."""

    code = "sudo_refused"

    def __init__(self, message: str, *, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


class CommandTimeout(RemoteError):
    code = "timeout"


class OutputTooLarge(RemoteError):
    """A command wrote more than PoZoL keeps of a stream (apps.remote.ssh.OUTPUT_LIMIT)."""

    code = "output_too_large"


# What PostgreSQL's programs print when they fail: the server's ERROR/FATAL
# line (`psql:<stdin>:1: ERROR:  invalid value for parameter ...`, or FATAL
# inside a connection failure), else the program's own `psql: error: ...`.
_SERVER_CAUSE = re.compile(r"\b(?:ERROR|FATAL|PANIC):\s+(.+)")
_PROGRAM_CAUSE = re.compile(r"^(?:psql|pg_ctl|pgbench|initdb): (?:error: )?(.+)")


def failure_cause(output: str) -> str | None:
    """The first line of a failure in words a person understands, when the output has one."""
    lines = output.splitlines()
    for pattern in (_SERVER_CAUSE, _PROGRAM_CAUSE):
        for line in lines:
            if match := pattern.search(line.strip()):
                return match.group(1).strip()
    return None


class Output(Protocol):
    """What a failed command left: apps.remote.shell.Result, which raises CommandFailed
    (so this module, below shell, names only the fields it reads). Read-only, as
    Result is frozen."""

    @property
    def command(self) -> str: ...
    @property
    def exit_code(self) -> int: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...


class CommandFailed(RemoteError):
    code = "command_failed"

    def __init__(self, result: Output) -> None:
        self.result = result
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        detail = f"`{result.command}` exited {result.exit_code}: " + " / ".join(tail)
        cause = failure_cause(result.stderr) or failure_cause(result.stdout)
        super().__init__(f"{cause}\n{detail}" if cause else detail)
