"""The dead-rows rule (lesson 64: pg_repack for bloat) and the TOAST rule (lesson 17) on
facts from a real test host.

The dead-tuple counts are TABLES_QUERY's answers captured on a fleet test host
(tests/remote/fixtures/README.md): a 50,000-row table with autovacuum off and
80% of its rows deleted, then the same table after a VACUUM. Other cases edit
those facts to show one thing each.
"""

from __future__ import annotations

import json
from dataclasses import replace

from apps.common.sizes import GiB, MiB
from apps.remote.facts import bloat
from apps.remote.facts.bloat import ClusterBloat, DatabaseDeadTuples, ToastColumn
from apps.remote.facts.host import HostFacts
from apps.tuning.core import facts as r
from apps.tuning.core import rules_maintenance
from apps.tuning.core.advisor import advise
from tests.remote.fixtures.hosts import fuse_extra
from tests.tuning.core import hosts
from tests.tuning.core.hosts import cluster, set_setting

RULE = "dead_tuples_bloat"


def captured(name: str) -> DatabaseDeadTuples:
    """TABLES_QUERY as the fleet host answered it in its `postgres` database."""
    found = bloat.parse_tables("postgres", 80 * MiB, fuse_extra(name).split("\n", 2)[2])
    assert found is not None
    return found


def with_databases(*databases: DatabaseDeadTuples, available: str | None = None) -> HostFacts:
    facts = hosts.fuse()
    cluster(facts).bloat = ClusterBloat(len(databases), list(databases), available)
    return facts


def findings(facts: HostFacts) -> list:
    return [f for f in advise(facts) if f.id == RULE]


def test_dead_rows_past_autovacuums_trigger_recommend_vacuum_then_pg_repack():
    [finding] = findings(with_databases(captured("psql_tables_bloat")))
    assert finding.severity == "info" and finding.subject.endswith("(database postgres)")
    assert "public.pozol_bloat: 40000 dead, 10000 live (80% dead)" in finding.evidence
    assert "autovacuum disabled on the table" in finding.evidence
    assert "never vacuumed" in finding.evidence
    assert "pg_repack not available on the host" in finding.evidence
    assert finding.action.startswith("VACUUM (VERBOSE, ANALYZE) public.pozol_bloat in postgres")
    assert "RESET (autovacuum_enabled)" in finding.action
    assert "rather than VACUUM FULL" in finding.action and "primary key" in finding.action
    assert "postgresql-15-repack" in finding.action  # the host's major, 15
    assert "without" not in finding.why and "lock the table" in finding.why
    assert "Use pg_repack" in finding.source
    # A small table with a few dead rows (a tab in its name) is below the thresholds.
    assert "odd" not in finding.evidence


def test_no_finding_once_vacuum_removed_the_dead_rows():
    vacuumed = captured("psql_tables_vacuumed")
    assert vacuumed.dead == 0 or vacuumed.dead_share < 0.2
    assert findings(with_databases(vacuumed)) == []


def test_what_to_do_with_pg_repack_depends_on_where_it_is():
    database = captured("psql_tables_bloat")
    [available] = findings(with_databases(database, available="1.5.0"))
    assert "pg_repack 1.5.0 available on the host, not installed in postgres" in \
        available.evidence
    assert "CREATE EXTENSION pg_repack in postgres" in available.action
    installed = replace(database, pg_repack_installed="1.5.0")
    [ready] = findings(with_databases(installed, available="1.5.0"))
    assert "pg_repack -d postgres -t TABLE" in ready.action


def test_a_table_without_a_primary_key_is_said_to_need_one():
    database = captured("psql_tables_bloat")
    top = [replace(t, primary_key=False) if t.name == "pozol_bloat" else t for t in database.top]
    [finding] = findings(with_databases(replace(database, top=top)))
    assert "public.pozol_bloat has no primary key" in finding.action


def test_small_or_mostly_live_tables_and_unknown_facts_give_no_finding():
    database = captured("psql_tables_bloat")
    [table] = [t for t in database.top if t.name == "pozol_bloat"]
    quiet = [
        # Four in five rows dead, but a tiny table: not worth anyone's time.
        replace(table, size=2 * MiB),
        # A big table whose dead rows are below autovacuum's 20%.
        replace(table, live=90_000, dead=10_000, size=10 * GiB),
        # Empty.
        replace(table, live=0, dead=0, size=8192),
    ]
    for edited in quiet:
        database_edit = replace(database, top=[edited], live=edited.live, dead=edited.dead,
                                dead_bytes=edited.dead_bytes or 0)
        assert findings(with_databases(database_edit)) == [], edited
    facts = hosts.fuse()  # a fresh fleet host: databases too small to read
    assert cluster(facts).bloat.not_read and findings(facts) == []
    cluster(facts).bloat = None  # not read (facts from before this probe): nothing said
    assert findings(facts) == []


def test_many_small_tables_add_up_to_a_finding_for_the_database():
    table = next(t for t in captured("psql_tables_bloat").top if t.name == "pozol_bloat")
    small = [replace(table, name=f"part_{n}", size=8 * MiB, live=600, dead=400)
             for n in range(3)]
    database = DatabaseDeadTuples("postgres", 1 * GiB, tables=40, live=24_000, dead=16_000,
                                  dead_bytes=128 * MiB, top=small)
    [finding] = findings(with_databases(database))
    assert "16000 dead of 40000 rows (40%), about 128 MiB" in finding.evidence
    assert "public.part_0" in finding.evidence  # the tables with most dead rows are named


def test_a_gigabyte_of_dead_rows_is_a_warning():
    database = captured("psql_tables_bloat")
    top = [replace(t, size=4 * GiB) if t.name == "pozol_bloat" else t for t in database.top]
    [finding] = findings(with_databases(replace(database, top=top)))
    assert finding.severity == "warning" and "3.2 GiB dead" in finding.evidence


def test_autovacuum_off_for_the_whole_server_is_said():
    facts = with_databases(captured("psql_tables_bloat"))
    [finding] = findings(facts)
    assert "autovacuum=off on this server" not in finding.action  # the capture: on
    set_setting(facts, "autovacuum", "off")
    assert "autovacuum=off on this server" in findings(facts)[0].action


# Lesson 17: leave TOAST compression to ZFS. The TOAST sizes and column storage are
# TABLES_QUERY's answer on a fleet host after a table got 69 MiB of TOAST.
TOAST_RULE = "toast_compressed_on_zfs"


def toast_findings(facts: HostFacts) -> list:
    return [f for f in advise(facts) if f.id == TOAST_RULE]


def test_large_toast_compressed_by_postgresql_on_a_compressed_dataset_is_said():
    facts = with_databases(captured("psql_tables_toast"))
    assert r.prop(r.datasets(facts)["tank/pg/data"], "compression") == "on"  # from tank/pg
    [finding] = toast_findings(facts)
    assert finding.severity == "info" and finding.subject.endswith("(database postgres)")
    assert "on tank/pg/data (compression=on)" in finding.evidence
    assert ("public.pozol_toast: TOAST 69 MiB, columns PostgreSQL compresses body (extended),"
            " note (main), doc (extended)") in finding.evidence
    assert "default_toast_compression=pglz" in finding.evidence  # PostgreSQL 15's default
    assert "pozol_small" not in finding.evidence  # 80 kB of TOAST: below the floor
    assert finding.action.startswith(
        "ALTER TABLE public.pozol_toast ALTER COLUMN body SET STORAGE EXTERNAL,"
        " ALTER COLUMN note SET STORAGE EXTERNAL, ALTER COLUMN doc SET STORAGE EXTERNAL;")
    assert "Values already stored keep their compression" in finding.action
    assert "compression twice" in finding.why
    assert finding.source.endswith("§ Disable Postgres compression")


def test_no_toast_finding_where_zfs_does_not_compress():
    facts = with_databases(captured("psql_tables_toast"))
    hosts.set_prop(facts, "tank/pg/data", "compression", "off")
    assert toast_findings(facts) == []


def test_no_toast_finding_below_the_floor_or_without_compressed_columns():
    database = captured("psql_tables_toast")
    big = database.toast[0]
    small = replace(big, toast_size=rules_maintenance.MIN_TOAST_BYTES - 1)
    external = replace(big, compressed=[])  # every column SET STORAGE EXTERNAL already
    for table in (small, external):
        assert toast_findings(with_databases(replace(database, toast=[table]))) == [], table
    assert toast_findings(with_databases(replace(database, toast=[small, big]))) != []


def test_odd_names_are_quoted_in_the_alter_table():
    database = captured("psql_tables_toast")
    odd = replace(database.toast[0], schema="Sales", name='a"b',
                  compressed=[ToastColumn("Body", "x")])
    [finding] = toast_findings(with_databases(replace(database, toast=[odd])))
    assert finding.action.startswith(
        'ALTER TABLE "Sales"."a""b" ALTER COLUMN "Body" SET STORAGE EXTERNAL;')
    reserved = replace(odd, schema="public", name="user",
                       compressed=[ToastColumn("order", "x"), ToastColumn("orders", "x")])
    [finding] = toast_findings(with_databases(replace(database, toast=[reserved])))
    assert finding.action.startswith('ALTER TABLE public."user" ALTER COLUMN "order" SET '
                                     'STORAGE EXTERNAL, ALTER COLUMN orders SET STORAGE')


def test_toast_facts_survive_being_stored_and_read_back():
    facts = with_databases(captured("psql_tables_toast"))
    stored = HostFacts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert cluster(stored).bloat.read[0].toast == cluster(facts).bloat.read[0].toast
    assert toast_findings(stored) == toast_findings(facts) != []
