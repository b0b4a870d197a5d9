// flinkgo dashboard: reads Flink's REST paths of the server that serves it.
// Everything from the API is set as text (textContent) or as an attribute
// value, never parsed as markup; the Content-Security-Policy forbids inline
// scripts, so nothing here may add one.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const TOKEN_KEY = "flinkgo-rest-token";
const RATE_METRICS = "numRecordsInPerSecond,numRecordsOutPerSecond,busyTimeMsPerSecond,backPressuredTimeMsPerSecond";
const TERMINAL = new Set(["FINISHED", "CANCELED", "FAILED"]);

// What the Content-Security-Policy blocked on this page, for the footer and
// the browser test: the page is made to need nothing it forbids.
const policyViolations = [];
window.flinkgoPolicyViolations = policyViolations;
document.addEventListener("securitypolicyviolation", (e) => {
  policyViolations.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline code"));
  $("refreshed").textContent = "Blocked by the Content-Security-Policy: " + policyViolations.join("; ");
});

let refreshMs = 3000;
let current = null; // the view on screen: {refresh()}

// ---- DOM helpers: text only ----

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  append(e, children);
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  setAttrs(e, attrs);
  append(e, children);
  return e;
}

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.setAttribute("class", v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k.startsWith("data-")) e.dataset[camel(k.slice(5))] = String(v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(e, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

function camel(s) {
  return s.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

function $(id) {
  return document.getElementById(id);
}

// ---- formatting ----

function fmtNumber(x, digits = 0) {
  if (typeof x !== "number" || !isFinite(x)) return "–";
  return x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

// A missing figure (a vertex whose metrics could not be read) shows as "–",
// never as 0.
function fmtRate(x) {
  return typeof x === "number" ? fmtNumber(x, x < 10 ? 1 : 0) + "/s" : "–";
}

function fmtPercent(ratio) {
  return typeof ratio === "number" ? fmtNumber(100 * ratio, 0) + "%" : "–";
}

function fmtBytes(n) {
  if (typeof n !== "number" || n < 0) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return fmtNumber(n, i === 0 ? 0 : 1) + " " + units[i];
}

function fmtDuration(ms) {
  if (typeof ms !== "number" || ms < 0) return "–";
  if (ms < 1000) return Math.round(ms) + " ms";
  const s = Math.floor(ms / 1000);
  if (s < 60) return (ms / 1000).toFixed(1) + " s";
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return [h && h + "h", m && m + "m", r && r + "s"].filter(Boolean).join(" ");
}

function fmtTime(ms) {
  if (typeof ms !== "number" || ms <= 0) return "–";
  return new Date(ms).toLocaleString();
}

function stateBadge(state) {
  // The class is derived from a known word only: anything else is "state".
  const known = /^[A-Z_]+$/.test(state) ? " state-" + state : "";
  return el("span", { class: "state" + known, "data-state": state }, state);
}

function backpressureLevel(ratio) {
  // Flink's thresholds, as /backpressure reports them.
  if (ratio > 0.5) return "high";
  if (ratio > 0.1) return "low";
  return "ok";
}

// ---- REST calls ----

class ApiError extends Error {
  constructor(status, messages) {
    super(messages.join("\n") || "HTTP " + status);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store",
  });
  let data = null;
  try {
    data = await resp.json();
  } catch (_) {
    data = null;
  }
  if (!resp.ok) {
    const errors = data && Array.isArray(data.errors) ? data.errors.map(String) : [];
    throw new ApiError(resp.status, errors);
  }
  return data;
}

// read reads the REST API; a 401 (the browser's user is not the server's,
// or the page is not on loopback) asks for the token and reads again.
async function read(path) {
  try {
    return await api("GET", path);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    await askToken(e.message);
    return api("GET", path);
  }
}

function jobPath(jid) {
  return "/jobs/" + encodeURIComponent(jid);
}

// mutate makes a call that changes a job; a 401 asks for the token and,
// once given, makes the call again.
async function mutate(method, path, body) {
  try {
    return await api(method, path, body);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    await askToken(e.message);
    return api(method, path, body);
  }
}

let tokenWaiters = [];

function askToken(reason) {
  $("token-reason").textContent = reason || "This REST API needs its token (rest.auth-token): the browser does not run as the server's user on its host.";
  $("token-panel").hidden = false;
  $("token-input").focus();
  return new Promise((resolve, reject) => tokenWaiters.push({ resolve, reject }));
}

function setupToken() {
  $("token-open").addEventListener("click", () => {
    $("token-reason").textContent = "The token of this REST API (rest.auth-token), sent with every call; kept for this tab only. Not needed when the browser runs as the server's user on its host.";
    $("token-panel").hidden = false;
    $("token-input").focus();
  });
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token-input").value);
    $("token-input").value = "";
    $("token-panel").hidden = true;
    const waiters = tokenWaiters;
    tokenWaiters = [];
    waiters.forEach((w) => w.resolve());
  });
  $("token-cancel").addEventListener("click", () => {
    $("token-panel").hidden = true;
    const waiters = tokenWaiters;
    tokenWaiters = [];
    waiters.forEach((w) => w.reject(new Error("no token given: the call was not made")));
  });
}

function showMessage(target, text, ok) {
  target.className = "message " + (ok ? "ok" : "error");
  target.textContent = text;
}

// ---- jobs list ----

function jobsView() {
  const body = el("tbody", {});
  const table = el("table", { id: "jobs" },
    el("thead", {}, el("tr", {},
      el("th", {}, "Job"), el("th", {}, "State"), el("th", {}, "Started"),
      el("th", { class: "num" }, "Duration"), el("th", { class: "num" }, "Tasks"), el("th", {}, "Job id"))),
    body);
  const empty = el("p", { class: "muted", hidden: true }, "No jobs yet.");
  $("main").replaceChildren(el("h1", {}, "Jobs"), table, empty);
  return {
    async refresh() {
      const data = await read("/jobs/overview");
      const jobs = (data.jobs || []).slice().sort((a, b) => b["start-time"] - a["start-time"]);
      body.replaceChildren(...jobs.map((j) => {
        const tasks = Object.values(j.tasks || {}).reduce((a, b) => a + b, 0);
        return el("tr", { "data-jid": j.jid },
          el("td", {}, el("a", { href: "#/jobs/" + encodeURIComponent(j.jid) }, j.name || "(unnamed)")),
          el("td", {}, stateBadge(j.state)),
          el("td", {}, fmtTime(j["start-time"])),
          el("td", { class: "num" }, fmtDuration(j.duration)),
          el("td", { class: "num" }, fmtNumber(tasks)),
          el("td", { class: "mono" }, j.jid));
      }));
      empty.hidden = jobs.length > 0;
    },
  };
}

// ---- one job ----

function jobView(jid) {
  const title = el("h1", {}, "Job");
  const summary = el("div", { class: "panel", id: "job-summary" });
  const controls = jobControls(jid);
  const graph = el("div", { class: "graph", id: "graph" });
  const legend = el("div", { class: "legend" },
    el("span", {}, el("span", { class: "swatch idle" }), "idle"),
    el("span", {}, el("span", { class: "swatch busy" }), "busy (fill: busy ratio, max over subtasks)"),
    el("span", {}, el("span", { class: "swatch bp-ok" }), "backpressure ok"),
    el("span", {}, el("span", { class: "swatch bp-low" }), "low (>10%)"),
    el("span", {}, el("span", { class: "swatch bp-high" }), "high (>50%)"));
  const vertexBody = el("tbody", {});
  const vertices = el("table", { id: "vertices" },
    el("thead", {}, el("tr", {},
      el("th", {}, "Vertex"), el("th", { class: "num" }, "Parallelism"), el("th", {}, "Status"),
      el("th", { class: "num" }, "Records in"), el("th", { class: "num" }, "Records out"),
      el("th", { class: "num" }, "In/s"), el("th", { class: "num" }, "Out/s"),
      el("th", { class: "num" }, "Busy"), el("th", { class: "num" }, "Backpressured"))),
    vertexBody);
  const subtasks = el("div", { id: "subtasks" }, el("p", { class: "muted" }, "Click a vertex to see its subtasks."));
  const charts = el("div", { class: "charts", id: "charts" });
  const autoscaler = el("div", { id: "autoscaler" });
  const rescales = el("div", { id: "rescales" });
  const checkpointConfig = el("p", { class: "muted", id: "checkpoint-config" });
  const checkpoints = el("div", { id: "checkpoints" });
  const exceptions = el("div", { id: "exceptions" });
  $("main").replaceChildren(title, summary, controls.root,
    el("h2", {}, "Graph"), legend, graph, el("h2", {}, "Vertices"), vertices, subtasks,
    el("h2", {}, "Metrics"), charts,
    el("h2", {}, "Rescales"), rescales, el("h2", {}, "Autoscaler"), autoscaler,
    el("h2", {}, "Checkpoints"), checkpointConfig, checkpoints, el("h2", {}, "Exceptions"), exceptions);

  let selected = null; // the vertex whose subtasks are shown
  const view = {
    async refresh() {
      const job = await read(jobPath(jid));
      const rates = await vertexRates(jid, job);
      title.replaceChildren(job.name || "(unnamed)", stateBadge(job.state));
      renderSummary(summary, job);
      controls.update(job);
      renderGraph(graph, job, rates, select);
      renderVertexTable(vertexBody, job, rates, select);
      // The rescales and the autoscaler answer 404 or 409 for a job that
      // never started or is still starting: shown as none.
      const [cps, cpConfig, exc, rsSummary, rsHistory, scaler, history] = await Promise.all([
        read(jobPath(jid) + "/checkpoints"),
        read(jobPath(jid) + "/checkpoints/config").catch(() => null), // 404: checkpointing off
        read(jobPath(jid) + "/exceptions"),
        read(jobPath(jid) + "/rescales/summary").catch(() => null),
        read(jobPath(jid) + "/rescales/history").catch(() => null),
        read(jobPath(jid) + "/autoscaler").catch(() => null),
        read(jobPath(jid) + "/metrics-history")]);
      renderCharts(charts, history, cps);
      renderRescales(rescales, rsSummary, rsHistory);
      renderAutoscaler(autoscaler, scaler, job);
      renderCheckpointConfig(checkpointConfig, cpConfig);
      renderCheckpoints(checkpoints, cps);
      renderExceptions(exceptions, exc);
      const v = (job.vertices || []).find((x) => x.id === selected);
      if (v) await renderSubtasks(subtasks, jid, v);
    },
  };
  function select(vid) {
    selected = vid;
    view.refresh().catch((e) => showMessage(subtasks, "Reading the vertex failed: " + e.message, false));
  }
  return view;
}

// renderSubtasks shows one vertex's subtasks: their records (Flink's
// vertex details) and busy and backpressured ratios (its backpressure).
async function renderSubtasks(target, jid, v) {
  const path = jobPath(jid) + "/vertices/" + encodeURIComponent(v.id);
  const [details, bp] = await Promise.all([read(path), read(path + "/backpressure")]);
  const ratios = new Map((bp.subtasks || []).map((s) => [s.subtask, s]));
  target.replaceChildren(
    el("h2", {}, "Subtasks of " + v.name),
    el("table", { id: "subtask-table", "data-vertex": v.id },
      el("thead", {}, el("tr", {},
        el("th", { class: "num" }, "Subtask"), el("th", {}, "Status"), el("th", { class: "num" }, "Records in"),
        el("th", { class: "num" }, "Records out"), el("th", { class: "num" }, "Busy"), el("th", { class: "num" }, "Backpressured"))),
      el("tbody", {}, ...(details.subtasks || []).map((s) => {
        const r = ratios.get(s.subtask);
        const m = s.metrics || {};
        return el("tr", { "data-subtask": s.subtask },
          el("td", { class: "num" }, fmtNumber(s.subtask)),
          el("td", {}, stateBadge(s.status)),
          el("td", { class: "num" }, fmtNumber(m["read-records"])),
          el("td", { class: "num" }, fmtNumber(m["write-records"])),
          el("td", { class: "num" }, r ? fmtPercent(r.busyRatio) : "–"),
          el("td", { class: "num bp-" + (r ? r.backpressureLevel : "ok") }, r ? fmtPercent(r.ratio) + " (" + r.backpressureLevel + ")" : "–"));
      }))));
}

function renderCheckpointConfig(target, cfg) {
  if (!cfg) {
    target.textContent = "Checkpointing is off (execution.checkpointing.interval is 0).";
    return;
  }
  target.textContent = "Every " + fmtDuration(cfg.interval) + ", timeout " + fmtDuration(cfg.timeout) +
    ", " + (cfg.unaligned_checkpoints ? "unaligned" : "aligned") + ", " + String(cfg.mode).replace("_", "-") +
    "; tolerable failures " + fmtNumber(cfg.tolerable_failed_checkpoints) + ".";
}

// vertexRates reads each vertex's rates over its subtasks: records in and
// out per second summed, busy and backpressured ratios at their max (the
// subtask that limits the vertex), as Flink's web UI shows them. A vertex
// whose metrics cannot be read (it went away in a rescale) has none.
async function vertexRates(jid, job) {
  const out = {};
  await Promise.all((job.vertices || []).map(async (v) => {
    let ms;
    try {
      ms = await read(jobPath(jid) + "/vertices/" + encodeURIComponent(v.id) +
        "/subtasks/metrics?get=" + RATE_METRICS + "&agg=sum,max");
    } catch (_) {
      return;
    }
    const by = {};
    for (const m of ms) by[m.id] = m;
    const get = (name, agg) => (by[name] && typeof by[name][agg] === "number" ? by[name][agg] : 0);
    out[v.id] = {
      inRate: get("numRecordsInPerSecond", "sum"),
      outRate: get("numRecordsOutPerSecond", "sum"),
      busy: get("busyTimeMsPerSecond", "max") / 1000,
      backpressure: get("backPressuredTimeMsPerSecond", "max") / 1000,
    };
  }));
  return out;
}

function renderSummary(target, job) {
  target.replaceChildren(el("div", { class: "counts" },
    el("div", {}, el("span", { class: "muted" }, "Job id"), el("strong", { class: "mono", id: "job-id" }, job.jid)),
    el("div", {}, el("span", { class: "muted" }, "State"), el("strong", { id: "job-state" }, job.state)),
    el("div", {}, el("span", { class: "muted" }, "Started"), el("strong", {}, fmtTime(job["start-time"]))),
    el("div", {}, el("span", { class: "muted" }, "Duration"), el("strong", {}, fmtDuration(job.duration))),
    el("div", {}, el("span", { class: "muted" }, "Vertices"), el("strong", {}, fmtNumber((job.vertices || []).length))),
    el("div", {}, el("span", { class: "muted" }, "Max parallelism"), el("strong", {}, fmtNumber(job.maxParallelism)))));
}

function jobControls(jid) {
  const message = el("p", { class: "message", id: "action-message" });
  const cancel = el("button", { type: "button", class: "danger", id: "cancel-job" }, "Cancel job");
  const confirmBox = el("span", { hidden: true },
    el("span", {}, "Cancel this job? "),
    el("button", { type: "button", class: "danger", id: "cancel-confirm" }, "Yes, cancel"), " ",
    el("button", { type: "button", class: "quiet", id: "cancel-abort" }, "No"));
  cancel.addEventListener("click", () => {
    confirmBox.hidden = false;
    cancel.hidden = true;
  });
  confirmBox.querySelector("#cancel-abort").addEventListener("click", () => {
    confirmBox.hidden = true;
    cancel.hidden = false;
  });
  confirmBox.querySelector("#cancel-confirm").addEventListener("click", async () => {
    confirmBox.hidden = true;
    cancel.hidden = false;
    try {
      await mutate("PATCH", jobPath(jid) + "?mode=cancel");
      showMessage(message, "Cancel requested.", true);
      refreshSoon();
    } catch (e) {
      showMessage(message, "Cancel failed: " + e.message, false);
    }
  });

  const dir = el("input", { type: "text", class: "dir", id: "savepoint-dir", placeholder: "default: execution.checkpointing.savepoint-dir" });
  const savepointButton = el("button", { type: "submit", id: "savepoint" }, "Trigger savepoint");
  const savepoint = el("form", {}, el("label", {}, "Savepoint target directory", dir), savepointButton);
  savepoint.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { "cancel-job": false };
    if (dir.value.trim() !== "") body["target-directory"] = dir.value.trim();
    try {
      const r = await mutate("POST", jobPath(jid) + "/savepoints", body);
      showMessage(message, "Savepoint triggered (request " + r["request-id"] + ")…", true);
      pollSavepoint(jid, r["request-id"], message);
    } catch (e) {
      showMessage(message, "Savepoint failed: " + e.message, false);
    }
  });

  const vertex = el("select", { id: "rescale-vertex" });
  const parallelism = el("input", { type: "number", min: 1, step: 1, id: "rescale-parallelism", required: true });
  const rescaleButton = el("button", { type: "submit", id: "rescale" }, "Rescale");
  const rescale = el("form", {},
    el("label", {}, "Vertex", vertex), el("label", {}, "Parallelism", parallelism), rescaleButton);
  rescale.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const n = parseInt(parallelism.value, 10);
    if (!(n >= 1)) {
      showMessage(message, "Rescale: the parallelism must be a whole number of at least 1.", false);
      return;
    }
    const body = {};
    body[vertex.value] = { parallelism: { lowerBound: 1, upperBound: n } };
    try {
      await mutate("PUT", jobPath(jid) + "/resource-requirements", body);
      showMessage(message, "Rescale to parallelism " + n + " requested: a vertex of stateless UDFs resizes its worker pool " +
        "to " + n + " workers at once, without a restart; any other vertex rescales at the job's next completed checkpoint.", true);
      refreshSoon();
    } catch (e) {
      showMessage(message, "Rescale failed: " + e.message, false);
    }
  });

  const root = el("div", { class: "panel" },
    el("div", { class: "controls" }, el("div", {}, cancel, confirmBox), savepoint, rescale), message);
  let vertexIds = "";
  return {
    root,
    update(job) {
      const running = !TERMINAL.has(job.state);
      for (const b of [cancel, savepointButton, rescaleButton]) b.disabled = !running;
      const vs = job.vertices || [];
      const ids = vs.map((v) => v.id + ":" + v.parallelism + ":" + v["flinkgo-workers"]).join(",");
      if (ids !== vertexIds) { // keep the user's choice unless the vertices changed
        const chosen = vertex.value;
        vertex.replaceChildren(...vs.map((v) =>
          el("option", { value: v.id }, v.name + " (p=" + v.parallelism +
            (v["flinkgo-workers"] === undefined ? "" : ", " + v["flinkgo-workers"] + " workers") + ")")));
        if (vs.some((v) => v.id === chosen)) vertex.value = chosen;
        vertexIds = ids;
      }
    },
  };
}

async function pollSavepoint(jid, rid, message) {
  const path = jobPath(jid) + "/savepoints/" + encodeURIComponent(rid);
  for (;;) {
    let r;
    try {
      r = await read(path);
    } catch (e) {
      showMessage(message, "Savepoint status unknown: " + e.message, false);
      return;
    }
    if (r.status && r.status.id === "COMPLETED") {
      const op = r.operation || {};
      if (op["failure-cause"]) showMessage(message, "Savepoint failed: " + op["failure-cause"]["stack-trace"], false);
      else showMessage(message, "Savepoint written to " + op.location, true);
      refreshSoon();
      return;
    }
    await new Promise((res) => setTimeout(res, 500));
  }
}

// ---- graph ----

const NODE_W = 250, NODE_H = 100, GAP_X = 90, GAP_Y = 30, PAD = 20;

// layout places each vertex in the column of its longest path from a
// source, in plan order within a column.
function layout(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const level = new Map();
  const visit = (n, seen) => {
    if (level.has(n.id)) return level.get(n.id);
    if (seen.has(n.id)) return 0; // a cycle would be a bug of the plan: draw it anyway
    seen.add(n.id);
    let l = 0;
    for (const i of n.inputs || []) {
      const from = byId.get(i.id);
      if (from) l = Math.max(l, visit(from, seen) + 1);
    }
    level.set(n.id, l);
    return l;
  };
  nodes.forEach((n) => visit(n, new Set()));
  const rows = new Map();
  const pos = new Map();
  for (const n of nodes) {
    const l = level.get(n.id), r = rows.get(l) || 0;
    rows.set(l, r + 1);
    pos.set(n.id, { x: PAD + l * (NODE_W + GAP_X), y: PAD + r * (NODE_H + GAP_Y) });
  }
  const cols = Math.max(1, ...[...level.values()].map((l) => l + 1));
  const maxRows = Math.max(1, ...rows.values());
  return { pos, width: 2 * PAD + cols * NODE_W + (cols - 1) * GAP_X, height: 2 * PAD + maxRows * NODE_H + (maxRows - 1) * GAP_Y };
}

function busyFill(busy) {
  if (typeof busy !== "number") return "#e4e8ee"; // unknown: grey
  const b = Math.min(1, Math.max(0, busy));
  return "hsl(" + Math.round(120 * (1 - b)) + ", " + Math.round(55 + 15 * b) + "%, " + Math.round(82 - 4 * b) + "%)";
}

const BP_STROKE = { ok: "#7d8a99", low: "#e08a00", high: "#8e24aa" };

function clip(s, n) {
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

function renderGraph(target, job, rates, select) {
  const nodes = (job.plan && job.plan.nodes) || [];
  const names = new Map((job.vertices || []).map((v) => [v.id, v]));
  const { pos, width, height } = layout(nodes);
  const root = svg("svg", { width, height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "job graph" },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" },
      svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }))));
  for (const n of nodes) {
    for (const i of n.inputs || []) {
      const a = pos.get(i.id), b = pos.get(n.id);
      if (!a || !b) continue;
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2, mx = (x1 + x2) / 2;
      root.append(svg("path", { class: "edge", d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`, "marker-end": "url(#arrow)" }));
      root.append(svg("text", { class: "edge-label", x: mx, y: (y1 + y2) / 2 - 6, "text-anchor": "middle" }, i.ship_strategy || ""));
    }
  }
  for (const n of nodes) {
    const p = pos.get(n.id), r = rates[n.id] || {};
    const v = names.get(n.id) || {};
    const name = v.name || n.description || n.id;
    const level = r.backpressure === undefined ? "ok" : backpressureLevel(r.backpressure);
    root.append(svg("g", {
      onclick: () => select(n.id),
      class: "vertex", transform: `translate(${p.x}, ${p.y})`, "data-vertex": n.id, "data-name": name,
      "data-parallelism": n.parallelism, "data-workers": v["flinkgo-workers"], "data-in-rate": r.inRate, "data-out-rate": r.outRate,
      "data-busy": r.busy, "data-backpressure": r.backpressure, "data-backpressure-level": level,
    },
    svg("title", {}, name),
    svg("rect", { width: NODE_W, height: NODE_H, rx: 6, fill: busyFill(r.busy), stroke: BP_STROKE[level] }),
    svg("text", { x: 10, y: 20, class: "title" }, clip(name, 30)),
    svg("text", { x: 10, y: 40 }, "parallelism " + n.parallelism +
      (v["flinkgo-workers"] === undefined ? "" : " · workers " + v["flinkgo-workers"])),
    svg("text", { x: 10, y: 60 }, "in " + fmtRate(r.inRate) + " · out " + fmtRate(r.outRate)),
    svg("text", { x: 10, y: 80 }, "busy " + fmtPercent(r.busy) + " · backpressured " + fmtPercent(r.backpressure))));
  }
  target.replaceChildren(root);
}

function renderVertexTable(body, job, rates, select) {
  body.replaceChildren(...(job.vertices || []).map((v) => {
    const r = rates[v.id] || {};
    const m = v.metrics || {};
    const level = backpressureLevel(r.backpressure || 0);
    return el("tr", { "data-vertex": v.id, class: "clickable", onclick: () => select(v.id) },
      el("td", {}, v.name),
      el("td", { class: "num" }, fmtNumber(v.parallelism)),
      el("td", {}, stateBadge(v.status)),
      el("td", { class: "num" }, fmtNumber(m["read-records"])),
      el("td", { class: "num" }, fmtNumber(m["write-records"])),
      el("td", { class: "num" }, fmtRate(r.inRate)),
      el("td", { class: "num" }, fmtRate(r.outRate)),
      el("td", { class: "num" }, fmtPercent(r.busy)),
      el("td", { class: "num bp-" + level }, r.backpressure === undefined ? "–" : fmtPercent(r.backpressure) + " (" + level + ")"));
  }));
}

// ---- rescales and the autoscaler ----

// parallelismChange says what a rescale did to its vertices: "name: 2 → 3"
// for each one whose parallelism it changes (asked for, while it is
// pending or when it failed), "name: 2 → 3 workers" for each whose worker
// pool an in-place rescale resized.
function parallelismChange(r) {
  const vs = Object.values(r.vertices || {});
  const workers = (v) => (v["flinkgo-preRescaleWorkers"] || 0) !== (v["flinkgo-postRescaleWorkers"] || 0);
  const changed = vs.filter((v) => v.desiredParallelism !== v.preRescaleParallelism || workers(v));
  if (changed.length === 0) return "no change";
  return changed.map((v) => {
    if (v.desiredParallelism === v.preRescaleParallelism) {
      return v.jobVertexName + ": " + (v["flinkgo-preRescaleWorkers"] || 0) + " → " + (v["flinkgo-postRescaleWorkers"] || 0) + " workers";
    }
    const after = v.postRescaleParallelism === null || v.postRescaleParallelism === undefined
      ? v.desiredParallelism + " (asked)" : v.postRescaleParallelism;
    return v.jobVertexName + ": " + v.preRescaleParallelism + " → " + after;
  }).join("; ");
}

// renderRescales shows Flink 2.3's rescale history: counts and durations
// (/rescales/summary), then each rescale, newest first (/rescales/history).
function renderRescales(target, summary, history) {
  if (!summary || !history) {
    target.replaceChildren(el("p", { class: "muted" }, "No rescale history (the job has not started)."));
    return;
  }
  const c = summary.rescalesCounts || {};
  const dur = summary.completedRescalesDurationStatsInMillis || {};
  const counts = el("div", { class: "panel counts", id: "rescale-counts" },
    ...[["Completed", c.completed], ["In progress", c.inProgress], ["Failed", c.failed], ["Ignored", c.ignored]]
      .map(([k, n]) => el("div", { "data-count": k.toLowerCase().replace(" ", "-") }, el("span", { class: "muted" }, k), el("strong", {}, fmtNumber(n)))),
    el("div", {}, el("span", { class: "muted" }, "Completed: duration min / avg / max"),
      el("strong", {}, c.completed ? [dur.min, dur.avg, dur.max].map(fmtDuration).join(" / ") : "–")));
  if (history.length === 0) {
    target.replaceChildren(counts, el("p", { class: "muted" }, "No rescale yet."));
    return;
  }
  const shown = history.slice(0, 20);
  const table = el("table", { id: "rescale-history" },
    el("thead", {}, el("tr", {},
      el("th", {}, "Requested"), el("th", {}, "Cause"), el("th", {}, "Parallelism before → after"),
      el("th", { class: "num" }, "Duration"), el("th", {}, "State"), el("th", {}, "Reason"))),
    el("tbody", {}, ...shown.map((r) => {
      const state = r.terminalState || "IN_PROGRESS";
      const cause = r.triggerCause + (r.trigger ? ", at " + r.trigger : "") + (r.checkpointId > 0 ? " #" + r.checkpointId : "");
      const took = fmtDuration(r.durationInMillis) + (r.restartDurationInMillis > 0 && r.mode !== "IN_PLACE" ? " (restart " + fmtDuration(r.restartDurationInMillis) + ")" : "");
      return el("tr", { "data-rescale": r.rescaleUuid, "data-state": state },
        el("td", {}, fmtTime(r.startTimestampInMillis)),
        el("td", {}, cause),
        el("td", { class: "change" }, parallelismChange(r)),
        el("td", { class: "num" }, took),
        el("td", {}, stateBadge(state)),
        el("td", {}, [r.terminatedReason, r.reason].filter(Boolean).join(": ")));
    })));
  const parts = [counts, table];
  if (history.length > shown.length) parts.push(el("p", { class: "muted" }, "Showing the 20 newest of " + history.length + "."));
  target.replaceChildren(...parts);
}

// renderAutoscaler shows flinkgo's GET /jobs/:jid/autoscaler: its
// settings, the vertices it scales with their bounds, and its decisions
// with their inputs, newest first.
function renderAutoscaler(target, a, job) {
  if (!a) {
    target.replaceChildren(el("p", { class: "muted" }, "No autoscaler information (the job has not started)."));
    return;
  }
  const names = new Map((job.vertices || []).map((v) => [v.id, v.name]));
  const decisions = (a.decisions || []).slice().reverse();
  if (!a.enabled && decisions.length === 0) {
    target.replaceChildren(el("p", { class: "muted", id: "autoscaler-off" },
      "The autoscaler is off (job.autoscaler.enabled)."));
    return;
  }
  const cfg = a.config || {};
  const bounds = (a.vertices || []).map((v) =>
    (names.get(v.id) || v.uid) + " [" + v.min + ", " + v.max + "] at " + v.parallelism).join("; ");
  const head = el("p", { class: "muted", id: "autoscaler-config" },
    "Target utilization " + fmtPercent(cfg["job.autoscaler.utilization.target"]) + " ± " +
    fmtPercent(cfg["job.autoscaler.utilization.boundary"]) + ", metrics window " +
    fmtDuration(cfg["job.autoscaler.metrics.window"]) + ", stabilization " +
    fmtDuration(cfg["job.autoscaler.stabilization.interval"]) + ". Scales " + (bounds || "no vertex") + ".");
  if (decisions.length === 0) {
    target.replaceChildren(head, el("p", { class: "muted" }, "No decision yet: the autoscaler decides once a metrics window is full."));
    return;
  }
  const shown = decisions.slice(0, 20);
  const table = el("table", { id: "autoscaler-decisions" },
    el("thead", {}, el("tr", {},
      el("th", {}, "Time"), el("th", {}, "Vertex"), el("th", { class: "num" }, "Parallelism"),
      el("th", { class: "num" }, "In/s"), el("th", { class: "num" }, "Busy"), el("th", { class: "num" }, "True rate/s"),
      el("th", { class: "num" }, "Target rate/s"), el("th", { class: "num" }, "Expected utilization"),
      el("th", {}, "Reason"), el("th", {}, "Rescale"))),
    el("tbody", {}, ...shown.map((d) => el("tr", {
      "data-decision": d.timestamp, "data-vertex": d.vertex, "data-from": d.from, "data-to": d.to,
      class: d.to !== d.from ? "changed" : undefined,
    },
    el("td", {}, fmtTime(d.timestamp)),
    el("td", {}, names.get(d.vertex) || d.uid),
    el("td", { class: "num" }, d.from + " → " + d.to + " [" + d.min + ", " + d.max + "]"),
    el("td", { class: "num" }, fmtRate(d.numRecordsInPerSecond)),
    el("td", { class: "num" }, fmtPercent(d.busyRatio)),
    el("td", { class: "num" }, d.trueProcessingRate > 0 ? fmtRate(d.trueProcessingRate) : "–"),
    el("td", { class: "num" }, fmtRate(d.targetDataRate)),
    el("td", { class: "num" }, fmtPercent(d.expectedUtilization)),
    el("td", {}, d.reason || ""),
    el("td", { class: d.error ? "mono error" : "mono" }, d.error || d.rescaleId || "")))));
  const parts = [head, table];
  if (decisions.length > shown.length) parts.push(el("p", { class: "muted" }, "Showing the 20 newest of " + decisions.length + " decisions."));
  target.replaceChildren(...parts);
}

// ---- charts ----

// renderCharts draws the vertices' figures over the last minutes, as the
// server sampled them (flinkgo's /metrics-history: the history survives a
// reload of the page), and the completed checkpoints' durations and sizes
// (Flink's /checkpoints history).
function renderCharts(target, history, cps) {
  const vertices = history.vertices || [];
  const column = (name) => vertices.map((v) => ({
    id: v.id, name: v.name, points: (v.timestamps || []).map((t, i) => [t, v[name][i]]),
  }));
  const ratio = (ms) => fmtPercent(ms / 1000);
  // A watermark ahead of the clock (event times in the future) lags less than nothing.
  const lag = (ms) => (ms < 0 ? "−" + fmtDuration(-ms) : fmtDuration(ms));
  const completed = (cps.history || []).filter((c) => c.status === "COMPLETED" && !c.is_savepoint).reverse();
  const checkpoints = (field) => [{
    id: "checkpoints", name: "checkpoints", points: completed.map((c) => [c.latest_ack_timestamp, c[field]]),
    ids: completed.map((c) => c.id),
  }];
  const span = fmtDuration(history.capacity * history.periodMillis);
  target.replaceChildren(
    el("p", { class: "muted chart-note" }, "Sampled every " + fmtDuration(history.periodMillis) + " by the server, the last " + span +
      " kept; rates summed over a vertex's subtasks, busy and backpressured time at their max."),
    lineChart({ id: "records-in", title: "Records in per second", series: column("numRecordsInPerSecond"), format: fmtRate }),
    lineChart({ id: "records-out", title: "Records out per second", series: column("numRecordsOutPerSecond"), format: fmtRate }),
    lineChart({ id: "busy", title: "Busy time (max over subtasks)", series: column("busyTimeMsPerSecond"), format: ratio, yMax: 1000 }),
    lineChart({ id: "backpressured", title: "Backpressured time (max over subtasks)", series: column("backPressuredTimeMsPerSecond"), format: ratio, yMax: 1000 }),
    lineChart({ id: "watermark-lag", title: "Watermark lag (sampling time − lowest input watermark)", series: column("watermarkLag"), format: lag,
      empty: "No watermark yet: the job's sources assign none, or none has reached a vertex." }),
    lineChart({ id: "checkpoint-duration", title: "Checkpoint duration", series: checkpoints("end_to_end_duration"), format: fmtDuration,
      empty: "No completed checkpoint yet." }),
    lineChart({ id: "checkpoint-size", title: "Checkpoint size", series: checkpoints("state_size"), format: fmtBytes,
      empty: "No completed checkpoint yet." }));
}

// ---- checkpoints ----

function renderCheckpoints(target, cps) {
  const c = cps.counts || {};
  const latest = (cps.latest && cps.latest.completed) || null;
  const summary = cps.summary || {};
  const dur = summary.end_to_end_duration || {};
  const size = summary.state_size || {};
  const counts = el("div", { class: "panel counts", id: "checkpoint-counts" },
    ...[["Completed", c.completed], ["Failed", c.failed], ["In progress", c.in_progress], ["Restored", c.restored], ["Total", c.total]]
      .map(([k, n]) => el("div", { "data-count": k.toLowerCase().replace(" ", "-") }, el("span", { class: "muted" }, k), el("strong", {}, fmtNumber(n)))),
    el("div", {}, el("span", { class: "muted" }, "Latest completed"),
      el("strong", {}, latest ? "#" + latest.id + ", " + fmtBytes(latest.state_size) + ", " + fmtDuration(latest.end_to_end_duration) : "–")),
    el("div", {}, el("span", { class: "muted" }, "Duration min / avg / max"),
      el("strong", {}, c.completed ? [dur.min, dur.avg, dur.max].map(fmtDuration).join(" / ") : "–")),
    el("div", {}, el("span", { class: "muted" }, "Size min / avg / max"),
      el("strong", {}, c.completed ? [size.min, size.avg, size.max].map(fmtBytes).join(" / ") : "–")));
  const history = (cps.history || []).slice(0, 20);
  const table = el("table", { id: "checkpoint-history" },
    el("thead", {}, el("tr", {},
      el("th", { class: "num" }, "Id"), el("th", {}, "Status"), el("th", {}, "Type"), el("th", {}, "Triggered"),
      el("th", { class: "num" }, "Duration"), el("th", { class: "num" }, "Size"), el("th", {}, "Path or failure"))),
    el("tbody", {}, ...history.map((h) => el("tr", { "data-checkpoint": h.id },
      el("td", { class: "num" }, fmtNumber(h.id)),
      el("td", {}, stateBadge(h.status)),
      el("td", {}, h.is_savepoint ? "savepoint" : "checkpoint"),
      el("td", {}, fmtTime(h.trigger_timestamp)),
      el("td", { class: "num" }, fmtDuration(h.end_to_end_duration)),
      el("td", { class: "num" }, fmtBytes(h.state_size)),
      el("td", { class: "mono" }, h.external_path || h.failure_message || "")))));
  const parts = [counts];
  if (history.length > 0) parts.push(table);
  if ((cps.history || []).length > history.length) parts.push(el("p", { class: "muted" }, "Showing the 20 newest of " + cps.history.length + "."));
  target.replaceChildren(...parts);
}

// ---- exceptions ----

// renderExceptions lists the job's exception history, newest first: every
// failure a restart recovered from and the one that ended the job, each
// with its stack trace (the Python traceback of a UDF's) folded. A refresh
// keeps what the reader unfolded; a failure not shown before opens when it
// is the newest.
function renderExceptions(target, exc) {
  const history = exc.exceptionHistory || {};
  const entries = history.entries || [];
  if (entries.length === 0 && !exc["root-exception"]) {
    target.replaceChildren(el("p", { class: "muted" }, "No exceptions."));
    return;
  }
  const shown = Array.from(target.querySelectorAll("details.exception"), (d) => [d.dataset.key, d.open]);
  const known = new Map(shown);
  const parts = [];
  entries.forEach((e, i) => {
    const key = e.timestamp + "|" + (e.taskName || "") + "|" + (e.exceptionName || "");
    const open = known.has(key) ? known.get(key) : i === 0;
    parts.push(el("details", { class: "panel exception", "data-key": key, open },
      el("summary", {}, el("strong", {}, e.exceptionName || "Exception"),
        e.taskName ? " in " + e.taskName : "", " at " + fmtTime(e.timestamp)),
      el("pre", { class: "stacktrace" }, e.stacktrace || "")));
  });
  if (entries.length === 0) parts.push(el("pre", { class: "stacktrace" }, exc["root-exception"]));
  if (history.truncated) {
    parts.push(el("p", { class: "muted" }, "Showing the " + entries.length + " newest; older exceptions are not listed (web.exception-history-size bounds how many a job keeps)."));
  }
  target.replaceChildren(...parts);
}

// ---- routing and refresh ----

function route() {
  const m = location.hash.match(/^#\/jobs\/([0-9A-Za-z_-]+)$/);
  current = m ? jobView(m[1]) : jobsView();
  refresh();
}

async function refresh() {
  const view = current;
  try {
    const [ov] = await Promise.all([read("/overview"), view.refresh()]);
    $("overview").textContent = fmtNumber(ov["jobs-running"]) + " running · " + fmtNumber(ov["jobs-finished"]) +
      " finished · " + fmtNumber(ov["jobs-cancelled"]) + " canceled · " + fmtNumber(ov["jobs-failed"]) + " failed";
    // A blocked part of the page stays reported: the page is broken, not stale.
    const blocked = policyViolations.length ? "Blocked by the Content-Security-Policy: " + policyViolations.join("; ") + ". " : "";
    $("refreshed").textContent = blocked + "Updated " + new Date().toLocaleTimeString() + "; refreshes every " + refreshMs / 1000 + " s.";
  } catch (e) {
    if (view === current) $("refreshed").textContent = "Refresh failed: " + e.message;
  }
}

function refreshSoon() {
  setTimeout(refresh, 300);
}

async function start() {
  setupToken();
  try {
    const cfg = await read("/config");
    if (typeof cfg["refresh-interval"] === "number" && cfg["refresh-interval"] > 0) refreshMs = cfg["refresh-interval"];
  } catch (_) {
    // the default interval
  }
  window.addEventListener("hashchange", route);
  route();
  setInterval(refresh, refreshMs);
}

document.addEventListener("DOMContentLoaded", start);
