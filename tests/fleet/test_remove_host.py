"""An operator removes a host from PoZoL (nothing on it is touched): refused while a
replication link joins it to another host, since the link would go with it and the
copies and clones at the other end would have no link left to update or reset them."""

from __future__ import annotations

from apps.fleet.models import Host
from apps.replication.models import ReplicationLink
from tests.replication import factories


def test_the_api_refuses_either_end_of_a_link_until_the_link_is_removed(api, delivered):
    source, target = factories.source(), factories.target()
    link = factories.link(source, target, name="offsite")
    for host in (source, target):
        refused = api.delete(f"/api/hosts/{host.pk}/")
        assert refused.status_code == 409, refused.content
        error = refused.json()["error"]
        assert error["code"] == "in_use"
        assert "offsite (db1 -> db2)" in error["message"], error
    assert Host.objects.filter(pk__in=[source.pk, target.pk]).count() == 2
    assert ReplicationLink.objects.filter(pk=link.pk).exists()

    assert api.delete(f"/api/replication-links/{link.pk}/").status_code == 202
    assert api.delete(f"/api/hosts/{source.pk}/").status_code == 204
    assert not Host.objects.filter(pk=source.pk).exists()


def test_the_host_page_refuses_it_and_says_which_link(signed_in):
    source, target = factories.source(), factories.target()
    factories.link(source, target, name="offsite")
    answer = signed_in.post(f"/hosts/{target.pk}/delete/", follow=True)
    assert answer.status_code == 200
    shown = [str(message) for message in answer.context["messages"]]
    assert any("offsite (db1 -> db2)" in text and "remove them first" in text
               for text in shown), shown
    assert Host.objects.filter(pk=target.pk).exists()


def test_a_host_with_no_link_to_another_host_is_removed_with_its_records(api):
    lone = factories.source("lone")
    assert api.delete(f"/api/hosts/{lone.pk}/").status_code == 204
    assert not Host.objects.filter(pk=lone.pk).exists()
