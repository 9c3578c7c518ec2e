"""The benchmarks API without a host: parameters refused with 400 before anything is
recorded or delivered, a run recorded with its operation, validations and their
ratios, and all of it in the OpenAPI schema."""

import pytest

from apps.benchmarks.models import Benchmark, Validation
from apps.ops.models import Operation
from tests.benchmarks import factories

pytestmark = [pytest.mark.django_db]

HOSTILE = ["a;b", "$(reboot)", "`id`", "x' OR '1'='1", "Upper", "line\nbreak", "two words",
           "-oProxyCommand=sh", "ünïcødé", "", "a" * 64]


@pytest.fixture
def db_host():
    host = factories.host()
    factories.cluster(host)
    return host


def post(api, host, **params):
    return api.post("/api/benchmarks/", {"host": host.pk, "params": params}, format="json")


def refused(response) -> dict:
    assert response.status_code == 400, response.json()
    assert not Benchmark.objects.exists() and not Operation.objects.exists()
    return response.json()["error"]["fields"]


@pytest.mark.parametrize(("field", "value"), [
    ("clients", 0), ("clients", 1001), ("threads", 0), ("duration", 0), ("duration", 3601),
    ("scale", 0), ("scale", 10001), ("mode", "tpcc"), ("protocol", "copy"), ("clients", "4;"),
    ("init", "perhaps"),
])
def test_parameters_out_of_range_are_refused(api, delivered, db_host, field, value):
    fields = refused(post(api, db_host, **{field: value}))
    assert field in fields["params"]
    assert delivered == []


def test_more_threads_than_clients_is_refused(api, delivered, db_host):
    fields = refused(post(api, db_host, clients=2, threads=3))
    assert "number of clients" in fields["params"]["threads"][0]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_database_names_are_refused(api, delivered, db_host, value):
    assert "database" in refused(post(api, db_host, database=value))["params"]


def test_a_host_without_a_cluster_or_with_several_must_name_one(api, delivered):
    host = factories.host()
    assert "no PostgreSQL cluster" in refused(post(api, host))["cluster"][0]
    factories.cluster(host, 5432)
    factories.cluster(host, 5433)
    assert "several" in refused(post(api, host))["cluster"][0]


def test_a_cluster_of_another_host_is_refused(api, delivered, db_host):
    other = factories.cluster(factories.host("db2"))
    response = api.post("/api/benchmarks/", {"host": db_host.pk, "cluster": other.pk},
                        format="json")
    assert "not on this host" in refused(response)["cluster"][0]


@pytest.mark.parametrize("changes", [{"socket_dir": "/run/$(reboot)"}, {"socket_dir": ""},
                                     {"owner": "root;id"}, {"bin_dir": "relative/bin"},
                                     {"port": None}])
def test_a_cluster_pgbench_cannot_safely_reach_is_refused(api, delivered, changes):
    host = factories.host()
    factories.cluster(host, **changes)
    assert "cluster" in refused(post(api, host))


def test_a_run_is_recorded_with_its_operation(api, delivered, db_host,
                                               django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, db_host, clients=4, threads=2, duration=30, init=True, scale=5,
                        mode="select-only", protocol="prepared")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["parameters"] == {"database": "pgbench", "scale": 5, "init": True, "clients": 4,
                                  "threads": 2, "duration": 30, "mode": "select-only",
                                  "protocol": "prepared"}
    assert body["operation"]["kind"] == "benchmarks.run"
    assert body["operation"]["step"] == "prepare" and body["status"] == "pending"
    assert body["port"] == 5432 and body["data_dir"] == "/tank/pg5432/data"
    operation = Operation.objects.get()
    assert operation.mutating and operation.trigger == "api"
    assert operation.state["target"] == {"owner": "postgres", "bin_dir":
                                         "/usr/lib/postgresql/15/bin",
                                         "socket_dir": "/run/pg", "port": 5432}
    assert delivered == [operation.pk]


def test_defaults_fill_missing_parameters(api, delivered, db_host):
    body = api.post("/api/benchmarks/", {"host": db_host.pk}, format="json").json()
    assert body["parameters"]["clients"] == 1 and body["parameters"]["mode"] == "tpcb"


def test_list_and_retrieve_carry_the_series(api, db_host):
    bench = factories.finished(db_host, 1000.0, 2.0, 500.0)
    listed = api.get("/api/benchmarks/", {"host": db_host.pk}).json()
    assert [row["id"] for row in listed["results"]] == [bench.pk]
    detail = api.get(f"/api/benchmarks/{bench.pk}/").json()
    assert detail["series"]["t"] == [1.0, 2.0, 3.0]
    assert detail["series"]["latency_ms"] == [2.0, None, 2.0]
    assert detail["summary"]["tps"] == 1000.0 and detail["status"] == "succeeded"


def test_a_validation_computes_the_ratios(api, db_host):
    before = factories.finished(db_host, 1000.0, 2.0, 400.0)
    after = factories.finished(db_host, 1250.0, 1.6, 300.0)
    response = api.post("/api/validations/", {"before": before.pk, "after": after.pk,
                                              "label": "recordsize=8k"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["tps_ratio"] == pytest.approx(1.25)
    assert body["latency_ratio"] == pytest.approx(0.8)
    assert body["wal_per_tx_ratio"] == pytest.approx(0.75)
    assert body["same_workload"] is True and body["label"] == "recordsize=8k"
    assert api.get(f"/api/validations/{body['id']}/").json()["tps_ratio"] == body["tps_ratio"]
    assert len(api.get("/api/validations/").json()["results"]) == 1


def test_a_validation_needs_two_succeeded_runs_on_one_host(api, db_host):
    done = factories.finished(db_host, 1000.0, 2.0, 400.0)
    running = factories.finished(db_host, 0, 0, None, status=Operation.Status.RUNNING)
    elsewhere = factories.finished(factories.host("db2"), 900.0, 2.0, 400.0)
    for before, after, field in ((done, running, "after"), (done, done, "after"),
                                 (done, elsewhere, "after"), (running, done, "before")):
        response = api.post("/api/validations/", {"before": before.pk, "after": after.pk},
                            format="json")
        assert response.status_code == 400 and field in response.json()["error"]["fields"]
    assert not Validation.objects.exists()


def test_a_missing_ratio_is_null_not_an_error(db_host):
    before = factories.finished(db_host, 1000.0, 2.0, None)
    after = factories.finished(db_host, 1100.0, 2.0, 300.0, clients=4)
    validation = Validation.objects.create(host=db_host, before=before, after=after)
    assert validation.wal_per_tx_ratio is None and validation.tps_ratio == pytest.approx(1.1)
    assert validation.same_workload is False


def test_the_api_needs_authentication(client, db_host):
    assert client.get("/api/benchmarks/").status_code in (401, 403)
    assert client.post("/api/validations/", {}).status_code in (401, 403)


def test_everything_is_in_the_openapi_schema(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    assert {"/api/benchmarks/", "/api/benchmarks/{id}/", "/api/validations/",
            "/api/validations/{id}/"} <= set(schema["paths"])
    assert "post" in schema["paths"]["/api/benchmarks/"]
    components = schema["components"]["schemas"]
    assert {"tps_ratio", "latency_ratio", "wal_per_tx_ratio"} <= set(
        components["Validation"]["properties"])
    assert {"t", "tps", "latency_ms", "dirty_bytes", "writeback_bytes"} <= set(
        components["Series"]["properties"])
    assert "clients" in components["Parameters"]["properties"]
    assert components["Parameters"]["properties"]["clients"]["maximum"] == 1000


def test_a_run_records_the_profile_version_in_force(api, delivered, db_host):
    from apps.tuning.models import Assignment, Profile

    assert post(api, db_host, clients=1).json()["profile_version_label"] == "none applied"
    safe = Profile.objects.get(slug="oltp-safe")
    Assignment.objects.create(host=db_host, profile=safe, applied_version=safe.current)
    labelled = post(api, db_host, clients=1).json()["profile_version_label"]
    assert labelled == f"OLTP on ZFS (safe) v{safe.current.number}"


def test_a_run_long_past_its_duration_counts_as_stuck():
    from datetime import timedelta

    from django.utils import timezone

    from apps.benchmarks.steps import _overrun
    from apps.remote.detached import UnitStatus

    def started(seconds_ago: int) -> UnitStatus:
        return UnitStatus("running", started_at=timezone.now() - timedelta(seconds=seconds_ago))

    assert _overrun(started(80), duration=30) is None  # 50 s late: within the grace
    assert _overrun(started(100), duration=30) == pytest.approx(70, abs=2)
    assert _overrun(started(800), duration=600) is None  # half the duration as grace
    assert _overrun(UnitStatus("running"), duration=30) is None
