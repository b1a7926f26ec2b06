// The dualmem inspector: a small single-page app over the JSON API. Everything it shows comes from
// the API with the caller's key (kept in sessionStorage, sent as a bearer token).
"use strict";

const KEY_SLOT = "dualmem.key";
const VIEWS = ["semantic", "temporal", "causal", "entity"];
const TYPES = ["episodic", "semantic", "procedural", "preference"];
const main = document.getElementById("main");
let pendingNotice = null; // shown once on top of the next page rendered

function notifyNext(text) {
  pendingNotice = text;
}

// -- DOM helpers ---------------------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function fmt(x, digits = 3) {
  return x === null || x === undefined ? "–" : Number(x).toFixed(digits);
}

function when(iso) {
  return iso ? iso.replace("T", " ").replace(/(\.\d+)?(\+00:00|Z)$/, "") : "–";
}

function bar(value) {
  const v = Math.max(0, Math.min(1, Number(value) || 0));
  return h("span", { class: "bar-track" }, h("span", { class: "bar", style: `width:${(v * 100).toFixed(0)}%` }));
}

function scoreRows(obj, keys) {
  return h("div", { class: "scores" }, keys.flatMap((k) => [h("span", { class: "score-name" }, k), bar(obj[k]), h("span", { class: "mono score-value" }, fmt(obj[k]))]));
}

function statusPills(n) {
  return [
    n.valid_to ? h("span", { class: "pill superseded" }, "superseded") : h("span", { class: "pill current" }, "current"),
    n.status === "pending" ? h("span", { class: "pill pending" }, "pending") : null,
    n.derived ? h("span", { class: "pill" }, "derived") : null,
  ];
}

function nodeLink(id, text) {
  return h("a", { href: `#/node/${encodeURIComponent(id)}`, class: "node-link" }, text || id);
}

function showError(err, where) {
  const box = h("div", { class: "error", role: "alert" }, err.message || String(err));
  (where || main).prepend(box);
}

// -- the API -------------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, problem) {
    super(problem && problem.detail ? `${problem.detail}${problem.hint ? ` (${problem.hint})` : ""}` : `HTTP ${status}`);
    this.status = status;
  }
}

async function api(path, options = {}) {
  const headers = Object.assign({ Accept: "application/json" }, options.headers || {});
  const key = sessionStorage.getItem(KEY_SLOT);
  if (key) headers.Authorization = `Bearer ${key}`;
  if (options.json !== undefined) {
    headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(options.json);
  }
  const resp = await fetch(path, { method: options.method || "GET", headers, body: options.body });
  if (resp.status === 401) {
    sessionStorage.removeItem(KEY_SLOT);
    showLogin("The server needs an API key (or the one given was refused).");
    throw new ApiError(401, { detail: "not signed in" });
  }
  if (options.raw) {
    if (!resp.ok) throw new ApiError(resp.status, await resp.json().catch(() => null));
    return resp;
  }
  const body = await resp.json().catch(() => null);
  if (!resp.ok) throw new ApiError(resp.status, body);
  return body;
}

// -- confirmation --------------------------------------------------------------------------------
function confirmAction(title, text, okLabel) {
  const modal = document.getElementById("modal");
  document.getElementById("modal-title").textContent = title;
  document.getElementById("modal-text").textContent = text;
  const ok = document.getElementById("modal-ok");
  const cancel = document.getElementById("modal-cancel");
  ok.textContent = okLabel || "Confirm";
  modal.hidden = false;
  return new Promise((resolve) => {
    const done = (answer) => {
      modal.hidden = true;
      ok.onclick = cancel.onclick = null;
      resolve(answer);
    };
    ok.onclick = () => done(true);
    cancel.onclick = () => done(false);
  });
}

// -- sign in -------------------------------------------------------------------------------------
function showLogin(message) {
  const input = h("input", { type: "password", id: "api-key", placeholder: "dmk_…", autocomplete: "off" });
  const form = h("form", { class: "card login", id: "login", onsubmit: (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY_SLOT, input.value.trim());
    start();
  } },
  h("h1", {}, "Sign in"),
  h("p", { class: "muted" }, message || "Paste an API key (from `dualmem keys create --user U`). It stays in this tab only."),
  input, h("button", { class: "primary", type: "submit" }, "Open the inspector"));
  main.replaceChildren(form);
  input.focus();
}

async function start() {
  let me;
  try {
    me = await api("/v1/whoami");
  } catch (err) {
    if (err.status !== 401) { main.replaceChildren(); showError(err); }
    return;
  }
  if (!me.tenant) {
    showLogin("This is an admin key: it manages keys but cannot read memories. Use a key made with --user.");
    return;
  }
  const t = me.tenant;
  const signOut = sessionStorage.getItem(KEY_SLOT)
    ? h("button", { type: "button", onclick: () => { sessionStorage.removeItem(KEY_SLOT); showLogin(); } }, "sign out") : null;
  document.getElementById("who").replaceChildren(
    `user ${t.user}${t.agent ? ` · agent ${t.agent}` : ""}${t.run ? ` · run ${t.run}` : ""}${me.key_id ? ` · key ${me.key_id}` : " · no auth"}`, ...(signOut ? [signOut] : []));
  window.onhashchange = route;
  route();
}

// -- routing -------------------------------------------------------------------------------------
function route() {
  const hash = location.hash || "#/memories";
  const [path, query] = hash.slice(1).split("?");
  const parts = path.split("/").filter(Boolean);
  const params = new URLSearchParams(query || "");
  const view = parts[0] || "memories";
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === view);
  const pages = { memories: memoriesPage, node: nodePage, search: searchPage, consolidation: consolidationPage, stats: statsPage };
  const page = pages[view] || memoriesPage;
  main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  page(parts.slice(1).map(decodeURIComponent), params).then(() => {
    if (pendingNotice) main.prepend(h("div", { class: "notice" }, pendingNotice));
    pendingNotice = null;
  }).catch((err) => { if (err.status !== 401) showError(err); });
}

// -- memory list ---------------------------------------------------------------------------------
async function memoriesPage(_, params) {
  const f = {
    speaker: params.get("speaker") || "", since: params.get("since") || "", until: params.get("until") || "",
    status: params.get("status") || "", type: params.get("type") || "", min: params.get("min") || "0.5",
  };
  const field = (name, label, input) => h("label", {}, label, input);
  const select = (name, options) => h("select", { name }, options.map(([v, l]) => h("option", { value: v, selected: f[name] === v }, l)));
  const form = h("form", { class: "filters card", id: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    const q = new URLSearchParams();
    for (const [k, v] of data.entries()) if (v) q.set(k, v);
    if (!q.get("type")) q.delete("min");
    location.hash = `#/memories?${q}`;
  } },
  field("speaker", "speaker", h("input", { name: "speaker", value: f.speaker, size: 12 })),
  field("since", "observed since", h("input", { name: "since", value: f.since, placeholder: "2024-05-01", size: 12 })),
  field("until", "observed before", h("input", { name: "until", value: f.until, placeholder: "2024-06-01", size: 12 })),
  field("status", "status", select("status", [["", "any"], ["current", "current"], ["superseded", "superseded"], ["pending", "pending"]])),
  field("type", "type score", select("type", [["", "any type"], ...TYPES.map((t) => [t, t])])),
  field("min", "at least", h("input", { name: "min", type: "number", min: 0, max: 1, step: 0.05, value: f.min, style: "width:80px" })),
  h("button", { class: "primary", type: "submit" }, "Filter"));
  const body = h("tbody");
  const table = h("table", { id: "memory-table" }, h("thead", {}, h("tr", {}, ["observed", "speaker", "memory", "type scores", "status"].map((c) => h("th", {}, c)))), body);
  const counter = h("p", { class: "muted small", id: "memory-count" });
  const more = h("button", { type: "button" }, "Load more");
  const danger = h("div", { class: "row-actions" },
    h("button", { type: "button", class: "danger", id: "forget-filtered", onclick: () => forgetFiltered(f) }, "Forget these…"),
    h("button", { type: "button", id: "export", onclick: exportAll }, "Export all (JSON Lines)…"));
  main.replaceChildren(h("h1", {}, "Memories"), form, h("div", { class: "card" }, counter, table, more, danger));
  let cursor = null;
  let shown = 0;
  const load = async () => {
    more.disabled = true;
    let added = 0;
    do {
      const q = new URLSearchParams({ limit: "500" });
      for (const k of ["speaker", "since", "until", "status"]) if (f[k]) q.set(k, f[k]);
      if (cursor) q.set("cursor", cursor);
      const page = await api(`/v1/memories?${q}`);
      cursor = page.next_cursor;
      for (const n of page.items) {
        if (f.type && !(n.types && n.types[f.type] >= Number(f.min))) continue;
        body.appendChild(memoryRow(n));
        added++;
      }
    } while (cursor && added < 100);
    shown += added;
    counter.textContent = `${shown} memories shown${cursor ? " (more available)" : ""}`;
    more.hidden = !cursor;
    more.disabled = false;
  };
  more.onclick = load;
  await load();
}

function memoryRow(n) {
  const types = n.types ? h("div", { class: "scores" }, TYPES.flatMap((t) => [h("span", { class: "small" }, t), bar(n.types[t]), h("span", { class: "mono" }, fmt(n.types[t], 2))])) : h("span", { class: "muted" }, "untyped");
  return h("tr", { class: "click memory-row", "data-id": n.id, onclick: () => { location.hash = `#/node/${encodeURIComponent(n.id)}`; } },
    h("td", { class: "mono" }, when(n.at)), h("td", {}, n.speaker || "–"), h("td", {}, n.content), h("td", {}, types), h("td", {}, statusPills(n)));
}

async function forgetFiltered(f) {
  const filter = {};
  for (const k of ["speaker", "since", "until"]) if (f[k]) filter[k] = f[k];
  const everything = Object.keys(filter).length === 0;
  const what = everything ? "EVERY memory of this tenant" : `every memory matching ${JSON.stringify(filter)}`;
  if (!(await confirmAction("Forget memories?", `This removes ${what}, with all versions and everything derived from them. It cannot be undone. (The status and type filters are not applied.)`, "Forget"))) return;
  const out = await api("/v1/forget", { method: "POST", json: everything ? { all: true } : filter });
  notifyNext(`Forgot ${out.forgotten} memories.`);
  route();
}

async function exportAll() {
  if (!(await confirmAction("Export?", "Download this tenant's whole memory (nodes, edges, decisions) as JSON Lines.", "Export"))) return;
  const resp = await api("/v1/export", { raw: true, headers: { Accept: "application/x-ndjson" } });
  const blob = await resp.blob();
  const link = h("a", { href: URL.createObjectURL(blob), download: "dualmem-export.jsonl", id: "export-link" }, "dualmem-export.jsonl");
  main.prepend(h("div", { class: "notice" }, `Export ready (${blob.size} bytes): `, link));
  link.click();
}

// -- node page -----------------------------------------------------------------------------------
async function nodePage([id]) {
  const data = await api(`/v1/inspector/nodes/${encodeURIComponent(id)}`);
  const info = data.inspection;
  const n = info.node;
  const byId = Object.fromEntries(data.neighbours.map((b) => [b.id, b]));
  const kv = (pairs) => h("dl", { class: "kv" }, pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  const slot = info.decisions.find((d) => d.key === "write.slot");  // subject · attribute (dualmem.text.slots)
  const head = h("div", { class: "card", id: "node-card" },
    h("div", {}, statusPills(n), h("span", { class: "mono muted" }, n.id)),
    h("p", { class: "content", id: "node-content" }, n.content),
    kv([["speaker", n.speaker || "–"], ["observed", when(n.at)], ["written", when(n.created_at)], ["session", n.session || "–"],
      ["turn", n.turn_id || "–"], ["source", n.source || "–"], ["valid", `${when(n.valid_from)} → ${n.valid_to ? when(n.valid_to) : "now"}`],
      ["entities", n.entities.length ? n.entities.join(", ") : "–"],
      ["slot", slot ? h("span", { id: "node-slot" }, slot.label) : "–"],
      ["metadata", Object.keys(n.metadata).length ? h("span", { class: "mono" }, JSON.stringify(n.metadata)) : "–"]]),
    h("div", { class: "row-actions" }, h("button", { type: "button", class: "danger", id: "forget-node", onclick: async () => {
      if (!(await confirmAction("Forget this memory?", "It goes with every version in its chain, everything derived from it, its edges and recorded decisions. It cannot be undone.", "Forget"))) return;
      const out = await api(`/v1/memories/${encodeURIComponent(n.id)}`, { method: "DELETE" });
      notifyNext(`Forgot ${out.forgotten} memories.`);
      location.hash = "#/memories";
    } }, "Forget…")));
  const times = h("div", { class: "card" }, h("h2", {}, "Grounded time expressions"), n.temporal_refs.length
    ? h("table", { id: "temporal-refs" }, h("thead", {}, h("tr", {}, ["expression", "from", "to", "precision"].map((c) => h("th", {}, c)))),
      h("tbody", {}, n.temporal_refs.map((r) => h("tr", {}, h("td", {}, `“${r.expression}”`), h("td", {}, r.start), h("td", {}, r.end), h("td", {}, r.precision)))))
    : h("p", { class: "muted" }, "none found in the text"));
  const types = h("div", { class: "card" }, h("h2", {}, "Type scores"), n.types ? scoreRows(n.types, TYPES) : h("p", { class: "muted" }, "not typed yet (pending)"));
  main.replaceChildren(h("h1", {}, "Memory"), head, h("div", { class: "grid2" }, types, times), graphCard(n, info.edges, byId),
    decisionsCard(info.decisions, byId), versionsCard(n, data.versions));
}

function graphCard(n, edges, byId) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.id = "node-graph";
  const active = new Set(VIEWS);
  const colours = window.dualmemGraph.VIEW_COLOURS;
  const counts = Object.fromEntries(VIEWS.map((v) => [v, edges.filter((e) => e.view === v).length]));
  const redraw = () => window.dualmemGraph.drawNeighbourhood(svg, { id: n.id, text: n.content },
    Object.values(byId), edges, active, (other) => { location.hash = `#/node/${encodeURIComponent(other)}`; });
  const legend = h("div", { class: "legend", id: "graph-legend" }, VIEWS.map((v) => h("label", {},
    h("input", { type: "checkbox", checked: true, "data-view": v, onchange: (ev) => { ev.target.checked ? active.add(v) : active.delete(v); redraw(); } }),
    h("span", { class: "swatch", style: `background:${colours[v]}` }), `${v} (${counts[v]})`)));
  const list = h("table", { id: "edge-table" }, h("thead", {}, h("tr", {}, ["view", "label", "direction", "other memory", "weight", "written"].map((c) => h("th", {}, c)))),
    h("tbody", {}, edges.map((e) => {
      const other = e.source === n.id ? e.target : e.source;
      return h("tr", {}, h("td", {}, h("span", { class: `pill view-${e.view}` }, e.view)), h("td", {}, e.label),
        h("td", {}, e.source === n.id ? "this → other" : "other → this"), h("td", {}, nodeLink(other, byId[other] ? byId[other].text : other)),
        h("td", { class: "mono" }, fmt(e.weight)), h("td", { class: "mono" }, when(e.created_at)));
    })));
  const card = h("div", { class: "card graph" }, h("h2", {}, `Edges (${edges.length})`), legend, svg,
    h("p", { class: "muted small" }, "Click a memory to open it. Arrows point from source to target; thicker means a higher weight."),
    edges.length ? h("details", {}, h("summary", {}, `all ${edges.length} edges as a table`), list) : null);
  requestAnimationFrame(redraw);
  return card;
}

function decisionCell(d) {
  return h("td", { class: "mono", title: `${d.backend} · ${fmt(d.latency_ms, 1)} ms` }, d.label ? `${d.label} ${fmt(d.value, 2)}` : fmt(d.value, 2));
}

// one table per purpose: pair decisions pivoted (a row per other memory, a column per decision key)
function decisionsCard(decisions, byId) {
  const groups = {};
  for (const d of decisions) (groups[d.purpose] = groups[d.purpose] || []).push(d);
  const sections = Object.entries(groups).map(([purpose, ds]) => {
    const keys = [...new Set(ds.map((d) => d.key))];
    const first = ds[0];
    const meta = h("span", { class: "muted small" }, ` ${first.backend} · ${fmt(first.latency_ms, 1)} ms per request`);
    if (!ds.some((d) => d.other_id)) {
      return h("div", {}, h("h3", {}, purpose, meta), h("table", { class: "decisions", "data-purpose": purpose },
        h("thead", {}, h("tr", {}, h("th", {}, "decision"), h("th", {}, "value"), h("th", {}, "choice"))),
        h("tbody", {}, ds.map((d) => h("tr", {}, h("td", { class: "mono" }, d.key), h("td", {}, bar(d.value), h("span", { class: "mono" }, fmt(d.value))), h("td", {}, d.label || ""))))));
    }
    const rows = {};
    for (const d of ds) ((rows[d.other_id || ""] = rows[d.other_id || ""] || {})[d.key] = d);
    return h("div", {}, h("h3", {}, `${purpose} (${Object.keys(rows).length} memories judged)`, meta),
      h("table", { class: "decisions", "data-purpose": purpose }, h("thead", {}, h("tr", {}, h("th", {}, "other memory"), keys.map((k) => h("th", { class: "mono" }, k)))),
        h("tbody", {}, Object.entries(rows).map(([other, byKey]) => h("tr", {},
          h("td", {}, other ? nodeLink(other, byId[other] ? byId[other].text : other) : "–"),
          keys.map((k) => (byKey[k] ? decisionCell(byKey[k]) : h("td", {}, "")))))))); 
  });
  return h("div", { class: "card", id: "decisions" }, h("h2", {}, "Controller decisions"), sections.length ? sections : h("p", { class: "muted" }, "none recorded"));
}

function versionsCard(n, versions) {
  const rows = versions.map((v) => h("tr", { class: v.id === n.id ? "" : "click", onclick: v.id === n.id ? null : () => { location.hash = `#/node/${encodeURIComponent(v.id)}`; } },
    h("td", {}, statusPills(v)), h("td", { class: "mono" }, when(v.valid_from || v.created_at)), h("td", { class: "mono" }, v.valid_to ? when(v.valid_to) : "now"),
    h("td", {}, v.id === n.id ? h("strong", {}, v.content) : v.content)));
  return h("div", { class: "card", id: "versions" }, h("h2", {}, `Versions and supersession (${versions.length})`),
    versions.length > 1 ? h("table", {}, h("thead", {}, h("tr", {}, ["status", "valid from", "valid to", "text"].map((c) => h("th", {}, c)))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "the only version: never updated or superseded"));
}

// -- search with the trace -----------------------------------------------------------------------
async function searchPage(_, params) {
  const q = params.get("q") || "";
  const k = params.get("k") || "10";
  const input = h("input", { name: "q", id: "query", value: q, size: 60, placeholder: "What does memory know about…" });
  const form = h("form", { class: "filters card", id: "search-form", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/search?${new URLSearchParams({ q: input.value, k: form.k.value })}`;
  } }, h("label", {}, "query", input), h("label", {}, "k", h("input", { name: "k", type: "number", min: 1, max: 100, value: k, style: "width:70px" })),
  h("button", { class: "primary", type: "submit" }, "Search"));
  main.replaceChildren(h("h1", {}, "Search"), form);
  input.focus();
  if (!q) return;
  const out = await api("/v1/search", { method: "POST", json: { query: q, k: Number(k), trace: true } });
  const t = out.trace;
  const ids = new Set(t.anchors.map((a) => a.node_id));
  for (const r of t.rounds) for (const c of r.candidates) ids.add(c.node_id);
  const briefs = ids.size ? await api(`/v1/inspector/briefs?${new URLSearchParams([...ids].map((i) => ["ids", i]))}`) : [];
  const byId = Object.fromEntries(briefs.map((b) => [b.id, b]));
  for (const e of out.evidence) byId[e.node.id] = { id: e.node.id, text: e.node.content };
  main.append(traceSummary(t), h("div", { class: "grid2" }, routingCard(t), budgetsCard(t, byId)), hitsCard(out.evidence, t, byId), roundsCard(t, byId));
}

function traceSummary(t) {
  const calls = Object.entries(t.calls_by_purpose).map(([p, c]) => `${p} ${c}`).join(" · ") || "none";
  return h("div", { class: "card", id: "trace-summary" }, h("dl", { class: "kv" },
    h("dt", {}, "stop reason"), h("dd", {}, h("strong", { id: "stop-reason" }, t.stop_reason)),
    h("dt", {}, "controller calls"), h("dd", {}, `${t.controller_calls} (${calls})`),
    h("dt", {}, "latency"), h("dd", { id: "latency" }, `${fmt(t.latency_ms, 1)} ms`),
    h("dt", {}, "depth D(q)"), h("dd", {}, `${t.depth} (rounds run: ${t.rounds.length})`),
    h("dt", {}, "visited / edges inspected"), h("dd", {}, `${t.visited} / ${t.edges_inspected}`)));
}

function routingCard(t) {
  const keys = Object.keys(t.route);
  return h("div", { class: "card", id: "routing" }, h("h2", {}, "Routing probabilities"), scoreRows(t.route, keys),
    h("p", { class: "small" }, "active views: ", t.active_views.length ? t.active_views.map((v) => h("span", { class: `pill view-${v}` }, v)) : "none (anchors only)"));
}

function shorten(text, width) {
  const flat = String(text).split(/\s+/).join(" ");
  return flat.length <= width ? flat : `${flat.slice(0, width - 1)}…`;
}

const ANCHORS_SHOWN = 12;

// the anchors: each memory (its first words, a link to its page) with its fused (RRF) score
function budgetsCard(t, byId) {
  const shown = t.anchors.slice(0, ANCHORS_SHOWN);
  return h("div", { class: "card", id: "budgets" }, h("h2", {}, "Budgets per view"),
    h("table", { id: "budget-table" }, h("thead", {}, h("tr", {}, h("th", {}, "view"), h("th", {}, "budget b_g"))),
      h("tbody", {}, Object.entries(t.budgets).map(([v, b]) => h("tr", {}, h("td", {}, h("span", { class: `pill view-${v}` }, v)), h("td", { class: "mono" }, b))))),
    h("h3", {}, `Anchors (${t.anchors.length}, fused by RRF)`),
    shown.length ? h("table", { id: "anchors", class: "small" }, h("thead", {}, h("tr", {}, ["#", "memory", "RRF score"].map((c) => h("th", {}, c)))),
      h("tbody", {}, shown.map((a, i) => h("tr", { "data-id": a.node_id }, h("td", { class: "mono" }, i + 1),
        h("td", {}, nodeLink(a.node_id, byId[a.node_id] ? shorten(byId[a.node_id].text, 90) : a.node_id)),
        h("td", { class: "mono anchor-score" }, fmt(a.score, 4))))))
      : h("p", { class: "muted small" }, "none"),
    t.anchors.length > ANCHORS_SHOWN ? h("p", { class: "muted small" }, `and ${t.anchors.length - ANCHORS_SHOWN} more`) : null);
}

function why(e, t) {
  let c = null;
  for (const r of t.rounds) for (const x of r.candidates) if (x.node_id === e.node.id && (!c || x.admitted)) c = { ...x, round: r.round };
  let how;
  if (e.view === "anchor") {
    const a = t.anchors.findIndex((x) => x.node_id === e.node.id);
    how = a >= 0 ? `anchor #${a + 1} of ${t.anchors.length} (fused rank score ${fmt(t.anchors[a].score, 4)})` : "anchor (filled from the anchor list)";
  } else {
    const from = e.via ? (e.via.source === e.node.id ? e.via.target : e.via.source) : null;
    how = `reached in round ${e.round}${e.via ? ` over a ${e.via.view}/${e.via.label} edge from ${from}` : ""}`;
  }
  const judged = c ? `; judged in round ${c.round}: relevance ${fmt(c.relevance, 2)}, relation usefulness ${fmt(c.relation_usefulness, 2)}, new information ${fmt(c.new_information, 2)}, support ${fmt(c.support, 2)}, similarity ${fmt(c.similarity, 2)} → score ${fmt(c.score)}${c.admitted ? " (admitted)" : ""}` : "";
  return how + judged;
}

function hitsCard(evidence, t) {
  return h("div", { class: "card", id: "hits" }, h("h2", {}, `Evidence (${evidence.length})`), evidence.length ? evidence.map((e, i) => h("div", { class: "hit", "data-id": e.node.id },
    h("div", {}, h("strong", {}, `${i + 1}. `), h("span", { class: `pill view-${e.view}` }, e.view), h("span", { class: "mono" }, `score ${fmt(e.score)}`), " ",
      h("span", { class: "muted small" }, `${when(e.node.at)} · ${e.node.speaker || "–"}`), " ", statusPills(e.node)),
    h("div", {}, nodeLink(e.node.id, e.node.content)),
    h("div", { class: "why" }, "why: ", why(e, t)))) : h("p", { class: "muted" }, "nothing found"));
}

function roundsCard(t, byId) {
  const rounds = t.rounds.map((r) => h("div", { class: "round", "data-round": r.round }, h("h3", {}, `Round ${r.round}`),
    r.assessment ? h("div", {}, h("p", { class: "small muted" }, "assessment of the evidence so far:"),
      scoreRows({ sufficient: r.assessment.sufficient, "continue useful": r.assessment.continue_useful, missing: r.assessment.missing, contradiction: r.assessment.contradiction },
        ["sufficient", "continue useful", "missing", "contradiction"])) : h("p", { class: "small muted" }, "no assessment this round"),
    r.candidates.length ? h("table", { class: "pool" }, h("thead", {}, h("tr", {}, ["", "memory", "view", "label", "score", "sim", "relevance", "rel. useful", "new info", "support"].map((c) => h("th", {}, c)))),
      h("tbody", {}, [...r.candidates].sort((a, b) => b.score - a.score).map((c) => h("tr", { class: c.admitted ? "admitted" : "" },
        h("td", {}, c.admitted ? "✓" : ""), h("td", {}, nodeLink(c.node_id, byId[c.node_id] ? byId[c.node_id].text : c.node_id)),
        h("td", {}, h("span", { class: `pill view-${c.view}` }, c.view)), h("td", {}, c.label),
        ...[c.score, c.similarity, c.relevance, c.relation_usefulness, c.new_information, c.support].map((x) => h("td", { class: "mono" }, fmt(x, 2)))))))
      : h("p", { class: "small muted" }, "no candidates scored")));
  return h("div", { class: "card", id: "rounds" }, h("h2", {}, `Rounds (${t.rounds.length}) and the scored pool`), rounds.length ? rounds : h("p", { class: "muted" }, "retrieval stopped before the first expansion"));
}

// -- consolidation and stats ---------------------------------------------------------------------
async function consolidationPage() {
  const log = await api("/v1/inspector/consolidation?limit=300");
  const run = h("button", { type: "button", id: "consolidate", onclick: async () => {
    if (!(await confirmAction("Run consolidation now?", "One pass over the recent memories: the controller judges pairs and may link or supersede memories.", "Run"))) return;
    const r = await api("/v1/consolidate", { method: "POST" });
    notifyNext(`Pass done: ${r.pairs} pairs judged, ${r.links} links, ${r.superseded.length} superseded.`);
    route();
  } }, "Run a pass now…");
  const decision = (p, key) => p.decisions.find((d) => d.key.split(".").pop() === key);
  const rows = log.pairs.map((p) => {
    const rep = decision(p, "representation");
    return h("tr", {}, h("td", { class: "mono" }, when(p.at)), h("td", {}, nodeLink(p.new.id, p.new.text)), h("td", {}, nodeLink(p.old.id, p.old.text)),
      ...["redundancy", "contradiction", "obsolescence", "link_usefulness"].map((k) => h("td", { class: "mono" }, fmt(decision(p, k) ? decision(p, k).value : null, 2))),
      h("td", {}, rep ? `${rep.label} (${fmt(rep.value, 2)})` : "–"),
      h("td", {}, p.superseded ? h("span", { class: "pill superseded" }, "superseded") : null, p.linked ? h("span", { class: "pill" }, "linked") : null));
  });
  main.replaceChildren(h("h1", {}, "Consolidation log"), h("div", { class: "card" },
    h("p", { class: "muted" }, `${log.total} pairs judged${log.total > log.pairs.length ? ` (newest ${log.pairs.length} shown)` : ""}.`), run,
    rows.length ? h("table", { id: "consolidation-table" }, h("thead", {}, h("tr", {}, ["when", "newer memory", "earlier memory", "redundancy", "contradiction", "obsolescence", "link useful", "representation", "outcome"].map((c) => h("th", {}, c)))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "no pass has judged a pair yet")));
}

// a number or a word as text; a mapping (edges by view) as a small table of its entries
function statValue(key, v) {
  if (v === null || typeof v !== "object") return String(v);
  const label = (name) => (key === "edges_by_view" ? h("span", { class: `pill view-${name}` }, name) : name);
  return h("table", { class: "mini", id: `stat-${key.replace(/_/g, "-")}` },
    h("tbody", {}, Object.entries(v).map(([name, x]) => h("tr", {}, h("td", {}, label(name)), h("td", { class: "mono" }, statValue(`${key}-${name}`, x))))));
}

async function statsPage(_, params) {
  const by = params.get("by") === "written" ? "written" : "observed";
  const [stats, growth] = await Promise.all([api("/v1/stats"), api(`/v1/inspector/growth?by=${by}`)]);
  const clock = h("p", { class: "small" }, "time axis: ", by === "observed" ? h("strong", {}, "observed") : h("a", { href: "#/stats?by=observed" }, "observed"),
    " · ", by === "written" ? h("strong", {}, "written") : h("a", { href: "#/stats?by=written" }, "written"));
  const kv = h("dl", { class: "kv", id: "stats" }, Object.entries(stats).flatMap(([k, v]) => [h("dt", {}, k),
    h("dd", { class: "mono" }, statValue(k, v))]));
  const nodesSvg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  const edgesSvg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  nodesSvg.id = "growth-nodes";
  edgesSvg.id = "growth-edges";
  main.replaceChildren(h("h1", {}, "Stats"), h("div", { class: "card" }, kv),
    h("div", { class: "card chart" }, h("h2", {}, "Memory growth"), clock, nodesSvg, edgesSvg));
  const xs = growth.points.map((p) => new Date(p.at));
  const colours = window.dualmemGraph.VIEW_COLOURS;
  requestAnimationFrame(() => {
    window.dualmemGraph.drawLineChart(nodesSvg, xs, [
      { name: "memories", colour: "#10243a", values: growth.points.map((p) => p.nodes) },
      { name: "current", colour: "#2e8b57", values: growth.points.map((p) => p.current) }], "memories over time");
    window.dualmemGraph.drawLineChart(edgesSvg, xs, growth.views.map((v) => ({ name: v, colour: colours[v], values: growth.points.map((p) => p.edges[v] || 0) })), "edges per view over time");
  });
}

start();
