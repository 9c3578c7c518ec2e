from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.fleet.models import Host
from apps.ops.serializers import OperationSerializer
from apps.rollouts.models import Rollout, RolloutHost
from apps.tuning.models import Profile


class RolloutCreateSerializer(serializers.Serializer):
    profile = StrictPrimaryKeyRelatedField(queryset=Profile.objects.all())
    version = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=2**31 - 1,
                                 help_text="The profile's version number; its newest if left out.")
    hosts = serializers.ListField(child=StrictPrimaryKeyRelatedField(queryset=Host.objects.all()),
                                  allow_empty=False, max_length=1000,
                                  help_text="Host ids, in the order their waves take them.")
    wave_size = StrictIntegerField(min_value=1, max_value=1000,
                                   help_text="Hosts per wave after the canary.")
    canary = StrictPrimaryKeyRelatedField(queryset=Host.objects.all(), required=False,
                                          allow_null=True,
                                          help_text="One of the hosts; the first if left out.")
    validation = serializers.ChoiceField(choices=Rollout.Validation.choices, required=False,
                                         default=Rollout.Validation.HEALTH)
    pgbench_seconds = StrictIntegerField(required=False, default=10, min_value=1, max_value=600,
                                         help_text="pgbench validation: seconds per run.")
    max_tps_drop_percent = StrictIntegerField(
        required=False, default=10, min_value=0, max_value=100,
        help_text="pgbench validation: how far TPS may fall after the apply, in percent.")
    rollback_earlier_waves = StrictBooleanField(required=False, default=False)
    allow_restart = StrictBooleanField(required=False, default=False)
    acknowledge = serializers.ListField(child=StrictCharField(max_length=64), required=False,
                                        default=list, max_length=20,
                                        help_text="Acknowledgements the plans may need.")


class RolloutHostSerializer(ModelSerializer):
    host = StrictPrimaryKeyRelatedField(read_only=True)
    host_name = serializers.CharField(source="host.name", read_only=True)
    plan = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    rollback_plan = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    operation = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    bench_before = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)
    bench_after = StrictPrimaryKeyRelatedField(read_only=True, allow_null=True)

    class Meta:
        model = RolloutHost
        fields = ["host", "host_name", "wave", "state", "reason", "plan", "rollback_plan",
                  "bench_before", "bench_after", "operation", "updated_at"]
        read_only_fields = fields


class RolloutSerializer(ModelSerializer):
    profile = serializers.IntegerField(source="profile_version.profile_id", read_only=True)
    version = serializers.IntegerField(source="profile_version.number", read_only=True)
    status = serializers.ChoiceField(source="outcome", choices=Rollout.Status.choices,
                                     read_only=True)
    paused = serializers.BooleanField(read_only=True)
    hosts = RolloutHostSerializer(many=True, read_only=True)
    operation = OperationSerializer(read_only=True, allow_null=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True,
                                              allow_null=True)

    class Meta:
        model = Rollout
        fields = ["id", "profile", "version", "status", "paused", "wave", "waves", "wave_size",
                  "validation", "pgbench_seconds", "max_tps_drop_percent",
                  "rollback_earlier_waves", "allow_restart", "acknowledged",
                  "stop_reason", "hosts", "operation", "created_by", "created_at",
                  "finished_at"]
        read_only_fields = fields
