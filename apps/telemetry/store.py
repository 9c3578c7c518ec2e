"""Writing telemetry rows in bulk, packed rollups and chunks, and their layouts.

A collector round or a rollup tick writes thousands of rows: they go in with one
COPY per table (psycopg's `cursor.copy`), into the table itself or into a
temporary one that one UPDATE or INSERT ... ON CONFLICT then applies, not a query
per row. Layouts (apps.telemetry.core.packing.Layout) are few and shared by
many rows: this process keeps the ones it has read by id (an id never changes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import orjson
from django.db import connection

from apps.telemetry.core import packing, rawpack
from apps.telemetry.models import Layout

_layouts: dict[int, packing.Layout] = {}


def copy(table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> int:
    """COPY rows into `table` (names come from code, never from a request)."""
    names = ", ".join(f'"{name}"' for name in columns)
    count = 0
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as out:
            for row in rows:
                out.write_row(row)
                count += 1
    return count


def json_text(value: object) -> str:
    """`value` as JSON text for a jsonb column: dicts, lists, numbers, text, and
    dataclasses as Sample.to_dict() spells them (fields by name, times as ISO text).
    orjson, not json.dumps: a collector round writes three documents a host, and
    at 10,000 hosts json.dumps of them with Sample.to_dict() took about 1.8 s of a
    6 s budget, orjson a tenth of that. A NaN or infinity becomes null, which jsonb
    takes (json.dumps writes NaN, which jsonb refuses)."""
    return orjson.dumps(value).decode()


def json_value(text: str) -> object:
    """A jsonb column read as text, parsed: orjson, which the rollup tick reads every
    host's raw rows with (json.loads took twice as long). A number orjson refuses
    (past a double's range, which jsonb keeps) is read by json.loads, as Django
    would. One difference stays: an integer wider than 64 bits comes back as a
    float, not exact; no counter ZFS or PostgreSQL keeps is that wide."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def temporary(name: str, definition: str) -> None:
    """A temporary table for this transaction (dropped first: a test's transaction
    may make it twice)."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS pg_temp.{name}")
        cursor.execute(f"CREATE TEMPORARY TABLE {name} ({definition}) ON COMMIT DROP")


def execute(sql: str, params: Sequence | None = None) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def layout_ids(layouts: Iterable[packing.Layout]) -> dict[packing.Layout, int]:
    """Each layout's id, made if new: one query for the batch (two with new ones).
    Not kept between calls: a rolled-back transaction takes its new ids with it."""
    by_digest = {layout.digest: layout for layout in set(layouts)}
    ids = dict(Layout.objects.filter(digest__in=by_digest).values_list("digest", "pk"))
    new = [Layout(digest=d, paths=layout.to_json()) for d, layout in by_digest.items()
           if d not in ids]
    if new:
        Layout.objects.bulk_create(new, ignore_conflicts=True)
        ids = dict(Layout.objects.filter(digest__in=by_digest).values_list("digest", "pk"))
    for digest, pk in ids.items():
        _layouts.setdefault(pk, by_digest[digest])
    return {layout: ids[digest] for digest, layout in by_digest.items()}


def layout(pk: int) -> packing.Layout:
    found = _layouts.get(pk)
    if found is None:
        found = _layouts[pk] = packing.Layout.from_json(Layout.objects.get(pk=pk).paths)
    return found


def bucket(start: datetime, values: dict | None, layout_pk: int | None,
           data: bytes | memoryview | None) -> packing.Bucket:
    """A stored rollup row as a Bucket: packed, or JSON as written before packing."""
    if data is not None and layout_pk is not None:
        return packing.unpack(layout(layout_pk), start, bytes(data))
    return packing.from_values(start, values or {})


def save_rollups(resolution: str, buckets: Iterable[tuple[int, packing.Bucket]]) -> int:
    """Insert (or replace: a bucket made again) packed rollups, with one COPY. The
    buckets are packed first: nothing else may use the connection during a COPY."""
    buckets = list(buckets)
    if not buckets:
        return 0
    ids = layout_ids(b.layout for _, b in buckets)
    rows = [(host, b.start, ids[b.layout], packing.pack(b)) for host, b in buckets]
    temporary("rollup_in", "host_id bigint, start timestamptz, layout_id bigint, data bytea")
    copy("rollup_in", ("host_id", "start", "layout_id", "data"), rows)
    execute("""
        INSERT INTO telemetry_rollup (host_id, resolution, start, layout_id, data, "values")
        SELECT host_id, %s, start, layout_id, data, NULL FROM rollup_in
        ON CONFLICT (host_id, resolution, start) DO UPDATE
        SET layout_id = EXCLUDED.layout_id, data = EXCLUDED.data, "values" = NULL""",
            [resolution])
    return len(rows)


def chunk_buckets(start: datetime, layout_pk: int,
                  data: bytes | memoryview) -> list[packing.Bucket]:
    """A stored RollupChunk's buckets."""
    return packing.unpack_chunk(layout(layout_pk), start, bytes(data))


def save_chunks(resolution: str,
                chunks: Sequence[tuple[int, datetime, packing.Layout, bytes]]) -> int:
    """Insert (or replace) packed chunks (host, span start, packing.pack_chunk's layout
    and bytes), with one COPY."""
    if not chunks:
        return 0
    ids = layout_ids(layout for _, _, layout, _ in chunks)
    temporary("chunk_in", "host_id bigint, start timestamptz, layout_id bigint, data bytea")
    copy("chunk_in", ("host_id", "start", "layout_id", "data"),
         ((host, start, ids[layout], data) for host, start, layout, data in chunks))
    execute("""
        INSERT INTO telemetry_rollupchunk (host_id, resolution, start, layout_id, data)
        SELECT host_id, %s, start, layout_id, data FROM chunk_in
        ON CONFLICT (host_id, resolution, start) DO UPDATE
        SET layout_id = EXCLUDED.layout_id, data = EXCLUDED.data""", [resolution])
    return len(chunks)


def save_raw_chunks(chunks: Sequence[tuple[int, datetime, packing.Layout, bytes]]) -> int:
    """Insert (or replace) packed hours of raw samples (host, hour, layout, bytes),
    with one COPY."""
    if not chunks:
        return 0
    ids = layout_ids(layout for _, _, layout, _ in chunks)
    temporary("raw_chunk_in", "host_id bigint, start timestamptz, layout_id bigint, data bytea")
    copy("raw_chunk_in", ("host_id", "start", "layout_id", "data"),
         ((host, start, ids[layout], data) for host, start, layout, data in chunks))
    execute("""
        INSERT INTO telemetry_rawchunk (host_id, start, layout_id, data)
        SELECT host_id, start, layout_id, data FROM raw_chunk_in
        ON CONFLICT (host_id, start) DO UPDATE
        SET layout_id = EXCLUDED.layout_id, data = EXCLUDED.data""")
    return len(chunks)


def raw_samples(start: datetime, layout_pk: int, data: bytes | memoryview,
                keep: Callable[[tuple[str, ...]], bool] | None = None,
                ) -> list[tuple[datetime, dict, dict]]:
    """A stored RawChunk's samples (taken at, values, missing)."""
    return rawpack.unpack_samples(layout(layout_pk), start, bytes(data), keep)
