from rest_framework import serializers

from apps.accounts.models import ApiToken
from apps.api.fields import ModelSerializer, StrictCharField


class TokenSerializer(ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    revoked_by = serializers.CharField(source="revoked_by.username", read_only=True,
                                       allow_null=True, default=None)
    state = serializers.ChoiceField(choices=["active", "expired", "revoked"], read_only=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "hint", "username", "state", "created_at", "last_used_at",
                  "expires_at", "revoked_at", "revoked_by"]
        read_only_fields = fields


class TokenCreateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100, required=False, default="", allow_blank=True)
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None,
        help_text="Refused from this moment on; null: never expires.")


class IssuedTokenSerializer(TokenSerializer):
    token = serializers.SerializerMethodField(
        help_text="The token itself: shown this once, never stored.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]
        read_only_fields = fields

    def get_token(self, obj) -> str:
        return self.context["raw"]
