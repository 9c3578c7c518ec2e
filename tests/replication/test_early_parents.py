"""A first run's target parents made in the plan's round trip (apps.replication.early),
run by the real /bin/sh with a fake zfs that keeps its datasets in a file: which
parents are there after it, and which datasets it made (what a run that ends at its
plan destroys). tests/integration/test_replication.py proves the undo on a real host."""

from __future__ import annotations

import os
import subprocess

from apps.replication import early

# Datasets are lines of $DATASETS; `create -p` makes each missing level, and fails
# outside a pool that is there (its first line).
FAKE_ZFS = """#!/bin/sh
eval "name=\\${$#}"
case $1 in
  list) grep -qxF "$name" "$DATASETS" && echo "$name" && exit 0
        echo "cannot open '$name': dataset does not exist" >&2; exit 1;;
  create) case $name in "$(head -n 1 "$DATASETS")"/*) ;; *)
            echo "cannot create '$name': no such pool" >&2; exit 1;; esac
          level=; for part in $(echo "$name" | tr / ' '); do level=${level:+$level/}$part
            grep -qxF "$level" "$DATASETS" || echo "$level" >> "$DATASETS"; done;;
esac
"""


def _run(tmp_path, names: list[str], datasets: list[str]) -> tuple[list[str], list[str]]:
    (tmp_path / "zfs").write_text(FAKE_ZFS)
    (tmp_path / "zfs").chmod(0o755)
    (tmp_path / "datasets").write_text("".join(f"{d}\n" for d in datasets))
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}",
           "DATASETS": str(tmp_path / "datasets")}
    done = subprocess.run(["/bin/sh", "-c", early.parents_batch(names).text], env=env,
                          capture_output=True, text=True, timeout=30, check=True)
    return early.made(names, done.stdout)


def test_every_missing_level_is_made_and_said_deepest_first(tmp_path):
    there, made = _run(tmp_path, ["tank/backup/pg", "tank/kept"], ["tank", "tank/kept"])
    assert there == ["tank/backup/pg", "tank/kept"]
    assert made == ["tank/backup/pg", "tank/backup"]  # never tank/kept, nor the pool
    assert (tmp_path / "datasets").read_text().split() == [
        "tank", "tank/kept", "tank/backup", "tank/backup/pg"]


def test_a_parent_that_cannot_be_made_is_left_to_the_plan_s_own_step(tmp_path):
    there, made = _run(tmp_path, ["gone/backup", "tank/b"], ["tank"])
    assert there == ["tank/b"] and made == ["tank/b"]


def test_a_name_that_only_starts_like_a_made_one_is_not_taken_for_it(tmp_path):
    there, made = _run(tmp_path, ["tank/ab/c"], ["tank", "tank/a"])
    assert there == ["tank/ab/c"] and made == ["tank/ab/c", "tank/ab"]
