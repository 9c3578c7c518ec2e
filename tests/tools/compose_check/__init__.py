"""`make compose-check`: docker-compose.yml run for real, on this machine, then undone.

As root, on Debian: installs docker.io, docker-compose (v1) and nftables if
missing; starts a private dockerd (its own data root, exec root, socket and
pidfile, under nice: it builds the images and runs the containers) and stops
it by its PID; builds stand-ins for the official base images when they cannot
be pulled (a Debian base made with debootstrap, tagged python:3.11-slim-bookworm,
node:20-bookworm-slim, postgres:15 and redis:7, see standins/); brings the
deployment up with two collector shards, signs in, registers demo-host through the
API and discovers it, starts the README's second collector (a `docker run` of the
image on queue telemetry-1) and sees it sample demo-host, which the compose file's
collector (shard 0) left alone, takes a snapshot and makes a clone through the
API, stops and starts demo-host and discovers it again with the keys it had, then
tears everything down and puts the machine back: net.ipv4.ip_forward, nft tables,
network links (docker0, bridges) and the data root. Every step is logged with its time.

    python -m tests.tools.compose_check [--cache DIR] [--keep-going]

--cache DIR keeps the debootstrapped base (a tar file) there between runs: the
one thing a run may leave behind, and only when asked.
"""
