"""The send pipeline run by the host's /bin/sh with a fake zfs and a fake ssh.

Proves what reading the text cannot: the quoting holds in dash, the stream
arrives byte for byte through the dd counter, the counter's stderr parses, and
a failed send leaves its marker while the receive sees a cut stream.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from apps.replication.core.commands import Endpoint, pipeline, send_failed
from apps.replication.core.planner import Send
from apps.replication.core.progress import parse_counter
from tests.replication.core.helpers import FUSE

PAYLOAD = 3 * 1024 * 1024 + 17

FAKE_ZFS = """#!/bin/sh
log={home}/zfs.log
printf '%s\\n' "$*" >> $log
case $1 in
  send) head -c {size} /dev/urandom | tee {home}/sent
        [ -n "$FAIL_SEND" ] && exit 3; exit 0 ;;
  recv) cat > {home}/received; exit 0 ;;
esac
exit 9
"""
# The real ssh would run the words after the host on the target; here they are
# recorded and `zfs recv <dataset>` runs locally.
FAKE_SSH = """#!/bin/sh
printf '%s\\n' "$@" > {home}/ssh.args
for a; do last=$a; done
exec zfs recv "$last"
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    for name, text in (("zfs", FAKE_ZFS), ("ssh", FAKE_SSH)):
        fake = tmp_path / "bin" / name
        fake.write_text(text.format(home=tmp_path, size=PAYLOAD))
        fake.chmod(0o755)
    return tmp_path


def _run(home: Path, text: str, fail: bool = False):
    env = {"PATH": f"{home}/bin:/usr/bin:/bin", **({"FAIL_SEND": "1"} if fail else {})}
    return subprocess.run(["/bin/sh", "-c", text], env=env, cwd=home, capture_output=True,
                          text=True, timeout=60)


def test_stream_arrives_whole_and_counter_parses(home: Path):
    send = Send("tank/db", "backup/h1/db", "tank/db@b", "tank/db@a", intermediates=True,
                properties=True)
    endpoint = Endpoint("127.0.98.2", "/k/link.key", "/k/known_hosts")
    done = _run(home, pipeline(send, endpoint, FUSE).text)
    assert done.returncode == 0, done.stderr
    assert (home / "received").read_bytes() == (home / "sent").read_bytes()
    # Both ends of a pipe start at once: either may log first.
    assert sorted((home / "zfs.log").read_text().splitlines()) == [
        "recv backup/h1/db", "send -p -I tank/db@a tank/db@b"]
    args = (home / "ssh.args").read_text().splitlines()
    assert args[:2] == ["-i", "/k/link.key"]
    assert "UserKnownHostsFile=/k/known_hosts" in args
    assert args[-3:] == ["127.0.98.2", "pozol-recv", "backup/h1/db"]
    assert parse_counter(done.stderr) == PAYLOAD
    assert not send_failed(done.stderr)


def test_a_failed_send_is_marked(home: Path):
    send = Send("tank/db", "backup/h1/db", "tank/db@a")
    endpoint = Endpoint("127.0.98.2", "/k/key", "/k/known_hosts")
    done = _run(home, pipeline(send, endpoint, FUSE).text, fail=True)
    assert send_failed(done.stderr)
