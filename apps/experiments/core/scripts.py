"""Validating a custom pgbench script (pure): it runs inside PostgreSQL through pgbench,
never through a shell, so the meta-commands that start programs are refused, and so is
COPY ... PROGRAM (a shell on the host by another door)."""

from __future__ import annotations

import re

MAX_BYTES = 64 * 1024
_SHELL_META = re.compile(r"^\s*\\(shell|setshell)\b", re.IGNORECASE | re.MULTILINE)
_PROGRAM = re.compile(r"\bprogram\b", re.IGNORECASE)
_PSQL_META = re.compile(r"^\s*\\", re.MULTILINE)


def problems(text: str, *, setup: bool = False) -> list[str]:
    """What is wrong with a script (or, with setup, its psql setup SQL); empty when fine."""
    found = []
    if not setup and not text.strip():
        found.append("the script is empty")
    if len(text.encode()) > MAX_BYTES:
        found.append(f"at most {MAX_BYTES // 1024} KiB")
    if "\x00" in text or any(ord(ch) < 32 and ch not in "\n\t\r" for ch in text):
        found.append("control characters are not allowed")
    if _SHELL_META.search(text):
        found.append("\\shell and \\setshell are not allowed (no shell on the host)")
    if _PROGRAM.search(text):
        found.append("COPY ... PROGRAM is not allowed (no shell on the host)")
    if setup and _PSQL_META.search(text):
        found.append("setup is plain SQL: psql meta-commands (\\...) are not allowed")
    return found
