"""Reading and writing one setting on a host, per layer, through a Runner.

Each layer has `read` (what the host has now, with what is needed to put it
back) and `write`. Values reach commands only through apps.remote.commands;
PostgreSQL values travel as psql variables (`:'value'`), so psql quotes them.
"""

from __future__ import annotations

from apps.remote import commands as c
from apps.remote.cluster import ClusterTarget
from apps.remote.facts import arc
from apps.remote.shell import Runner
from apps.tuning.core.profiles import SYSCTL_COUNTERPART

SYSCTL_FILE = "/etc/sysctl.d/90-pozol.conf"
MODPROBE_FILE = "/etc/modprobe.d/zfs.conf"
MODULE_PARAMETERS = "/sys/module/zfs/parameters"
ARC_MAX = "zfs_arc_max"


# ---- ZFS dataset properties ----------------------------------------------------

def read_zfs(run: Runner, dataset: str, prop: str) -> dict:
    out = run(c.cmd("zfs", "get", "-Hp", "-o", "value,source", c.zfs_property(prop),
                    c.dataset_name(dataset))).stdout.strip()
    value, _, source = out.partition("\t")
    return {"value": value, "source": source}


def write_zfs(run: Runner, dataset: str, prop: str, value: str) -> None:
    run(c.cmd("zfs", "set", f"{c.zfs_property(prop)}={c.zfs_property_value(value)}",
              c.dataset_name(dataset)))


def reset_zfs(run: Runner, dataset: str, prop: str) -> None:
    """Back to inherited: how a property that was never set locally is restored."""
    run(c.cmd("zfs", "inherit", c.zfs_property(prop), c.dataset_name(dataset)))


# ---- sysctls ---------------------------------------------------------------------

def read_sysctl(run: Runner, name: str) -> dict:
    names = [c.sysctl_name(name)]
    # The kernel keeps one member of a vm.dirty_* pair: reading both lets a
    # rollback write back the member that was non-zero.
    if name in SYSCTL_COUNTERPART:
        names.append(SYSCTL_COUNTERPART[name])
    lines = run(c.cmd("sysctl", "-n", *names)).stdout.split()
    before = {"value": lines[0]}
    if len(lines) > 1:
        before["partner"] = {"name": names[1], "value": lines[1]}
    return before


def write_sysctl(run: Runner, name: str, value: str) -> None:
    run(c.cmd("sysctl", "-w", f"{c.sysctl_name(name)}={_plain(value)}"))


def persist_sysctl(run: Runner, name: str, value: str | None) -> None:
    """Keep PoZoL's sysctls in one file of its own; None removes the line."""
    _persist_line(run, SYSCTL_FILE, c.sysctl_name(name),
                  None if value is None else f"{name} = {_plain(value)}")


# ---- ZFS module parameters -----------------------------------------------------

def read_module(run: Runner, name: str) -> dict:
    """The parameter as the module shows it; for zfs_arc_max also the ceiling the ARC
    really has (arcstats c_max): the parameter may read 0 or a value OpenZFS ignored,
    and a rollback restores the ceiling, not the parameter's text (see rollback.py)."""
    path = f"{MODULE_PARAMETERS}/{c.module_param_name(name)}"
    before = {"value": run(c.cmd("cat", path)).stdout.strip()}
    if name == ARC_MAX:
        ceiling = read_arc_c_max(run)
        if ceiling is not None:
            before["arc_c_max"] = str(ceiling)
    return before


def read_arc_c_max(run: Runner) -> int | None:
    """arcstats c_max, the ARC's ceiling in force; None where the kstat cannot be read."""
    result = run(c.cmd("cat", arc.PROC_ARCSTATS), check=False)
    return arc.parse_arcstats_proc(result.stdout).get("c_max") if result.ok else None


def write_module(run: Runner, name: str, value: str) -> None:
    path = f"{MODULE_PARAMETERS}/{c.module_param_name(name)}"
    run(c.script("printf '%s\\n' {value} > {path}", value=_plain(value), path=path))


def persist_module(run: Runner, name: str, value: str | None) -> None:
    _persist_line(run, MODPROBE_FILE, f"options zfs {c.module_param_name(name)}",
                  None if value is None else f"options zfs {name}={_plain(value)}")


# ---- PostgreSQL settings -----------------------------------------------------------

_READ_SETTING = ("select setting, coalesce(unit, ''), vartype, source, "
                 "coalesce(sourcefile, ''), pending_restart from pg_settings "
                 "where name = :'name';\n")
_SHOW = "show :\"name\";\n"
_ALTER = "alter system set :\"name\" = :'value';\nselect pg_reload_conf();\n"
_RESET = "alter system reset :\"name\";\nselect pg_reload_conf();\n"


def read_pg(run: Runner, cluster: ClusterTarget, name: str) -> dict:
    name = c.pg_setting_name(name)
    row = run(cluster.psql(_READ_SETTING, name=name)).stdout.strip()
    if not row:
        raise c.InvalidValue("PostgreSQL setting", name, "this server has no such setting")
    setting, unit, vartype, source, sourcefile, pending = row.split("\t")
    shown = run(cluster.psql(_SHOW, name=name)).stdout.strip()
    return {"value": shown, "setting": setting, "unit": unit, "vartype": vartype,
            "source": source,
            "from_auto_conf": sourcefile.endswith("postgresql.auto.conf"),
            "pending_restart": pending == "t"}


def write_pg(run: Runner, cluster: ClusterTarget, name: str, value: str) -> None:
    run(cluster.psql(_ALTER, name=c.pg_setting_name(name), value=_pg_value(value)))


def reset_pg(run: Runner, cluster: ClusterTarget, name: str) -> None:
    """Remove PoZoL's ALTER SYSTEM line: the setting falls back to postgresql.conf."""
    run(cluster.psql(_RESET, name=c.pg_setting_name(name)))


# ---- helpers -------------------------------------------------------------------------

def _plain(value: str) -> str:
    """Sysctl and module values are numbers or simple words, never shell or file syntax."""
    text = str(value)
    if not text or not all(ch.isalnum() or ch in "._-" for ch in text):
        raise c.InvalidValue("value", text, "use letters, digits, '.', '_' or '-'")
    return text


def _pg_value(value: str) -> str:
    text = str(value)
    if "\n" in text or "\x00" in text or len(text) > 1024:
        raise c.InvalidValue("PostgreSQL value", text, "one line of at most 1024 characters")
    return text


_PERSIST = """\
set -e
f={path}; tmp="$f.pozol-tmp"
mkdir -p "$(dirname "$f")"
{{ [ -e "$f" ] && grep -v -e {prefix_eq} -e {prefix_space} "$f" || true; cat; }} > "$tmp"
if [ -s "$tmp" ]; then mv -f "$tmp" "$f"; else rm -f "$tmp" "$f"; fi
"""


def _persist_line(run: Runner, path: str, key: str, line: str | None) -> None:
    """Replace (or drop) the line for `key` in a config file, atomically."""
    text = (line + "\n") if line else ""
    run(c.script(_PERSIST, path=path, prefix_eq=f"^{_regex(key)}=",
                 prefix_space=f"^{_regex(key)} "), stdin=text.encode())


def _regex(key: str) -> str:
    return key.replace(".", "\\.")
