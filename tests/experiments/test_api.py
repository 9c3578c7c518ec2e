"""The experiments API and pages without a host to reach: refusals are 4xx naming the
field, nothing starts; scripts are versioned; results and the chart JSON render."""

import json

import pytest

from apps.experiments.models import Experiment, Script
from apps.ops.models import Operation
from tests.experiments.factories import finished_experiment

pytestmark = pytest.mark.django_db


def post(api, body):
    return api.post("/api/experiments/", body, format="json")


@pytest.mark.parametrize("body, field", [
    ({"template": "nope"}, "template"),
    ({"template": "full-page-writes", "workload": {"duration": 1}}, "workload.duration"),
    ({"template": "full-page-writes", "workload": {"clients": 1, "threads": 2}},
     "workload.threads"),
    ({"template": "full-page-writes", "values": ["on", "on"]}, "values"),
    ({"template": "full-page-writes", "values": ["on", "off\nx"]}, "values"),
    ({"template": "recordsize", "values": ["8K", "16K; reboot"]}, "values"),
    ({"template": "full-page-writes", "repetitions": 11}, "repetitions"),
    ({"template": "full-page-writes", "workload": {"scale": 1000, "duration": 3600}},
     "workload"),
    ({"template": "txg-timeout"}, "acknowledged"),
    ({"layer": "shell", "key": "x", "values": ["1", "2"]}, "layer"),
    ({"template": "dirty-bytes", "values": ["kernel.panic=1", "1073741824"]}, "values"),
    ({"template": "full-page-writes", "script": "missing"}, "script"),
    ({"template": "full-page-writes",
      "held": [{"layer": "sysctl", "key": "vm.x", "value": "$(id)"}]}, "held"),
])
def test_bad_requests_are_refused_naming_the_field(api, replayed_host, body, field):
    response = post(api, {"host": replayed_host.pk, **body})
    assert response.status_code == 400, response.json()
    assert field in json.dumps(response.json())
    assert not Experiment.objects.exists() and not Operation.objects.filter(
        kind="experiments.run").exists()


def test_a_template_starts_one_operation_with_the_alternating_order(api, replayed_host,
                                                                     delivered):
    response = post(api, {"host": replayed_host.pk, "template": "full-page-writes",
                          "repetitions": 2, "workload": {"duration": 5, "scale": 1}})
    assert response.status_code == 201, response.json()
    exp = Experiment.objects.get()
    assert exp.operation.kind == "experiments.run" and exp.operation.mutating
    assert exp.operation.state["order"] == [["on", 0], ["off", 0], ["off", 1], ["on", 1]]
    assert exp.workload["checkpoint_every"] == 10 and exp.workload["reinit"] is True
    assert "1.2GB" in exp.citation
    again = post(api, {"host": replayed_host.pk, "template": "recordsize",
                       "workload": {"duration": 5, "scale": 1}})
    assert again.status_code == 409  # one experiment at a time on a host


def test_templates_list_their_published_figures(api):
    body = api.get("/api/experiments/templates/").json()
    slugs = {t["slug"]: t for t in body}
    assert set(slugs) >= {"full-page-writes", "recordsize", "compression", "dirty-bytes",
                          "txg-timeout", "wal-level-copy", "wal-sync-method"}
    assert "+70%" in slugs["full-page-writes"]["published"]
    assert slugs["txg-timeout"]["acknowledge"]


def test_scripts_are_versioned_and_refuse_a_shell(api):
    listed = api.get("/api/experiment-scripts/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [s["builtin"] for s in rows if s["slug"] == "copy-into-new-table"] == [True]
    made = api.post("/api/experiment-scripts/", {"name": "Inserts", "text": "SELECT 1;\n"},
                    format="json")
    assert made.status_code == 201, made.json()
    pk = made.json()["id"]
    version = api.post(f"/api/experiment-scripts/{pk}/versions/",
                       {"text": "SELECT 2;\n", "note": "two"}, format="json")
    assert version.status_code == 201 and version.json()["number"] == 2
    assert Script.objects.get(pk=pk).current.text == "SELECT 2;\n"
    for text in ("\\shell id\n", "COPY t FROM PROGRAM 'id';"):
        refused = api.post(f"/api/experiment-scripts/{pk}/versions/", {"text": text},
                           format="json")
        assert refused.status_code == 400 and "text" in refused.json()["error"]["fields"]
    assert Script.objects.get(pk=pk).versions.count() == 2
    copy = Script.objects.get(slug="copy-into-new-table")
    assert api.post(f"/api/experiment-scripts/{copy.pk}/versions/", {"text": "SELECT 1;"},
                    format="json").status_code == 400
    assert api.post("/api/experiment-scripts/", {"name": "Inserts", "text": "SELECT 1;"},
                    format="json").status_code == 409


def test_the_page_shows_the_table_the_verdict_and_chart_json(signed_in, replayed_host):
    exp = finished_experiment(replayed_host)
    page = signed_in.get(f"/experiments/{exp.pk}/").content.decode()
    assert "off wins, 4.66x lower against on" in page
    assert 'data-chart="exp-' in page and '"kind": "bars"' in page
    assert "The host was restored: full_page_writes back to on." in page
    listing = signed_in.get("/experiments/").content.decode()
    assert "7.5x less WAL" in listing and f"#{exp.pk}" in listing


def test_cancelling_from_the_page_asks_a_started_experiment_and_refuses_an_ended_one(
        signed_in, replayed_host, delivered):
    ended = finished_experiment(replayed_host)
    answer = signed_in.post(f"/experiments/{ended.pk}/cancel/", follow=True,
                            HTTP_REFERER=f"/experiments/{ended.pk}/")
    assert "this experiment has ended" in answer.content.decode()
    assert 'id="cancel-experiment"' not in answer.content.decode()

    response = signed_in.post("/experiments/new/", {
        "host": replayed_host.pk, "template": "full-page-writes", "duration": "5",
        "scale": "1"})
    exp = Experiment.objects.exclude(pk=ended.pk).get()
    assert response.url == f"/experiments/{exp.pk}/"
    assert 'id="cancel-experiment"' in signed_in.get(response.url).content.decode()
    Operation.objects.filter(pk=exp.operation_id).update(status="waiting",
                                                         started_at=ended.created_at)
    signed_in.post(f"/experiments/{exp.pk}/cancel/")
    exp.operation.refresh_from_db()
    # Asked, not ended: its steps stop the run and put the host back first.
    assert exp.operation.status == "waiting"
    assert exp.operation.state["cancel_requested"] == "cancelled by olga"


def test_the_pools_reserve_is_kept_by_the_same_room_check_as_clones(api, replayed_host,
                                                                     delivered):
    """A run that fits the free space is still refused when it would cross the pool's
    reserve (apps.fleet.core.room, one decision for clones, snapshots and experiments)."""
    from apps.experiments.core.runs import room_needed
    from apps.fleet import reserves

    cluster = replayed_host.clusters.get()
    pool = cluster.data_dataset.name.split("/")[0]
    free = replayed_host.datasets.get(name=pool).available
    need = room_needed(1, 5, 1, True)
    reserves.set_reserve(replayed_host, pool, reserve_bytes=free - need + 1)
    body = {"host": replayed_host.pk, "template": "full-page-writes",
            "workload": {"duration": 5, "scale": 1}}
    refused = post(api, body)
    assert refused.status_code == 400, refused.json()
    assert f"pool {pool} has " in refused.json()["error"]["fields"]["workload"][0]
    assert "keeps a reserve of" in refused.json()["error"]["fields"]["workload"][0]
    assert not Experiment.objects.exists()
    reserves.set_reserve(replayed_host, pool, reserve_bytes=free - need)
    assert post(api, body).status_code == 201
