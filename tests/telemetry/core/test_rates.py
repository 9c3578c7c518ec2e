"""Rates between two samples: real pgbench interval, resets, reboots, gaps, first sample."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from apps.telemetry.core import series
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rates import CLOCK, FIRST, REBOOT, as_before, rates, txg_rates
from tests.telemetry.core.helpers import (
    PG_KEY,
    arc,
    fuse_spec,
    openzfs_spec,
    pg,
    pool,
    sample,
    txg,
)
from tests.telemetry.fixtures import (
    ZFS_FUSE,
    captured,
    frame,
    openzfs_samples,
    openzfs_sections,
)


def test_real_interval_around_pgbench_on_the_test_host():
    spec = fuse_spec()
    (text1, at1), (text2, at2) = captured(1), captured(2)
    before, after = parse_sample(text1, spec, at1), parse_sample(text2, spec, at2)
    result = rates(before, after)
    seconds = (at2 - at1).total_seconds()
    assert result.reason is None and result.seconds == pytest.approx(seconds)
    [cluster] = after.clusters
    pg_rates = result.clusters[cluster.key]
    s1, s2 = before.clusters[0].stats, cluster.stats
    assert pg_rates.tps == pytest.approx((s2.xact_commit - s1.xact_commit
                                          + s2.xact_rollback - s1.xact_rollback) / seconds)
    assert pg_rates.tps > 100  # pgbench ran for 5 of those seconds
    assert 0.9 < pg_rates.cache_hit_ratio <= 1
    assert pg_rates.wal_bytes_per_second == pytest.approx((s2.wal_bytes - s1.wal_bytes) / seconds)
    assert pg_rates.checkpoints_requested == 1  # the CHECKPOINT between the samples
    assert result.arc.formula == "hits/(hits+misses)"  # zfs-fuse has no iohits
    assert result.arc.reads_per_second > 0
    assert result.throttle is None and result.pools[0].txgs is None  # not on zfs-fuse


def test_the_first_sample_has_no_rates():
    result = rates(None, sample(0, arc_=arc(hits=1, misses=1)))
    assert result.reason == FIRST and result.arc is None and result.seconds is None


@pytest.mark.parametrize("later", [0, -30])
def test_a_clock_that_did_not_move_forward_gives_no_rates(later):
    result = rates(sample(60, arc_=arc(hits=1, misses=1)),
                   sample(60 + later, arc_=arc(hits=5, misses=1)))
    assert result.reason == CLOCK and result.arc is None


def test_arc_hit_ratio_is_over_the_interval_not_since_boot():
    before = arc(hits=1_000_000, misses=0)
    after = arc(hits=1_000_050, misses=50)
    result = rates(sample(0, arc_=before), sample(60, arc_=after))
    assert result.arc.hit_ratio == 0.5
    assert result.arc.reads_per_second == pytest.approx(100 / 60)


def test_iohits_join_the_denominator_when_both_samples_have_them():
    before = arc(hits=0, iohits=0, misses=0, demand_data_hits=0, demand_data_iohits=0,
                 demand_data_misses=0)
    after = arc(hits=60, iohits=20, misses=20, demand_data_hits=30, demand_data_iohits=10,
                demand_data_misses=10)
    result = rates(sample(0, arc_=before), sample(10, arc_=after)).arc
    assert result.formula == "hits/(hits+iohits+misses)"
    assert (result.hit_ratio, result.iohit_ratio) == (0.6, 0.2)
    assert result.demand_data_hit_ratio == 0.6
    assert result.demand_metadata_hit_ratio is None  # not in these samples


def test_no_reads_is_an_unknown_ratio_not_zero_or_full():
    result = rates(sample(0, arc_=arc(hits=5, misses=5)), sample(60, arc_=arc(hits=5, misses=5)))
    assert result.arc.hit_ratio is None and result.arc.reads_per_second == 0


def test_openzfs_sections_give_every_rate_kind():
    spec = openzfs_spec()
    before = parse_sample(frame(openzfs_sections()), spec, sample(0).taken_at)
    sections = openzfs_sections()
    sections["arc"] = sections["arc"].replace("184467301", "184469301")  # +2000 hits
    after = parse_sample(frame(sections), spec, sample(10).taken_at)
    result = rates(before, after)
    assert result.arc.hit_ratio == 1.0 and result.arc.reads_per_second == 200
    assert result.throttle.dirty_delay_per_second == 0
    assert result.pools[0].txgs.synced == 0  # same history: nothing new committed


# -- resets and reboots -------------------------------------------------------------------

def test_a_counter_that_went_down_makes_its_interval_unknown_not_negative():
    before = pg(xact_commit=1000, xact_rollback=10, blks_hit=500, blks_read=5, wal_bytes=9000)
    after = pg(xact_commit=20, xact_rollback=0, blks_hit=50, blks_read=1, wal_bytes=100)
    result = rates(sample(0, stats=before), sample(60, stats=after)).clusters[PG_KEY]
    assert result.tps is None and result.commits_per_second is None
    assert result.cache_hit_ratio is None and result.wal_bytes_per_second is None


def test_one_reset_counter_does_not_hide_the_others():
    before = pg(xact_commit=1000, xact_rollback=0, checkpoints_timed=50)
    after = pg(xact_commit=1600, xact_rollback=0, checkpoints_timed=0)  # pg_stat_reset_shared
    result = rates(sample(0, stats=before), sample(60, stats=after)).clusters[PG_KEY]
    assert result.tps == 10 and result.checkpoints_timed is None


def test_a_reboot_makes_every_kernel_and_zfs_rate_unknown_even_if_counters_look_higher():
    before = sample(0, uptime=100.0, arc_=arc(hits=10, misses=0))
    after = sample(86_400, uptime=3_600.0, arc_=arc(hits=900, misses=100))
    result = rates(before, after)
    assert result.reason == REBOOT and result.arc is None and result.pools == ()


def test_uptime_going_down_is_a_reboot():
    assert rates(sample(0, uptime=20.0), sample(5, uptime=19.0)).reason == REBOOT


def test_uptime_that_kept_pace_is_no_reboot_despite_a_slow_answer():
    before = sample(0, uptime=1_000.0, arc_=arc(hits=0, misses=0))
    after = sample(60, uptime=1_040.0, arc_=arc(hits=10, misses=0))  # answer 20 s late
    assert rates(before, after).reason is None


def test_postgres_rates_survive_a_host_reboot_only_where_counters_allow():
    before = sample(0, uptime=100.0, stats=pg(xact_commit=500, xact_rollback=0))
    after = sample(120, uptime=10.0, stats=pg(xact_commit=20, xact_rollback=0))
    result = rates(before, after)
    assert result.reason == REBOOT and result.clusters[PG_KEY].tps is None


# -- missed samples ------------------------------------------------------------------------

def test_a_missed_sample_is_a_longer_interval_and_a_gap():
    before = sample(0, stats=pg(xact_commit=0, xact_rollback=0))
    after = sample(180, stats=pg(xact_commit=1800, xact_rollback=0))
    result = rates(before, after, expected_interval=timedelta(seconds=60))
    assert result.seconds == 180 and result.gap
    assert result.clusters[PG_KEY].tps == 10  # the average over the whole interval


def test_a_slightly_late_sample_is_no_gap():
    result = rates(sample(0), sample(75), expected_interval=timedelta(seconds=60))
    assert not result.gap


def test_wal_rate_falls_back_to_the_wal_position_before_14():
    before, after = pg(wal_position=1_000), pg(wal_position=61_000)
    result = rates(sample(0, stats=before), sample(60, stats=after)).clusters[PG_KEY]
    assert result.wal_bytes_per_second == 1000


def test_a_cluster_missing_in_either_sample_has_no_rates():
    result = rates(sample(0), sample(60, stats=pg(xact_commit=1)))
    assert PG_KEY not in result.clusters


# -- pools and txgs ------------------------------------------------------------------------

def test_new_checksum_errors_and_a_zpool_clear():
    grown = rates(sample(0, pools=(pool(cksum=2),)), sample(60, pools=(pool(cksum=5),)))
    assert grown.pools[0].new_checksum_errors == 3
    cleared = rates(sample(0, pools=(pool(cksum=5),)), sample(60, pools=(pool(cksum=0),)))
    assert cleared.pools[0].new_checksum_errors is None


def test_txgs_committed_in_the_interval():
    before = (txg(10), txg(11), txg(12, state="S"), txg(13, state="O"))
    after = (txg(11), txg(12, nwritten=1000, stime=2_000_000, ndirty=4000),
             txg(13, nwritten=3000, stime=4_000_000, ndirty=9000), txg(14, state="W", ndirty=1),
             txg(15, state="O"))
    result = txg_rates(before, after, 10)
    assert (result.synced, result.written_per_second, result.complete) == (2, 400, True)
    assert (result.sync_ms_max, result.sync_ms_avg, result.dirty_max) == (4.0, 3.0, 9000)


def test_txg_history_outrun_by_a_long_interval_is_incomplete():
    before = (txg(10),)
    after = tuple(txg(n, nwritten=100) for n in range(200, 300))
    result = txg_rates(before, after, 600)
    assert not result.complete and result.written_per_second is None and result.synced == 100


def test_txg_numbers_going_back_or_no_earlier_history_give_nothing():
    assert txg_rates((txg(500),), (txg(20),), 60) is None
    assert txg_rates((txg(5, state="O"),), (txg(5),), 60) is None


def test_a_real_postgresql_crash_resets_its_counters_and_gives_no_spike():
    """Captured: pgbench, sample, pgbench, `pg_ctl restart -m immediate`, sample."""
    meta = json.loads((ZFS_FUSE / "meta-crash.json").read_text())
    before, after = (parse_sample((ZFS_FUSE / entry["file"]).read_text(), fuse_spec(),
                                  datetime.fromisoformat(entry["taken_at"]))
                     for entry in meta["samples"])
    s1, s2 = before.clusters[0].stats, after.clusters[0].stats
    assert s2.xact_commit < s1.xact_commit and s2.postmaster_start > s1.postmaster_start
    result = rates(before, after)
    assert result.reason is None  # the host did not reboot: its ARC rates stand
    assert result.arc.hit_ratio is not None
    pg_rates = result.clusters[after.clusters[0].key]
    assert pg_rates.tps is None and pg_rates.cache_hit_ratio is None
    assert s2.wal_position > s1.wal_position
    assert pg_rates.wal_bytes_per_second > 0  # from the position, which a crash keeps


@pytest.mark.parametrize("version", ["2.1", "2.3"])
def test_the_before_kept_with_its_last_committed_txg_only_gives_the_same_rates(version):
    before, after = openzfs_samples(version)
    kept = as_before(before)
    [whole], [cut] = [p.txgs for p in before.pools], [p.txgs for p in kept.pools]
    assert len(whole) > 10 and len(cut) == 1  # the real host's history: dozens of rows
    assert cut[0].state == "C" and cut[0].txg == max(t.txg for t in whole if t.state == "C")
    assert rates(kept, after) == rates(before, after)
    assert series.stored(after, kept) == series.stored(after, before)
    assert "txg_synced" in series.stored(after, kept)["pools"]["tank"]


def test_a_pool_without_txg_history_or_a_committed_txg_is_kept_as_it_is():
    plain = sample(pools=(pool(txgs=None),))
    assert as_before(plain) is plain
    open_only = sample(pools=(pool(txgs=(txg(9, state="O"),)),))
    assert as_before(open_only).pools[0].txgs == ()
