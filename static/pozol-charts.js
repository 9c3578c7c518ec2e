// Charts drawn by uPlot (npm, pinned by package-lock.json, copied to static/vendor/ by
// `make node` and the Dockerfile). Pages carry data, never code (the CSP allows no
// inline script), following ARCHITECTURE.md, "Charts":
//   <figure class="chart" data-chart="ID" aria-label="...">fallback</figure>
//   <script type="application/json" id="ID">{"title", "x", "series", "kind"}</script>
// or <figure class="chart" data-chart-src="/url.json" [data-chart-refresh="60"]>.
// null in a series is a gap, drawn as a gap. Hovering shows the value and time (the
// legend under the chart follows the cursor), dragging across a chart zooms every
// chart of its group (data-chart-group), a double click shows the whole range again.
// Without uPlot (npm not run) the figure keeps its fallback table.
"use strict";

(() => {
  const charts = new Map(); // figure -> {plot, data, timer}
  const COLOURS = ["#0e7490", "#b45309", "#7c3aed", "#15803d", "#be185d", "#1d4ed8",
                   "#4d7c0f", "#b91c1c"];
  const HEIGHT = 220;
  let zooming = false; // set while one chart's zoom is copied to its group

  // ---- numbers with their units -----------------------------------------------------
  const BYTES = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  function bytes(value) {
    let i = 0;
    let v = Math.abs(value);
    while (v >= 1024 && i < BYTES.length - 1) { v /= 1024; i += 1; }
    return `${value < 0 ? "-" : ""}${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${BYTES[i]}`;
  }
  function plain(value) {
    const v = Math.abs(value);
    if (v >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
    if (v >= 1e4) return `${(value / 1e3).toFixed(1)}k`;
    if (v >= 100 || Number.isInteger(value)) return value.toFixed(0);
    return value.toFixed(v >= 10 ? 1 : 2);
  }
  function format(value, unit) {
    if (value === null || value === undefined || Number.isNaN(value)) return "–";
    switch (unit) {
      case "bytes": return bytes(value);
      case "bytes_per_second": case "B/s": return `${bytes(value)}/s`;
      case "percent": case "%": return `${value.toFixed(1)} %`;
      case "ratio": return value.toFixed(2);
      case "per_second": return `${plain(value)}/s`;
      case "per_hour": return `${plain(value)}/h`;
      case "": case undefined: case null: return plain(value);
      default: return `${plain(value)} ${unit}`;
    }
  }

  // ---- reading a figure's data --------------------------------------------------------
  function inlineData(figure) {
    const holder = document.getElementById(figure.dataset.chart);
    return holder ? JSON.parse(holder.textContent) : null;
  }
  async function remoteData(figure) {
    const answer = await fetch(figure.dataset.chartSrc, {
      credentials: "same-origin", headers: {Accept: "application/json"}});
    if (!answer.ok) throw new Error(`${answer.status} ${answer.statusText}`);
    return answer.json();
  }
  function hasValues(data) {
    return data && Array.isArray(data.x) && data.x.length > 0 && (data.series || []).some(
      (s) => (s.values || []).some((v) => v !== null && v !== undefined));
  }

  // ---- the plot -----------------------------------------------------------------------
  function plotArea(figure) {
    let area = figure.querySelector(":scope > .chart-plot");
    if (!area) {
      area = document.createElement("div");
      area.className = "chart-plot";
      const caption = figure.querySelector(":scope > figcaption");
      if (caption) caption.after(area); else figure.prepend(area);
    }
    return area;
  }
  function say(figure, text) {
    let note = figure.querySelector(":scope > .chart-note");
    if (!note) {
      note = document.createElement("p");
      note.className = "chart-note empty";
      plotArea(figure).before(note);
    }
    note.textContent = text;
    note.hidden = !text;
  }

  // What the chart leaves out, and why ("ZFS dirty: not available on this host").
  function listMissing(figure, data) {
    let list = figure.querySelector(":scope > .chart-missing");
    const missing = (data && Array.isArray(data.missing)) ? data.missing : [];
    if (!missing.length) { if (list) list.remove(); return; }
    if (!list) {
      list = document.createElement("p");
      list.className = "chart-missing muted";
      figure.append(list);
    }
    list.textContent = `Not shown: ${missing.join("; ")}.`;
  }

  // The y scale of a unit. uPlot names the time axis's scale "x": a unit of that name
  // (a compression ratio, "1.6 x") must not become it, or its series is drawn nowhere.
  function scaleOf(unit) {
    return `y:${unit || ""}`;
  }

  function options(figure, data, width) {
    const units = [...new Set(data.series.map((s) => s.unit || ""))];
    const bars = data.kind === "bars" && window.uPlot.paths && window.uPlot.paths.bars;
    // x is unix seconds, or with "xlabel" a plain number (seconds since a run started).
    const timeAxis = !data.xlabel;
    const series = [timeAxis
      ? {value: (u, v) => (v === null ? "–" : new Date(v * 1000).toLocaleString())}
      : {label: data.xlabel, value: (u, v) => (v === null ? "–" : `${plain(v)} s`)}];
    data.series.forEach((s, i) => {
      const colour = COLOURS[i % COLOURS.length];
      series.push({
        label: s.label, scale: scaleOf(s.unit), stroke: colour, width: 1.5, spanGaps: false,
        fill: bars ? `${colour}99` : undefined,
        paths: bars ? window.uPlot.paths.bars({size: [0.6, 40]}) : undefined,
        points: {show: data.x.length < 60},
        value: (u, v) => format(v, s.unit),
      });
    });
    const axes = [timeAxis ? {} : {label: data.xlabel, labelSize: 20,
                                   values: (u, splits) => splits.map((v) => `${plain(v)} s`)}];
    units.forEach((unit, i) => {
      axes.push({scale: scaleOf(unit), side: i % 2 ? 1 : 3, size: 70,
                 grid: {show: i === 0}, values: (u, splits) => splits.map((v) => format(v, unit))});
    });
    const scales = {x: {time: timeAxis}};
    if (bars) scales.x.range = barsRoom;
    units.forEach((unit) => {
      // Ratios and percentages start at zero, so a small dip does not look like a fall;
      // so does every bar, whose length is its value (863 against 866 tps drawn from
      // 862 looked like a fourfold difference).
      if (["ratio", "percent", "%"].includes(unit)) {
        const top = unit === "ratio" ? 1 : 100;
        scales[scaleOf(unit)] = {range: (u, min, max) => [0, Math.max(max, top)]};
      } else if (bars) {
        scales[scaleOf(unit)] = {range: (u, min, max) => fromZero(min, max)};
      }
    });
    const group = figure.dataset.chartGroup;
    return {
      width, height: Number(figure.dataset.chartHeight) || HEIGHT, series, axes, scales,
      cursor: {drag: {x: true, y: false, setScale: true},
               sync: group ? {key: group} : undefined},
      legend: {live: true},
      hooks: {setScale: [(u, key) => { if (key === "x") copyZoom(figure, u); }],
              setSelect: [(u) => selectWindow(figure, u)]},
    };
  }

  // Half a step of room either side, so the first and last bars are not cut in half.
  function barsRoom(u, min, max) {
    const xs = (u.data && u.data[0]) || [];
    const step = xs.length > 1 ? (max - min) / (xs.length - 1) : 1;
    return [min - step / 2, max + step / 2];
  }
  function fromZero(min, max) {
    const low = Math.min(0, min);
    const high = Math.max(0, max);
    return [low, high === low ? low + 1 : high + (high - low) * 0.05];
  }

  function columns(data) {
    return [data.x, ...data.series.map((s) => s.values.map((v) => (v === undefined ? null : v)))];
  }

  // Zooming one chart zooms the others of its group to the same time span.
  function copyZoom(figure, plot) {
    const group = figure.dataset.chartGroup;
    if (!group || zooming) return;
    zooming = true;
    try {
      const {min, max} = plot.scales.x;
      for (const [other, chart] of charts) {
        if (other !== figure && other.dataset.chartGroup === group && chart.plot) {
          chart.plot.setScale("x", {min, max});
        }
      }
    } finally {
      zooming = false;
    }
  }

  // ---- ranges: <div data-chart-ranges="6h"> holding buttons data-chart-range="1h" and
  // figures whose sources take ?range= (or ?from=&to= unix seconds, a dragged window).
  function setSources(container, change) {
    // Each figure's source changes: the MutationObserver below reads it again.
    for (const figure of container.querySelectorAll("figure[data-chart-src]")) {
      const url = new URL(figure.dataset.chartSrc, window.location.href);
      change(url.searchParams);
      figure.dataset.chartSrc = url.pathname + url.search;
    }
  }
  function pressRange(container, name) {
    container.dataset.chartRanges = name;
    for (const button of container.querySelectorAll("button[data-chart-range]")) {
      button.setAttribute("aria-pressed", String(button.dataset.chartRange === name));
    }
    const shown = container.querySelector("[data-chart-window]");
    if (shown) shown.textContent = "";
    setSources(container, (query) => {
      query.delete("from"); query.delete("to"); query.set("range", name);
    });
    container.querySelectorAll("figure[data-chart-src]").forEach((f) => { delete f.dataset.chartPaused; });
  }
  // A drag across a chart with a source asks the server for that window, at the
  // finest resolution it keeps, for every chart of the page's range.
  function selectWindow(figure, plot) {
    const container = figure.closest("[data-chart-ranges]");
    if (!container || !figure.dataset.chartSrc || plot.select.width < 2) return;
    const first = Math.floor(plot.posToVal(plot.select.left, "x"));
    const last = Math.ceil(plot.posToVal(plot.select.left + plot.select.width, "x"));
    if (!(last > first)) return;
    for (const button of container.querySelectorAll("button[data-chart-range]")) {
      button.setAttribute("aria-pressed", "false");
    }
    const shown = container.querySelector("[data-chart-window]");
    if (shown) {
      const when = (t) => new Date(t * 1000).toLocaleString();
      shown.textContent = `Showing ${when(first)} – ${when(last)}; double-click a chart for the range again.`;
    }
    setSources(container, (query) => {
      query.delete("range"); query.set("from", String(first)); query.set("to", String(last));
    });
    container.querySelectorAll("figure[data-chart-src]").forEach((f) => { f.dataset.chartPaused = "1"; });
  }
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-chart-range]");
    const container = button && button.closest("[data-chart-ranges]");
    if (container) pressRange(container, button.dataset.chartRange);
  });
  document.addEventListener("dblclick", (event) => {
    const figure = event.target.closest("figure[data-chart-src]");
    const container = figure && figure.closest("[data-chart-ranges]");
    if (container && figure.dataset.chartPaused) {
      pressRange(container, container.dataset.chartRanges || "6h");
    }
  });

  function draw(figure, data) {
    const chart = charts.get(figure) || {};
    charts.set(figure, chart);
    if (data && data.note) {
      say(figure, data.note);
    } else if (!hasValues(data)) {
      say(figure, "No samples in this time range.");
    } else {
      say(figure, "");
    }
    listMissing(figure, hasValues(data) ? data : null);
    if (!hasValues(data)) {
      if (chart.plot) { chart.plot.destroy(); chart.plot = null; }
      return;
    }
    const shape = data.series.map((s) => `${s.label}|${s.unit}`).join(",") + data.kind;
    if (chart.plot && chart.shape === shape) {
      chart.plot.setData(columns(data));
      return;
    }
    if (chart.plot) chart.plot.destroy();
    const area = plotArea(figure);
    chart.plot = new window.uPlot(options(figure, data, area.clientWidth || 600),
                                  columns(data), area);
    chart.shape = shape;
    figure.classList.add("drawn");
  }

  async function load(figure) {
    try {
      draw(figure, figure.dataset.chartSrc ? await remoteData(figure) : inlineData(figure));
    } catch (error) {
      say(figure, `The chart could not be loaded: ${error.message}`);
    }
  }

  // Charts with data-chart-refresh="SECONDS" and a source are read again on that
  // period while the page is visible (a hidden tab asks nothing of the server).
  function schedule(figure) {
    const seconds = Number(figure.dataset.chartRefresh);
    const chart = charts.get(figure);
    if (!figure.dataset.chartSrc || !seconds || !chart || chart.timer) return;
    chart.timer = setInterval(() => {
      if (!figure.isConnected) { forget(figure); return; }
      // A dragged window is history: only a range ending now changes.
      if (!document.hidden && !figure.dataset.chartPaused) load(figure);
    }, seconds * 1000);
  }

  function forget(figure) {
    const chart = charts.get(figure);
    if (!chart) return;
    if (chart.timer) clearInterval(chart.timer);
    if (chart.plot) chart.plot.destroy();
    charts.delete(figure);
  }

  async function scan() {
    if (!window.uPlot) return; // no library: the fallback tables stay
    for (const figure of [...charts.keys()]) {
      if (!figure.isConnected) forget(figure);
    }
    const found = document.querySelectorAll("figure[data-chart], figure[data-chart-src]");
    await Promise.all([...found].filter((f) => !charts.has(f)).map(async (figure) => {
      charts.set(figure, {});
      await load(figure);
      schedule(figure);
    }));
  }

  // A source that changed (a range button re-pointed it) is read again.
  new MutationObserver((changes) => {
    for (const change of changes) {
      if (charts.has(change.target)) load(change.target);
    }
  }).observe(document.documentElement,
             {subtree: true, attributes: true, attributeFilter: ["data-chart-src"]});

  let resizeTimer;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      for (const [figure, chart] of charts) {
        if (chart.plot) {
          chart.plot.setSize({width: plotArea(figure).clientWidth,
                              height: Number(figure.dataset.chartHeight) || HEIGHT});
        }
      }
    }, 150);
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) {
      for (const figure of charts.keys()) {
        if (figure.dataset.chartRefresh && figure.dataset.chartSrc) load(figure);
      }
    }
  });

  document.addEventListener("DOMContentLoaded", scan);
  document.addEventListener("htmx:afterSwap", scan);
  // For tests and for the page's own range buttons: the charts as drawn now.
  window.pozolCharts = {scan, charts, format};
})();
