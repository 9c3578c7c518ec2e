"""The commands that read and write one setting on a host, per layer, and the reading of
what they print. Pure: apps.tuning.appliers runs them through a Runner.

Values reach commands only through apps.remote.commands. PostgreSQL settings are read
and written by apps.remote.alter_system, the one home WAL archiving shares.
"""

from __future__ import annotations

from apps.remote import commands as c
from apps.remote.commands import Command
from apps.remote.facts import arc
from apps.tuning.core.profiles import SYSCTL_COUNTERPART

SYSCTL_FILE = "/etc/sysctl.d/90-pozol.conf"
MODPROBE_FILE = "/etc/modprobe.d/zfs.conf"
MODULE_PARAMETERS = "/sys/module/zfs/parameters"
ARC_MAX = "zfs_arc_max"

# A config file line replaced (or dropped) with the new line on stdin: the command and
# what it reads.
Persist = tuple[Command, bytes]


# ---- ZFS dataset properties ----------------------------------------------------

def zfs_get(dataset: str, prop: str) -> Command:
    return c.cmd("zfs", "get", "-Hp", "-o", "value,source", c.zfs_property(prop),
                 c.dataset_name(dataset))


def parse_zfs_get(stdout: str) -> dict:
    value, _, source = stdout.strip().partition("\t")
    return {"value": value, "source": source}


def zfs_set(dataset: str, prop: str, value: str) -> Command:
    return c.cmd("zfs", "set", f"{c.zfs_property(prop)}={c.zfs_property_value(value)}",
                 c.dataset_name(dataset))


def zfs_inherit(dataset: str, prop: str) -> Command:
    """Back to inherited: how a property that was never set locally is restored."""
    return c.cmd("zfs", "inherit", c.zfs_property(prop), c.dataset_name(dataset))


# ---- sysctls ---------------------------------------------------------------------

def sysctl_names(name: str) -> list[str]:
    """The sysctl, and the other member of its vm.dirty_* pair: the kernel keeps one
    member of a pair, so reading both lets a rollback write back the non-zero one."""
    names = [c.sysctl_name(name)]
    if name in SYSCTL_COUNTERPART:
        names.append(SYSCTL_COUNTERPART[name])
    return names


def sysctl_read(names: list[str]) -> Command:
    return c.cmd("sysctl", "-n", *names)


def parse_sysctl(names: list[str], stdout: str) -> dict:
    lines = stdout.split()
    before = {"value": lines[0]}
    if len(lines) > 1:
        before["partner"] = {"name": names[1], "value": lines[1]}
    return before


def sysctl_write(name: str, value: str) -> Command:
    return c.cmd("sysctl", "-w", f"{c.sysctl_name(name)}={plain(value)}")


def sysctl_persist(name: str, value: str | None) -> Persist:
    """PoZoL's sysctls are kept in one file of its own; None removes the line."""
    return persist_line(SYSCTL_FILE, c.sysctl_name(name),
                        None if value is None else f"{name} = {plain(value)}")


# ---- ZFS module parameters -----------------------------------------------------

def module_parameter(name: str) -> str:
    return f"{MODULE_PARAMETERS}/{c.module_param_name(name)}"


def module_read(name: str) -> Command:
    return c.cmd("cat", module_parameter(name))


def arcstats_read() -> Command:
    return c.cmd("cat", arc.PROC_ARCSTATS)


def parse_arc_c_max(stdout: str) -> int | None:
    return arc.parse_arcstats_proc(stdout).get("c_max")


def module_write(name: str, value: str) -> Command:
    path = module_parameter(name)
    return c.script("printf '%s\\n' {value} > {path}", value=plain(value), path=path)


def module_persist(name: str, value: str | None) -> Persist:
    return persist_line(MODPROBE_FILE, f"options zfs {c.module_param_name(name)}",
                        None if value is None else f"options zfs {name}={plain(value)}")


# ---- values and config files ---------------------------------------------------------

def plain(value: str) -> str:
    """Sysctl and module values are numbers or simple words, never shell or file syntax."""
    text = str(value)
    if not text or not all(ch.isalnum() or ch in "._-" for ch in text):
        raise c.InvalidValue("value", text, "use letters, digits, '.', '_' or '-'")
    return text


_PERSIST = """\
set -e
f={path}; tmp="$f.pozol-tmp"
mkdir -p "$(dirname "$f")"
{{ [ -e "$f" ] && grep -v -e {prefix_eq} -e {prefix_space} "$f" || true; cat; }} > "$tmp"
if [ -s "$tmp" ]; then mv -f "$tmp" "$f"; else rm -f "$tmp" "$f"; fi
"""


def persist_line(path: str, key: str, line: str | None) -> Persist:
    """Replace (or drop) the line for `key` in a config file, atomically."""
    text = (line + "\n") if line else ""
    return (c.script(_PERSIST, path=path, prefix_eq=f"^{_regex(key)}=",
                     prefix_space=f"^{_regex(key)} "), text.encode())


def _regex(key: str) -> str:
    return key.replace(".", "\\.")
