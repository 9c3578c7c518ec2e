"""The operations engine: Operation rows, steps, leases, the sweeper, retention.

A step is a short, idempotent function of a `StepContext` returning one of:
`Next(step)`, `Wait(seconds)` (come back later: polling a long job, or waiting
for another mutating operation), `Done(result)` or `Fail(error, code)`. An
exception is a retry with back-off, counted against the step's attempts; a
`RemoteError` fails the operation with its code. While a step runs, a heartbeat
thread of its worker renews the lease every third of `POZOL_OPERATION_LEASE` (a
conditional UPDATE on the claim's own lease token), so a step may take longer
than the lease and still runs once. A worker that dies stops beating and loses
its lease; the sweeper re-delivers the step and it runs again, which is why
steps must be safe to repeat. The outcome is recorded only by the claim that
still holds the lease: a run whose lease was taken over discards its result.
Work longer than a step (pgbench, `pg_ctl restart`) runs detached on the host
under a unit name that is its idempotency key (`op<id>-<name>`), and later
steps poll it. Each app declares its kind once, `KIND = register(Kind(...))` in
its `steps.py`, and its services start operations by `steps.KIND.name`.
Every end of an operation (a step's Done or Fail, a refusal, a cancel, a
deadline) passes through the engine's `_finish`, which announces
`operation.finished` (kind, subject, outcome) through apps/common/events.py; the
events app records and delivers it after commit, and ops imports nothing of it.
"""
