"""The clones tick's reading of each host: the space its clones use and whether a client
is connected to each, in one command per host; and idle deletion.

A clone's `used` grows as it diverges; quotas and the pages should not wait for the
next discovery to see it, so the tick (beat, every CLONE_EXPIRE_INTERVAL) reads
`zfs get -Hp used` of the host's clone roots and the host's established TCP
connections (/proc/net/tcp, no tool needed) in the same round trip. A clone with a
client connected is active now; one that has had none for its tenant's
`clone_idle_minutes` is destroyed, unless protected. Connections over the clone's
Unix socket are PoZoL's own (readiness, the role) and are not counted.
"""

from __future__ import annotations

import ipaddress
import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.clones.models import Clone
from apps.common.errors import Conflict
from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.remote.commands import Command, script
from apps.remote.errors import RemoteError

logger = logging.getLogger("pozol.clones")

MARK = "@@pozol-tcp"
ESTABLISHED = "01"
READ_TIMEOUT = 30

_READ = """\
zfs get -Hp -o name,value used {roots} 2>/dev/null || true
echo {mark}
cat /proc/net/tcp /proc/net/tcp6 2>/dev/null || true
"""


def read_command(roots: list[str]) -> Command:
    return script(_READ, roots=roots, mark=MARK,
                  shown=f"zfs get -Hp used of {len(roots)} clones; established connections")


def parse_used(text: str) -> dict[str, int]:
    """`zfs get -Hp -o name,value used` lines: dataset -> bytes (garbage skipped)."""
    used = {}
    for line in text.splitlines():
        name, _, value = line.partition("\t")
        if name and value.strip().isdecimal():
            used[name] = int(value)
    return used


def parse_established(text: str) -> set[tuple[str, int]]:
    """(local address, local port) of every established TCP connection in
    /proc/net/tcp and tcp6 text; IPv4-mapped IPv6 addresses read as IPv4."""
    found = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[3] != ESTABLISHED or ":" not in fields[1]:
            continue
        address, _, port = fields[1].partition(":")
        try:
            found.add((_address(address), int(port, 16)))
        except ValueError:
            continue
    return found


def _address(hex_text: str) -> str:
    """/proc/net/tcp writes addresses as 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hex_text)
    if len(raw) not in (4, 16):
        raise ValueError(hex_text)
    ordered = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(ordered)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return str(address)


def connected(listen: str, port: int, established: set[tuple[str, int]]) -> bool:
    if listen in ("0.0.0.0", "::", "*"):
        return any(p == port for _, p in established)
    return (listen, port) in established


def refresh(host: Host, run) -> int:
    """Read the space and connections of the host's live clones (one command); returns
    how many clones were updated."""
    clones = list(Clone.objects.filter(host=host).exclude(state=Clone.State.DESTROYED))
    layouts = {clone.pk: clone.decoded_layout() for clone in clones if clone.layout}
    if not layouts:
        return 0
    answer = run(read_command(sorted({lay.root for lay in layouts.values()})),
                 timeout=READ_TIMEOUT, check=False)
    zfs_text, _, tcp_text = answer.stdout.partition(MARK)
    used, established = parse_used(zfs_text), parse_established(tcp_text)
    now = timezone.now()
    updated = 0
    for clone in clones:
        layout = layouts.get(clone.pk)
        if layout is None:
            continue
        values = {}
        if layout.root in used:
            values.update(used=used[layout.root], used_at=now)
        if clone.state == Clone.State.READY and connected(layout.listen, layout.port,
                                                          established):
            values["active_at"] = now
        if values:
            updated += Clone.objects.filter(pk=clone.pk).update(**values)
    return updated


def refresh_all() -> dict[str, str]:
    """Every host with live clones, one command each; a host that cannot be reached is
    skipped (its figures stay as last read) and named in the answer."""
    from apps.remote import ssh

    problems = {}
    live = Clone.objects.exclude(state=Clone.State.DESTROYED).values("host_id")
    for host in Host.objects.filter(pk__in=live):
        try:
            run = ssh.session(host.ssh_target(),
                              connect_timeout=settings.POZOL["SSH_CONNECT_TIMEOUT"])
            refresh(host, run)
        except RemoteError as error:
            problems[host.name] = str(error)
            logger.warning("reading the clones of %s failed: %s", host.name, error)
    return problems


def idle(now=None) -> list[Clone]:
    """Ready clones of tenants with idle deletion whose last client left (or who never had
    one since ready) longer ago than the tenant allows; protected ones are kept."""
    now = now or timezone.now()
    candidates = (Clone.objects.filter(state=Clone.State.READY,
                                       tenant__clone_idle_minutes__isnull=False)
                  .select_related("tenant")
                  .annotate(last_active=Coalesce(F("active_at"), F("ready_at"))))
    return [clone for clone in candidates
            if not clone.protected and clone.last_active is not None
            and clone.last_active <= now - timedelta(minutes=clone.tenant.clone_idle_minutes)]


def reap_idle(now=None) -> list[Operation]:
    from apps.clones.services import destroy_clone

    started = []
    for clone in idle(now):
        try:
            started.append(destroy_clone(clone, trigger=Operation.Trigger.SCHEDULE))
        except Conflict:
            continue
    return started
