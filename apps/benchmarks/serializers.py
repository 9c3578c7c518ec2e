from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.benchmarks import commands
from apps.benchmarks.models import Benchmark, Validation
from apps.benchmarks.services import DEFAULTS, LIMITS
from apps.fleet.models import Host, PgCluster
from apps.ops.serializers import OperationSerializer


class ParametersSerializer(serializers.Serializer):
    """pgbench parameters; the limits are the service's (apps.benchmarks.services.LIMITS)."""

    database = serializers.CharField(default=DEFAULTS["database"], max_length=63)
    scale = serializers.IntegerField(default=DEFAULTS["scale"], min_value=LIMITS["scale"][0],
                                     max_value=LIMITS["scale"][1])
    init = serializers.BooleanField(
        default=DEFAULTS["init"], help_text="Run pgbench -i -s SCALE first (drops the tables).")
    clients = serializers.IntegerField(default=DEFAULTS["clients"],
                                       min_value=LIMITS["clients"][0],
                                       max_value=LIMITS["clients"][1])
    threads = serializers.IntegerField(default=DEFAULTS["threads"], min_value=1,
                                       help_text="At most the number of clients.")
    duration = serializers.IntegerField(default=DEFAULTS["duration"],
                                        min_value=LIMITS["duration"][0],
                                        max_value=LIMITS["duration"][1], help_text="Seconds.")
    mode = serializers.ChoiceField(choices=commands.MODES, default=DEFAULTS["mode"])
    protocol = serializers.ChoiceField(choices=commands.PROTOCOLS, default=DEFAULTS["protocol"])


class BenchmarkCreateSerializer(serializers.Serializer):
    host = serializers.PrimaryKeyRelatedField(queryset=Host.objects.all())
    cluster = serializers.PrimaryKeyRelatedField(
        queryset=PgCluster.objects.all(), required=False, allow_null=True,
        help_text="Optional when the host has one cluster.")
    params = ParametersSerializer(required=False)
    profile_version_label = serializers.CharField(required=False, allow_blank=True,
                                                  max_length=200)


class SeriesSerializer(serializers.Serializer):
    t = serializers.ListField(child=serializers.FloatField(), help_text="Seconds since start.")
    tps = serializers.ListField(child=serializers.FloatField())
    latency_ms = serializers.ListField(child=serializers.FloatField(allow_null=True))
    dirty_bytes = serializers.ListField(child=serializers.IntegerField(allow_null=True))
    writeback_bytes = serializers.ListField(child=serializers.IntegerField(allow_null=True))


class StatementSerializer(serializers.Serializer):
    statement = serializers.CharField()
    latency_ms = serializers.FloatField()


class SummarySerializer(serializers.Serializer):
    tps = serializers.FloatField(allow_null=True)
    latency_avg_ms = serializers.FloatField(allow_null=True)
    latency_stddev_ms = serializers.FloatField(allow_null=True)
    failed = serializers.IntegerField(allow_null=True)
    transactions = serializers.IntegerField(allow_null=True)
    clients = serializers.IntegerField(allow_null=True)
    threads = serializers.IntegerField(allow_null=True)
    duration_s = serializers.IntegerField(allow_null=True)
    scale = serializers.IntegerField(allow_null=True)
    per_statement = StatementSerializer(many=True)
    version = serializers.CharField(allow_null=True)
    server_version = serializers.CharField(allow_null=True)
    transaction_type = serializers.CharField(allow_null=True)
    query_mode = serializers.CharField(allow_null=True)
    connection_time_ms = serializers.FloatField(allow_null=True)


class BenchmarkSerializer(serializers.ModelSerializer):
    host = serializers.PrimaryKeyRelatedField(read_only=True)
    cluster = serializers.PrimaryKeyRelatedField(read_only=True)
    status = serializers.CharField(read_only=True, help_text="The operation's status.")
    operation = OperationSerializer(read_only=True)
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
    before = serializers.PrimaryKeyRelatedField(queryset=Benchmark.objects.all())
    after = serializers.PrimaryKeyRelatedField(queryset=Benchmark.objects.all())
    label = serializers.CharField(required=False, allow_blank=True, max_length=200)


class ValidationSerializer(serializers.ModelSerializer):
    host = serializers.PrimaryKeyRelatedField(read_only=True)
    before = BenchmarkSerializer(read_only=True)
    after = BenchmarkSerializer(read_only=True)
    tps_ratio = serializers.FloatField(read_only=True, allow_null=True,
                                       help_text="after / before; above 1 is faster.")
    latency_ratio = serializers.FloatField(read_only=True, allow_null=True,
                                           help_text="after / before; below 1 is quicker.")
    wal_per_tx_ratio = serializers.FloatField(read_only=True, allow_null=True,
                                              help_text="after / before WAL bytes per "
                                                        "transaction.")
    same_workload = serializers.BooleanField(read_only=True)

    class Meta:
        model = Validation
        fields = ["id", "host", "label", "before", "after", "tps_ratio", "latency_ratio",
                  "wal_per_tx_ratio", "same_workload", "created_at"]
        read_only_fields = fields
