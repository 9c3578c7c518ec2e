"""Benchmarks' pure core: no Django, no database, no SSH.

- commands: the remote commands of a run (pgbench, its WAL reads, the sampler) and the
  labels of pgbench's modes and protocols.
"""
