"""The operator's pages, rendered from facts discovery recorded (no SSH here:
the web process never opens it)."""

import pytest

from apps.fleet.models import Host
from apps.ops import engine

pytestmark = pytest.mark.django_db


@pytest.fixture
def host(replayed_host):
    return replayed_host


@pytest.fixture
def signed_in(client, operator):
    client.force_login(operator)
    return client


def test_pages_need_a_sign_in(client, host):
    for url in ("/", f"/hosts/{host.pk}/", "/operations/"):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/login/")


def test_the_overview_lists_hosts_with_pools_and_clusters(signed_in, host):
    page = signed_in.get("/").content.decode()
    assert "db1" in page and "reachable" in page
    for pool in host.pools.all():
        assert pool.name in page
    assert "15" in page  # the PostgreSQL version of the captured cluster


def test_the_host_page_shows_datasets_with_ratios(signed_in, host):
    page = signed_in.get(f"/hosts/{host.pk}/").content.decode()
    data = host.clusters.get().data_dataset
    assert data.name in page and f"{data.compressratio:.2f}x" in page
    assert "shared_buffers" in page and "postmaster" in page
    assert "hit ratio 97%" in page and "vm.dirty_ratio=20" in page


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
