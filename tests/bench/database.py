"""A database of a benchmark's own, so its figures never mix with a suite's or a demo's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def database_of_its_own(server: str, name: str) -> Iterator[None]:
    """Create `name` afresh on `server` (postgres://user@host:port), point
    POZOL_DATABASE_URL at it for the block, then close Django's connections and
    drop it, even when the block fails."""
    import psycopg

    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f"drop database if exists {name}")
        conn.execute(f"create database {name}")
    os.environ["POZOL_DATABASE_URL"] = f"{server}/{name}"
    try:
        yield
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(server + "/postgres", autocommit=True) as conn:
            conn.execute(f"drop database if exists {name} with (force)")
