import pytest
from django.conf import settings as django_settings

from apps.events import sending


@pytest.fixture
def enqueued(monkeypatch) -> list[int]:
    """Deliveries handed to Celery, recorded instead (tests attempt them in-process)."""
    sent: list[int] = []
    monkeypatch.setattr(sending, "enqueue", lambda ids: sent.extend(ids))
    return sent


@pytest.fixture
def event_settings(settings):
    """Quick retries, and webhooks allowed to 127.0.0.1 only (where receivers listen)."""
    settings.POZOL = {**django_settings.POZOL, "ALERT_WEBHOOK_ALLOW": ["127.0.0.1/32"],
                      "ALERT_RETRY_SECONDS": 1, "ALERT_DELIVERY_ATTEMPTS": 3}
    return settings
