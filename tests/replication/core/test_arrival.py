"""The target's wait for a transfer's snapshot (apps.replication.core.arrival), run by the
real /bin/sh with a fake zfs that answers the guid of the snapshots in a file."""

from __future__ import annotations

import os
import subprocess

import pytest

from apps.replication.core import arrival

FAKE_ZFS = """#!/bin/sh
# zfs get -Hp -o value guid SNAPSHOT: the guid of SNAPSHOT in $SNAPSHOTS ("name guid" lines)
eval "last=\\${$#}"
awk -v s="$last" '$1 == s { print $2; found = 1 } END { exit !found }' "$SNAPSHOTS" \
  || { echo "cannot open '$last': dataset does not exist" >&2; exit 1; }
"""


@pytest.fixture
def host(tmp_path):
    (tmp_path / "zfs").write_text(FAKE_ZFS)
    (tmp_path / "zfs").chmod(0o755)
    (tmp_path / "snapshots").write_text(f"backup/db@a {GUID}\n")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}",
           "SNAPSHOTS": str(tmp_path / "snapshots")}

    def run(command):
        return subprocess.run(["/bin/sh", "-c", command.text], env=env, capture_output=True,
                              text=True, timeout=60, check=False)

    return run


def test_a_snapshot_there_with_the_guid_sent_has_arrived(host):
    done = host(arrival.wait_command("backup/db", "backup/db@a", GUID, 30))
    assert (done.returncode, done.stdout.strip()) == (0, "pozol-arrived")


GUID = 17942279384745021431  # past 2**63: a guid is an unsigned 64-bit number


@pytest.mark.parametrize("snapshot, guid", [("backup/db@b", GUID), ("backup/db@a", 222)])
def test_a_snapshot_missing_or_another_of_its_name_has_not(host, snapshot, guid):
    done = host(arrival.wait_command("backup/db", snapshot, guid, 1))
    assert (done.returncode, done.stdout.strip()) == (1, "pozol-not-yet")
