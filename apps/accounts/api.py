from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from apps.accounts import services
from apps.accounts.models import ApiToken
from apps.accounts.serializers import (
    IssuedTokenSerializer,
    TokenCreateSerializer,
    TokenSerializer,
)


class TokenViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """API tokens: your own; a tenant admin's members' too; an operator's, everyone's.

    A new token is always the caller's own and carries the caller's rights.
    """

    queryset = ApiToken.objects.none()
    serializer_class = TokenSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self) -> QuerySet:
        return services.visible_to(self.request.user)

    @extend_schema(request=TokenCreateSerializer, responses={201: IssuedTokenSerializer})
    def create(self, request) -> Response:
        body = TokenCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        token, raw = services.issue(request.user, body.validated_data["name"],
                                    body.validated_data["expires_at"])
        return Response(IssuedTokenSerializer(token, context={"raw": raw}).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: TokenSerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None) -> Response:
        token = services.revoke(self.get_object(), by=request.user)
        return Response(TokenSerializer(token).data)
