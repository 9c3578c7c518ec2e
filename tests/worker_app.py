"""The product's Celery app plus the engine's test-only operation kinds, for
tests that drive a real worker through a step of their own."""

import django

django.setup()

from pozol.celery import app  # noqa: E402
from tests.ops import kinds  # noqa: E402,F401

__all__ = ["app"]
