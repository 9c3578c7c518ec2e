"""Hosts, clusters and finished benchmarks in the database, without any SSH."""

from apps.benchmarks.models import Benchmark
from apps.fleet.models import Host, PgCluster
from apps.ops.models import Operation
from apps.remote.keys import generate_keypair

PRIVATE_KEY, _ = generate_keypair("tests")


def host(name: str = "db1") -> Host:
    row = Host(name=name, address="127.0.0.9", credential_kind=Host.CredentialKind.PASTED)
    row.set_private_key(PRIVATE_KEY)
    row.save()
    return row


def cluster(on: Host, port: int = 5432, **changes) -> PgCluster:
    values = {"data_dir": f"/tank/pg{port}/data", "port": port, "version": "15.6",
              "server_version_num": 150006, "socket_dir": "/run/pg", "owner": "postgres",
              "bin_dir": "/usr/lib/postgresql/15/bin"}
    values.update(changes)
    return PgCluster.objects.create(host=on, **values)


def finished(on: Host, tps: float, latency: float, wal_per_tx: float | None,
             status: str = Operation.Status.SUCCEEDED, **parameters) -> Benchmark:
    operation = Operation.objects.create(kind="benchmarks.run", host=on, subject=on.name,
                                         step="collect", status=status, mutating=True)
    params = {"scale": 1, "init": False, "clients": 2, "threads": 1, "duration": 5,
              "mode": "tpcb", "protocol": "simple", **parameters}
    return Benchmark.objects.create(
        host=on, data_dir="/tank/pg/data", port=5432, parameters=params, operation=operation,
        summary={"tps": tps, "latency_avg_ms": latency, "transactions": 100,
                 "per_statement": [{"statement": "BEGIN;", "latency_ms": 0.05}]},
        series={"t": [1.0, 2.0, 3.0], "tps": [tps, tps * 1.1, tps * 0.9],
                "latency_ms": [latency, None, latency], "dirty_bytes": [4096, 8192, 0],
                "writeback_bytes": [0, 0, 4096]},
        wal_bytes_before=1000, wal_bytes_after=1000 + int((wal_per_tx or 0) * 100),
        wal_source="pg_stat_wal", wal_bytes_per_transaction=wal_per_tx)
