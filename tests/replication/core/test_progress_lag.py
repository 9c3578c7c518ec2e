"""Expected size, byte counters and lag."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.replication.core.lag import lag, newest_received
from apps.replication.core.link import ReplicationError
from apps.replication.core.planner import Send
from apps.replication.core.progress import (
    Expected,
    Progress,
    estimate_from_listing,
    parse_counter,
    parse_send_estimate,
    receive_sizes,
)
from tests.replication.core.helpers import T0, chain, snap

# Shape from OZ@zfs-2.3.0 libzfs_sendrecv.c send_print_verbose (dry run, parsable).
DRY_RUN_I = ("incremental\tpozol_a\ttank/db@pozol_b\t1048576\n"
             "incremental\tpozol_b\ttank/db@pozol_c\t2097152\n"
             "size\t3145728\n")
DRY_RUN_FULL = "full\ttank/db@pozol_a\t123456789\nsize\t123456789\n"


def test_send_estimate():
    assert parse_send_estimate(DRY_RUN_I) == 3145728
    assert parse_send_estimate(DRY_RUN_FULL) == 123456789
    assert parse_send_estimate("") is None
    assert parse_send_estimate("full send of tank/db@a estimated size is 1.2G\n") is None


def test_estimate_from_listing():
    snaps = (snap("a", 1, 0, used=10, referenced=1000), snap("b", 2, 1, used=20, referenced=1500),
             snap("c", 3, 2, used=5, referenced=1600))
    assert estimate_from_listing(snaps, "c") == Expected(1600, exact=False)
    assert estimate_from_listing(snaps, "c", "a") == Expected(600 + 25, exact=False)
    assert estimate_from_listing(snaps, "x") is None
    assert estimate_from_listing(chain("a", "b"), "b") is None  # sizes unknown


def test_receive_sizes_add_up_each_target_pools_sends():
    sends = [Send("tank/a", "backup/x/a", "tank/a@s2", "tank/a@s1"), None,
             Send("tank/b", "backup/x/b", "tank/b@s2"), Send("tank/c", "other/c", None,
                                                               resume_token="1-abc")]
    expected = {"send0": {"bytes": 100, "exact": True}, "send2": {"bytes": 50, "exact": False}}
    # the resumed send's rest is not known: it counts as nothing
    assert receive_sizes(sends, expected) == {"backup": 150, "other": 0}
    assert receive_sizes([], {}) == {}


def test_progress_fraction():
    assert Progress(50, Expected(100, True)).fraction == 0.5
    assert Progress(500, Expected(100, False)).fraction == 0.99  # an estimate never says done
    assert Progress(500, Expected(100, False), finished=True).fraction == 1.0
    assert Progress(5, None).fraction is None
    assert Expected(1, False).label == "estimated"


def test_counter_dd_and_pv():
    dd = ("1048576 bytes (1.0 MB, 1.0 MiB) copied, 1.00 s, 1.0 MB/s\r"
          "5242880 bytes (5.2 MB, 5.0 MiB) copied, 2.00 s, 2.6 MB/s\r"
          "cannot receive: something\n"
          "0+97 records in\n0+97 records out\n"
          "6000000 bytes (6.0 MB, 5.7 MiB) copied, 2.31 s, 2.6 MB/s\n")
    assert parse_counter(dd) == 6000000
    assert parse_counter("512 bytes copied, 0.1 s, 5 kB/s\n") == 512
    assert parse_counter("1024\n4096\n8192\n") == 8192
    assert parse_counter("") is None


def test_lag_and_alert():
    newest = snap("b", 2, 1)
    now = T0 + timedelta(hours=3)
    ok = lag(newest, now, timedelta(hours=4))
    assert ok.lag == timedelta(hours=2) and not ok.alert and "@b" in ok.text
    late = lag(newest, now, timedelta(hours=1))
    assert late.alert and "threshold" in late.text
    assert lag(newest, T0, timedelta(hours=1)).lag == timedelta(0)  # source clock ahead


def test_never_replicated():
    assert not lag(None, T0, timedelta(hours=1)).alert
    assert lag(None, T0 + timedelta(hours=2), timedelta(hours=1), link_created=T0).alert


def test_bad_threshold_and_naive_now():
    with pytest.raises(ReplicationError):
        lag(None, T0, timedelta(seconds=1))
    with pytest.raises(ReplicationError):
        lag(None, T0.replace(tzinfo=None), timedelta(hours=1))


def test_newest_received_needs_every_dataset():
    data, wal = chain("a", "b", "c"), chain("a", "b", base=50)
    assert newest_received({"d": data, "w": wal}).name == "b"
    assert newest_received({"d": data, "w": ()}) is None
    assert newest_received({}) is None
