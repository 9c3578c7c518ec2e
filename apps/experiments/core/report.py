"""An experiment's results as the pages and the API show them, pure: per value the
mean and spread of every metric, the verdicts, and the charts (chart-convention
JSON), from the finished runs as rows (Run.as_row)."""

from __future__ import annotations

from apps.experiments.core.stats import METRICS, summarise, verdict

# The metrics a verdict is kept for, and those charted (when a run measured them).
VERDICT_METRICS = ("tps", "wal_per_tx", "compressratio", "drain_seconds")
CHARTED = ("tps", "wal_per_tx", "compressratio")


def report(values: list[str], rows: list[dict], primary_metric: str) -> dict:
    """Per value mean and spread of every metric, the verdict on the primary metric,
    and the charts."""
    summary = summarise(values, rows)
    per_value = [{"value": value, **{m: s.to_dict() for m, s in summary[value].items()}}
                 for value in values]
    verdicts = {m: verdict(summary, m).to_dict() for m in VERDICT_METRICS}
    charts = [chart(f"{label} per run", values, rows, metric)
              for metric, (label, _u, _h) in METRICS.items()
              if metric in CHARTED and any(r.get(metric) is not None for r in rows)]
    return {"values": per_value, "verdict": verdicts[primary_metric]
            if primary_metric in verdicts else verdict(summary, primary_metric).to_dict(),
            "verdicts": verdicts, "charts": charts}


def chart(title: str, values: list[str], runs: list[dict], metric: str) -> dict:
    """The chart convention's JSON (docs: chart-convention): x is each finished run's end
    (unix seconds), one series per value holding its runs and gaps (null) elsewhere, so
    the alternating order shows as well as the figures."""
    _label, unit, _ = METRICS[metric]
    done = sorted((r for r in runs if r.get("ended") is not None), key=lambda r: r["ended"])
    return {"title": title, "kind": "bars", "x": [r["ended"] for r in done],
            "series": [{"label": value, "unit": unit,
                        "values": [r.get(metric) if r["value"] == value else None
                                   for r in done]} for value in values]}
