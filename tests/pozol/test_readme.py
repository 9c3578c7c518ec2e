"""The README's shell examples work verbatim against a running demo (issue 8, the front door).

The commands are read from README.md and run, in order, in one new shell
(nothing in its environment but PATH, HOME and LANG) in the checkout the demo
runs from, the way a newcomer pastes them after `make run`. Each must exit 0,
every HTTP answer must be a success, and the answers that matter are looked
at: a 201 for the new host, its discovery succeeded, datasets found, a plan
applied and rolled back, two benchmarks compared. A README that drifts from
the product fails here.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.conftest import TEST_FLEET_SUBNET
from tests.pozol.readme_demo import ROOT, running_demo
from tests.pozol.readme_shell import Command, NewShell, Result, commands, sh_blocks

README = ROOT / "README.md"
# The one place the README's text is changed: it shows the demo at its default
# origin, and the test's demo listens on a free port instead (beside a developer's
# `make run` on 8000). Every other character runs as written.
README_ORIGIN = "http://127.0.0.1:8000"

RUN = {"REST API", "Snapshots", "Snapshot policies", "Replication", "Clones",
       "Prometheus and Grafana", "Experiments", "Rollouts"}
NOT_RUN = {
    "Two commands": "`make run` is what the test starts (python -m apps.demo, after "
                    "`make deps`); `make test` is the suite this test is part of",
    "Production with docker-compose": "it needs a Docker engine and root: `make "
                                      "compose-check` runs it (tests/tools/compose_check)",
    "Supported and tested hosts": "its commands are the suite's own VM group (tests/vm, "
                                  "which `make test` runs) and a by-hand VM on a fixed "
                                  "subnet, a second guest beside the suite's",
    "Non-root login": "it installs the helper as root on a database host, not here; the "
                      "test hosts get the helper the API prints the same way "
                      "(tests/integration/test_sudo_login.py, tests/vm)",
    "Test hosts by hand": "its fleet takes a fixed subnet (127.0.79) and state directory, "
                          "which another checkout's README test would share",
}
# Beside the session's fleet_hosts (TEST_FLEET_SUBNET, hosts .1 and .2), which may
# be up: 127.X.Y becomes 127.X+1.Y, so each checkout's test subnet keeps its own.
_, _x, _y = TEST_FLEET_SUBNET.split(".")
DEMO_SUBNET = os.environ.get("POZOL_TEST_README_SUBNET", f"127.{int(_x) + 1}.{_y}")

# A read of something still running is read again, as a person would, until it is not.
RUNNING = {"pending", "running", "waiting", "applying"}
FOLLOW_SECONDS = 180


def readme_commands(sections: set[str]) -> list[Command]:
    blocks = sh_blocks(README.read_text())
    return [command for block in blocks if block.section in sections
            for command in commands(block)]


def test_every_shell_block_of_the_readme_is_run_or_says_why_not():
    sections = {block.section for block in sh_blocks(README.read_text())}
    assert sections - RUN - set(NOT_RUN) == set(), "a new ```sh section: run it here or say why not"
    assert RUN <= sections and set(NOT_RUN) <= sections, "a section listed here left the README"


def test_a_command_over_several_lines_stays_one_command():
    api = readme_commands(RUN)
    assert api[0].text.startswith("export TOKEN=$(.venv/bin/python manage.py create_api_token")
    added = next(c for c in api if c.text.startswith("ADDED="))
    assert added.text.count("\n") == 2 and added.text.endswith("-d @.pozol/spare-host.json)")


# --- what the answers must say --------------------------------------------------------

Check = Callable[[Result, NewShell], None]


@dataclass(frozen=True)
class Expect:
    what: str  # said when the README no longer shows it
    pattern: str  # searched in the command's text
    check: Check


def _http(*wanted: int) -> Check:
    def check(result: Result, shell: NewShell) -> None:
        assert result.http == list(wanted), f"HTTP {result.http}, expected {list(wanted)}"
    return check


def _status(*wanted: str) -> Check:
    def check(result: Result, shell: NewShell) -> None:
        assert result.json["status"] in wanted, f"status {result.json['status']!r}"
    return check


def _token(result: Result, shell: NewShell) -> None:
    assert re.fullmatch(r"pzl_\S{20,}", shell.value("TOKEN")), "no token in $TOKEN"


def _added(result: Result, shell: NewShell) -> None:
    assert result.json["name"] == "host3", "not the spare host make run left"
    assert result.json["operation"]["kind"] == "fleet.discover"


def _listed(result: Result, shell: NewShell) -> None:
    assert result.json["count"] > 0 and result.json["results"], "an empty list"


def _datasets(result: Result, shell: NewShell) -> None:
    names = {row["name"] for row in result.json["results"]}
    assert {"tank/pg/data", "tank/pg/wal"} <= names, names


def _facts(result: Result, shell: NewShell) -> None:
    assert result.json["kernel"] and result.json["clusters"] and result.json["datasets"]


def _discovering(result: Result, shell: NewShell) -> None:
    _http(202)(result, shell)
    assert result.json["kind"] == "fleet.discover"


def _profiles(result: Result, shell: NewShell) -> None:
    assert "OLTP on ZFS (safe)" in {p["name"] for p in result.json["results"]}


def _assigned(result: Result, shell: NewShell) -> None:
    assert result.json["profile"] == int(shell.value("SAFE"))


def _planned(result: Result, shell: NewShell) -> None:
    assert result.json["changes"], "a plan without changes"
    assert result.json["status"] in {"draft", "applied"}, result.json["status"]


def _measured(result: Result, shell: NewShell) -> None:
    _status("succeeded")(result, shell)
    assert result.json["summary"]["tps"] > 0


def _compared(result: Result, shell: NewShell) -> None:
    _http(201)(result, shell)
    assert result.json["before"]["id"] == int(shell.value("BEFORE"))
    assert result.json["after"]["id"] == int(shell.value("AFTER"))


def _snapshots(result: Result, shell: NewShell) -> None:
    rows = result.json["results"]
    assert any(row["label"] == "readme" and row["origin"] == "pozol" and row["held"]
               for row in rows), rows


def _answered(result: Result, shell: NewShell) -> None:
    assert int(result.stdout.strip()) > 0, result.stdout


def _in_sync(result: Result, shell: NewShell) -> None:
    link = result.json
    assert link["state"] == "in_sync" and link["common_snapshot"], link
    assert link["last_transfer"]["bytes"] > 0 and link["lag"]["seconds"] is not None, link


def _scraped(result: Result, shell: NewShell) -> None:
    reachable = re.findall(r'^pozol_host_reachable\{host="[^"]+"\} 1\.0$', result.stdout, re.M)
    assert reachable, result.stdout


def _templates(result: Result, shell: NewShell) -> None:
    assert "full-page-writes" in result.stdout and "recordsize" in result.stdout, result.stdout


def _rolled_out(result: Result, shell: NewShell) -> None:
    _status("succeeded")(result, shell)
    assert {row["state"] for row in result.json["hosts"]} == {"done"}, result.json["hosts"]


EXPECTED = [
    Expect("a token from manage.py in a new shell", r"manage\.py create_api_token", _token),
    Expect("adding a host (201)", r"-X POST \S+/api/hosts/ ", _http(201)),
    Expect("the added host and its discovery", r'^echo "\$ADDED"', _added),
    Expect("the discovery, read until it succeeded", r"/api/operations/\$\w+/",
           _status("succeeded")),
    Expect("the host's datasets", r"/api/hosts/\$\w+/datasets/", _datasets),
    Expect("the host's pools", r"/api/hosts/\$\w+/pools/", _listed),
    Expect("the host's clusters", r"^curl .*/api/hosts/\$\w+/clusters/$", _listed),
    Expect("the host's facts", r"/api/hosts/\$\w+/facts/", _facts),
    Expect("a discovery on demand (202)", r"-X POST .*/api/hosts/\$\w+/discover/", _discovering),
    Expect("the profiles", r"^curl .*/api/profiles/$", _profiles),
    Expect("assigning a profile", r"-X PUT .*/api/hosts/\$\w+/profile/", _assigned),
    Expect("a dry-run plan (201)", r"-X POST .*/api/hosts/\$\w+/plan/", _http(201)),
    Expect("the plan's changes", r"^curl .*/api/plans/\$PLAN/ ", _planned),
    Expect("starting a benchmark (201)", r"-X POST .*/api/benchmarks/", _http(201)),
    Expect("a benchmark, read until it succeeded", r"/api/benchmarks/\$\w+/", _measured),
    Expect("applying the plan (202)", r"/api/plans/\$\w+/apply/", _http(202)),
    Expect("comparing two benchmarks (201)", r"/api/validations/", _compared),
    Expect("rolling back (202)", r"/api/plans/\$\w+/rollback/", _http(202)),
    Expect("the rollback, read until applied", r"^curl .*/api/plans/\$BACK/", _status("applied")),
    Expect("snapshot now (202)", r"-X POST .*/api/hosts/\$\w+/snapshots/", _http(202)),
    Expect("the host's snapshots, held and labelled", r"/snapshots/\?origin=pozol", _snapshots),
    Expect("a release (202)", r"/api/snapshots/\$\w+/release/", _http(202)),
    Expect("a destroy (202)", r"-X DELETE .*/api/snapshots/\$\w+/", _http(202)),
    Expect("a run of a link, read until it succeeded", r"^curl .*/api/operations/\$RUN/",
           _status("succeeded")),
    Expect("the link, in sync", r"^curl .*/api/replication-links/\$LINK/$", _in_sync),
    Expect("making a clone, read until it succeeded", r"/api/operations/\$MADE_BY/",
           _status("succeeded")),
    Expect("a query on the clone with its password", r"^PGPASSWORD=", _answered),
    Expect("destroying the clone (202)", r"-X DELETE .*/api/clones/\$CLONE/", _http(202)),
    Expect("/metrics with the scrape token, a host reachable", r"/metrics", _scraped),
    Expect("the experiment templates", r"/api/experiments/templates/", _templates),
    Expect("starting a rollout (201)", r"-X POST .*/api/rollouts/ ", _http(201)),
    Expect("pausing a rollout", r"/api/rollouts/\$ROLLOUT/pause/", _http(200)),
    Expect("resuming a rollout", r"/api/rollouts/\$ROLLOUT/resume/", _http(200)),
    Expect("a rollout, read until it reached every host", r"^curl .*/api/rollouts/\$ROLLOUT/ ",
           _rolled_out),
]


# --- the test ------------------------------------------------------------------------------

@pytest.mark.fleet
def test_the_readme_api_examples_work_verbatim_in_a_new_shell_against_the_demo(tmp_path):
    started = time.monotonic()
    readme = readme_commands(RUN)
    seen: set[str] = set()
    with running_demo(DEMO_SUBNET) as demo:
        print(f"\ndemo ready in {time.monotonic() - started:.0f}s at {demo.origin}")
        # gunicorn's control socket is the demo's own, not the one in $HOME.
        assert (demo.checkout / ".pozol" / "gunicorn.ctl").is_socket()
        with NewShell(demo.checkout, tmp_path / "shell") as shell:
            for command in readme:
                result = _run(shell, command, command.text.replace(README_ORIGIN, demo.origin))
                for expect in EXPECTED:
                    if re.search(expect.pattern, command.text, re.MULTILINE | re.DOTALL):
                        seen.add(expect.what)
                        _judge(result, expect.what, lambda r=result, e=expect: e.check(r, shell))
    missing = [expect.what for expect in EXPECTED if expect.what not in seen]
    assert not missing, f"the README no longer shows: {', '.join(missing)}"
    print(f"README: {len(readme)} commands in {time.monotonic() - started:.0f}s")


def _run(shell: NewShell, command: Command, text: str) -> Result:
    """Run it; a read of something still running is read again until it has finished."""
    started = time.monotonic()
    result, reads = shell.run(command, text), 1
    while _still_running(result, text) and time.monotonic() < started + FOLLOW_SECONDS:
        time.sleep(1)
        result, reads = shell.run(command, text), reads + 1
    print(f"README.md:{command.line}: {time.monotonic() - started:5.1f}s"
          f"{f' ({reads} reads)' if reads > 1 else ''}  {command.text.splitlines()[0][:70]}")
    _judge(result, "a command that works", lambda: _works(result, text))
    return result


def _still_running(result: Result, text: str) -> bool:
    return _is_read(text) and _status_of(result) in RUNNING


def _works(result: Result, text: str) -> None:
    assert result.status == 0, f"exit status {result.status}"
    assert all(200 <= code < 300 for code in result.http), f"HTTP {result.http}"
    unfinished = RUNNING if _is_read(text) else set()
    assert _status_of(result) not in {"failed", "cancelled"} | unfinished, \
        f"status {_status_of(result)!r}"


def _is_read(text: str) -> bool:
    """A GET: what starts something (-X POST/PUT) may answer while it still runs."""
    return "-X " not in text


def _status_of(result: Result) -> str | None:
    answer = result.json
    return answer.get("status") if isinstance(answer, dict) else None


def _judge(result: Result, what: str, check: Callable[[], None]) -> None:
    try:
        check()
    except (AssertionError, KeyError, TypeError, ValueError) as exc:
        raise AssertionError(f"README: {what}: {exc!r}\n{result.report()}") from None
