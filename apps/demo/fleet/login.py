"""A host reached as an ordinary user with sudo (`logins={4: "pozol"}`, `--login-user`).

The user exists only inside the host: its /etc/passwd, /etc/group, /etc/shadow,
/etc/sudoers and /etc/sudoers.d are bind mounts of copies in the host's state
dir (`<host>/etc/`), made from the machine's files plus the login, so nothing
outside the state dir changes. /etc/sudoers.d/pozol is the file PoZoL itself
generates (apps.remote.sudo.sudoers) for the host's cluster: a test edits the
host's `etc_sudoers_file` from the machine to take a rule away. The helper that
file's `run` rule names, /usr/local/sbin/pozol-run (apps.remote.signed), trusting
the fleet's client key, is in a copy of the machine's /usr/local/sbin mounted over
it, and keeps its record of signatures seen in `<host>/pozol-run`.
"""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

from apps.remote import signed
from apps.remote.sudo import Cluster, sudoers

from .keys import public_key
from .model import Host, Layout
from .procs import Proc, in_namespace, run
from .settings import FleetError

ROOT = "root"
# Bind-mounted over the machine's; each must exist on the machine to be mounted over.
PRIVATE_FILES = ("passwd", "group", "shadow", "sudoers")
SUDOERS_FILE = "pozol"
FIRST_UID = 2900


def sudoers_file(layout: Layout) -> Path:
    return layout.etc_dir / "sudoers.d" / SUDOERS_FILE


def home(layout: Layout) -> Path:
    return layout.root / "home"


def add_login(holder: Proc, layout: Layout, host: Host) -> None:
    """Give the host its own users and sudoers with `host.login_user` in them, mounted
    in its namespace only. Called after the private /etc directories exist."""
    if host.login_user == ROOT:
        return
    if shutil.which("sudo") is None:
        raise FleetError("a non-root login needs sudo on the machine (apt-get install sudo)")
    uid = _free_id()
    etc = layout.etc_dir
    for name in PRIVATE_FILES:
        shutil.copy2(Path("/etc") / name, etc / name)
    user = host.login_user
    home(layout).mkdir(mode=0o755)
    os.chown(home(layout), uid, uid)
    _append(etc / "passwd", f"{user}:x:{uid}:{uid}:PoZoL login:{home(layout)}:/bin/sh")
    _append(etc / "group", f"{user}:x:{uid}:")
    # '*': no password, and not locked ('!'), which sshd without PAM refuses.
    _append(etc / "shadow", f"{user}:*:19000:0:99999:7:::")
    (etc / "sudoers.d").mkdir(mode=0o750)
    write_sudoers(layout, sudoers(user, [Cluster(host.pg_os_user, host.pg_bin_dir)]))
    for name in PRIVATE_FILES:
        run(in_namespace(holder, ["mount", "--bind", str(etc / name), f"/etc/{name}"]))
    run(in_namespace(holder, ["mount", "--bind", str(etc / "sudoers.d"), "/etc/sudoers.d"]))
    _add_helper(holder, layout, host)


def _add_helper(holder: Proc, layout: Layout, host: Host) -> None:
    machine_dir = Path(signed.HELPER_PATH).parent
    if not machine_dir.is_dir():
        raise FleetError(f"a non-root login needs {machine_dir} on the machine, to mount "
                         "the host's own copy with PoZoL's helper over it")
    copy = layout.root / "usr-local-sbin"
    shutil.copytree(machine_dir, copy, symlinks=True)
    helper = copy / Path(signed.HELPER_PATH).name
    helper.write_text(signed.helper(public_key(Path(host.private_key_path)),
                                    host.host_key_fingerprint,
                                    state_dir=str(layout.root / "pozol-run")))
    helper.chmod(0o755)
    run(in_namespace(holder, ["mount", "--bind", str(copy), str(machine_dir)]))


def write_sudoers(layout: Layout, text: str) -> None:
    """Replace the host's /etc/sudoers.d/pozol (as visudo would leave it: root, 0440)."""
    path = sudoers_file(layout)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(0o440)
    os.replace(tmp, path)


def _append(path: Path, line: str) -> None:
    with path.open("a") as file:
        file.write(line + "\n")


def _free_id() -> int:
    """A uid (and gid) the machine does not use, so files the login owns are no one's."""
    taken = {p.pw_uid for p in pwd.getpwall()}
    uid = FIRST_UID
    while uid in taken:
        uid += 1
    return uid
