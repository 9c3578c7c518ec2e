from rest_framework import serializers

from apps.audit.models import AuditEvent


class AuditEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = ["id", "at", "user", "username", "token", "token_hint", "tenant", "address",
                  "action", "method", "path", "object_type", "object_id", "object_text",
                  "outcome", "status_code", "message", "details"]
        read_only_fields = fields
