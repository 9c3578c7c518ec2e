"""Telemetry's pure core (issue 11): no Django, no database, no SSH.

- spec: what a host offers to sample, from its discovered facts;
- command: the one-round-trip sample script for that spec;
- pgstats: the per-cluster statistics query and its parser;
- sample, parse: the typed frozen Sample and the parsers that fill it;
- rates: two consecutive samples -> rates and ratios over the interval;
- rollup: downsampling into 5-minute and hourly buckets, and retention;
- series, packing, rawpack: the stored forms: a raw row, a rolled-up bucket
  packed alone or with its span's, an hour of raw rows packed together.
"""
