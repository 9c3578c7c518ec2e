"""The stored form of a sample, rollups of stored rows, and metrics read from them."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from apps.telemetry.core import metrics, series
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rollup import FIVE_MINUTES, HOUR
from tests.telemetry.core.helpers import T0, fuse_spec, openzfs_spec
from tests.telemetry.fixtures import captured, frame, openzfs_sections


def _leaves(values: dict) -> list:
    return [value for _, value in series.leaves(values)]


def test_a_captured_sample_stores_numbers_only_and_no_unknowns():
    text, taken_at = captured(2)
    sample = parse_sample(text, fuse_spec(), taken_at)
    stored = series.stored(sample)

    assert json.loads(json.dumps(stored)) == stored
    assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in _leaves(stored))
    assert stored["arc"]["hits"] == sample.arc.hits
    assert "dmu_tx" not in stored  # zfs-fuse has none: left out, not 0
    [(key, cluster)] = stored["clusters"].items()
    assert key == sample.clusters[0].key and cluster["xact_commit"] > 0
    assert cluster["connections"] == sum(sample.clusters[0].stats.connections.values())
    assert set(stored["pools"]) == {p.name for p in sample.pools}


def test_txg_history_becomes_figures_of_the_interval_not_rows():
    sample = parse_sample(frame(openzfs_sections()), openzfs_spec(), T0)
    [pool] = sample.pools
    before = replace(sample, taken_at=T0 - timedelta(seconds=60), pools=(
        replace(pool, txgs=tuple(t for t in pool.txgs if t.txg < max(x.txg for x in pool.txgs)
                                 - 3)),))
    stored = series.stored(sample, before)["pools"]["tank"]
    assert stored["txg_synced"] >= 1 and stored["txg_sync_ms_max"] is not None
    assert "txgs" not in stored
    assert "txg_synced" not in series.stored(sample)["pools"]["tank"]  # no previous sample


def _rows(minutes: int, *, reset_at: int | None = None):
    rows = []
    for m in range(minutes):
        hits = 900 * m if reset_at is None or m < reset_at else 9 * (m - reset_at)
        rows.append((T0 + timedelta(minutes=m, seconds=3),
                     {"arc": {"hits": hits, "misses": hits // 9, "size": 100 + m},
                      "pools": {"tank": {"capacity": 40 + m % 3}}}))
    return rows


def test_hourly_from_five_minute_buckets_equals_hourly_from_raw_rows():
    rows = _rows(180)
    from_raw = series.roll_up(rows, HOUR)
    from_five = series.merge(sorted(series.roll_up(rows, FIVE_MINUTES).items()), HOUR)
    assert from_five.keys() == from_raw.keys()
    for start, values in from_raw.items():
        raw, merged = dict(series.leaves(values)), dict(series.leaves(from_five[start]))
        assert raw.keys() == merged.keys()
        for path, bucket in raw.items():
            if "g" in bucket:
                assert bucket["g"] == pytest.approx(merged[path]["g"])
            else:
                assert bucket == merged[path]


def test_counters_and_gauges_roll_up_as_their_kind():
    [(start, values)] = series.roll_up(_rows(5), FIVE_MINUTES).items()
    assert "c" in values["arc"]["hits"] and "g" in values["arc"]["size"]
    assert values["pools"]["tank"]["capacity"]["g"][:2] == [40, 42]


def test_rates_from_rollups_are_unknown_across_a_reset_and_never_negative():
    rows = sorted(series.roll_up(_rows(30, reset_at=12), FIVE_MINUTES).items())
    reads = [(start, {"arc": values.get("arc")}) for start, values in rows]
    [arc] = metrics.rolled_series(metrics.METRICS["arc_hit_rate"], reads, FIVE_MINUTES)
    values = [v for _, v in arc.points]
    assert values[0] == pytest.approx(0.9) and values[1] is None
    assert all(v is None or 0 <= v <= 1 for v in values)


def test_a_missed_raw_sample_is_a_gap_in_a_rate_not_a_line_across_it():
    rows = [(at, {"uptime": 1000 + i * 60, "arc": values["arc"]})
            for i, (at, values) in enumerate(_rows(6)) if i != 3]
    rows += [(rows[-1][0] + timedelta(minutes=10), {"arc": {"hits": 99_000, "misses": 11_000}})]
    [arc] = metrics.raw_series(metrics.METRICS["arc_hit_rate"], rows, timedelta(minutes=1))
    values = [v for _, v in arc.points]
    assert values[:2] == [pytest.approx(0.9)] * 2
    assert values[2] is None  # two minutes between samples: one was missed
    assert values[-1] is None


def test_per_key_gauges_give_a_series_per_pool():
    rows = [(at, {"pools": values["pools"]}) for at, values in _rows(3)]
    rows[1][1]["pools"]["other"] = {"capacity": 7}
    found = metrics.raw_series(metrics.METRICS["pool_capacity"], rows, timedelta(minutes=1))
    assert [s.key for s in found] == ["other", "tank"]
    assert [v for _, v in found[0].points] == [None, 7, None]


# A pool's txg rates are stored only when the previous sample is known (series.stored).
FROM_TWO_SAMPLES = {"txg_dirty_max"}


def test_every_metric_reads_a_source_the_stored_form_has():
    sample = parse_sample(frame(openzfs_sections()), openzfs_spec(), T0)
    stored = series.stored(sample)
    for metric in metrics.METRICS.values():
        assert metric.source in stored, metric.name
        sources = stored[metric.source].values() if metric.per else [stored[metric.source]]
        for values in sources:
            for name in metric.fields_read or ((metric.field,) if metric.field else ()):
                if name in FROM_TWO_SAMPLES:
                    continue
                assert name in values, (metric.name, name)


def test_a_sample_as_a_dict_is_what_dataclasses_asdict_makes():
    import dataclasses

    for sample in (parse_sample(frame(openzfs_sections()), openzfs_spec(), T0),
                   parse_sample(captured(2)[0], fuse_spec(), captured(2)[1])):
        plain = sample.to_dict()
        assert plain == {**dataclasses.asdict(sample), "taken_at": sample.taken_at.isoformat()}
        assert type(plain["pools"]) is tuple and json.loads(json.dumps(plain))
