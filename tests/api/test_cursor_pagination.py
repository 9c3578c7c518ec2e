"""Cursor pagination of /api/operations/ (and the other long lists): a walk started
before new operations arrive neither repeats nor skips one; page numbers still work;
a forged cursor is a 404, as a missing page is."""

from __future__ import annotations

import pytest

from apps.api.pagination import CursorOrPages
from apps.ops import engine
from apps.ops.models import Operation
from tests.benchmarks import factories
from tests.ops import kinds

pytestmark = pytest.mark.django_db


def make(count: int, host) -> list[int]:
    return [engine.start(kinds.STORY.name, host=host).pk for _ in range(count)]


def walk(api, path: str, *, during=None) -> list[int]:
    seen, url, pages = [], f"{path}?cursor=", 0
    while url:
        answer = api.get(url)
        assert answer.status_code == 200, answer.content
        body = answer.json()
        seen += [row["id"] for row in body["results"]]
        url, pages = body["next"], pages + 1
        if during and pages == 1:
            during()
    return seen


def test_a_cursor_walk_neither_skips_nor_repeats_under_inserts(api, monkeypatch):
    monkeypatch.setattr(CursorOrPages, "page_size", 7)
    host = factories.host()
    existing = make(30, host)
    inserted: list[int] = []
    seen = walk(api, "/api/operations/", during=lambda: inserted.extend(make(10, host)))
    assert sorted(seen) == sorted(existing)  # every one, once; the newer ones come first
    assert len(seen) == len(set(seen)) and seen == sorted(seen, reverse=True)
    # page numbers under the same inserts shift: the reason for cursors
    by_page = []
    first = api.get("/api/operations/?page=1").json()
    by_page += [row["id"] for row in first["results"]]
    make(3, host)
    by_page += [row["id"] for row in api.get("/api/operations/?page=2").json()["results"]]
    assert len(by_page) != len(set(by_page))  # a repeat
    assert first["count"] == 40 and "count" not in api.get("/api/operations/?cursor=").json()
    assert set(walk(api, "/api/operations/")) == set(Operation.objects.values_list("id",
                                                                                  flat=True))
    assert inserted


def test_a_cursor_walk_keeps_filters(api, monkeypatch):
    monkeypatch.setattr(CursorOrPages, "page_size", 4)
    one, two = factories.host("db1"), factories.host("db2")
    mine = make(9, one)
    make(5, two)
    url = f"/api/operations/?host={one.pk}&cursor="
    seen = []
    while url:
        body = api.get(url).json()
        seen += [row["id"] for row in body["results"]]
        url = body["next"]
    assert sorted(seen) == sorted(mine)


@pytest.mark.parametrize("query", [
    "cursor=not-a-cursor", "cursor=&page=1",
    "cursor=cD1hYmM",  # p=abc: a position that is no id
    "cursor=bz05OTk5OTk5OTk5OTk5OTk5OTk5OQ",  # an absurd offset
])
def test_a_bad_cursor_is_a_404(api, query):
    answer = api.get(f"/api/operations/?{query}")
    assert answer.status_code == 404, answer.content
    assert answer.json()["error"]["code"]


@pytest.mark.parametrize("path", ["/api/clones/", "/api/snapshots/", "/api/events/",
                                  "/api/event-deliveries/"])
def test_the_other_lists_take_a_cursor(api, path):
    answer = api.get(f"{path}?cursor=")
    assert answer.status_code == 200, answer.content
    assert set(answer.json()) == {"next", "previous", "results"}
    assert api.get(f"{path}?page=1").json()["count"] == 0
