"""Every list is a fixed number of queries whatever its length, and none reads a
host's facts (about 68 KB each) to show a name. Each test measures one page
with 3 rows and again with 30 (copies of a really discovered host), and the
counts must be equal."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.fleet.models import Host
from apps.ops.models import Operation
from apps.tuning.models import Plan, PlanChange
from tests.bench import seed
from tests.benchmarks import factories
from tests.snapshots import factories as snapshot_factories

pytestmark = pytest.mark.django_db

FACTS_COLUMN = '"fleet_host"."facts"'
SETTINGS_COLUMN = '"fleet_pgcluster"."settings"'
HOST_LINK = re.compile(r'href="/hosts/\d+/"')
OPERATION_LINK = re.compile(r'href="/operations/\d+/"')



@pytest.fixture
def users(django_user_model):
    """Several people trigger work: a per-row user lookup would show."""
    return [django_user_model.objects.create_user(f"user{i}") for i in range(3)]


def queries(fetch: Callable[[], object]) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = fetch()
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def grown(replayed_host: Host, add_rows: Callable[[list[Host]], None],
          fetch: Callable[[], object]) -> tuple[list[str], list[str]]:
    """The queries of one page with 3 hosts' rows and with 30."""
    hosts = [replayed_host, *seed.clone_hosts(replayed_host, 2, prefix="a")]
    add_rows(hosts)
    small = queries(fetch)
    more = seed.clone_hosts(replayed_host, 27, prefix="b")
    add_rows(more)
    assert Host.objects.count() == 30
    return small, queries(fetch)


def assert_flat(small: list[str], large: list[str], *, reads_facts: bool = False) -> None:
    assert len(small) == len(large), "\n".join(large)
    if not reads_facts:
        assert not [sql for sql in large if FACTS_COLUMN in sql]


def snapshots(hosts: list[Host]) -> None:
    """A held, a cloned and a plain snapshot per host (per mention of the host)."""
    for host in hosts:
        start = host.snapshots.count()
        for number, changes in enumerate([{"userrefs": 1}, {"clones": ["tank/c"]}, {}]):
            snapshot_factories.snapshot(host, f"tank/pg/data@s{start + number}", **changes)


def no_rows(hosts: list[Host]) -> None:
    pass


def test_the_overview(signed_in, replayed_host):
    small, large = grown(replayed_host, seed.raise_alerts, lambda: signed_in.get("/"))
    assert_flat(small, large)
    assert not [sql for sql in large if SETTINGS_COLUMN in sql]
    assert len(large) <= 8


def test_a_host_page(signed_in, replayed_host, users):
    def add(hosts):
        seed.raise_alerts(hosts)
        seed.seed_operations(hosts, per_host=12, users=users)

    small, large = grown(replayed_host, add, lambda: signed_in.get(f"/hosts/{replayed_host.pk}/"))
    # The host page shows facts (ARC, sysctls, module parameters): it reads one host's.
    assert_flat(small, large, reads_facts=True)


def with_everything(hosts: list[Host]) -> None:
    """What the overview's newer columns show: profiles, drift, findings, running work."""
    seed.raise_alerts(hosts)
    seed.follow_profiles(hosts)
    seed.start_work(hosts)


@pytest.mark.parametrize("sizes", [(1, 10, 50, 120)])
def test_the_overview_with_profiles_findings_and_running_work(signed_in, replayed_host, sizes):
    """The same queries at every fleet size, whatever each host has."""
    counts, have = [], [replayed_host]
    with_everything(have)
    for size in sizes:
        more = seed.clone_hosts(replayed_host, size - len(have), prefix=f"s{size}-")
        with_everything(more)
        have += more
        captured = queries(lambda: signed_in.get("/"))
        assert not [sql for sql in captured if FACTS_COLUMN in sql or SETTINGS_COLUMN in sql]
        counts.append(len(captured))
    assert counts == [counts[0]] * len(sizes) and counts[0] <= 8, counts
    page = signed_in.get("/").content.decode()
    assert "drifted (1)" in page and "in line" in page and page.count('class="running"') >= 50
    assert "hx-trigger=\"every 2s\"" in page


@pytest.mark.parametrize("section", ["overview", "metrics", "datasets", "postgresql", "tuning",
                                     "benchmarks", "snapshots", "operations"])
def test_each_host_page_section(signed_in, replayed_host, users, section):
    def add(hosts):
        with_everything(hosts)
        seed.seed_operations(hosts, per_host=2, users=users)
        finished_benchmarks(users)(hosts)
        plans(users)(hosts)
        snapshots(hosts)
        if replayed_host not in hosts:  # the host shown has more rows the second time
            snapshots([replayed_host] * 9)
            seed.seed_operations([replayed_host], per_host=12, users=users)
            finished_benchmarks(users)([replayed_host] * 4)
            plans(users)([replayed_host] * 3)

    url = f"/hosts/{replayed_host.pk}/" + ("" if section == "overview" else f"{section}/")
    small, large = grown(replayed_host, add, lambda: signed_in.get(url))
    assert_flat(small, large, reads_facts=True)
    htmx = queries(lambda: signed_in.get(url, HTTP_HX_REQUEST="true"))
    assert len(htmx) <= len(large), "\n".join(htmx)


def test_the_hosts_api(api, replayed_host):
    small, large = grown(replayed_host, seed.raise_alerts, lambda: api.get("/api/hosts/"))
    assert_flat(small, large)
    assert len(large) <= 6


def test_the_operations_api(api, replayed_host, users):
    small, large = grown(replayed_host, lambda hosts: seed.seed_operations(
        hosts, per_host=1, users=users), lambda: api.get("/api/operations/"))
    assert_flat(small, large)
    assert not [sql for sql in large if '"ops_operation"."state"' in sql]


def test_the_operations_page(signed_in, replayed_host, users):
    small, large = grown(replayed_host, lambda hosts: seed.seed_operations(
        hosts, per_host=1, users=users), lambda: signed_in.get("/operations/"))
    assert_flat(small, large)


def finished_benchmarks(users: list) -> Callable[[list[Host]], None]:
    def add(hosts: list[Host]) -> None:
        for i, host in enumerate(hosts):
            bench = factories.finished(host, tps=100.0 + i, latency=1.5, wal_per_tx=900.0)
            Operation.objects.filter(pk=bench.operation_id).update(
                triggered_by=users[i % len(users)])
    return add


def test_the_benchmarks_page(signed_in, replayed_host, users):
    small, large = grown(replayed_host, finished_benchmarks(users),
                         lambda: signed_in.get("/benchmarks/"))
    assert_flat(small, large)


def test_the_benchmarks_api(api, replayed_host, users):
    small, large = grown(replayed_host, finished_benchmarks(users),
                         lambda: api.get("/api/benchmarks/"))
    assert_flat(small, large)


def plans(users: list) -> Callable[[list[Host]], None]:
    def add(hosts: list[Host]) -> None:
        for i, host in enumerate(hosts):
            operation = Operation.objects.create(
                kind="tuning.apply", host=host, subject=host.name, step="done",
                status=Operation.Status.SUCCEEDED, triggered_by=users[i % len(users)])
            plan = Plan.objects.create(host=host, operation=operation,
                                       status=Plan.Status.APPLIED)
            PlanChange.objects.create(plan=plan, position=1, layer="postgres",
                                      target="5432", key="shared_buffers",
                                      method="pg_restart", desired="1GB")
    return add


def test_the_plans_api(api, replayed_host, users):
    small, large = grown(replayed_host, plans(users), lambda: api.get("/api/plans/"))
    assert_flat(small, large)
    first = api.get("/api/plans/").json()["results"][0]
    assert first["needs_restart"] == ["shared_buffers"] and first["is_empty"] is False


def test_the_overview_pages_fifty_hosts_at_a_time(signed_in, replayed_host):
    seed.clone_hosts(replayed_host, 54, prefix="h")
    first = signed_in.get("/").content.decode()
    second = signed_in.get("/?page=2").content.decode()
    assert len(HOST_LINK.findall(first)) == 50 and len(HOST_LINK.findall(second)) == 5
    assert "page 1 of 2 · 55 hosts" in first and 'rel="next"' in first
    assert "db1" in first and "h00053" in second


def test_the_search_box_finds_by_name_or_address_with_and_without_htmx(signed_in,
                                                                       replayed_host):
    seed.clone_hosts(replayed_host, 30, prefix="web")
    page = signed_in.get("/", {"q": "WEB0001"}).content.decode()
    assert 'value="WEB0001"' in page and "<html" in page
    assert sorted(set(re.findall(r">(web\d+)<", page))) == [f"web{i:05d}" for i in range(10, 20)]
    by_address = signed_in.get("/", {"q": "127.0.0.9"}).content.decode()
    assert re.findall(r">(db1|web\d+)<", by_address) == ["db1"]
    partial = signed_in.get("/", {"q": "web00029"}, HTTP_HX_REQUEST="true").content.decode()
    assert partial.startswith('<div id="fleet">') and "<html" not in partial
    assert "web00029" in partial and "db1" not in partial
    nothing = signed_in.get("/", {"q": "nosuchhost"}).content.decode()
    assert "No host's name or address contains" in nothing


def test_the_hosts_api_leaves_facts_to_their_own_endpoint(api, replayed_host):
    seed.raise_alerts([replayed_host])
    listed = api.get("/api/hosts/").json()["results"][0]
    assert "facts" not in listed and "facts" not in api.get(
        f"/api/hosts/{replayed_host.pk}/").json()
    assert listed["open_alerts"] == ["db1 did not answer"]
    assert listed["zfs_version"] and listed["zfs_version"] == replayed_host.zfs_version
    facts = api.get(f"/api/hosts/{replayed_host.pk}/facts/").json()
    replayed_host.refresh_from_db()
    assert facts == replayed_host.facts and facts["arcstats"]
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "/api/hosts/{id}/facts/" in schema["paths"]


def test_the_operations_page_pages_without_counting(signed_in, replayed_host):
    seed.seed_operations([replayed_host], per_host=60)
    first = signed_in.get("/operations/").content.decode()
    second = signed_in.get("/operations/?page=2").content.decode()
    assert len(OPERATION_LINK.findall(first)) == 50
    assert len(OPERATION_LINK.findall(second)) == 10
    assert 'rel="next"' in first and 'rel="next"' not in second and 'rel="prev"' in second
    assert signed_in.get("/operations/?page=bogus").status_code == 200
