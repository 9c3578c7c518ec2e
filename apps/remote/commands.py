"""Command templates: the only way a value reaches a remote shell.

Every value is validated against the naming rules of what it names (ZFS,
PostgreSQL, Linux) and then shell-quoted, so a hostile name is refused before
it gets near a host and, if a rule were ever too loose, still arrives as one
inert argument. Templates are literals written in this code base; only values
are ever interpolated.
"""

from __future__ import annotations

import re
import shlex
import string
from dataclasses import dataclass, field

MAX_ZFS_NAME = 255  # ZFS_MAX_DATASET_NAME_LEN (256) minus the terminating NUL
MAX_PG_IDENTIFIER = 63  # NAMEDATALEN - 1

_ZFS_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")
_POOL_RESERVED = re.compile(r"(mirror|raidz|draid|spare|log|cache|special|dedup)", re.I)
_PG_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_$]*\Z")
_PG_SETTING = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?\Z")
_SYSCTL = re.compile(r"[a-z0-9_]+(\.[a-z0-9_-]+)+\Z")
_MODULE_PARAM = re.compile(r"[a-z][a-z0-9_]*\Z")
# useradd's default NAME_REGEX: a hyphen is allowed (pg-admin), a leading one is not.
_OS_USER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}\Z")
_UNIT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}\Z")
_SAFE_PATH_CHARS = frozenset(string.ascii_letters + string.digits + "/_.-+@:")


class InvalidValue(ValueError):
    """A value that does not follow the naming rules of what it names."""

    def __init__(self, kind: str, value: object, reason: str) -> None:
        self.kind = kind
        self.value = value
        self.reason = reason
        super().__init__(f"invalid {kind} {value!r}: {reason}")


def _require_text(kind: str, value: object, max_len: int) -> str:
    if not isinstance(value, str):
        raise InvalidValue(kind, value, "must be text")
    if not value:
        raise InvalidValue(kind, value, "must not be empty")
    if len(value) > max_len:
        raise InvalidValue(kind, value, f"longer than {max_len} characters")
    if not value.isascii() or not value.isprintable():
        raise InvalidValue(kind, value, "only printable ASCII is allowed")
    return value


def pool_name(value: object) -> str:
    name = _require_text("pool name", value, MAX_ZFS_NAME)
    if not name[0].isalpha() or not _ZFS_COMPONENT.match(name):
        raise InvalidValue(
            "pool name", name, "must start with a letter and use only A-Z a-z 0-9 _ . : -"
        )
    if _POOL_RESERVED.match(name) or re.match(r"c[0-9]", name):
        raise InvalidValue("pool name", name, "begins with a name ZFS reserves")
    return name


def pool_of(dataset: str) -> str:
    """The pool a dataset (or snapshot) name lives on: its first component."""
    return dataset.split("/", 1)[0]


def dataset_name(value: object) -> str:
    name = _require_text("dataset name", value, MAX_ZFS_NAME)
    components = name.split("/")
    pool_name(components[0])
    for component in components[1:]:
        if not _ZFS_COMPONENT.match(component) or component in {".", ".."}:
            raise InvalidValue(
                "dataset name",
                name,
                "each component must start with a letter or digit and use only "
                "A-Z a-z 0-9 _ . : -",
            )
    return name


def snapshot_label(value: object) -> str:
    """The part of a snapshot name after '@'."""
    label = _require_text("snapshot label", value, MAX_ZFS_NAME)
    if not _ZFS_COMPONENT.match(label):
        raise InvalidValue(
            "snapshot label", label, "must start with a letter or digit and use only "
            "A-Z a-z 0-9 _ . : -"
        )
    return label


def snapshot_name(value: object) -> str:
    name = _require_text("snapshot name", value, MAX_ZFS_NAME)
    dataset, sep, label = name.partition("@")
    if not sep:
        raise InvalidValue("snapshot name", name, "must be dataset@label")
    dataset_name(dataset)
    snapshot_label(label)
    return name


def zfs_property(value: object) -> str:
    """A native property (recordsize) or a user property (pozol:owner)."""
    name = _require_text("ZFS property", value, 256)
    if not re.match(r"[a-z][a-z0-9_]*(:[a-z0-9_.:-]+)?\Z", name):
        raise InvalidValue("ZFS property", name, "not a ZFS property name")
    return name


def zfs_property_value(value: object) -> str:
    text = _require_text("ZFS property value", value, 1024)
    if text.startswith("-"):
        raise InvalidValue("ZFS property value", text, "must not start with '-'")
    return text


def pg_identifier(value: object) -> str:
    """A PostgreSQL identifier we accept unquoted: lower case, no quoting needed."""
    name = _require_text("PostgreSQL identifier", value, MAX_PG_IDENTIFIER)
    if not _PG_IDENTIFIER.match(name):
        raise InvalidValue(
            "PostgreSQL identifier", name, "use lower-case letters, digits, _ and $"
        )
    return name


def dbname_conninfo(value: object) -> str:
    """`dbname='NAME'`, for psql -d, pg_dump -d and pgbench's database argument.

    Those read a database name containing `=` (or starting postgresql://) as a whole
    connection string: a database named `host=/other/socket port=5432` would connect
    elsewhere, and one named `<img src=x>` would not connect at all. Quoted as libpq's
    conninfo quotes (single quotes, backslash before \\ and '), it is one name.
    """
    if not isinstance(value, str) or not value:
        raise InvalidValue("database name", value, "must be text, not empty")
    if "\x00" in value or len(value.encode()) > MAX_PG_IDENTIFIER:
        raise InvalidValue("database name", value,
                           f"at most {MAX_PG_IDENTIFIER} bytes, no NUL")
    return "dbname='" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def pg_setting_name(value: object) -> str:
    name = _require_text("PostgreSQL setting", value, 128)
    if not _PG_SETTING.match(name):
        raise InvalidValue("PostgreSQL setting", name, "not a setting name")
    return name


def os_user(value: object) -> str:
    """A Linux user name as useradd accepts it by default (NAME_REGEX)."""
    name = _require_text("user name", value, 32)
    if not _OS_USER.match(name):
        raise InvalidValue("user name", name, "use a-z 0-9 _ . - (start with a letter or _)")
    return name


def sysctl_name(value: object) -> str:
    name = _require_text("sysctl", value, 128)
    if not _SYSCTL.match(name):
        raise InvalidValue("sysctl", name, "use dotted lower-case names like vm.swappiness")
    return name


def module_param_name(value: object) -> str:
    name = _require_text("module parameter", value, 128)
    if not _MODULE_PARAM.match(name):
        raise InvalidValue("module parameter", name, "use lower-case letters, digits and _")
    return name


def unit_name(value: object) -> str:
    """The idempotency key of a detached command; also a file name on the host."""
    name = _require_text("unit name", value, 96)
    if not _UNIT.match(name) or ".." in name:
        raise InvalidValue("unit name", name, "use A-Z a-z 0-9 _ . - (no '..')")
    return name


def abs_path(value: object) -> str:
    path = _require_text("path", value, 4096)
    if not path.startswith("/"):
        raise InvalidValue("path", path, "must be absolute")
    if not set(path) <= _SAFE_PATH_CHARS:
        raise InvalidValue("path", path, "only A-Z a-z 0-9 / _ . - + @ : are allowed")
    if any(part == ".." for part in path.split("/")):
        raise InvalidValue("path", path, "must not contain '..'")
    return path


def integer(value: object, *, minimum: int = 0, maximum: int = 2**63 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue("number", value, "must be a whole number")
    if not minimum <= value <= maximum:
        raise InvalidValue("number", value, f"must be between {minimum} and {maximum}")
    return value


@dataclass(frozen=True)
class Direct:
    """A command that is one program, no shell: what a sudoers rule can name.

    Kept beside the text so a non-root login runs it through a narrow rule
    (apps.remote.sudo) instead of a root shell. `user` is the OS user it runs as;
    `timeout`, a limit of the program's own (seconds).
    """

    argv: tuple[str, ...]
    user: str = "root"
    timeout: int | None = None


@dataclass(frozen=True)
class Command:
    """A shell command line whose every value was quoted by this module.

    `secrets` are substrings replaced by *** wherever the command is shown or
    logged (a password passed to psql, say). `shown`, when set, is what the
    command does in words a person reads in the log (the SQL psql runs rather
    than the runuser wrapper); `stdin`, the input it needs (that SQL); `direct`, the
    one program it is, when it is one (`cmd`, a cluster's program as its owner);
    `as_login`, run as the login itself, never through sudo (`sudo -n -l`).
    """

    text: str
    secrets: tuple[str, ...] = field(default=(), repr=False)
    shown: str | None = field(default=None, compare=False)
    stdin: bytes | None = field(default=None, repr=False)
    direct: Direct | None = field(default=None, compare=False, repr=False)
    as_login: bool = field(default=False, compare=False)

    def redacted(self) -> str:
        """What the log says the command does (`shown`, or else its text), secrets hidden."""
        return self._hide_secrets(self.text if self.shown is None else self.shown)

    def redacted_text(self) -> str:
        """The whole command line, wrappers and all, secrets hidden (for debug logs)."""
        return self._hide_secrets(self.text)

    def _hide_secrets(self, text: str) -> str:
        for secret in self.secrets:
            # Quoting rewrites a secret that contains a quote: hide both spellings.
            text = text.replace(shlex.quote(secret), "***").replace(secret, "***")
        return text

    def __str__(self) -> str:
        return self.redacted()


def quote(value: str | int) -> str:
    """The one quoting helper: every value that reaches a shell passes here."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidValue("argument", value, "must be text or a whole number")
    return shlex.quote(str(value))


def cmd(*argv: str | int, secrets: tuple[str, ...] = ()) -> Command:
    """A plain command: each argument is quoted, none is interpreted by the shell."""
    if not argv:
        raise InvalidValue("command", argv, "must not be empty")
    return Command(" ".join(quote(a) for a in argv), secrets,
                   direct=Direct(tuple(str(a) for a in argv)))


class _QuotingFormatter(string.Formatter):
    def format_field(self, value: object, format_spec: str) -> str:
        if isinstance(value, Command):  # a nested command is already quoted
            return value.text
        if isinstance(value, (list, tuple)):
            return " ".join(quote(v) for v in value)
        return quote(value)  # type: ignore[arg-type]


def script(template: str, /, secrets: tuple[str, ...] = (), shown: str | None = None,
           **values: object) -> Command:
    """A shell snippet (pipes, redirects, ||) from a literal template.

    Placeholders `{name}` receive quoted values: a str or int becomes one
    argument, a list or tuple becomes several, a Command is inserted as the
    already-quoted command it is. `shown` is what the log says it does (see Command).
    """
    return Command(_QuotingFormatter().format(template, **values), secrets, shown)
