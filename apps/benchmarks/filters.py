"""Query-string filters of the benchmarks and validations lists."""

from apps.benchmarks.models import Benchmark, Validation
from apps.ops.filters import HostListFilter


class BenchmarkFilter(HostListFilter):
    class Meta:
        model = Benchmark
        fields = ["host"]


class ValidationFilter(HostListFilter):
    class Meta:
        model = Validation
        fields = ["host"]
