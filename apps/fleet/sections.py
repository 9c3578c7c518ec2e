"""What the host page and the overview show of a host, contributed by each app.

The fleet app owns the host page and the overview but knows nothing of
profiles, benchmarks or (later) snapshots. Each app registers, in its
AppConfig.ready():

- a Section: a tab of the host page (/hosts/<pk>/<id>/) with its template and
  a function giving that template's context for one host. Only the shown
  section's context is computed, so a page costs what its tab needs.
- a Summary: a short fact (assigned profile, findings) shown in the host
  page's header and as a column of the overview. It adds what it needs to the
  hosts queryset (annotations: joins or subqueries), never a query per host.
  With `worst_first` (order_by expressions on its annotations) the overview can
  be sorted by it, worst first, in the same query.
- a Total: a line above the overview's table about the whole fleet (space saved
  by compression), from one query whatever the number of hosts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from apps.fleet.models import Host


@dataclass(frozen=True)
class Section:
    id: str  # the URL segment: a slug
    title: str
    order: int
    template: str  # rendered with `host` and what context(host) returns
    context: Callable[[Host], dict] | None = None
    # Whether the section shows what discovery found: before the host was ever
    # reached it shows "not known" instead of an empty list that reads as a fact.
    needs_facts: bool = True


@dataclass(frozen=True)
class Summary:
    id: str
    title: str
    order: int
    template: str  # rendered with `host`, as annotate() left it
    annotate: Callable[[QuerySet], QuerySet] | None = None
    worst_first: tuple = ()  # order_by() expressions; empty: not sortable
    sort_label: str = ""  # "lowest ARC hit rate first"


@dataclass(frozen=True)
class Total:
    id: str
    order: int
    template: str  # rendered with what context() returns
    context: Callable[[], dict]


_sections: dict[str, Section] = {}
_summaries: dict[str, Summary] = {}
_totals: dict[str, Total] = {}


def register_section(section: Section) -> None:
    _sections[section.id] = section


def register_summary(summary: Summary) -> None:
    _summaries[summary.id] = summary


def register_total(total: Total) -> None:
    _totals[total.id] = total


def totals() -> list[Total]:
    return sorted(_totals.values(), key=lambda t: (t.order, t.id))


def sortable() -> list[Summary]:
    return [summary for summary in summaries() if summary.worst_first]


def sections() -> list[Section]:
    return sorted(_sections.values(), key=lambda s: (s.order, s.id))


def section(section_id: str) -> Section | None:
    return _sections.get(section_id)


def summaries() -> list[Summary]:
    return sorted(_summaries.values(), key=lambda s: (s.order, s.id))


def annotated(hosts: QuerySet) -> QuerySet:
    """The hosts with every summary's annotations (no query is run here)."""
    for summary in summaries():
        if summary.annotate:
            hosts = summary.annotate(hosts)
    return hosts
