"""What PoZoL's archive command's note of its last failure (apps/wal/core/plan.py) means,
in the words the alert, the WAL tab and the API give: pure, from the stored note."""

from __future__ import annotations

from datetime import datetime

# What a failed copy's message means, by the words of coreutils' and PoZoL's archive
# command (C or English locale: otherwise the message alone is shown), first match.
_MEANINGS = (
    ("not a mount point", "the archive dataset is not mounted (zfs mount {dataset})"),
    ("Read-only file system", "the archive dataset is read-only (zfs get readonly {dataset})"),
    ("with different content", "a segment of that name is archived already with different "
                               "content, and PoZoL's archive command never overwrites one"),
    ("Permission denied", "permission denied: the archive directory must be writable by the "
                          "cluster's owner"),
    ("No space left on device", "no space left in the archive"),
    ("Disk quota exceeded", "no space left in the archive (its quota)"),
    ("No such file or directory", "a directory is missing"),
)


def failure_cause(reason: str, at: datetime | None, dataset: str) -> str:
    """The archive command's reason for its last failure (noted `at`), with what it means
    when known: "" without one."""
    if not reason:
        return ""
    meaning = next((m for words, m in _MEANINGS if words in reason), "")
    when = f" at {at:%Y-%m-%d %H:%M:%S} UTC" if at else ""
    said = f"the archive command said{when}: {reason}"
    return f"{meaning.format(dataset=dataset)} ({said})" if meaning else said
