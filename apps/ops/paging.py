"""Pages of a long, newest-first list without counting it.

Operation history holds millions of rows at fleet scale; COUNT(*) over them
costs more than the page itself, and an operator pages by "older" and "newer",
never to page 41,137. So a page fetches one row more than it shows, to know
whether there is an older page.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet


@dataclass(frozen=True)
class Page:
    rows: list
    number: int
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def next_number(self) -> int:
        return self.number + 1

    @property
    def previous_number(self) -> int:
        return self.number - 1


# Past this the offset means nothing to a person and overflows PostgreSQL's OFFSET.
MAX_PAGE = 1_000_000


def page_number(raw: str | None) -> int:
    """The ?page= value, with anything that is not a page number read as 1."""
    # isdigit() alone admits "²" and other digits int() refuses.
    if not raw or not raw.isascii() or not raw.isdigit():
        return 1
    return min(max(int(raw), 1), MAX_PAGE)


def uncounted_page(queryset: QuerySet, raw_number: str | None, per_page: int) -> Page:
    number = page_number(raw_number)
    start = (number - 1) * per_page
    rows = list(queryset[start:start + per_page + 1])
    return Page(rows=rows[:per_page], number=number, has_next=len(rows) > per_page)
