"""The target's own retention (zrepl's keep_receiver), with the same guarantees as a
policy's pruning on the source.

Received snapshots keep the `pozol:owner`/`pozol:policy` properties they were
taken with (sent with -p), so each policy's snapshots on the target are pruned
by apps.snapshots.core.retention under that policy's identity and the link's
own counts (Policy.receiving). A snapshot received without properties, one
made on the target by hand, a held one, one with clones and the newest
snapshot common to source and target are never destroyed. All counts 0: keep
everything received.

That newest common snapshot is spared by the source's policies too:
protected_snapshots is registered with apps.snapshots.protection.
"""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from apps.fleet.models import Host
from apps.ops.engine import StepContext
from apps.ops.models import LogLine
from apps.replication.link_rows import core_link
from apps.replication.models import ReplicationLink
from apps.snapshots import inventory
from apps.snapshots.core import commands as snapshot_commands
from apps.snapshots.core import guards
from apps.snapshots.core.policy import Policy, receiving
from apps.snapshots.core.retention import plan_prune
from apps.snapshots.pruning import info_of_row


def prune_target(ctx: StepContext, link: ReplicationLink, run) -> dict:
    if not any(link.keep_counts().values()):
        return {"destroyed": [], "skipped": []}
    targets = set(core_link(link).targets().values())
    rows = [row for row in inventory.list_host(run) if row.dataset in targets]
    protected = protected_snapshots(link.target_host, sorted(targets))
    policies = sorted({row.properties.get("pozol:policy") for row in rows
                       if row.properties.get("pozol:policy")})
    destroyed, skipped = [], []
    now = timezone.now()
    for name in policies:
        source = Policy(name=name)
        keep = receiving(source, **link.keep_counts())
        chosen = plan_prune(keep, [info_of_row(r) for r in rows], protected, now)
        by_name = {row.full_name: row for row in rows}
        for snapshot in chosen.destroy:
            row = by_name[snapshot.full_name]
            refusal = guards.destroy_refusal(full_name=row.full_name, userrefs=row.userrefs,
                                             clones=row.clones, origin="pozol", force=False,
                                             protected=protected)
            result = None if refusal else run(snapshot_commands.destroy(row.full_name),
                                              check=False)
            if refusal or not result.ok:
                why = refusal.message if refusal else (result.stderr or "").strip()[-300:]
                ctx.log(f"skipped {row.full_name} on {link.target_host.name}: {why}",
                        LogLine.Level.WARNING)
                skipped.append({"snapshot": row.full_name, "reason": why})
                continue
            ctx.log(f"destroyed {row.full_name} on {link.target_host.name} (link {link.name} "
                    "keeps " + ", ".join(f"{v} {k}" for k, v in link.keep_counts().items() if v)
                    + ")")
            destroyed.append(row.full_name)
    if destroyed:
        inventory.refresh(link.target_host, run)
    return {"destroyed": destroyed, "skipped": skipped}


def protected_snapshots(host: Host, datasets: list[str]) -> dict[str, str]:
    """full name -> reason: the newest snapshot common to each link's source and target,
    on either side, for the pruners (source policies and the target's keep rules)."""
    protected: dict[str, str] = {}
    links = ReplicationLink.objects.filter(Q(source_host=host) | Q(target_host=host)).exclude(
        common_snapshot="")
    for link in links:
        core = core_link(link)
        for source, target in core.targets().items():
            dataset = source if link.source_host_id == host.pk else target
            if dataset in datasets:
                protected[f"{dataset}@{link.common_snapshot}"] = (
                    f"last common snapshot of link {link.name}")
        if core.archive and link.archive_snapshot:
            dataset = core.archive if link.source_host_id == host.pk else core.archive_target
            if dataset in datasets:
                protected[f"{dataset}@{link.archive_snapshot}"] = (
                    f"the WAL archive snapshot link {link.name} carried last")
    return protected
