"""A database of a benchmark's own, so its figures never mix with a suite's or a demo's."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager


def unique_name(prefix: str) -> str:
    """prefix_<random>: two runs on one machine never drop each other's database."""
    return f"{prefix}_{secrets.token_hex(4)}"


@contextmanager
def database_of_its_own(server: str, name: str, *, create: bool = True,
                        drop: bool = True) -> Iterator[None]:
    """Create `name` afresh on `server` (postgres://user@host:port), point
    POZOL_DATABASE_URL at it for the block, then close Django's connections and
    drop it, even when the block fails. create=False uses the database as it is
    (one seeded by an earlier run kept with drop=False)."""
    import psycopg

    if create:
        with psycopg.connect(server + "/postgres", autocommit=True) as conn:
            conn.execute(f"drop database if exists {name}")
            conn.execute(f"create database {name}")
    os.environ["POZOL_DATABASE_URL"] = f"{server}/{name}"
    try:
        yield
    finally:
        from django.db import connections

        connections.close_all()
        if drop:
            with psycopg.connect(server + "/postgres", autocommit=True) as conn:
                conn.execute(f"drop database if exists {name} with (force)")


@contextmanager
def django_on_its_own(server: str, name: str, *, create: bool = True,
                      drop: bool = True) -> Iterator[None]:
    """database_of_its_own, with Django set up on it and migrated: every benchmark's
    preamble."""
    with database_of_its_own(server, name, create=create, drop=drop):
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django_settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        yield
