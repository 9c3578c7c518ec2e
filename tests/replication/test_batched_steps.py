"""A run's quick steps batched per side (apps.replication.steps._run_batch), each
side's batch run by the real /bin/sh with a fake zfs that keeps its holds in a file:
every step judged on its own, holds recorded as they stand, the first failure kept."""

from __future__ import annotations

import os
import subprocess

import pytest

from apps.ops.engine import StepContext
from apps.remote.shell import Result
from apps.replication import steps
from apps.replication.core.planner import Side, Step, StepKind
from apps.replication.models import ReplicationLink
from tests.replication import factories

pytestmark = pytest.mark.django_db

# Holds are lines "tag snapshot" in $HOLDS; snapshots named *missing* do not exist.
FAKE_ZFS = """#!/bin/sh
printf '%s\\n' "$*" >> "$HOLDS.calls"
verb=$1 tag=$2; shift 2
for s; do case $s in *missing*) echo "cannot hold '$s': dataset does not exist" >&2
  exit 1;; esac; done
for s; do
  if [ "$verb" = hold ]; then
    grep -qxF "$tag $s" "$HOLDS" 2>/dev/null \\
      && { echo "cannot hold '$s': tag already exists on this dataset" >&2; exit 1; }
    echo "$tag $s" >> "$HOLDS"
  fi
done
"""


@pytest.fixture
def local(tmp_path, monkeypatch):
    """Every host is this machine's /bin/sh with the fake zfs first on its PATH."""
    (tmp_path / "zfs").write_text(FAKE_ZFS)
    (tmp_path / "zfs").chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}",
           "HOLDS": str(tmp_path / "holds")}

    def run(command, *, timeout=60.0, check=True, stdin=None):
        done = subprocess.run(["/bin/sh", "-c", command.text], env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)
        return Result(command.redacted(), done.returncode, done.stdout, done.stderr)

    monkeypatch.setattr(steps, "_on", lambda host: run)
    monkeypatch.setattr(StepContext, "runner", lambda self: run)
    return tmp_path


def _hold(side: Side, snapshot: str) -> Step:
    return Step(StepKind.HOLD, side, snapshot, f"zfs hold {snapshot}")


def _run(link, planned):
    ctx = StepContext(factories.running(link))
    ctx.state["source_caps"] = {}
    return steps._run_batch(ctx, link, planned)


@pytest.fixture
def link():
    row = factories.link(factories.source(), factories.target())
    return ReplicationLink.objects.select_related("source_host", "target_host").get(pk=row.pk)


def test_holds_of_one_side_are_taken_with_one_zfs_command(local, link, monkeypatch):
    monkeypatch.setattr(steps, "_caps", lambda ctx, name: None)
    planned = [_hold(Side.SOURCE, "tank/pg/data@a"), _hold(Side.SOURCE, "tank/pg/wal@a"),
               _hold(Side.TARGET, "backup/db1/pg/data@a")]
    assert _run(link, planned) is None
    calls = (local / "holds.calls").read_text().splitlines()
    assert sorted(calls) == sorted(["hold pozol-link-main tank/pg/data@a tank/pg/wal@a",
                                    "hold pozol-link-main backup/db1/pg/data@a"])
    link.refresh_from_db()
    assert sorted(link.held) == ["source:tank/pg/data@a", "source:tank/pg/wal@a",
                                 "target:backup/db1/pg/data@a"]


def test_a_failed_hold_is_judged_alone_and_the_others_stay_recorded(local, link, monkeypatch):
    monkeypatch.setattr(steps, "_caps", lambda ctx, name: None)
    (local / "holds").write_text("pozol-link-main tank/pg/wal@a\n")  # a run before held it
    planned = [_hold(Side.SOURCE, "tank/pg/data@missing"), _hold(Side.SOURCE, "tank/pg/wal@a"),
               _hold(Side.TARGET, "backup/db1/pg/data@a")]
    position, failure = _run(link, planned)
    assert position == 0 and failure.code == "hold_failed"
    assert "dataset does not exist" in failure.error
    link.refresh_from_db()
    # the missing one's record dropped; the one already held and the target's kept
    assert sorted(link.held) == ["source:tank/pg/wal@a", "target:backup/db1/pg/data@a"]
    assert link.state == ReplicationLink.State.FAILED
