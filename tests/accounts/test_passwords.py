"""Passwords: Django's four validators, and the demo's generated password passes them."""

import secrets

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("password", "says"), [
    ("short-pw-1", "at least 12 characters"),
    ("password1234", "too common"),
    ("804716239581", "entirely numeric"),
    ("olga-sokolova", "too similar"),
])
def test_weak_passwords_are_refused(django_user_model, password, says):
    user = django_user_model(username="olga-sokolova", email="olga@example.com")
    with pytest.raises(ValidationError, match=says):
        validate_password(password, user)


def test_ensure_operator_accepts_the_demo_password_and_refuses_a_weak_one(
        tmp_path, django_user_model):
    password_file = tmp_path / "operator_password"
    password_file.write_text("operator1234\n")
    with pytest.raises(CommandError, match="too similar|too common"):
        call_command("ensure_operator", "operator", "--password-file", str(password_file))
    assert not django_user_model.objects.filter(username="operator").exists()

    # The way `make run` (apps/demo) makes it.
    password = secrets.token_urlsafe(12)
    password_file.write_text(password)
    call_command("ensure_operator", "operator", "--password-file", str(password_file))
    operator = django_user_model.objects.get(username="operator")
    assert operator.check_password(password) and operator.is_superuser
