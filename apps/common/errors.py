"""The one kind of error services raise: a request the product refuses, with why.

Every service (fleet, tuning, benchmarks, and the apps still to come) raises a
`DomainError` (or a subclass naming its app) for input or state it will not
act on. The API maps it to its error shape in one place
(apps.api.errors) and the UI to a form error or a message in one place
(apps.ops.ui_errors), so neither ever shows a 500 for a refusal.
"""

from __future__ import annotations

from contextvars import ContextVar


class DomainError(Exception):
    """Refused: `message` is a sentence for a person, `fields` names the inputs at fault."""

    status = 400
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None,
                 fields: dict[str, list[str]] | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.code
        self.fields = fields
        self.status = status or self.status

    def __str__(self) -> str:
        return self.message


class Conflict(DomainError):
    """The request clashes with what exists (a taken name, a busy object)."""

    status = 409
    code = "conflict"


# The refusal a request ended with, when a page put it on a form instead of
# raising it (apps.ops.ui_errors.on_form): the audit log reads it from here.
REFUSAL: ContextVar[DomainError | None] = ContextVar("pozol_refusal", default=None)


def note_refusal(exc: DomainError) -> None:
    REFUSAL.set(exc)
