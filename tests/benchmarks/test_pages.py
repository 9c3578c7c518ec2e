"""The benchmark and validation pages render, with server-side SVG charts, and the
live partial stops htmx polling (286) once the run has ended."""

import pytest

from apps.benchmarks.core import commands
from apps.benchmarks.models import Benchmark, Validation
from apps.benchmarks.steps import build_series
from apps.benchmarks.templatetags.charts import line_chart, ratio
from apps.ops.models import Operation
from apps.remote.cluster import ClusterTarget
from apps.remote.commands import InvalidValue
from tests.benchmarks import factories
from tests.html import parse

pytestmark = [pytest.mark.django_db]



def test_benchmark_page_shows_summary_and_charts(signed_in):
    host = factories.host()
    bench = factories.finished(host, 1234.5, 1.25, 512.0)
    page = signed_in.get(f"/benchmarks/{bench.pk}/").content.decode()
    assert "1234.5 tps" in page and 'id="chart-tps"' in page and 'id="chart-dirty_bytes"' in page
    assert "BEGIN;" in page and "512 B per transaction" in page
    assert "hx-get" not in page  # finished: nothing to poll


def test_live_partial_polls_while_running_and_stops_with_286(signed_in):
    host = factories.host()
    bench = factories.finished(host, 100.0, 1.0, None, status=Operation.Status.RUNNING)
    assert 'hx-trigger="every 1s"' in signed_in.get(f"/benchmarks/{bench.pk}/").content.decode()
    assert signed_in.get(f"/benchmarks/{bench.pk}/", HTTP_HX_REQUEST="true").status_code == 200
    Operation.objects.filter(pk=bench.operation_id).update(status=Operation.Status.SUCCEEDED)
    assert signed_in.get(f"/benchmarks/{bench.pk}/", HTTP_HX_REQUEST="true").status_code == 286


def test_validation_page_and_list(signed_in):
    host = factories.host()
    before = factories.finished(host, 1000.0, 2.0, 400.0)
    after = factories.finished(host, 1100.0, 1.8, 400.0)
    response = signed_in.post(f"/benchmarks/{after.pk}/compare/",
                              {"before": before.pk, "label": "<b>x</b>"})
    validation = Validation.objects.get()
    assert response.url == f"/benchmarks/validations/{validation.pk}/"
    page = signed_in.get(response.url).content.decode()
    assert "1.10x (+10.0%)" in page and "&lt;b&gt;x&lt;/b&gt;" in page
    listing = signed_in.get("/benchmarks/").content.decode()
    assert f"#{before.pk} → #{after.pk}" in listing


def test_the_run_form_starts_a_benchmark_or_says_why_not(signed_in, delivered):
    host = factories.host()
    factories.cluster(host)
    response = signed_in.post(f"/benchmarks/hosts/{host.pk}/run/",
                              {"clients": "2", "threads": "9", "duration": "5"})
    assert response.url == f"/hosts/{host.pk}/benchmarks/" and not Operation.objects.exists()
    response = signed_in.post(f"/benchmarks/hosts/{host.pk}/run/",
                              {"clients": "2", "threads": "1", "duration": "5"})
    assert response.url.startswith("/benchmarks/") and Operation.objects.count() == 1


def test_chart_has_axes_labels_max_and_breaks_at_gaps():
    svg = line_chart({"t": [1, 2, 3, 4], "tps": [10, None, 30.5, 20]}, "tps", "TPS")
    assert svg.count("<polyline") == 1 and ">30.5<" in svg and ">4 s<" in svg
    assert svg.count("<circle") == 1  # the lone sample before the gap is a dot
    assert "seconds since start" in svg and ">TPS<" in svg
    assert "No Dirty" in line_chart({"t": [], "dirty_bytes": []}, "dirty_bytes", "Dirty")
    assert ">8M<" in line_chart({"t": [1], "d": [8 * 1024**2]}, "d", "Dirty", "bytes")
    assert "&lt;script&gt;" in line_chart({"t": [1], "x": [1]}, "x", "<script>")
    assert ratio(0.8) == "0.80x (-20.0%)" and ratio(None) == "—"


def test_series_places_samples_on_pgbench_clock():
    points = [[1.0, 100.0, 1.0], [2.0, 110.0, None], [3.0, 120.0, 1.2]]
    samples = [[1000.9, 4096, 0], [1002.0, 8192, 1024], [1010.0, 1, 1]]
    series = build_series(points, samples, start_epoch=1000.0)
    assert series["dirty_bytes"] == [4096, 8192, 8192]
    assert series["writeback_bytes"] == [0, 1024, 1024]
    assert build_series(points, [], None)["dirty_bytes"] == [None, None, None]


# The database goes to pgbench as a conninfo, so no name is read as a connection string.
DBNAME = """'dbname='"'"'pgbench'"'"''"""


def test_commands_quote_and_validate():
    target = ClusterTarget.of(owner="postgres", bin_dir="/usr/lib/postgresql/15/bin",
                                socket_dir="/run/pg", port=5432, database="pgbench")
    run = commands.run(target, clients=2, threads=1, duration=5, mode="select-only",
                       protocol="prepared")
    assert run.text == (
        'echo "pozol-start $(date +%s.%N)" >&2; exec sh -c \'cd / && exec "$@"\' sh '
        "runuser -u postgres -- "
        "/usr/lib/postgresql/15/bin/pgbench -h /run/pg -p 5432 -c 2 -j 1 -T 5 --progress=1 "
        "-M prepared -S -r " + DBNAME)
    # The log shows the pgbench command line, not the scaffolding around it.
    assert run.redacted() == ("pgbench -h /run/pg -p 5432 -c 2 -j 1 -T 5 --progress=1 "
                              f"-M prepared -S -r {DBNAME}  (as postgres)")
    assert commands.initialise(target, 3).text.endswith("-p 5432 -i -s 3 " + DBNAME)
    assert "'select wal_bytes from pg_stat_wal'" in commands.wal_bytes(target, 150000).text
    assert "pg_current_wal_lsn()" in commands.wal_bytes(target, 130000).text
    sampler = commands.meminfo_sampler("/var/lib/pozol/op1-pgbench.status", 5).text
    assert "+ 15 ))" in sampler and "{d = $2}" in sampler
    for bad in ({"owner": "root;id"}, {"owner": "-pg"}, {"socket_dir": "/tmp/$(x)"}, {"port": 0},
                {"database": "Bad"}, {"bin_dir": "usr/bin"}):
        with pytest.raises(InvalidValue):
            ClusterTarget.of(**{"owner": "postgres", "bin_dir": "/b", "socket_dir": "/s",
                                  "port": 5432, "database": "d", **bad})
    with pytest.raises(InvalidValue):
        commands.run(target, clients=2, threads=3, duration=5, mode="tpcb", protocol="simple")
    with pytest.raises(InvalidValue):
        commands.run(target, clients=2, threads=1, duration=5, mode="tpcb", protocol="x;y")


def test_the_run_form_offers_what_the_service_takes(signed_in, replayed_host):
    page = parse(signed_in.get(f"/hosts/{replayed_host.pk}/benchmarks/").content)
    form = page.find("form", id="run-pgbench")
    modes = form.find("select", name="mode").find_all("option")
    assert {o.attrs["value"]: o.text for o in modes} == commands.MODES
    protocols = form.find("select", name="protocol").find_all("option")
    assert [o.attrs["value"] for o in protocols] == list(commands.PROTOCOLS)
    clients = form.find("input", name="clients")
    assert (clients.attrs["min"], clients.attrs["max"]) == ("1", "1000")


def test_a_validation_draws_before_and_after_on_shared_axes(signed_in):
    host = factories.host()
    before = factories.finished(host, 1000.0, 2.0, 400.0)
    after = factories.finished(host, 3000.0, 1.0, 400.0)
    after.series = {**after.series, "t": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                    "tps": [3000.0] * 6}
    after.save()
    validation = Validation.objects.create(host=host, before=before, after=after)
    page = parse(signed_in.get(f"/benchmarks/validations/{validation.pk}/").content)
    charts = page.find("div", id="charts")
    assert not [e for e in page.iter() if "style" in e.attrs]  # CSP: no inline styles
    tps = charts.find("svg", id="chart-tps")
    assert len(charts.find_all("svg", id="chart-tps")) == 1
    # One y scale: the before run (at most 1100 tps) sits low in the after run's 3,000 scale;
    # one time range: the x axis runs to the longer run's 6 s.
    texts = [e.text for e in tps.find_all("text")]
    assert "3,000" in texts and "6 s" in texts
    legend = [g.text for g in tps.find_all("g")]
    assert legend == [f"before #{before.pk}", f"after #{after.pk}"]
    lines = {tuple(p.attrs["class"].split()): p.attrs["points"] for p in tps.find_all("polyline")}
    before_ys = [float(xy.split(",")[1]) for xy in lines[("line", "before")].split()]
    after_ys = [float(xy.split(",")[1]) for xy in lines[("line", "after")].split()]
    assert min(before_ys) > max(after_ys)  # before's peak drawn below after's level
    before_xs = [float(xy.split(",")[0]) for xy in lines[("line", "before")].split()]
    after_xs = [float(xy.split(",")[0]) for xy in lines[("line", "after")].split()]
    assert max(before_xs) == after_xs[2]  # t=3 falls at the same x in both series


def test_run_again_starts_the_same_workload_on_the_same_cluster(signed_in, delivered):
    host = factories.host()
    cluster = factories.cluster(host)
    before = factories.finished(host, 1000.0, 2.0, 400.0, clients=4, threads=2, duration=7,
                                mode="select-only")
    after = factories.finished(host, 1100.0, 1.8, 400.0, clients=4, threads=2, duration=7,
                               mode="select-only")
    Benchmark.objects.filter(pk__in=[before.pk, after.pk]).update(cluster=cluster,
                                                                 database="bench1")
    validation = Validation.objects.create(host=host, before=before, after=after)
    page = parse(signed_in.get(f"/benchmarks/validations/{validation.pk}/").content)
    form = page.find("form", id="run-again")
    response = signed_in.post(form.attrs["action"])
    again = Benchmark.objects.exclude(pk__in=[before.pk, after.pk]).get()
    assert response.url == f"/benchmarks/{again.pk}/"
    assert (again.cluster, again.database, again.parameters) == \
        (cluster, "bench1", after.parameters)
    assert again.operation.kind == "benchmarks.run" and again.operation.triggered_by_id


def test_run_again_says_why_not_when_the_cluster_is_gone(signed_in, delivered):
    host = factories.host()
    before = factories.finished(host, 1000.0, 2.0, 400.0)
    after = factories.finished(host, 1100.0, 1.8, 400.0)
    validation = Validation.objects.create(host=host, before=before, after=after)
    response = signed_in.post(f"/benchmarks/validations/{validation.pk}/run-again/",
                              follow=True)
    assert "no longer a cluster" in response.content.decode()
    assert Benchmark.objects.count() == 2 and not delivered
    assert signed_in.get(f"/benchmarks/validations/{validation.pk}/run-again/").status_code == 405


def test_the_list_polls_only_while_a_run_on_it_is_active(signed_in):
    host = factories.host()
    factories.finished(host, 100.0, 1.0, None)
    live = parse(signed_in.get("/benchmarks/").content).find("div", id="benchmarks-live")
    assert "hx-trigger" not in live.attrs

    running = factories.finished(host, 100.0, 1.0, None, status=Operation.Status.RUNNING)
    live = parse(signed_in.get("/benchmarks/").content).find("div", id="benchmarks-live")
    assert live.attrs["hx-get"] == "/benchmarks/" and live.attrs["hx-swap"] == "outerHTML"
    assert live.attrs["hx-trigger"].startswith("every")

    poll = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "benchmarks-live"}
    response = signed_in.get("/benchmarks/", **poll)
    assert response.status_code == 200 and b"<html" not in response.content
    Operation.objects.filter(pk=running.operation_id).update(status=Operation.Status.SUCCEEDED)
    response = signed_in.get("/benchmarks/", **poll)
    assert response.status_code == 286  # htmx: stop polling
    live = parse(response.content).find("div", id="benchmarks-live")
    assert "hx-trigger" not in live.attrs and "succeeded" in live.find("table").text
