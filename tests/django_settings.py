"""The product's settings, pointed at a PostgreSQL the suite found or started.

PostgreSQL, not SQLite: the engine's SELECT ... FOR UPDATE SKIP LOCKED must be
exercised for real.
"""

import os

from tests import services

os.environ.setdefault("POZOL_DATABASE_URL", services.postgres_url())
os.environ.setdefault("POZOL_REDIS_URL", services.redis_url(services.TEST_REDIS_DB))
os.environ.setdefault("POZOL_SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("POZOL_CREDENTIAL_KEY", "qEYY6l8kI85HU-fYTb2OY6p9wQiCx2a109DxZ20nN0U=")

from pozol.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Static files are served by the test server from the finders; an empty root keeps
# WhiteNoise from warning on every request.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
