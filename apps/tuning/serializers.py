from rest_framework import serializers

from apps.ops.serializers import OperationSerializer
from apps.tuning.models import Assignment, Plan, PlanChange, Profile, ProfileVersion


class ProfileVersionSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ProfileVersion
        fields = ["id", "number", "settings", "citations", "note", "created_at", "created_by"]
        read_only_fields = fields


class ProfileSerializer(serializers.ModelSerializer):
    current = ProfileVersionSerializer(read_only=True)
    settings = serializers.JSONField(write_only=True, help_text=(
        '{"zfs": {"data": {"recordsize": "16K"}, "wal": {...}, "other": {...}}, '
        '"module": {...}, "sysctl": {...}, "postgres": {"shared_buffers": "ram / 4"}, '
        '"requires_acknowledgement": []}; values may be formulas of ram, cpus, '
        "connections, shared_buffers, disk"))
    note = serializers.CharField(write_only=True, required=False, allow_blank=True)

    class Meta:
        model = Profile
        fields = ["id", "name", "slug", "description", "builtin", "current", "settings", "note",
                  "created_at"]
        read_only_fields = ["slug", "builtin", "created_at"]


class ProfileCopySerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)


class AssignmentSerializer(serializers.ModelSerializer):
    profile = serializers.PrimaryKeyRelatedField(queryset=Profile.objects.all())
    applied_version = ProfileVersionSerializer(read_only=True)
    drifted = serializers.BooleanField(read_only=True)

    class Meta:
        model = Assignment
        fields = ["profile", "applied_version", "drifted", "drift", "drift_checked_at",
                  "assigned_at"]
        read_only_fields = ["applied_version", "drift", "drift_checked_at", "assigned_at"]


class PlanChangeSerializer(serializers.ModelSerializer):
    class Meta:
        model = PlanChange
        exclude = ["plan"]


class PlanSerializer(serializers.ModelSerializer):
    changes = PlanChangeSerializer(many=True, read_only=True)
    operation = OperationSerializer(read_only=True)
    is_empty = serializers.BooleanField(read_only=True)
    needs_restart = serializers.ListField(child=serializers.CharField(), read_only=True)
    profile = serializers.CharField(source="profile_version.profile.name", read_only=True,
                                    default=None)
    version = serializers.IntegerField(source="profile_version.number", read_only=True,
                                       default=None)

    class Meta:
        model = Plan
        fields = ["id", "host", "profile", "version", "kind", "rollback_of", "status",
                  "is_empty", "needs_restart", "requires_acknowledgement", "acknowledged",
                  "allow_restart", "findings", "changes", "operation", "created_at"]
        read_only_fields = fields


class PlanRequestSerializer(serializers.Serializer):
    profile = serializers.PrimaryKeyRelatedField(
        queryset=Profile.objects.all(), required=False,
        help_text="Plan for this profile's current version instead of the assigned one.")
    profile_version = serializers.PrimaryKeyRelatedField(
        queryset=ProfileVersion.objects.all(), required=False)


class ApplyRequestSerializer(serializers.Serializer):
    allow_restart = serializers.BooleanField(
        default=False, help_text="May PostgreSQL be restarted for settings that need it?")
    acknowledge = serializers.ListField(
        child=serializers.CharField(), default=list,
        help_text="Risk ids the plan requires, e.g. bounded_loss.")


class RollbackRequestSerializer(serializers.Serializer):
    allow_restart = serializers.BooleanField(default=False)


class RollbackResponseSerializer(serializers.Serializer):
    plan = PlanSerializer()
    operation = OperationSerializer()


class FindingSerializer(serializers.Serializer):
    id = serializers.CharField()
    severity = serializers.ChoiceField(choices=["critical", "warning", "info"])
    title = serializers.CharField()
    evidence = serializers.CharField()
    why = serializers.CharField()
    action = serializers.CharField()
    source = serializers.CharField()
