"""Telemetry services on captured samples (the zfs-fuse test host's own answers)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from apps.fleet.models import Host
from apps.remote.errors import CommandTimeout, Unreachable
from apps.remote.shell import Result
from apps.telemetry import services, upkeep
from apps.telemetry.core import metrics
from apps.telemetry.core.command import sample_command
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rollup import Retention
from apps.telemetry.core.sample import NOT_AVAILABLE
from apps.telemetry.core.spec import spec_from_facts
from apps.telemetry.models import (
    HostTelemetry,
    RawChunk,
    RawSample,
    Rollup,
    RollupChunk,
    RollupMark,
)
from tests.benchmarks import factories
from tests.telemetry.core.helpers import fuse_facts
from tests.telemetry.fixtures import ZFS_FUSE, captured, captured_openzfs

pytestmark = pytest.mark.django_db

PG = "/tank/pg/data"


def pinned(name: str = "db1", facts: dict | None = None) -> Host:
    host = factories.host(name)
    host.facts = facts if facts is not None else json.loads((ZFS_FUSE / "facts.json").read_text())
    host.host_key, host.host_key_state, host.reachable = "ssh-ed25519 AAAA", "pinned", True
    host.save()
    return host


class FakeSsh:
    """Answers the sample command with captured text, counting round trips per host."""

    def __init__(self, answers: dict[str, list[str]], fail: set[str] = frozenset()) -> None:
        self.answers, self.fail, self.runs = answers, fail, []

    def __call__(self, target, **_kwargs):
        def run(command, *, timeout, check):
            self.runs.append((target.name, command.text))
            if target.name in self.fail:
                raise Unreachable(f"{target.name}: connection refused")
            return Result(command=command.shown or "", exit_code=0,
                          stdout=self.answers[target.name].pop(0), stderr="", duration=0.2)
        return run


@pytest.fixture
def fake_ssh(monkeypatch):
    def install(answers, fail=frozenset()):
        fake = FakeSsh(answers, set(fail))
        monkeypatch.setattr(services.ssh, "session", fake)
        return fake
    return install


def test_one_round_trip_per_host_and_a_failing_host_is_recorded_not_raised(fake_ssh):
    good, bad = pinned("db1"), pinned("db2")
    fake = fake_ssh({"db1": [captured(1)[0]]}, fail={"db2"})

    taken = services.collect_fleet()

    assert sorted(t.host_id for t in taken) == [good.pk, bad.pk]
    assert sorted(name for name, _ in fake.runs) == ["db1", "db2"]
    [(_, text)] = [run for run in fake.runs if run[0] == "db1"]
    assert text == sample_command(spec_from_facts(fuse_facts())).text
    assert RawSample.objects.filter(host=good).count() == 1
    assert not RawSample.objects.filter(host=bad).exists()
    state = HostTelemetry.objects.get(host=bad)
    assert state.last_error_code == "unreachable" and "refused" in state.last_error
    assert state.last_error_at is not None and state.last_sample is None


def test_unpinned_and_undiscovered_hosts_are_not_sampled(fake_ssh):
    Host.objects.filter(pk=pinned("new").pk).update(host_key_state="unverified")
    pinned("bare", facts={})
    fake = fake_ssh({})
    assert services.collect_fleet() == []
    assert fake.runs == []


def test_an_outage_opens_at_the_first_failed_sample_and_ends_at_the_next_answer(fake_ssh):
    host = pinned("db1")
    fake_ssh({"db1": []}, fail={"db1"})
    services.collect_fleet()
    host.refresh_from_db()
    [alert] = host.alerts.filter(kind="unreachable")
    assert not host.reachable and alert.resolved_at is None and "refused" in alert.message

    services.collect_fleet()  # still down: sampled again, the one alert stays open
    assert host.alerts.filter(kind="unreachable").count() == 1

    fake_ssh({"db1": [captured(1)[0]]})
    services.collect_fleet()
    host.refresh_from_db()
    alert.refresh_from_db()
    assert host.reachable and alert.resolved_at is not None
    assert RawSample.objects.filter(host=host).count() == 1


def test_a_command_that_times_out_is_a_missing_sample_not_an_outage(fake_ssh, monkeypatch):
    host = pinned("db1")

    def slow(target, **_kwargs):
        def run(command, *, timeout, check):
            raise CommandTimeout("the sample command did not finish in 20 s")
        return run
    monkeypatch.setattr(services.ssh, "session", slow)
    services.collect_fleet()
    host.refresh_from_db()
    assert host.reachable and not host.alerts.exists()
    assert HostTelemetry.objects.get(host=host).last_error_code == "timeout"


def _record_captured(host: Host) -> datetime:
    """The two captured answers, as if they had just arrived (their 6 s apart kept)."""
    spec = services.spec_of(host)
    shift = timezone.now() - captured(2)[1]
    for number in (1, 2):
        text, taken_at = captured(number)
        services.record(services.Taken(host.pk, parse_sample(text, spec, taken_at + shift),
                                       0.2))
    return captured(2)[1] + shift


def test_two_captured_samples_read_as_arc_hit_rate_and_tps():
    host = pinned()
    second = _record_captured(host)
    window = (second - timedelta(minutes=5), second + timedelta(minutes=1))

    arc = services.read(host, "arc_hit_rate", *window)
    tps = services.read(host, "tps", *window)

    assert arc.resolution == "raw" and arc.reason is None
    [(at, ratio)] = arc.series[0].points
    assert at == second and 0 <= ratio <= 1
    [cluster] = tps.series
    assert cluster.key and cluster.points[0][1] > 0
    state = HostTelemetry.objects.get(host=host)
    assert state.last_sample_at == second and state.last_error == ""


def test_a_source_the_host_lacks_reads_as_unavailable_with_its_reason():
    host = pinned()
    second = _record_captured(host)
    reading = services.read(host, "dirty", second - timedelta(minutes=5), second)
    assert reading.reason is None
    no_pg = pinned("nopg", facts={**host.facts, "clusters": []})
    services.record(services.Taken(no_pg.pk, services.Sample.from_dict(
        {**HostTelemetry.objects.get(host=host).last_sample, "clusters": []}), 0.1))
    tps = services.read(no_pg, "tps", second - timedelta(minutes=5), second + timedelta(hours=1))
    assert tps.reason.startswith(NOT_AVAILABLE) and tps.series == []


def test_a_reboot_between_samples_is_a_null_point_not_a_negative_rate():
    host = pinned()
    t0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
    rows = [(0, 1000, 100, 50), (60, 2000, 200, 110), (120, 10, 5, 5), (180, 900, 100, 70)]
    for seconds, hits, misses, uptime in rows:
        RawSample.objects.create(host=host, taken_at=t0 + timedelta(seconds=seconds),
                                 values={"uptime": uptime, "arc": {"hits": hits,
                                                                   "misses": misses}})
    [arc] = services.read(host, "arc_hit_rate", t0, t0 + timedelta(minutes=5),
                           now=t0 + timedelta(hours=1)).series
    values = [v for _, v in arc.points]
    assert values[0] == pytest.approx(1000 / 1100)
    assert values[1] is None  # counters went down: the host rebooted
    assert values[2] == pytest.approx(890 / 985)


def _minute_rows(host: Host, start: datetime, minutes: int) -> None:
    RawSample.objects.bulk_create([RawSample(
        host=host, taken_at=start + timedelta(minutes=m, seconds=7),
        values={"uptime": 1000 + 60 * m, "arc": {"hits": 900 * m, "misses": 100 * m,
                                                 "size": 1000 + m},
                "clusters": {PG: {"xact_commit": 600 * m, "xact_rollback": 0}}})
        for m in range(minutes)])


def test_maintain_rolls_up_closed_buckets_and_prunes_only_rolled_up_raw_rows():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 3 * 60)
    now = start + timedelta(hours=3, minutes=6)  # rollups stay 5 minutes behind

    done = services.maintain(now)

    assert done.five_minute == 36 and done.hourly == 3 and done.pruned == 0
    assert len(_stored(host, "5m")) == 36
    later = start + timedelta(hours=48 + 2, minutes=32)  # raw cut-off: 02:30
    assert services.maintain(later).pruned == 2  # hours 00 and 01, each one chunk
    # Rolled-up hours of raw rows are chunks by now: the one the cut-off is in stays whole.
    kept = [at for _, rows in upkeep.samples(start, later) for at, _ in rows]
    assert kept == [start + timedelta(hours=2, minutes=m, seconds=7) for m in range(60)]
    assert len(_stored(host, "1h")) == 3


def test_a_long_window_reads_rollups_with_rates_across_buckets():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 6 * 60)
    now = start + timedelta(hours=6, minutes=6)
    services.maintain(now)
    window = (start, start + timedelta(days=3))

    arc = services.read(host, "arc_hit_rate", *window, now=now)
    tps = services.read(host, "tps", *window, now=now)
    size = services.read(host, "arc_size", *window, now=now)

    assert arc.resolution == "5m"
    ratios = [v for _, v in arc.series[0].points]
    assert len(ratios) == 71 and all(v == pytest.approx(0.9) for v in ratios)
    assert all(v == pytest.approx(10.0) for _, v in tps.series[0].points)
    assert size.series[0].points[0] == (start, pytest.approx(1002.0))
    yearly = services.read(host, "tps", start, start + timedelta(days=60), now=now)
    assert yearly.resolution == "1h" and len(yearly.series[0].points) == 5


def test_a_long_window_reaches_now_before_the_tick_has_rolled_the_last_hours_up():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 6 * 60)
    services.maintain(start + timedelta(hours=4, minutes=6))  # rolled up to 04:00 only
    now = start + timedelta(hours=6)

    hourly = services.read(host, "tps", start, start + timedelta(days=60), now=now)
    five = services.read(host, "arc_hit_rate", start, start + timedelta(days=3), now=now)

    assert hourly.resolution == "1h"
    assert [at for at, _ in hourly.series[0].points][-1] == start + timedelta(hours=5)
    assert all(v == pytest.approx(10.0) for _, v in hourly.series[0].points)
    assert five.resolution == "5m" and len(five.series[0].points) == 71
    assert all(v == pytest.approx(0.9) for _, v in five.series[0].points)


def test_a_counter_reset_inside_a_bucket_makes_that_point_unknown():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 30)
    RawSample.objects.filter(host=host, taken_at__gte=start + timedelta(minutes=12)).update(
        values={"arc": {"hits": 1, "misses": 1}})
    services.maintain(start + timedelta(hours=1))
    [arc] = services.read(host, "arc_hit_rate", start, start + timedelta(days=3),
                          now=start + timedelta(hours=1)).series
    values = [v for _, v in arc.points]
    assert values[0] == pytest.approx(0.9)
    assert values[1] is None  # hits went from 9900 to 1 inside [10, 15)
    assert values[2] is None  # nothing read since: no ratio, not 0 % or 100 %


def test_unknown_metric_and_backwards_window_are_refused():
    host = pinned()
    with pytest.raises(services.TelemetryError) as error:
        services.read(host, "load")
    assert "metric" in error.value.fields
    now = datetime(2026, 11, 20, tzinfo=UTC)
    with pytest.raises(services.TelemetryError):
        services.read(host, "tps", now, now - timedelta(hours=1))


def test_a_shell_that_fails_before_any_source_is_an_error_not_an_empty_sample(monkeypatch):
    host = pinned()

    def session(target, **_kwargs):
        def run(command, *, timeout, check):
            return Result(command="telemetry sample", exit_code=127, stdout="",
                          stderr="sh: 1: timeout: not found", duration=0.1)
        return run

    monkeypatch.setattr(services.ssh, "session", session)
    [taken] = services.collect_fleet()
    assert taken.sample is None and taken.code == "sample_failed"
    state = HostTelemetry.objects.get(host=host)
    assert "not found" in state.last_error and not RawSample.objects.exists()


@pytest.mark.parametrize(("start_ago", "end_ago", "expected"), [
    (timedelta(hours=48), timedelta(0), "raw"),
    (timedelta(hours=48, seconds=30), timedelta(seconds=30), "raw"),  # asked a moment ago
    (timedelta(hours=49), timedelta(hours=48, minutes=30), "5m"),  # raw rows are gone
    (timedelta(hours=83), timedelta(0), "5m"),  # 996 points
    (timedelta(days=7), timedelta(0), "1h"),  # 2,016 5-minute points would be too many
    (timedelta(days=30), timedelta(days=29), "5m"),
    (timedelta(days=31), timedelta(days=30), "1h"),  # 5-minute rollups are gone
])
def test_resolution_follows_how_far_back_the_window_reaches(start_ago, end_ago, expected):
    now = datetime(2026, 11, 23, 12, tzinfo=UTC)
    assert services.resolution_for(now - start_ago, now - end_ago, now,
                                   Retention()) == expected


def test_a_rollup_run_again_over_the_same_buckets_replaces_them():
    """A tick that died after saving rollups but before moving its mark repeats them."""
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 60)
    now = start + timedelta(hours=1, minutes=6)
    services.maintain(now)
    before = _rollups()
    RollupMark.objects.update(rolled_to=None)
    services.maintain(now)
    after = _rollups()
    assert after == before and len(after) == 12 + 1


def _rollups() -> list[tuple]:
    return [(resolution, host, bucket) for resolution in ("1h", "5m")
            for host, found in upkeep.buckets(resolution, datetime(2000, 1, 1, tzinfo=UTC),
                                              datetime(2100, 1, 1, tzinfo=UTC))
            for bucket in found]


def _stored(host: Host, resolution: str) -> list:
    """The host's stored buckets of `resolution`, whether in rows or in chunks."""
    return [bucket for r, pk, bucket in _rollups() if r == resolution and pk == host.pk]


def _bucket(host: Host, resolution: str, start: datetime):
    [found] = [b for b in _stored(host, resolution) if b.start == start]
    return found


def _arc_size(host: Host, resolution: str, start: datetime) -> tuple[float, float, int]:
    """The ARC size gauge's (min, max, count) in one stored bucket."""
    bucket = _bucket(host, resolution, start)
    i = bucket.layout.gauges.index(("arc", "size"))
    return bucket.g_min[i], bucket.g_max[i], bucket.g_count[i]


def test_a_tick_makes_only_the_buckets_closed_since_the_last_one_for_every_host():
    hosts = [pinned("db1"), pinned("db2")]
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    for host in hosts:
        HostTelemetry.objects.create(host=host)
        _minute_rows(host, start, 3 * 60)
    first = services.maintain(start + timedelta(hours=1, minutes=6))
    assert (first.five_minute, first.hourly) == (2 * 12, 2 * 1)
    # Two hours of ticks missed: the next one makes all of them, and none again.
    second = services.maintain(start + timedelta(hours=3, minutes=6))
    assert (second.five_minute, second.hourly) == (2 * 24, 2 * 2)
    assert sum(1 for r, _, _ in _rollups() if r == "5m") == 2 * 36
    assert RollupMark.objects.get(resolution="5m").rolled_to == start + timedelta(hours=3)
    again = services.maintain(start + timedelta(hours=3, minutes=7))
    assert (again.five_minute, again.hourly) == (0, 0)
    tps = services.read(hosts[1], "tps", start, start + timedelta(days=3),
                        now=start + timedelta(hours=3, minutes=7))
    assert len(tps.series[0].points) == 35 and all(
        v == pytest.approx(10.0) for _, v in tps.series[0].points)


def test_a_sample_arriving_after_its_bucket_was_made_has_the_bucket_made_again():
    host, other = pinned("db1"), pinned("db2")
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    for each in (host, other):
        HostTelemetry.objects.create(host=each)
        _minute_rows(each, start, 2 * 60)
    services.maintain(start + timedelta(hours=2, minutes=6))
    bucket, hour = start + timedelta(minutes=55), start
    assert _arc_size(host, "5m", bucket) == (1055.0, 1059.0, 5)  # one a minute
    untouched = _bucket(other, "5m", bucket)
    assert not Rollup.objects.filter(resolution="5m", start__lt=start + timedelta(hours=1)
                                     ).exists()  # in chunks
    # A sample of 00:59:30 written long after (a round that took far too long).
    RawSample.objects.create(host=host, taken_at=bucket + timedelta(minutes=4, seconds=30),
                             values={"arc": {"size": 5000}})

    done = services.maintain(start + timedelta(hours=2, minutes=11))

    assert (done.five_minute, done.hourly) == (1, 1)
    assert _arc_size(host, "5m", bucket) == (1055.0, 5000.0, 6)
    assert _arc_size(host, "1h", hour) == (1000.0, 5000.0, 61)
    assert _bucket(other, "5m", bucket) == untouched
    # Made again as rows, read over their chunks' buckets by the series API too.
    assert Rollup.objects.filter(host=host, start=bucket, resolution="5m").exists()
    size = services.read(host, "arc_size", start, start + timedelta(days=3),
                         now=start + timedelta(hours=2, minutes=11))
    assert dict(size.series[0].points)[bucket] == pytest.approx((1055 + 1059) * 2.5 / 6 +
                                                                 5000 / 6)
    assert services.maintain(start + timedelta(hours=2, minutes=16)).five_minute == 0


def test_rollups_written_as_json_before_packing_are_read_and_merged_as_before():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 60)
    services.maintain(start + timedelta(hours=1, minutes=6))
    packed = services.read(host, "arc_hit_rate", start, start + timedelta(days=3),
                           now=start + timedelta(hours=1, minutes=6))
    from apps.telemetry.core import packing

    for bucket in _stored(host, "5m"):  # as migration 0003 found them
        Rollup.objects.update_or_create(host=host, resolution="5m", start=bucket.start,
                                        defaults={"values": packing.values(bucket),
                                                  "data": None, "layout": None})
    Rollup.objects.filter(resolution="1h").delete()
    RollupChunk.objects.all().delete()
    RollupMark.objects.update(compacted_to=None)
    RollupMark.objects.filter(resolution="1h").update(rolled_to=None)
    assert services.maintain(start + timedelta(hours=1, minutes=6)).hourly == 1
    as_json = services.read(host, "arc_hit_rate", start, start + timedelta(days=3),
                            now=start + timedelta(hours=1, minutes=6))
    assert as_json.series == packed.series and len(packed.series[0].points) == 11
    assert _arc_size(host, "1h", start) == (1000.0, 1059.0, 60)


# -- chunks ---------------------------------------------------------------------------------

def _reads(host: Host, now: datetime) -> dict:
    """What the series API draws for 5-minute and hourly windows, every kind of metric."""
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    found = {}
    for metric in ("arc_hit_rate", "tps", "arc_size"):
        for end in (start + timedelta(days=3), start + timedelta(days=60)):
            reading = services.read(host, metric, start, end, now=now)
            found[metric, reading.resolution] = [(s.key, s.points) for s in reading.series]
    return found


def test_closed_spans_go_into_chunks_and_every_read_draws_the_same_points(monkeypatch):
    hosts = [pinned("db1"), pinned("db2")]
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    for host in hosts:
        HostTelemetry.objects.create(host=host)
        _minute_rows(host, start, 27 * 60)
    now = start + timedelta(hours=27, minutes=6)
    monkeypatch.setattr(upkeep, "compact", lambda mark, until, budget=None: 0)  # as before
    services.maintain(now)
    before = {host.pk: _reads(host, now) for host in hosts}
    stored = _rollups()
    assert not RollupChunk.objects.exists()
    monkeypatch.undo()

    services.maintain(now)  # a later tick: the rows of before are compacted

    assert _rollups() == stored
    assert {host.pk: _reads(host, now) for host in hosts} == before
    assert {(k, r) for k, r in before[hosts[0].pk]} == {
        (m, r) for m in ("arc_hit_rate", "tps", "arc_size") for r in ("5m", "1h")}
    # Hours 00:00-23:00 of 5-minute buckets (24, the most a tick does) and the day of
    # hourly ones in chunks; what is still open stays in rows.
    chunks = RollupChunk.objects.filter(host=hosts[0])
    assert chunks.filter(resolution="5m").count() == 24
    assert list(chunks.filter(resolution="1h").values_list("start", flat=True)) == [start]
    assert set(Rollup.objects.filter(host=hosts[0]).values_list("resolution", "start")) == {
        *(("5m", start + timedelta(hours=24, minutes=5 * n)) for n in range(36)),
        *(("1h", start + timedelta(hours=24 + n)) for n in range(3))}
    marks = dict(RollupMark.objects.values_list("resolution", "compacted_to"))
    assert marks["5m"] == start + timedelta(hours=24) and marks["1h"] == start + timedelta(days=1)


def test_a_tick_compacts_at_most_a_day_of_hours_so_an_upgrade_catches_up_over_ticks():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 27 * 60)
    now = start + timedelta(hours=27, minutes=6)
    services.maintain(now)
    assert RollupMark.objects.get(resolution="5m").compacted_to == start + timedelta(hours=24)
    services.maintain(now + timedelta(minutes=1))
    assert RollupMark.objects.get(resolution="5m").compacted_to == start + timedelta(hours=27)
    assert RollupChunk.objects.filter(resolution="5m").count() == 27
    assert not Rollup.objects.filter(resolution="5m", start__lt=start + timedelta(hours=27))


def test_chunks_are_pruned_whole_once_their_span_is_past_its_retention():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 27 * 60)
    services.maintain(start + timedelta(hours=27, minutes=6))

    upkeep.prune(start + timedelta(days=30, hours=2, minutes=30))  # 5-minute cut: 02:00

    assert _stored(host, "5m")[0].start == start + timedelta(hours=2)
    upkeep.prune(start + timedelta(days=400, hours=23))  # hourly cut 23:00: the day stays
    assert _stored(host, "1h")[0].start == start
    upkeep.prune(start + timedelta(days=401))
    assert _stored(host, "1h")[0].start == start + timedelta(days=1)


def test_the_tick_that_merged_an_hour_leaves_its_chunk_to_the_next_tick():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 2 * 60 + 10)
    assert services.maintain(start + timedelta(hours=2, minutes=6)).hourly == 2
    assert RollupMark.objects.get(resolution="5m").compacted_to == start + timedelta(hours=1)
    assert services.maintain(start + timedelta(hours=2, minutes=11)).hourly == 0
    assert RollupMark.objects.get(resolution="5m").compacted_to == start + timedelta(hours=2)
    assert RollupChunk.objects.filter(resolution="5m").count() == 2


def test_the_one_span_waiting_is_compacted_a_batch_a_tick(monkeypatch):
    hosts = [pinned(f"db{n}") for n in range(3)]
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    for host in hosts:
        HostTelemetry.objects.create(host=host)
        _minute_rows(host, start, 60 + 10)
    monkeypatch.setattr(upkeep, "_MIN_BATCH", 1)
    monkeypatch.setattr(upkeep, "_SLICES", {"5m": 3, "rw": 3, "1h": 3})  # a third a tick
    assert services.maintain(start + timedelta(hours=1, minutes=6)).hourly == 3
    done = [services.maintain(start + timedelta(hours=1, minutes=m)).compacted
            for m in (11, 16, 21, 26)]
    assert done == [1, 1, 1, 0]
    assert RollupChunk.objects.filter(resolution="5m").count() == 3


def test_a_day_of_hourly_buckets_is_compacted_in_smaller_batches_than_an_hour(monkeypatch):
    # The tick after midnight would otherwise pack a tenth of the fleet's day on top of
    # the hour's two batches: the day has the whole day's ticks to be packed in.
    hosts = [pinned(f"db{n}") for n in range(3)]
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    for host in hosts:
        HostTelemetry.objects.create(host=host)
        _minute_rows(host, start, 24 * 60 + 10)
    monkeypatch.setattr(upkeep, "_MIN_BATCH", 1)
    monkeypatch.setattr(upkeep, "_SLICES", {"5m": 1, "rw": 1, "1h": 3})
    services.maintain(start + timedelta(hours=24, minutes=6))  # the day's hours made
    hourly = [r for r in _rollups() if r[0] == "1h"]
    days = []
    for m in (11, 16, 21, 26):
        done = services.maintain(start + timedelta(hours=24, minutes=m))
        days.append((RollupChunk.objects.filter(resolution="1h").count(),
                     RollupChunk.objects.filter(resolution="5m", start=start + timedelta(
                         hours=23)).count()))
        assert done.hourly == 0
        assert [r for r in _rollups() if r[0] == "1h"] == hourly  # in a row or a chunk
    # The hour's 5-minute buckets in one batch (all three hosts), the day's a host a tick.
    assert days == [(1, 3), (2, 3), (3, 3), (3, 3)]
    assert not Rollup.objects.filter(resolution="1h", start__lt=start + timedelta(days=1))


def test_out_of_time_a_tick_stops_after_a_batch_of_hosts_and_the_next_goes_on(monkeypatch):
    hosts = [pinned(f"db{n}") for n in range(3)]
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    for host in hosts:
        HostTelemetry.objects.create(host=host)
        _minute_rows(host, start, 2 * 60)
    monkeypatch.setattr(upkeep, "compact", lambda mark, until, budget=None: 0)
    services.maintain(start + timedelta(hours=2, minutes=6))
    monkeypatch.undo()
    stored = _rollups()
    monkeypatch.setattr(upkeep, "_COMPACT_SHARE", -1)  # out of time before it starts
    monkeypatch.setattr(upkeep, "_MIN_BATCH", 1)
    marks = []
    for n in range(4):
        done = services.maintain(start + timedelta(hours=2, minutes=7 + n))
        mark = RollupMark.objects.get(resolution="5m")
        marks.append((done.compacted, mark.compacted_to - start, mark.compacted_host))
        assert _rollups() == stored  # every bucket readable, in a row or in a chunk
    hour = timedelta(hours=1)
    assert marks == [(1, 0 * hour, hosts[0].pk), (1, 0 * hour, hosts[1].pk),
                     (1, 1 * hour, 0), (1, 1 * hour, hosts[0].pk)]
    assert not Rollup.objects.filter(resolution="5m", start__lt=start + hour).exists()


# -- raw chunks -------------------------------------------------------------------------------

def _real_rows(host: Host, hours: int) -> None:
    """A real OpenZFS sample's rows a minute apart (ints and floats, now and then a value
    unknown, the pool gone a while, no cluster in some)."""
    from tests.telemetry.core.test_packing import _rows

    RawSample.objects.bulk_create([
        RawSample(host=host, taken_at=at, values={**values, "clusters": {}} if n % 9 == 0
                  else values, missing={"zfs": "gone"} if n == 5 else {})
        for n, (at, values) in enumerate(_rows(hours * 60))])


def _raw_reads(host: Host, now: datetime) -> dict:
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    found = {}
    for name in metrics.METRICS:
        for end in (start + timedelta(hours=1), now):
            reading = services.read(host, name, start, end, now=now)
            assert reading.resolution == "raw"
            found[name, end] = ([(s.key, s.points) for s in reading.series], reading.reason)
    return found


def _as_stored(host: Host | None = None) -> list[str]:
    """Every raw sample as the database gives it (values' keys in its order, types)."""
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    return [json.dumps([pk, at.isoformat(), values, missing])
            for pk, rows in upkeep.samples(start, start + timedelta(days=1), missing=True)
            for at, values, missing in rows if host is None or pk == host.pk]


def test_closed_hours_of_raw_rows_go_into_chunks_and_read_the_same(monkeypatch):
    hosts = [pinned("db1"), pinned("db2")]
    for host in hosts:
        HostTelemetry.objects.create(host=host)
        _real_rows(host, 4)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    now = start + timedelta(hours=4, minutes=6)
    monkeypatch.setattr(upkeep, "compact", lambda mark, until, budget=None: 0)
    services.maintain(now)
    before = {host.pk: _raw_reads(host, now) for host in hosts}
    stored, rollups = _as_stored(), _rollups()
    assert len(stored) == 2 * 240
    monkeypatch.undo()

    services.maintain(now + timedelta(minutes=1))

    # Hours 00-02 are chunks (the last one before the 5-minute mark stays rows).
    assert sorted(RawChunk.objects.filter(host=hosts[0]).values_list("start", flat=True)) == [
        start + timedelta(hours=h) for h in range(3)]
    assert not RawSample.objects.filter(taken_at__lt=start + timedelta(hours=3)).exists()
    assert _as_stored() == stored
    assert {host.pk: _raw_reads(host, now) for host in hosts} == before
    # Rolled up again from the chunks (a mark lost): the same buckets.
    RollupMark.objects.filter(resolution__in=["5m", "1h"]).update(rolled_to=None)
    services.maintain(now + timedelta(minutes=2))
    assert _rollups() == rollups


def test_a_raw_row_written_late_into_a_packed_hour_is_read_beside_the_chunk():
    host = pinned()
    HostTelemetry.objects.create(host=host)
    start = datetime(2026, 11, 20, 0, tzinfo=UTC)
    _minute_rows(host, start, 4 * 60)
    services.maintain(start + timedelta(hours=4, minutes=6))
    services.maintain(start + timedelta(hours=4, minutes=7))
    assert RawChunk.objects.filter(host=host, start=start).exists()
    late = start + timedelta(minutes=55, seconds=30)
    RawSample.objects.create(host=host, taken_at=late, values={"arc": {"size": 5000}})

    services.maintain(start + timedelta(hours=4, minutes=12))

    now = start + timedelta(hours=4, minutes=12)
    size = services.read(host, "arc_size", start, start + timedelta(hours=1), now=now)
    assert dict(size.series[0].points)[late] == 5000
    assert _arc_size(host, "5m", start + timedelta(minutes=55)) == (1055.0, 5000.0, 6)


def test_a_round_after_a_restart_records_what_one_with_memory_records(
        django_capture_on_commit_callbacks):
    """The sample before is read back without what no round uses of it (its datasets,
    memory, load): the second round's row and values are the same as when the
    process still had the whole sample in memory."""
    remembered, restarted = pinned("db1"), pinned("db2")
    spec = services.spec_of(remembered)
    shift = timezone.now() - captured(2)[1]
    services._previous.clear()
    for number in (1, 2):
        text, taken_at = captured(number)
        sample = parse_sample(text, spec, taken_at + shift)
        with django_capture_on_commit_callbacks(execute=True):  # kept in memory
            services.record(services.Taken(remembered.pk, sample, 0.2))
        services.record(services.Taken(restarted.pk, sample, 0.2))
        services._previous.pop(restarted.pk, None)  # read back from the database
    assert remembered.pk in services._previous and restarted.pk not in services._previous
    rows = [RawSample.objects.filter(host=h).order_by("taken_at").last().values
            for h in (remembered, restarted)]
    assert rows[0] == rows[1] and rows[0]["pools"]
    columns = ("arc_hit_rate", "tps", "capacity", "used", "space_saved", "recent")
    states = [HostTelemetry.objects.filter(host=h).values(*columns).get()
              for h in (remembered, restarted)]
    assert states[0] == states[1] and states[0]["tps"] > 0


def test_the_state_row_keeps_a_pool_s_last_committed_txg_not_its_whole_history():
    """A real OpenZFS host answers with dozens of txg rows a pool (zfs_txg_history,
    100 by default); the next round reads only the last committed one of them."""
    answers = captured_openzfs("2.3")
    host = pinned("db1", answers[0][2])
    spec = services.spec_of(host)
    shift = timezone.now() - answers[1][1]
    for text, taken_at, _ in answers:
        sample = parse_sample(text, spec, taken_at + shift)
        services.record(services.Taken(host.pk, sample, 0.2))
        services._previous.pop(host.pk, None)  # the second round reads it back
    assert len(sample.pools[0].txgs) > 10
    [pool] = HostTelemetry.objects.get(host=host).last_sample["pools"]
    assert [t["state"] for t in pool["txgs"]] == ["C"]
    newest = RawSample.objects.filter(host=host).order_by("taken_at").last().values
    assert newest["pools"]["tank"]["txg_synced"] > 0
