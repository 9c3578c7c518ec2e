"""A pool's reserve: the one room decision (pure), the reserve an operator sets per pool
(API and page), and that it survives rediscovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.fleet import reserves
from apps.fleet.core import room
from apps.fleet.models import Dataset, Pool, PoolReserve
from apps.fleet.steps import record_facts
from tests.snapshots import factories

MiB = 2**20
CAPTURED = (Path(__file__).parents[1] / "remote/fixtures/zfs-fuse/captured/extra/"
            "zfs_get_used_available.txt")


# ---- the decision ---------------------------------------------------------------------------

def test_the_default_reserve_is_ten_percent_of_the_usable_pool():
    pool = room.Room("tank", used=600 * MiB, available=400 * MiB)
    assert room.Reserve().floor(pool.usable) == 100 * MiB
    assert room.shortage(pool, room.Reserve(), 300 * MiB, "a clone") is None  # 100 left
    short = room.shortage(pool, room.Reserve(), 301 * MiB, "a clone")
    assert short is not None
    assert short.to_dict() == {"pool": "tank", "free": 400 * MiB, "reserve": 100 * MiB,
                               "needed": 301 * MiB}
    assert short.message == ("pool tank has 400 MiB free and keeps a reserve of 100 MiB "
                             "(10% of the pool); a clone may need 301 MiB: free space on the "
                             "pool or lower its reserve")


def test_a_reserve_in_bytes_is_kept_whatever_the_pool_size():
    pool = room.Room("tank", used=0, available=10 * 2**30)
    reserve = room.Reserve(bytes=10 * 2**30 - MiB, percent=None)
    assert room.shortage(pool, reserve, MiB, "a snapshot") is None
    short = room.shortage(pool, reserve, MiB + 1, "a snapshot")
    assert short is not None and short.reserve == 10 * 2**30 - MiB
    assert "keeps a reserve of 10.0 GiB;" in short.message  # no percent named


def test_a_pool_already_below_its_reserve_refuses_even_what_needs_nothing():
    pool = room.Room("tank", used=950 * MiB, available=50 * MiB)
    assert room.shortage(pool, room.Reserve(), 0, "a snapshot").needed == 0
    assert room.shortage(pool, room.Reserve(percent=0), 0, "a snapshot") is None
    assert room.shortage(pool, room.Reserve(percent=0), 51 * MiB, "x") is not None


def test_the_room_reading_parses_zfs_get_and_refuses_anything_else():
    # `zfs get -Hp -o value used,available tank`, captured on a zfs-fuse test host
    assert room.parse_room("tank", CAPTURED.read_text()) == room.Room(
        "tank", 72122368, 959676416)
    assert room.read_command("tank").text == "zfs get -Hp -o value used,available tank"
    for bad in ("", "118685696\n", "a\nb\n", "1\n2\n3\n"):
        with pytest.raises(ValueError):
            room.parse_room("tank", bad)


# ---- the operator's reserve -----------------------------------------------------------------

@pytest.fixture
def host(db):
    row = factories.host()
    Pool.objects.create(host=row, name="tank", size=2**30)
    Dataset.objects.filter(host=row, name="tank").update(used=600 * MiB, available=400 * MiB)
    return row


def test_the_reserve_is_set_per_pool_through_the_api(api, host):
    url = f"/api/hosts/{host.pk}/pool-reserves/"
    assert api.get(url).json() == [{"pool": "tank", "reserve_bytes": None,
                                    "reserve_percent": None, "floor": 100 * MiB,
                                    "available": 400 * MiB}]
    put = api.put(f"{url}tank/", {"reserve_percent": 30}, format="json")
    assert put.status_code == 200, put.content
    assert put.json()["floor"] == 300 * MiB
    assert reserves.refusal(host, "tank", 101 * MiB, "a clone") is not None
    assert reserves.refusal(host, "tank", 100 * MiB, "a clone") is None
    put = api.put(f"{url}tank/", {"reserve_bytes": 50 * MiB}, format="json")
    assert put.json() == {"pool": "tank", "reserve_bytes": 50 * MiB, "reserve_percent": None,
                          "floor": 50 * MiB, "available": 400 * MiB}
    assert api.get(f"{url}tank/").json() == put.json()
    back = api.put(f"{url}tank/", {}, format="json")  # neither: the default again
    assert back.json()["floor"] == 100 * MiB


@pytest.mark.parametrize("body, field", [
    ({"reserve_percent": 91}, "reserve_percent"), ({"reserve_percent": -1}, "reserve_percent"),
    ({"reserve_percent": "10"}, "reserve_percent"), ({"reserve_bytes": True}, "reserve_bytes"),
    ({"reserve_bytes": -1}, "reserve_bytes"), ({"reserve_bytes": 2**70}, "reserve_bytes"),
    ({"reserve_bytes": 1, "reserve_percent": 1}, "reserve_bytes"),
])
def test_a_bad_reserve_is_a_400_naming_its_field(api, host, body, field):
    answer = api.put(f"/api/hosts/{host.pk}/pool-reserves/tank/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert field in answer.json()["error"]["fields"]
    assert not PoolReserve.objects.exists()


def test_an_unknown_pool_is_a_404(api, host):
    for pool in ("nosuch", "$(id)", "a" * 300):
        assert api.get(f"/api/hosts/{host.pk}/pool-reserves/{pool}/").status_code == 404
        assert api.put(f"/api/hosts/{host.pk}/pool-reserves/{pool}/", {"reserve_percent": 5},
                       format="json").status_code in (400, 404)


def test_the_reserve_survives_rediscovery(host):
    reserves.set_reserve(host, "tank", reserve_percent=42)
    record_facts(host, {"pools": [{"name": "tank"}], "datasets": [], "clusters": []})
    assert host.pools.get().name == "tank"
    assert reserves.reserve_of(host, "tank") == room.Reserve(percent=42)


def test_the_pools_table_shows_the_reserve_and_its_page_changes_it(signed_in, host):
    page = signed_in.get(f"/hosts/{host.pk}/datasets/")
    assert page.status_code == 200
    assert "100 MiB (10%)" in page.content.decode()
    url = f"/hosts/{host.pk}/pools/tank/reserve/"
    bad = signed_in.post(url, {"reserve_mib": "5", "reserve_percent": "5"})
    assert bad.status_code == 200 and "bytes or a percent, not both" in bad.content.decode()
    saved = signed_in.post(url, {"reserve_mib": "200", "reserve_percent": ""})
    assert saved.status_code == 302
    assert reserves.reserve_of(host, "tank") == room.Reserve(bytes=200 * MiB, percent=None)
    assert signed_in.get(f"/hosts/{host.pk}/pools/nosuch/reserve/").status_code == 404
