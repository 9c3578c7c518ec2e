"""A page action the product refuses is written to the audit log as refused.

Pages map a refusal in one place (apps.ops.ui_errors: on the form, or a message on
the page the operator came from), and the audit log reads the refusal from there.
Every page route of the URLconf is posted to; whenever the page shows an error, the
log says refused, and otherwise success. Then the buttons that refuse from another
page (a host's tab, a plan, a run) each with a real refusal: the message shown, the
page it brings the operator back to, and the log's entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.apps import apps
from django.contrib import messages
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from apps.audit.models import AuditEvent
from apps.audit.subjects import of_path
from apps.benchmarks.models import Validation
from apps.tuning import services as tuning
from apps.tuning.models import Plan, Profile
from tests.accounts.api_seed import seed
from tests.benchmarks import factories

pytestmark = pytest.mark.django_db

# What an id in a route is before it is known which model the route names.
UNKNOWN_ID = "987654321"
# Values for a route's other parts (a tab, a pool, a chart); an unknown one is a 404.
SAMPLES = {"section": "tuning", "pool": "tank", "kind": "pool_capacity", "chart_id": "arc-hit"}
# Sign-in and sign-out are written by the auth signals, not per request.
UNAUDITED = {"login", "logout"}
# (?P<action>hold|release|destroy): one route per choice.
CHOICES = re.compile(r"\(\?P<(\w+)>([\w-]+(?:\|[\w-]+)+)\)")


def page_patterns(patterns=None, namespace: str = "", regexes: tuple[str, ...] = ()
                  ) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(URL name, the regexes of its parts) of every page: neither the API nor the admin."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        regex = entry.pattern.regex.pattern
        if isinstance(entry, URLResolver):
            if str(entry.pattern).startswith(("api/", "admin/")):
                continue
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from page_patterns(entry.url_patterns, inner, (*regexes, regex))
        elif isinstance(entry, URLPattern) and entry.name and \
                not str(entry.pattern).startswith("api/"):
            yield f"{namespace}{entry.name}", (*regexes, regex)


def page_urls() -> Iterator[tuple[str, str]]:
    """(URL name, address) of every page route, its ids those of objects of the model
    its address names (apps.audit.subjects), one address per choice of a chosen part."""
    for name, regexes in page_patterns():
        groups = [group for regex in regexes for group in re.compile(regex).groupindex]
        choices = {group: options.split("|") for regex in regexes
                   for group, options in CHOICES.findall(regex)}
        variants = [{}]
        for group in groups:
            values = choices.get(group) or [UNKNOWN_ID if group.endswith("pk")
                                            else SAMPLES.get(group, "x")]
            variants = [{**kwargs, group: value} for kwargs in variants for value in values]
        for kwargs in variants:
            yield name, _known_ids(name, kwargs)


def _known_ids(name: str, kwargs: dict) -> str:
    url = reverse(name, kwargs=kwargs)
    label, _ = of_path(url)
    if "." not in label:
        return url
    first = apps.get_model(label).objects.order_by("pk").values_list("pk", flat=True).first()
    ids = {group: str(first) for group, value in kwargs.items() if value == UNKNOWN_ID}
    return reverse(name, kwargs={**kwargs, **ids}) if first else url


def post(client, url: str, data: dict | None = None):
    """A post whose answer shows only its own messages: not those an earlier answer left
    for the next page (a redirect not followed)."""
    client.cookies.pop("messages", None)
    return client.post(url, data or {})


def errors_shown(response) -> list[str]:
    """The errors a page shows: messages of level ERROR, or the errors of a form."""
    shown = [message.message for message in messages.get_messages(response.wsgi_request)
             if message.level == messages.ERROR]
    if response.status_code == 200 and not response.streaming \
            and b'class="errorlist' in response.content:
        shown.append("the form's errors")
    return shown


def last() -> AuditEvent:
    return AuditEvent.objects.order_by("-id").first()


def test_every_page_route_is_audited_as_refused_exactly_when_it_shows_a_refusal(
        signed_in, operator, delivered):
    seed(operator)
    urls = [(name, url) for name, url in page_urls() if name not in UNAUDITED]
    assert len(urls) > 80, "the URLconf's pages were not found"
    refused = set()
    for name, url in urls:
        with transaction.atomic():  # each post sees the seeded objects, none deleted
            response = post(signed_in, url)
            event = last()
            shown = errors_shown(response)
            transaction.set_rollback(True)
        assert event is not None and event.path == url, (name, url)
        expected = "refused" if shown or 400 <= response.status_code < 500 else "success"
        assert event.outcome == expected, (name, url, response.status_code, shown,
                                           event.message)
        if shown:
            refused.add(name)
            assert event.message in shown or "the form's errors" in shown, (name, shown)
    # Seeded as it is, some buttons refuse an empty post: the check above saw them.
    assert {"fleet:confirm_host_key", "tuning:profile_delete",
            "experiments:create"} <= refused, refused


def refusal(client, url: str, data: dict | None = None) -> tuple[str, list[str], AuditEvent]:
    """Post without a Referer: (where the answer leads, the errors shown, the log's entry)."""
    response = post(client, url, data)
    assert response.status_code == 302, (url, response.status_code)
    return response.url, errors_shown(response), last()


def assert_refused(answer, back: str, says: str) -> None:
    url, shown, event = answer
    assert url == back, (event.path, url)
    assert event.outcome == "refused" and says in event.message, (event.path, event.message)
    assert shown == [event.message], (event.path, shown)


def test_a_wrong_fingerprint_is_refused_on_the_host_page(signed_in, replayed_host):
    host = replayed_host
    assert_refused(refusal(signed_in, f"/hosts/{host.pk}/confirm-host-key/",
                           {"fingerprint": "SHA256:nope"}),
                   f"/hosts/{host.pk}/", "not the fingerprint the host presented")


def test_deleting_a_built_in_profile_is_refused_on_its_page(signed_in):
    safe = Profile.objects.get(slug="oltp-safe")
    assert_refused(refusal(signed_in, f"/tuning/profiles/{safe.pk}/delete/"),
                   f"/tuning/profiles/{safe.pk}/", "built in")
    assert Profile.objects.filter(pk=safe.pk, archived_at=None).exists()


def test_a_plan_for_a_host_never_reached_is_refused_on_its_tuning_tab(signed_in):
    fresh = factories.host("fresh")
    assert_refused(refusal(signed_in, f"/tuning/hosts/{fresh.pk}/plan/"),
                   f"/hosts/{fresh.pk}/tuning/", "has not been discovered yet")
    assert not Plan.objects.exists()


def test_applying_and_rolling_back_are_refused_on_the_plan_page(signed_in, replayed_host,
                                                                delivered):
    tuning.assign(replayed_host, Profile.objects.get(slug="oltp-bounded-loss"))
    plan = tuning.make_plan(replayed_host)
    back = f"/tuning/plans/{plan.pk}/"
    assert_refused(refusal(signed_in, f"{back}apply/", {"acknowledge": "yolo"}),
                   back, "acknowledge: Select a valid choice")
    assert_refused(refusal(signed_in, f"{back}apply/"), back, "bounded_loss")
    assert_refused(refusal(signed_in, f"{back}rollback/"), back, "nothing to roll back")
    assert Plan.objects.get(pk=plan.pk).status == "draft" and not delivered


def test_an_experiment_refused_goes_back_to_the_list(signed_in, replayed_host, delivered):
    assert_refused(refusal(signed_in, "/experiments/new/",
                           {"host": replayed_host.pk, "template": "no-such-template"}),
                   "/experiments/", "template: one of")
    assert_refused(refusal(signed_in, "/experiments/new/", {"host": "abc"}),
                   "/experiments/", "host: Select a valid choice")
    assert not delivered


def test_benchmark_refusals_go_back_to_the_page_of_their_button(signed_in, delivered):
    host = factories.host()
    factories.cluster(host)
    before = factories.finished(host, 1000.0, 2.0, 400.0)
    after = factories.finished(host, 1100.0, 1.8, 400.0)
    assert_refused(refusal(signed_in, f"/benchmarks/hosts/{host.pk}/run/",
                           {"clients": "2", "threads": "9"}),
                   f"/hosts/{host.pk}/benchmarks/", "threads: a whole number")
    assert_refused(refusal(signed_in, f"/benchmarks/hosts/{host.pk}/run/", {"scale": "²"}),
                   f"/hosts/{host.pk}/benchmarks/", "scale: Enter a whole number")
    assert_refused(refusal(signed_in, f"/benchmarks/{after.pk}/compare/",
                           {"before": after.pk}),
                   f"/benchmarks/{after.pk}/", "compare two different benchmarks")
    validation = Validation.objects.create(host=host, before=before, after=after)
    host.clusters.all().delete()
    assert_refused(refusal(signed_in, f"/benchmarks/validations/{validation.pk}/run-again/"),
                   f"/benchmarks/validations/{validation.pk}/", "no longer a cluster")
    assert not delivered
