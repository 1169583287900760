// --html FILE: see render_html.hpp. The page is this file's template with three JSON
// documents inside: the --json document (its large tensors packed, render_json.hpp), the
// figures (figure.hpp), and the written-out cells of the explanation engine.
#include "render_html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "../output_file.hpp"
#include "attnwalk/lessons/explainer.hpp"
#include "figure.hpp"
#include "heatmap.hpp"
#include "render_json.hpp"

namespace attnwalk::app {

namespace {

const char* const page_doctype = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";  // then html_generator
const char* const page_head = R"HTML(<meta name="viewport" content="width=device-width">
<title>attnwalk</title>
<style>
:root{--zoom:1}
body{margin:0;font:calc(16px*var(--zoom))/1.45 system-ui,sans-serif;color:#1b1b1b;display:grid;grid-template-columns:15em 1fr 27em;height:100vh}
nav{overflow:auto;border-right:1px solid #ddd;padding:8px}
nav a{display:block;padding:2px 4px;color:#124;text-decoration:none;border-radius:3px;font-family:monospace;font-size:0.95em}
nav a.on{background:#dde8ff}nav a.param{color:#888}
main{overflow:auto;padding:10px 16px}aside{overflow:auto;border-left:1px solid #ddd;padding:10px;font-size:0.95em}
h1{font-size:1.25em;margin:0 0 4px}h2{font-size:1.08em;margin:12px 0 4px}.formula{font-family:monospace;color:#333}
.note{color:#444;max-width:60em}.panels{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}.panel{display:inline-block}
.panel b{display:block}canvas{cursor:crosshair}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:2px 6px;border-radius:3px;display:none}
table.vals{border-collapse:collapse;font-family:monospace}table.vals td{padding:1px 6px;text-align:right}
table.vals td.k{text-align:left;color:#555}tr.here{background:#fff3c4}
.heads label{margin-right:10px}.legend{color:#444}.mark{color:#7a3e00;font-size:0.9em}
.zoom{position:fixed;right:8px;bottom:8px;background:#fff;border:1px solid #ccc;border-radius:4px;padding:2px}
.zoom button{font-size:1em;min-width:2.2em}
.xstep{margin:8px 0;padding-top:4px;border-top:1px solid #eee}.xstep .t{font-weight:600}
.xline{font-family:monospace;white-space:pre-wrap;word-break:break-word}
</style></head><body>
<nav id="steps"></nav><main id="view"></main><aside id="explain"><p>Click a cell of a heatmap: it is written out here, with its value in every step.</p></aside>
<div id="tip"></div><div class="zoom"><button id="zoomout" title="smaller">A−</button> <button id="zoomin" title="larger (a projector)">A+</button></div>
<script type="application/json" id="trace">)HTML";

const char* const page_tail = R"HTML(</script>
<script>
"use strict";
(function () {
const T = JSON.parse(document.getElementById("trace").textContent);
const F = JSON.parse(document.getElementById("figures").textContent);
const X = JSON.parse(document.getElementById("cells").textContent);
const el = (tag, attrs, ...kids) => {
  const e = document.createElement(tag);
  for (const k in attrs || {}) {
    if (k === "text") e.textContent = attrs[k];
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), attrs[k]);
    else e.setAttribute(k, attrs[k]);
  }
  for (const c of kids) e.append(c);
  return e;
};
const num = v => typeof v === "number" ? v : v === "inf" || v === "Infinity" ? Infinity : v === "-inf" || v === "-Infinity" ? -Infinity : NaN;
const flat = d => (Array.isArray(d) ? d.flat(Infinity) : d === undefined || d === null ? [] : [d]).map(num);
const fmt = v => Number.isFinite(v) ? (Number.isInteger(v) && Math.abs(v) < 1e9 ? String(v) : Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-4) ? v.toExponential(3) : v.toFixed(4)) : v > 0 ? "inf" : v < 0 ? "−∞" : "nan";
// A large tensor comes packed (render_json.hpp): its float32 bits in base64, little-endian.
const unpack = b64 => { const bin = atob(b64), bytes = new Uint8Array(bin.length); for (let i = 0; i < bin.length; ++i) bytes[i] = bin.charCodeAt(i);
  const dv = new DataView(bytes.buffer), out = new Array(bytes.length >> 2); for (let i = 0; i < out.length; ++i) out[i] = dv.getFloat32(4 * i, true); return out; };
const cache = new Map();
const values = s => { if (!cache.has(s)) cache.set(s, s.data && typeof s.data.f32 === "string" ? unpack(s.data.f32) : flat(s.data)); return cache.get(s); };
const steps = T.steps || [];
const figs = new Map(F.figures.map(f => [f.step, f]));
const state = { step: 0, panel: 0, cell: null, zoom: 1, sel: null };  // sel: the attention cell last chosen, kept across steps
const rgbOf = hex => [1, 3, 5].map(k => parseInt(hex.slice(k, k + 2), 16));
const seq = F.palette.map(rgbOf), div = F.diverging.map(rgbOf);
// Where a value sits on the figure's scale, 0…1 (the ends and row maxima come from attnwalk).
function place(f, p, i, x) {
  if (f.scales[p] === "row") { const top = f.row_top[p][i]; return top > 0 ? Math.max(0, Math.min(1, x / top)) : 1; }
  return f.hi[p] > f.lo[p] ? (x - f.lo[p]) / (f.hi[p] - f.lo[p]) : 1;
}
const colourAt = (f, p, t) => { const pal = f.scales[p] === "symmetric" ? div : seq; return pal[Math.round(Math.max(0, Math.min(1, t)) * (pal.length - 1))]; };
const hidden = (f, p, i, j, x) => (f.masked && f.masked[i * f.cols + j] === "1") || x === -Infinity;
const tip = document.getElementById("tip");
let hatch = null;
function pattern(g) {
  if (hatch) return g.createPattern(hatch, "repeat");
  hatch = document.createElement("canvas"); hatch.width = hatch.height = 8;
  const h = hatch.getContext("2d"); h.fillStyle = "#f2f2f2"; h.fillRect(0, 0, 8, 8); h.strokeStyle = "#a8a8a8"; h.lineWidth = 2;
  h.beginPath(); h.moveTo(0, 8); h.lineTo(8, 0); h.moveTo(-2, 2); h.lineTo(2, -2); h.moveTo(6, 10); h.lineTo(10, 6); h.stroke();
  return g.createPattern(hatch, "repeat");
}
// The cell key the written-out cells are filed under, for an entry of a figure.
function cellKey(f, p, i, j) {
  if (!f.attention) return null;
  const head = f.query !== undefined ? i : f.panel_head[p], query = f.query !== undefined ? f.query : f.first_row + i;
  return [f.panel_layer[p], head, query, f.first_key + j].join(",");
}
// One panel of a figure on a canvas: labels, axis names, cells (values in them when they
// are big enough), masked cells hatched, the cursor. `size`: a thumbnail's cell size.
function heatmap(f, p, size, onclick) {
  const s = steps[f.step], v = values(s), R = f.rows, C = f.cols, base = f.offsets[p], z = state.zoom;
  const cell = size || Math.max(3, Math.min(Math.round(54 * z), Math.floor(640 * z / Math.max(R, C))));
  const fs = Math.round(14 * z), labels = !size && cell >= 12;
  const longest = labels ? Math.min(12, Math.max(...f.row_labels.map(l => l.length), ...f.col_labels.map(l => l.length))) : 0;
  const padX = labels ? Math.round(fs * 0.62 * longest + fs * 2.2) : 0, padY = labels ? Math.round(fs * 0.62 * longest + fs * 2.2) : 0;
  const cv = el("canvas", { width: padX + C * cell, height: padY + R * cell, "data-step": s.id, "data-panel": p, "data-cell": cell, "data-pad-x": padX, "data-pad-y": padY, "data-rows": R, "data-cols": C });
  const g = cv.getContext("2d");
  g.font = fs + "px system-ui,sans-serif"; g.fillStyle = "#222"; g.textBaseline = "middle";
  if (labels) {
    for (let i = 0; i < R; ++i) g.fillText(String(f.row_labels[i]).slice(0, 12), fs * 1.6, padY + (i + 0.5) * cell);
    for (let j = 0; j < C; ++j) { g.save(); g.translate(padX + (j + 0.5) * cell, padY - 6); g.rotate(-Math.PI / 3); g.fillText(String(f.col_labels[j]).slice(0, 12), 0, 0); g.restore(); }
    g.fillStyle = "#555";  // the axis names: rows, columns
    g.save(); g.translate(fs * 0.7, padY + R * cell / 2); g.rotate(-Math.PI / 2); g.textAlign = "center"; g.fillText("← " + f.row_axis, 0, 0); g.restore();
    g.textAlign = "left"; g.fillText(f.col_axis + " →", padX, fs * 0.8);
  }
  g.fillStyle = pattern(g); g.fillRect(padX, padY, C * cell, R * cell);  // the masked cells: the pattern behind the drawn ones
  for (let i = 0; i < R; ++i) for (let j = 0; j < C; ++j) {
    const x = v[base + i * C + j];
    if (hidden(f, p, i, j, x)) continue;
    const c = Number.isFinite(x) ? colourAt(f, p, place(f, p, i, x)) : [214, 39, 40];
    g.fillStyle = `rgb(${c[0]},${c[1]},${c[2]})`; g.fillRect(padX + j * cell, padY + i * cell, cell, cell);
    if (cell >= 36 * z && !size) {  // the number in its cell, dark or light on its colour
      g.fillStyle = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] > 140 ? "#111" : "#fff"; g.textAlign = "center";
      g.font = Math.round(cell * 0.27) + "px system-ui,sans-serif"; g.fillText(Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(Math.abs(x) >= 10 ? 1 : 2), padX + (j + 0.5) * cell, padY + (i + 0.5) * cell);
      g.textAlign = "left";
    }
  }
  if (state.cell && state.cell.step === f.step && state.cell.p === p && !size) { g.strokeStyle = "#000"; g.lineWidth = 3; g.strokeRect(padX + state.cell.j * cell + 1.5, padY + state.cell.i * cell + 1.5, cell - 3, cell - 3); }
  if (state.sel && f.token_rows && !size)  // the chosen cell's query row (blue) and key row (orange, dashed) in Q, K, V and the like
    [[state.sel.query, "#1f77b4", []], [state.sel.key, "#ff7f0e", [6, 4]]].forEach(([t, colour, dash]) => { const r = t - f.first_row; if (r < 0 || r >= R) return;
      g.strokeStyle = colour; g.lineWidth = 3; g.setLineDash(dash); g.strokeRect(padX + 1.5, padY + r * cell + 1.5, C * cell - 3, cell - 3); g.setLineDash([]); });
  const at = e => { const b = cv.getBoundingClientRect(), k = cv.width / b.width, j = Math.floor(((e.clientX - b.left) * k - padX) / cell), i = Math.floor(((e.clientY - b.top) * k - padY) / cell); return i >= 0 && j >= 0 && i < R && j < C ? { i, j } : null; };
  cv.addEventListener("mousemove", e => { const c = at(e); if (!c) { tip.style.display = "none"; return; }
    tip.textContent = f.row_labels[c.i] + " → " + f.col_labels[c.j] + ": " + fmt(v[base + c.i * C + c.j]);
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px"; tip.style.display = "block"; });
  cv.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  cv.addEventListener("click", e => { const c = at(e); if (c) onclick(c.i, c.j); });
  return cv;
}
// The colour bar of a figure: its scale in words, the ends, the masked swatch.
function colourBar(f, p) {
  const z = state.zoom, w = Math.round(240 * z), h = Math.round(16 * z), cv = el("canvas", { width: w, height: h, class: "bar" }), g = cv.getContext("2d");
  for (let x = 0; x < w; ++x) { const c = colourAt(f, p, x / (w - 1)); g.fillStyle = `rgb(${c[0]},${c[1]},${c[2]})`; g.fillRect(x, 0, 1, h); }
  const lo = f.scales[p] === "row" || f.scales[p] === "unit" ? "0" : fmt(f.lo[p]), hi = f.scales[p] === "row" ? "row max" : f.scales[p] === "unit" ? "1" : fmt(f.hi[p]);
  const box = el("div", { class: "legend" }, el("span", { text: "colour: " + f.words + "   " + lo + " " }), cv, el("span", { text: " " + hi }));
  if (f.masked || f.any_hidden) { const m = el("canvas", { width: h, height: h }); const g2 = m.getContext("2d"); g2.fillStyle = pattern(g2); g2.fillRect(0, 0, h, h); box.append(el("span", { text: "   " }), m, el("span", { text: " masked" })); }
  return box;
}
const valueTable = rows => el("table", { class: "vals" }, ...rows.map(([k, v, here]) => el("tr", here ? { class: "here" } : {}, el("td", { class: "k", text: k }), el("td", { text: v }))));
// One written-out step as the engine recorded it: title, formula, the sum term by term,
// the numbers, the note.
function writtenStep(s, k) {
  const box = el("div", { class: "xstep" }, el("div", { class: "t", text: `[${k + 1}] ${s.title}` }), el("div", { class: "formula", text: s.formula || "" }));
  for (const e of s.expansion || []) {
    const scalar = e.terms.length && flat(e.terms[0].value).length === 1;
    const vec = v => { const a = flat(v); return a.length <= 10 ? "[" + a.map(fmt).join(", ") + "]" : "[" + a.slice(0, 4).map(fmt).join(", ") + ", …, " + a.slice(-2).map(fmt).join(", ") + "]"; };
    const parts = e.terms.map(t => { const v = flat(t.value), val = scalar ? fmt(v[0]) : vec(v);
      return fmt(num(t.coef)) + "·" + (t.value_name ? "(" + t.value_name + " = " + val + ")" : scalar && v[0] < 0 ? "(" + val + ")" : val); });
    if (e.omitted) parts.splice(e.omitted_after, 0, `… (${e.omitted} more terms)`);
    box.append(el("div", { class: "xline", text: e.label + " = " + parts.join(scalar ? " + " : "\n   + ") + (scalar ? " = " : "\n   = ") + (scalar ? fmt(flat(e.result)[0]) : vec(e.result)) }));
  }
  const v = values(s);
  if (!s.expansion || v.length !== 1) box.append(el("div", { class: "xline", text: v.length === 1 ? "= " + fmt(v[0]) : v.length <= 12 ? "[" + v.map(fmt).join(", ") + "]" : "[" + v.slice(0, 6).map(fmt).join(", ") + ", …, " + v.slice(-3).map(fmt).join(", ") + "]  (" + v.length + " numbers)" }));
  if (s.note) box.append(el("div", { class: "note", text: s.note }));
  return box;
}
// A clicked cell: named, its path through the steps and its written-out steps (both from attnwalk).
function explain(f, p, i, j) {
  const s = steps[f.step], box = document.getElementById("explain"), v = values(s);
  box.replaceChildren(el("h2", { text: `${f.row_axis} ${f.query !== undefined ? f.row_labels[i] : (f.first_row + i + 1) + " “" + f.row_labels[i] + "”"}, ${f.col_axis} ${f.own_keys ? "" : (f.first_key + j + 1) + " "}“${f.col_labels[j]}”` }));
  if (f.panel_names[p]) box.append(el("div", { text: f.panel_names[p] + (f.panel_marks[p] ? " · " + f.panel_marks[p] : "") }));
  const key = cellKey(f, p, i, j), written = key && X.cells[key];
  if (written) {
    box.append(el("div", { class: "legend", text: "This cell in each step:" }),
      valueTable(written.path.map(([si, , , , x]) => [steps[si].id, fmt(num(x)), si === f.step])));
    box.append(el("h2", { text: "Written out" }));
    written.s.forEach((k, n) => box.append(writtenStep(X.steps[k], n)));
  } else {
    const row = [];
    for (let k = 0; k < f.cols; ++k) row.push([f.col_labels[k], fmt(v[f.offsets[p] + i * f.cols + k]), k === j]);
    box.append(el("div", { class: "legend", text: `Its row in ${s.id}:` }), valueTable(row));
    if (key) box.append(el("p", { class: "note", text: X.note || "This cell is not among those written out in this page." }));
  }
}
// Bertviz's head view: tokens twice, a line from query i to key j as strong as the weight; a colour a head.
const headColours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939"];
function headView(f) {
  const s = steps[f.step], R = f.rows, C = f.cols, v = values(s), panels = f.first_batch;
  if (R > 64 || !panels.length) return null;
  if (!state.heads || state.heads.length !== panels.length) state.heads = panels.map((_, h) => h === 0);
  const wrap = el("div", {}, el("h2", { text: "Head view" })), picks = el("div", { class: "heads" });
  panels.forEach((p, h) => { const box = el("input", { type: "checkbox" }); box.checked = state.heads[h];
    box.addEventListener("change", () => { state.heads[h] = box.checked; draw(); });
    picks.append(el("label", { style: `color:${headColours[h % headColours.length]};font-weight:600` }, box, " " + (f.panel_names[p] || "the weights"))); });
  const NS = "http://www.w3.org/2000/svg", z = state.zoom, row = Math.round(22 * z), H = 20 + Math.max(R, C) * row, W = Math.round(480 * z);
  const svg = document.createElementNS(NS, "svg"); svg.setAttribute("width", W); svg.setAttribute("height", H); svg.setAttribute("id", "headview");
  wrap.append(picks, svg);
  let hover = -1;
  function draw() {
    svg.replaceChildren();
    const text = (x, y, t, anchor, i) => { const e = document.createElementNS(NS, "text"); e.setAttribute("x", x); e.setAttribute("y", y); e.setAttribute("text-anchor", anchor); e.setAttribute("font-size", Math.round(15 * z)); e.textContent = t;
      if (i !== undefined) { e.style.cursor = "pointer"; e.addEventListener("mouseenter", () => { hover = i; draw(); }); e.addEventListener("mouseleave", () => { hover = -1; draw(); }); } svg.append(e); };
    const x1 = W * 0.3, x2 = W * 0.7;
    for (let i = 0; i < R; ++i) text(x1 - 6, 20 + i * row, String(f.row_labels[i]).slice(0, 14), "end", i);
    for (let j = 0; j < C; ++j) text(x2 + 6, 20 + j * row, String(f.col_labels[j]).slice(0, 14), "start");
    const shown = panels.filter((_, h) => state.heads[h]);
    panels.forEach((p, h) => { if (!state.heads[h]) return;
      const off = (shown.indexOf(p) - (shown.length - 1) / 2) * 2.5;  // each head its own track, so two heads stay two colours
      for (let i = 0; i < R; ++i) { if (hover >= 0 && hover !== i) continue;
        for (let j = 0; j < C; ++j) { const w = v[f.offsets[p] + i * C + j]; if (!Number.isFinite(w) || w < 0.02) continue;
          const l = document.createElementNS(NS, "line"); l.setAttribute("x1", x1); l.setAttribute("y1", 15 + i * row + off); l.setAttribute("x2", x2); l.setAttribute("y2", 15 + j * row + off);
          l.setAttribute("stroke", headColours[h % headColours.length]); l.setAttribute("stroke-width", 2.5); l.setAttribute("stroke-opacity", Math.min(1, w)); svg.append(l); } } });
  }
  draw();
  return wrap;
}
// The layers × heads grid of a model view: one small heatmap per head, each layer's kind
// beside it; a click opens the head.
function grid(f) {
  const H = f.grid_heads, L = f.panels / H, table = el("table", {});
  table.append(el("tr", {}, el("td", {}), ...Array.from({ length: H }, (_, h) => el("td", { class: "legend", text: "head " + (h + 1) }))));
  for (let l = 0; l < L; ++l) {
    const mark = f.panel_marks[l * H];
    const tr = el("tr", {}, el("td", { class: "legend" }, el("div", { text: "layer " + (l + 1) }), el("div", { class: "mark", text: mark || "" })));
    for (let h = 0; h < H; ++h) {
      const cv = heatmap(f, l * H + h, Math.max(1, Math.floor(72 * state.zoom / f.cols)), () => { state.panel = l * H + h; state.cell = null; show(); });
      cv.setAttribute("title", `layer ${l + 1}, head ${h + 1}${mark ? " (" + mark + ")" : ""}: click to open`);
      tr.append(el("td", {}, cv));
    }
    table.append(tr);
  }
  return table;
}
function show() {
  const s = steps[state.step], view = document.getElementById("view"), f = figs.get(state.step);
  document.querySelectorAll("nav a").forEach((a, k) => a.classList.toggle("on", k === state.step));
  view.replaceChildren(el("h1", { text: s.title || s.id }), el("div", { class: "formula", text: s.id + " · " + (s.formula || "") + " · shape " + JSON.stringify(s.shape) }));
  if (s.note) view.append(el("p", { class: "note", text: s.note }));
  if (s.data === undefined) {
    const m = s.summary || {};
    view.append(el("p", { text: "Kept as a summary (--summary):" }), valueTable(Object.keys(m).map(k => [k, typeof m[k] === "number" ? fmt(m[k]) : String(m[k])])));
    return;
  }
  const v = values(s);
  if (!f) { view.append(valueTable(v.map((x, i) => [s.labels && s.labels[i] !== undefined ? s.labels[i] : String(i + 1), fmt(x)]))); return; }
  const open = (p, i, j) => { state.cell = { step: state.step, p, i, j }; state.panel = p;
    if (f.attention) { const query = f.query !== undefined ? f.query : f.first_row + i, key = f.first_key + j;
      state.sel = { query, key, ql: f.query !== undefined ? (T.tokens || [])[query] : f.row_labels[i], kl: f.col_labels[j] }; }
    show(); explain(f, p, i, j); };
  if (f.token_rows && state.sel)
    view.append(el("p", { class: "legend", id: "rows-chosen", text: `Outlined: the row of the query “${state.sel.ql}” (blue) and of the key “${state.sel.kl}” (orange, dashed): the cell last chosen, query ${state.sel.query + 1}, key ${state.sel.key + 1}.` }));
  if (f.grid_heads) {
    view.append(grid(f));
    const p = Math.min(state.panel, f.panels - 1);
    view.append(el("h2", { text: f.panel_names[p] + (f.panel_marks[p] ? " · " + f.panel_marks[p] : "") }), colourBar(f, p), heatmap(f, p, 0, (i, j) => open(p, i, j)));
    return;
  }
  view.append(colourBar(f, f.first_batch[0] || 0));
  const panels = el("div", { class: "panels" });
  f.first_batch.slice(0, 64).forEach(p => panels.append(el("div", { class: "panel" },
    el("b", { text: f.panel_names[p] + (f.panel_marks[p] ? " · " + f.panel_marks[p] : "") }), heatmap(f, p, 0, (i, j) => open(p, i, j)))));
  view.append(panels);
  if (f.first_batch.length > 64) view.append(el("p", { text: `${f.first_batch.length - 64} more panels are in the JSON.` }));
  if (f.attention && f.weights && f.query === undefined) { const hv = headView(f); if (hv) view.append(hv); }
}
const nav = document.getElementById("steps");
nav.append(el("div", { class: "legend", text: "attnwalk " + T.command + ((T.tokens || []).length ? " · " + T.tokens.length + " tokens" : "") }));
if (X.note) nav.append(el("div", { class: "legend", text: X.note }));
steps.forEach((s, k) => nav.append(el("a", { href: "#" + s.id, class: s.kind === "parameter" ? "param" : "", text: s.id,
  title: s.title || "", onclick: e => { e.preventDefault(); state.step = k; state.panel = 0; state.cell = null; show(); } })));
document.title = "attnwalk " + T.command;
const zoom = d => { state.zoom = Math.max(0.6, Math.min(2.5, state.zoom * d)); document.documentElement.style.setProperty("--zoom", state.zoom); show(); };
document.getElementById("zoomin").addEventListener("click", () => zoom(1.25));
document.getElementById("zoomout").addEventListener("click", () => zoom(0.8));
state.step = F.start;
if (steps.length) show();
})();
</script></body></html>
)HTML";

std::string hex(Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
    return buf;
}

// A JSON string (the labels are the trace's printable text).
std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else out += c;
    }
    return out + "\"";
}
std::string number(double v) {
    if (!std::isfinite(v)) return "0";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}
template <class T, class F>
std::string array(const std::vector<T>& items, F each) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + each(items[i]);
    return out + "]";
}

const char* scale_name(ColorScale k) {
    const char* names[] = {"automatic", "range", "each", "unit", "symmetric", "row"};
    return names[static_cast<int>(k)];
}

// Each drawable step's figure (figure.hpp), and the palettes: the page draws them and decides nothing.
std::string figures_json(const Trace& trace, ColorScale asked, std::size_t& start) {
    std::string out = "{\"palette\":[";
    for (int k = 0; k < 64; ++k) out += (k ? "," : "") + quote(hex(heat_rgb(k / 63.0)));
    out += "],\"diverging\":[";
    for (int k = 0; k < 64; ++k) out += (k ? "," : "") + quote(hex(diverging_rgb(k / 63.0)));
    out += "],\"figures\":[";
    bool first = true;
    std::size_t last_square = trace.steps.size();
    start = 0;
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& s = trace.steps[i];
        if (!drawable(s)) continue;
        const Figure f = figure_of(trace, i, asked, PanelScale::together);
        if (f.attention && !s.query) last_square = i;
        if (s.id == "attention_grid") start = i + 1;  // the model view opens on its grid
        const auto str = [](const std::string& x) { return quote(x); };
        const auto whole = [](std::size_t x) { return std::to_string(x); };
        const auto real = [](float x) { return number(x); };
        std::string masked;
        for (unsigned char m : f.masked) masked += m ? '1' : '0';
        bool any_hidden = false;
        for (std::size_t p : f.first_batch())
            for (std::size_t r = 0; r < f.rows && !any_hidden; ++r)
                for (std::size_t c = 0; c < f.cols && !any_hidden; ++c) any_hidden = f.hidden(p, r, c);
        out += std::string(first ? "" : ",") + "{\"step\":" + std::to_string(i) + ",\"panels\":" + std::to_string(f.panels) +
               ",\"rows\":" + std::to_string(f.rows) + ",\"cols\":" + std::to_string(f.cols) + ",\"offsets\":" + array(f.offsets, whole) +
               ",\"first_batch\":" + array(f.first_batch(), whole) + ",\"panel_names\":" + array(f.panel_names, str) +
               ",\"panel_marks\":" + array(f.panel_marks, str) + ",\"panel_layer\":" + array(f.panel_layer, whole) +
               ",\"panel_head\":" + array(f.panel_head, whole) + ",\"row_axis\":" + quote(f.row_axis) + ",\"col_axis\":" + quote(f.col_axis) +
               ",\"row_labels\":" + array(f.row_labels, str) + ",\"col_labels\":" + array(f.col_labels, str) +
               ",\"attention\":" + (f.attention ? "true" : "false") + ",\"token_rows\":" + (f.token_rows ? "true" : "false") + ",\"weights\":" + (f.weights ? "true" : "false") +
               ",\"first_row\":" + std::to_string(s.first_row) + ",\"first_key\":" + std::to_string(s.first_key) +
               (s.axes.back() == Axis::token && !s.labels.empty() ? ",\"own_keys\":true" : "") +
               (s.query ? ",\"query\":" + std::to_string(*s.query) : "") + (f.masked.empty() ? "" : ",\"masked\":" + quote(masked)) +
               ",\"any_hidden\":" + (any_hidden ? "true" : "false") + ",\"scales\":" +
               array(f.scales, [](ColorScale k) { return quote(scale_name(k)); }) + ",\"words\":" + quote(scale_words(f.scale(0))) +
               ",\"lo\":" + array(f.lo, real) + ",\"hi\":" + array(f.hi, real) + ",\"row_top\":" +
               array(f.row_top, [&](const std::vector<float>& r) { return array(r, real); }) +
               (s.id == "attention_grid" ? ",\"grid_heads\":" + std::to_string(s.tensor.shape[1]) : "") + "}";
        first = false;
    }
    if (!start) start = last_square < trace.steps.size() ? last_square + 1 : 1;
    return out + "],\"start\":" + std::to_string(start - 1) + "}";
}

// The written-out cells: the engine's steps and the cell's path, for every (layer, head)
// the run kept, in order — the shown head first — while they fit the budget. A step that
// several cells share (a query's row through the norm, its projection, its row's softmax)
// is written once: `steps` holds each distinct step, a cell lists its steps' indices.
std::string cells_json(const Trace& trace, std::size_t budget) {
    if (!trace.explainer) return "{\"steps\":[],\"cells\":{}}";
    auto heads = trace.explainer->covered();
    std::optional<std::size_t> chosen;  // --head: that head first
    for (const auto& [name, value] : trace.params)
        if (name == "head_index")
            if (const Index* at = std::get_if<Index>(&value); at && !at->at.empty()) chosen = static_cast<std::size_t>(at->at[0]);
    if (chosen) std::stable_partition(heads.begin(), heads.end(), [&](const auto& lh) { return lh.second == *chosen; });
    const std::size_t T = trace.tokens.size();
    std::map<std::string, std::size_t> index;  // a step's JSON -> its place in `steps`
    std::string steps = "[", cells = "{";
    std::size_t used = 0, whole = 0, rows_of_last = 0;  // heads written whole; query rows of a head written in part
    bool full = false;
    for (const auto& [layer, head] : heads) {
        for (std::size_t i = 0; i < T && !full; ++i) {  // a query row at a time: what a row adds, or nothing
            std::string new_steps, new_cells;
            std::map<std::string, std::size_t> added;
            for (std::size_t j = 0; j < T; ++j) {
                const CellRef cell{layer, head, i, j};
                const std::vector<Step> explained = explain(trace, cell);
                if (explained.empty()) continue;
                std::string list = "[";
                for (const Step& step : explained) {
                    std::ostringstream one;
                    render_steps_json({step}, one, true);
                    std::string text = one.str();
                    text = text.substr(1, text.size() - 2);  // the object, without the array's brackets
                    std::size_t k;
                    if (auto at = index.find(text); at != index.end()) k = at->second;
                    else if (auto here = added.find(text); here != added.end()) k = here->second;
                    else {
                        k = index.size() + added.size();
                        added.emplace(text, k);
                        new_steps += (steps.size() + new_steps.size() > 1 ? "," : "") + text;
                    }
                    list += (list.size() > 1 ? "," : "") + std::to_string(k);
                }
                std::string path = "[";
                for (const PathEntry& e : cell_path(trace, cell))
                    path += (path.size() > 1 ? "," : "") + std::string("[") + std::to_string(e.step) + "," + std::to_string(e.panel) + "," +
                            std::to_string(e.row) + "," + std::to_string(e.col) + "," +
                            (std::isfinite(e.value) ? number(e.value) : std::string(e.value > 0 ? "\"inf\"" : e.value < 0 ? "\"-inf\"" : "\"nan\"")) + "]";
                new_cells += (cells.size() + new_cells.size() > 1 ? "," : "") +
                             quote(std::to_string(layer) + "," + std::to_string(head) + "," + std::to_string(i) + "," + std::to_string(j)) + ":{\"s\":" + list +
                             "],\"path\":" + path + "]}";
            }
            if (used + new_steps.size() + new_cells.size() > budget) {
                full = true;
                break;
            }
            used += new_steps.size() + new_cells.size();
            steps += new_steps;
            cells += new_cells;
            for (auto& [text, k] : added) index.emplace(std::move(text), k);
            rows_of_last = i + 1;
        }
        if (full) break;
        ++whole;
        rows_of_last = 0;
    }
    std::string out = "{\"steps\":" + steps + "],\"cells\":" + cells + "}";
    if (full) {
        std::string what = whole ? std::to_string(whole) + " head" + (whole == 1 ? "" : "s") : std::string();
        if (rows_of_last)
            what += (whole ? " and " : "") + std::string("query rows 1–") + std::to_string(rows_of_last) + " of " + (whole ? "the next head" : "the first head");
        if (what.empty()) what = "no head";
        out += ",\"note\":" + quote("Cells of " + what + " are written out in this page (all of them would make it too large): run with --head H (and --layer L) " +
                                    "for another head first, or --explain I,J for one cell.");
    }
    return out + "}";
}

// '<' appears only inside JSON strings: as \u003c no "</script" or "<!--" can end the element.
std::string script_safe(const std::string& json) {
    std::string safe;
    safe.reserve(json.size() + 64);
    for (char c : json) {
        if (c == '<') safe += "\\u003c";
        else safe += c;
    }
    return safe;
}

}  // namespace

std::string html_of(const Trace& trace, ColorScale scale, std::size_t explain_budget) {
    std::ostringstream json;
    render_json(trace, json, NonFinite::string, /*packed=*/true);
    std::size_t start = 0;
    const std::string figures = figures_json(trace, scale, start);
    return page_doctype + std::string(html_generator) + page_head + script_safe(json.str()) +
           "</script>\n<script type=\"application/json\" id=\"figures\">" + script_safe(figures) +
           "</script>\n<script type=\"application/json\" id=\"cells\">" + script_safe(cells_json(trace, explain_budget)) + page_tail;
}

namespace {

// Text for HTML: in an element, or in a double-quoted attribute.
std::string html_text(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace

std::string html_of(const std::vector<Section>& sections, ColorScale scale) {
    std::string parts, list;
    const std::size_t budget = (4u << 20) / std::max<std::size_t>(sections.size(), 1);  // the parts share one page's budget
    for (std::size_t n = 0; n < sections.size(); ++n) {
        const Section& s = sections[n];
        const std::string id = html_text(s.id), title = html_text(s.title);
        list += "<a href=\"#" + id + "\">" + std::to_string(n + 1) + ". " + title + "</a>\n";
        parts += "<section id=\"" + id + "\"><h2>Part " + std::to_string(n + 1) + " of " + std::to_string(sections.size()) + ": " + title +
                 "</h2>\n<p>" + html_text(s.explanation) + "</p>\n<div class=\"formula\">" + html_text(s.formula) +
                 "</div>\n<div class=\"run\">run alone: attnwalk " + html_text(s.args) + "</div>\n<iframe title=\"" + title +
                 "\" loading=\"lazy\" srcdoc=\"" + html_text(html_of(s.trace, scale, budget)) + "\"></iframe></section>\n";
    }
    return page_doctype + std::string(html_generator) +
           "<meta name=\"viewport\" content=\"width=device-width\"><title>attnwalk walkthrough</title>\n<style>"
           "body{margin:0;font:16px/1.45 system-ui,sans-serif;color:#1b1b1b}header{padding:10px 20px;border-bottom:1px solid #ccc;"
           "position:sticky;top:0;background:#fff;z-index:1}header h1{font-size:1.3em;margin:0 0 4px}nav a{margin-right:1.2em;color:#1f5fa8}"
           "section{padding:10px 20px 24px;border-bottom:2px solid #ddd;scroll-margin-top:6em}section p{max-width:60em}.formula,.run{font-family:monospace}"
           ".run{color:#555;margin:4px 0 8px}iframe{width:100%;height:86vh;border:1px solid #ccc}</style></head><body>\n"
           "<header><h1>attnwalk walkthrough: the chapter in " + std::to_string(sections.size()) + " parts</h1><nav>\n" + list +
           "</nav></header>\n" + parts + "</body></html>\n";
}

}  // namespace attnwalk::app
