"""Events: automation hears back when work ends, instead of polling.

An automation registers a `Subscription` (POST /api/event-subscriptions/): a URL
and the event kinds it wants. Kinds are registered in apps/common/events.py by
the app where each fact happens, at the one place it happens, so no emitting
app imports this one (as apps/common/alert_kinds.py does for alerts):

- `operation.finished` (apps/ops/engine.py's `_finish`, which every end of every
  operation passes through: kind, subject, outcome, error code);
- `clone.ready`, `clone.failed`, `clone.destroyed` (apps/clones/steps.py);
- `link.in_sync`, `link.failed` (apps/replication/steps.py);
- `alert.opened`, `alert.resolved` (apps/alerts/models.py's store);
- `subscription.ping`, the test event of POST .../ping/, sent to that one only.
Rollouts will add theirs the same way: the registry is open, the column is text
checked against it (no migration for a new kind).

record.py is the sink the registry calls: it writes the `Event` (a UUID, the id
receivers dedupe by) and one `Delivery` per enabled subscription naming its
kind, inside a savepoint of the fact's own transaction, so an event exists
exactly when its fact was committed and a failure here never undoes the fact;
the deliveries go to the workers after commit. Deliveries are unique per
(subscription, event): a retry, a re-sent lost message, a redeliver, a second
worker all send the same event, never a second one.

Sending (sending.py) follows the alert webhooks: the URL must pass
POZOL_ALERT_WEBHOOK_ALLOW when saved and again on the addresses resolved at send
time, the request goes to the checked address with no redirects
(apps.alerts.delivery.post_bytes), a failure that may pass is retried by Celery's
autoretry at a doubling delay (POZOL_ALERT_RETRY_SECONDS,
POZOL_ALERT_DELIVERY_ATTEMPTS), every attempt is logged on the row
(GET /api/event-deliveries/), and the beat's `events.tick` re-sends a delivery
whose message was lost and forgets events older than operations are kept
(POZOL_OPERATION_RETENTION_DAYS), unless one is still being delivered. Unlike alert
channels, every body is signed (core/signing.py): X-PoZoL-Timestamp and
X-PoZoL-Signature = `v1=` HMAC-SHA256 of "<timestamp>.<body>" under the
subscription's secret, which the API shows once (on creation and on rotate-secret).

Rollouts announce `rollout.wave_done` and `rollout.stopped` (apps/rollouts/steps.py).

Not done: a page for subscriptions (the API is the front door for automation).
"""
