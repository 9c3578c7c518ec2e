from rest_framework import serializers

from apps.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.ops.serializers import OperationSerializer
from apps.tuning.models import Profile


class ClusterCreateSerializer(serializers.Serializer):
    major = StrictIntegerField(min_value=9, max_value=99,
                               help_text="A PostgreSQL major the host has (discovery).")
    name = StrictCharField(max_length=31, help_text="a-z 0-9 _, starting with a letter: the "
                                                    "parent dataset <pool>/postgres/<name>.")
    port = StrictIntegerField(required=False, min_value=1024, max_value=65535,
                              help_text="Empty: the next free one from 5432.")
    pool = StrictCharField(required=False, max_length=255,
                           help_text="Empty: the pool with the most free space.")
    profile = StrictPrimaryKeyRelatedField(
        queryset=Profile.objects.filter(archived_at=None), required=False,
        help_text="Its datasets' properties and settings; empty: the references' layout "
                  "(16K/128K records, lz4, atime off, logbias latency), stock settings.")


class DatasetPlanSerializer(serializers.Serializer):
    name = serializers.CharField()
    role = serializers.CharField()
    properties = serializers.DictField(child=serializers.CharField())
    mountpoint = serializers.CharField(allow_null=True)


class ClusterPlanSerializer(serializers.Serializer):
    name = serializers.CharField()
    major = serializers.IntegerField()
    port = serializers.IntegerField()
    owner = serializers.CharField()
    bin_dir = serializers.CharField()
    pool = serializers.CharField()
    parent = serializers.CharField()
    datasets = DatasetPlanSerializer(many=True)
    data_dir = serializers.CharField(allow_null=True)
    wal_dir = serializers.CharField(allow_null=True)
    socket_dir = serializers.CharField()
    settings = serializers.DictField(child=serializers.CharField())
    profile = serializers.CharField(allow_null=True)
    notes = serializers.ListField(child=serializers.CharField())
    packaged = serializers.BooleanField(
        help_text="Made by pg_createcluster as <major>/<name> (the host runs postgresql-"
                  "common's clusters), else by initdb.")
    unit = serializers.CharField(allow_null=True,
                                 help_text="The systemd unit that starts it, if any.")
    initdb = serializers.ListField(child=serializers.CharField(),
                                   help_text="initdb's or pg_createcluster's command.")
    start = serializers.CharField()
    snapshot = serializers.CharField()


class ClusterCreatedSerializer(serializers.Serializer):
    plan = ClusterPlanSerializer()
    operation = OperationSerializer()


class RetireClusterSerializer(serializers.Serializer):
    cluster = StrictIntegerField(min_value=1, max_value=2**63 - 1,
                                 help_text="The id of one of this host's clusters.")
    stop = StrictBooleanField(required=False, default=False,
                              help_text="Stop it first (else a running cluster is refused).")
    datasets = serializers.ChoiceField(
        choices=["keep", "destroy"], required=False, default="keep",
        help_text="destroy: its datasets (the parent when data and WAL are its only "
                  "children) with their snapshots.")
    final_snapshot = StrictBooleanField(required=False, default=False,
                                        help_text="Snapshot its datasets once stopped "
                                                  "(with datasets=keep).")
