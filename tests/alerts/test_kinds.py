"""The one registry of alert kinds (apps.common.alert_kinds): each app contributes
its own, nobody can take another's name, and an alert of a kind nobody registered
is refused rather than stored."""

import pytest
from django.core.exceptions import ValidationError

from apps.alerts import rules
from apps.alerts.models import Alert, validate_kind
from apps.common import alert_kinds
from apps.common.alert_kinds import AlertKind
from apps.fleet.alert_kinds import UNREACHABLE
from tests.benchmarks import factories


def test_every_app_that_raises_alerts_contributes_its_kinds():
    owners = {kind.name: kind for kind in alert_kinds.kinds()}
    assert owners["unreachable"] is UNREACHABLE  # fleet's
    assert {"snapshots_stale", "replication_lag", "restore_drill_failed",
            "arc_hit_rate"} <= owners.keys()
    assert [row["kind"] for row in rules.seed_rows()] == list(owners)


@pytest.mark.parametrize("kind", [AlertKind("unreachable", "Someone else's"),
                                  AlertKind("Not-A-Name", "Bad"), AlertKind("x" * 33, "Long")])
def test_a_name_taken_or_not_fit_for_the_column_is_refused(kind):
    with pytest.raises(ValueError):
        alert_kinds.register(kind)
    assert alert_kinds.get("unreachable") is UNREACHABLE
    assert alert_kinds.get(kind.name) in (None, UNREACHABLE)


@pytest.mark.django_db
def test_an_alert_of_a_kind_nobody_registered_is_refused():
    host = factories.host("db1")
    with pytest.raises(LookupError):
        Alert.raise_once(host, "no_such_kind", "?")
    with pytest.raises(ValidationError):
        validate_kind("no_such_kind")
    assert not Alert.objects.exists()
    UNREACHABLE.raise_once(host, "db1 could not be reached")
    UNREACHABLE.resolve(host)
    assert Alert.objects.get().resolved_at is not None
