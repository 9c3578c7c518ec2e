"""Applying and rolling back a ZFS module parameter, step by step, against a
small stateful fake of an OpenZFS host.

The test hosts run zfs-fuse, which has no /sys/module/zfs, so no real host
here can prove this path; the fake answers only the commands it models and
fails on any other, as the strict fake shell does. Its ARC follows OpenZFS's
arc_tuning_update() (module/zfs/arc.c): zfs_arc_max moves c_max only when it
is not 0, at least 64 MiB, below the host's memory and above c_min. The real
proof is the OpenZFS VM host's (issue 21): apply zfs_arc_max on a module that
sizes the ARC automatically, roll back, and read arcstats c_max.
"""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from apps.fleet.models import Host
from apps.ops.engine import StepContext
from apps.remote.shell import Result
from apps.tuning import services
from apps.tuning.core import commands
from tests.driving import drive
from tests.tuning.core import hosts

pytestmark = pytest.mark.django_db(transaction=True)

PARAMS = "/sys/module/zfs/parameters/"
ARCSTATS = "/proc/spl/kstat/zfs/arcstats"
# Written from docs (tests/remote/fixtures/README.md): no OpenZFS arcstats is captured yet.
ARCSTATS_TEXT = (Path(__file__).parents[1] / "remote" / "fixtures" / "openzfs-2.2"
                 / "arcstats.txt").read_text()
MiB = 2**20


class FakeOpenZfsHost:
    """/sys/module/zfs/parameters, arcstats' c_max and /etc/modprobe.d/zfs.conf."""

    def __init__(self, params: dict[str, str], c_max: int, memory: int) -> None:
        self.params = dict(params)
        self.c_max, self.memory = c_max, memory
        self.modprobe = ""
        self.commands: list[str] = []

    def __call__(self, command, *, timeout=60.0, check=True, stdin=None) -> Result:
        text = command.text
        self.commands.append(text)
        if match := re.fullmatch(rf"cat {PARAMS}(\w+)", text):
            return Result(text, 0, self.params[match[1]] + "\n", "")
        if text == f"cat {ARCSTATS}":
            stats = re.sub(r"(?m)^(c_max\s+4\s+)\d+$", rf"\g<1>{self.c_max}", ARCSTATS_TEXT)
            return Result(text, 0, stats, "")
        if match := re.fullmatch(rf"printf '%s\\n' (\w+) > {PARAMS}(\w+)", text):
            self.params[match[2]] = match[1]
            if match[2] == "zfs_arc_max":
                self._arc_tuning_update(int(match[1]))
            return Result(text, 0, "", "")
        if commands.MODPROBE_FILE in text and "grep -v" in text:
            key = re.search(r"'\^(options zfs \w+)=", text)[1]
            kept = [line for line in self.modprobe.splitlines()
                    if not line.startswith((key + "=", key + " "))]
            self.modprobe = "".join(f"{line}\n" for line in kept) + (stdin or b"").decode()
            return Result(text, 0, "", "")
        raise AssertionError(f"the fake host does not model: {text}")

    def _arc_tuning_update(self, value: int) -> None:
        c_min = int(self.params["zfs_arc_min"]) or 2048 * MiB  # the fixture's c_min
        if value and value >= 64 * MiB and value < self.memory and value > c_min:
            self.c_max = value


@pytest.fixture
def openzfs_host(monkeypatch, delivered):
    facts = hosts.openzfs()
    host = Host.objects.create(name="oz", address="127.0.0.9", credential_kind="pasted",
                               host_key_state=Host.KeyState.PINNED, facts=facts.to_dict(),
                               private_key_encrypted="unused")
    fake = FakeOpenZfsHost({k: str(v) for k, v in facts.module_params.items()},
                           facts.arcstats.c_max, facts.mem_total)
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


@pytest.fixture
def automatic_arc_host(monkeypatch, delivered):
    """An OpenZFS 2.3 module left to size the ARC: zfs_arc_max 0, c_max its default."""
    facts = hosts.openzfs("2.3.2")
    ram = facts.mem_total
    default = max(ram - 1024 * MiB, ram * 5 // 8)  # arc_default_max() from 2.3 on
    facts.module_params["zfs_arc_max"] = "0"
    facts.arcstats = replace(facts.arcstats, c_max=default)
    host = Host.objects.create(name="oz23", address="127.0.0.9", credential_kind="pasted",
                               host_key_state=Host.KeyState.PINNED, facts=facts.to_dict(),
                               private_key_encrypted="unused")
    fake = FakeOpenZfsHost({k: str(v) for k, v in facts.module_params.items()}, default, ram)
    monkeypatch.setattr(StepContext, "runner", lambda self: fake)
    monkeypatch.setattr("apps.fleet.services.discover", lambda host, **kw: None)
    return host, fake, default


def test_rolling_back_zfs_arc_max_restores_the_automatic_size_now_not_a_0_the_arc_ignores(
        automatic_arc_host):
    host, fake, default = automatic_arc_host
    profile = services.create_profile(name="arc", settings={
        "zfs": {}, "sysctl": {}, "postgres": {}, "module": {"zfs_arc_max": str(8 * 1024 * MiB)}})
    plan = services.make_plan(host, version=profile.current)
    assert "rollback restores the previous effective size now" in plan.changes.get().reason
    operation = drive(services.apply_plan(plan))
    assert operation.status == "succeeded"
    change = plan.changes.get()
    assert change.before == {"value": "0", "arc_c_max": str(default)}
    assert fake.c_max == 8 * 1024 * MiB
    assert fake.modprobe == f"options zfs zfs_arc_max={8 * 1024 * MiB}\n"
    assert f"arcstats c_max {8 * 1024 * MiB}: the ARC's ceiling is in force now" in \
        "\n".join(line.text for line in operation.log_lines.all())

    back, operation = services.rollback(plan)
    row = back.changes.get()
    assert (row.desired, row.action) == (str(default), "reset")
    assert "restores the ARC's previous effective size now" in row.reason
    assert "next boot sizes the ARC automatically" in row.reason
    assert drive(operation).status == "succeeded"
    assert fake.c_max == default  # writing 0 would have left it at 8 GiB
    assert fake.params["zfs_arc_max"] == str(default) and fake.modprobe == ""
    row.refresh_from_db()
    assert (row.status, row.after) == ("applied", str(default))


def test_a_zfs_arc_max_the_arc_ignores_fails_verification_though_the_file_reads_it(
        automatic_arc_host):
    host, fake, default = automatic_arc_host
    profile = services.create_profile(name="tiny", settings={
        "zfs": {}, "sysctl": {}, "postgres": {}, "module": {"zfs_arc_max": str(64 * MiB)}})
    operation = drive(services.apply_plan(services.make_plan(host, version=profile.current)))
    assert fake.params["zfs_arc_max"] == str(64 * MiB) and fake.c_max == default  # <= c_min
    assert (operation.status, operation.error_code) == ("failed", "change_failed")
    assert f"the ARC kept c_max {default}" in operation.error
    assert fake.modprobe == ""
