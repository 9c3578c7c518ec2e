import pytest

from tests.workers import Worker


@pytest.fixture
def worker(tmp_path):
    """A real Celery worker on the suite's Redis, stopped by its own PID."""
    worker = Worker("pozol", "e2e", tmp_path)
    yield worker
    worker.stop()
