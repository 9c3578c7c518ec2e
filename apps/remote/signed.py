"""Root's commands for a login that is not root: scripts PoZoL signs, one helper that runs them.

A sudoers rule naming /bin/sh, zfs or sysctl as root makes the login root: a shell
runs anything; `zfs receive` of a crafted stream with `setuid` and a mountpoint, or
`sysctl kernel.core_pattern`, gets a root shell too. So the login may run one program
as root, `pozol-run` (HELPER_PATH), which the operator installs with the host's
public SSH key written inside it (`helper`), and the fingerprint of the host's own
SSH host key, as PoZoL pinned it. It runs a script only when it carries a signature
made with the host's private key, which never leaves the control plane:

    pozol-run NONCE EXPIRES SIGNATURE SCRIPT

The signature is OpenSSH's SSHSIG format (`ssh-keygen -Y sign`), made here with
paramiko and checked on the host by `ssh-keygen -Y verify` (OpenSSH 8.1 and newer;
the host's sshd brings it), over `message(nonce, expires, host, script)` in the
namespace NAMESPACE, so no SSH authentication signature can pass for one. `host` is
the fingerprint of the host key of the connection the script is sent over, and the
helper puts its own in its place: a script signed for one host does not run on
another, even where an operator gave many hosts one key. The helper refuses
an expired signature and a nonce it has seen (a root-only directory under
STATE_DIR), so a script read off the process list cannot be run again. Whoever holds
the login alone can run nothing as root this way: only what the control plane asks.

One more form, for a replication link's forced command, which runs when the link's
source connects and so cannot be signed per call:

    pozol-run --standing NAME [ARG...]

runs STATE_DIR/standing/NAME, a root-owned script PoZoL installed there through a
signed script (the link's receive into its own datasets) and removes with the link.
Scripts run by the helper find that directory in $POZOL_RUN_STATE.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import struct
import time
from dataclasses import dataclass
from importlib import resources

import paramiko

from apps.remote import keys

HELPER_PATH = "/usr/local/sbin/pozol-run"
HELPER_VERSION = 2
NAMESPACE = "pozol-run@pozol"
STATE_DIR = "/var/lib/pozol-run"
# The host's clock may run this far ahead of the control plane's before a signature
# counts as expired there.
CLOCK_SKEW = 600
# The helper's exit status when it refuses (as a shell's "found but cannot run").
REFUSED_STATUS = 126
REFUSED_PREFIX = "pozol-run: refused: "

_TEMPLATE = "pozol-run.sh"
_VERSION_LINE = re.compile(r"^# pozol-run (\d+):")
_FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")


@dataclass(frozen=True)
class Signed:
    """What the helper takes before the script: a one-time nonce, the Unix time after
    which it refuses, and the signature (the SSHSIG blob in base64, one line)."""

    nonce: str
    expires: int
    signature: str

    def argv(self, script_text: str) -> list[str]:
        return [HELPER_PATH, self.nonce, str(self.expires), self.signature, script_text]


def message(nonce: str, expires: int, host: str, script_text: str) -> bytes:
    """The bytes signed, as the helper rebuilds them from its arguments and the host key
    fingerprint written in it."""
    return f"pozol-run {HELPER_VERSION}\n{host}\n{nonce}\n{expires}\n{script_text}".encode()


def sign_script(key: paramiko.PKey, script_text: str, *, host: str, seconds: int,
                now: float | None = None) -> Signed:
    """A signature for running `script_text` once within `seconds` (plus CLOCK_SKEW), on
    the host whose host key has the fingerprint `host` only."""
    nonce = secrets.token_hex(16)
    expires = int(time.time() if now is None else now) + int(seconds) + CLOCK_SKEW
    return Signed(nonce, expires, sshsig(key, message(nonce, expires, host, script_text)))


def sshsig(key: paramiko.PKey, data: bytes, namespace: str = NAMESPACE) -> str:
    """OpenSSH's SSHSIG signature of `data` (PROTOCOL.sshsig), base64 without armour."""
    digest = hashlib.sha512(data).digest()
    to_sign = (b"SSHSIG" + _string(namespace.encode()) + _string(b"") + _string(b"sha512")
               + _string(digest))
    # An RSA key signs with SHA-512: ssh-keygen refuses SHA-1 ("ssh-rsa") signatures.
    algorithm = "rsa-sha2-512" if isinstance(key, paramiko.RSAKey) else None
    signature = key.sign_ssh_data(to_sign, algorithm)
    blob = (b"SSHSIG" + struct.pack(">I", 1) + _string(key.asbytes())
            + _string(namespace.encode()) + _string(b"") + _string(b"sha512")
            + _string(signature.asbytes()))
    return base64.b64encode(blob).decode()


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def helper(public_line: str, host_fingerprint: str, state_dir: str = STATE_DIR) -> str:
    """The helper an operator installs at HELPER_PATH (root, mode 0755) on the host whose
    host key has `host_fingerprint` ("SHA256:..."), trusting the key of `public_line`
    ("type base64 [comment]": the comment is left out)."""
    trusted = keys.public_line(keys.public_key_of(public_line))  # InvalidKey: a ValueError
    if not _FINGERPRINT.match(host_fingerprint):
        raise ValueError(f"not a host key fingerprint (SHA256:...): {host_fingerprint!r}")
    template = resources.files(__package__).joinpath(_TEMPLATE).read_text()
    return (template.replace("@VERSION@", str(HELPER_VERSION))
            .replace("@TRUSTED@", trusted).replace("@HOST@", host_fingerprint)
            .replace("@STATE@", state_dir)
            .replace("@NAMESPACE@", NAMESPACE).replace("@HELPER_PATH@", HELPER_PATH))


def installed_version(text: str) -> int | None:
    """The version of a helper's text (its first lines), or None when it is not one."""
    for line in text.splitlines()[:3]:
        if match := _VERSION_LINE.match(line):
            return int(match.group(1))
    return None


def refusal(stderr: str) -> str | None:
    """The helper's own words when it refused to run a script, else None."""
    for line in stderr.splitlines():
        if line.startswith(REFUSED_PREFIX):
            return line.removeprefix(REFUSED_PREFIX).strip()
    return None


def standing_name(link_name: str) -> str:
    """The name of a link's standing receive script (hex: any link name maps to one)."""
    return "link-" + hashlib.sha256(link_name.encode()).hexdigest()[:24]

