"""A link's row as the pure core sees it, for the service and the steps alike.

Below both: the service checks a link with it before saving, the steps rebuild the
core's Link of a saved row for every command, and neither imports the other for it.
"""

from __future__ import annotations

from apps.common.errors import DomainError
from apps.replication.core.link import Link, ReplicationError
from apps.replication.models import ReplicationLink


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
