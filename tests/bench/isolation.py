"""What keeps a benchmark run to itself: a subnet, a control-plane database and a Redis
database of its own, taken from its arguments, so two runs on one machine (or a run
beside the suite) never destroy each other's."""

from __future__ import annotations

import argparse
import os


def add_arguments(parser: argparse.ArgumentParser, *, subnet: str, database: str) -> None:
    """--subnet (default `subnet`, or $POZOL_BENCH_SUBNET), --database (default
    `database`_<pid>) and --redis-url (default $POZOL_BENCH_REDIS_URL)."""
    parser.add_argument("--subnet", default=os.environ.get("POZOL_BENCH_SUBNET", subnet),
                        help=f"loopback /24 of the bench's hosts ({subnet}, or "
                             "$POZOL_BENCH_SUBNET): one of its own per run")
    parser.add_argument("--database", default=f"{database}_{os.getpid()}",
                        help="the throwaway control-plane database (one per process)")
    parser.add_argument("--redis-url", default=os.environ.get("POZOL_BENCH_REDIS_URL"),
                        help="the Redis database of the bench's Celery broker (else "
                             "$POZOL_BENCH_REDIS_URL, $POZOL_REDIS_URL or the test settings')")


def apply(args: argparse.Namespace) -> str:
    """The Redis database asked for, where tests/django_settings.py reads it (and gives
    it to the workers it starts); a line saying what the run uses."""
    if args.redis_url:
        os.environ["POZOL_REDIS_URL"] = args.redis_url
    redis = os.environ.get("POZOL_REDIS_URL", "the test settings' default")
    return f"database {args.database}, subnet {args.subnet}, redis {redis}"
