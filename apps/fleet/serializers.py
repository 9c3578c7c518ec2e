import re

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from apps.api.fields import (
    ModelSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from apps.fleet import validators
from apps.fleet.models import Dataset, Disk, Host, PgCluster, Pool, host_name_validator
from apps.ops.serializers import OperationSerializer
from apps.remote.keys import MAX_KEY_TEXT, load_private_key

FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")


def _rule(check):
    """A serializer field validator from one of apps.fleet.validators' rules."""
    def validate(self, value: str) -> str:
        try:
            check(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return value
    return validate


class HostSerializer(ModelSerializer):
    zfs_version = StrictCharField(read_only=True)
    open_alerts = serializers.SerializerMethodField()

    class Meta:
        model = Host
        fields = ["id", "name", "address", "port", "user", "work_dir",
                  "authorized_keys_file", "credential_kind",
                  "public_key", "host_key_fingerprint", "host_key_state",
                  "presented_fingerprint", "reachable", "last_seen_at", "last_discovery_at",
                  "last_error", "last_error_code", "zfs_version", "open_alerts",
                  "created_at"]
        read_only_fields = [f for f in fields
                            if f not in {"user", "work_dir", "authorized_keys_file"}]

    # Big columns no field above shows: facts (about 68 KB, served by
    # /api/hosts/{id}/facts/), the encrypted key and the raw host-key lines.
    UNSHOWN = ("facts", "private_key_encrypted", "host_key", "presented_host_key")

    def get_open_alerts(self, host: Host) -> list[str]:
        # HostViewSet prefetches them (one query per page); a single host reads them.
        alerts = getattr(host, "open_alert_rows", None)
        return [alert.message for alert in (host.open_alerts if alerts is None else alerts)]


class HostCreateSerializer(ModelSerializer):
    private_key = StrictCharField(write_only=True, required=False, trim_whitespace=False,
                                        max_length=MAX_KEY_TEXT,
                                        style={"base_template": "textarea.html"},
                                        help_text="Never shown again, stored encrypted.")
    generate_key = StrictBooleanField(
        default=False, help_text="Make a key pair; install the returned public_key.")
    expected_fingerprint = StrictCharField(
        required=False, allow_blank=True, help_text="SHA256:... of the host key.")
    trust_on_first_use = StrictBooleanField(
        default=False, help_text="Pin whatever key the host first presents.")

    class Meta:
        model = Host
        fields = ["name", "address", "port", "user", "work_dir", "authorized_keys_file",
                  "private_key",
                  "generate_key", "expected_fingerprint", "trust_on_first_use"]
        # A taken name is a conflict (409) that services.add_host reports,
        # also when two requests race for it; not a 400 from here.
        extra_kwargs = {"name": {"validators": [host_name_validator]}}

    validate_address = _rule(validators.host_address)
    validate_work_dir = _rule(validators.work_dir)
    validate_authorized_keys_file = _rule(validators.authorized_keys_file)

    def validate_private_key(self, value: str) -> str:
        try:
            load_private_key(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value

    def validate_expected_fingerprint(self, value: str) -> str:
        value = value.strip()
        if value and not FINGERPRINT.match(value):
            raise serializers.ValidationError("expected SHA256: followed by 43 base64 characters")
        return value

    def validate(self, data):
        if bool(data.get("private_key")) == bool(data.get("generate_key")):
            raise serializers.ValidationError(
                {"private_key": "give a private key, or set generate_key (not both)"})
        if bool(data.get("expected_fingerprint")) == bool(data.get("trust_on_first_use")):
            raise serializers.ValidationError({"expected_fingerprint": (
                "give the expected host key fingerprint, or set trust_on_first_use (not both)")})
        return data


class HostUpdateSerializer(ModelSerializer):
    private_key = StrictCharField(write_only=True, required=False, trim_whitespace=False,
                                        max_length=MAX_KEY_TEXT)

    class Meta:
        model = Host
        fields = ["user", "work_dir", "authorized_keys_file", "private_key"]

    validate_private_key = HostCreateSerializer.validate_private_key
    validate_work_dir = HostCreateSerializer.validate_work_dir
    validate_authorized_keys_file = HostCreateSerializer.validate_authorized_keys_file

    def update(self, host, data):
        if "private_key" in data:
            host.set_private_key(data.pop("private_key"))
            host.credential_kind = Host.CredentialKind.PASTED
        return super().update(host, data)


class HostCreatedSerializer(HostSerializer):
    operation = OperationSerializer(read_only=True)

    class Meta(HostSerializer.Meta):
        fields = HostSerializer.Meta.fields + ["operation"]


class FingerprintSerializer(serializers.Serializer):
    fingerprint = StrictCharField()


class PoolSerializer(ModelSerializer):
    class Meta:
        model = Pool
        exclude = ["host"]


class DatasetSerializer(ModelSerializer):
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Dataset
        exclude = ["host"]


class PgClusterSerializer(ModelSerializer):
    data_dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)
    wal_dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = PgCluster
        exclude = ["host"]


class DiskSerializer(ModelSerializer):
    class Meta:
        model = Disk
        exclude = ["host"]


class PoolReserveSerializer(serializers.Serializer):
    """The free space kept on one pool: bytes, or percent of the pool (neither: the
    default, 10%). Clones, "now" snapshots, replication receives and experiments are
    refused when they would take the pool's free space below it."""

    pool = serializers.CharField(read_only=True)
    reserve_bytes = StrictIntegerField(required=False, allow_null=True, default=None,
                                       min_value=0)
    reserve_percent = StrictIntegerField(required=False, allow_null=True, default=None,
                                         min_value=0, max_value=90)
    floor = serializers.IntegerField(read_only=True, allow_null=True, help_text=(
        "The bytes kept free, as of the last discovery (null: the pool's size is not "
        "known)."))
    available = serializers.IntegerField(read_only=True, allow_null=True, help_text=(
        "The pool's free space (its root dataset's available) at the last discovery."))
