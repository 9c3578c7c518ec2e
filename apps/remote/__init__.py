"""How PoZoL reaches a host: SSH, command templates, sudo routes, fact parsers.

No Django, no database: everything here is plain Python a worker calls.

`apps/remote/commands.py` holds every command as a template. Each value is
validated against the rules of what it names (ZFS dataset, PostgreSQL
identifier or setting, sysctl, path, OS user) and then shell-quoted once; a
hostile value is refused before any command exists, and a corpus of hostile
inputs runs through every validator in the tests. psql and pg_ctl run through
one `ClusterTarget` (owner, binaries, socket, port, data directory), with SQL
values passed as psql variables; starting, stopping, restarting and reloading a
cluster go through its `control(action)` only (tuning's and experiments'
restarts, a snapshot rollback's stop and start): `systemctl` on the cluster's
postgresql@ unit while systemd is PID 1 (discovery reads the unit from the
postmaster's /proc/PID/cgroup), `pg_ctlcluster` where postgresql-common manages
it (pg_ctlcluster installed, a start.conf in its
/etc/postgresql/<major>/<name>), else `pg_ctl -D` as the owner, naming `-c
config_file=` on a start when the configuration is outside the data directory
(PgCluster.control() decides from discovery's facts). A clone of such a cluster
(Debian's layout) carries the origin's configuration into its own data
directory: apps/clones/core/layout.py; a failure's message starts with
PostgreSQL's own `ERROR:` line. SSH is strict: pinned host keys, no agent or
key search, connect, banner and auth timeouts, a deadline per command, output
drained. Every command runs under `LC_ALL=C` (a prefix in ssh.py's one wrapper,
as the deadline is; sshd passes client variables only by AcceptEnv), so the
parsers read English whatever locale a host's logins get.

A host's login may be an ordinary user with sudo (`Host.user` other than root).
ssh.py's wrapper then runs each command through `sudo -n` by the route
apps/remote/sudo.py picks from how the command was built: a `ClusterTarget`
program as `sudo -n -u OWNER BIN_DIR/PROGRAM` (the `cluster` rule), anything
else (zfs, sysctl, every script) through the helper `pozol-run` (the `run`
rule), signed with the host's own key for one run (apps/remote/signed.py): the
login alone can run nothing as root. `Command.direct` carries "this is one
program, as this user"; a command rebuilt from another's text loses it and falls
back to the helper, so keep it with `dataclasses.replace`. A refusal by sudo or
by the helper is `SudoRefused` (code `sudo_refused`) naming the rule, whatever
`check` asked. Discovery first runs `sudo -n -l` and reads the helper's version
as the login (`Command.as_login`), refuses to go on without either, and records
`HostFacts.sudo` (the rules `sudo.rules()` derives from the host's clusters
that the listing does not grant); `GET /api/hosts/<id>/sudoers/` and `manage.py
pozol_sudoers` print the file and the helper. A replication link to such a
target receives through the helper's standing script of the link in its forced
command. Root logins run exactly as before.
"""
