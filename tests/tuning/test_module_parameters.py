"""Applying and rolling back a ZFS module parameter, step by step, against a
small stateful fake of an OpenZFS host.

The test hosts run zfs-fuse, which has no /sys/module/zfs, so no real host
here can prove this path; the fake answers only the commands it models and
fails on any other, as the strict fake shell does.
"""

import re

import pytest

from apps.fleet.models import Host
from apps.ops.engine import StepContext
from apps.remote.shell import Result
from apps.tuning import appliers, services
from tests.driving import drive
from tests.tuning.core import hosts

pytestmark = pytest.mark.django_db(transaction=True)

PARAMS = "/sys/module/zfs/parameters/"


class FakeOpenZfsHost:
    """/sys/module/zfs/parameters and /etc/modprobe.d/zfs.conf, nothing else."""

    def __init__(self, params: dict[str, str]) -> None:
        self.params = dict(params)
        self.modprobe = ""
        self.commands: list[str] = []

    def __call__(self, command, *, timeout=60.0, check=True, stdin=None) -> Result:
        text = command.text
        self.commands.append(text)
        if match := re.fullmatch(rf"cat {PARAMS}(\w+)", text):
            return Result(text, 0, self.params[match[1]] + "\n", "")
        if match := re.fullmatch(rf"printf '%s\\n' (\w+) > {PARAMS}(\w+)", text):
            self.params[match[2]] = match[1]
            return Result(text, 0, "", "")
        if appliers.MODPROBE_FILE in text and "grep -v" in text:
            key = re.search(r"'\^(options zfs \w+)=", text)[1]
            kept = [line for line in self.modprobe.splitlines()
                    if not line.startswith((key + "=", key + " "))]
            self.modprobe = "".join(f"{line}\n" for line in kept) + (stdin or b"").decode()
            return Result(text, 0, "", "")
        raise AssertionError(f"the fake host does not model: {text}")


@pytest.fixture
def openzfs_host(monkeypatch, delivered):
    facts = hosts.openzfs()
    host = Host.objects.create(name="oz", address="127.0.0.9", credential_kind="pasted",
                               host_key_state=Host.KeyState.PINNED, facts=facts.to_dict(),
                               private_key_encrypted="unused")
    fake = FakeOpenZfsHost({k: str(v) for k, v in facts.module_params.items()})
    monkeypatch.setattr(StepContext, "runner", lambda self: fake)
    monkeypatch.setattr("apps.fleet.services.discover", lambda host, **kw: None)
    return host, fake


def test_a_module_parameter_is_written_persisted_verified_and_rolled_back(openzfs_host):
    host, fake = openzfs_host
    before = fake.params["zfs_txg_timeout"]
    profile = services.create_profile(name="txg", settings={
        "zfs": {}, "sysctl": {}, "postgres": {}, "module": {"zfs_txg_timeout": "10"}})
    plan = services.make_plan(host, version=profile.current)
    change = plan.changes.get()
    assert (change.method, change.supported, change.current) == ("module_param", True, before)

    assert drive(services.apply_plan(plan)).status == "succeeded"
    change.refresh_from_db()
    assert (change.status, change.before["value"], change.after) == ("applied", before, "10")
    assert fake.params["zfs_txg_timeout"] == "10"
    assert fake.modprobe == "options zfs zfs_txg_timeout=10\n"

    assert drive(services.rollback(plan)[1]).status == "succeeded"
    assert fake.params["zfs_txg_timeout"] == before and fake.modprobe == ""


def test_a_value_the_kernel_ignores_fails_verification(openzfs_host):
    """zfs_arc_max out of range is silently ignored by OpenZFS: reading back shows it."""
    host, fake = openzfs_host
    original = FakeOpenZfsHost.__call__

    def ignoring_writes(self, command, **kwargs):
        if command.text.startswith("printf"):
            return Result(command.text, 0, "", "")  # accepted, not applied
        return original(self, command, **kwargs)

    FakeOpenZfsHost.__call__ = ignoring_writes
    try:
        profile = services.create_profile(name="arc", settings={
            "zfs": {}, "sysctl": {}, "postgres": {}, "module": {"zfs_arc_max": "67108864"}})
        operation = drive(services.apply_plan(services.make_plan(host,
                                                                 version=profile.current)))
    finally:
        FakeOpenZfsHost.__call__ = original
    assert (operation.status, operation.error_code) == ("failed", "change_failed")
    assert "but the host reads" in operation.error
    assert fake.modprobe == ""  # nothing persisted for a value the kernel ignored
