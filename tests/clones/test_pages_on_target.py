"""The operator's pages for a clone on a replication link's target (issue 23): the target
host's Clones tab shows each link that carries its cluster's WAL archive there with the
moments the copies reach, and a form that makes a clone of the link's source cluster as
of a time, an LSN or a restore point; what the copies do not reach, and hostile input,
land beside the fields with the target's window, never as a 500. Such a clone is reset
to the newest moment the copies reach (refused once its link is gone). Operations are started,
not run: there is no worker here."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from apps.clones.models import Clone
from apps.ops.models import Operation
from apps.replication.models import ReplicationLink
from tests.clones import factories
from tests.tenants import factories as tenants

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def world():
    return factories.link_world()


def page_of(world) -> str:
    return f"/clones/hosts/{world['target'].pk}/on-target/"


def form(world, **changes) -> dict:
    values = {"link": world["link"].pk, "at": "", "lsn": "", "restore_point": "",
              "name": "as-of", "ttl_minutes": "60", "protected_minutes": "", "role": "dev",
              **changes}
    return {f"target-{k}": v for k, v in values.items() if v is not None}


def a_moment(world, minutes: int = 2) -> str:
    return (world["taken"] + timedelta(minutes=minutes)).isoformat()


def field_error(page: str, field: str) -> str:
    match = re.search(rf'<ul class="errorlist" id="id_target-{field}_error">(.*?)</ul>',
                      page, re.S)
    return match.group(1) if match else ""


def test_the_targets_clones_tab_shows_each_links_window_and_the_form(signed_in, world):
    page = signed_in.get(f"/hosts/{world['target'].pk}/clones/").content.decode()
    assert 'id="target-clone-form"' in page
    assert f'action="/clones/hosts/{world["target"].pk}/on-target/"' in page
    assert f'<option value="{world["link"].pk}">to-backup: /tank/pg/data/pgdata ' \
           "of db1</option>" in page
    window = re.search(r'<li id="target-window-\d+">(.*?)</li>', page, re.S).group(1)
    assert "Link to-backup" in window and "any moment from" in window
    # Both forms on one page: the target's fields have ids of their own.
    assert 'id="id_target-name"' in page and 'id="id_name"' not in page  # no cluster here
    source = signed_in.get(f"/hosts/{world['source'].pk}/clones/").content.decode()
    assert 'id="target-clone-form"' not in source and 'id="clone-form"' in source


def test_a_link_not_carried_yet_says_so_and_its_clone_is_refused_on_the_form(
        signed_in, world):
    ReplicationLink.objects.update(archive_snapshot="")
    page = signed_in.get(page_of(world)).content.decode()
    assert "has not carried the WAL archive yet" in page
    answer = signed_in.post(page_of(world), form(world, at=a_moment(world)))
    assert answer.status_code == 200
    assert "has not carried the WAL archive of /tank/pg/data/pgdata yet" in \
        answer.content.decode()
    assert not Clone.objects.exists() and not Operation.objects.exists()


@pytest.mark.parametrize("moment", ["at", "lsn", "restore_point"])
def test_a_clone_as_of_a_moment_is_made_on_the_target_and_its_password_shown_once(
        signed_in, world, moment):
    world["archive"].restore_points.create(name="before-migration", lsn="0/4000100",
                                           created_at=world["taken"] + timedelta(minutes=3))
    value = {"at": a_moment(world), "lsn": "0/3000010",
             "restore_point": "before-migration"}[moment]
    answer = signed_in.post(page_of(world), form(world, **{moment: value}))
    assert answer.status_code == 302, answer.content.decode()
    clone = Clone.objects.get()
    assert answer.url == f"/clones/{clone.pk}/password/"
    assert (clone.host, clone.link, clone.snapshot) == (world["target"], world["link"],
                                                        "received1")
    assert clone.decoded_layout().recovery.received
    operation = Operation.objects.get()
    assert operation.host == world["target"] and operation.trigger == Operation.Trigger.UI
    shown = signed_in.get(answer.url).content.decode()
    assert "Copy the password now" in shown
    assert "as backup1 received it by link to-backup" in \
        signed_in.get(f"/clones/{clone.pk}/").content.decode()


def test_a_moment_the_copies_do_not_reach_is_refused_with_the_targets_window(
        signed_in, world):
    answer = signed_in.post(page_of(world),
                            form(world, at=a_moment(world, minutes=-60)))
    assert answer.status_code == 200
    error = field_error(answer.content.decode(), "at")
    assert "outside the recoverable window" in error and "any moment from" in error, error
    answer = signed_in.post(page_of(world), form(world, lsn="0/9000000"))
    error = field_error(answer.content.decode(), "lsn")
    assert "beyond the end of the archive" in error and "on the replication target" in error
    assert not Clone.objects.exists() and not Operation.objects.exists()


@pytest.mark.parametrize("field, value", [
    ("at", "a;b"), ("at", "$(reboot)"), ("at", "2026-11-20T14:06:00"), ("at", "-1"),
    ("at", "2026-11-20T14:06:00+01:00'; --"), ("at", "2026-11-20\nT14:06:00Z"),
    ("lsn", "0/3000010;id"), ("lsn", "$(id)"), ("lsn", "-0/3000010"), ("lsn", "0/3\n000010"),
    ("lsn", "'0/3000010'"),
    ("restore_point", "x;y"), ("restore_point", "$(id)"), ("restore_point", "before\n"),
    ("restore_point", "-rf"), ("restore_point", 'a"b'),
    ("name", "a;b"), ("name", "$(reboot)"), ("name", "dev\n"), ("name", "-rf"),
    ("role", "$(id)"), ("role", "postgres"), ("ttl_minutes", "0"),
    ("link", "999999"), ("link", "x"), ("link", "-1"),
])
def test_hostile_input_lands_beside_its_field(signed_in, world, field, value):
    moment = {} if field in ("at", "lsn", "restore_point") else {"at": a_moment(world)}
    answer = signed_in.post(page_of(world), form(world, **{**moment, field: value}))
    assert answer.status_code == 200
    page = answer.content.decode()
    assert field_error(page, field), page
    assert not Clone.objects.exists() and not Operation.objects.exists()


def test_no_moment_or_two_are_refused_on_the_form(signed_in, world):
    for given in ({}, {"at": a_moment(world), "lsn": "0/3000010"}):
        page = signed_in.post(page_of(world), form(world, **given)).content.decode()
        assert "ask for one of a moment" in field_error(page, "at"), page
    assert not Clone.objects.exists()


def test_a_link_into_another_host_is_not_offered(signed_in, world):
    other = factories.host("elsewhere")
    answer = signed_in.post(f"/clones/hosts/{other.pk}/on-target/",
                            form(world, at=a_moment(world)))
    assert "Select a valid choice" in field_error(answer.content.decode(), "link")
    page = signed_in.get(f"/clones/hosts/{other.pk}/on-target/").content.decode()
    assert "No replication link carries a cluster's WAL archive to elsewhere" in page
    assert not Clone.objects.exists()


def test_the_links_page_leads_to_the_form_with_the_link_chosen(signed_in, world):
    link = world["link"]
    page = signed_in.get(f"/replication/{link.pk}/").content.decode()
    assert f'href="/clones/hosts/{world["target"].pk}/on-target/?link={link.pk}"' in page
    chosen = signed_in.get(f"{page_of(world)}?link={link.pk}").content.decode()
    assert f'<option value="{link.pk}" selected>' in chosen
    assert signed_in.get(f"{page_of(world)}?link=$(id)").status_code == 200


def test_a_clone_on_the_target_is_reset_to_the_newest_moment_from_its_page(signed_in, world):
    clone = factories.clone(world["target"], "as-of", link=world["link"],
                            snapshot="received1")
    live = signed_in.get(f"/clones/{clone.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="reset-form"' in live and 'id="destroy-form"' in live
    assert "Reset to the newest moment" in live
    assert f'href="/clones/hosts/{world["target"].pk}/on-target/?link={world["link"].pk}"' \
        in live
    back = f"/clones/{clone.pk}/"
    answer = signed_in.post(f"/clones/{clone.pk}/reset/", HTTP_REFERER=back, follow=True)
    assert answer.redirect_chain[-1][0] == back
    operation = Operation.objects.get()
    assert operation.kind == "clones.reset" and operation.host == world["target"]
    assert operation.state["layout"]["recovery"]["received"]


def test_a_clone_of_a_deleted_link_is_not_reset_and_says_why(signed_in, world):
    clone = factories.clone(world["target"], "as-of", link=world["link"],
                            snapshot="received1")
    Clone.objects.filter(pk=clone.pk).update(
        link=None, layout={**clone.layout, "recovery": {"received": True}})
    back = f"/clones/{clone.pk}/"
    answer = signed_in.post(f"/clones/{clone.pk}/reset/", HTTP_REFERER=back, follow=True)
    assert answer.redirect_chain[-1][0] == back
    assert "a link that is gone" in answer.content.decode()
    assert not Operation.objects.exists()


def test_a_member_resets_but_sees_no_way_to_the_operators_form(client, world):
    acme = tenants.tenant("Acme")
    clone = factories.clone(world["target"], "as-of", link=world["link"],
                            snapshot="received1", tenant=acme)
    client.force_login(tenants.member(acme, "ana"))
    live = client.get(f"/clones/{clone.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="reset-form"' in live and "on-target" not in live


def test_only_operators_reach_the_page(client, world):
    assert client.get(page_of(world)).status_code == 302  # to sign in
    acme = tenants.tenant("Acme")
    client.force_login(tenants.member(acme, "ana"))
    assert client.get(page_of(world)).status_code == 403
    assert client.post(page_of(world), form(world, at=a_moment(world))).status_code == 403
    assert not Clone.objects.exists()
