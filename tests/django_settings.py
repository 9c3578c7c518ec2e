"""The product's settings, pointed at a PostgreSQL the suite found or started.

PostgreSQL, not SQLite: the engine's SELECT ... FOR UPDATE SKIP LOCKED must be
exercised for real.
"""

import os

from apps.demo import services
from tests.parallel import worker_redis_db, worker_redis_url

# Tests use their own Redis database so a `make run` worker never takes their tasks,
# and each xdist worker its own, so its Celery workers never take another's.
TEST_REDIS_DB = worker_redis_db(15)
os.environ.setdefault("POZOL_DATABASE_URL",
                      services.postgres_url(os.environ.get("POZOL_TEST_DATABASE_URL")))
_redis_url = services.redis_url(TEST_REDIS_DB,
                                worker_redis_url(os.environ.get("POZOL_TEST_REDIS_URL")))
if os.environ.get("PYTEST_XDIST_WORKER"):
    # The xdist controller loaded these settings first and its environment, database
    # 15's URL included, is every worker's: each worker's Celery workers must be on
    # its own database, or they take the other worker's tasks.
    os.environ["POZOL_REDIS_URL"] = _redis_url
else:
    os.environ.setdefault("POZOL_REDIS_URL", _redis_url)
os.environ.setdefault("POZOL_SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("POZOL_CREDENTIAL_KEY", "qEYY6l8kI85HU-fYTb2OY6p9wQiCx2a109DxZ20nN0U=")
# The suite makes thousands of API calls from 127.0.0.1: generous limits, set through
# the real variables; tests/accounts/test_rate_limits.py proves the limits bite.
# Throttle counts of this run only: a run a minute ago must not count against this one.
os.environ.setdefault("POZOL_THROTTLE_ANON", "100000/minute")
os.environ.setdefault("POZOL_THROTTLE_USER", "100000/minute")
os.environ.setdefault("POZOL_THROTTLE_FAILED_TOKEN", "100000/minute")
os.environ.setdefault("POZOL_CACHE_KEY_PREFIX", f"pozol-test-{os.getpid()}")

from pozol.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Static files are served by the test server from the finders; an empty root keeps
# WhiteNoise from warning on every request.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
