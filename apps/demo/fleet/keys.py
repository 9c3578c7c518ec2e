"""SSH keys: one fleet-wide client key pair, one ed25519 host key per host."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from .procs import run


def ensure_key(path: Path, comment: str) -> Path:
    """Generate an unencrypted ed25519 key pair at path unless one is there."""
    if not path.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])
    return path


def public_key(private_key: Path) -> str:
    """The 'ssh-ed25519 AAAA...' part of the .pub file, without the comment."""
    kind, blob = Path(f"{private_key}.pub").read_text().split()[:2]
    return f"{kind} {blob}"


def fingerprint(public_line: str) -> str:
    """OpenSSH's SHA256 fingerprint, as `ssh-keygen -lf` prints it."""
    blob = base64.b64decode(public_line.split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode()
    return f"SHA256:{digest.rstrip('=')}"


def known_hosts_line(address: str, port: int, public_line: str) -> str:
    target = address if port == 22 else f"[{address}]:{port}"
    return f"{target} {public_line}"
