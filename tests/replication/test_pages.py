"""The Replication pages through Django's client: the fleet-wide list (state, lag,
last transfer, last error; polling only while a link runs), a new link with its
errors beside the fields, a link's page (settings, run now, pause, resume, delete,
the rollback opt-in with who and when, its runs), the host page's Replication tab,
and each list at a fixed number of queries however many links there are."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.ops.models import Operation
from apps.replication.models import ReplicationLink
from tests.replication import factories

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def hosts():
    return factories.source(), factories.target()


def form(hosts, **changes) -> dict:
    source, target = hosts
    values = {"name": "main", "source_host": source.pk,
              "source": f"cluster:{source.clusters.get().data_dir}",
              "target_host": target.pk, "target_parent": "backup/db1", "mode": "-I",
              "interval_minutes": "60", "keep_frequently": "0", "keep_hourly": "24",
              "keep_daily": "7", "keep_weekly": "0", "keep_monthly": "0",
              "bandwidth_limit": "", "lag_threshold_minutes": "120",
              "compressed_streams": "on", "large_block_streams": "on", **changes}
    return {k: v for k, v in values.items() if v is not None}


def field_error(page: str, field: str) -> str:
    """The error Django renders beside `field` (the list its input's aria-describedby
    names); empty when there is none."""
    match = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', page, re.S)
    return match.group(1) if match else ""


def test_the_list_shows_each_link_as_it_stands(signed_in, hosts):
    source, target = hosts
    factories.synced(source, target, "fresh", behind=timedelta(minutes=5))
    factories.synced(source, factories.target("db3"), "late", behind=timedelta(hours=5),
                     lag_threshold_minutes=60, state=ReplicationLink.State.FAILED,
                     last_error="cannot receive: out of space\nsecond line hidden",
                     paused=True, target_parent="backup/late")
    factories.link(source, target, "never", target_parent="backup/never")
    page = signed_in.get("/replication/").content.decode()
    assert "fresh" in page and "in sync" in page and "5 min behind (@pozol_hourly_1)" in page
    assert "5.0 MiB in 12 s" in page
    assert '<span class="lag late">5 h behind (@pozol_hourly_1), over the 1 h threshold' \
        in page
    assert "cannot receive: out of space" in page and "second line hidden" not in page
    assert ">paused<" in page and "failed" in page
    # Never run: said as such, never as a fact about the data.
    assert '<span class="lag">lag not known: never run</span>' in page
    assert f'href="/hosts/{source.pk}/"' in page and "cluster /tank/pg5432/data" in page
    assert 'href="/replication/"' in page and 'aria-current="page">Replication' in page


def test_the_list_polls_only_while_a_link_runs(signed_in, hosts):
    link = factories.link(*hosts)
    assert "hx-trigger" not in signed_in.get("/replication/").content.decode()
    quiet = signed_in.get("/replication/", HTTP_HX_REQUEST="true",
                          HTTP_HX_TARGET="links-live")
    assert quiet.status_code == 286
    run = factories.running(link)
    page = signed_in.get("/replication/").content.decode()
    assert 'hx-trigger="every 3s"' in page and f'href="/operations/{run.pk}/"' in page
    live = signed_in.get("/replication/", HTTP_HX_REQUEST="true",
                         HTTP_HX_TARGET="links-live")
    assert live.status_code == 200 and "<html" not in live.content.decode()


def test_a_new_link_from_the_form(signed_in, hosts):
    page = signed_in.get("/replication/new/").content.decode()
    assert '<optgroup label="db1">' in page and "cluster:/tank/pg5432/data" in page
    assert "dataset:tank/pg/wal" in page and '<label for="id_target_parent"' in page
    response = signed_in.post("/replication/new/", form(hosts))
    link = ReplicationLink.objects.get()
    assert response.status_code == 302 and response.url == f"/replication/{link.pk}/"
    assert link.sources == ["tank/pg/data", "tank/pg/wal"] and link.keep_daily == 7
    assert link.bandwidth_limit is None and link.created_by.username == "olga"
    assert not Operation.objects.exists()


@pytest.mark.parametrize(("field", "value"), [
    ("name", "a;b"), ("name", "$(reboot)"), ("name", "x' OR '1'='1"), ("name", 'a"b'),
    ("name", "line\nbreak"), ("name", "-oProxyCommand=sh"),
    ("target_parent", "backup;reboot"), ("target_parent", "$(id)"),
    ("target_parent", "-backup"), ("target_parent", "backup/a b"),
    ("target_parent", "nopool/x"), ("source", "dataset:tank/pg;x"),
    ("source", "cluster:/elsewhere"), ("source", "nothing"),
    ("bandwidth_limit", "1"), ("bandwidth_limit", "99999999999999999999"),
    ("bandwidth_limit", "lots"), ("interval_minutes", "-1"),
    ("interval_minutes", "999999999"), ("lag_threshold_minutes", "0"),
    ("keep_hourly", "100000"), ("mode", "-R"), ("target_host", "abc"),
])
def test_hostile_and_absurd_values_are_errors_beside_their_field(signed_in, hosts, field,
                                                                 value):
    response = signed_in.post("/replication/new/", form(hosts, **{field: value}))
    page = response.content.decode()
    assert response.status_code == 200 and not ReplicationLink.objects.exists()
    assert field_error(page, field), page
    assert f'name="{field}"' in page and 'aria-invalid="true"' in page


def test_a_source_of_another_host_is_refused_on_the_source_field(signed_in, hosts):
    source, target = hosts
    response = signed_in.post("/replication/new/", form(
        hosts, source_host=target.pk, target_host=source.pk, target_parent="tank/copy"))
    assert "not one of the available choices" in field_error(response.content.decode(),
                                                              "source")
    assert not ReplicationLink.objects.exists()


def test_the_source_list_holds_the_chosen_hosts_sources_only(signed_in, hosts):
    source, target = hosts
    page = signed_in.get("/replication/new/").content.decode()
    chooser = re.search(r'<select name="source_host"[^>]*>', page).group(0)
    assert 'hx-get="/replication/new/"' in chooser and 'hx-select="#id_source"' in chooser
    target.datasets.create(name="backup/only-on-target", type="filesystem")
    mine = signed_in.get("/replication/new/", {"source_host": target.pk},
                         HTTP_HX_REQUEST="true").content.decode()
    listed = re.search(r'<select name="source".*?</select>', mine, re.S).group(0)
    assert "dataset:backup/only-on-target" in listed
    assert "cluster:/tank/pg5432/data" not in listed  # the source host's, not this one's
    theirs = signed_in.get("/replication/new/", {"source_host": source.pk}).content.decode()
    listed = re.search(r'<select name="source".*?</select>', theirs, re.S).group(0)
    assert "cluster:/tank/pg5432/data" in listed and "only-on-target" not in listed
    assert signed_in.get("/replication/new/", {"source_host": "x;1"}).status_code == 200


def test_a_taken_name_is_an_error_on_the_name(signed_in, hosts):
    factories.link(*hosts, target_parent="backup/other")
    page = signed_in.post("/replication/new/", form(hosts)).content.decode()
    assert "exists already" in field_error(page, "name")


def test_the_link_page_edits_its_settings(signed_in, hosts):
    link = factories.synced(*hosts)
    address = f"/replication/{link.pk}/"
    page = signed_in.get(address).content.decode()
    assert "Link main" in page and "tank/pg/data" in page and "@pozol_hourly_1" in page
    assert 'name="name"' not in page  # the identity is not a setting
    response = signed_in.post(address, {**form(hosts, interval_minutes="15",
                                                bandwidth_limit="1048576")})
    assert response.status_code == 302
    link.refresh_from_db()
    assert (link.interval_minutes, link.bandwidth_limit) == (15, 1 << 20)
    bad = signed_in.post(address, form(hosts, bandwidth_limit="12")).content.decode()
    assert "65536" in field_error(bad, "bandwidth_limit")
    link.refresh_from_db()
    assert link.bandwidth_limit == 1 << 20 and link.name == "main"


def test_the_link_page_says_which_stream_flags_and_why_and_takes_the_opt_outs(
        signed_in, hosts):
    link = factories.synced(*hosts)
    address = f"/replication/{link.pk}/"
    page = signed_in.get(address).content.decode()
    streams = page[page.index('id="streams"'):page.index("</section>", page.index(
        'id="streams"'))]
    assert "<code>tank/pg/data</code>" in streams and "<code>tank/pg/wal</code>" in streams
    assert "zfs send (no -w, -c or -L)" in streams  # two zfs-fuse hosts
    assert "the source (zfs-fuse, pool version 23) cannot send compressed streams" in streams
    assert "has no native encryption" in streams
    assert 'name="compressed_streams"' in page and 'name="large_block_streams"' in page
    response = signed_in.post(address, form(hosts, compressed_streams=None))
    assert response.status_code == 302
    link.refresh_from_db()
    assert not link.compressed_streams and link.large_block_streams
    page = signed_in.get(address).content.decode()
    assert "the link opts out" in page


def test_large_blocks_cannot_be_changed_on_the_page_once_sent(signed_in, hosts):
    link = factories.synced(*hosts, large_blocks_sent=False)
    address = f"/replication/{link.pk}/"
    page = signed_in.get(address).content.decode()
    field = re.search(r'<input[^>]*name="large_block_streams"[^>]*>', page).group(0)
    assert "disabled" in field and "checked" not in field  # what it sends: without -L
    assert "copies were received without -L" in page
    assert signed_in.post(address, form(hosts)).status_code == 302  # the checkbox ignored
    link.refresh_from_db()
    assert link.large_block_streams is False and link.large_blocks_sent is False


def test_run_now_and_its_runs_on_the_page(signed_in, hosts, delivered):
    link = factories.link(*hosts)
    response = signed_in.post(f"/replication/{link.pk}/run/")
    operation = Operation.objects.get()
    assert response.url == f"/operations/{operation.pk}/"
    assert operation.kind == "replication.run" and operation.trigger == "ui"
    page = signed_in.get(f"/replication/{link.pk}/").content.decode()
    assert f'href="/operations/{operation.pk}/"' in page and 'hx-trigger="every 3s"' in page
    again = signed_in.post(f"/replication/{link.pk}/run/",
                           HTTP_REFERER=f"/replication/{link.pk}/", follow=True)
    assert Operation.objects.count() == 1
    assert "is running already" in again.content.decode()
    assert signed_in.get(f"/replication/{link.pk}/run/").status_code == 405
    live = signed_in.get(f"/replication/{link.pk}/", HTTP_HX_REQUEST="true",
                         HTTP_HX_TARGET="link-live")
    assert live.status_code == 200 and live.content.decode().startswith('<div id="link-live"')
    Operation.objects.update(status=Operation.Status.SUCCEEDED)
    assert signed_in.get(f"/replication/{link.pk}/", HTTP_HX_REQUEST="true",
                         HTTP_HX_TARGET="link-live").status_code == 286


def test_pause_resume_and_the_rollback_opt_in(signed_in, hosts):
    link = factories.link(*hosts)
    address = f"/replication/{link.pk}/"
    page = signed_in.get(address).content.decode()
    assert "DESTROYS every snapshot and change made there" in page  # the confirmation
    signed_in.post(address + "pause/")
    link.refresh_from_db()
    assert link.paused and ">Resume<" in signed_in.get(address).content.decode()
    signed_in.post(address + "resume/")
    signed_in.post(address + "opt-in/")
    link.refresh_from_db()
    assert not link.paused and link.rollback_opt_in and link.rollback_opted_in_at
    page = signed_in.get(address).content.decode()
    assert "Rollback allowed</strong> by olga on <time" in page and "Opt out" in page
    signed_in.post(address + "opt-out/")
    link.refresh_from_db()
    assert not link.rollback_opt_in and link.rollback_opted_in_by is None
    assert signed_in.post(address + "explode/").status_code == 404


def test_delete_starts_the_removal(signed_in, hosts, delivered):
    link = factories.link(*hosts)
    page = signed_in.get(f"/replication/{link.pk}/").content.decode()
    assert 'data-confirm="Delete link main?' in page
    response = signed_in.post(f"/replication/{link.pk}/delete/")
    removal = Operation.objects.get()
    assert response.url == f"/operations/{removal.pk}/" and removal.kind == "replication.remove"
    assert not ReplicationLink.objects.exists()
    assert signed_in.get(f"/replication/{link.pk}/").status_code == 404


def test_the_host_tab_lists_both_directions(signed_in, hosts):
    source, target = hosts
    factories.synced(source, target, "out")
    factories.link(target, source, "returned", sources=["backup"], cluster_data_dir="",
                   target_parent="tank/back")
    factories.link(factories.source("db9"), factories.target("db8"), "elsewhere")
    page = signed_in.get(f"/hosts/{source.pk}/replication/").content.decode()
    sent, received = page.split("Received into db1")
    assert ">out<" in sent and "20 min behind" in sent and "returned" not in sent
    assert ">returned<" in received and "lag not known: never run" in received
    assert ">out<" not in received
    assert "elsewhere" not in page
    empty = signed_in.get(f"/hosts/{factories.target('db7').pk}/replication/").content
    assert "No link sends from db7" in empty.decode()


def queries(fetch) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = fetch()
    assert response.status_code == 200
    return len(captured.captured_queries)


@pytest.mark.parametrize("address", ["/replication/", "/hosts/{source}/replication/",
                                     "/hosts/{target}/replication/", "/api/replication-links/"])
def test_lists_cost_the_same_queries_at_1_and_20_links(signed_in, api, hosts, address,
                                                       django_user_model):
    source, target = hosts
    url = address.format(source=source.pk, target=target.pk)
    client = api if url.startswith("/api/") else signed_in
    first = factories.synced(source, target, "l0", target_parent="backup/l0")
    factories.running(first)
    one = queries(lambda: client.get(url))
    for number in range(1, 20):
        row = factories.synced(source, target, f"l{number}", target_parent=f"backup/l{number}",
                               rollback_opt_in=True,
                               rollback_opted_in_by=django_user_model.objects.create_user(
                                   f"u{number}"))
        if number % 3 == 0:
            factories.running(row)
    assert ReplicationLink.objects.count() == 20
    assert queries(lambda: client.get(url)) == one


def test_a_link_never_run_but_older_than_its_threshold_is_late(signed_in, hosts):
    link = factories.link(*hosts, lag_threshold_minutes=5)
    ReplicationLink.objects.filter(pk=link.pk).update(
        created_at=link.created_at - timedelta(hours=2))
    page = signed_in.get("/replication/").content.decode()
    assert '<span class="lag late">never replicated (the link is 2 h old)</span>' in page


def test_a_bandwidth_limit_the_source_cannot_apply_is_an_error_beside_it(signed_in, hosts):
    source, _ = hosts
    source.facts = {**source.facts, "tools": {"zfs": "/usr/sbin/zfs"}}
    source.save()
    response = signed_in.post("/replication/new/", form(hosts, bandwidth_limit="1048576"))
    page = response.content.decode()
    assert response.status_code == 200 and not ReplicationLink.objects.exists()
    assert "neither pv nor mbuffer" in field_error(page, "bandwidth_limit"), page
