"""What every app's REST API shares: the error shape, strict fields, the bounded JSON
parser, pagination (page numbers, and cursors for the long lists: pagination.py),
the schema hook, OPTIONS metadata, the docs page, the list filters, and
Idempotency-Key on the POSTs that start work (idempotency.py)."""
