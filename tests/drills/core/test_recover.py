"""The pure half of recovering a dropped table: names checked, scripts, the row count."""

import pytest

from apps.clones.core.layout import Layout, Origin
from apps.drills.core import recover


def test_a_bare_table_is_in_public_and_comes_back_with_the_suffix():
    wanted = recover.target("app", "orders")
    assert (wanted.source, wanted.recovered) == ("public.orders", "public.orders_recovered")


def test_a_schema_qualified_table_comes_back_in_its_schema():
    wanted = recover.target("app", "sales.orders", "orders_2025")
    assert (wanted.source, wanted.recovered) == ("sales.orders", "sales.orders_2025")


@pytest.mark.parametrize("database, table, into, field", [
    ("App", "orders", None, "database"),
    ("app", "orders; drop table x", None, "table"),
    ("app", "a.b.c", None, "table"),
    ("app", ".orders", None, "table"),
    ("app", 7, None, "table"),
    ("app", "orders", "Orders", "into"),
    ("app", "orders", "orders", "into"),
    ("app", "o" * 60, None, "into"),
])
def test_a_bad_name_is_refused_naming_its_field(database, table, into, field):
    with pytest.raises(recover.RecoverError) as caught:
        recover.target(database, table, into)
    assert caught.value.field == field


def test_the_rename_happens_in_the_clone_and_the_origin_restores_in_one_transaction():
    origin = Origin(data_dataset="tank/pg/data", data_mountpoint="/tank/pg/data",
                    data_dir="/tank/pg/data/15")
    layout = Layout(origin=origin, name="pozol-recover-ab12", snapshot="s1", port=5499,
                    listen="127.0.0.1", allowed=(), role="pozol_drill",
                    socket_dir="/var/lib/pozol/clones/pozol-recover-ab12")
    text = recover.recover(layout, "/run/postgresql", 5432,
                           recover.target("app", "orders", "back")).text
    clone_side, origin_side = text.index("-p 5499"), text.index("-p 5432")
    assert "'ALTER TABLE public.orders RENAME TO back'" in text
    assert "-t public.back" in text and "--single-transaction" in text
    assert clone_side < origin_side


def test_the_row_count_is_read_from_its_mark():
    assert recover.rows("noise\npozol-rows 37\n") == 37
    assert recover.rows("ERROR: no\n") is None
