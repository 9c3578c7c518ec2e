"""The contract between code that needs a host's shell and what provides it.

Facts, discovery and steps take a `Runner` (a real SSH session in production,
a strict fake in unit tests) so they never know which one they have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from apps.remote.commands import Command
from apps.remote.errors import CommandFailed


@dataclass(frozen=True)
class Result:
    command: str  # redacted text, safe to show and log
    exit_code: int
    stdout: str
    stderr: str
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def check(self) -> Result:
        if not self.ok:
            raise CommandFailed(self)
        return self


class Runner(Protocol):
    def __call__(
        self, command: Command, *, timeout: float = 60.0, check: bool = True,
        stdin: bytes | None = None,
    ) -> Result: ...
