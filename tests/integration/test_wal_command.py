"""An operator refreshes an archive's archive_command (issue 23): an archive enabled by an
older PoZoL keeps the command it was given, which lacks what came later (the failure
note, the mount check). On a real test host: the read notices the older command, the
API and the WAL tab say so, the refresh writes the current one with a reload (the
postmaster keeps its pid), and segments go on being archived with it."""

from __future__ import annotations

import os

import pytest

from apps.ops.models import Operation
from apps.remote import ssh as product_ssh
from apps.wal import services
from apps.wal.core import commands
from apps.wal.core import plan as archive_plan
from tests.driving import drive
from tests.integration.test_snapshots import psql
from tests.integration.test_wal import archived, host, new_segment  # noqa: F401 (fixture)
from tests.waiting import wait_for

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]


def older_command(directory: str) -> str:
    """The archive_command PoZoL wrote before its failure note (a7cff96^)."""
    d = archive_plan.directory_path(directory)
    return (f"if [ -f {d}/%f ]; then cmp -s %p {d}/%f; else "
            f"cp %p {d}/%f.tmp && sync {d}/%f.tmp && mv {d}/%f.tmp {d}/%f && sync {d}; fi")


def checkpointer_pid(fleet_host) -> str:
    return psql(fleet_host, "SELECT pid FROM pg_stat_activity WHERE backend_type = "
                            "'checkpointer'")


def test_an_older_command_is_noticed_and_refreshed_with_a_reload(
        host, api, signed_in):  # noqa: F811
    fleet_host, row = host
    cluster = row.clusters.get()
    archive, operation = services.enable(cluster, 10)
    assert drive(operation).status == Operation.Status.SUCCEEDED, operation.error
    archive.refresh_from_db()
    assert drive(services.check(archive)).status == Operation.Status.SUCCEEDED
    archive.refresh_from_db()
    assert archive.command_outdated is False
    refused = api.post(f"/api/wal-archives/{archive.pk}/refresh-command/")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "current"

    # As an archive enabled by the older PoZoL has it.
    older = older_command(archive.directory)
    psql(fleet_host, f"ALTER SYSTEM SET archive_command = '{older}'")
    psql(fleet_host, "SELECT pg_reload_conf()")
    wait_for(lambda: psql(fleet_host, "SHOW archive_command") == older, 30, "the reload")

    out = product_ssh.session(row.ssh_target())(
        commands.status(cluster.target(), archive.dataset)).stdout
    if os.environ.get("POZOL_WAL_CAPTURE"):  # the parser's fixture (tests/wal/core)
        with open(os.environ["POZOL_WAL_CAPTURE"], "w") as kept:
            kept.write(out)
    assert commands.parse_status(out).archive_command == older
    assert drive(services.check(archive)).status == Operation.Status.SUCCEEDED
    archive.refresh_from_db()
    assert archive.command_outdated is True
    assert api.get(f"/api/wal-archives/{archive.pk}/").json()["command_outdated"] is True
    page = signed_in.get(f"/hosts/{row.pk}/wal/").content.decode()
    assert f'id="refresh-command-{archive.pk}"' in page and "not the one PoZoL" in page

    pid = checkpointer_pid(fleet_host)
    started = api.post(f"/api/wal-archives/{archive.pk}/refresh-command/")
    assert started.status_code == 202, started.content
    refreshed = drive(Operation.objects.get(pk=started.json()["id"]))
    assert refreshed.status == Operation.Status.SUCCEEDED, refreshed.error
    assert psql(fleet_host, "SHOW archive_command") == archive_plan.archive_command(
        archive.directory)
    assert checkpointer_pid(fleet_host) == pid  # a reload, not a restart
    archive.refresh_from_db()
    assert archive.command_outdated is False

    segment = new_segment(fleet_host, 10)
    wait_for(lambda: segment in archived(fleet_host, archive.directory), 60,
             "a segment archived with the refreshed command")
    assert drive(services.check(archive)).status == Operation.Status.SUCCEEDED
    archive.refresh_from_db()
    assert archive.command_outdated is False and archive.failure_reason == ""
