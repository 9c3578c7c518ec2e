"""Alerts: the record of an alert, the kinds, rules, channels, deliveries, silences, scrubs.

Alerts: apps/alerts' `Alert` is the one record of an alert that fired. Each
kind is registered in apps/common/alert_kinds.py by the app that raises it,
from its own alert_kinds.py, and whoever sees a condition writes it through the
kind (`POOL_CAPACITY.raise_or_resolve(host, message)`: discovery's pool
capacity and cluster_down, the SSH layer's unreachable and changed host key,
the snapshot and replication ticks, restore drills), which lands in the store
apps/alerts registers at ready (its Alert model), so none of them imports
apps/alerts; apps/alerts' evaluator (apps/alerts/evaluate.py, in the beat task
`alerts.tick`) writes the kinds nobody else watches from what is already
stored: the ARC hit rate from the last two raw samples, pool health and errors
and the last scrub from the last sample (discovery's facts before there is
one), tuning's drift, and the latest finished operation of each kind. The
registered kind is its spec (unit, range, defaults);
apps/alerts/core/conditions.py holds the pure conditions; a `Rule` row per kind
(seeded, editable; a missing row acts with its spec's defaults) says whether
and when it is delivered. The same tick's dispatcher (dispatch.py) announces an
alert once it has been open for the rule's minutes and its resolution once that
has held for the clear minutes, taking a mark on the Alert (`notified_at`,
`resolution_notified_at`) by a conditional update so two ticks announce once;
`raise_once` reopens an announced alert whose resolution is not yet announced,
which is the hysteresis in time (numeric rules also have a margin). An
announcement makes one `Delivery` per enabled channel unless a `Silence`
matches; `alerts.deliver` makes one attempt under a row lock (select_for_update
skip_locked, due only), records it in the row's log, and on a failure that may
pass raises, so Celery's autoretry (retry_backoff, max_retries:
apps/alerts/delivery.py's retry_options) sends the next attempt at a doubling
delay; the tick re-sends a delivery whose message was lost. Webhooks go through
apps/alerts/core/webhooks.py's allowlist when saved and again at send time on
the resolved addresses, and the request is made to the checked address (no
second lookup, no redirects). Discovery's pool_capacity threshold is the
rule's, through `apps.fleet.capacity.set_threshold_source`, so fleet imports
nothing of alerts. Scrubs: a `ScrubSchedule` per pool; `alerts.scrub_tick`
(beat) starts due ones as `pools.scrub` operations (not mutating), which run
`zpool scrub` and follow `zpool status` to the result.
"""
