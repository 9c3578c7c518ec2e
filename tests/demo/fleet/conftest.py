from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.demo.fleet import down
from apps.demo.fleet.preflight import check_machine
from apps.demo.fleet.settings import FleetError


def fresh_state_dir(prefix: str) -> Iterator[Path]:
    """A state dir of its own, taken down afterwards. A machine that cannot run
    test hosts fails the test (`make test` installs what they need): a skip
    here would let a broken setup pass."""
    import tempfile

    try:
        check_machine()
    except FleetError as exc:
        pytest.fail(f"this machine cannot run test hosts: {exc}")
    # Short and under /tmp: PostgreSQL's socket path must stay under 108 bytes.
    path = Path(tempfile.mkdtemp(prefix=prefix))
    yield path
    if path.exists():
        down(path)
