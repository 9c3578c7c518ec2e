"""The clone pages through Django's client: the host page's Clones tab (each clone's
connection string, lifetime, protection and size; destroy with a confirmation), making
a clone (its password on a page shown once, never again; refusals beside the
fields), destroy (refused while protected), the host's clone settings, and the lists at
a fixed number of queries however many clones there are. Operations are started, not
run: there is no worker here."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.clones.models import Clone, CloneHostSettings
from apps.ops.models import Operation
from tests.clones import factories

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def host():
    row = factories.host()
    factories.cluster(row)
    factories.snapshots(row)
    return row


def form(host, **changes) -> dict:
    values = {"cluster": host.clusters.get().pk, "snapshot": factories.SNAPSHOT,
              "name": "dev1", "ttl_minutes": "60", "protected_minutes": "", "role": "dev",
              **changes}
    return {k: v for k, v in values.items() if v is not None}


def field_error(page: str, field: str) -> str:
    match = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', page, re.S)
    return match.group(1) if match else ""


def tab(client, host) -> str:
    response = client.get(f"/hosts/{host.pk}/clones/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_tab_shows_each_live_clone(signed_in, host):
    factories.clone(host, "ready-one", port=6500)
    factories.clone(host, "kept", port=6501, expires_at=None,
                    protected_until=timezone.now() + timedelta(hours=3))
    factories.clone(host, "broken", port=6502, state=Clone.State.FAILED, connection_string="",
                    error="PostgreSQL did not start: FATAL: could not map memory")
    factories.clone(host, "gone", port=6503, state=Clone.State.DESTROYED)
    host.datasets.create(name="tank/pozol_clones/ready-one", used=3 << 20)
    page = tab(signed_in, host)
    assert "ready-one" in page and "kept" in page and "broken" in page
    assert "gone" not in page
    assert f"postgresql://dev@{host.address}:6500/postgres" in page
    assert "3.0 MiB" in page and "not known" in page
    assert "no TTL" in page and "could not map memory" in page
    assert 'aria-label="Destroy clone ready-one"' in page
    assert 'aria-label="Destroy clone kept"' not in page  # protected: no button
    assert 'data-confirm="Destroy clone ready-one?' in page
    assert "Ports 6500–6599" in page and "127.0.0.0/8 only" in page


def test_the_form_offers_now_and_the_clusters_snapshots(signed_in, host):
    factories.snapshots(host, "pozol_hourly_20261123T200000Z",
                        created_at=timezone.now() - timedelta(minutes=5))
    factories.snapshot_factories.snapshot(host, "tank/other@not_of_the_cluster")
    page = tab(signed_in, host)
    assert '<option value="" selected>now (a fresh snapshot first)</option>' in page
    assert f'<option value="{factories.SNAPSHOT}">' in page
    assert '<option value="pozol_hourly_20261123T200000Z">' in page
    assert "not_of_the_cluster" not in page
    assert page.index("pozol_hourly_20261123T200000Z") < page.index(factories.SNAPSHOT)


def test_a_host_without_clusters_says_so(signed_in):
    row = factories.host("bare")
    assert "No PostgreSQL cluster known on bare" in tab(signed_in, row)


def test_making_a_clone_shows_its_password_once(signed_in, host):
    """POST, then a redirect to a page that shows the password the first time it is
    read: a refresh makes no second clone and shows the password no more, and the
    password is in no URL and no session."""
    response = signed_in.post(f"/clones/hosts/{host.pk}/new/", form(host))
    clone = Clone.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/clones/{clone.pk}/password/"
    password = clone.decrypted_password()
    assert password not in str(dict(signed_in.session))
    shown = signed_in.get(response["Location"])
    assert shown.status_code == 200
    assert "no-store" in shown["Cache-Control"]
    page = shown.content.decode()
    assert f'value="{password}"' in page and 'class="secret"' in page
    assert 'data-copy="password"' in page
    assert "Copy the password now: it is not shown again." in page
    assert f"postgresql://dev@{host.address}:6500/postgres" in page
    operation = Operation.objects.get()
    assert operation.kind == "clones.create" and operation.trigger == "ui"
    assert f"/operations/{operation.pk}/" in page
    again = signed_in.get(response["Location"]).content.decode()
    assert password not in again and "was shown once" in again
    assert Clone.objects.count() == 1 and Operation.objects.count() == 1
    assert password not in tab(signed_in, host)
    assert password not in signed_in.get(f"/operations/{operation.pk}/").content.decode()
    assert clone.expires_at is not None and clone.protected_until is None


def test_another_session_never_sees_the_password(signed_in, host, operator):
    signed_in.post(f"/clones/hosts/{host.pk}/new/", form(host))
    clone = Clone.objects.get()
    other = type(signed_in)()
    other.force_login(operator)
    page = other.get(f"/clones/{clone.pk}/password/").content.decode()
    assert clone.decrypted_password() not in page and "was shown once" in page


def test_the_password_page_of_a_clone_without_a_layout_is_no_error(signed_in, host):
    clone = factories.clone(host, layout={})
    page = signed_in.get(f"/clones/{clone.pk}/password/")
    assert page.status_code == 200 and clone.connection_string in page.content.decode()


@pytest.mark.parametrize("state, actions", [
    (Clone.State.CREATING, ()), (Clone.State.READY, ("reset-form", "destroy-form")),
    (Clone.State.FAILED, ("reset-form", "destroy-form")), (Clone.State.DESTROYING, ()),
    (Clone.State.DESTROYED, ())])
def test_the_live_part_carries_the_actions_its_state_allows(signed_in, host, state, actions):
    """The part htmx swaps every second holds the buttons, so a clone destroyed while its
    page is open loses Reset and Destroy, and one being made gets them once Ready."""
    clone = factories.clone(host, state=state)
    live = signed_in.get(f"/clones/{clone.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert live.lstrip().startswith('<div id="clone-live"')
    assert {f for f in ("reset-form", "destroy-form") if f'id="{f}"' in live} == set(actions)
    polls = state in (Clone.State.CREATING, Clone.State.DESTROYING)
    assert ('hx-trigger="every 1s"' in live) == polls


def test_now_takes_a_snapshot_first(signed_in, host):
    response = signed_in.post(f"/clones/hosts/{host.pk}/new/", form(host, snapshot=""))
    assert response.status_code == 302
    assert Operation.objects.get().state["take_snapshot"] is True


@pytest.mark.parametrize("field, value", [
    ("name", "a;b"), ("name", "$(reboot)"), ("name", "x' OR '1'='1"), ("name", "dev\n"),
    ("name", "-rf"), ("name", 'say"hi'), ("role", "postgres"), ("role", "a b"),
    ("role", "dev\n"), ("role", "$(id)"), ("ttl_minutes", "0"), ("ttl_minutes", "999999999"),
    ("ttl_minutes", "ten"), ("protected_minutes", "-1"), ("snapshot", "nope"),
    ("snapshot", "$(id)"), ("cluster", "999999"), ("cluster", "x"),
])
def test_hostile_input_lands_beside_its_field(signed_in, host, field, value):
    response = signed_in.post(f"/clones/hosts/{host.pk}/new/", form(host, **{field: value}))
    assert response.status_code == 200
    page = response.content.decode()
    assert field_error(page, field), page
    assert "Copy the password now" not in page
    assert not Clone.objects.exists() and not Operation.objects.exists()


def test_an_exhausted_port_range_is_said_on_the_form(signed_in, host):
    CloneHostSettings.objects.create(host=host, port_min=6500, port_max=6500)
    factories.clone(host, "taken", port=6500)
    page = signed_in.post(f"/clones/hosts/{host.pk}/new/", form(host)).content.decode()
    assert "clone range 6500-6500 is taken" in page
    assert not Operation.objects.exists()


def test_the_new_page_and_unknown_hosts(signed_in, host):
    assert signed_in.get(f"/clones/hosts/{host.pk}/new/").status_code == 200
    assert signed_in.get("/clones/hosts/999/new/").status_code == 404
    assert signed_in.get("/clones/hosts/999/settings/").status_code == 404
    assert signed_in.post("/clones/999/destroy/").status_code == 404


def test_destroy_starts_an_operation(signed_in, host):
    clone = factories.clone(host)
    response = signed_in.post(f"/clones/{clone.pk}/destroy/")
    operation = Operation.objects.get()
    assert response.status_code == 302 and response.url == f"/operations/{operation.pk}/"
    assert operation.kind == "clones.destroy"
    clone.refresh_from_db()
    assert clone.state == Clone.State.DESTROYING
    assert signed_in.get(f"/clones/{clone.pk}/destroy/").status_code == 405


def test_a_protected_clone_is_refused_with_the_reason(signed_in, host):
    clone = factories.clone(host, protected_until=timezone.now() + timedelta(hours=1))
    back = f"/hosts/{host.pk}/clones/"
    response = signed_in.post(f"/clones/{clone.pk}/destroy/", HTTP_REFERER=back,
                              follow=True)
    assert response.redirect_chain[-1][0] == back
    assert f"clone {clone.name} is protected until" in response.content.decode()
    assert not Operation.objects.exists()


def test_anonymous_visitors_are_sent_to_sign_in(client, host):
    clone = factories.clone(host)
    for response in (client.get(f"/clones/hosts/{host.pk}/new/"),
                     client.post(f"/clones/hosts/{host.pk}/new/", form(host)),
                     client.post(f"/clones/{clone.pk}/destroy/"),
                     client.get(f"/clones/hosts/{host.pk}/settings/")):
        assert response.status_code == 302 and response.url.startswith("/login/")
    assert Clone.objects.count() == 1 and not Operation.objects.exists()


# ---- settings -------------------------------------------------------------------------------

def settings_form(**changes) -> dict:
    return {"port_min": "7000", "port_max": "7050", "listen_address": "10.0.0.5",
            "allowed_networks": "10.0.0.0/8\n192.168.1.0/24", **changes}


def test_settings_are_saved(signed_in, host):
    url = f"/clones/hosts/{host.pk}/settings/"
    assert 'value="6500"' in signed_in.get(url).content.decode()
    response = signed_in.post(url, settings_form())
    assert response.status_code == 302 and response.url == f"/hosts/{host.pk}/clones/"
    limits = CloneHostSettings.objects.get(host=host)
    assert (limits.port_min, limits.port_max) == (7000, 7050)
    assert limits.listen_address == "10.0.0.5"
    assert limits.allowed_networks == ["10.0.0.0/8", "192.168.1.0/24"]
    page = tab(signed_in, host)
    assert "Ports 7000–7050" in page and "10.0.0.0/8, 192.168.1.0/24" in page
    assert "10.0.0.0/8\n192.168.1.0/24" in signed_in.get(url).content.decode()


@pytest.mark.parametrize("changes, field", [
    ({"port_min": "80"}, "port_min"), ({"port_max": "70000"}, "port_max"),
    ({"port_min": "7100", "port_max": "7000"}, "port_max"),
    ({"listen_address": "not an address"}, "listen_address"),
    ({"allowed_networks": "10.0.0.0/33"}, "allowed_networks"),
    ({"allowed_networks": "10.1.2.3/8"}, "allowed_networks"),
    ({"allowed_networks": "; rm -rf /"}, "allowed_networks"),
    ({"allowed_networks": "10.0.0.0/8 trust"}, "allowed_networks"),
])
def test_absurd_settings_land_beside_their_field(signed_in, host, changes, field):
    response = signed_in.post(f"/clones/hosts/{host.pk}/settings/", settings_form(**changes))
    assert response.status_code == 200
    assert field_error(response.content.decode(), field)
    assert not CloneHostSettings.objects.exists()


# ---- cost -----------------------------------------------------------------------------------

def queries(fetch) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = fetch()
    assert response.status_code == 200
    return len(captured.captured_queries)


@pytest.mark.parametrize("address", ["/hosts/{host}/clones/", "/api/clones/"])
def test_lists_cost_the_same_queries_at_1_and_20_clones(signed_in, api, host, address,
                                                        django_user_model):
    url = address.format(host=host.pk)
    client = api if url.startswith("/api/") else signed_in
    factories.clone(host, "c0", port=6500)
    one = queries(lambda: client.get(url))
    for number in range(1, 20):
        factories.clone(host, f"c{number}", port=6500 + number,
                        created_by=django_user_model.objects.create_user(f"u{number}"),
                        protected_until=timezone.now() + timedelta(hours=number % 2))
        host.datasets.create(name=f"tank/pozol_clones/c{number}", used=number)
    assert Clone.objects.count() == 20
    assert queries(lambda: client.get(url)) == one
