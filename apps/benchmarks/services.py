"""What the UI and the API ask of benchmarks: run one, compare two.

Neither opens SSH: running records the Benchmark and starts its Operation.
Input is refused here (a BenchmarkError naming the field) before anything is
recorded, so hostile or impossible parameters never reach a host.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.benchmarks import steps
from apps.benchmarks.core import commands
from apps.benchmarks.models import Benchmark, Validation
from apps.common.errors import DomainError
from apps.common.numbers import whole_in
from apps.fleet.models import Host, PgCluster
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote.commands import InvalidValue, pg_identifier

LIMITS = {"scale": (1, 10000), "clients": (1, 1000), "duration": (1, 3600)}
DEFAULTS = {"database": "pgbench", "scale": 1, "init": False, "clients": 1, "threads": 1,
            "duration": 60, "mode": "tpcb", "protocol": "simple"}


class BenchmarkError(DomainError):
    """A benchmark or validation refused; `fields` names the inputs at fault."""


def _refuse(fields: dict) -> BenchmarkError:
    problems = "; ".join(f"{name}: {_text(value)}" for name, value in fields.items())
    return BenchmarkError(f"refused: {problems}", fields=fields)


def _text(value) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{name}: {_text(item)}" for name, item in value.items())
    return " ".join(value) if isinstance(value, list) else str(value)


def clean_parameters(params: dict) -> dict:
    """The parameters with defaults filled in; BenchmarkError naming params.<name> if wrong."""
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise _refuse({"params": {name: ["unknown parameter"] for name in sorted(unknown)}})
    values = {**DEFAULTS, **params}
    errors: dict[str, str] = {}
    for name, (low, high) in LIMITS.items():
        if not whole_in(values[name], low, high):
            errors[name] = f"a whole number from {low} to {high}"
    clients = values["clients"] if "clients" not in errors else LIMITS["clients"][1]
    if not whole_in(values["threads"], 1, clients):
        errors["threads"] = "a whole number from 1 to the number of clients"
    if not isinstance(values["init"], bool):
        errors["init"] = "true (initialise the pgbench tables) or false (reuse them)"
    if values["mode"] not in commands.MODES:
        errors["mode"] = f"one of {', '.join(commands.MODES)}"
    if values["protocol"] not in commands.PROTOCOLS:
        errors["protocol"] = f"one of {', '.join(commands.PROTOCOLS)}"
    try:
        pg_identifier(values["database"])
    except InvalidValue as exc:
        errors["database"] = exc.reason
    if errors:
        raise _refuse({"params": {name: [text] for name, text in errors.items()}})
    return values


def cluster_for(host: Host, cluster: PgCluster | None) -> PgCluster:
    """The cluster asked for, or the host's only one, as it is now (the caller holds the
    host's discovered rows), and running."""
    if cluster is not None:
        if cluster.host_id != host.pk:
            raise _refuse({"cluster": ["that cluster is not on this host"]})
        current = host.clusters.filter(pk=cluster.pk).first()
        if current is None:
            raise _refuse({"cluster": ["that cluster was retired from this host"]})
    else:
        clusters = list(host.clusters.all()[:2])
        if not clusters:
            raise _refuse({"cluster": ["the host has no PostgreSQL cluster (run discovery)"]})
        if len(clusters) > 1:
            raise _refuse({"cluster": ["the host has several PostgreSQL clusters: name one"]})
        current = clusters[0]
    if current.down_reason:
        raise _refuse({"cluster": [current.down_reason]})
    return current


def _target(cluster: PgCluster, database: str) -> dict:
    values = {"owner": cluster.owner, "bin_dir": cluster.bin_dir,
              "socket_dir": cluster.socket_dir, "port": cluster.port}
    try:
        cluster.target(database)
    except InvalidValue as exc:
        raise _refuse({"cluster": [f"cannot run pgbench there: {exc}"]}) from None
    return values


def profile_in_force(host: Host) -> str:
    """The tuning profile version last applied to the host, as the run's label."""
    assignment = getattr(host, "assignment", None)  # the tuning app's, when assigned
    version = assignment.applied_version if assignment else None
    return str(version) if version else "none applied"


@transaction.atomic
def run_benchmark(host: Host, cluster: PgCluster | None, params: dict, by=None,
                  trigger: str = Operation.Trigger.API,
                  profile_version_label: str = "") -> Benchmark:
    """Record a benchmark and start the operation that runs it on the host."""
    values = clean_parameters(params)
    host.hold_discovered_rows()
    cluster = cluster_for(host, cluster)
    target = _target(cluster, values["database"])
    database = values.pop("database")
    bench = Benchmark.objects.create(
        host=host, cluster=cluster, data_dir=cluster.data_dir, port=cluster.port,
        server_version_num=cluster.server_version_num, database=database, parameters=values,
        profile_version_label=profile_version_label or profile_in_force(host))
    bench.operation = engine.start(
        steps.KIND.name, host=host, subject=f"{host.name}:{cluster.port} pgbench",
        state={"benchmark": bench.pk, "target": target}, trigger=trigger, user=by)
    bench.save(update_fields=["operation"])
    return bench


def run_again(bench: Benchmark, *, by=None,
              trigger: str = Operation.Trigger.API) -> Benchmark:
    """A new run with `bench`'s parameters on its cluster (found again by data directory
    after a rediscovery), to measure the same workload once more."""
    cluster = bench.cluster or bench.host.clusters.filter(data_dir=bench.data_dir).first()
    if cluster is None:
        raise _refuse({"cluster": [f"{bench.data_dir} is no longer a cluster on "
                                   f"{bench.host.name} (run discovery)"]})
    params = {**bench.parameters, "database": bench.database}
    return run_benchmark(bench.host, cluster, params, by=by, trigger=trigger)


def validate(before: Benchmark, after: Benchmark, label: str = "") -> Validation:
    """Compare two finished runs on one host (the same workload before and after a change)."""
    errors = {}
    for name, bench in (("before", before), ("after", after)):
        if bench.status != Operation.Status.SUCCEEDED or not bench.tps:
            errors[name] = f"benchmark #{bench.pk} has not succeeded ({bench.status})"
    if not label.isprintable():  # PostgreSQL text cannot hold NUL; a label is one line
        errors["label"] = "one line of printable text"
    if before.pk == after.pk:
        errors["after"] = "compare two different benchmarks"
    elif before.host_id != after.host_id:
        errors["after"] = "both benchmarks must have run on the same host"
    if errors:
        raise _refuse({name: [text] for name, text in errors.items()})
    return Validation.objects.create(host=before.host, before=before, after=after,
                                     label=label[:200])


# -- the host's telemetry around a run ---------------------------------------------------

BEFORE_RUN = timedelta(minutes=2)
# After pgbench stops, dirty data still drains to disk (the EDB study's measure): the
# run's page shows the host's telemetry this long after the run's end.
DRAIN = timedelta(minutes=10)


@dataclass(frozen=True)
class TelemetryWindow:
    start: int  # unix seconds
    end: int
    ongoing: bool  # the window reaches into the future: the charts keep reading


def telemetry_window(bench: Benchmark, now: datetime | None = None) -> TelemetryWindow | None:
    """From shortly before the run started to DRAIN after it ended (or would end)."""
    operation = bench.operation
    started = (operation.started_at if operation else None) or None
    if started is None:
        return None
    ended = operation.finished_at or started + timedelta(
        seconds=int(bench.parameters.get("duration") or 0))
    end = ended + DRAIN
    now = now or timezone.now()
    return TelemetryWindow(int((started - BEFORE_RUN).timestamp()), int(end.timestamp()),
                           ongoing=end > now)
