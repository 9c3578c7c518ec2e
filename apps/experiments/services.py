"""What the UI and the API ask of experiments: templates, create (and start), results,
custom scripts. Nothing here opens SSH: creating records the Experiment and starts its
Operation; every input is checked first (ExperimentError naming the field)."""

from __future__ import annotations

from django.db import transaction
from django.utils.text import slugify

from apps.common.errors import Conflict, DomainError
from apps.common.numbers import whole_in
from apps.experiments import steps
from apps.experiments.core import knobs, scripts
from apps.experiments.core.runs import alternating, room_needed
from apps.experiments.core.stats import METRICS
from apps.experiments.core.templates import SCRIPTS, TEMPLATES
from apps.experiments.models import Experiment, Run, Script, ScriptVersion
from apps.experiments.results import results
from apps.fleet import reserves
from apps.fleet.models import Host, PgCluster
from apps.ops import engine
from apps.ops.models import Operation
from apps.remote.commands import InvalidValue, pg_identifier, pool_of
from apps.tuning import services as tuning
from apps.tuning.core.winners import Winner

LIMITS = {"scale": (1, 1000), "clients": (1, 64), "threads": (1, 64), "duration": (2, 3600),
          "checkpoint_every": (0, 600)}
WORKLOAD = {"database": "pgbench", "scale": 10, "clients": 4, "threads": 2, "duration": 60,
            "protocol": "prepared", "mode": "tpcb", "reinit": True, "checkpoint_every": 10}
LAYERS = ("postgres", "zfs", "sysctl", "module")
MAX_RUNS = 40


class ExperimentError(DomainError):
    """An experiment or script refused; `fields` names the inputs at fault."""


def _refuse(**fields: str) -> ExperimentError:
    text = "; ".join(f"{name}: {problem}" for name, problem in fields.items())
    return ExperimentError(f"refused: {text}",
                           fields={name: [problem] for name, problem in fields.items()})


# ---- templates ---------------------------------------------------------------------------

def templates() -> list[dict]:
    return [{"slug": t.slug, "title": t.title, "layer": t.layer, "key": t.key,
             "values": list(t.values), "primary_metric": t.primary_metric,
             "target_role": t.target_role, "workload": {**WORKLOAD, **t.workload},
             "held": list(t.held), "script": t.script, "acknowledge": t.acknowledge,
             "citation": t.citation, "published": t.published, "note": t.note}
            for t in TEMPLATES.values()]


# ---- creating ------------------------------------------------------------------------------

@transaction.atomic
def create_experiment(host: Host, cluster: PgCluster | None, spec: dict, *, by=None,
                      trigger: str = Operation.Trigger.API) -> Experiment:
    """Check the request, record the experiment and start the Operation that runs it."""
    spec = dict(spec)
    template = _template(spec.pop("template", "") or "")
    host.hold_discovered_rows()
    cluster = _cluster(host, cluster)
    layer = spec.get("layer") or (template.layer if template else "")
    key = spec.get("key") or (template.key if template else "")
    values = spec.get("values") or (list(template.values) if template else [])
    role = spec.get("target_role", template.target_role if template else "data")
    workload = _workload({**(template.workload if template else {}),
                          **(spec.get("workload") or {})})
    repetitions = spec.get("repetitions", 2)
    if not whole_in(repetitions, 1, 10):
        raise _refuse(repetitions="a whole number from 1 to 10")
    if layer not in LAYERS:
        raise _refuse(layer=f"one of {', '.join(LAYERS)}")
    target = _dataset(cluster, role) if layer == "zfs" else ""
    values = _values(layer, key, values)
    if len(values) * repetitions > MAX_RUNS:
        raise _refuse(repetitions=f"at most {MAX_RUNS} runs in all (values x repetitions)")
    acknowledged = spec.get("acknowledged", False) is True
    if template and template.acknowledge and not acknowledged:
        raise _refuse(acknowledged=f"this experiment needs your acknowledgement: "
                                   f"{template.acknowledge}")
    held = _held(cluster, spec.get("held", list(template.held) if template else []))
    _module_supported(host, [layer] + [h["layer"] for h in held])
    version = _script_version(spec.get("script", template.script if template else ""))
    _room(host, cluster, workload)
    if Experiment.objects.filter(host=host, operation__status__in=Operation.ACTIVE).exists():
        raise Conflict("an experiment is already running on this host")
    metric = spec.get("primary_metric") or (template.primary_metric if template else "tps")
    if metric not in METRICS:
        raise _refuse(primary_metric=f"one of {', '.join(METRICS)}")
    exp = Experiment.objects.create(
        host=host, cluster=cluster, data_dir=cluster.data_dir,
        data_dataset=cluster.data_dataset.name if cluster.data_dataset else "",
        server_version_num=cluster.server_version_num,
        template=template.slug if template else "",
        title=_title(spec, template, key, values)[:200],
        citation=template.citation if template else "", layer=layer, key=key, target=target,
        values=values, repetitions=repetitions, workload=workload, script_version=version,
        held=held, primary_metric=metric, acknowledged=acknowledged,
        created_by=by if by and by.is_authenticated else None)
    state = {"experiment": exp.pk, "target": _target(cluster), "index": 0,
             "order": [list(item) for item in alternating(values, repetitions)]}
    exp.operation = engine.start(steps.KIND.name, host=host, state=state, trigger=trigger,
                                 user=by, subject=f"{host.name} experiment: {exp.title}"[:200])
    exp.save(update_fields=["operation"])
    return exp


def _title(spec: dict, template, key: str, values: list[str]) -> str:
    """The operator's; else the template's while its values are kept; else what is varied
    (a template's title names its values: "8K/16K/32K/128K" over a run of 8K and 16K
    misled)."""
    if spec.get("title"):
        return spec["title"]
    if template and values == list(template.values):
        return template.title
    return f"{key} {'/'.join(values)}"


def _template(slug: str):
    if not slug:
        return None
    if slug not in TEMPLATES:
        raise _refuse(template=f"one of {', '.join(TEMPLATES)}")
    return TEMPLATES[slug]


def _cluster(host: Host, cluster: PgCluster | None) -> PgCluster:
    """As benchmarks.services.cluster_for: the row as it is now, under the host's lock."""
    if cluster is not None:
        if cluster.host_id != host.pk:
            raise _refuse(cluster="that cluster is not on this host")
        current = host.clusters.filter(pk=cluster.pk).first()
        if current is None:
            raise _refuse(cluster="that cluster was retired from this host")
    else:
        clusters = list(host.clusters.all()[:2])
        if len(clusters) != 1:
            raise _refuse(cluster="name the cluster" if clusters else
                          "the host has no PostgreSQL cluster (run discovery)")
        current = clusters[0]
    if current.down_reason:
        raise _refuse(cluster=current.down_reason)
    return current


def _target(cluster: PgCluster) -> dict:
    try:
        return cluster.target().as_state()
    except InvalidValue as exc:
        raise _refuse(cluster=f"cannot reach it: {exc}") from None


def _dataset(cluster: PgCluster, role: str) -> str:
    dataset = {"data": cluster.data_dataset, "wal": cluster.wal_dataset}.get(role)
    if dataset is None:
        raise _refuse(target_role="data or wal, a dataset the cluster's files are on "
                                  "(none found: run discovery)")
    return dataset.name


def _values(layer: str, key: str, values) -> list[str]:
    if not isinstance(values, list) or not 2 <= len(values) <= 8 \
            or not all(isinstance(v, str) for v in values):
        raise _refuse(values="a list of 2 to 8 values (text)")
    if len(set(values)) != len(values):
        raise _refuse(values="each value once")
    try:
        return [knobs.validate(layer, key, value) for value in values]
    except InvalidValue as exc:
        raise _refuse(values=str(exc)) from None


def _held(cluster: PgCluster, held) -> list[dict]:
    if not isinstance(held, list) or len(held) > 5:
        raise _refuse(held="a list of at most 5 settings: layer, key, value")
    out = []
    for item in held:
        if not isinstance(item, dict) or item.get("layer") not in LAYERS \
                or not all(isinstance(item.get(k), str) for k in ("key", "value")):
            raise _refuse(held="each one {layer, key, value} (text)")
        try:
            value = knobs.validate(item["layer"], item["key"], item["value"])
        except InvalidValue as exc:
            raise _refuse(held=str(exc)) from None
        target = _dataset(cluster, item.get("role", "data")) if item["layer"] == "zfs" else ""
        out.append({"layer": item["layer"], "key": item["key"], "value": value,
                    "target": target})
    return out


def _room(host: Host, cluster: PgCluster, work: dict) -> None:
    """Refused now when a run would take the pool below its reserve as the last discovery
    read it (apps.fleet.core.room, the check clones and snapshots make); the operation
    checks again on the host before it changes anything."""
    if cluster.data_dataset is None:
        return
    need = room_needed(work["scale"], work["duration"], 1, work["reinit"])
    shortage = reserves.refusal(host, pool_of(cluster.data_dataset.name), need,
                                f"a run at scale {work['scale']} for {work['duration']} s")
    if shortage:
        raise _refuse(workload=shortage.message)


def _module_supported(host: Host, layers: list[str]) -> None:
    zfs = (host.facts or {}).get("zfs") or {}
    if "module" in layers and zfs.get("implementation") == "zfs-fuse":
        raise _refuse(layer="this host runs zfs-fuse, which has no ZFS module parameters "
                            "(/sys/module/zfs/parameters)")


def _workload(given: dict) -> dict:
    unknown = set(given) - set(WORKLOAD)
    if unknown:
        raise _refuse(workload=f"unknown: {', '.join(sorted(unknown))}")
    work = {**WORKLOAD, **given}
    for name, (low, high) in LIMITS.items():
        value = work[name]
        if not whole_in(value, low, high):
            raise _refuse(**{f"workload.{name}": f"a whole number from {low} to {high}"})
    if work["threads"] > work["clients"]:
        raise _refuse(**{"workload.threads": "at most the number of clients"})
    if work["protocol"] not in ("simple", "extended", "prepared"):
        raise _refuse(**{"workload.protocol": "simple, extended or prepared"})
    if work["mode"] not in ("tpcb", "select-only"):
        raise _refuse(**{"workload.mode": "tpcb or select-only"})
    if not isinstance(work["reinit"], bool):
        raise _refuse(**{"workload.reinit": "true or false"})
    try:
        pg_identifier(work["database"])
    except InvalidValue as exc:
        raise _refuse(**{"workload.database": exc.reason}) from None
    return work


def cancel_experiment(exp: Experiment, *, by) -> None:
    """Ask the running experiment to stop: its Operation stops the run under way, puts
    the host back and ends as cancelled (steps.py)."""
    if not exp.is_active:
        raise Conflict("this experiment has ended: there is nothing to cancel")
    engine.cancel(exp.operation, f"cancelled by {by.get_username()}")


# ---- results ----------------------------------------------------------------------------------
# results(exp), which the pages and the API read here, lives in apps/experiments/results.py:
# the operation's last step names the verdict too, and steps do not import services.

def winners(host: Host, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], Winner]:
    """For each (dataset, ZFS property): what the newest finished experiment varying it on
    that dataset of this host named the winner, on its own primary metric. A newest one
    that named none (within the spread) answers no value: an older verdict is not
    revived. Pairs no experiment ran on are left out. Tuning asks (apps/tuning/evidence.py)."""
    found = {}
    for dataset, key in pairs:
        exp = Experiment.objects.filter(
            host=host, layer=Experiment.Layer.ZFS, key=key, target=dataset,
            operation__status=Operation.Status.SUCCEEDED).order_by("-created_at", "-id").first()
        if exp is not None:
            found[(dataset, key)] = _winner(exp, dataset)
    return found


def _winner(exp: Experiment, dataset: str) -> Winner:
    verdict = results(exp)["verdict"]
    if verdict["winner"] is None:
        return Winner(None, f"the newest {exp.key} experiment on {dataset} (#{exp.pk}) named"
                            f" no winner ({verdict['text']}); run one again with more"
                            " repetitions or longer runs")
    return Winner(verdict["winner"], f"won {exp.key} experiment #{exp.pk} on {dataset}"
                                     f" ({verdict['text']})")


def after_operation_saved(sender, instance: Operation, **kwargs) -> None:
    """A profile may take an experiment's winner ("recordsize": "experiment"): once one
    succeeded, the host's drift is judged against it, not at the next discovery. After the
    commit, since the operation only counts as succeeded then."""
    if instance.kind == steps.KIND.name and instance.status == Operation.Status.SUCCEEDED \
            and instance.host_id is not None:
        transaction.on_commit(lambda: tuning.refresh_drift(instance.host))


# ---- scripts ----------------------------------------------------------------------------------

def ensure_builtin_scripts() -> None:
    for builtin in SCRIPTS.values():
        script, created = Script.objects.get_or_create(
            slug=builtin.slug, defaults={"name": builtin.name, "builtin": True,
                                         "description": builtin.description})
        if created or not script.versions.exists():
            ScriptVersion.objects.create(script=script, number=1, text=builtin.text,
                                         setup=builtin.setup, note="shipped with PoZoL")


def _script_version(ref) -> ScriptVersion | None:
    if not ref:
        return None
    ensure_builtin_scripts()
    script = (Script.objects.filter(pk=ref).first() if isinstance(ref, int)
              else Script.objects.filter(slug=str(ref)).first())
    if script is None or script.current is None:
        raise _refuse(script="no such script")
    return script.current


def _check_script(text: str, setup: str) -> None:
    errors = {}
    if found := scripts.problems(text):
        errors["text"] = "; ".join(found)
    if found := scripts.problems(setup, setup=True):
        errors["setup"] = "; ".join(found)
    if errors:
        raise _refuse(**errors)


@transaction.atomic
def create_script(name: str, text: str, setup: str = "", description: str = "",
                  by=None) -> Script:
    name = (name or "").strip()
    if not name or len(name) > 100 or not name.isprintable():
        raise _refuse(name="one line of 1 to 100 printable characters")
    slug = slugify(name)[:100]
    if not slug or Script.objects.filter(slug=slug).exists() \
            or Script.objects.filter(name=name).exists():
        raise Conflict(f"a script named {name!r} exists", fields={"name": ["taken"]})
    _check_script(text, setup)
    script = Script.objects.create(name=name, slug=slug, description=description[:2000])
    ScriptVersion.objects.create(script=script, number=1, text=text, setup=setup,
                                 created_by=by if by and by.is_authenticated else None)
    return script


@transaction.atomic
def add_script_version(script: Script, text: str, setup: str = "", note: str = "",
                       by=None) -> ScriptVersion:
    """An edit adds a version: experiments keep naming the text they ran."""
    if script.builtin:
        raise _refuse(script="a built-in script is not edited: create your own")
    _check_script(text, setup)
    number = (script.current.number if script.current else 0) + 1
    return ScriptVersion.objects.create(script=script, number=number, text=text, setup=setup,
                                        note=note[:300],
                                        created_by=by if by and by.is_authenticated else None)


def run_rows(exp: Experiment) -> list[Run]:
    return list(exp.runs.all())
