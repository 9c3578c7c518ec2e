"""A finished experiment in the database, without any SSH."""

from datetime import timedelta

from django.utils import timezone

from apps.experiments.models import Experiment, Run
from apps.ops.models import Operation


def finished_experiment(host) -> Experiment:
    """full_page_writes on/off, two repetitions alternating, the host restored."""
    operation = Operation.objects.create(kind="experiments.run", host=host, subject="x",
                                         step="finish", status="succeeded", mutating=True)
    exp = Experiment.objects.create(
        host=host, data_dir="/tank/pg/data", title="full_page_writes on/off",
        layer="postgres", key="full_page_writes", values=["on", "off"],
        workload={"scale": 10, "clients": 4, "duration": 60, "checkpoint_every": 10,
                  "reinit": True, "mode": "tpcb", "protocol": "prepared"},
        citation="PG Phriday: 1.2GB against 160MB of WAL a minute",
        operation=operation, restored=True, primary_metric="wal_per_tx",
        original={"varied": {"value": "on"}, "held": []})
    now = timezone.now()
    for i, (value, tps, wal) in enumerate([("on", 1000, 2000), ("off", 1090, 430),
                                           ("off", 1100, 440), ("on", 990, 2050)]):
        Run.objects.create(experiment=exp, position=i, value=value, repetition=i // 2, tps=tps,
                           wal_per_tx=wal, checkpoints=3, compressratio=1.0,
                           drain_seconds=0.02, ended_at=now + timedelta(seconds=i))
    return exp
