"""Installing and removing a link's key in the target's authorized_keys, run by the
real /bin/sh on a file of its own: the other lines and the file's mode kept, a symlink
followed, the file never seen empty by a login meanwhile, and links installed at the
same time all kept (tests/integration/test_replication.py installs one on a real host)."""

from __future__ import annotations

import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from apps.replication.core import commands
from apps.replication.core.link import Link

OPERATOR = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKey operator@laptop\n"


def _link(name: str) -> Link:
    return Link(name=name, sources=("tank/pg",), target_parent="backup")


def _line(name: str) -> str:
    return f'command="zfs receive",restrict ssh-ed25519 AAAA{name} pozol-link-{name}'


def _run(command: commands.Command, home: Path) -> None:
    subprocess.run(["/bin/sh", "-c", command.text], env={**os.environ, "HOME": str(home)},
                   check=True, timeout=30, capture_output=True)


def _install(keys: Path, name: str) -> commands.Command:
    return commands.install_key(str(keys), _link(name), _line(name))


def test_a_link_s_line_replaces_its_older_one_and_keeps_the_rest(tmp_path):
    keys = tmp_path / "authorized_keys"
    keys.write_text(OPERATOR + _line("main").replace("AAAAmain", "AAAAold") + "\n")
    keys.chmod(0o600)
    _run(_install(keys, "main"), tmp_path)
    assert keys.read_text() == OPERATOR + _line("main") + "\n"
    assert keys.stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "authorized_keys.pozol-tmp").exists()
    _run(commands.remove_key(str(keys), "main"), tmp_path)
    assert keys.read_text() == OPERATOR


def test_a_symlinked_file_is_written_through_the_link(tmp_path):
    real = tmp_path / "kept" / "keys"
    real.parent.mkdir()
    real.write_text(OPERATOR)
    (tmp_path / "authorized_keys").symlink_to(real)
    _run(_install(tmp_path / "authorized_keys", "main"), tmp_path)
    assert (tmp_path / "authorized_keys").is_symlink()
    assert real.read_text() == OPERATOR + _line("main") + "\n"


def test_links_installed_at_once_are_all_kept_and_a_login_never_reads_an_empty_file(
        tmp_path):
    keys = tmp_path / "authorized_keys"
    keys.write_text(OPERATOR)
    keys.chmod(0o600)
    names = [f"link{n}" for n in range(16)]
    seen_empty, done = [], threading.Event()

    def login() -> None:  # what sshd does at each login: open the file and read it
        while not done.is_set():
            if OPERATOR not in keys.read_text():
                seen_empty.append(True)

    reader = threading.Thread(target=login)
    reader.start()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda name: _run(_install(keys, name), tmp_path), names))
    finally:
        done.set()
        reader.join()
    lines = keys.read_text().splitlines()
    assert sorted(lines[1:]) == sorted(_line(name) for name in names)
    assert lines[0] + "\n" == OPERATOR and not seen_empty
