"""Bundled commands run by the host's /bin/sh: what reading the text cannot prove (a
listing's own `exit 0` ends only itself, a batch runs every step whatever the others
did, each one's status and output come back where they belong)."""

from __future__ import annotations

import subprocess

import pytest

from apps.remote.commands import cmd, script
from apps.replication.core import bundles
from apps.replication.core.listing import _SOURCE


def _sh(text: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", "-c", text], capture_output=True, text=True, timeout=30,
                          check=False)


def test_chained_outputs_split_back_and_an_inner_exit_ends_only_its_own_part():
    listing_like = script("printf 'a\\tb\\n'; exit 0")
    done = _sh(bundles.chained(listing_like, cmd("echo", "second"), cmd("printf", "x y"),
                               shown="three").text)
    assert done.returncode == 0
    assert bundles.parts(done.stdout, 3) == ["a\tb\n", "second\n", "x y"]


def test_chained_stops_at_the_first_failure():
    done = _sh(bundles.chained(cmd("echo", "one"), script("exit 3"), cmd("echo", "never"),
                               shown="x").text)
    assert done.returncode == 3
    assert "never" not in done.stdout


def test_chained_runs_the_real_listing_template_whole():
    listing = script(_SOURCE, datasets=["tank/none"], properties="guid", tools=["sh"])
    done = _sh(bundles.chained(listing, cmd("echo", "after"), shown="x").text)
    first, second = bundles.parts(done.stdout, 2)
    assert "pozol-missing\ttank/none" in first and "pozol-tool\tsh" in first
    assert second == "after\n"


def test_batch_runs_every_step_and_reports_each_status_and_output():
    done = _sh(bundles.batch([cmd("echo", "held"), script("echo 'no such hold' >&2; exit 1"),
                              script("printf 'kept going'")], shown="x").text)
    assert done.returncode == 0
    found = bundles.outcomes(done.stdout, 3)
    assert [o.exit_code for o in found] == [0, 1, 0]
    assert [o.output for o in found] == ["held", "no such hold", "kept going"]
    assert [o.ok for o in found] == [True, False, True]


def test_a_batch_cut_short_reports_the_steps_it_did_not_reach_as_not_run():
    done = _sh(bundles.batch([cmd("echo", "one"), cmd("echo", "two")], shown="x").text)
    cut = done.stdout[:done.stdout.index("two")]
    found = bundles.outcomes(cut, 2)
    assert found[0].ok and found[0].output == "one"
    assert found[1].exit_code == bundles.NOT_RUN and not found[1].ok


def test_parts_refuses_output_missing_a_part():
    with pytest.raises(ValueError):
        bundles.parts("only one\n", 2)


def test_chained_passes_the_one_stdin_to_the_part_that_reads_it(tmp_path):
    from dataclasses import replace

    key = replace(script("cat > {file}", file=str(tmp_path / "id")), stdin=b"secret\n")
    command = bundles.chained(key, cmd("echo", "listed"), shown="x")
    done = subprocess.run(["/bin/sh", "-c", command.text], input=command.stdin,
                          capture_output=True, timeout=30, check=False)
    assert (tmp_path / "id").read_bytes() == b"secret\n"
    assert bundles.parts(done.stdout.decode(), 2) == ["", "listed\n"]


def test_chained_refuses_two_readers_of_stdin():
    from dataclasses import replace

    reader = replace(cmd("cat"), stdin=b"x")
    with pytest.raises(ValueError):
        bundles.chained(reader, reader, shown="x")


def test_a_batch_whose_command_together_succeeds_runs_no_step_alone(tmp_path):
    steps = [script("echo alone >> {f}", f=str(tmp_path / "log")) for _ in range(2)]
    together = script("echo together >> {f}", f=str(tmp_path / "log"))
    done = _sh(bundles.batch(steps, shown="x", together=together).text)
    assert [o.exit_code for o in bundles.outcomes(done.stdout, 2)] == [0, 0]
    assert (tmp_path / "log").read_text() == "together\n"


def test_a_batch_whose_command_together_fails_runs_each_step_alone(tmp_path):
    log = tmp_path / "log"
    steps = [script("echo one >> {f}", f=str(log)), script("echo two >&2; exit 4")]
    together = script("echo 'cannot hold' >&2; exit 1")
    done = _sh(bundles.batch(steps, shown="x", together=together).text)
    found = bundles.outcomes(done.stdout, 2)
    assert [o.exit_code for o in found] == [0, 4] and found[1].output == "two"
    assert log.read_text() == "one\n"
