"""Experiments: one setting varied across values on a host, pgbench in alternating
order, a verdict, and the host given back.

An operation that changes a host for a while and must give it back
(`experiments.run`) reads every before-value in its first step, before writing
anything (a custom pgbench script then gets a role and a database of its own,
`experiments.core.commands.confine`, so the operator's SQL never runs as the
superuser owner; `release` in `restore` drops them and their pg_hba line), and
wraps its steps so that a failure (a refused room check, a remote error, an
exception on its last attempt) is recorded in the state and leads to a
`restore` step that writes the before-values back (ALTER SYSTEM RESET, `zfs
inherit`, the sysctl pair member that was in force), restarts PostgreSQL if a
restored setting needs it, and only then fails the operation with the first
error. An operator's cancel (from the operation's page, the experiment's page
or `POST /api/operations/{id}/cancel/`) leads there too: such a kind is
registered with `winds_down_on_cancel`, so `engine.cancel` only records the
request in the state (kept by `_record` even when a step is running at that
moment) and wakes the operation; its next step stops the run's remote jobs and
goes to `restore` (a `pg_ctl restart` under way finishes first), and `finish`
ends it as cancelled (`Fail(..., CANCELLED)`). An operation that never started
a step, or of any other kind, ends at once.
"""
