"""Real test hosts on one machine: PostgreSQL on ZFS (zfs-fuse) behind a real sshd.

    python -m tests.fleet up --hosts 2 --json
    python -m tests.fleet status --json
    python -m tests.fleet down
    python -m tests.fleet serve --listen 0.0.0.0 --state-dir /var/lib/pozol-demo

or, from Python (pytest fixtures): ``from tests.fleet import up, status, down``.

Each host is a private mount namespace and a private PID namespace (with its own
/proc, so `ps -e` over its ssh lists only its processes, as on a real server),
holding its own zfs-fuse daemon, its own file-backed pool ``tank`` mounted
under the state dir, its own sshd on 127.0.77.N:22 with its own host key, and
its own PostgreSQL 15 cluster (data on ``tank/pg/data``, WAL on
``tank/pg/wal``) listening on 127.0.77.N:5432 with a unix socket directory
inside the state dir. Datasets and PostgreSQL keep stock
settings: tuning them is the product's job.

What the hosts do NOT isolate, because they share one kernel: sysctls
(``vm.dirty_bytes`` and friends), ``/proc/meminfo`` (Dirty, Writeback), CPU and
memory. A test that changes a sysctl changes it for every host, and for the
machine, and must restore it. Users, the network and the root filesystem are
shared too; only mounts and processes are private. From the machine, every
process of every host is visible (with another PID than inside the host).

Everything lives under the state dir (default /tmp/pozol-fleet, env
POZOL_FLEET_STATE_DIR) on a loopback /24 (default 127.0.77, env
POZOL_FLEET_SUBNET), so a demo fleet and a test fleet coexist. ``down`` stops
only processes recorded in the state dir, after checking each PID still is
the process that was started (start time and command line); killing a host's
PID 1 (its namespace holder) ends every process of that host.

``serve`` (the demo-host container of docker-compose.yml) runs one host in the
foreground with its sshd on ``--listen`` (such as 0.0.0.0) instead of its
loopback address, so that other machines reach it; its PostgreSQL stays on the
loopback address. It prints the host as ``up --json`` does, with "address"
set to what a client should dial, and runs ``down`` on SIGTERM or SIGINT. A
state dir left by a killed run is cleaned up and the host rebuilt from
scratch (see ``_serve`` in __main__.py).
"""

from .fleet import down, status, up
from .model import Host, HostStatus
from .settings import FleetError

__all__ = ["FleetError", "Host", "HostStatus", "down", "status", "up"]
