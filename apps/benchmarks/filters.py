"""Query-string filters of the benchmarks and validations lists."""

import django_filters

from apps.benchmarks.models import Benchmark, Validation
from apps.ops.filters import IdFilter


class BenchmarkFilter(django_filters.FilterSet):
    host = IdFilter(field_name="host_id", help_text="only this host's benchmarks")

    class Meta:
        model = Benchmark
        fields = ["host"]


class ValidationFilter(django_filters.FilterSet):
    host = IdFilter(field_name="host_id", help_text="only this host's validations")

    class Meta:
        model = Validation
        fields = ["host"]
