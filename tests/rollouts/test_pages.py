"""The rollouts pages: the list with its form, a rollout's hosts, pause and resume, and
refusals brought back to the page they came from."""

from __future__ import annotations

import pytest

from apps.rollouts import services
from apps.rollouts.models import Rollout
from apps.tuning.models import Profile

pytestmark = pytest.mark.django_db


@pytest.fixture
def rollout(replayed_host, second_host, delivered) -> Rollout:
    return services.start_rollout(Profile.objects.get(slug="oltp-safe").current,
                                  [replayed_host, second_host], wave_size=1)


def test_the_list_shows_the_form_and_the_rollouts(signed_in, rollout):
    page = signed_in.get("/rollouts/")
    text = page.content.decode()
    assert page.status_code == 200
    assert 'id="new-rollout"' in text and f'href="/rollouts/{rollout.pk}/"' in text
    assert 'hx-trigger="every 3s"' in text  # polls while one runs


def test_the_list_stops_polling_once_none_runs(signed_in, rollout):
    Rollout.objects.update(status=Rollout.Status.SUCCEEDED)
    assert signed_in.get("/rollouts/", HTTP_HX_REQUEST="true").status_code == 286


def test_a_rollout_page_shows_every_host_and_its_state(signed_in, rollout):
    page = signed_in.get(f"/rollouts/{rollout.pk}/")
    text = page.content.decode()
    assert page.status_code == 200
    assert "db1" in text and "db2" in text and "canary" in text
    assert text.count('class="status waiting"') == 2
    assert 'id="pause-rollout"' in text


def test_pause_and_resume_from_the_page(signed_in, rollout):
    page = signed_in.post(f"/rollouts/{rollout.pk}/pause/")
    assert page.status_code == 302 and page.url == f"/rollouts/{rollout.pk}/"
    rollout.refresh_from_db()
    assert rollout.paused
    text = signed_in.get(f"/rollouts/{rollout.pk}/").content.decode()
    assert 'id="resume-rollout"' in text and 'id="paused"' in text
    signed_in.post(f"/rollouts/{rollout.pk}/resume/")
    rollout.refresh_from_db()
    assert not rollout.paused


def test_pausing_an_ended_rollout_is_refused_on_its_page(signed_in, rollout):
    Rollout.objects.update(status=Rollout.Status.STOPPED)
    page = signed_in.post(f"/rollouts/{rollout.pk}/pause/", follow=True)
    assert page.status_code == 200
    assert "it cannot be paused" in page.content.decode()


def test_the_form_starts_a_rollout(signed_in, replayed_host, second_host, delivered):
    page = signed_in.post("/rollouts/new/", {
        "profile": Profile.objects.get(slug="oltp-safe").pk,
        "hosts": [replayed_host.pk, second_host.pk], "canary": second_host.pk,
        "wave_size": 1, "validation": "pgbench", "pgbench_seconds": 5,
        "max_tps_drop_percent": 20})
    rollout = Rollout.objects.get()
    assert page.status_code == 302 and page.url == f"/rollouts/{rollout.pk}/"
    assert rollout.hosts.get(wave=0).host == second_host
    assert (rollout.validation, rollout.pgbench_seconds, rollout.max_tps_drop_percent) == \
        ("pgbench", 5, 20)


@pytest.mark.parametrize(("data", "says"), [
    ({"wave_size": 0}, "wave_size"),
    ({"hosts": []}, "hosts"),
    ({"canary": "x"}, "canary"),
    ({"pgbench_seconds": 0}, "pgbench_seconds"),
])
def test_bad_form_input_is_refused_back_on_the_list(signed_in, replayed_host, data, says):
    form = {"profile": Profile.objects.get(slug="oltp-safe").pk, "hosts": [replayed_host.pk],
            "wave_size": 1, "validation": "health", "pgbench_seconds": 10,
            "max_tps_drop_percent": 10, **data}
    page = signed_in.post("/rollouts/new/", form, follow=True)
    assert page.status_code == 200
    assert page.redirect_chain[-1][0] == "/rollouts/"
    assert says in page.content.decode()
    assert not Rollout.objects.exists()


def _queries(fetch) -> list[str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert fetch().status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def _more_rollouts(hosts, count: int) -> None:
    version = Profile.objects.get(slug="oltp-safe").current
    for _ in range(count):
        services.start_rollout(version, hosts, wave_size=1)
        Rollout.objects.update(status=Rollout.Status.SUCCEEDED)


def test_the_lists_cost_a_fixed_number_of_queries_and_read_no_facts(
        signed_in, api, replayed_host, second_host, delivered):
    fetches = [lambda: signed_in.get("/rollouts/"), lambda: api.get("/api/rollouts/")]
    _more_rollouts([replayed_host, second_host], 2)
    small = [_queries(fetch) for fetch in fetches]
    _more_rollouts([replayed_host, second_host], 5)
    large = [_queries(fetch) for fetch in fetches]
    for few, many in zip(small, large, strict=True):
        assert len(few) == len(many), "\n".join(many)
        assert not [sql for sql in many if '"fleet_host"."facts"' in sql]


def test_the_host_page_shows_the_rollouts_the_host_is_in(signed_in, rollout, replayed_host,
                                                         second_host):
    rollout.hosts.filter(host=second_host).update(state="skipped",
                                                  reason="changed by hand: atime")
    mine = signed_in.get(f"/hosts/{replayed_host.pk}/rollouts/").content.decode()
    theirs = signed_in.get(f"/hosts/{second_host.pk}/rollouts/").content.decode()
    assert f'href="/rollouts/{rollout.pk}/"' in mine and "the canary" in mine
    assert "changed by hand" not in mine
    assert "changed by hand: atime" in theirs and 'class="status skipped"' in theirs


def test_the_host_page_of_a_host_in_no_rollout_says_so(signed_in, replayed_host):
    page = signed_in.get(f"/hosts/{replayed_host.pk}/rollouts/")
    assert page.status_code == 200
    assert "has not been part of a rollout" in page.content.decode()


def test_the_host_tab_costs_a_fixed_number_of_queries(signed_in, replayed_host, second_host,
                                                      delivered):
    def fetch():
        return signed_in.get(f"/hosts/{replayed_host.pk}/rollouts/")

    _more_rollouts([replayed_host, second_host], 2)
    few = _queries(fetch)
    _more_rollouts([replayed_host, second_host], 5)
    assert len(_queries(fetch)) == len(few)
