"""The OpenZFS VM test host: one boot per test run, shared by every test in tests/vm/.

A Debian 13 guest (OpenZFS 2.3 kernel module, Debian's postgresql-17 in its packaged
layout under systemd) from the image apps.demo.vm builds and caches outside the
checkout. The first run on a machine builds the image (about 20 minutes on two
cores); later runs only boot it (about a minute under software emulation). Where the
machine cannot build or boot it, every test here is skipped with the reason, which
`-ra` prints in the summary. POZOL_TEST_VM=skip skips the group on purpose;
POZOL_TEST_VM_JSON=<file> uses a host already up (`python -m apps.demo.vm up --json`,
with --alias for vm_second_name) instead of booting one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from apps.demo.fleet import Host, keys
from tests.conftest import TEST_FLEET_SUBNET

# The host's address: the test subnet's .240, away from the zfs-fuse hosts (.1, .2, ...,
# .21 and .22) and from the addresses tests use because nothing listens there (.250,
# .251); .241 is a second name of the same guest (vm_second_name).
VM_ADDRESS = f"{TEST_FLEET_SUBNET}.240"
VM_ALIAS = f"{TEST_FLEET_SUBNET}.241"


def why_no_vm() -> str | None:
    from apps.demo.vm import image

    if os.environ.get("POZOL_TEST_VM") == "skip":
        return "POZOL_TEST_VM=skip"
    if missing := image.missing_tools():
        return f"missing on this machine: {', '.join(missing)} (make deps installs them)"
    if image.cached(image.TRIXIE) is None and os.geteuid() != 0:
        return "the image is not cached and building it needs root"
    return None


@pytest.fixture(scope="session")
def vm_host():
    """The booted, provisioned OpenZFS host (an apps.demo.fleet Host)."""
    from apps.demo.vm import image, machine

    if running := os.environ.get("POZOL_TEST_VM_JSON"):
        yield Host(**json.loads(Path(running).read_text())[0])
        return
    if reason := why_no_vm():
        pytest.skip(f"OpenZFS VM group skipped: {reason}")
    started = time.monotonic()
    built = image.ensure(image.TRIXIE)
    built_at = time.monotonic()
    state = Path(tempfile.mkdtemp(prefix="pozol-test-vm-"))
    try:
        host = machine.boot(built, state, VM_ADDRESS, aliases=(VM_ALIAS,))
        booted_at = time.monotonic()
        machine.provision(host, built.recipe.pg_major, aliases=(VM_ALIAS,))
        print(f"\nOpenZFS VM host ({built.versions}): image {built_at - started:.0f}s, "
              f"boot {booted_at - built_at:.0f}s, provision {time.monotonic() - booted_at:.0f}s",
              file=sys.stderr)
        yield host
    finally:
        machine.shutdown(state)
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def vm_second_name(vm_host):
    """The same guest under its second address: registered as another host, it makes
    a link between two OpenZFS hosts possible with one VM."""
    known_hosts = Path(vm_host.known_hosts_path).with_name("known_hosts_alias")
    known_hosts.write_text(keys.known_hosts_line(VM_ALIAS, 22, vm_host.host_public_key) + "\n")
    return dataclasses.replace(vm_host, name="vm2", address=VM_ALIAS,
                               known_hosts_path=str(known_hosts))
