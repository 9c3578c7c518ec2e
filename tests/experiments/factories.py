"""A finished experiment in the database, without any SSH."""

from datetime import timedelta

from django.utils import timezone

from apps.experiments.core.runs import alternating
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


def finished_recordsize_experiment(host, tps: dict[str, tuple[float, float]], *,
                                   target: str = "tank/pg/data",
                                   status: str = "succeeded") -> Experiment:
    """The rows the built-in recordsize template writes on a real host (see
    tests/experiments/test_on_a_host.py and `make bench`): the data dataset varied, the
    held compression, two repetitions in alternating order, one TPS per repetition."""
    operation = Operation.objects.create(kind="experiments.run", host=host, subject="x",
                                         step="finish", status=status, mutating=True)
    values = list(tps)
    exp = Experiment.objects.create(
        host=host, data_dir="/tank/pg/data", data_dataset="tank/pg/data",
        server_version_num=150000, template="recordsize",
        title="recordsize 8K/16K/32K/128K of the data dataset", layer="zfs",
        key="recordsize", target=target, values=values, repetitions=2,
        workload={"database": "pgbench", "scale": 10, "clients": 4, "threads": 2,
                  "duration": 60, "protocol": "prepared", "mode": "tpcb", "reinit": True,
                  "checkpoint_every": 10},
        held=[{"layer": "zfs", "key": "compression", "value": "on", "target": target}],
        primary_metric="tps", operation=operation, restored=status == "succeeded",
        original={"varied": {"value": "8192", "source": "default"},
                  "held": [{"value": "on", "source": "local"}]})
    now = timezone.now()
    for position, (value, rep) in enumerate(alternating(values, 2)):
        Run.objects.create(experiment=exp, position=position, value=value, repetition=rep,
                           tps=tps[value][rep], latency_ms=4000 / tps[value][rep],
                           wal_per_tx=2000, checkpoints=6, compressratio=1.5,
                           drain_seconds=0.02, started_at=now,
                           ended_at=now + timedelta(seconds=position))
    return exp
