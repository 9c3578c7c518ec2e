"""What a Docker engine changes on the machine, seen before and put back after.

dockerd sets net.ipv4.ip_forward=1, adds nft tables (through iptables-nft) and a
docker0 bridge; compose adds a bridge per network. Kernel modules it loads
(overlay, bridge, br_netfilter, veth...) are reported, not unloaded: something
else may have come to use them meanwhile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .log import detail, fail, say

PACKAGES = {"docker.io": "/usr/sbin/dockerd", "docker-compose": "/usr/bin/docker-compose",
            "nftables": "/usr/sbin/nft", "debootstrap": "/usr/sbin/debootstrap"}
FORWARDING = ("net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding")


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, **kwargs)


def install_missing() -> list[str]:
    """apt-get install what is missing; returns what was installed."""
    missing = [name for name, path in PACKAGES.items() if not Path(path).exists()]
    if missing:
        done = run(["apt-get", "install", "-y", "--no-install-recommends", *missing],
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if done.returncode != 0:
            fail(f"apt-get install {' '.join(missing)} failed: {done.stderr[-2000:]}")
    return missing


@dataclass
class MachineState:
    sysctls: dict[str, str]
    nft_tables: dict[str, str]  # "ip nat" -> the table as `nft list table` prints it
    links: set[str]
    modules: set[str]


def capture() -> MachineState:
    return MachineState(
        sysctls={name: _sysctl(name) for name in FORWARDING},
        nft_tables={table: _nft_table(table) for table in _nft_table_names()},
        links=_links(),
        modules=_modules(),
    )


def restore(before: MachineState) -> None:
    """Put back what capture() saw; say what was done and what could not be."""
    now = capture()
    for name, value in before.sysctls.items():
        if now.sysctls[name] != value:
            run(["sysctl", "-q", "-w", f"{name}={value}"], check=True)
            say(f"  {name}: {now.sysctls[name]} -> {value}")
    for table in sorted(set(now.nft_tables) - set(before.nft_tables)):
        run(["nft", "delete", "table", *table.split()], check=True)
        say(f"  nft: deleted table {table}")
    for table, text in before.nft_tables.items():
        if now.nft_tables.get(table) != text:
            # Changed (or removed) while the engine ran: back to what it was.
            if table in now.nft_tables:
                run(["nft", "delete", "table", *table.split()], check=True)
            run(["nft", "-f", "-"], input=text, check=True)
            say(f"  nft: restored table {table}")
    for link in sorted(now.links - before.links):
        run(["ip", "link", "delete", link])
        say(f"  ip link: deleted {link}")
    loaded = sorted(now.modules - before.modules)
    if loaded:
        say(f"  kernel modules loaded meanwhile, left loaded: {' '.join(loaded)}")
    _check_back(before)


def _check_back(before: MachineState) -> None:
    after = capture()
    differs = [what for what in ("sysctls", "nft_tables", "links")
               if getattr(after, what) != getattr(before, what)]
    if differs:
        detail(f"before: {before}\nafter: {after}")
        fail(f"the machine is not as it was: {', '.join(differs)} differ")


def remove_tree(root: Path) -> None:
    """Remove root, first unmounting anything the engine left mounted below it."""
    mounted = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
               if line.split()[1].startswith(f"{root}/")]
    for point in sorted(mounted, key=len, reverse=True):
        run(["umount", "-l", point])
        say(f"  unmounted {point}")
    shutil.rmtree(root)


def _sysctl(name: str) -> str:
    return Path("/proc/sys", *name.split(".")).read_text().strip()


def _nft_table_names() -> list[str]:
    listed = run(["nft", "list", "tables"], check=True).stdout.splitlines()
    return [line.removeprefix("table ").strip() for line in listed if line.startswith("table ")]


def _nft_table(table: str) -> str:
    return run(["nft", "list", "table", *table.split()], check=True).stdout


def _links() -> set[str]:
    listed = run(["ip", "-o", "link", "show"], check=True).stdout.splitlines()
    return {line.split(": ")[1].split("@")[0] for line in listed}


def _modules() -> set[str]:
    modules = Path("/proc/modules")  # absent in some containers: nothing to report then
    if not modules.exists():
        return set()
    return {line.split()[0] for line in modules.read_text().splitlines()}
