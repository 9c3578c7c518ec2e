"""Telemetry: samples of every host over time, rollups, the series API, /metrics.

Telemetry reaches hosts without an Operation, as clones' usage sampling
(apps/clones/usage.py) does: a sample a minute per host would flood the
operations table. The beat task
`telemetry.collect` (every `POZOL_TELEMETRY_INTERVAL`, 60 s) is routed to the
`telemetry` queue, which one single-process worker serves (docker-compose
`telemetry`, `make run`). Past one machine, `POZOL_TELEMETRY_SHARDS=N` splits the
fleet by host id mod N (apps/telemetry/shards.py, the rule of /metrics' shards):
one beat entry per shard sends `telemetry.collect(k, N)`, routed to shard k's
queue (`telemetry` for 0, `telemetry-k`), each served by one worker process on
any machine with the same database and Redis. Each such process samples every
discovered pinned host of its shard in `POZOL_TELEMETRY_THREADS` threads, one
SSH round trip each (the script of apps/telemetry/core/command.py, for what
discovery found the host offers), over its pooled connection, so the collectors
hold one connection per host whatever the number of workers, and a slow host
holds a thread, not the round. Threads
only talk SSH and parse; the task's thread writes. A failure is kept on the
host's `HostTelemetry` (last error, code, time), never raised. A host that
cannot be got into (no answer, refused, authentication) is marked unreachable
with its alert at that sample, and the first sample that answers again ends the
outage: unreachable hosts are sampled too, so an outage is known to the minute,
not at the next discovery (every 15 minutes). A command that times out on a
host that answered is a missing sample, not an outage. A raw row (`RawSample`)
is the sample in apps/telemetry/core/series.py's stored form: nested JSON by
source, pools, datasets and clusters keyed by name, counters raw (the txg
history, a ring buffer, is turned into per-interval figures when sampled).
A round (one shard's) is written in a constant number of queries
(apps/telemetry/store.py): every host's raw row and state with one COPY into a
temporary table, streamed as they are made (their JSON text by orjson), then
one INSERT of the raw rows and one UPDATE of the states from it, errors with
one UPDATE; each host's last sample stays in the collector's memory for the
next round's rates (a query of the hosts' `last_sample_at` checks it is still
the last; after a restart all hosts' are read in one query): a few KB of
memory a host in the collector's process. Of a pool's txg history (up to
zfs_txg_history rows, 100 by default) the memory and the state row keep the
last committed txg, the only one the next round's rates read
(core/rates.py `as_before`).
`telemetry.maintain` (apps/telemetry/upkeep.py) rolls closed buckets into
5-minute and hourly `Rollup` rows for the whole fleet at once: one mark per
resolution (`RollupMark`), only the buckets closed since the last tick (a
missed tick is caught up; a raw row that arrives after its bucket was made is
found by its id and has that bucket and hour made again), every host's buckets
written with one COPY, then prunes by time ranges through the time indexes
(48 h, 30 d, 400 d), a raw row only once rolled up. A rollup is packed
(apps/telemetry/core/packing.py): its `Layout` (the paths, shared by hosts of
one shape) and a deflated bytea of columns, exact to the bit, about 1.3 KB a
`Rollup` row against 9 KB of JSON; once its span is closed (an hour of
5-minute buckets, a UTC day of hourly ones) a later tick puts each host's
buckets of it into one `RollupChunk` (about 770 bytes a bucket), and an hour
of raw rows an hour behind the rollups into one `RawChunk` (core/rawpack.py,
about 230 bytes a sample), so the default retention takes about 13 MiB a host
instead of 27 (the OpenZFS 2.3 VM host's captured sample, tests/bench/
telemetry_upkeep); rows written before migration 0003 keep their JSON, rows
from before 0004 are compacted by the ticks after it, and all are read and
merged as before.
`/api/hosts/{id}/telemetry/` picks the resolution by the span, fetches only
the fields the metric reads (`values -> 'arc' ->> 'hits'` of raw rows; packed
rollups and chunks unpacked to those paths) through the (host, taken_at)
index, and makes rates on read with
core/rates.py (a reboot, a reset or a missed sample is a null point); a metric
the host lacks answers `available: false` and why. For a metric per pool,
dataset or cluster the database cuts each key's object to the fields read too
(`PerKeyFields`: a cluster's 30 counters down to the 2 TPS reads), which is
what keeps a 7-day graph of 200 hosts' fleet under its 300 ms goal
(tests/bench/telemetry_scale.py).

With `POZOL_TELEMETRY_STORE=victoriametrics` the history is kept in
VictoriaMetrics instead (apps/telemetry/victoria.py): each round also posts every
sample's chart values in one request, the series API and charts read
/api/v1/query_range, and the database keeps host states and a 10-minute tail of
raw rows (for /metrics and alerts); `telemetry.maintain` only prunes that tail.

`/metrics` (apps/telemetry/scrape.py: a bearer token or an allowed CIDR, else
401/403) runs one FleetCollector per request (apps/telemetry/prometheus.py, a
prometheus_client Collector) and writes its gauges straight to the text format
(the library's writer re-validated every label of every sample: most of a big
scrape). `?shard=I&shards=N` serves only the hosts with id mod N == I, and the
control plane's own series on shard 0, so scrapers can split a big fleet (README,
"Prometheus and Grafana"); a bad pair is a 400. It reads in a constant number of
queries whatever the fleet's size: hosts with their newest snapshot (a subquery
on the (host, created_at) index), each host's newest raw row and the rates the
collector stored with it (the state row's ARC hit, TPS and cache hit, the
overview's; the row found by the state's `last_sample_at`), collector state,
pool health cut out of each last sample in SQL, pools of hosts without a
current sample, links, operations by status and active ones by kind; and one
Redis round trip: Celery queue lengths (`LLEN`) and the step latency histogram.
Steps run in workers, the page in the web process, so the engine adds each
step's duration to a Redis hash (apps/ops/timing.py, one pipelined `HINCRBY`
per step, skipped for a minute when Redis is away) that /metrics reads with one
`HGETALL`. Rates come from core/rates.py as the graphs' do, worked out once
when the sample is recorded, never per scrape. Labels are host,
pool and dataset names plus code-bounded ones (state, status, kind, step,
queue); PostgreSQL figures are per host (TPS summed, cache hit of the worst
cluster), so no cluster or snapshot label exists. docs/grafana/pozol-fleet.json
reads only names /metrics serves (a test checks).

What the pages show of telemetry: each sample also writes the host's current
values on its `HostTelemetry` row (apps/telemetry/core/current.py: ARC hit rate
and TPS over the last interval, fullest pool, bytes used and saved by
compression, and the last hour of ARC hit rate and TPS for sparklines), so the
overview joins one row per host and sorts the whole fleet by them in its one
query; the fleet's space saved is one aggregate (a `Total` of the sections
registry). The host's Metrics tab (apps/telemetry/host_page.py) is a grid of
chart figures whose sources are `/telemetry/hosts/<id>/charts/<chart>/?range=`
or `?from=&to=` (session-signed, apps/telemetry/charts.py: several metrics of
the series API on one time axis, a missing source listed with its reason); its
current values are an htmx partial polled at the sampling interval.
"""
