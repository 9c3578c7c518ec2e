"""Telemetry per host: the collector's state, raw samples and their rollups.

A raw row is one sample in apps.telemetry.core.series' stored form (counters
raw, pools, datasets and clusters keyed by name), read back by source with
`values -> 'arc'` so a 48-hour graph reads 2,880 small values through the
(host, taken_at) index. A rollup is one row per host, bucket and resolution
while its span is open, packed (apps.telemetry.core.packing: its `Layout` of
paths stored once, its numbers a deflated bytea of about 1.3 KB instead of 9 KB
of JSON), then one `RollupChunk` per host and span (apps.telemetry.upkeep's
compaction: about 770 bytes a bucket); rows written before packing keep their
JSON `values` and are read as they were. Raw rows of an hour an hour behind the
rollups become one `RawChunk` per host (apps.telemetry.core.rawpack).
"""

from __future__ import annotations

from django.db import models

from apps.fleet.models import Host


class HostTelemetry(models.Model):
    """What the collector knows of one host between samples."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, primary_key=True,
                                related_name="telemetry")
    # The last Sample as Sample.to_dict() spells it, each pool's txg history cut to
    # its last committed txg (rates.as_before): the next sample's rates, and the
    # current values a page shows.
    last_sample = models.JSONField(null=True, blank=True)
    last_sample_at = models.DateTimeField(null=True, blank=True)
    last_duration = models.FloatField(null=True, blank=True)  # seconds, the round trip
    # What the spec left out (hostile or unknown names), in words.
    skipped = models.JSONField(default=list, blank=True)
    last_error = models.TextField(blank=True)
    last_error_code = models.CharField(max_length=64, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # The host's values now (apps.telemetry.core.current), written with each sample
    # so the fleet overview reads and sorts every host's in its one query.
    arc_hit_rate = models.FloatField(null=True, blank=True)  # 0..1, last interval
    tps = models.FloatField(null=True, blank=True)  # all clusters
    capacity = models.PositiveSmallIntegerField(null=True, blank=True)  # fullest pool, %
    used = models.BigIntegerField(null=True, blank=True)  # pools' root datasets, bytes
    space_saved = models.BigIntegerField(null=True, blank=True)  # by compression, bytes
    cache_hit_rate = models.FloatField(null=True, blank=True)  # 0..1, worst cluster
    recent = models.JSONField(default=dict, blank=True)  # the last hour, for sparklines

    def __str__(self) -> str:
        return f"telemetry of host #{self.host_id}"


class RawSample(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    taken_at = models.DateTimeField()
    values = models.JSONField()
    missing = models.JSONField(default=dict, blank=True)  # source -> why it has no value

    class Meta:
        indexes = [
            models.Index(fields=["host", "taken_at"], name="telemetry_raw_host_time"),
            models.Index(fields=["taken_at"], name="telemetry_raw_time"),  # pruning
        ]

    def __str__(self) -> str:
        return f"sample of host #{self.host_id} at {self.taken_at:%Y-%m-%d %H:%M:%S}"


class RawChunk(models.Model):
    """One host's raw rows of a closed UTC hour, packed together
    (apps.telemetry.core.rawpack), `start` the hour's. A RawSample row of the hour
    (one written late) is read beside it."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    start = models.DateTimeField()
    layout = models.ForeignKey("Layout", on_delete=models.PROTECT, related_name="+")
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "start"],
                                               name="telemetry_rawchunk_once")]
        indexes = [models.Index(fields=["start"], name="telemetry_rawchunk_time")]

    def __str__(self) -> str:
        return f"raw samples of host #{self.host_id} from {self.start:%Y-%m-%d %H:%M}"


class Layout(models.Model):
    """The paths a packed rollup holds (apps.telemetry.core.packing.Layout.to_json),
    shared by every bucket of the same shape."""

    digest = models.CharField(max_length=64, unique=True)
    paths = models.JSONField()

    def __str__(self) -> str:
        return f"layout #{self.pk}"


class RollupMark(models.Model):
    """How far the rollup tick has gone at one resolution, for the whole fleet: buckets
    starting before `rolled_to` are made. `raw_id` is the highest source row id (raw
    samples for 5-minute buckets) the tick had seen, so a row that arrives later
    for a bucket already made has that bucket made again."""

    resolution = models.CharField(max_length=2, primary_key=True)
    rolled_to = models.DateTimeField(null=True, blank=True)
    raw_id = models.BigIntegerField(default=0)
    # Buckets starting before this are in RollupChunk rows (those made again later
    # for late rows excepted), and those of the span from it of hosts up to
    # `compacted_host`: apps.telemetry.upkeep's compaction.
    compacted_to = models.DateTimeField(null=True, blank=True)
    compacted_host = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.resolution} rolled up to {self.rolled_to}"


class Rollup(models.Model):
    class Resolution(models.TextChoices):
        FIVE_MINUTE = "5m", "5 minutes"
        HOURLY = "1h", "1 hour"

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    resolution = models.CharField(max_length=2, choices=Resolution)
    start = models.DateTimeField()
    values = models.JSONField(null=True, blank=True)  # rows written before packing
    layout = models.ForeignKey(Layout, on_delete=models.PROTECT, null=True, blank=True,
                               related_name="+")
    data = models.BinaryField(null=True, blank=True)  # apps.telemetry.core.packing.pack

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "resolution", "start"],
                                               name="telemetry_rollup_once")]
        indexes = [models.Index(fields=["resolution", "start"], name="telemetry_rollup_time")]

    def __str__(self) -> str:
        return f"{self.resolution} rollup of host #{self.host_id} at {self.start:%Y-%m-%d %H:%M}"


class RollupChunk(models.Model):
    """One host's buckets of one resolution over a whole span, packed together
    (apps.telemetry.core.packing.pack_chunk): 5-minute buckets by the hour, hourly
    ones by the day (UTC), `start` the span's. A Rollup row of the same host,
    resolution and bucket start (a bucket made again for a late sample) is newer
    and is read instead of the chunk's bucket."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    resolution = models.CharField(max_length=2, choices=Rollup.Resolution)
    start = models.DateTimeField()
    layout = models.ForeignKey(Layout, on_delete=models.PROTECT, related_name="+")
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "resolution", "start"],
                                               name="telemetry_chunk_once")]
        indexes = [models.Index(fields=["resolution", "start"], name="telemetry_chunk_time")]

    def __str__(self) -> str:
        return f"{self.resolution} chunk of host #{self.host_id} from {self.start:%Y-%m-%d %H:%M}"
