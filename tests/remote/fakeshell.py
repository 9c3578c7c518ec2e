"""A strict fake shell for unit tests of steps and probes.

It answers only the exact command lines a test scripted and fails the test on
any other, so a test can never pass by accident on a command nobody expected.
Proving that a feature works is the job of the real test hosts, not this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apps.remote.commands import Command
from apps.remote.shell import Result


class UnscriptedCommand(AssertionError):
    pass


@dataclass
class FakeShell:
    script: dict[str, tuple[int, str, str] | str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    stdins: list[bytes | None] = field(default_factory=list)

    def on(self, command: Command | str, stdout: str = "", *, exit_code: int = 0,
           stderr: str = "") -> FakeShell:
        text = command.text if isinstance(command, Command) else command
        self.script[text] = (exit_code, stdout, stderr)
        return self

    def __call__(self, command: Command, *, timeout: float = 60.0, check: bool = True,
                 stdin: bytes | None = None) -> Result:
        self.calls.append(command.text)
        self.stdins.append(command.stdin if stdin is None else stdin)
        if command.text not in self.script:
            raise UnscriptedCommand(f"nobody scripted: {command.text}")
        answer = self.script[command.text]
        exit_code, stdout, stderr = (0, answer, "") if isinstance(answer, str) else answer
        result = Result(command.redacted(), exit_code, stdout, stderr)
        return result.check() if check else result
