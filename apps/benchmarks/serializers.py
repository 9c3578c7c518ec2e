from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.benchmarks.core import commands
from apps.benchmarks.models import Benchmark, Validation
from apps.benchmarks.services import DEFAULTS, LIMITS
from apps.fleet.models import Host, PgCluster
from apps.ops.serializers import OperationSerializer


class ParametersSerializer(serializers.Serializer):
    """pgbench parameters; the limits are the service's (apps.benchmarks.services.LIMITS)."""

    database = StrictCharField(default=DEFAULTS["database"], max_length=63)
    scale = StrictIntegerField(default=DEFAULTS["scale"], min_value=LIMITS["scale"][0],
                                     max_value=LIMITS["scale"][1])
    init = StrictBooleanField(
        default=DEFAULTS["init"], help_text="Run pgbench -i -s SCALE first (drops the tables).")
    clients = StrictIntegerField(default=DEFAULTS["clients"],
                                       min_value=LIMITS["clients"][0],
                                       max_value=LIMITS["clients"][1])
    threads = StrictIntegerField(default=DEFAULTS["threads"], min_value=1,
                                       help_text="At most the number of clients.")
    duration = StrictIntegerField(default=DEFAULTS["duration"],
                                        min_value=LIMITS["duration"][0],
                                        max_value=LIMITS["duration"][1], help_text="Seconds.")
    mode = serializers.ChoiceField(choices=list(commands.MODES.items()), default=DEFAULTS["mode"])
    protocol = serializers.ChoiceField(choices=list(commands.PROTOCOLS.items()),
                                       default=DEFAULTS["protocol"])


class BenchmarkCreateSerializer(serializers.Serializer):
    host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all())
    cluster = StrictPrimaryKeyRelatedField(
        queryset=PgCluster.objects.all(), required=False, allow_null=True,
        help_text="Optional when the host has one cluster.")
    params = ParametersSerializer(required=False)
    profile_version_label = StrictCharField(required=False, allow_blank=True,
                                                  max_length=200)


class SeriesSerializer(serializers.Serializer):
    t = serializers.ListField(child=StrictFloatField(), help_text="Seconds since start.")
    tps = serializers.ListField(child=StrictFloatField())
    latency_ms = serializers.ListField(child=StrictFloatField(allow_null=True))
    dirty_bytes = serializers.ListField(child=StrictIntegerField(allow_null=True))
    writeback_bytes = serializers.ListField(child=StrictIntegerField(allow_null=True))


class StatementSerializer(serializers.Serializer):
    statement = StrictCharField()
    latency_ms = StrictFloatField()


class SummarySerializer(serializers.Serializer):
    tps = StrictFloatField(allow_null=True)
    latency_avg_ms = StrictFloatField(allow_null=True)
    latency_stddev_ms = StrictFloatField(allow_null=True)
    failed = StrictIntegerField(allow_null=True)
    transactions = StrictIntegerField(allow_null=True)
    clients = StrictIntegerField(allow_null=True)
    threads = StrictIntegerField(allow_null=True)
    duration_s = StrictIntegerField(allow_null=True)
    scale = StrictIntegerField(allow_null=True)
    per_statement = StatementSerializer(many=True)
    version = StrictCharField(allow_null=True)
    server_version = StrictCharField(allow_null=True)
    transaction_type = StrictCharField(allow_null=True)
    query_mode = StrictCharField(allow_null=True)
    connection_time_ms = StrictFloatField(allow_null=True)


class BenchmarkSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    # Null once the operator retired the cluster (data_dir and port stay).
    cluster = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    status = StrictCharField(read_only=True, help_text="The operation's status.")
    operation = OperationSerializer(read_only=True, allow_null=True)
    parameters = serializers.SerializerMethodField()
    summary = SummarySerializer(read_only=True, allow_null=True)
    series = SeriesSerializer(read_only=True)

    class Meta:
        model = Benchmark
        fields = ["id", "host", "cluster", "data_dir", "port", "server_version_num",
                  "database", "parameters", "status", "operation", "profile_version_label",
                  "summary", "series", "wal_bytes_before", "wal_bytes_after", "wal_source",
                  "wal_bytes_per_transaction", "created_at"]
        read_only_fields = fields

    @extend_schema_field(ParametersSerializer)
    def get_parameters(self, bench: Benchmark) -> dict:
        return {"database": bench.database, **bench.parameters}


class ValidationCreateSerializer(serializers.Serializer):
    before = StrictPrimaryKeyRelatedField(queryset=Benchmark.objects.all())
    after = StrictPrimaryKeyRelatedField(queryset=Benchmark.objects.all())
    label = StrictCharField(required=False, allow_blank=True, max_length=200)


class ValidationSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    before = BenchmarkSerializer(read_only=True)
    after = BenchmarkSerializer(read_only=True)
    tps_ratio = StrictFloatField(read_only=True, allow_null=True,
                                       help_text="after / before; above 1 is faster.")
    latency_ratio = StrictFloatField(read_only=True, allow_null=True,
                                           help_text="after / before; below 1 is quicker.")
    wal_per_tx_ratio = StrictFloatField(read_only=True, allow_null=True,
                                              help_text="after / before WAL bytes per "
                                                        "transaction.")
    same_workload = StrictBooleanField(read_only=True)

    class Meta:
        model = Validation
        fields = ["id", "host", "label", "before", "after", "tps_ratio", "latency_ratio",
                  "wal_per_tx_ratio", "same_workload", "created_at"]
        read_only_fields = fields
