"""Each pytest-xdist worker keeps its own Redis database, so the Celery workers its
tests start never take the other worker's tasks."""

import os

from django.conf import settings

from tests.parallel import worker_redis_db, worker_redis_url


def test_this_workers_broker_is_its_own_redis_database():
    preferred = worker_redis_url(os.environ.get("POZOL_TEST_REDIS_URL"))
    database = preferred.rsplit("/", 1)[1] if preferred else str(worker_redis_db(15))
    assert settings.CELERY_BROKER_URL.rsplit("/", 1)[1] == database
    assert os.environ["POZOL_REDIS_URL"] == settings.CELERY_BROKER_URL  # what workers inherit
