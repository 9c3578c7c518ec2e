"""An experiment's results, read from its finished runs: below both services (the pages
and the API show them) and steps (the operation ends with the verdict), so neither
imports the other for them. The arithmetic is core/report.py's."""

from __future__ import annotations

from apps.experiments.core.report import report
from apps.experiments.models import Experiment


def results(exp: Experiment) -> dict:
    """Per value mean and spread of every metric, the verdict on the primary metric, and
    the charts (chart-convention JSON)."""
    rows = [run.as_row() for run in exp.runs.all() if run.ended_at is not None]
    return report(exp.values, rows, exp.primary_metric)
