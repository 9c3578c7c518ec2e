"""The control plane's PostgreSQL sessions run without JIT.

On a fresh demo (tables not yet analysed) the overview's grouped query over the
hosts is estimated past jit_above_cost, and PostgreSQL spent 2-5 s compiling it
for a 1 ms run: the first page after sign-in took 6.9 s. A control plane's
queries never gain from JIT, so every connection turns it off.
"""

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def test_every_connection_runs_without_jit():
    if connection.vendor != "postgresql":
        pytest.skip("JIT is PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("off",)
