// flinkgo dashboard charts: time series drawn as SVG with DOM calls only
// (no markup parsed, nothing inline, so the page's Content-Security-Policy
// stays strict). A chart is a few lines over a shared time axis; every
// drawn chart's data is kept in window.flinkgoCharts by its id, for the
// browser test to compare with the REST API.
"use strict";

window.flinkgoCharts = {};

const CHART_NS = "http://www.w3.org/2000/svg";
// Colors that stay apart for up to 8 lines, then repeat.
const CHART_COLORS = ["#2f6fde", "#e08a00", "#2e9d5b", "#8e24aa", "#d33a2c", "#00838f", "#6d4c41", "#5c6bc0"];
const CHART_W = 440, CHART_H = 170;
const CHART_PAD = { left: 64, right: 12, top: 10, bottom: 24 };

function chartNode(tag, attrs, text) {
  const e = document.createElementNS(CHART_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// lineChart draws series [{id, name, points: [[timeMillis, value or null], …],
// ids (optional: what each point is, a checkpoint's id)}]
// (points oldest first; a null leaves a gap) into a new element and returns
// it. format turns a value into its label; yMax, when given, fixes the top
// of the axis (a ratio's 1000 ms/s), else the largest value sets it; empty
// is what the chart says while it has no value.
function lineChart({ id, title, series, format, yMax, empty = "No data yet." }) {
  window.flinkgoCharts[id] = { title, series: series.map((s) => ({ id: s.id, name: s.name, points: s.points, ids: s.ids })) };
  const all = series.flatMap((s) => s.points.filter((p) => p[1] !== null && p[1] !== undefined));
  const box = document.createElement("figure");
  box.className = "chart";
  box.dataset.chart = id;
  const caption = document.createElement("figcaption");
  caption.textContent = title;
  box.append(caption);
  if (all.length === 0) {
    const none = document.createElement("p");
    none.className = "muted";
    none.textContent = empty;
    box.append(none);
    return box;
  }
  const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]));
  const top = yMax !== undefined ? yMax : Math.max(...all.map((p) => p[1]));
  const bottom = Math.min(0, ...all.map((p) => p[1]));
  const span = top > bottom ? top - bottom : 1;
  const w = CHART_W - CHART_PAD.left - CHART_PAD.right, h = CHART_H - CHART_PAD.top - CHART_PAD.bottom;
  const x = (t) => CHART_PAD.left + (t1 > t0 ? ((t - t0) / (t1 - t0)) * w : w);
  const y = (v) => CHART_PAD.top + h - ((v - bottom) / span) * h;

  const root = chartNode("svg", { viewBox: `0 0 ${CHART_W} ${CHART_H}`, width: CHART_W, height: CHART_H, role: "img" });
  root.append(chartNode("title", {}, title));
  for (const v of [bottom, (bottom + top) / 2, top]) {
    root.append(chartNode("line", { class: "grid", x1: CHART_PAD.left, x2: CHART_PAD.left + w, y1: y(v), y2: y(v) }));
    root.append(chartNode("text", { class: "tick", x: CHART_PAD.left - 6, y: y(v) + 4, "text-anchor": "end" }, format(v)));
  }
  const clock = (t) => new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  root.append(chartNode("text", { class: "tick", x: CHART_PAD.left, y: CHART_H - 6 }, clock(t0)));
  root.append(chartNode("text", { class: "tick", x: CHART_PAD.left + w, y: CHART_H - 6, "text-anchor": "end" }, clock(t1)));

  const legend = document.createElement("ul");
  legend.className = "chart-legend";
  series.forEach((s, i) => {
    const color = CHART_COLORS[i % CHART_COLORS.length];
    for (const run of chartRunsOf(s.points)) {
      const d = run.map((p, j) => (j === 0 ? "M" : "L") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join(" ");
      root.append(chartNode("path", { class: "series", d, stroke: color, "data-series": s.id }));
      if (run.length === 1) root.append(chartNode("circle", { cx: x(run[0][0]), cy: y(run[0][1]), r: 2.5, fill: color }));
    }
    const last = s.points.length ? s.points[s.points.length - 1] : null;
    const item = document.createElement("li");
    item.dataset.series = s.id;
    const swatch = document.createElement("span");
    swatch.className = "swatch line";
    swatch.dataset.color = String(i % CHART_COLORS.length);
    const name = document.createElement("span");
    name.textContent = s.name;
    const value = document.createElement("strong");
    value.textContent = last && last[1] !== null ? format(last[1]) : "–";
    item.append(swatch, name, " ", value);
    legend.append(item);
  });
  box.append(root, legend);
  return box;
}

// chartRunsOf splits points at their gaps (null values).
function chartRunsOf(points) {
  const runs = [];
  let run = [];
  for (const p of points) {
    if (p[1] === null || p[1] === undefined) {
      if (run.length) runs.push(run);
      run = [];
    } else {
      run.push(p);
    }
  }
  if (run.length) runs.push(run);
  return runs;
}
