"""A link's key: made once, installed on both sides in the plan's round trips."""

from __future__ import annotations

from apps.fleet import credentials
from apps.ops.engine import Fail
from apps.remote import keys
from apps.remote.commands import Command
from apps.replication import records
from apps.replication.core import commands
from apps.replication.core.planner import Side
from apps.replication.link_rows import capabilities_of, core_link, endpoint
from apps.replication.models import ReplicationLink


def key_commands(link: ReplicationLink) -> dict[Side, Command] | Fail:
    """The link's key pair made if it has none; the commands that put its receive-only
    line in the target's authorized_keys and its private key and the target's pinned
    host key in the source's work dir (run ahead of the plan's listings, in their
    round trips). Not run after a clean run: a key that stopped working fails the next
    transfer, and the run after that installs it again."""
    if not link.private_key_encrypted:
        private, public = keys.generate_keypair(commands.key_comment(link.name))
        link.private_key_encrypted = credentials.encrypt(private)
        link.public_key = public
        link.save(update_fields=["private_key_encrypted", "public_key", "updated_at"])
    target = link.target_host
    if not target.host_key:
        records.record_outcome(link, ReplicationLink.State.FAILED,
                        f"{target.name}'s host key is not pinned yet")
        return Fail(f"{target.name}'s host key is not pinned yet: discover it first",
                    code="target_not_pinned")
    line = commands.authorized_keys_line(core_link(link), link.public_key,
                                         capabilities_of(target), login=target.user)
    known = commands.known_hosts_line(target.address, target.port, target.host_key)
    files = commands.write_source_files(endpoint(link), known,
                                        credentials.decrypt(link.private_key_encrypted))
    standing = (None if target.user == "root" else
                commands.standing_receive(core_link(link), capabilities_of(target)))
    install = commands.install_key(target.authorized_keys_file, core_link(link), line,
                                   standing, login=target.user)
    return {Side.SOURCE: files, Side.TARGET: install}
