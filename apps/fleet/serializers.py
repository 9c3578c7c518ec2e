import re

from rest_framework import serializers

from apps.fleet.models import Dataset, Disk, Host, PgCluster, Pool
from apps.ops.serializers import OperationSerializer
from apps.remote.keys import load_private_key

FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")


class HostSerializer(serializers.ModelSerializer):
    zfs_version = serializers.CharField(read_only=True)
    open_alerts = serializers.SerializerMethodField()

    class Meta:
        model = Host
        fields = ["id", "name", "address", "port", "user", "work_dir", "credential_kind",
                  "public_key", "host_key_fingerprint", "host_key_state",
                  "presented_fingerprint", "reachable", "last_seen_at", "last_discovery_at",
                  "last_error", "last_error_code", "zfs_version", "open_alerts", "facts",
                  "created_at"]
        read_only_fields = [f for f in fields if f not in {"user", "work_dir"}]

    def get_open_alerts(self, host: Host) -> list[str]:
        return [alert.message for alert in host.open_alerts]


class HostCreateSerializer(serializers.ModelSerializer):
    private_key = serializers.CharField(write_only=True, required=False, trim_whitespace=False,
                                        style={"base_template": "textarea.html"},
                                        help_text="Never shown again, stored encrypted.")
    generate_key = serializers.BooleanField(
        default=False, help_text="Make a key pair; install the returned public_key.")
    expected_fingerprint = serializers.CharField(
        required=False, allow_blank=True, help_text="SHA256:... of the host key.")
    trust_on_first_use = serializers.BooleanField(
        default=False, help_text="Pin whatever key the host first presents.")

    class Meta:
        model = Host
        fields = ["name", "address", "port", "user", "work_dir", "private_key",
                  "generate_key", "expected_fingerprint", "trust_on_first_use"]

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


class HostUpdateSerializer(serializers.ModelSerializer):
    private_key = serializers.CharField(write_only=True, required=False, trim_whitespace=False)

    class Meta:
        model = Host
        fields = ["user", "work_dir", "private_key"]

    validate_private_key = HostCreateSerializer.validate_private_key

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
    fingerprint = serializers.CharField()


class PoolSerializer(serializers.ModelSerializer):
    class Meta:
        model = Pool
        exclude = ["host"]


class DatasetSerializer(serializers.ModelSerializer):
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Dataset
        exclude = ["host"]


class PgClusterSerializer(serializers.ModelSerializer):
    data_dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)
    wal_dataset = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = PgCluster
        exclude = ["host"]


class DiskSerializer(serializers.ModelSerializer):
    class Meta:
        model = Disk
        exclude = ["host"]
