"""A host-own PostgreSQL 18 installation from the npm package that package.json pins."""

from __future__ import annotations

import subprocess

import pytest

from apps.demo.fleet import pgbin, up
from apps.demo.fleet.settings import PG_BIN_DIR, FleetError

needs_18 = pytest.mark.skipif(not (pgbin.package_dir(18) / "bin/postgres").exists(),
                              reason="postgresql-18 is not installed: run make node")


@needs_18
def test_18_runs_from_the_hosts_own_directory_beside_the_15_clients(tmp_path):
    bin_dir = pgbin.install(18, tmp_path)
    assert bin_dir == tmp_path / "postgresql-18" / "bin"
    version = subprocess.run([bin_dir / "postgres", "--version"], capture_output=True,
                             text=True, check=True).stdout
    assert version.startswith("postgres (PostgreSQL) 18.")
    # a copy, so that the directory of the running postgres (discovery's bin_dir) has psql
    assert not (bin_dir / "postgres").is_symlink()
    assert (bin_dir / "psql").resolve() == (PG_BIN_DIR / "psql").resolve()
    assert (bin_dir / "pg_ctl").exists() and (bin_dir / "initdb").exists()


def test_15_is_the_machines_and_an_unpinned_major_is_refused_with_what_to_do(tmp_path):
    assert pgbin.install(15, tmp_path) == PG_BIN_DIR and not any(tmp_path.iterdir())
    with pytest.raises(FleetError, match="PostgreSQL 12 for test hosts comes from npm.*make node"):
        pgbin.check(12)


def test_hosts_beyond_the_subnet_are_refused(tmp_path):
    with pytest.raises(FleetError, match="hosts 254 to 255 do not fit"):
        up(2, state_dir=tmp_path / "fleet", subnet="127.0.128", first=254)
