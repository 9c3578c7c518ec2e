"""The OpenZFS VM test hosts: one boot of each per test run, shared by the tests in tests/vm/.

A Debian 13 guest (OpenZFS 2.3 kernel module, Debian's postgresql-17 in its packaged
layout under systemd) from the image apps.demo.vm builds and caches outside the
checkout, and a Debian 12 guest (OpenZFS 2.1, postgresql-15 packaged) for the tests that
run on both versions (`vm`). PoZoL reaches the 2.3 guest as root and the 2.1 guest as
`pozol`, an ordinary user with the sudoers file PoZoL prints, so every test on both
proves both logins. The first run on a machine builds the images (4-5 minutes each on a
quiet two-core machine, 20 or more on a loaded one); later runs only boot them (about a
minute each under software emulation). Where the machine cannot build or boot it, every
test here is skipped with the reason, which
`-ra` prints in the summary. POZOL_TEST_VM=skip skips the group on purpose;
POZOL_TEST_VM_JSON=<file> uses a host already up (`python -m apps.demo.vm up --json`,
with --alias for vm_second_name) instead of booting one; POZOL_TEST_VM21_JSON, the same
for the OpenZFS 2.1 host (`up --recipe bookworm-zfs2.1-pg15`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
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
# The OpenZFS 2.1 host (vm21_host), a guest of its own.
VM21_ADDRESS = f"{TEST_FLEET_SUBNET}.242"


def why_no_vm(recipe=None) -> str | None:
    from apps.demo.vm import image

    recipe = recipe or image.TRIXIE
    if os.environ.get("POZOL_TEST_VM") == "skip":
        return "POZOL_TEST_VM=skip"
    if missing := image.missing_tools():
        return f"missing on this machine: {', '.join(missing)} (make deps installs them)"
    if image.cached(recipe) is None and os.geteuid() != 0:
        return "the image is not cached and building it needs root"
    return None


# The guests booted so far, by kind. An idle guest under software emulation still takes
# about a third of a core, so each is shut down after the last test that uses it
# (pytest_runtest_teardown below) rather than at the session's end; tests/conftest.py
# runs the 2.3 host's tests first, then the 2.1 host's, so the two never idle together.
_GUESTS: dict[str, Guest] = {}
ZFS23, ZFS21 = "zfs23", "zfs21"


@dataclasses.dataclass(frozen=True)
class Guest:
    host: Host | None
    state: Path | None  # None: a host already up (POZOL_TEST_VM_JSON), not ours to stop
    skipped: str | None = None  # why the machine cannot boot it
    failed: str | None = None  # why its boot failed: the later tests fail at once


def guest(kind: str) -> Host:
    """The booted, provisioned host of that kind (an apps.demo.fleet Host), booted on
    first use; skipped with the reason where the machine cannot boot it."""
    from apps.demo.vm import image

    if kind not in _GUESTS:
        running = os.environ.get("POZOL_TEST_VM_JSON" if kind == ZFS23 else "POZOL_TEST_VM21_JSON")
        try:
            if running:
                found = Guest(Host(**json.loads(Path(running).read_text())[0]), None)
                _GUESTS[kind] = found if kind == ZFS23 else _through_sudo(found)
            elif kind == ZFS23:
                _GUESTS[kind] = _booted(image.TRIXIE, VM_ADDRESS, aliases=(VM_ALIAS,))
            else:
                _GUESTS[kind] = _through_sudo(_booted(image.BOOKWORM, VM21_ADDRESS))
        except Exception as exc:
            _GUESTS[kind] = Guest(None, None, failed=f"{type(exc).__name__}: {exc}")
            raise
    found = _GUESTS[kind]
    if found.skipped:
        pytest.skip(found.skipped)
    if found.failed:
        pytest.fail(f"the {kind} guest did not boot: {found.failed}")
    return found.host


@dataclasses.dataclass
class SudoLogin(Host):
    """A guest PoZoL reaches as `login`, an ordinary user with the sudoers file PoZoL
    prints; the tests' own checks (run_on) still log in as root."""

    login: str = "pozol"


def _through_sudo(found: Guest) -> Guest:
    """The 2.1 guest is reached through a sudo login (issue 21 §3: everything on the real
    host works through it) and the 2.3 one as root, so both ways are proven on a real
    host at no extra boot."""
    from apps.demo.fleet.keys import public_key
    from apps.remote import signed, sudo

    if found.host is None:
        return found
    host = found.host
    install_sudoers(host, sudo.sudoers(SudoLogin.login,
                                       [sudo.Cluster(host.pg_os_user, host.pg_bin_dir)]))
    install_helper(host, signed.helper(public_key(Path(host.private_key_path)),
                                       host.host_key_fingerprint))
    return dataclasses.replace(found, host=SudoLogin(**dataclasses.asdict(host)))


# A command on a guest, by the tests themselves: a deadline of its own. Under software
# emulation on a slow two-core machine with the suite's other workers beside it, one
# pg_createcluster took over a minute (run_on's 60 s is for the zfs-fuse hosts).
GUEST_COMMAND_SECONDS = 600


def run_on(vm_host: Host, command: str, timeout: float = GUEST_COMMAND_SECONDS) -> str:
    """Run a command on a guest with OpenSSH, independently of the product's code."""
    from tests.integration.conftest import run_on as run_on_host

    return run_on_host(vm_host, command, timeout=timeout)


SUDOERS = "/etc/sudoers.d/pozol"


def install_sudoers(vm_host: Host, text: str) -> None:
    """As root, over OpenSSH: checked by visudo, then put in place (root, 0440)."""
    run_on(vm_host, f"printf %s {shlex.quote(text)} > {SUDOERS}.tmp && "
                    f"visudo -cqf {SUDOERS}.tmp && chmod 0440 {SUDOERS}.tmp && "
                    f"mv {SUDOERS}.tmp {SUDOERS}")


HELPER = "/usr/local/sbin/pozol-run"


def install_helper(vm_host: Host, text: str) -> None:
    """The helper the sudoers file's `run` rule names, as an operator installs it (root,
    0755), renamed into place."""
    run_on(vm_host, f"printf %s {shlex.quote(text)} > {HELPER}.tmp && "
                    f"chmod 0755 {HELPER}.tmp && mv {HELPER}.tmp {HELPER}")


def kinds_of(item: pytest.Item | None) -> set[str]:
    """The guests a test uses: by its fixtures, or the `vm` parameter it runs with."""
    if item is None:
        return set()
    names = set(getattr(item, "fixturenames", ()))
    found = {ZFS23} if names & {"vm_host", "vm_second_name"} else set()
    param = getattr(getattr(item, "callspec", None), "params", {}).get("vm")
    return found | ({param} if param else set())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    try:
        return (yield)  # the test's own fixtures clean up on the guest first
    finally:
        for kind in set(_GUESTS) - kinds_of(nextitem):
            shut_down(kind)


def pytest_sessionfinish(session: pytest.Session) -> None:
    for kind in list(_GUESTS):
        shut_down(kind)


def shut_down(kind: str) -> None:
    from apps.demo.vm import machine

    state = _GUESTS.pop(kind).state
    if state is not None:
        machine.shutdown(state)
        shutil.rmtree(state, ignore_errors=True)
        print(f"\nOpenZFS VM host {kind}: shut down after its last test", file=sys.stderr)


@pytest.fixture
def vm_host() -> Host:
    """The OpenZFS 2.3 host: Debian 13 with its packaged PostgreSQL 17."""
    return guest(ZFS23)


@pytest.fixture
def vm21_host() -> Host:
    """The OpenZFS 2.1 host: Debian 12 with its packaged PostgreSQL 15 (the tests that
    run on both versions)."""
    return guest(ZFS21)


@pytest.fixture(params=[ZFS23, ZFS21])
def vm(request) -> Host:
    """Each OpenZFS version's host in turn, for a test that must hold on both."""
    return guest(request.param)


def _booted(recipe, address: str, aliases: tuple[str, ...] = ()) -> Guest:
    from apps.demo.vm import image, machine

    if reason := why_no_vm(recipe):
        return Guest(None, None, skipped=f"OpenZFS VM group skipped: {reason}")
    started = time.monotonic()
    built = image.ensure(recipe)
    built_at = time.monotonic()
    state = Path(tempfile.mkdtemp(prefix="pozol-test-vm-"))
    try:
        host = machine.boot(built, state, address, aliases=aliases)
        booted_at = time.monotonic()
        machine.provision(host, built.recipe.pg_major, aliases=aliases)
    except BaseException:
        machine.shutdown(state)
        shutil.rmtree(state, ignore_errors=True)
        raise
    print(f"\nOpenZFS VM host ({built.versions}): image {built_at - started:.0f}s, "
          f"boot {booted_at - built_at:.0f}s, provision {time.monotonic() - booted_at:.0f}s",
          file=sys.stderr)
    return Guest(host, state)


@pytest.fixture
def vm_second_name(vm_host):
    """The same guest under its second address: registered as another host, it makes
    a link between two OpenZFS hosts possible with one VM."""
    known_hosts = Path(vm_host.known_hosts_path).with_name("known_hosts_alias")
    known_hosts.write_text(keys.known_hosts_line(VM_ALIAS, 22, vm_host.host_public_key) + "\n")
    return dataclasses.replace(vm_host, name="vm2", address=VM_ALIAS,
                               known_hosts_path=str(known_hosts))
