"""Record what a real VictoriaMetrics answers to what PoZoL writes and asks.

    PYTHONPATH=. python tests/telemetry/victoriametrics/capture.py

Starts /usr/bin/victoria-metrics on a free loopback port (tests/telemetry/
victoriametrics: 18428-18438, a temporary data directory), writes the zfs-fuse
test host's two captured samples (tests/telemetry/fixtures/zfs-fuse) as the
collector writes them (apps.telemetry.core.metrics.interval_values and
vmformat.lines) at five minutes one minute apart, the third missing, then saves
beside this file: `import.txt` (the text written), `range-capacity.json`
(query_range of pool_capacity, a series per pool), `range-arc-hit-rate.json`
(of arc_hit_rate, the host's one series, the missed minute absent),
`range-empty.json` (a host with no series) and `bad-query.txt` (the answer to a
query that does not parse). Stops the process by its PID.
"""

from __future__ import annotations

from datetime import timedelta

import requests

from apps.telemetry.core import metrics, vmformat
from apps.telemetry.core.parse import parse_sample
from apps.telemetry.core.rates import rates
from tests.telemetry.core.helpers import fuse_spec
from tests.telemetry.fixtures import captured
from tests.telemetry.victoriametrics import HERE, VictoriaMetrics

HOST = 7
STEP = timedelta(seconds=60)
MINUTES = (0, 1, 3, 4)  # minute 2 was missed


def main() -> None:
    (one, at_one), (two, at_two) = captured(1), captured(2)
    spec = fuse_spec()
    before, after = parse_sample(one, spec, at_one), parse_sample(two, spec, at_two)
    from apps.telemetry.core import series

    values = metrics.interval_values(rates(before, after, at_two - at_one),
                                     series.stored(after, before))
    start = at_two.replace(second=0, microsecond=0) + timedelta(seconds=7)
    text = "".join(vmformat.lines(HOST, start + minute * STEP, values) for minute in MINUTES)
    server = VictoriaMetrics()
    server.start()
    try:
        answer = requests.post(f"{server.url}/api/v1/import/prometheus", data=text.encode(),
                               timeout=10)
        answer.raise_for_status()
        server.flush()
        (HERE / "import.txt").write_text(text)
        window = {"start": f"{(start - STEP).timestamp():.3f}",
                  "end": f"{(start + 5 * STEP).timestamp():.3f}", "step": "60s"}
        for name, query in (("range-capacity.json", vmformat.range_query(
                                "pool_capacity", HOST, STEP)),
                            ("range-arc-hit-rate.json", vmformat.range_query(
                                "arc_hit_rate", HOST, STEP)),
                            ("range-empty.json", vmformat.range_query(
                                "arc_hit_rate", HOST + 1, STEP))):
            got = requests.get(f"{server.url}/api/v1/query_range",
                               params={"query": query, **window}, timeout=10)
            got.raise_for_status()
            (HERE / name).write_text(got.text.strip() + "\n")
        bad = requests.get(f"{server.url}/api/v1/query_range",
                           params={"query": "avg_over_time(", **window}, timeout=10)
        (HERE / "bad-query.txt").write_text(f"HTTP {bad.status_code}\n{bad.text.strip()}\n")
    finally:
        server.remove()


if __name__ == "__main__":
    main()
