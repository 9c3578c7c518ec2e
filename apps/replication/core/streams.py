"""Which stream flags a link's sends use, and why: -w (raw), -c (compressed), -L (large blocks).

decide() is given the link (its opt-outs, and the -L its targets were first
filled with), both ends' capabilities (capabilities.py), what the source dataset's
`encryption` and `keystatus` say and what its target copy is, and returns the
flags with one reason per flag, which the plan logs and the link page shows.

-w, raw. An encrypted source dataset (`encryption` not off) is sent raw: its
blocks as stored, still encrypted, so neither the wire nor the target ever holds
them decrypted, the key never leaves the source (a raw send needs none loaded),
and the copy is received raw: an encrypted dataset, its own encryption root,
whose key stays unavailable on the target. As zrepl's `send.encrypted` does, the
raw send is not an option an operator can turn off. A ZFS without native
encryption (zfs-fuse, OpenZFS before 0.8) has no `encryption` property, which
reads as "not encrypted". An encrypted dataset whose target cannot receive raw
is refused, never sent decrypted to a new copy. A target copy that was received
decrypted (by PoZoL before it sent raw, or by hand) cannot take a raw
incremental: its incrementals stay decrypted to match, without -p (ZFS refuses
"encrypted dataset ... may not be sent with properties without the raw flag"),
the source's key must be loaded, and the plan says how to get an encrypted copy.

-c, compressed. Blocks go as compressed on disk: a smaller stream, nothing
decompressed to send nor compressed again on receive. Where both ends take it
and the link does not opt out. The copy then keeps the source's compression
algorithm, so a link whose target must be read by an older system (no zstd, say)
opts out and the target compresses by its own setting.

-L, large blocks. Records over 128K go whole rather than split into 128K
blocks; without -L, -c also has to decompress such blocks to split them. Where
both ends take it and the link does not opt out, until the link's first send:
from then on its sends keep the -L they started with, because an incremental
must match what its target received (OpenZFS 2.0+ refuses one that drops -L onto
a copy holding large blocks; before 2.0 a change either way zeroed data on the
receiver, openzfs/zfs#6224, fixed by #10383). zrepl documents the same: its
`large_blocks` "should not be changed after initial replication". A raw stream
implies -c and -L (zfs-send(8)): the opt-outs do not apply to encrypted datasets.

-e (embedded blocks) is never sent: a stream with it cannot be received into an
encrypted target parent (zfs-send(8)), and -c already keeps small blocks compact.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from apps.remote.facts.zfs import ZFS_FUSE
from apps.replication.core.capabilities import ReplicationCapabilities
from apps.replication.core.link import Link


@dataclass(frozen=True)
class Encryption:
    """A source dataset's native encryption, as `zfs get encryption,keystatus` says it."""

    cipher: str = "off"  # the `encryption` property: off, aes-256-gcm, ...
    keystatus: str = ""  # available / unavailable; "" where not encrypted or not read

    @property
    def on(self) -> bool:
        return self.cipher not in ("off", "-", "")


NOT_ENCRYPTED = Encryption()


class Copy(StrEnum):
    """What the target holds for a dataset, as far as the stream flags care."""

    NONE = "none"  # no copy yet: a full send makes it
    RAW = "raw"  # an encrypted copy that is its own encryption root: a raw receive made it
    PLAIN = "plain"  # a copy that is not a raw one (unencrypted, or encrypted by its parent)


@dataclass(frozen=True)
class Choice:
    flag: str  # "-w", "-c" or "-L"
    on: bool | None  # None: decided at each run (whether the source is encrypted)
    why: str

    @property
    def text(self) -> str:
        state = {True: "on", False: "off", None: "at each run"}[self.on]
        return f"{self.flag} {state}: {self.why}"


@dataclass(frozen=True)
class StreamFlags:
    raw: bool = False
    compressed: bool = False
    large_blocks: bool = False
    choices: tuple[Choice, ...] = ()
    refusal: str = ""  # why this dataset cannot be sent at all; "" when it can
    properties: bool = True  # False: -p must be left out (a decrypted encrypted send)

    @property
    def flags(self) -> tuple[str, ...]:
        """The flags as zfs send takes them: -w alone implies the other two."""
        if self.raw:
            return ("-w",)
        return ("-c",) * self.compressed + ("-L",) * self.large_blocks

    @property
    def text(self) -> str:
        shown = " ".join(self.flags) or "no -w/-c/-L"
        return f"{shown} ({'; '.join(choice.text for choice in self.choices)})"


def decide(link: Link, source: ReplicationCapabilities, target: ReplicationCapabilities,
           encryption: Encryption | None, copy: Copy | None = None) -> StreamFlags:
    """The flags of one source dataset's sends. `encryption` None: not read (a preview
    before any run: then a source that may be encrypted says "at each run"); `copy`
    None: the target is not known (a preview), taken as new or a raw copy."""
    if encryption is None and not source.raw_stream:
        encryption = NOT_ENCRYPTED  # no such property there: not encrypted
    raw, refusal, properties = _raw(source, target, encryption, copy)
    if raw.on:
        implied = ("implied by -w: a raw stream carries the blocks as stored (compressed, "
                   "large records whole); the link's opt-outs do not apply to an encrypted "
                   "dataset")
        return StreamFlags(True, True, True, (raw, Choice("-c", True, implied),
                                              Choice("-L", True, implied)), refusal)
    compressed = _compressed(link, source, target)
    large, large_refusal = _large_blocks(link, source, target)
    return StreamFlags(False, bool(compressed.on), bool(large.on), (raw, compressed, large),
                       refusal or large_refusal, properties)


def _raw(source: ReplicationCapabilities, target: ReplicationCapabilities,
         encryption: Encryption | None, copy: Copy | None) -> tuple[Choice, str, bool]:
    if encryption is None:
        return Choice("-w", None, "used if the dataset is encrypted (its `encryption` "
                                  "property, read at each run)"), "", True
    if not encryption.on:
        why = ("the dataset is not encrypted" if source.raw_stream else
               f"the source ({_dialect(source, 0, 8)}) has no native encryption")
        return Choice("-w", False, why), "", True
    key = encryption.keystatus
    if copy is Copy.PLAIN:
        if key != "available":
            return (Choice("-w", False, "its target copy was received decrypted"),
                    "the dataset is encrypted and its copy on the target was received "
                    "decrypted, so it can only continue decrypted, which needs the key "
                    f"loaded on the source (keystatus {key or 'unknown'}): load it, or "
                    "replicate into another target parent with a new link to get an "
                    "encrypted copy", False)
        return (Choice("-w", False, f"the dataset is encrypted ({encryption.cipher}) but its "
                                    "copy on the target was received decrypted (before "
                                    "PoZoL sent raw, or by hand), which a raw stream cannot "
                                    "continue: sent decrypted to match, without -p. For an "
                                    "encrypted copy, replicate into another target parent "
                                    "with a new link"), "", False)
    if not target.raw_stream:
        return (Choice("-w", False, f"the target ({_dialect(target, 0, 8)}) cannot receive "
                                    "raw streams"),
                f"the dataset is encrypted ({encryption.cipher}) and the target "
                f"({_dialect(target, 0, 8)}) has no native encryption, so it cannot receive "
                "it raw; PoZoL never sends an encrypted dataset decrypted to a new copy. "
                "Replicate it to an OpenZFS 0.8+ host.", True)
    unloaded = "; its key is not loaded, and a raw send needs none" if key == "unavailable" \
        else ""
    return (Choice("-w", True, f"the dataset is encrypted ({encryption.cipher}): sent as "
                               "stored, still encrypted, and received raw, so the copy stays "
                               "encrypted and its key never reaches the target" + unloaded),
            "", True)


def _compressed(link: Link, source: ReplicationCapabilities,
                target: ReplicationCapabilities) -> Choice:
    if not link.compressed_streams:
        return Choice("-c", False, "the link opts out: blocks are decompressed to send and "
                                   "the target compresses them by its own setting")
    if lacking := _lacking(source, target, "compressed_stream", (0, 7)):
        return Choice("-c", False, f"{lacking} compressed streams: blocks are decompressed "
                                   "to send and compressed again on receive")
    return Choice("-c", True, "both ends take compressed streams: blocks go as compressed "
                              "on disk, a smaller stream, nothing compressed twice")


def _large_blocks(link: Link, source: ReplicationCapabilities,
                  target: ReplicationCapabilities) -> tuple[Choice, str]:
    lacking = _lacking(source, target, "large_block_stream", (0, 6))
    sent = link.large_blocks_sent
    if sent is not None:
        change = ("" if sent == link.large_block_streams else
                  f"; the link's setting ({'on' if link.large_block_streams else 'off'}) "
                  "applies to a new link only")
        why = (f"kept as the link's first send had it: an incremental must match what its "
               "target received (OpenZFS 2.0+ refuses one that drops -L onto large blocks; "
               f"before 2.0 a change either way zeroed data, openzfs/zfs#6224){change}")
        if sent and lacking:
            return Choice("-L", True, why), (
                f"the link's copies were received with -L and {lacking} large-block "
                "streams now; an incremental without -L could be refused or zero data on "
                "the target. Replicate into another target parent with a new link.")
        return Choice("-L", sent, why), ""
    if not link.large_block_streams:
        return Choice("-L", False, "the link opts out: records over 128K are split into "
                                   "128K blocks (decompressed to be split)"), ""
    if lacking:
        return Choice("-L", False, f"{lacking} large-block streams: records over 128K are "
                                   "split into 128K blocks"), ""
    return Choice("-L", True, "both ends take large blocks: records over 128K (a "
                              "recordsize above 128K) stay whole"), ""


def _lacking(source: ReplicationCapabilities, target: ReplicationCapabilities, name: str,
             since: tuple[int, int]) -> str:
    """"the source (zfs-fuse, pool version 23) cannot send" and the like, or ""."""
    if not getattr(source, name):
        return f"the source ({_dialect(source, *since)}) cannot send"
    if not getattr(target, name):
        return f"the target ({_dialect(target, *since)}) cannot receive"
    return ""


def _dialect(caps: ReplicationCapabilities, major: int, minor: int) -> str:
    if caps.dialect == ZFS_FUSE:
        return "zfs-fuse, pool version 23"
    return f"OpenZFS before {major}.{minor}"
