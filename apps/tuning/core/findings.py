"""What the advisor reports, and what its rules see.

A rule is a small function `(Context) -> list[Finding]`; an empty list means
the host is fine on that point. Findings carry their evidence from facts, the
reasoning, the action, and the source that taught it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from apps.remote.facts.host import Cluster, Dataset, HostFacts
from apps.tuning.core import facts as r

SEVERITIES = ("critical", "warning", "info")
STAGES = ("current", "introduced", "resolved")


@dataclass(frozen=True)
class Finding:
    id: str  # the rule's id, stable: plans and the UI refer to it
    severity: str  # "critical" | "warning" | "info"
    title: str
    evidence: str  # the facts that made the rule fire, with their values
    why: str
    action: str
    source: str  # "Title — Author", from apps.tuning.core.sources
    subject: str = "host"  # dataset, pool, disk, cluster data_dir, or "host"
    # With desired settings: "current" (true now and after applying), "introduced"
    # (only after applying) or "resolved" (true now, fixed by applying).
    stage: str = "current"


@dataclass(frozen=True)
class Context:
    facts: HostFacts
    acknowledged: frozenset[str]
    large_records_intended: bool = False  # the desired profile asks for >= 64K data records
    # Scrub ages are judged against it; zpool status prints the host's local time, so
    # this is naive local time too (a day's precision is all a monthly rule needs).
    now: datetime = field(default_factory=datetime.now)

    @property
    def ram(self) -> int | None:
        return self.facts.mem_total

    def pg_datasets(self) -> list[tuple[Cluster, str, Dataset]]:
        """(cluster, role, dataset) for datasets holding a cluster's files and present in facts."""
        found = r.datasets(self.facts)
        return [(cluster, role, found[name]) for cluster, role, name in r.pg_datasets(self.facts)
                if name in found]

    def clusters(self) -> list[Cluster]:
        """The clusters whose settings were read: the ones setting rules can judge."""
        return [c for c in self.facts.clusters if c.settings]


Rule = Callable[[Context], list[Finding]]
