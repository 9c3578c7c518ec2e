from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.experiments import services
from apps.experiments.models import Experiment, Run, Script, ScriptVersion
from apps.fleet.models import Host, PgCluster
from apps.ops.serializers import OperationSerializer


class WorkloadSerializer(serializers.Serializer):
    """pgbench for every run; limits are the service's (apps.experiments.services.LIMITS)."""

    database = StrictCharField(required=False, max_length=63)
    scale = StrictIntegerField(required=False)
    clients = StrictIntegerField(required=False)
    threads = StrictIntegerField(required=False)
    duration = StrictIntegerField(required=False, help_text="Seconds per run.")
    protocol = StrictCharField(required=False)
    mode = StrictCharField(required=False)
    reinit = StrictBooleanField(required=False,
                                help_text="pgbench -i before every run (new data for every "
                                          "value: recordsize and compression need it).")
    checkpoint_every = StrictIntegerField(required=False,
                                          help_text="Force a CHECKPOINT every N seconds "
                                                    "during every run; 0: none.")


class HeldSerializer(serializers.Serializer):
    layer = StrictCharField()
    key = StrictCharField(max_length=128)
    value = StrictCharField(max_length=1024, allow_blank=True)
    role = StrictCharField(required=False, help_text="data or wal, for a ZFS property.")


class ExperimentCreateSerializer(serializers.Serializer):
    host = StrictPrimaryKeyRelatedField(queryset=Host.objects.all())
    cluster = StrictPrimaryKeyRelatedField(queryset=PgCluster.objects.all(), required=False,
                                           allow_null=True)
    template = StrictCharField(required=False, allow_blank=True,
                               help_text="A built-in template's slug: its defaults apply.")
    title = StrictCharField(required=False, max_length=200)
    layer = StrictCharField(required=False)
    key = StrictCharField(required=False, max_length=128)
    target_role = StrictCharField(required=False, help_text="data or wal (ZFS properties).")
    values = serializers.ListField(child=StrictCharField(max_length=1024, allow_blank=True),
                                   required=False)
    repetitions = StrictIntegerField(required=False)
    workload = WorkloadSerializer(required=False)
    held = HeldSerializer(many=True, required=False)
    script = StrictCharField(required=False, allow_blank=True, help_text="A script's slug.")
    primary_metric = StrictCharField(required=False)
    acknowledged = StrictBooleanField(required=False)


class TemplateSerializer(serializers.Serializer):
    """A built-in template (apps.experiments.core.templates), with the figure it reproduces."""

    slug = StrictCharField()
    title = StrictCharField()
    layer = StrictCharField()
    key = StrictCharField()
    values = serializers.ListField(child=StrictCharField())
    primary_metric = StrictCharField()
    target_role = StrictCharField(allow_blank=True)
    workload = serializers.DictField()
    held = serializers.ListField(child=serializers.DictField())
    script = StrictCharField(allow_blank=True)
    acknowledge = StrictCharField(allow_blank=True)
    citation = StrictCharField()
    published = StrictCharField()
    note = StrictCharField(allow_blank=True)


class RunSerializer(ModelSerializer):
    class Meta:
        model = Run
        fields = ["position", "value", "repetition", "tps", "latency_ms", "transactions",
                  "wal_before", "wal_after", "wal_per_tx", "checkpoints", "compressratio",
                  "drain_seconds", "dirty_bytes_at_end", "started_at", "ended_at"]
        read_only_fields = fields


class ExperimentSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    cluster = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    status = StrictCharField(read_only=True)
    operation = OperationSerializer(read_only=True, allow_null=True)
    runs = RunSerializer(many=True, read_only=True)
    results = serializers.SerializerMethodField()
    script_version = serializers.SerializerMethodField()

    class Meta:
        model = Experiment
        fields = ["id", "host", "cluster", "data_dir", "data_dataset", "template", "title",
                  "citation", "layer", "key", "target", "values", "repetitions", "workload",
                  "held", "script_version", "primary_metric", "acknowledged", "original",
                  "restored", "status", "operation", "runs", "results", "created_at"]
        read_only_fields = fields

    def get_results(self, exp: Experiment) -> dict:
        return services.results(exp)

    def get_script_version(self, exp: Experiment) -> str | None:
        return str(exp.script_version) if exp.script_version_id else None


class ScriptVersionSerializer(ModelSerializer):
    class Meta:
        model = ScriptVersion
        fields = ["number", "text", "setup", "note", "created_at"]
        read_only_fields = fields


class ScriptSerializer(ModelSerializer):
    versions = ScriptVersionSerializer(many=True, read_only=True)

    class Meta:
        model = Script
        fields = ["id", "name", "slug", "description", "builtin", "versions", "created_at"]
        read_only_fields = fields


class ScriptCreateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100)
    text = StrictCharField(max_length=70000, trim_whitespace=False)
    setup = StrictCharField(required=False, allow_blank=True, max_length=70000,
                            trim_whitespace=False)
    description = StrictCharField(required=False, allow_blank=True, max_length=2000)


class ScriptVersionCreateSerializer(serializers.Serializer):
    text = StrictCharField(max_length=70000, trim_whitespace=False)
    setup = StrictCharField(required=False, allow_blank=True, max_length=70000,
                            trim_whitespace=False)
    note = StrictCharField(required=False, allow_blank=True, max_length=300)
