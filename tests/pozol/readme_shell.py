"""The README's shell examples as a newcomer meets them: blocks, commands, a new shell.

Read from README.md itself, never copied: a ```sh block is split into the
commands a person would paste one by one (bash decides where a command ends,
so a quoted JSON body over several lines stays one command), and the commands
run in order in one new shell, so what one sets (`export TOKEN=...`) is there
for the next.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Command:
    text: str
    line: int  # in README.md, where the command starts
    section: str


@dataclass(frozen=True)
class Block:
    section: str  # the `## ` heading it stands under
    line: int  # of its first line inside the fence
    text: str


def sh_blocks(readme: str) -> list[Block]:
    blocks, section, inside, start, lines = [], "", False, 0, []
    for number, line in enumerate(readme.splitlines(), 1):
        if not inside and line.startswith("## "):
            section = line[3:].strip()
        elif not inside and line.strip() == "```sh":
            inside, start, lines = True, number + 1, []
        elif inside and line.strip() == "```":
            blocks.append(Block(section, start, "\n".join(lines) + "\n"))
            inside = False
        elif inside:
            lines.append(line)
    return blocks


def commands(block: Block) -> list[Command]:
    """The block's commands, each whole; lines that are only comments are left out."""
    found, pending, start = [], [], 0
    for offset, line in enumerate(block.text.splitlines()):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = block.line + offset
        pending.append(line)
        text = "\n".join(pending)
        if not line.rstrip().endswith("\\") and _is_whole(text):
            found.append(Command(text, start, block.section))
            pending = []
    if pending:
        raise ValueError(f"README.md line {start}: the block ends inside a command:\n"
                         + "\n".join(pending))
    return found


def _is_whole(text: str) -> bool:
    """bash itself says whether the text so far parses, or needs more lines."""
    return subprocess.run(["bash", "-n"], input=text + "\n", text=True,
                          capture_output=True).returncode == 0


@dataclass
class Result:
    command: Command
    ran: str  # the text given to the shell (the README's, with the demo's origin)
    status: int
    stdout: str
    stderr: str
    # What curl answered, in order; the shim reports them on stderr.
    http: list[int] = field(default_factory=list)

    @property
    def json(self):
        try:
            return json.loads(self.stdout)
        except ValueError:
            return None

    def report(self) -> str:
        return (f"README.md line {self.command.line} ({self.command.section}):\n"
                f"{_indent('$ ' + self.ran)}\n"
                f"exit status: {self.status}   HTTP statuses: {self.http or 'none'}\n"
                f"stdout:\n{_indent(_cut(self.stdout))}\n"
                f"stderr:\n{_indent(_cut(self.stderr))}")


HTTP_LINE = re.compile(r"^README-TEST HTTP (\d{3})$", re.MULTILINE)


class NewShell:
    """One bash with an empty environment but PATH, HOME and LANG, fed command by command.

    Each command runs in the shell itself (a `{ ...; }` group, not a subshell),
    so its assignments and functions stay for the next, with its output going
    to files of its own. The one addition to a newcomer's shell is a `curl` in
    front of PATH that is the real curl plus `-w`, printing the HTTP status on
    stderr, so the test can tell a 201 from a 200 without changing a command.
    """

    def __init__(self, cwd: Path, scratch: Path) -> None:
        self.scratch = scratch
        shim = scratch / "bin"
        shim.mkdir(parents=True)
        real_curl = subprocess.run(["bash", "-c", "command -v curl"], capture_output=True,
                                   text=True, env={"PATH": SYSTEM_PATH}).stdout.strip()
        (shim / "curl").write_text(
            "#!/bin/sh\n"
            f"exec {real_curl} -w '%{{stderr}}README-TEST HTTP %{{http_code}}\\n' \"$@\"\n")
        (shim / "curl").chmod(0o755)
        self.count = 0
        self.marker = f"README-TEST-DONE-{secrets.token_hex(8)}"
        self.process = subprocess.Popen(
            ["env", "-i", f"PATH={shim}:{SYSTEM_PATH}", f"HOME={os.environ.get('HOME', '/root')}",
             "LANG=C.UTF-8", "bash", "--noprofile", "--norc"],
            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, bufsize=0, start_new_session=True)
        self.unread = b""

    def run(self, command: Command, text: str, timeout: float = 60) -> Result:
        self.count += 1
        out, err = self.scratch / f"{self.count}.out", self.scratch / f"{self.count}.err"
        # </dev/null: a command must not read the rest of this script as its input.
        self.process.stdin.write(f"{{ {text}\n}} >{out} 2>{err} </dev/null\n"
                                 f"echo \"{self.marker} $?\"\n".encode())
        status = self._wait_for_marker(timeout)
        stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
        http = [int(code) for code in HTTP_LINE.findall(stderr)]
        result = Result(command, text, status, stdout, HTTP_LINE.sub("", stderr).strip(), http)
        if status is None:
            self.close()
            raise AssertionError(f"no answer within {timeout:.0f}s from\n{result.report()}")
        return result

    def value(self, name: str) -> str:
        """What a shell variable holds now (the test looking over the newcomer's shoulder)."""
        probe = Command(f'printf %s "${name}"', 0, "(test)")
        return self.run(probe, probe.text).stdout

    def _wait_for_marker(self, timeout: float) -> int | None:
        """The status the shell echoed after the command; None if it did not in time."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(rf"^{self.marker} (\d+)$".encode(), self.unread, re.MULTILINE)
            if found:
                self.unread = self.unread[found.end():]
                return int(found.group(1))
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                return None  # the shell is gone (an `exit` in the README?)
            self.unread += chunk

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)

    def __enter__(self) -> NewShell:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines()) or "    (nothing)"


def _cut(text: str, limit: int = 3000) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more)"
