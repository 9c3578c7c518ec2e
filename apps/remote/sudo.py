"""A login that is not root: which command runs through which sudoers rule.

A host may be reached as an ordinary user with sudo. Every command then runs
through `sudo -n` (never a password prompt: a refusal is an error at once,
`SudoRefused`), by one of two routes, chosen from how the command was built
(`Command.direct`, set by `commands.cmd` and `ClusterTarget.as_owner`):

- `cluster`: a program of a cluster's bin_dir run as its owner (psql, pg_ctl,
  pgbench) runs as `sudo -n -u OWNER -- BIN_DIR/PROGRAM ...`;
- `run`: everything PoZoL runs as root (zfs, zpool, sysctl, and every script:
  discovery's bundles, clones, replication, restarts, detached units) runs as
  `sudo -n pozol-run NONCE EXPIRES SIGNATURE SCRIPT`, the helper of
  apps.remote.signed, which runs a script only when the control plane signed
  it with the host's key.

No rule names a shell, zfs or sysctl: each of those is root to whoever holds
the login (a shell runs anything; a crafted `zfs receive` stream brings a setuid
program and mounts it; kernel.core_pattern names a program the kernel runs as
root). Through the helper the login alone can run nothing as root that the
control plane did not sign. `RULES_TEXT` says what each rule grants, in the
words the README repeats. The pure parts: `route`, `wrap`, `sudoers` (the file
an operator installs) and `check` (what `sudo -n -l` says is missing).
"""

from __future__ import annotations

import fnmatch
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from apps.remote import signed
from apps.remote.commands import Command, InvalidValue, abs_path, os_user, script
from apps.remote.signed import HELPER_PATH, Signed

ROOT = "root"
# Through the cluster route a command gets sudo's environment, where env_reset
# drops LC_ALL; PoZoL's parsers read the C locale's words (psql's errors).
LOCALE_DEFAULT = 'env_keep += "LC_ALL"'

# The programs of a cluster's bin_dir PoZoL runs as its owner on their own (outside a
# script): ClusterTarget's psql and pg_ctl, benchmarks' and experiments' pgbench.
CLUSTER_PROGRAMS = ("psql", "pg_ctl", "pgbench")


@dataclass(frozen=True)
class Rule:
    """One line of PoZoL's sudoers file: what it lets the login run, and as whom."""

    name: str
    runas: str
    commands: tuple[str, ...]
    grants: str  # what an operator gives away with it, honestly

    def line(self, login: str) -> str:
        return f"{login} ALL=({self.runas}) NOPASSWD: {', '.join(self.commands)}"


RULES_TEXT = {
    "run": f"{HELPER_PATH} as root: the scripts PoZoL's control plane signs with this "
           "host's key (zfs, zpool, sysctl, discovery, snapshots, clones, replication, "
           "restarts), each once; the login alone can sign none. Install the helper "
           "from GET /api/hosts/<id>/sudoers/ first",
    "cluster": "psql, pg_ctl and pgbench of the cluster's bin_dir as its owner: the "
               "cluster's superuser role, and through it the owner's OS account",
}


@dataclass(frozen=True)
class Cluster:
    """What the `cluster` rule names: a cluster's owner and its programs."""

    owner: str
    bin_dir: str

    def __post_init__(self) -> None:
        os_user(self.owner)
        command_path(self.bin_dir)


def command_path(value: object) -> str:
    """A path as a sudoers line can name it, or InvalidValue: it comes from a host (a
    postmaster's binary), and a comma or colon would end the command there and start
    another in the file an operator installs."""
    path = abs_path(value)
    if set(path) & set(":,=\\"):
        raise InvalidValue("path", path, "sudoers cannot name a path with : , = or \\")
    return path


def rules(clusters: Iterable[Cluster] = ()) -> list[Rule]:
    """Every rule a host needs, in the order the file lists them."""
    found = [Rule("run", ROOT, (HELPER_PATH,), RULES_TEXT["run"])]
    for owner in sorted({c.owner for c in clusters}):
        dirs = sorted({c.bin_dir.rstrip("/") for c in clusters if c.owner == owner})
        found.append(Rule(f"cluster:{owner}", os_user(owner),
                          tuple(f"{d}/{p}" for d in dirs for p in CLUSTER_PROGRAMS),
                          RULES_TEXT["cluster"]))
    return found


def sudoers(login: str, clusters: Iterable[Cluster] = ()) -> str:
    """The file an operator installs as /etc/sudoers.d/pozol (mode 0440, `visudo -cf`)."""
    login = os_user(login)
    lines = [
        f"# PoZoL's sudoers rules for the login {login!r}: the commands PoZoL runs, each",
        "# line with what it grants. Install as /etc/sudoers.d/pozol, mode 0440.",
        "# PoZoL checks them at every discovery (sudo -n -l) and names a missing one.",
        "",
        "# LC_ALL=C reaches the commands run without a shell (parsers read C-locale text).",
        f"Defaults:{login} {LOCALE_DEFAULT}",
    ]
    for rule in rules(clusters):
        comment = textwrap.wrap(f"{rule.name}: {rule.grants}.", 78)
        lines += ["", *(f"# {text}" for text in comment), rule.line(login)]
    return "\n".join(lines) + "\n"


# -- routing a command ---------------------------------------------------------


@dataclass(frozen=True)
class Route:
    rule: str  # "run", "cluster"
    user: str = ROOT


def route(command: Command) -> Route:
    """Which rule a command needs, from how it was built."""
    direct = command.direct
    if direct is not None and direct.user != ROOT:
        return Route("cluster", direct.user)
    return Route("run")


# Signs a script's text for a run within so many seconds (apps.remote.signed).
Signer = Callable[[str, int], Signed]


def wrap(command: Command, *, path: str, grace: int, seconds: int, sign: Signer) -> Command:
    """`command` as a non-root login runs it: through sudo -n, under the deadline.

    The deadline's `timeout` runs as the login and signals sudo, which passes the
    signal on to the command.
    """
    found = route(command)
    direct = command.direct
    if found.rule == "cluster":
        # From `/`: the owner cannot read the login's home, and PostgreSQL's programs
        # complain on every call when they cannot change back to it.
        limit = ["timeout", direct.timeout] if direct.timeout else []
        return script("cd / && PATH={path} LC_ALL=C timeout -k {grace} {seconds} {limit} "
                      "sudo -n -u {user} -- {argv}", path=path, grace=grace, seconds=seconds,
                      limit=limit, user=found.user, argv=list(direct.argv))
    inner = f"PATH={path}; LC_ALL=C; export PATH LC_ALL\n{command.text}"
    return script("PATH={path} LC_ALL=C timeout -k {grace} {seconds} sudo -n {argv}",
                  path=path, grace=grace, seconds=seconds,
                  argv=sign(inner, seconds + grace).argv(inner))


# What sudo -n prints when it will not run a command: not allowed (it asks for a
# password first, so -n says this), no sudoers entry at all, or no sudo.
_REFUSALS = re.compile(
    r"^(sudo: a password is required|sudo: a terminal is required.*|"
    r"sudo: sorry, you must have a tty to run sudo|"
    r"Sorry, user \S+ (?:is not allowed to execute|may not run sudo).*|"
    r"sudo: .*(?:not allowed|not in the sudoers file).*|"
    r"(?:sh: \d+: )?sudo: (?:not found|command not found)|"
    r"sudo: \S+: command not found)$", re.M)


def refusal(stderr: str) -> str | None:
    """sudo's own line when it refused to run the command, or the helper's (pozol-run:
    a signature it does not trust, a nonce it has seen), else None."""
    match = _REFUSALS.search(stderr)
    if match:
        return match.group(0).strip()
    words = signed.refusal(stderr)
    return f"pozol-run refused: {words}" if words else None


# -- checking what sudo -n -l allows ----------------------------------------------

LIST_COMMAND = ("sudo", "-n", "-l")


@dataclass(frozen=True)
class Privilege:
    """One line of `sudo -l`: as whom, with which tags, which commands."""

    runas_users: tuple[str, ...]
    commands: tuple[tuple[str, bool], ...]  # (command, needs no password)


@dataclass(frozen=True)
class Listing:
    defaults: tuple[str, ...] = ()
    privileges: tuple[Privilege, ...] = ()


_DEFAULTS_HEAD = re.compile(r"^Matching Defaults entries for .+:$")
_PRIVILEGES_HEAD = re.compile(r"^User .+ may run the following commands on .+:$")
_PRIVILEGE = re.compile(r"^\((?P<runas>[^)]*)\)\s*(?P<rest>.*)$")
_TAG = re.compile(r"^((?:NO)?(?:PASSWD|EXEC|SETENV|LOG_INPUT|LOG_OUTPUT|MAIL|FOLLOW|"
                  r"INTERCEPT|NOINTERCEPT)|CWD=\S+|CHROOT=\S+):\s*")


def parse_listing(text: str) -> Listing:
    """`sudo -n -l` as the login, parsed (the short form, sudo 1.8 and 1.9)."""
    section = None
    defaults: list[str] = []
    privileges: list[Privilege] = []
    for raw in text.splitlines():
        line = raw.strip()
        if _DEFAULTS_HEAD.match(line):
            section = "defaults"
        elif _PRIVILEGES_HEAD.match(line):
            section = "privileges"
        elif line and section == "defaults":
            defaults += [d.strip() for d in _split_commas(line) if d.strip()]
        elif line and section == "privileges" and (match := _PRIVILEGE.match(line)):
            privileges.append(_privilege(match.group("runas"), match.group("rest")))
    return Listing(tuple(defaults), tuple(privileges))


def _split_commas(text: str) -> list[str]:
    # sudo escapes a comma inside a value (secure_path=a\:b, env_keep+="A, B") with
    # a backslash or quotes; split only on the others.
    parts, current, quoted, escaped = [], "", False, False
    for char in text:
        if escaped:
            current, escaped = current + char, False
        elif char == "\\":
            current, escaped = current + char, True
        elif char == '"':
            current, quoted = current + char, not quoted
        elif char == "," and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _privilege(runas: str, rest: str) -> Privilege:
    users = tuple(u.strip() for u in runas.split(":")[0].split(",") if u.strip()) or (ROOT,)
    nopasswd = False
    commands: list[tuple[str, bool]] = []
    for item in _split_commas(rest):
        item = item.strip()
        while match := _TAG.match(item):
            if match.group(1) in ("NOPASSWD", "PASSWD"):
                nopasswd = match.group(1) == "NOPASSWD"
            item = item[match.end():]
        if item:
            commands.append((item, nopasswd))
    return Privilege(users, tuple(commands))


@dataclass
class SudoCheck:
    """What discovery found: the login, and which of PoZoL's rules sudo does not grant."""

    login: str
    ok: bool = False
    refused: str | None = None  # sudo's words when it would not even list
    missing: list[dict[str, str]] = field(default_factory=list)


def check(login: str, exit_code: int, stdout: str, stderr: str,
          needed: list[Rule]) -> SudoCheck:
    """The rules of `needed` that `sudo -n -l`'s answer does not grant without a password."""
    if exit_code != 0:
        words = refusal(stderr) or (stderr.strip() or stdout.strip() or f"exit {exit_code}")
        return SudoCheck(login, refused=words, missing=[_missing(r, login) for r in needed])
    listing = parse_listing(stdout)
    missing = [_missing(r, login) for r in needed if not _granted(r, listing)]
    if not _keeps_locale(listing.defaults):
        missing.insert(0, {"rule": "locale", "line": f"Defaults:{login} {LOCALE_DEFAULT}",
                           "grants": "nothing: LC_ALL=C reaches commands run without a shell"})
    return SudoCheck(login, ok=not missing, missing=missing)


def _missing(rule: Rule, login: str) -> dict[str, str]:
    return {"rule": rule.name, "line": rule.line(login), "grants": rule.grants}


def _keeps_locale(defaults: tuple[str, ...]) -> bool:
    for entry in defaults:
        name, _, value = entry.partition("=")
        if entry.strip() == "!env_reset":
            return True
        if name.strip().rstrip("+") == "env_keep":
            kept = value.strip().strip('"').split()
            if any(fnmatch.fnmatchcase("LC_ALL", pattern) for pattern in kept):
                return True
    return False


def _granted(rule: Rule, listing: Listing) -> bool:
    return all(_command_granted(rule.runas, path, listing) for path in rule.commands)


def _command_granted(runas: str, path: str, listing: Listing) -> bool:
    """Whether some privilege lets `path` (any arguments) run as `runas`, no password.

    A negated command (!/usr/bin/su) is not read: it never grants, and PoZoL does
    not run what an operator would negate. Arguments limited in the rule
    (`/usr/sbin/zfs list *`) do not grant: PoZoL passes others. Globs are read as
    fnmatch reads them, where sudo's `*` does not cross a `/`: close enough to say
    what is missing, never used to decide what runs.
    """
    for privilege in listing.privileges:
        if not ({runas, "ALL"} & set(privilege.runas_users)):
            continue
        for entry, nopasswd in privilege.commands:
            if nopasswd and _covers(entry, path):
                return True
    return False


def _covers(entry: str, path: str) -> bool:
    if entry == "ALL":
        return True
    program, _, args = entry.partition(" ")
    if args.strip() not in ("", "*"):  # PoZoL passes any arguments
        return False
    return fnmatch.fnmatchcase(_merged(path), _merged(program))


def _merged(path: str) -> str:
    """/bin, /sbin and /lib as /usr/bin, /usr/sbin and /usr/lib (a merged /usr)."""
    for top in ("/bin/", "/sbin/", "/lib/"):
        if path.startswith(top):
            return "/usr" + path
    return path
