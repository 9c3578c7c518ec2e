"""The operator's pages, rendered from facts discovery recorded (no SSH here:
the web process never opens it)."""


import pytest
from django.test import Client

from apps.fleet.models import Host
from apps.fleet.steps import record_facts
from apps.ops import engine
from apps.remote.gather import discover
from tests.html import parse
from tests.racing import race
from tests.remote.fixtures.hosts import FIXTURES, replay_transcript

pytestmark = pytest.mark.django_db


@pytest.fixture
def host(replayed_host):
    return replayed_host



def test_pages_need_a_sign_in(client, host):
    for url in ("/", f"/hosts/{host.pk}/", "/operations/"):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/login/")


def test_the_overview_lists_hosts_with_pools_and_clusters(signed_in, host):
    hosts = parse(signed_in.get("/").content).find("table", id="hosts")
    name, reachable, _zfs, _pools, postgres, *_ = hosts.rows()[0]
    assert name.startswith("db1 ") and reachable == "reachable"
    assert [p.text.split()[0] for p in hosts.find_all("div", class_="pool")] == \
        [pool.name for pool in host.pools.all()]
    cluster = host.clusters.get()
    assert postgres == f"{cluster.version} :{cluster.port}" and cluster.version.startswith("15")


def test_the_host_page_shows_datasets_with_ratios(signed_in, host):
    page = parse(signed_in.get(f"/hosts/{host.pk}/datasets/").content)
    data = host.clusters.get().data_dataset
    rows = {row[0]: row for row in page.find("table", id="datasets").rows()}
    assert rows[data.name][5] == f"{data.compressratio:.2f}x"
    page = parse(signed_in.get(f"/hosts/{host.pk}/postgresql/").content)
    settings = {row[0]: row for row in page.find("div", class_="cluster").rows()}
    assert settings["shared_buffers"][3] == "a restart"
    kernel = parse(signed_in.get(f"/hosts/{host.pk}/").content).find("div", id="kernel")
    assert "hit ratio 97%" in kernel.find("p").text
    assert "vm.dirty_ratio=20" in [code.text for code in kernel.find_all("code")]


def test_direct_io_and_block_cloning_show_where_the_zfs_has_them(signed_in, host):
    # zfs-fuse (the replayed host) has neither: said as "n/a", as for sync.
    page = parse(signed_in.get(f"/hosts/{host.pk}/datasets/").content)
    assert {row[10] for row in page.find("table", id="datasets").rows()} == {"n/a"}
    assert {row[9] for row in page.find("table", id="pools").rows()} == {"n/a"}
    captured = FIXTURES / "openzfs-2.3" / "captured" / "transcript.json"
    record_facts(host, discover(replay_transcript(captured)).to_dict())
    page = parse(signed_in.get(f"/hosts/{host.pk}/datasets/").content)
    datasets = page.find("table", id="datasets")
    assert [th.text for th in datasets.find_all("th")][10] == "Direct I/O"
    assert {row[0]: row[10] for row in datasets.rows()}["tank/pg/data"] == "standard"
    pools = page.find("table", id="pools")
    assert [th.text for th in pools.find_all("th")][9] == "Block cloning"
    assert {row[0]: row[9] for row in pools.rows()} == {"tank": "enabled"}


def test_the_operation_partial_polls_until_the_operation_ends(signed_in, host, delivered):
    operation = engine.start("fleet.discover", host=host)
    htmx = {"HTTP_HX_REQUEST": "true"}
    assert signed_in.get(f"/operations/{operation.pk}/", **htmx).status_code == 200
    page = signed_in.get(f"/operations/{operation.pk}/").content.decode()
    assert 'hx-trigger="every 1s"' in page

    engine.cancel(operation)
    assert signed_in.get(f"/operations/{operation.pk}/", **htmx).status_code == 286
    page = signed_in.get(f"/operations/{operation.pk}/").content.decode()
    assert "hx-trigger" not in page


def test_adding_a_host_in_the_form_refuses_hostile_names(signed_in, delivered):
    response = signed_in.post("/hosts/add/", {
        "name": "db1; reboot", "address": "$(reboot)", "port": 22, "user": "root",
        "work_dir": "/var/lib/pozol", "key_source": "generate"})
    assert response.status_code == 200
    assert not Host.objects.exists() and delivered == []


def test_adding_a_host_in_the_form_starts_discovery(signed_in, delivered):
    response = signed_in.post("/hosts/add/", {
        "name": "db2", "address": "10.0.0.5", "port": 22, "user": "root",
        "work_dir": "/var/lib/pozol", "key_source": "generate"})
    host = Host.objects.get(name="db2")
    assert response.status_code == 302 and response.url == f"/hosts/{host.pk}/"
    assert host.public_key.startswith("ssh-ed25519 ")
    page = signed_in.get(response.url).content.decode()
    assert host.public_key in page


@pytest.mark.parametrize(("row", "shown"), [
    ({"setting": "16384", "unit": "8kB"}, "128MB"),
    ({"setting": "4096", "unit": "kB"}, "4MB"),
    ({"setting": "1024", "unit": "MB"}, "1GB"),
    ({"setting": "-1", "unit": "8kB"}, "-1 8kB"),
    ({"setting": "300", "unit": "s"}, "300s"),
    ({"setting": "on", "unit": None}, "on"),
])
def test_settings_are_shown_as_an_operator_writes_them(row, shown):
    from apps.fleet.templatetags.fleet import pg_value

    assert pg_value(row) == shown


@pytest.mark.django_db(transaction=True)
def test_parallel_form_adds_of_one_name_never_fail(operator, delivered):
    """The form checks the name first, but a race past that check is still a
    form error, not a 500."""
    def add() -> int:
        client = Client(raise_request_exception=False)
        client.force_login(operator)
        return client.post("/hosts/add/", {
            "name": "db9", "address": "10.0.0.5", "port": 22, "user": "root",
            "work_dir": "/var/lib/pozol", "key_source": "generate"}).status_code

    statuses = race(10, add)
    assert sorted(statuses) == [200] * 9 + [302]
    assert Host.objects.count() == 1
