"""The base images docker-compose.yml and the Dockerfile name, or stand-ins for them.

No registry may be reachable. Then each official image is replaced by one
built from Debian bookworm's own packages, tagged with the official name so
that the unmodified Dockerfile and compose file use it (standins/*/Dockerfile
says how each differs). Their base comes from debootstrap, with this machine's
extra CA certificates, which HTTPS to PyPI and npm needs here.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .engine import Engine
from .log import fail, say

STANDINS = Path(__file__).resolve().parent / "standins"
# The official name each stand-in directory is tagged with.
OFFICIAL = {"python": "python:3.11-slim-bookworm", "node": "node:20-bookworm-slim",
            "postgres": "postgres:15", "redis": "redis:7"}
BASE = "local/debian:bookworm"
CA_DIR = Path("/usr/local/share/ca-certificates")
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
CA_ENV = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")
BASE_TAR = "debian-bookworm-rootfs.tar"


def ensure_base_images(engine: Engine, cache: Path | None) -> list[str]:
    """Pull each official image, or build its stand-in; returns the ones stood in for."""
    stood_in = []
    for directory, name in OFFICIAL.items():
        if engine.docker("pull", name, check=False, timeout=120).returncode == 0:
            say(f"  pulled {name}")
            continue
        if not stood_in:
            _import_base(engine, cache)
        engine.docker("build", "-t", name, str(STANDINS / directory), timeout=1200)
        say(f"  {name}: stand-in built from {STANDINS.name}/{directory}")
        stood_in.append(name)
    return stood_in


def _import_base(engine: Engine, cache: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="pozol-rootfs-", dir="/var/tmp") as scratch:
        tar = (cache or Path(scratch)) / BASE_TAR
        if tar.exists():
            say(f"  base: {tar} (from --cache)")
        else:
            _debootstrap(Path(scratch) / "rootfs", tar)
        changes = [f"ENV {name}={CA_BUNDLE}" for name in CA_ENV] + ["ENV LANG=C.UTF-8"]
        argv = ["import", *(arg for c in changes for arg in ("--change", c)), str(tar), BASE]
        engine.docker(*argv, timeout=600)
        say(f"  base: imported as {BASE}")


def _debootstrap(rootfs: Path, tar: Path) -> None:
    mirror = debian_mirror()
    done = subprocess.run(["nice", "debootstrap", "--variant=minbase",
                           "--include=ca-certificates", "bookworm", str(rootfs), mirror],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        fail(f"debootstrap failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    for crt in CA_DIR.glob("*.crt"):
        shutil.copy(crt, rootfs / CA_DIR.relative_to("/") / crt.name)
    subprocess.run(["chroot", str(rootfs), "update-ca-certificates"], check=True,
                   capture_output=True)
    shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
    (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True)
    tar.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tar), "."],
                   check=True)
    say(f"  base: debootstrap of bookworm from {mirror}, {tar.stat().st_size >> 20} MiB")


def debian_mirror() -> str:
    """The Debian mirror apt uses here (deb822 sources or sources.list)."""
    sources = [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]
    for path in sources:
        for line in path.read_text().splitlines() if path.exists() else []:
            words = line.split()
            if words[:1] == ["URIs:"] and "security" not in line:
                return words[1]
            if words[:1] == ["deb"] and "security" not in line:
                return next(w for w in words[1:] if "://" in w)
    return "http://deb.debian.org/debian"
