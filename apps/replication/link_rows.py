"""A link's row as the pure core sees it, for the service and the steps alike.

Below both: the service checks a link with it before saving, the steps rebuild the
core's Link of a saved row for every command, and neither imports the other for it.
"""

from __future__ import annotations

from apps.common.errors import DomainError
from apps.fleet.models import Host
from apps.remote.errors import RemoteError
from apps.remote.facts.zfs import ZfsVersion
from apps.replication.core import commands
from apps.replication.core.capabilities import ReplicationCapabilities, replication_capabilities
from apps.replication.core.link import Link, ReplicationError
from apps.replication.models import ReplicationLink


class LinkFailure(RemoteError):
    """A run cannot go on for a reason a person must fix (it fails the operation)."""

    code = "replication_failed"


class LinkError(DomainError):
    """A link request refused; `fields` names the inputs at fault."""


def core_link(link: ReplicationLink) -> Link:
    """The pure core's Link of a row; a LinkError for any value it refuses."""
    try:
        return Link(name=link.name, sources=tuple(link.sources),
                    target_parent=link.target_parent, mode=link.mode,
                    rollback_opt_in=link.rollback_opt_in,
                    bandwidth_limit=link.bandwidth_limit,
                    compressed_streams=link.compressed_streams,
                    large_block_streams=link.large_block_streams,
                    large_blocks_sent=link.large_blocks_sent,
                    archive=link.archive or None)
    except ReplicationError as exc:
        raise LinkError(f"{exc.field}: {exc}", fields={exc.field: [str(exc)]}) from None


def capabilities_of(host: Host) -> ReplicationCapabilities:
    facts = host.typed_facts()
    if facts is None or facts.zfs is None:
        raise LinkFailure(f"{host.name} has no ZFS facts: run discovery")
    version = ZfsVersion(userland=facts.zfs.userland_version, kernel=facts.zfs.kernel_version)
    return replication_capabilities(facts.zfs.dialect, version, facts.zfs.capabilities)


def endpoint(link: ReplicationLink) -> commands.Endpoint:
    directory = commands.link_dir(link.source_host.work_dir, link.name)
    target = link.target_host
    return commands.Endpoint(host=target.address, key_path=f"{directory}/id",
                             known_hosts_path=f"{directory}/known_hosts", user=target.user,
                             port=target.port)
