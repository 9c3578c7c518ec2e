from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.audit.models import AuditEvent


class AuditEventSerializer(serializers.ModelSerializer):
    operation = serializers.SerializerMethodField(help_text=(
        "The operation the request started, and how it ended (its status: pending, running "
        "... succeeded, failed, cancelled; its error); null when it started none or the "
        "operation is purged."))

    class Meta:
        model = AuditEvent
        fields = ["id", "at", "user", "username", "token", "token_hint", "tenant", "address",
                  "action", "method", "path", "object_type", "object_id", "object_text",
                  "outcome", "status_code", "message", "details", "operation"]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_operation(self, event: AuditEvent) -> dict | None:
        if not hasattr(event, "operation"):
            from apps.audit.services import with_operations

            with_operations([event])
        operation = event.operation
        if operation is None:
            return None
        return {"id": operation.pk, "kind": operation.kind, "status": operation.status,
                "error": operation.error[-500:], "finished_at": operation.finished_at}
