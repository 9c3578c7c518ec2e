"""Rollouts: one profile version applied to many hosts in waves, safely (issue 24 §2).

A rollout is a canary (one host, the first unless named), then waves of N hosts
in the order given (core/waves.py, pure). It is one `rollout.run` Operation whose
steps start and wait for each host's child operations, so it is as durable as any
Operation: its state is the Rollout and RolloutHost rows plus the children's own
rows, a child is recorded on its host's row in the transaction that starts it,
and a step repeated after a worker died finds the child and waits for it.

Per host:
- baseline: as the rollout starts, every host is discovered and tuning says what
  the version would change on it and from what values (`values_to_change`), and
  which critical findings it has;
- at its wave's turn: discovered again; a value the version would change that
  moved since the baseline (or one that reached the profile's value by itself)
  means the host was changed by hand during the rollout: it is skipped, with what
  changed. Sysctls are the kernel's: on hosts sharing one kernel (the test
  fleet's containers) the canary's sysctl change is seen as such a change on the
  others, rightly, since nobody can tell who wrote it;
- tuning's own plan and apply (make_plan for the version, apply_plan), started as
  a child; a plan with nothing to change is done without an apply;
- validation, `health` (the default): discovered again, then every running
  cluster answers `select 1`, every applied value reads back as planned (tuning's
  own readers and comparison), no critical advisor finding that was not there at
  the baseline and no alert opened on the host since its turn began; `pgbench`
  adds apps/benchmarks' runs (tpcb, 2 clients, `pgbench_seconds` each, on the
  database `pgbench`, which must exist) before the apply and after the health
  check, and fails the host when TPS fell by more than `max_tps_drop_percent`;
  `none` trusts the apply's own read-back.

A wave is judged when all its hosts ended: any failure (discovery, plan, apply,
validation) stops the rollout, and so does a canary that was skipped. A stop
rolls back (tuning's rollback of each host's plan, only where it wrote
something) the failing wave's hosts, and every earlier wave's too when the
operator chose `rollback_earlier_waves` at the start; then the operation fails
with code `rollout_stopped` and the reason. The rollout does not change hosts'
profile assignments: it applies a version, as `POST /api/hosts/{id}/plan/` with a
version does.

Cancelling the operation (the engine's cancel: the kind does not wind down) ends the
rollout as `cancelled` (Rollout.outcome reads it from the operation): no host starts,
nothing is rolled back, children under way finish on their own.

Pause sets `paused_at`: the children under way end, no host starts; the wave
step keeps waiting (a Wait is not a retry, so a long pause costs nothing but the
operation's 7-day deadline). Resume clears it and wakes the operation. The
events `rollout.wave_done` and `rollout.stopped` are announced through
apps/common/events.py.
"""
