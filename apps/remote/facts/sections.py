"""Split the output of a bundled script back into the commands it ran.

Discovery groups many read-only commands into one SSH round trip. Each command
is framed by a marker line carrying its name and, after it, its exit status,
so every command keeps its own output and its own success or failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = "@@pozol@@"
_OPEN = re.compile(re.escape(MARKER) + r" (?P<name>\S+)\Z")
_CLOSE = re.compile(re.escape(MARKER) + r" rc=(?P<rc>\d+)\Z")


@dataclass(frozen=True)
class Section:
    name: str
    exit_code: int
    text: str  # stdout and stderr together, as the command printed them

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def split_sections(output: str) -> dict[str, Section]:
    """Sections by name; a section cut short (no exit status) is left out."""
    sections: dict[str, Section] = {}
    name: str | None = None
    lines: list[str] = []
    for line in output.splitlines():
        closed, opened = _CLOSE.match(line), _OPEN.match(line)
        if closed and name is not None:
            sections[name] = Section(name, int(closed["rc"]), _body(lines))
            name = None
        elif opened and not closed:
            name, lines = opened["name"], []
        elif name is not None:
            lines.append(line)
    return sections


def _body(lines: list[str]) -> str:
    # The closing marker is printed after a newline of its own so that output
    # without a final newline cannot swallow it; drop that extra blank line.
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return "".join(line + "\n" for line in lines)
