"""Reading ids that a page posts back: hostile or stale values are a refusal
(a DomainError naming the field), never a ValueError deep in the ORM."""

from __future__ import annotations

from apps.api.filters import MAX_ID
from apps.common.errors import DomainError


def posted_id(data, field: str, *, required: bool = True) -> int | None:
    """The id in data[field]; None if absent and not required."""
    raw = data.get(field) or ""
    if not raw and not required:
        return None
    # An id is ASCII digits: isdecimal() alone accepts '١٢', isdigit() even '²'.
    if not (raw.isascii() and raw.isdecimal()) or not 0 < int(raw) <= MAX_ID:
        raise DomainError(f"{field}: choose one from the list.", code="invalid_id",
                          fields={field: ["not a valid choice"]})
    return int(raw)
