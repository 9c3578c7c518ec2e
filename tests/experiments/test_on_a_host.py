"""Experiments on a real test host, through the API, run by a real Celery worker: a value
the host refuses fails the recordsize experiment and the held compression and the
recordsize go back; the COPY script runs under wal_level replica and minimal and the host
gets its wal_level and max_wal_senders back; the wal_sync_method comparison runs. (The
full_page_writes and recordsize experiments that succeed, and a cancelled one, run from
the UI in tests/e2e/test_experiment_in_browser.py.) Figures print with -s."""

import re
import secrets

import pytest

from apps.experiments.models import Experiment
from tests.integration.conftest import fresh_ssh_pool, register, run_on, show  # noqa: F401
from tests.waiting import wait_for
from tests.workers import Worker

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

SHORT = {"scale": 1, "clients": 2, "threads": 1, "duration": 5, "checkpoint_every": 2}


@pytest.fixture
def worker(tmp_path):
    worker = Worker("pozol", "experiments", tmp_path)
    yield worker
    worker.stop()


def finished(api, pk: int, worker: Worker) -> dict:
    def ended():
        body = api.get(f"/api/experiments/{pk}/").json()
        return body if body["status"] not in ("pending", "running", "waiting") else None
    body = wait_for(ended, 240, "the experiment to end")
    assert body["status"] == "succeeded", (body["operation"]["error"],
                                           worker.output()[-2000:])
    return body


def registered(fleet_host):
    host = register(fleet_host)
    wait_for(lambda: host.operations.exclude(status__in=["pending", "running", "waiting"])
             .count() == host.operations.count() and host.clusters.exists(), 120,
             "discovery")
    return host


def test_experiments_failing_copy_script_and_wal_sync_method(fleet_hosts, api, worker):
    fleet_host = fleet_hosts[0]
    host = registered(fleet_host)
    before = [show(fleet_host, name) for name in ("wal_level", "max_wal_senders",
                                                  "wal_sync_method")]

    refused = api.post("/api/experiments/", {"host": host.pk, "template": "txg-timeout",
                                             "acknowledged": True}, format="json")
    assert refused.status_code == 400 and "zfs-fuse" in str(refused.json())

    # A value the host refuses: the held compression and the recordsize go back.
    compression = run_on(fleet_host, "zfs get -H -o value,source compression tank/pg/data")
    failing = api.post("/api/experiments/", {
        "host": host.pk, "template": "recordsize", "values": ["bogus", "8K"],
        "repetitions": 1, "workload": SHORT}, format="json")
    assert failing.status_code == 201, failing.json()
    body = wait_for(lambda: (b := api.get(f"/api/experiments/{failing.json()['id']}/").json())
                    ["status"] == "failed" and b, 120, "the failing experiment to end")
    assert "bogus" in body["operation"]["error"] and "host was restored" in \
        body["operation"]["error"] and body["runs"][0]["tps"] is None
    assert run_on(fleet_host, "zfs get -H -o source recordsize tank/pg/data").strip() != "local"
    assert run_on(fleet_host, "zfs get -H -o value,source compression tank/pg/data") == \
        compression

    copy = api.post("/api/experiments/", {
        "host": host.pk, "template": "wal-level-copy", "repetitions": 1,
        "workload": {"duration": 4, "scale": 1}}, format="json")
    assert copy.status_code == 201, copy.json()
    body = finished(api, copy.json()["id"], worker)
    print("COPY script:", [(r["value"], round(r["tps"], 1), round(r["wal_per_tx"]))
                           for r in body["runs"]])
    runs = {run["value"]: run for run in body["runs"]}
    assert set(runs) == {"replica", "minimal"} and all(r["tps"] > 0 for r in runs.values())
    # Each run ran under its level: PostgreSQL was restarted to change it, and back.
    log = " ".join(Experiment.objects.get(pk=body["id"]).operation.log_lines
                   .values_list("text", flat=True))
    assert "wal_level = 'minimal'" in log and "wal_level = 'replica'" in log
    assert "holding max_wal_senders = '0'" in log and log.count("pg_ctl -D") >= 2
    assert [show(fleet_host, "wal_level"), show(fleet_host, "max_wal_senders")] == before[:2]
    exp = Experiment.objects.get(pk=body["id"])
    assert exp.restored and exp.script_version.script.slug == "copy-into-new-table"
    # Its own script directory is gone (the other worker's experiments share /tmp).
    made = set(re.findall(r"/tmp/pozol-exp\.[A-Za-z0-9]{6}", log))
    assert made, log[-2000:]
    assert run_on(fleet_host, f"ls -d {' '.join(sorted(made))} 2>/dev/null || true") == ""

    # The paper's wal_sync_method comparison (docs/lessons.md row 20), same script.
    sync = api.post("/api/experiments/", {
        "host": host.pk, "template": "wal-sync-method", "repetitions": 1,
        "workload": {"duration": 3, "scale": 1}}, format="json")
    assert sync.status_code == 201, sync.json()
    body = finished(api, sync.json()["id"], worker)
    print("wal_sync_method:", [(r["value"], round(r["tps"], 1)) for r in body["runs"]],
          body["results"]["verdict"]["text"])
    assert [r["value"] for r in body["runs"]] == ["fsync", "fdatasync", "open_datasync"]
    assert body["restored"] and show(fleet_host, "wal_sync_method") == before[2]


def test_psql_meta_commands_in_a_scripts_setup_do_not_run(fleet_hosts, api, worker):
    """Setup goes to the server as one string (psql -c): a backslash command in it,
    mid-line where the text check does not look, is the server's syntax error, not a
    program psql starts on the host (issue 19 section 4)."""
    fleet_host = fleet_hosts[0]
    host = registered(fleet_host)
    marker = f"/tmp/pozol-setup-{secrets.token_hex(8)}"
    body = experiment(api, host, fleet_host, worker, "SELECT 1;\n", seconds=120,
                      setup=f"SELECT 1; \\o |touch {marker}-o\n"
                            f"SELECT 2; \\! touch {marker}-shell\n")
    assert body["status"] == "failed", worker.output()[-2000:]
    assert "syntax error" in body["operation"]["error"], body["operation"]["error"]
    assert run_on(fleet_host, f"ls {marker}* 2>/dev/null | wc -l").strip() == "0"


def experiment(api, host, fleet_host, worker, text: str, setup: str = "",
               seconds: float = 180) -> dict:
    """A custom script in the wal_sync_method experiment (a reload, no restart), to its
    end; the host's pg_hba.conf and roles afterwards are checked by the caller."""
    made = api.post("/api/experiment-scripts/", {
        "name": f"Custom {secrets.token_hex(4)}", "text": text, "setup": setup},
        format="json")
    assert made.status_code == 201, made.json()
    started = api.post("/api/experiments/", {
        "host": host.pk, "template": "wal-sync-method", "values": ["fsync", "fdatasync"],
        "script": made.json()["slug"], "repetitions": 1,
        "workload": {"duration": 2, "scale": 1}}, format="json")
    assert started.status_code == 201, started.json()
    return wait_for(lambda: (b := api.get(f"/api/experiments/{started.json()['id']}/")
                             .json())["status"] not in ("pending", "running", "waiting")
                    and b, seconds, "the experiment to end")


def hba_and_roles(fleet_host) -> tuple[str, str]:
    hba = run_on(fleet_host, f"cat {show(fleet_host, 'hba_file')}")
    roles = run_on(fleet_host, (
        f"cd / && runuser -u {fleet_host.pg_os_user} -- {fleet_host.pg_bin_dir}/psql -XAt "
        f"-h {fleet_host.pg_socket_dir} -p {fleet_host.pg_port} -d postgres -c "
        "\"SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles "
        "UNION ALL SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database\""))
    return hba, roles


# Raises in a setup run as a superuser or as a member of a role reaching the host.
RIGHTS_CHECK = (
    "DO $$ BEGIN IF current_setting('is_superuser') = 'on' OR EXISTS (SELECT FROM pg_roles "
    "WHERE rolname IN ('pg_execute_server_program', 'pg_read_server_files', "
    "'pg_write_server_files', 'pg_signal_backend') AND pg_has_role(rolname, 'MEMBER')) "
    "OR (SELECT rolcreaterole OR rolreplication OR rolbypassrls OR rolcreatedb "
    "FROM pg_roles WHERE rolname = current_user) "
    "THEN RAISE EXCEPTION 'too strong: %', current_user; END IF; END $$;\n")


def test_a_custom_script_runs_as_a_role_that_cannot_reach_the_host(
        fleet_hosts, api, worker):
    """Issue 19 §4: the text check is bypassed by building the statement in a DO block,
    and it never looked for lo_export. A custom script and its setup now run as a role
    of the experiment's own (no superuser, no membership) in its own database: both
    fail there, nothing is written on the host, and the role, its database and its
    pg_hba line are gone afterwards. A harmless script runs."""
    fleet_host = fleet_hosts[0]
    host = registered(fleet_host)
    before = hba_and_roles(fleet_host)
    marker = f"/tmp/pozol-exp-{secrets.token_hex(8)}"
    bypass = experiment(api, host, fleet_host, worker, "SELECT 1;\n", setup=(
        "DO $$ BEGIN EXECUTE 'COPY (SELECT 1) TO PROG' || 'RAM ''id > "
        f"{marker}-run'''; END $$;\n"))
    assert bypass["status"] == "failed", worker.output()[-2000:]
    error = bypass["operation"]["error"]
    assert "pg_execute_server_program" in error or "superuser" in error, error
    exported = experiment(api, host, fleet_host, worker,
                          f"SELECT lo_export(lo_from_bytea(0, 'x'), '{marker}-lo');\n")
    assert exported["status"] == "failed", worker.output()[-2000:]
    error = exported["operation"]["error"]
    assert "permission denied for function lo_export" in error, error
    assert run_on(fleet_host, f"ls {marker}* 2>/dev/null | wc -l").strip() == "0"
    assert hba_and_roles(fleet_host) == before

    fine = experiment(api, host, fleet_host, worker,
                      "INSERT INTO pozol_mine SELECT count(*) FROM pgbench_branches;\n",
                      setup=RIGHTS_CHECK + "CREATE TABLE IF NOT EXISTS pozol_mine (n bigint);\n")
    assert fine["status"] == "succeeded", (fine["operation"]["error"],
                                           worker.output()[-2000:])
    assert all(run["tps"] for run in fine["runs"]), fine["runs"]
    assert hba_and_roles(fleet_host) == before
