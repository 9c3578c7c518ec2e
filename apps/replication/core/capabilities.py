"""What a host's ZFS dialect offers to replication, derived from gathered facts.

The facts layer (apps.remote.facts.zfs) already tells the dialect, the version
and the general `Capabilities` (resumable_send, multi_snapshot, ...). This
module narrows them to the questions a replication plan asks, so the planner
and the command builders read one small frozen value per host.

Facts behind the table (zfs-fuse read from its own usage text on the test
hosts: `send [-RDp] [-[iI] snapshot] <snapshot>`, `receive [-vnF]`):

                          zfs-fuse (pool v23)   OpenZFS 0.7   OpenZFS 0.8 / 2.x
  send -p (properties)    yes                   yes           yes
  send -I (intermediates) yes                   yes           yes
  send -nvP (estimate)    no                    yes           yes
  recv -s / send -t       no                    yes           yes
  recv -u (no mount)      no                    yes           yes
  recv -o / -x            no                    yes           yes
  `written` property      no                    yes           yes
  multi-snapshot          no                    yes           yes
  send -c (compressed)    no                    yes           yes
  send -L (large blocks)  no                    yes           yes
  send -w (raw), native   no                    no            yes
  encryption
  (`encryption` property)

-c sends blocks as they are compressed on disk (no decompress and recompress, a
smaller stream); -L sends records over 128K as they are rather than split. A
receiver must know the stream's features (lz4_compress, large_blocks: OpenZFS pool
features that pool version 23 lacks), so both are used only when BOTH ends are
OpenZFS 0.7+ (0.6.5 already had -L; -c came in 0.7.0). -w sends an encrypted
dataset's blocks as stored, still encrypted; native encryption and raw sends came
together in OpenZFS 0.8.0, and a ZFS without them has no `encryption` property at
all (zfs-fuse refuses a `zfs get` naming it), which reads as "not encrypted". What
a link then uses, and why, is apps.replication.core.streams.

An OpenZFS host whose version is unknown is treated as 0.7: `zfs version` arrived
in 0.8 with native encryption, so such a host has no raw sends (its kernel
module's version, where known, decides instead). Every other row is yes from 0.7
on. Probes that the facts layer made (with_observed) win over the table, for the
rows it probes (resumable_send, multi_snapshot).

`pv` and `mbuffer` are not ZFS but decide the bandwidth limit and the byte
counter; the caller passes the tools it found on the host (`command -v`).
The test hosts have neither, so there the counter is GNU dd and no limit can
be applied (the plan says so).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from apps.remote.facts.zfs import OPENZFS, ZFS_FUSE, Capabilities, ZfsVersion, version_tuple


@dataclass(frozen=True)
class ReplicationCapabilities:
    dialect: str  # "openzfs" or "zfs-fuse"
    send_properties: bool = True  # zfs send -p
    send_intermediates: bool = True  # zfs send -I
    send_estimate: bool = True  # zfs send -nvP prints "size\t<bytes>"
    resumable: bool = True  # zfs recv -s, receive_resume_token, zfs send -t
    recv_no_mount: bool = True  # zfs recv -u
    recv_properties: bool = True  # zfs recv -o readonly=on -x mountpoint
    written_property: bool = True  # `written` (bytes written since the newest snapshot)
    multi_snapshot: bool = True  # zfs snapshot a@s b@s
    compressed_stream: bool = True  # zfs send -c, and a receiver that takes it
    large_block_stream: bool = True  # zfs send -L, and a receiver that takes it
    # native encryption: `encryption` property, send -w, raw receive. False unless said, so
    # that capabilities saved by a run from before it existed never ask zfs-fuse for it.
    raw_stream: bool = False
    pv: bool = False  # pv installed: counter and -L limit in one process
    mbuffer: bool = False  # mbuffer installed: -r limit

    @property
    def can_limit_bandwidth(self) -> bool:
        return self.pv or self.mbuffer


ZFS_FUSE_CAPABILITIES = ReplicationCapabilities(
    dialect=ZFS_FUSE, send_estimate=False, resumable=False, recv_no_mount=False,
    recv_properties=False, written_property=False, multi_snapshot=False,
    compressed_stream=False, large_block_stream=False, raw_stream=False,
)
OPENZFS_CAPABILITIES = ReplicationCapabilities(dialect=OPENZFS, raw_stream=True)
# 0.7: everything above but native encryption (0.8.0).
OPENZFS_0_7_CAPABILITIES = replace(OPENZFS_CAPABILITIES, raw_stream=False)


def replication_capabilities(dialect: str, version: ZfsVersion | None = None,
                             observed: Capabilities | None = None,
                             tools: Iterable[str] = ()) -> ReplicationCapabilities:
    """From the facts of one host: its dialect, its version, the gathered capabilities
    (probes included) and the names of the helper tools found on it."""
    found = set(tools)
    if dialect == ZFS_FUSE:
        base = ZFS_FUSE_CAPABILITIES
    elif dialect == OPENZFS:
        base = _openzfs(version)
    else:
        raise ValueError(f"Unknown ZFS dialect {dialect!r}")
    resumable = base.resumable and (observed.resumable_send if observed else True)
    multi = observed.multi_snapshot if observed else base.multi_snapshot
    return replace(base, resumable=resumable, multi_snapshot=multi, pv="pv" in found,
                   mbuffer="mbuffer" in found)


def _openzfs(version: ZfsVersion | None) -> ReplicationCapabilities:
    known = version_tuple(version.userland) or version_tuple(version.kernel) if version else None
    if known is None:
        return OPENZFS_0_7_CAPABILITIES
    if known < (0, 7, 0):
        # 0.6 had -nvP, recv -u and `written`, but neither resumable receive nor recv -o/-x,
        # nor compressed streams.
        return replace(OPENZFS_0_7_CAPABILITIES, resumable=False, recv_properties=False,
                       compressed_stream=False)
    if known < (0, 8, 0):
        return OPENZFS_0_7_CAPABILITIES
    return OPENZFS_CAPABILITIES


def stream_refusal(source: ReplicationCapabilities,
                   target: ReplicationCapabilities) -> str | None:
    """Why no stream of the source can be received by the target, or None.

    OpenZFS marks every stream of a filesystem of ZPL version 5 (system attributes, the
    default of every OpenZFS filesystem) with the SA_SPILL feature flag (libzfs
    `zfs_send_one`, module/zfs/dmu_send.c `setup_featureflags`: `version >=
    ZPL_VERSION_SA`), and a receiver from before pool version 24 refuses it: seen
    between the OpenZFS 2.3 VM host and a zfs-fuse host, "cannot receive: stream has
    unsupported feature, feature flags = 4", after the send had started."""
    if source.dialect == OPENZFS and target.dialect == ZFS_FUSE:
        return ("zfs-fuse (pool version 23) cannot receive a stream from OpenZFS: OpenZFS "
                "marks streams of its filesystems (ZPL version 5, system attributes) with a "
                "feature that pools before version 24 refuse (\"stream has unsupported "
                "feature\"). Replicate to an OpenZFS host instead.")
    return None
