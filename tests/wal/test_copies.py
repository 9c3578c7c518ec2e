"""The window of an archive's copy on a replication target ends at the newest
transaction the carried snapshot holds, as the source's does (apps/wal/copies.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apps.snapshots.models import Snapshot
from apps.wal.copies import Copy, choose
from apps.wal.models import RestorePoint
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


SIZE = 16 * 2**20


def marked(host, **listing) -> Copy:
    carried = copy(host, **listing)
    return Copy(**{**carried.__dict__, "marks": {"base": "0/2000100"}, "segment_size": SIZE})


def test_an_lsn_on_the_copy_picks_the_received_snapshot_by_its_sources_mark(replayed_host):
    carried = marked(replayed_host)
    assert choose(carried, lsn="0/3000010").reach.base.label == "base"
    with pytest.raises(WalRefused, match="beyond the end of the archive.*the target's "
                                         "recoverable window is any moment from") as beyond:
        choose(carried, lsn="0/5000000")
    assert beyond.value.code == "beyond_end" and "lsn" in beyond.value.fields
    with pytest.raises(WalRefused, match="known WAL position") as unmarked:
        choose(Copy(**{**carried.__dict__, "marks": {}}), lsn="0/3000010")
    assert unmarked.value.fields == {"lsn": [unmarked.value.message.removeprefix("lsn: ")]}
    with pytest.raises(WalRefused, match="lsn"):
        choose(carried, lsn="3000010")


def test_a_restore_point_is_served_once_the_copy_holds_its_segment(replayed_host):
    carried = marked(replayed_host)
    point = RestorePoint(name="before", lsn="0/3000100",
                         created_at=datetime.fromtimestamp(T + 50, UTC))
    assert choose(carried, point=point,
                  now=datetime.fromtimestamp(T + 1000, UTC)).reach.base.label == "base"
    later = RestorePoint(name="later", lsn="0/4000100",
                         created_at=datetime.fromtimestamp(T + 100, UTC))
    with pytest.raises(WalRefused, match="has not carried yet .*run the link again") as late:
        choose(carried, point=later, now=datetime.fromtimestamp(T + 1000, UTC))
    assert (late.value.status, late.value.code) == (409, "not_carried")
    with pytest.raises(WalRefused, match="one of"):
        choose(carried, datetime.fromtimestamp(T + 50, UTC), point=point)
