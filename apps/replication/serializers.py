"""The links as the API shows and takes them.

A link is made and changed through apps.replication.services, which checks
every value against the pure core and the inventory; these serializers only
take each value in its JSON type and range (the schema documents them), and
never show the link's private key.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.fleet.models import Host
from apps.replication import services
from apps.replication.core import lag as core_lag
from apps.replication.core.link import LINK_NAME_MAX, MAX_BANDWIDTH, MIN_BANDWIDTH
from apps.replication.models import ReplicationLink
from apps.snapshots.core.policy import MAX_COUNT, Period

LAG_MINUTES = (int(core_lag.MIN_THRESHOLD.total_seconds() // 60),
               int(core_lag.MAX_THRESHOLD.total_seconds() // 60))


class LagSerializer(serializers.Serializer):
    seconds = serializers.IntegerField(allow_null=True, help_text="How old the newest "
                                       "received snapshot is; null: nothing received yet.")
    newest = serializers.CharField(allow_null=True, help_text="The newest received "
                                   "snapshot (the part after '@'), or null.")
    alert = serializers.BooleanField(help_text="Over the link's lag threshold.")
    text = serializers.CharField(help_text="The lag in words, as the UI shows it.")


class ChoiceSerializer(serializers.Serializer):
    flag = serializers.CharField(help_text="-w, -c or -L.")
    on = serializers.BooleanField(allow_null=True, help_text="null: decided at each run "
                                  "(-w, before a run has read the dataset's encryption).")
    why = serializers.CharField()


class StreamSerializer(serializers.Serializer):
    """One source dataset's stream flags, as the link's runs choose them."""

    source = serializers.CharField(help_text="The source dataset.")
    flags = serializers.ListField(child=serializers.CharField(),
                                  help_text="What zfs send is given: [\"-w\"] (raw, implies "
                                            "-c and -L), or some of -c and -L.")
    raw = serializers.BooleanField()
    compressed = serializers.BooleanField()
    large_blocks = serializers.BooleanField()
    choices = ChoiceSerializer(many=True, help_text="Each flag, on or off, and why.")
    refusal = serializers.CharField(help_text="Why this dataset cannot be sent; empty when "
                                              "it can.")
    text = serializers.CharField(help_text="All of it in words, as the run's log says it.")

    @staticmethod
    def of(source: str, stream) -> dict:
        return {"source": source, "flags": list(stream.flags), "raw": stream.raw,
                "compressed": stream.compressed, "large_blocks": stream.large_blocks,
                "choices": [{"flag": c.flag, "on": c.on, "why": c.why}
                            for c in stream.choices],
                "refusal": stream.refusal, "text": stream.text}


class SettingsSerializer(serializers.Serializer):
    """What may change once a link exists (every field optional)."""

    mode = serializers.ChoiceField(choices=ReplicationLink.Mode.choices, required=False,
                                   help_text="-I: every snapshot between the common one and "
                                             "the newest arrives; -i: the newest only.")
    interval_minutes = StrictIntegerField(
        required=False, min_value=0, max_value=services.MAX_INTERVAL_MINUTES,
        help_text="Run every N minutes; 0: only on demand or after a policy snapshot.")
    after_policy = StrictBooleanField(required=False,
                                      help_text="Run after each policy snapshot of the source.")
    keep_frequently = StrictIntegerField(required=False, min_value=0,
                                         max_value=MAX_COUNT[Period.FREQUENTLY])
    keep_hourly = StrictIntegerField(required=False, min_value=0,
                                     max_value=MAX_COUNT[Period.HOURLY])
    keep_daily = StrictIntegerField(required=False, min_value=0,
                                    max_value=MAX_COUNT[Period.DAILY])
    keep_weekly = StrictIntegerField(required=False, min_value=0,
                                     max_value=MAX_COUNT[Period.WEEKLY])
    keep_monthly = StrictIntegerField(required=False, min_value=0,
                                      max_value=MAX_COUNT[Period.MONTHLY])
    bandwidth_limit = StrictIntegerField(
        required=False, allow_null=True, min_value=MIN_BANDWIDTH, max_value=MAX_BANDWIDTH,
        help_text="Bytes per second (64 KiB/s to 100 GiB/s); null: unlimited.")
    lag_threshold_minutes = StrictIntegerField(
        required=False, min_value=LAG_MINUTES[0], max_value=LAG_MINUTES[1],
        help_text="Alert when the newest received snapshot is older than this.")
    compressed_streams = StrictBooleanField(
        required=False, help_text="Send compressed streams (zfs send -c) where both hosts "
                                  "take them (default); false: blocks are decompressed to "
                                  "send and the target compresses them by its own setting.")
    large_block_streams = StrictBooleanField(
        required=False, help_text="Send large-block streams (zfs send -L) where both hosts "
                                  "take them (default); false: records over 128K are split "
                                  "into 128K blocks. Fixed once the link has sent (409).")


class LinkCreateSerializer(SettingsSerializer):
    """A new link: a cluster (by its data directory) or one dataset of the source host,
    received under `target_parent` on the target host. The keep counts are the target's
    own retention; all 0 keeps everything received."""

    name = StrictCharField(max_length=LINK_NAME_MAX,
                           help_text="a-z 0-9 _ -: the link's identity on the hosts (its hold "
                                     "tag and key comment); cannot change.")
    source_host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all())
    cluster_data_dir = StrictCharField(
        required=False, allow_blank=True, default="", max_length=1024,
        help_text="A PostgreSQL cluster of the source host by its data directory: its data "
                  "and WAL datasets are sent together.")
    dataset = StrictCharField(required=False, allow_blank=True, default="", max_length=255,
                              help_text="Or one dataset of the source host.")
    target_host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all())
    target_parent = StrictCharField(max_length=255,
                                    help_text="The dataset on the target host to receive "
                                              "under, e.g. backup/db1.")


class ReplicationLinkSerializer(ModelSerializer):
    """A link as it stands: its settings, and what its last run found."""

    source_host = StrictPrimaryKeyRelatedField(read_only=True)
    target_host = StrictPrimaryKeyRelatedField(read_only=True)
    source_host_name = serializers.CharField(source="source_host.name", read_only=True)
    target_host_name = serializers.CharField(source="target_host.name", read_only=True)
    sources = serializers.ListField(child=serializers.CharField(), read_only=True,
                                    help_text="The source datasets, fixed at creation.")
    bandwidth_limit = serializers.IntegerField(read_only=True, allow_null=True,
                                               help_text="Bytes per second; null: unlimited.")
    rollback_opted_in_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True,
        help_text="Who allowed rolling a diverged target back.")
    last_operation = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    last_transfer = serializers.JSONField(
        read_only=True, help_text="action, snapshot, bytes, seconds of the last transfer; "
                                  "empty before the first.")
    archive = serializers.CharField(read_only=True, help_text=(
        "The source cluster's WAL archive the link carries (while PoZoL archives it); "
        "empty: none."))
    archive_snapshot = serializers.CharField(read_only=True, help_text=(
        "The archive's newest snapshot on the target, which a replay there clones."))
    archive_window = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()), read_only=True,
        help_text="The moments a restore drill on the target can replay to, as the last run "
                  "found them: [[since, until]] in epoch seconds.")
    lag = serializers.SerializerMethodField()
    running_operation = serializers.SerializerMethodField()

    class Meta:
        model = ReplicationLink
        fields = ["id", "name", "source_host", "source_host_name", "cluster_data_dir",
                  "sources", "target_host", "target_host_name", "target_parent", "mode",
                  "interval_minutes", "after_policy", *ReplicationLink.KEEP_COUNTS,
                  "bandwidth_limit", "lag_threshold_minutes", "compressed_streams",
                  "large_block_streams", "large_blocks_sent", "paused", "rollback_opt_in",
                  "rollback_opted_in_by", "rollback_opted_in_at", "public_key", "state",
                  "last_error", "last_run_at", "last_success_at", "last_operation",
                  "last_transfer", "common_snapshot", "newest_received",
                  "newest_received_at", "archive", "archive_snapshot", "archive_window",
                  "lag", "running_operation", "created_at", "updated_at"]
        read_only_fields = fields

    @extend_schema_field(LagSerializer)
    def get_lag(self, link: ReplicationLink) -> dict:
        lag = services.lag_of(link)
        seconds = int(lag.lag.total_seconds()) if lag.lag is not None else None
        return {"seconds": seconds, "newest": lag.newest, "alert": lag.alert,
                "text": lag.text}

    @extend_schema_field(serializers.IntegerField(allow_null=True, help_text=(
        "The id of the link's run in progress, or null.")))
    def get_running_operation(self, link: ReplicationLink) -> int | None:
        if hasattr(link, "running_operation_id"):  # annotated by queries.for_table()
            return link.running_operation_id
        running = services.active_run(link)
        return running.pk if running else None
