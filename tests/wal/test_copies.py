"""The window of an archive's copy on a replication target ends at the newest
transaction the carried snapshot holds, as the source's does (apps/wal/copies.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apps.snapshots.models import Snapshot
from apps.wal.copies import Copy, choose
from apps.wal.services import WalRefused

pytestmark = pytest.mark.django_db
T = 1_800_000_000.0


def copy(host, **listing) -> Copy:
    Snapshot.objects.create(host=host, dataset="tank/pg/data", name="base",
                            seen_at=datetime.fromtimestamp(T, UTC),
                            created_at=datetime.fromtimestamp(T, UTC))
    stored = {"timeline": 1, "segments": [[2, T + 30], [3, T + 90]], **listing}
    return Copy(host.pk, "tank/pg/data", None, "tank/pozol_wal/pg:data", "pozol-carry-l-1",
                stored, None)


def test_the_copys_window_ends_at_the_last_transaction_it_carried(replayed_host):
    carried = copy(replayed_host, last_transaction=[3, T + 80.5])
    [span] = carried.window()
    assert (span.since, span.until) == (T + 1, T + 80.5)
    with pytest.raises(WalRefused, match="outside the recoverable window"):
        choose(carried, datetime.fromtimestamp(T + 85, UTC),
               now=datetime.fromtimestamp(T + 1000, UTC))
    assert choose(carried, datetime.fromtimestamp(T + 80, UTC),
                  now=datetime.fromtimestamp(T + 1000, UTC)).reach.base.label == "base"


def test_a_copy_carried_before_the_last_transaction_was_read_keeps_its_file_times(
        replayed_host):
    [span] = copy(replayed_host).window()
    assert span.until == T + 90
