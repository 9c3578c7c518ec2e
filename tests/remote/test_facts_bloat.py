"""Dead tuples and pg_repack: the parsers on what a real PostgreSQL 15 answered.

The captured answers come from a fleet test host (fixtures/README.md): discovery's
own sections (a fresh host) and, in extra/, the same queries after a table was
bloated on purpose and after it was vacuumed.
"""

from __future__ import annotations

import pytest

from apps.remote.facts import bloat
from tests.remote.fixtures.hosts import fuse_extra, fuse_section


def answer(name: str) -> str:
    """An extra capture's output, without its `$ command` and `# exit` lines."""
    return fuse_extra(name).split("\n", 2)[2]


def test_the_listing_names_the_largest_databases_and_pg_repacks_absence():
    listing = bloat.parse_listing(answer("psql_databases_bloat"))
    assert listing.databases == len(listing.largest) == 2
    assert [name for name, _ in listing.largest] == ["postgres", "pgbench"]
    sizes = [size for _, size in listing.largest]
    assert sizes == sorted(sizes, reverse=True) and all(size > 0 for size in sizes)
    assert listing.pg_repack_available is None  # the test hosts have no pg_repack


def test_a_bloated_table_as_the_statistics_count_it():
    found = bloat.parse_tables("postgres", 1, answer("psql_tables_bloat"))
    table = found.top[0]
    # 50,000 rows inserted, 40,000 deleted, autovacuum off on the table.
    assert (table.qualified_name, table.live, table.dead) == ("public.pozol_bloat", 10_000, 40_000)
    assert table.autovacuum_enabled is False and table.primary_key is True
    assert table.last_vacuum is None and table.dead_share == 0.8
    assert table.size > 40 * 1024**2 and table.dead_bytes == int(table.size * 0.8)
    assert found.dead >= table.dead and found.tables >= 2
    assert found.dead_bytes >= table.dead_bytes  # summed over every table with dead rows
    assert found.pg_repack_installed is None


def test_a_table_name_with_a_tab_and_a_newline_stays_one_name():
    found = bloat.parse_tables("postgres", 1, answer("psql_tables_bloat"))
    odd = [t for t in found.top if t.name != "pozol_bloat"]
    assert [t.name for t in odd] == ["odd\tname\nhere"]
    assert odd[0].autovacuum_enabled is None and odd[0].primary_key is False


def test_after_vacuum_only_the_small_tables_dead_rows_are_left():
    found = bloat.parse_tables("postgres", 1, answer("psql_tables_vacuumed"))
    assert [t.name for t in found.top] == ["odd\tname\nhere"]  # only tables with dead rows
    assert (found.live, found.dead) == (10_100, 5)


def test_discoverys_own_section_from_a_fresh_host():
    listing = bloat.parse_listing(fuse_section("psql_311_databases"))
    assert [name for name, _ in listing.largest] == ["pgbench", "postgres"]
    # pgbench -i -s 1 and an empty postgres: both below what discovery reads further.
    assert all(size < bloat.SMALLEST_DATABASE for _, size in listing.largest)


def test_a_warning_before_the_document_is_skipped():
    text = "WARNING:  something the server says\n" + answer("psql_tables_bloat")
    assert bloat.parse_tables("postgres", 1, text).top[0].name == "pozol_bloat"


@pytest.mark.parametrize("text", [
    "", "ERROR:  permission denied\n", "{not json\n", "[1, 2]\n", '{"top": 3}\n',
    '{"largest": "x"}\n',
])
def test_anything_else_is_unknown_not_a_crash(text):
    assert bloat.parse_listing(text) is None
    assert bloat.parse_tables("postgres", 1, text) is None


def test_entries_of_the_wrong_shape_are_dropped():
    text = ('{"tables" : "many", "live" : true, "dead" : 5, "top" : [{"schema" : 1},'
            ' {"schema" : "s", "name" : "t", "live" : 1, "dead" : 5, "size" : null,'
            ' "primary_key" : "yes"}, 7]}')
    found = bloat.parse_tables("db", None, text)
    assert (found.tables, found.live, found.dead, found.dead_bytes) == (0, 0, 5, 0)
    [table] = found.top
    assert table.size is None and table.dead_bytes is None and table.primary_key is None


@pytest.mark.parametrize(("text", "value"), [
    ("false", False), ("off", False), ("OFF", False), ("f", False), ("no", False), ("0", False),
    ("true", True), ("on", True), ("yes", True), ("t", True), ("1", True),
    ("o", None), ("maybe", None), ("", None), (None, None),
])
def test_reloption_booleans_read_as_postgresql_reads_them(text, value):
    assert bloat.parse_bool(text) is value


def test_toast_tables_and_the_columns_postgresql_compresses():
    # pozol_toast: 55 values of 1.28 MB of hex text (too random for pglz, so stored out of
    # line as they are); body text and doc jsonb extended, note varchar set to main, raw
    # bytea set to external (never compressed, so not listed).
    found = bloat.parse_tables("postgres", 1, answer("psql_tables_toast"))
    assert [t.qualified_name for t in found.toast] == ["public.pozol_toast", "public.pozol_small"]
    table = found.toast[0]
    assert table.toast_size > 55 * 1_280_000
    assert [(c.name, c.storage) for c in table.compressed] == [
        ("body", "x"), ("note", "m"), ("doc", "x")]
    assert found.toast[1].toast_size < table.toast_size
    assert found.top == []  # nothing deleted: no dead rows


def test_a_database_answered_before_toast_was_asked_has_none():
    assert bloat.parse_tables("postgres", 1, answer("psql_tables_bloat")).toast == []


def test_toast_entries_of_the_wrong_shape_are_dropped():
    text = ('{"top" : [], "toast" : [{"schema" : "s", "name" : "t"}, 3,'
            ' {"schema" : "s", "name" : "u", "toast_size" : 9, "columns" :'
            ' [{"name" : "a", "storage" : "e"}, {"name" : "b", "storage" : "x"}, {"name" : 1}]}]}')
    [table] = bloat.parse_tables("db", None, text).toast
    assert (table.name, table.toast_size, [c.name for c in table.compressed]) == ("u", 9, ["b"])
