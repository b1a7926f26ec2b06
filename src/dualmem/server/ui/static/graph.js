// SVG drawing for the inspector: a node's neighbourhood graph and line charts. No library.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const VIEW_COLOURS = {
  semantic: "#1f77b4", temporal: "#2ca02c", causal: "#d62728", entity: "#9467bd", anchor: "#8c564b",
};

function svgEl(tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function shortLabel(text, n) {
  const t = (text || "").replace(/\s+/g, " ").trim();
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

// center: {id, text}; neighbours: [{id, text, current}]; edges: [{source, target, view, label, weight}]
// views: set of view names to draw; onOpen(id) is called when a neighbour is clicked.
function drawNeighbourhood(svg, center, neighbours, edges, views, onOpen) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const width = svg.clientWidth || 700;
  const height = svg.clientHeight || 380;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const shown = edges.filter((e) => views.has(e.view));
  const ids = new Set();
  for (const e of shown) ids.add(e.source === center.id ? e.target : e.source);
  const around = neighbours.filter((n) => ids.has(n.id));
  const cx = width / 2;
  const cy = height / 2;
  // neighbours on an ellipse that fills the box; labels point outwards
  const rx = Math.max(80, width / 2 - 190);
  const ry = Math.max(60, height / 2 - 36);
  const pos = { [center.id]: [cx, cy] };
  const angles = {};
  around.forEach((n, i) => {
    const angle = (2 * Math.PI * i) / Math.max(1, around.length) - Math.PI / 2;
    angles[n.id] = angle;
    pos[n.id] = [cx + rx * Math.cos(angle), cy + ry * Math.sin(angle)];
  });
  const labelEdges = shown.length <= 10;
  const defs = svgEl("defs");
  for (const [view, colour] of Object.entries(VIEW_COLOURS)) {
    const marker = svgEl("marker", {
      id: `arrow-${view}`, viewBox: "0 0 10 10", refX: 22, refY: 5, markerWidth: 9, markerHeight: 9,
      markerUnits: "userSpaceOnUse", orient: "auto-start-reverse",
    });
    marker.appendChild(svgEl("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: colour }));
    defs.appendChild(marker);
  }
  svg.appendChild(defs);
  // several edges may join the same pair: bend each one a little differently
  const seen = {};
  for (const e of shown) {
    const a = pos[e.source];
    const b = pos[e.target];
    if (!a || !b) continue;
    const pair = [e.source, e.target].sort().join("|");
    const nth = (seen[pair] = (seen[pair] || 0) + 1) - 1;
    const mx = (a[0] + b[0]) / 2;
    const my = (a[1] + b[1]) / 2;
    const dx = b[0] - a[0];
    const dy = b[1] - a[1];
    const len = Math.hypot(dx, dy) || 1;
    const bend = (nth % 2 ? -1 : 1) * Math.ceil(nth / 2) * 22;
    const qx = mx - (dy / len) * bend;
    const qy = my + (dx / len) * bend;
    const path = svgEl("path", {
      d: `M ${a[0]} ${a[1]} Q ${qx} ${qy} ${b[0]} ${b[1]}`, fill: "none",
      stroke: VIEW_COLOURS[e.view] || "#999", "stroke-width": 1 + 2.5 * (e.weight || 0),
      "stroke-opacity": 0.75, "marker-end": `url(#arrow-${e.view})`, class: `edge edge-${e.view}`,
    });
    path.appendChild(svgEl("title", {}, `${e.view} · ${e.label} · weight ${Number(e.weight).toFixed(2)}`));
    svg.appendChild(path);
    if (labelEdges) {
      svg.appendChild(svgEl("text", { x: qx, y: qy - 3, "text-anchor": "middle", class: "edge-label",
        "font-size": 9, fill: VIEW_COLOURS[e.view] || "#999" }, e.label));
    }
  }
  const drawNode = (n, isCenter) => {
    const [x, y] = pos[n.id];
    const g = svgEl("g", { class: isCenter ? "node center" : "node", "data-id": n.id, tabindex: 0 });
    g.appendChild(svgEl("circle", { cx: x, cy: y, r: isCenter ? 13 : 10,
      fill: isCenter ? "#10243a" : n.current === false ? "#d9a441" : "#5b8db8" }));
    if (isCenter) {
      g.appendChild(svgEl("text", { x: x, y: y + 30, "text-anchor": "middle", "font-weight": 600 },
        shortLabel(n.text, 60)));
    } else {
      const c = Math.cos(angles[n.id]);
      const anchor = c > 0.3 ? "start" : c < -0.3 ? "end" : "middle";
      const dx = anchor === "start" ? 14 : anchor === "end" ? -14 : 0;
      const dy = anchor === "middle" ? (Math.sin(angles[n.id]) > 0 ? 22 : -14) : 4;
      g.appendChild(svgEl("text", { x: x + dx, y: y + dy, "text-anchor": anchor }, shortLabel(n.text, 30)));
    }
    g.appendChild(svgEl("title", {}, n.text || n.id));
    if (!isCenter) {
      g.addEventListener("click", () => onOpen(n.id));
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") onOpen(n.id); });
    }
    svg.appendChild(g);
  };
  around.forEach((n) => drawNode(n, false));
  drawNode(center, true);
  if (!around.length) {
    svg.appendChild(svgEl("text", { x: cx, y: cy - 30, "text-anchor": "middle", fill: "#667085" },
      "no edges in the selected views"));
  }
}

// series: [{name, colour, values: [numbers]}], xs: [Date]
function drawLineChart(svg, xs, series, title) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const width = svg.clientWidth || 700;
  const height = svg.clientHeight || 260;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const left = 48, right = 120, top = 22, bottom = 28;
  const maxY = Math.max(1, ...series.flatMap((s) => s.values));
  const t0 = xs.length ? xs[0].getTime() : 0;
  const t1 = xs.length ? xs[xs.length - 1].getTime() : 1;
  const sx = (t) => left + ((t - t0) / Math.max(1, t1 - t0)) * (width - left - right);
  const sy = (v) => height - bottom - (v / maxY) * (height - top - bottom);
  svg.appendChild(svgEl("text", { x: left, y: 14, "font-weight": 600 }, title));
  for (let i = 0; i <= 4; i++) {
    const v = (maxY * i) / 4;
    svg.appendChild(svgEl("line", { x1: left, x2: width - right, y1: sy(v), y2: sy(v), stroke: "#e2e5ea" }));
    svg.appendChild(svgEl("text", { x: left - 6, y: sy(v) + 3, "text-anchor": "end" }, Math.round(v)));
  }
  if (xs.length) {
    for (const [t, anchor] of [[t0, "start"], [t1, "end"]]) {
      svg.appendChild(svgEl("text", { x: sx(t), y: height - 8, "text-anchor": anchor },
        new Date(t).toISOString().slice(0, 16).replace("T", " ")));
    }
  }
  series.forEach((s, k) => {
    const points = s.values.map((v, i) => `${sx(xs[i].getTime())},${sy(v)}`).join(" ");
    svg.appendChild(svgEl("polyline", { points, fill: "none", stroke: s.colour, "stroke-width": 2,
      class: `series series-${s.name}` }));
    const y = top + 14 * k;
    svg.appendChild(svgEl("rect", { x: width - right + 10, y: y - 8, width: 10, height: 10, fill: s.colour }));
    svg.appendChild(svgEl("text", { x: width - right + 26, y: y + 1 },
      `${s.name} (${s.values.length ? s.values[s.values.length - 1] : 0})`));
  });
}

window.dualmemGraph = { drawNeighbourhood, drawLineChart, VIEW_COLOURS };
