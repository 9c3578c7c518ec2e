"""What can go wrong when PoZoL talks to a host, as exceptions with clear words.

Each carries a short `code` the control plane stores and shows, so the UI and
API can tell "host key changed" from "address unreachable" without parsing
messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from apps.remote.shell import Result


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


class CommandTimeout(RemoteError):
    code = "timeout"


class CommandFailed(RemoteError):
    code = "command_failed"

    def __init__(self, result: Result) -> None:
        self.result = result
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        super().__init__(
            f"`{result.command}` exited {result.exit_code}: " + " / ".join(tail)
        )
