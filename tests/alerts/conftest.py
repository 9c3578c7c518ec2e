import pytest

from apps.alerts import delivery


@pytest.fixture
def enqueued(monkeypatch) -> list[int]:
    """Deliveries handed to Celery, recorded instead (tests attempt them in-process)."""
    sent: list[int] = []
    monkeypatch.setattr(delivery, "enqueue", lambda ids: sent.extend(ids))
    return sent


@pytest.fixture
def alert_settings(settings):
    """Real SMTP through Django (pytest-django swaps in locmem), quick retries, and
    webhooks allowed to 127.0.0.1 only (where the test receivers listen)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.POZOL = {**settings.POZOL, "ALERT_WEBHOOK_ALLOW": ["127.0.0.1/32"],
                      "ALERT_RETRY_SECONDS": 1, "ALERT_DELIVERY_ATTEMPTS": 3}
    return settings
