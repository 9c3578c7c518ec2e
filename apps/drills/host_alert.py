"""The host's restore_drill_failed alert, read again from the last run of each schedule.

Below both the service (a schedule deleted, a run that never started) and the step (a
run's result recorded), so neither imports the other to keep it true.
"""

from __future__ import annotations

from apps.drills.alert_kinds import RESTORE_DRILL_FAILED
from apps.drills.models import DrillRun, DrillSchedule
from apps.fleet.models import Host


def update_alert(host: Host) -> None:
    """One restore_drill_failed alert on the host while the last drill of any of its
    schedules failed, saying which; resolved when every last drill passed."""
    failing = []
    for schedule in DrillSchedule.objects.filter(host=host):
        last = schedule.runs.exclude(status=DrillRun.Status.RUNNING).first()
        if last is not None and last.status == DrillRun.Status.FAILED:
            failing.append(f"restore drill #{last.pk} of {schedule.source_label} "
                           f"(@{last.snapshot or 'no snapshot'}) failed: "
                           f"{last.error.splitlines()[0][:200] if last.error else 'no reason'}")
    RESTORE_DRILL_FAILED.raise_or_resolve(host, "; ".join(failing) if failing else None)
