"""Parsers on captured real output (zfs-fuse test host) and OpenZFS text written from source."""

from __future__ import annotations

import dataclasses
import json
import locale
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from apps.remote.facts import zpool
from apps.telemetry.core.parse import (
    parse_arc,
    parse_data_errors,
    parse_dmu_tx,
    parse_loadavg,
    parse_sample,
    parse_scrub,
    parse_txgs,
    parse_uptime,
)
from apps.telemetry.core.pgstats import parse_pg_stats
from apps.telemetry.core.sample import NOT_AVAILABLE, Sample
from tests.telemetry.core.helpers import PG_KEY, T0, fuse_spec, openzfs_spec
from tests.telemetry.fixtures import (
    ABSENT,
    OPENZFS,
    REMOTE_OPENZFS,
    ZFS_FUSE,
    captured,
    frame,
    openzfs_sections,
)


@pytest.fixture
def fuse_sample():
    text, taken_at = captured(2)
    return parse_sample(text, fuse_spec(), taken_at)


def test_zfs_fuse_arc_from_one_file_per_field(fuse_sample):
    arc = fuse_sample.arc
    assert (arc.hits, arc.misses, arc.size, arc.c_max) == (5882, 48, 88871616, 104857600)
    assert arc.demand_data_hits + arc.demand_metadata_hits + arc.prefetch_metadata_hits == 5882
    assert arc.iohits is None and arc.demand_data_iohits is None  # 2.2+ only
    assert arc.l2_hits == 0 and arc.l2_asize is None


def test_zfs_fuse_lacks_the_openzfs_kstats_and_says_so(fuse_sample):
    assert fuse_sample.dmu_tx is None
    assert fuse_sample.pools[0].txgs is None
    assert dict(fuse_sample.missing) == {"dmu_tx": NOT_AVAILABLE, "txgs:tank": NOT_AVAILABLE}


def test_zfs_fuse_pool_with_rounded_sizes_and_a_real_scrub_line(fuse_sample):
    [tank] = fuse_sample.pools
    assert (tank.name, tank.health, tank.capacity, tank.fragmentation) == ("tank", "ONLINE", 20,
                                                                          None)
    assert tank.size == 1016 * 2**20 and not tank.exact
    assert (tank.read_errors, tank.write_errors, tank.checksum_errors, tank.data_errors) == (
        0, 0, 0, 0)
    assert tank.scrub.state == "finished"
    assert tank.scrub.ended == "2026-11-23T21:35:44" and tank.scrub.errors == 0


@pytest.fixture
def german_lc_time(tmp_path, monkeypatch):
    """The worker's LC_TIME in German, from a locale compiled into tmp_path (the machine
    has only C installed): strptime's %a and %b then want "So" and "Sep."."""
    if not shutil.which("localedef") or not Path("/usr/share/i18n/locales/de_DE").exists():
        pytest.skip("no localedef or de_DE locale source to compile a German locale from")
    subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", tmp_path / "de_DE.UTF-8"],
                   check=True, capture_output=True)
    monkeypatch.setenv("LOCPATH", str(tmp_path))
    before = locale.setlocale(locale.LC_TIME)
    locale.setlocale(locale.LC_TIME, "de_DE.UTF-8")
    assert time.strftime("%a", time.gmtime(0)) == "Do"  # 1970-01-01, a Donnerstag
    yield
    locale.setlocale(locale.LC_TIME, before)


def test_scrub_dates_do_not_depend_on_the_workers_locale(german_lc_time):
    text, taken_at = captured(2)  # the real zfs-fuse capture, its scan line in English
    [tank] = parse_sample(text, fuse_spec(), taken_at).pools
    assert tank.scrub.ended == "2026-11-23T21:35:44"
    assert zpool.parse_scrub_end(
        "scrub repaired 0B in 00:12:41 with 0 errors on Sun Sep  8 00:36:42 2024") == \
        "2024-09-08T00:36:42"


def test_zfs_fuse_datasets(fuse_sample):
    by_name = {d.name: d for d in fuse_sample.datasets}
    assert set(by_name) == {"tank", "tank/pg", "tank/pg/data", "tank/pg/wal"}
    assert by_name["tank/pg/data"].used == 48046080
    assert by_name["tank/pg/data"].compressratio == 1.0  # "1.00x" even with -p
    assert by_name["tank/pg/data"].logicalused is None


def test_kernel_sections(fuse_sample):
    assert fuse_sample.uptime == 956.37
    assert fuse_sample.memory.dirty == 300 * 1024 and fuse_sample.memory.writeback == 0
    assert fuse_sample.memory.available == 22414884 * 1024
    assert (fuse_sample.load.load1, fuse_sample.load.running, fuse_sample.load.threads) == (
        1.2, 1, 926)


def test_postgresql_15_from_the_test_host(fuse_sample):
    [cluster] = fuse_sample.clusters
    stats = cluster.stats
    assert cluster.key.endswith("/pgdata")
    assert (stats.server_version_num, stats.in_recovery, stats.max_connections) == (150020,
                                                                                   False, 100)
    assert (stats.xact_commit, stats.xact_rollback, stats.blks_hit, stats.blks_read) == (
        5549, 0, 207496, 3368)
    assert stats.wal_bytes == 25049555 and stats.wal_position == 42038104
    assert (stats.checkpoints_requested, stats.checkpoint_write_ms) == (1, 194.0)
    assert stats.standbys == 0 and stats.standby_lag_bytes_max is None  # NULL: no standby
    assert stats.replay_age_seconds is None
    assert dict(stats.connections) == {"active": 1}


def test_openzfs_sample_reads_every_section():
    sample = parse_sample(frame(openzfs_sections()), openzfs_spec(), T0)
    assert dict(sample.missing) == {}
    assert sample.arc.iohits == 2013442 and sample.arc.hits == 184467301
    assert sample.dmu_tx.dirty_delay == 391877 and sample.dmu_tx.wrlog_delay == 0
    [tank] = sample.pools
    assert (tank.size, tank.fragmentation, tank.capacity, tank.exact) == (996432412672, 12,
                                                                         21, True)
    assert tank.scrub.ended == "2024-09-08T00:36:42"
    assert [t.state for t in tank.txgs] == ["C", "C", "C", "C", "W", "O"]
    pg_data = next(d for d in sample.datasets if d.name == "tank/pg/data")
    assert (pg_data.logicalused, pg_data.compressratio) == (381905387520, 2.47)
    stats = sample.cluster(PG_KEY).stats
    assert stats.standbys == 2 and stats.standby_lag_seconds_max == 0.412338
    assert dict(stats.connections) == {"active": 7, "idle": 41, "idle in transaction": 2}


def test_a_failed_source_is_missing_with_its_reason_not_zero():
    sections = openzfs_sections()
    sections["pg:0"] = (2, "psql: error: connection to server on socket "
                           "\"/var/run/postgresql/.s.PGSQL.5432\" failed: No such file\n")
    sections["zpool_status"] = (1, "internal error: out of memory\n")
    sample = parse_sample(frame(sections), openzfs_spec(), T0)
    assert sample.cluster(PG_KEY).stats is None
    assert sample.missing["pg:0"].startswith("failed (exit 2): psql: error: connection")
    [tank] = sample.pools
    assert tank.capacity == 21  # zpool list still read
    assert tank.checksum_errors is None and tank.scrub is None and tank.data_errors is None


def test_an_answer_cut_short_marks_what_never_came():
    text = frame(openzfs_sections())
    cut = text[:text.index("@@pozol@@ zpool_list")] + "@@pozol@@ zpool_list\ntank\t99"
    sample = parse_sample(cut, openzfs_spec(), T0)
    assert sample.arc is not None and sample.pools is None and sample.datasets is None
    assert sample.missing["zpool_list"].startswith("no answer")
    assert sample.missing["pg:0"].startswith("no answer")


def test_absent_zpool_when_zfs_went_away_since_discovery():
    sections = openzfs_sections()
    for name in ("zpool_list", "zpool_status", "zfs_get", "txgs:tank"):
        sections[name] = ABSENT
    sample = parse_sample(frame(sections), openzfs_spec(), T0)
    assert sample.pools is None and sample.datasets is None
    assert sample.missing["zpool_list"] == NOT_AVAILABLE


# -- single parsers, malformed input read as far as it goes -------------------------------

def test_malformed_arcstats_keeps_what_parses():
    lines = (REMOTE_OPENZFS / "arcstats.txt").read_text().splitlines()
    assert lines[4].startswith("misses ")
    mangled = "\n".join(lines[:4] + ["garbage line", "misses 4 notanumber"] + lines[5:40])
    arc = parse_arc(mangled)
    assert arc.hits == 184467301 and arc.iohits == 2013442 and arc.misses is None
    assert arc.size is None  # beyond the 40 lines kept
    assert parse_arc("") is None and parse_arc("nonsense\n") is None


def test_negative_values_are_not_readings():
    text = "x\nname type data\nhits 4 -5\nmisses 4 7\n"
    arc = parse_arc(text)
    assert arc.hits is None and arc.misses == 7


def test_dmu_tx_before_2_2_has_no_wrlog_delay():
    text = (OPENZFS / "dmu_tx.txt").read_text().replace("dmu_tx_wrlog_delay", "x_removed")
    dmu = parse_dmu_tx(text)
    assert dmu.wrlog_delay is None and dmu.dirty_over_max == 37


def test_txgs_rows_by_header_name():
    rows = parse_txgs((OPENZFS / "txgs_tank.txt").read_text())
    assert rows[0].txg == 1832410 and rows[0].ndirty == 81018880
    assert rows[3].stime == 526694584 and rows[-1].state == "O"


def test_txgs_in_the_0_6_layout_with_a_kstat_header_and_nreserved():
    # openzfs/zfs#2218 (0.6.2): a kstat header line first, then no ndirty column.
    text = ("9 5 0x01 60 4320 8934272774 4241608239489766\n"
            "txg      state birth         nread        nwritten     reads    writes   "
            "otime        qtime        stime\n"
            "7917723  C     4241593463350422 0            1127424      0        351"
            "         156093280         3990    148591575\n")
    # That layout has no wtime: rows without every time column are not read as numbers.
    assert parse_txgs(text) == ()
    text_06 = ("18 0 0x01 50 5600 629359807895 200790103637743\n"
               "txg      birth            state nreserved    nread        nwritten     reads    "
               "writes   otime        qtime        wtime        stime\n"
               "31601021 200695506940447  C     6530560      0            9462784      0        "
               "1188     2060090840   1693         2174040557   2186188720\n")
    [row] = parse_txgs(text_06)
    assert row.ndirty is None and row.nwritten == 9462784 and row.stime == 2186188720


def test_txgs_malformed_rows_are_skipped():
    text = (OPENZFS / "txgs_tank.txt").read_text().splitlines()
    mangled = "\n".join([text[0], text[1], "1832411 x C 1 2 3", text[2][:30], text[3]])
    assert [r.txg for r in parse_txgs(mangled)] == [1832410, 1832412]


@pytest.mark.parametrize(("line", "state", "ended", "errors"), [
    ("  scan: scrub repaired 0B in 00:12:41 with 0 errors on Sun Sep  8 00:36:42 2024",
     "finished", "2024-09-08T00:36:42", 0),
    ("  scan: scrub repaired 1.50M in 01:02:03 with 3 errors on Tue Jan 14 04:05:06 2025",
     "finished", "2025-01-14T04:05:06", 3),
    ("  scan: scrub in progress since Sun Sep  8 00:24:01 2024", "in progress", None, None),
    ("  scan: scrub paused since Sun Sep  8 00:24:01 2024", "paused", None, None),
    ("  scan: scrub canceled on Sun Sep  8 00:24:01 2024", "canceled", None, None),
    ("  scan: resilvered 1.2G in 00:01:02 with 0 errors on Mon Jan  6 10:00:00 2025",
     "none", None, None),
    ("  scan: none requested", "none", None, None),
    (" scrub: none requested", "none", None, None),
    (" scrub: scrub completed after 0h0m with 0 errors on Mon Nov 23 21:35:44 2026",
     "finished", "2026-11-23T21:35:44", 0),
    ("", "none", None, None),  # OpenZFS prints no scan line for a pool never scanned
])
def test_scrub_lines(line, state, ended, errors):
    scrub = parse_scrub(f"  pool: tank\n state: ONLINE\n{line}\nconfig:\n")
    assert (scrub.state, scrub.ended, scrub.errors) == (state, ended, errors)


@pytest.mark.parametrize(("text", "count"), [
    ("No known data errors", 0), ("12 data errors, use '-v' for a list", 12), ("", None),
])
def test_data_errors(text, count):
    assert parse_data_errors(text) == count


@pytest.mark.parametrize(("text", "load"), [
    ("0.52 0.58 0.59 1/467 12345\n", (0.52, 0.58, 0.59, 1, 467)),
    ("0.52 0.58 0.59\n", (0.52, 0.58, 0.59, None, None)),
    ("", None), ("n/a\n", None),
])
def test_loadavg(text, load):
    parsed = parse_loadavg(text)
    assert (None if parsed is None else (parsed.load1, parsed.load5, parsed.load15,
                                         parsed.running, parsed.threads)) == load


@pytest.mark.parametrize(("text", "seconds"), [
    ("350735.47 234388.90\n", 350735.47), ("", None), ("x y\n", None)])
def test_uptime(text, seconds):
    assert parse_uptime(text) == seconds


def test_pg_stats_empty_unknown_and_garbage_values():
    stats = parse_pg_stats("xact_commit\t12\nblks_hit\t\nwal_bytes\t1.5\nnew_thing\t3\n"
                           "in_recovery\tmaybe\nconnections:idle\tlots\nno tab here\n"
                           "checkpoint_write_ms\tNaN\n")
    assert stats.xact_commit == 12
    assert stats.blks_hit is None  # NULL
    assert stats.wal_bytes is None  # not a whole number: not a counter
    assert stats.in_recovery is None and stats.checkpoint_write_ms is None
    assert dict(stats.connections) == {}


def test_a_sample_survives_json_and_back(fuse_sample):
    openzfs = parse_sample(frame(openzfs_sections()), openzfs_spec(), T0)
    for sample in (fuse_sample, openzfs):
        stored = json.loads(json.dumps(sample.to_dict()))
        assert Sample.from_dict(stored) == sample


@pytest.mark.parametrize("version", ["2.1", "2.3"])
def test_the_collectors_json_text_of_a_real_sample_is_what_to_dict_spells(version):
    """The state row is written with store.json_text (orjson, straight from the
    dataclass): the same document as Sample.to_dict() through json, and it reads back
    as the same sample, on both VM hosts' captured answers."""
    from apps.telemetry.core.rates import as_before
    from apps.telemetry.store import json_text
    from tests.telemetry.fixtures import openzfs_samples

    for sample in openzfs_samples(version):
        for value in (sample, as_before(sample)):
            assert json.loads(json_text(value)) == json.loads(json.dumps(value.to_dict()))
            assert Sample.from_dict(json.loads(json_text(value))) == value


def test_json_text_writes_null_for_what_jsonb_refuses():
    from apps.telemetry.store import json_text

    assert json.loads(json_text({"a": float("nan"), "b": float("inf")})) == {
        "a": None, "b": None}


def test_json_value_reads_what_json_loads_reads_past_orjsons_range():
    """The tick parses raw rows with orjson; jsonb keeps numbers a double cannot hold,
    which orjson refuses and json.loads reads as Django would."""
    from apps.telemetry.store import json_value

    text = '{"a": 1e400, "b": [18446744073709551615, -2.5], "c": {"d": null}}'
    assert json_value(text) == json.loads(text)
    assert json_value('{"e": 2.5}') == {"e": 2.5}


def test_a_sample_stored_before_a_field_existed_reads_it_as_unknown(fuse_sample):
    stored = json.loads(json.dumps(fuse_sample.to_dict()))
    del stored["arc"]["iohits"], stored["clusters"][0]["stats"]["wal_fpi"], stored["uptime"]
    again = Sample.from_dict(stored)
    assert again.arc.iohits is None and again.uptime is None
    assert again.clusters[0].stats.wal_fpi is None
    assert again.clusters[0].stats.xact_commit == fuse_sample.clusters[0].stats.xact_commit


def test_txgs_digits_that_int_refuses_are_not_numbers():
    header, row = (OPENZFS / "txgs_tank.txt").read_text().splitlines()[:2]
    assert parse_txgs(f"{header}\n{row.replace('680', '6²0')}\n") == ()


def test_digits_int_refuses_are_unknown_and_the_rest_still_counts():
    sections = openzfs_sections()
    sections["zpool_status"] = sections["zpool_status"].replace(
        "mirror-0                            ONLINE       0", "mirror-0    ONLINE       ²")
    sections["zfs_get"] = sections["zfs_get"].replace("154618822656", "1546²")
    sample = parse_sample(frame(sections), openzfs_spec(), T0)
    assert "zpool_status" not in sample.missing and "zfs_get" not in sample.missing
    [tank] = sample.pools
    assert tank.capacity == 21 and tank.read_errors is None and tank.scrub is not None
    assert None in {getattr(d, field.name) for d in sample.datasets
                    for field in dataclasses.fields(d)}
    assert tank.txgs and sample.arc.hits == 184467301


def test_a_source_that_raises_is_unreadable_and_the_rest_still_counts(monkeypatch):
    from apps.remote.facts import zfs as zfsfacts

    def broken(text):
        raise ValueError("garbled")

    monkeypatch.setattr(zfsfacts, "parse_size", broken)
    sample = parse_sample(frame(openzfs_sections()), openzfs_spec(), T0)
    assert sample.missing["zfs_get"] == "unreadable: garbled"
    assert sample.arc.hits == 184467301


def test_a_pool_gone_since_discovery_leaves_the_others_readable():
    """Captured: zpool and zfs answer for tank, complain about `gone` and exit 1."""
    spec = dataclasses.replace(fuse_spec(), pools=("tank", "gone"))
    text = (ZFS_FUSE / "sample-vanished-pool.txt").read_text()
    sample = parse_sample(text, spec, T0)
    [tank] = sample.pools
    assert tank.name == "tank" and tank.health == "ONLINE" and tank.checksum_errors == 0
    assert tank.scrub.state == "none"  # this host was never scrubbed
    assert {d.name for d in sample.datasets} == {"tank", "tank/pg", "tank/pg/data",
                                                 "tank/pg/wal"}
    assert sample.missing["zpool_list"] == "failed (exit 1): cannot open 'gone': no such pool"
    assert sample.missing["zfs_get"].startswith("failed (exit 1): cannot open 'gone'")
    assert sample.missing["pool:gone"].startswith("not in zpool list's answer")
