"""Command builders, and the receive-only key's wrapper run by a real /bin/sh.

The wrapper test takes the authorized_keys line apart the way sshd does
(command="..." with \\" unescaped), then runs the forced command under the
login shell (`sh -c` / `bash -c`, as sshd does) with SSH_ORIGINAL_COMMAND set
and a fake `zfs` first on PATH that records its arguments.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from apps.replication.core.commands import (
    Endpoint,
    authorized_keys_line,
    estimate_command,
    pipeline,
    recv_flags,
    send_argv,
    send_failed,
    step_command,
)
from apps.replication.core.link import ReplicationError
from apps.replication.core.planner import Send, StepKind, plan_link
from tests.replication.core.helpers import (
    DATA,
    FUSE,
    MISSING,
    OZ,
    WAL,
    chain,
    cluster,
    single,
    source,
    target,
)

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBq0hZ7kLQf2 pozol"
EP = Endpoint("127.0.98.2", "/var/lib/pozol/link.key", "/var/lib/pozol/known_hosts")
FULL = Send("tank/db", "backup/h1/db", "tank/db@a", properties=True)
INCR = Send("tank/db", "backup/h1/db", "tank/db@c", "tank/db@a", intermediates=True)


class TestSend:
    def test_argv(self):
        assert send_argv(FULL) == ["zfs", "send", "-p", "tank/db@a"]
        assert send_argv(INCR) == ["zfs", "send", "-I", "tank/db@a", "tank/db@c"]
        small_i = Send("tank/db", "backup/h1/db", "tank/db@c", "tank/db@b")
        assert send_argv(small_i) == ["zfs", "send", "-i", "tank/db@b", "tank/db@c"]
        resume = Send("tank/db", "backup/h1/db", None, resume_token="1-e604ea4bf-e0-789c")
        assert send_argv(resume) == ["zfs", "send", "-t", "1-e604ea4bf-e0-789c"]

    def test_estimate(self):
        assert estimate_command(INCR).text == "zfs send -nvP -I tank/db@a tank/db@c"

    def test_stream_flags(self):
        compact = replace(FULL, compressed=True, large_blocks=True)
        assert send_argv(compact) == ["zfs", "send", "-p", "-c", "-L", "tank/db@a"]
        raw = replace(INCR, raw=True, properties=True)
        assert send_argv(raw) == ["zfs", "send", "-p", "-w", "-I", "tank/db@a", "tank/db@c"]
        # -w alone: it implies -c and -L (a Send never says both, but if it did)
        assert send_argv(replace(compact, raw=True)) == ["zfs", "send", "-p", "-w",
                                                         "tank/db@a"]
        assert estimate_command(raw).text == "zfs send -nvP -p -w -I tank/db@a tank/db@c"

    def test_hostile_names_are_refused_before_any_command(self):
        for bad in ("tank/db@a;rm -rf /", "tank/db@$(id)", "-o@x", "tank/db@a b"):
            with pytest.raises(ValueError):
                send_argv(Send("tank/db", "backup/h1/db", bad))
        with pytest.raises(ReplicationError):
            send_argv(Send("tank/db", "b/x", None, resume_token="-x;id"))

    def test_pipeline_without_pv_counts_with_dd_and_ends_in_ssh(self):
        text = pipeline(FULL, EP, FUSE).text
        assert text.startswith("{ zfs send -p tank/db@a || echo ")
        assert "| LC_ALL=C dd bs=1M status=progress | ssh -i /var/lib/pozol/link.key" in text
        assert "StrictHostKeyChecking=yes" in text and "BatchMode=yes" in text
        assert text.endswith("-- 127.0.98.2 pozol-recv backup/h1/db")
        assert "pv" not in text and "mbuffer" not in text

    def test_pipeline_limits_with_pv_or_mbuffer(self):
        with_pv = FUSE.__class__(**{**FUSE.__dict__, "pv": True})
        assert "| pv -n -b -i 1 -L 1048576 |" in pipeline(FULL, EP, with_pv, 1048576).text
        with_mbuffer = FUSE.__class__(**{**FUSE.__dict__, "mbuffer": True})
        text = pipeline(FULL, EP, with_mbuffer, 1048576).text
        assert "dd bs=1M status=progress | mbuffer -q -m 64M -r 1048576 | ssh" in text

    def test_send_failure_marker(self):
        assert send_failed("warning\npozol: zfs send failed (1)\n")
        assert not send_failed("cannot receive: failed to read from stream")

    def test_endpoint_refuses_hostile_values(self):
        for kw in ({"host": "-oProxyCommand=id"}, {"host": "a b"}, {"key_path": "rel/key"},
                   {"known_hosts_path": "/x;id"}, {"user": "Root;"}, {"port": 0}):
            with pytest.raises(ReplicationError):
                Endpoint(**{"host": "h", "key_path": "/k", "known_hosts_path": "/kh", **kw})

    def test_step_commands(self):
        p = plan_link(single(), {"tank/db": source(*chain("a", "b"))},
                      {"tank/db": target(*chain("a"), written=5)}, OZ, OZ)
        assert p.refused
        link = single(rollback_opt_in=True)
        p = plan_link(link, {"tank/db": source(*chain("a", "b"))},
                      {"tank/db": target(*chain("a"), written=5)}, OZ, OZ)
        texts = {s.kind: step_command(s, link, EP, OZ).text for s in p.steps}
        assert texts[StepKind.HOLD].startswith("zfs hold pozol-link-l1 ")
        assert texts[StepKind.ROLLBACK] == "zfs rollback -r backup/h1/db@a"
        assert texts[StepKind.RELEASE].startswith("zfs release pozol-link-l1 ")
        assert "-R" not in " ".join(texts.values()) and " -F" not in " ".join(texts.values())

    def test_recv_flags_by_dialect(self):
        assert recv_flags(FUSE) == []
        assert recv_flags(OZ) == ["-s", "-u", "-o", "readonly=on", "-o", "canmount=noauto",
                                  "-x", "mountpoint"]


def _forced_command(line: str) -> str:
    """What sshd runs for this authorized_keys line (OpenSSH opt_dequote)."""
    match = re.match(r'restrict,command="((?:[^"\\]|\\.)*)" ', line)
    assert match, line
    return match[1].replace('\\"', '"')


@pytest.fixture
def fake_zfs(tmp_path: Path) -> Path:
    log = tmp_path / "zfs.log"
    fake = tmp_path / "bin" / "zfs"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > {log}\n')
    fake.chmod(0o755)
    return tmp_path


def _run(line: str, original: str, home: Path, shell: str = "/bin/sh"):
    env = {"PATH": f"{home}/bin:/usr/bin:/bin", "SSH_ORIGINAL_COMMAND": original,
           "HOME": str(home)}
    done = subprocess.run([shell, "-c", _forced_command(line)], env=env, cwd=home,
                          capture_output=True, text=True, timeout=10)
    log = home / "zfs.log"
    args = log.read_text().splitlines() if log.exists() else None
    if log.exists():
        log.unlink()
    return done, args


HOSTILE = [
    "",
    "zfs recv backup/h1/main/data",
    "pozol-recv",
    "pozol-recv ",
    "pozol-recv backup/h1/main/data; id",
    "pozol-recv backup/h1/main/data && touch pwned",
    "pozol-recv backup/h1/main/data$(touch pwned)",
    "pozol-recv backup/h1/main/data`touch pwned`",
    "pozol-recv backup/h1/main/data\ntouch pwned",
    "pozol-recv backup/h1/main/data | touch pwned",
    "pozol-recv backup/h1/main/data > pwned",
    "pozol-recv -F backup/h1/main/data",
    "pozol-recv backup/h1/main/data -F",
    "pozol-recv backup/h1/main/other",
    "pozol-recv backup/h1/main/data/../../../tank",
    "pozol-recv backup/h1/main/data/x",
    "pozol-recv backup/h1/main/data/",
    "pozol-recv backup/h1//main/data",
    "pozol-recv backup/h1/main/data@snap",
    "pozol-recv backup/h1/main/*",
    "pozol-recv backup/h1/main/dat?",
    "pozol-recv backup/h1/main/data\\",
    "pozol-recv 'backup/h1/main/data'",
    "pozol-recv tank/pg/main/data",
    "pozol-recv  backup/h1/main/data",
    "pozol-recv backup/h1/main/data${IFS}x",
    "sh -c id",
]


@pytest.mark.parametrize("shell", ["/bin/sh", "/bin/bash"])
@pytest.mark.parametrize("original", HOSTILE)
def test_wrapper_refuses_hostile_commands(fake_zfs: Path, original: str, shell: str):
    if not Path(shell).exists():
        pytest.skip(f"{shell} missing")
    line = authorized_keys_line(cluster(), KEY, OZ)
    done, args = _run(line, original, fake_zfs, shell)
    assert done.returncode != 0
    assert args is None, f"zfs ran with {args}"
    assert "pozol: refused" in done.stderr
    assert not (fake_zfs / "pwned").exists()


@pytest.mark.parametrize("caps", [OZ, FUSE], ids=["openzfs", "zfs-fuse"])
@pytest.mark.parametrize("dataset", ["backup/h1/main/data", "backup/h1/main/wal"])
def test_wrapper_runs_zfs_recv_with_fixed_flags(fake_zfs: Path, dataset: str, caps):
    line = authorized_keys_line(cluster(), KEY, caps)
    done, args = _run(line, f"pozol-recv {dataset}", fake_zfs)
    assert done.returncode == 0, done.stderr
    assert args == ["recv", *recv_flags(caps), dataset]


def test_key_line_shape():
    line = authorized_keys_line(cluster(), KEY, OZ)
    assert line.startswith('restrict,command="/bin/sh -c \'set -f;')
    assert line.endswith(" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBq0hZ7kLQf2 pozol-link-pg")
    assert "\n" not in line
    with pytest.raises(ReplicationError):
        authorized_keys_line(cluster(), 'ssh-ed25519 AAAA" command="id', OZ)
    with pytest.raises(ReplicationError):
        authorized_keys_line(cluster(), "not a key", OZ)


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="no ssh-keygen")
def test_key_line_is_accepted_by_openssh(tmp_path: Path):
    """ssh-keygen -l parses authorized_keys lines with options as sshd does."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")],
                   check=True)
    public = (tmp_path / "k.pub").read_text()
    keys = tmp_path / "authorized_keys"
    keys.write_text(authorized_keys_line(cluster(), public, OZ) + "\n")
    done = subprocess.run(["ssh-keygen", "-l", "-f", str(keys)], capture_output=True,
                          text=True, env={**os.environ, "LC_ALL": "C"})
    assert done.returncode == 0, done.stderr
    assert "pozol-link-pg" in done.stdout


def test_full_plan_commands_on_zfs_fuse_are_plain():
    p = plan_link(cluster(), {DATA: source(*chain("a")), WAL: source(*chain("a", base=9))},
                  {DATA: MISSING, WAL: MISSING}, FUSE, FUSE)
    texts = [step_command(s, cluster(), EP, FUSE).text for s in p.steps]
    assert "zfs create -p -o readonly=on -o canmount=off backup/h1/main" in texts
    assert ("zfs set readonly=on backup/h1/main/data && zfs set canmount=noauto "
            "backup/h1/main/data") in texts


def test_the_receive_only_key_also_receives_into_the_carried_archives_copy():
    from apps.replication.core.capabilities import OPENZFS_CAPABILITIES
    from apps.replication.core.commands import recv_wrapper
    from apps.replication.core.link import Link

    link = Link("pg", ("tank/pg/data", "tank/pg/wal"), "backup/h1",
                archive="tank/pozol_wal/pg:data")
    wrapper = recv_wrapper(link, OPENZFS_CAPABILITIES)
    assert "backup/h1/pozol_wal/pg:data|" in wrapper or "|backup/h1/pozol_wal/pg:data)" in (
        wrapper)
