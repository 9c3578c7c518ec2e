"""The Benchmarks tab of the host page (apps.fleet.sections): run pgbench, and this
host's recent runs."""

from __future__ import annotations

from apps.benchmarks.models import Benchmark
from apps.fleet.models import Host
from apps.fleet.sections import Section, register_section

RECENT = 10


def context(host: Host) -> dict:
    # host.clusters comes prefetched with the host page's host.
    recent = (Benchmark.objects.filter(host=host).select_related("operation")
              .defer("series", "operation__state")[:RECENT])
    return {"clusters": host.clusters.all(), "benchmarks": recent}


def register() -> None:
    register_section(Section("benchmarks", "Benchmarks", 50, "benchmarks/_host_section.html",
                             context=context))
