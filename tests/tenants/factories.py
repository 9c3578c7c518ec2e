"""Tenants with members, and clients that act as them (a real token each)."""

from __future__ import annotations

from rest_framework.test import APIClient

from apps.accounts.models import ApiToken
from apps.tenants import services
from apps.tenants.models import Membership, Tenant


def tenant(name: str) -> Tenant:
    return services.create_tenant(name)


def member(of: Tenant, username: str, role: str = Membership.Role.MEMBER):
    return services.add_member(of, username, role, password="pw-long-enough-123").user


def api_as(user) -> APIClient:
    _, raw = ApiToken.objects.issue(user, "tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client
