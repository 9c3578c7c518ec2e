"""Query-string filters of the benchmarks and validations lists."""

from apps.api.filters import HostListFilter
from apps.benchmarks.models import Benchmark, Validation


class BenchmarkFilter(HostListFilter):
    class Meta:
        model = Benchmark
        fields = ["host"]


class ValidationFilter(HostListFilter):
    class Meta:
        model = Validation
        fields = ["host"]
