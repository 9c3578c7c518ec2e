"""What `docker build .` sends to the engine: never the secrets and local state.

docker-compose reads POZOL_SECRET_KEY and friends from .env beside
docker-compose.yml, so a .env in the checkout is the usual place for them; a
build context that carries it bakes the secrets into every image layer. The
patterns are matched here as Docker does (last matching line wins, `!`
re-includes, a pattern names a path from the context's root or any path under
it); `make compose-check` checks the built image itself.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def ignored(path: str) -> bool:
    """Whether Docker leaves path (relative to the context) out of the build context."""
    verdict = False
    parts = path.split("/")
    for pattern in _patterns():
        negated = pattern.startswith("!")
        pattern = pattern.removeprefix("!").strip("/")
        # A pattern that matches a directory leaves out everything under it.
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatchcase(prefix, pattern) for prefix in prefixes):
            verdict = not negated
    return verdict


@pytest.mark.parametrize("path", [
    ".env", ".env.production", ".pozol/env", ".pozol/operator-password", ".git/config",
    "id_ed25519", "server.key", "tls.pem", "db.sqlite3", "celerybeat-schedule",
    ".venv/bin/python", "node_modules/uplot/package.json", "test-artifacts/x.png",
])  # fmt: skip
def test_secrets_and_local_state_stay_out_of_the_image(path: str) -> None:
    assert ignored(path)


@pytest.mark.parametrize("path", [
    ".env.example", "manage.py", "requirements.txt", "constraints.txt", "package-lock.json",
    "apps/demo/fleet/keys.py", "apps/demo/fleet/__main__.py", "pozol/settings.py",
    "static/pozol.css", "templates/base.html",
])  # fmt: skip
def test_what_the_image_needs_goes_in(path: str) -> None:
    assert not ignored(path)
