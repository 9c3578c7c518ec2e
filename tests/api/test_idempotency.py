"""Idempotency-Key on POSTs that start work: a repeat answers the first answer and starts
nothing, another body with the key is a 409, two concurrent duplicates start one
operation (the unique constraint), and every API view whose POST starts an Operation
honours the header."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken
from apps.api.idempotency import IdempotentPosts
from apps.api.models import IdempotentRequest
from apps.benchmarks import services as benchmark_services
from apps.benchmarks.models import Benchmark
from apps.ops.models import Operation
from tests.benchmarks import factories

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db_host(db):
    host = factories.host()
    factories.cluster(host)
    return host


def post(api, host, key: str | None, duration: int = 5):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return api.post("/api/benchmarks/", {"host": host.pk, "params": {"duration": duration}},
                    format="json", **headers)


@pytest.mark.django_db
def test_a_repeated_key_answers_the_first_answer_and_starts_nothing(api, delivered, db_host):
    first = post(api, db_host, "run-42")
    assert first.status_code == 201, first.content
    again = post(api, db_host, "run-42")
    assert again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert Operation.objects.count() == 1 and Benchmark.objects.count() == 1
    other = post(api, db_host, "run-43")
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    assert post(api, db_host, None).status_code == 201  # no key: as before
    assert Operation.objects.count() == 3


@pytest.mark.django_db
def test_the_same_key_with_another_body_is_a_409(api, delivered, db_host):
    assert post(api, db_host, "k1").status_code == 201
    reused = post(api, db_host, "k1", duration=9)
    assert reused.status_code == 409, reused.content
    error = reused.json()["error"]
    assert error["code"] == "idempotency_key_reused" and "another" in error["message"]
    assert Operation.objects.count() == 1


@pytest.mark.django_db
def test_keys_are_per_user_and_a_refused_request_frees_its_key(
        api, delivered, db_host, django_user_model):
    other_user = django_user_model.objects.create_user("otto", password="pw-otto-123",
                                                       is_staff=True)
    _, raw = ApiToken.objects.issue(other_user, "tests")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    refused = other.post("/api/benchmarks/", {"host": db_host.pk, "params": {"clients": 0}},
                         format="json", HTTP_IDEMPOTENCY_KEY="shared")
    assert refused.status_code == 400
    assert not IdempotentRequest.objects.exists()
    assert post(api, db_host, "shared").status_code == 201
    assert post(other, db_host, "shared").status_code == 201  # another user's key
    assert Operation.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "two words", "ünï", "k" * 256, "tab\there"])
def test_a_bad_key_is_a_400(api, delivered, db_host, key):
    answer = post(api, db_host, key)
    assert answer.status_code == 400, answer.content
    assert "Idempotency-Key" in answer.json()["error"]["fields"]
    assert not Operation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_start_one_operation(api, delivered, db_host, monkeypatch):
    """The first holds its answer for a while; the duplicate arriving meanwhile is a 409
    (ask again later), and once the first answered, the duplicate gets its answer."""
    real = benchmark_services.run_benchmark
    inside = threading.Event()

    def slow(*args, **kwargs):
        inside.set()
        time.sleep(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(benchmark_services, "run_benchmark", slow)
    answers = {}
    first = threading.Thread(target=lambda: answers.setdefault("first",
                                                               post(api, db_host, "race")))
    first.start()
    assert inside.wait(10)
    answers["second"] = post(api, db_host, "race")
    first.join(20)
    assert answers["first"].status_code == 201, answers["first"].content
    assert answers["second"].status_code == 409, answers["second"].content
    assert answers["second"].json()["error"]["code"] == "idempotency_key_in_flight"
    later = post(api, db_host, "race")
    assert later.status_code == 201 and later.json() == answers["first"].json()
    assert Operation.objects.count() == 1


def _starts_work(source: str) -> bool:
    return any(mark in source for mark in ("OperationSerializer(", "Trigger.API",
                                           "HTTP_202_ACCEPTED", "run_benchmark"))


# POSTs that answer with an operation but start none.
NOT_STARTING = {("apps/ops/api.py", "OperationViewSet"),  # cancel ends one
                ("apps/events/api.py", "SubscriptionViewSet"),  # ping: a delivery
                ("apps/events/api.py", "DeliveryViewSet"),  # redeliver: the same event
                ("apps/alerts/api.py", "ChannelViewSet")}  # test: a delivery


def test_every_api_view_whose_post_starts_work_honours_the_key():
    missing = []
    for path in sorted(ROOT.glob("apps/*/api.py")):
        source = path.read_text()
        module = ast.parse(source)
        for node in module.body:
            if not isinstance(node, ast.ClassDef):
                continue
            text = ast.get_source_segment(source, node)
            posts = "def post(" in text or '"post"' in text or "def create(" in text
            name = (str(path.relative_to(ROOT)), node.name)
            if posts and _starts_work(text) and name not in NOT_STARTING:
                bases = [ast.unparse(base) for base in node.bases]
                if "IdempotentPosts" not in bases:
                    missing.append(name)
    assert missing == []
    assert issubclass(IdempotentPosts, object)


def test_the_schema_documents_the_header(api, db):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/benchmarks/"]["post"]
    assert "Idempotency-Key" in [p["name"] for p in operation["parameters"]]
    assert "409" in operation["responses"]
    assert "Idempotency-Key" not in [p["name"] for p in
                                     schema["paths"]["/api/tokens/"]["post"].get("parameters",
                                                                                 [])]
