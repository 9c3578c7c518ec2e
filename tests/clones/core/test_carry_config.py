"""A clone of a cluster whose configuration lives outside its data directory (Debian's
/etc/postgresql layout, issue 21) gets its own copy, and the origin's files are only
read: the copy step of the creation script, run here in a scratch directory."""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import replace
from pathlib import Path

from apps.clones.core import commands
from tests.clones.core.test_layout import ORIGIN, layout

DEBIAN = replace(ORIGIN, external_config=True,
                 config_file="/etc/postgresql/15/main/postgresql.conf",
                 ident_file="/etc/postgresql/15/main/pg_ident.conf", server_version_num=150020)


def carry(origin, data: Path) -> subprocess.CompletedProcess:
    step = commands._carry(origin)
    return subprocess.run(["sh", "-c", f'set -e; d="$1"; cd "$d"; {step.text}', "sh", str(data)],
                          capture_output=True, text=True, timeout=10)


def origin_files(tmp_path: Path):
    etc = tmp_path / "etc"
    (etc / "conf.d").mkdir(parents=True)
    (etc / "postgresql.conf").write_text("data_directory = '/var/lib/postgresql/15/main'\n"
                                         "include_dir = 'conf.d'\n")
    (etc / "conf.d" / "50-listen.conf").write_text("port = 5432\n")
    (etc / "pg_ident.conf").write_text("map root postgres\n")
    origin = replace(DEBIAN, config_file=str(etc / "postgresql.conf"),
                     ident_file=str(etc / "pg_ident.conf"))
    return etc, origin


def sums(directory: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in directory.rglob("*") if p.is_file()}


def test_the_origins_configuration_is_copied_and_pointed_at_the_clones_files(tmp_path):
    etc, origin = origin_files(tmp_path)
    before = sums(etc)
    data = tmp_path / "clone" / "pgdata"
    data.mkdir(parents=True)
    done = carry(origin, data)
    assert done.returncode == 0, done.stderr
    conf = (data / "postgresql.conf").read_text()
    assert conf.startswith("data_directory = '/var/lib/postgresql/15/main'\n")
    # Read last, so the clone's own paths win over the origin's.
    assert conf.endswith(f"data_directory = '{data}'\nhba_file = '{data}/pg_hba.conf'\n"
                         f"ident_file = '{data}/pg_ident.conf'\n")
    assert (data / "conf.d" / "50-listen.conf").read_text() == "port = 5432\n"
    assert (data / "pg_ident.conf").read_text() == "map root postgres\n"
    assert sums(etc) == before


def test_without_the_origins_files_the_clone_gets_empty_ones(tmp_path):
    # A drill on a replication target: the origin's /etc is on the source host.
    data = tmp_path / "pgdata"
    data.mkdir()
    done = carry(replace(DEBIAN, config_file=None, ident_file=None), data)
    assert done.returncode == 0, done.stderr
    assert (data / "postgresql.conf").read_text().lstrip().startswith("# PoZoL clone")
    assert (data / "pg_ident.conf").read_text() == ""


def test_a_data_directory_postgresql_conf_could_not_name_is_refused(tmp_path):
    data = tmp_path / "it's here"
    data.mkdir()
    done = carry(origin_files(tmp_path)[1], data)
    assert done.returncode != 0 and "cannot name" in done.stderr


def test_a_clone_of_an_outside_configuration_turns_off_what_points_at_the_origin():
    settings = layout(origin=DEBIAN).settings()
    assert settings["ssl"] == "off" and settings["external_pid_file"] == ""
    assert settings["cluster_name"] == "pozol-dev1"
    assert "stats_temp_directory" in layout(origin=replace(
        DEBIAN, server_version_num=140011)).settings()
    assert "ssl" not in layout().settings() and layout().settings()["external_pid_file"] == ""
    assert commands._carry(ORIGIN).text == ":"
