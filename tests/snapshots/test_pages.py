"""The Snapshots tab of the host page: the inventory with its markers, the snapshot-now
form, and refusals shown as messages without any operation."""

import pytest

from apps.ops.models import Operation
from tests.snapshots import factories

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def host():
    row = factories.host()
    factories.cluster(row)
    return row


def test_the_tab_lists_snapshots_with_markers_and_origin(signed_in, host):
    factories.snapshot(host, "tank/pg/data@held", userrefs=2, label="<b>x</b>")
    factories.snapshot(host, "tank/pg/data@cloned", origin="hand", properties={},
                       clones=["tank/clone1"])
    factories.snapshot(host, "tank/recv@s2", origin="received")
    factories.snapshot(host, "tank/pg/wal@plain")
    page = signed_in.get(f"/hosts/{host.pk}/snapshots/").content.decode()
    assert "tank/pg/data@held" in page and "held ×2" in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert "clones: tank/clone1" in page and "made by hand" in page and ">received<" in page
    assert 'data-sortable' in page and 'data-sort-column="2"' in page
    # Destroy is offered only where no guard would refuse it.
    assert page.count('aria-label="Destroy ') == 1 and "Destroy tank/pg/wal@plain" in page


def test_the_tags_of_holds_are_named_where_the_host_lists_them(signed_in, host):
    factories.snapshot(host, "tank/pg/data@both", userrefs=2, holds=["keep", "pozol"])
    factories.snapshot(host, "tank/pg/data@counted", userrefs=1)  # zfs-fuse: the count only
    page = signed_in.get(f"/hosts/{host.pk}/snapshots/").content.decode()
    assert "held by keep, pozol" in page
    assert "held ×1" in page and "does not list their tags" in page


def test_snapshot_now_from_the_form(signed_in, host, delivered):
    cluster = host.clusters.get()
    response = signed_in.post(f"/snapshots/hosts/{host.pk}/take/",
                              {"target": f"cluster:{cluster.pk}", "label": "nightly",
                               "hold": "on"})
    operation = Operation.objects.get()
    assert response.url == f"/operations/{operation.pk}/"
    assert operation.state["hold"] is True and operation.trigger == Operation.Trigger.UI


@pytest.mark.parametrize("form", [
    {"target": "dataset:tank/pg;reboot"}, {"target": "dataset:tank/pg", "label": "$(id)"},
    {"target": "cluster:abc"}, {"target": "nothing"}, {},
])
def test_refusals_go_back_to_the_tab_as_messages(signed_in, host, delivered, form):
    tab = f"/hosts/{host.pk}/snapshots/"
    response = signed_in.post(f"/snapshots/hosts/{host.pk}/take/", form, HTTP_REFERER=tab,
                              follow=True)
    assert response.status_code == 200 and not Operation.objects.exists()
    assert response.redirect_chain[-1][0] == tab
    assert 'class="messages' in response.content.decode() or "error" in response.content.decode()


@pytest.mark.parametrize(("form", "said"), [
    ({"target": "nothing"}, "target: choose a cluster or a dataset from the list"),
    ({}, "target: choose a cluster or a dataset from the list"),
    ({"target": "cluster:abc"}, "target: choose one from the list."),
    ({"target": "cluster:\u0661\u0662"}, "target: choose one from the list."),
    ({"target": "cluster: 1"}, "target: choose one from the list."),
])
def test_a_refused_target_says_why_on_the_tab(signed_in, host, form, said):
    response = signed_in.post(f"/snapshots/hosts/{host.pk}/take/", form,
                              HTTP_REFERER=f"/hosts/{host.pk}/snapshots/", follow=True)
    assert [str(m) for m in response.context["messages"]] == [said]
    assert not Operation.objects.exists()


def test_a_cluster_of_another_host_is_not_found(signed_in, host):
    other = factories.cluster(factories.host(name="other"))
    response = signed_in.post(f"/snapshots/hosts/{host.pk}/take/",
                              {"target": f"cluster:{other.pk}"})
    assert response.status_code == 404 and not Operation.objects.exists()


def test_hold_and_destroy_buttons(signed_in, host, delivered):
    snap = factories.snapshot(host)
    response = signed_in.post(f"/snapshots/{snap.pk}/hold/")
    assert response.status_code == 302 and Operation.objects.get().kind == "snapshots.hold"
    assert signed_in.post(f"/snapshots/{snap.pk}/explode/").status_code == 404
    assert signed_in.get(f"/snapshots/{snap.pk}/destroy/").status_code == 405
