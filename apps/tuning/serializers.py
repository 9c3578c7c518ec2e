from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictPrimaryKeyRelatedField,
)
from apps.ops.serializers import OperationSerializer
from apps.tuning.models import Assignment, Plan, PlanChange, Profile, ProfileVersion


class ProfileVersionSerializer(ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True,
                                              allow_null=True)

    class Meta:
        model = ProfileVersion
        fields = ["id", "number", "settings", "citations", "note", "created_at", "created_by"]
        read_only_fields = fields


DESCRIPTION_LENGTH = 2000


def _no_nul(value: object) -> object:
    """PostgreSQL text and jsonb cannot hold NUL: refuse it here, not as a 500 there."""
    if isinstance(value, str) and "\x00" in value:
        raise serializers.ValidationError("NUL characters are not allowed")
    if isinstance(value, dict):
        for key, item in value.items():
            _no_nul(key)
            _no_nul(item)
    if isinstance(value, list):
        for item in value:
            _no_nul(item)
    return value


class ProfileSerializer(ModelSerializer):
    """Create (POST), replace (PUT: name and settings required) or change (PATCH: any of
    name, description, settings); new settings add a version, a name renames."""

    current = ProfileVersionSerializer(read_only=True)
    description = StrictCharField(max_length=DESCRIPTION_LENGTH, required=False,
                                        allow_blank=True, default="")
    settings = serializers.JSONField(write_only=True, validators=[_no_nul], help_text=(
        '{"zfs": {"data": {"recordsize": "16K"}, "wal": {...}, "other": {...}}, '
        '"module": {...}, "sysctl": {...}, "postgres": {"shared_buffers": "ram / 4"}, '
        '"requires_acknowledgement": []}; values may be formulas of ram, cpus, '
        "connections, shared_buffers, disk; a data or wal recordsize may be \"experiment\": "
        "what the newest finished recordsize experiment on each host named the winner"))
    note = StrictCharField(write_only=True, required=False, allow_blank=True,
                                 max_length=ProfileVersion._meta.get_field("note").max_length)

    class Meta:
        model = Profile
        fields = ["id", "name", "slug", "description", "builtin", "archived_at", "current",
                  "settings", "note", "created_at"]
        read_only_fields = ["slug", "builtin", "archived_at", "created_at"]
        # Uniqueness is the service's (a 409 that also covers concurrent saves).
        extra_kwargs = {"name": {"validators": []}}

    def validate_settings(self, value: object) -> dict:
        if not isinstance(value, dict):
            raise serializers.ValidationError("expected a mapping of layers")
        return value


class ProfileCopySerializer(serializers.Serializer):
    name = StrictCharField(max_length=Profile._meta.get_field("name").max_length)


class AssignmentSerializer(ModelSerializer):
    profile = StrictPrimaryKeyRelatedField(
        queryset=Profile.objects.filter(archived_at=None),
        help_text="An active profile; archived ones cannot be assigned.")
    applied_version = ProfileVersionSerializer(read_only=True, allow_null=True)
    state = serializers.ChoiceField(
        choices=Assignment.State.choices, read_only=True,
        help_text="drifted: the host had the profile's current version and left it; "
                  "not_applied: `drift` lists what applying it would change.")
    drifted = StrictBooleanField(read_only=True, help_text='state == "drifted"')

    class Meta:
        model = Assignment
        fields = ["profile", "applied_version", "state", "drifted", "drift", "pending_restart",
                  "drift_checked_at", "assigned_at"]
        read_only_fields = ["applied_version", "drift", "pending_restart", "drift_checked_at",
                            "assigned_at"]


class PlanChangeSerializer(ModelSerializer):
    class Meta:
        model = PlanChange
        exclude = ["plan"]


class PlanSerializer(ModelSerializer):
    changes = PlanChangeSerializer(many=True, read_only=True)
    operation = OperationSerializer(read_only=True, allow_null=True)
    is_empty = StrictBooleanField(read_only=True)
    needs_restart = serializers.ListField(child=StrictCharField(), read_only=True)
    profile = StrictCharField(source="profile_version.profile.name", read_only=True,
                                    default=None, allow_null=True)
    version = StrictIntegerField(source="profile_version.number", read_only=True,
                                       default=None, allow_null=True)

    class Meta:
        model = Plan
        fields = ["id", "host", "profile", "version", "kind", "rollback_of", "status",
                  "is_empty", "needs_restart", "requires_acknowledgement", "acknowledged",
                  "allow_restart", "findings", "changes", "operation", "created_at"]
        read_only_fields = fields


class PlanRequestSerializer(serializers.Serializer):
    profile = StrictPrimaryKeyRelatedField(
        queryset=Profile.objects.all(), required=False,
        help_text="Plan for this profile's current version instead of the assigned one.")
    profile_version = StrictPrimaryKeyRelatedField(
        queryset=ProfileVersion.objects.all(), required=False)


class ApplyRequestSerializer(serializers.Serializer):
    allow_restart = StrictBooleanField(
        default=False, help_text="May PostgreSQL be restarted for settings that need it?")
    acknowledge = serializers.ListField(
        child=StrictCharField(), default=list,
        help_text="Risk ids the plan requires, e.g. bounded_loss.")


class RollbackRequestSerializer(serializers.Serializer):
    allow_restart = StrictBooleanField(default=False)


class RollbackResponseSerializer(serializers.Serializer):
    plan = PlanSerializer()
    operation = OperationSerializer()


class FindingSerializer(serializers.Serializer):
    id = StrictCharField()
    severity = serializers.ChoiceField(choices=["critical", "warning", "info"])
    title = StrictCharField()
    evidence = StrictCharField()
    why = StrictCharField()
    action = StrictCharField()
    source = StrictCharField()
