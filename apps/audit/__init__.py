"""The audit log: one middleware writes it, pages and the API read it.

The audit log (`AuditEvent`) is written in one place,
`apps.audit.services.record`, called by `AuditMiddleware` for every POST, PUT,
PATCH and DELETE on pages and the API (and every 401 to a presented token), and
by Django's auth signals for sign-in and sign-out. No view records anything
itself. The object is read from the URL (apps/audit/subjects.py: a collection's
segment, then its id, the same shape everywhere) before the view runs, so a
deleted host keeps its name; a new object's id comes from the answer. The
outcome is the status (2xx/3xx success, 4xx refused with the API error's
message, 5xx failed), or refused when a page answered with its form's errors; a
DomainError a page put on a form reaches the middleware through
`apps.common.errors.REFUSAL`. What was sent is kept without secrets (so a
plan's acknowledgements are there). The tenant of an entry is the object's,
else the acting user's; tenant admins read their tenant's entries. A
non-operator's refused request keeps the object's type and id but not its name
or tenant, so the log tells no member about an object it may not see. What runs
without a request (beat, a worker's steps) is in the operations' own logs, not
here.
"""
