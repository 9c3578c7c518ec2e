"""The wal tick starts a check of each archive that is on and due, once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.ops.models import Operation
from apps.wal import services
from apps.wal.models import WalArchive
from tests.clones import factories

pytestmark = [pytest.mark.django_db]


def test_due_archives_are_checked_once(settings):
    row = factories.host()
    row.host_key_state = row.KeyState.PINNED
    row.save()
    cluster = factories.cluster(row)
    archive = WalArchive.objects.create(cluster=cluster, dataset="tank/pozol_wal/pg:data",
                                        state=WalArchive.State.ON)
    assert len(services.tick()) == 1
    assert services.tick() == []  # its check is still active
    Operation.objects.update(status=Operation.Status.SUCCEEDED)
    WalArchive.objects.filter(pk=archive.pk).update(checked_at=timezone.now())
    assert services.tick() == []  # checked a moment ago
    later = timezone.now() + timedelta(seconds=settings.POZOL["WAL_CHECK_INTERVAL"])
    assert len(services.tick(later)) == 1
    WalArchive.objects.update(state=WalArchive.State.OFF)
    assert services.tick(later + timedelta(hours=1)) == []


def test_an_unpinned_host_or_a_stopped_cluster_is_not_checked():
    row = factories.host()
    row.host_key_state = row.KeyState.CHANGED
    row.save()
    WalArchive.objects.create(cluster=factories.cluster(row), dataset="t/a",
                              state=WalArchive.State.ON)
    assert services.tick() == []
