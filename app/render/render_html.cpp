// --html FILE: see render_html.hpp. The page is this file's template with the --json
// document inside, its large tensors packed (render_json.hpp); every number it shows is
// read from that document.
#include "render_html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "heatmap.hpp"
#include "../output_file.hpp"
#include "render_json.hpp"

namespace attnwalk::app {

namespace {

const char* const page_doctype = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";  // then html_generator
const char* const page_head = R"HTML(<meta name="viewport" content="width=device-width">
<title>attnwalk</title>
<style>
body{margin:0;font:14px/1.4 system-ui,sans-serif;color:#222;display:grid;grid-template-columns:220px 1fr 330px;height:100vh}
nav{overflow:auto;border-right:1px solid #ddd;padding:8px}
nav a{display:block;padding:2px 4px;color:#124;text-decoration:none;border-radius:3px;font-family:monospace;font-size:12px}
nav a.on{background:#dde8ff}nav a.param{color:#888}
main{overflow:auto;padding:10px 16px}aside{overflow:auto;border-left:1px solid #ddd;padding:10px;font-size:13px}
h1{font-size:17px;margin:0 0 4px}h2{font-size:15px;margin:10px 0 4px}.formula{font-family:monospace;color:#333}
.note{color:#555;max-width:60em}.panels{display:flex;flex-wrap:wrap;gap:14px}.panel{display:inline-block}
.panel b{display:block;font-size:12px}canvas{cursor:crosshair;image-rendering:pixelated}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:2px 6px;border-radius:3px;font-size:12px;display:none}
table.vals{border-collapse:collapse;font-family:monospace;font-size:12px}table.vals td{padding:1px 6px;text-align:right}
table.vals td.k{text-align:left;color:#555}tr.here{background:#fff3c4}
.heads label{margin-right:8px;font-size:12px}.legend{font-size:12px;color:#555}
</style></head><body>
<nav id="steps"></nav><main id="view"></main><aside id="explain"><p>Click a cell of a heatmap: its path through the steps appears here.</p></aside>
<div id="tip"></div>
<script type="application/json" id="trace">)HTML";

const char* const page_tail = R"HTML(</script>
<script>
"use strict";
(function () {
const T = JSON.parse(document.getElementById("trace").textContent);
const F = JSON.parse(document.getElementById("figures").textContent);
const tokens = T.tokens || [];
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
const rank = s => (s.shape || []).length;
const tokenAxis = a => a === "token" || a === "query" || a === "key";
const isSquare = s => rank(s) >= 2 && tokenAxis(s.axes[rank(s) - 1]) && tokenAxis(s.axes[rank(s) - 2]);
const isGrid = s => s.id === "attention_grid";
const cache = new Map(), ranges = new Map();  // a step's values, and their range
// A large tensor comes packed (render_json.hpp): its float32 bits in base64, little-endian.
const unpack = b64 => { const bin = atob(b64), bytes = new Uint8Array(bin.length); for (let i = 0; i < bin.length; ++i) bytes[i] = bin.charCodeAt(i);
  const dv = new DataView(bytes.buffer), out = new Array(bytes.length >> 2); for (let i = 0; i < out.length; ++i) out[i] = dv.getFloat32(4 * i, true); return out; };
const values = s => { if (!cache.has(s)) cache.set(s, s.data && typeof s.data.f32 === "string" ? unpack(s.data.f32) : flat(s.data)); return cache.get(s); };
const steps = T.steps || [];
const state = { step: 0, panel: 0, cell: null, heads: null };

// Labels along an axis, counted from 1 where a person reads a position.
function label(s, a, i) {
  const r = rank(s), ax = s.axes[a];
  if (a === r - 1 && s.labels && i < s.labels.length) return s.labels[i];
  if (tokenAxis(ax)) { const t = i + (a === r - 1 ? (s.first_key || 0) : a === r - 2 ? (s.first_row || 0) : 0); return tokens[t] !== undefined ? tokens[t] : "t" + (t + 1); }
  if (ax === "feature") return "d" + i;
  if (ax === "rank") return (i + 1) + ".";
  return ax + " " + (i + 1);
}
// Panels: every index of the axes before the last two, named as the text view names them.
function panelNames(s) {
  const r = rank(s), lead = s.shape.slice(0, Math.max(0, r - 2)), names = [];
  const n = lead.reduce((a, b) => a * b, 1);
  for (let p = 0; p < n; ++p) {
    let q = p; const parts = [];
    for (let a = lead.length - 1; a >= 0; --a) { parts.unshift(s.axes[a] + " " + (q % lead[a] + 1)); q = Math.floor(q / lead[a]); }
    names.push(parts.join(", "));
  }
  return names;
}
// The step's colour scale as attnwalk chose it (F.scales), its colours F.palette.
function scaleOf(si, s, v, panel) {
  const info = F.scales[si] || { kind: "range", words: "min … max" }, r = rank(s), R = s.shape[r - 2], C = s.shape[r - 1];
  const ends = (from, to) => { let lo = Infinity, hi = -Infinity; for (let k = from; k < to; ++k) if (Number.isFinite(v[k])) { lo = Math.min(lo, v[k]); hi = Math.max(hi, v[k]); } return Number.isFinite(lo) ? [lo, hi] : [0, 1]; };
  // The whole step's range once per step (a model's grid asks for it from every panel).
  if (!ranges.has(s)) ranges.set(s, ends(0, v.length));
  let [lo, hi] = ranges.get(s);
  if (info.kind === "each") [lo, hi] = ends(panel * R * C, (panel + 1) * R * C);
  if (info.kind === "unit" || info.kind === "row") { lo = 0; hi = 1; }
  if (info.kind === "symmetric") { const m = Math.max(Math.abs(lo), Math.abs(hi)); lo = -m; hi = m; }
  const sc = { lo, hi: hi > lo ? hi : lo + 1, words: info.words, row: null };
  if (info.kind === "row") { sc.row = []; for (let i = 0; i < R; ++i) { const [, top] = ends((panel * R + i) * C, (panel * R + i + 1) * C); sc.row.push(top > 0 ? top : 1); } }
  return sc;
}
// A value's colour as red, green, blue: grey for −∞ and NaN.
const rgb = F.palette.map(c => [1, 3, 5].map(k => parseInt(c.slice(k, k + 2), 16))), grey = [200, 200, 200];
function colour(x, sc, i) {
  if (!Number.isFinite(x)) return grey;
  const t = sc.row ? x / sc.row[i] : (x - sc.lo) / (sc.hi - sc.lo);
  return rgb[Math.round(Math.max(0, Math.min(1, t)) * (rgb.length - 1))];
}
const tip = document.getElementById("tip");
// One heatmap: rows × cols of panel p, on a canvas; hover shows the value, a click explains it.
function heatmap(si, p, size, onclick) {
  const s = steps[si], r = rank(s), R = s.shape[r - 2], C = s.shape[r - 1], v = values(s), base = p * R * C, sc = scaleOf(si, s, v, p);
  const cell = size || Math.max(2, Math.min(26, Math.floor(520 / Math.max(R, C))));
  const pad = cell >= 10 && !size ? 70 : 0;
  const cv = el("canvas", { width: pad + C * cell, height: pad + R * cell, "data-step": s.id, "data-panel": p });
  const g = cv.getContext("2d");
  g.font = "11px sans-serif"; g.fillStyle = "#333";
  if (pad) {
    for (let i = 0; i < R; ++i) g.fillText(String(label(s, r - 2, i)).slice(0, 9), 2, pad + i * cell + cell * 0.7);
    for (let j = 0; j < C; ++j) { g.save(); g.translate(pad + j * cell + cell * 0.7, pad - 4); g.rotate(-Math.PI / 2); g.fillText(String(label(s, r - 1, j)).slice(0, 9), 0, 0); g.restore(); }
  }
  // One pixel a cell, drawn enlarged without smoothing: a model's grid has 12 × 12 × 40 × 40 cells.
  const img = new ImageData(C, R), d = img.data;
  for (let i = 0, o = 0; i < R; ++i) for (let j = 0; j < C; ++j, o += 4) { const c = colour(v[base + i * C + j], sc, i); d[o] = c[0]; d[o + 1] = c[1]; d[o + 2] = c[2]; d[o + 3] = 255; }
  const px = document.createElement("canvas"); px.width = C; px.height = R; px.getContext("2d").putImageData(img, 0, 0);
  g.imageSmoothingEnabled = false; g.drawImage(px, pad, pad, C * cell, R * cell);
  if (state.cell && state.cell.p === p && state.cell.i < R && state.cell.j < C && !size) { g.strokeStyle = "#000"; g.lineWidth = 2; g.strokeRect(pad + state.cell.j * cell + 1, pad + state.cell.i * cell + 1, cell - 2, cell - 2); }
  const at = e => { const b = cv.getBoundingClientRect(), j = Math.floor((e.clientX - b.left - pad) / cell), i = Math.floor((e.clientY - b.top - pad) / cell); return i >= 0 && j >= 0 && i < R && j < C ? { i, j } : null; };
  cv.addEventListener("mousemove", e => { const c = at(e); if (!c) { tip.style.display = "none"; return; }
    tip.textContent = label(s, r - 2, c.i) + " → " + label(s, r - 1, c.j) + ": " + fmt(v[base + c.i * C + c.j]);
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px"; tip.style.display = "block"; });
  cv.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  cv.addEventListener("click", e => { const c = at(e); if (c) onclick(c.i, c.j); });
  return cv;
}
function valueTable(rows) {
  return el("table", { class: "vals" }, ...rows.map(([k, v, here]) => el("tr", here ? { class: "here" } : {}, el("td", { class: "k", text: k }), el("td", { text: v }))));
}
// The path of one cell: its value in every token×token step of the same size, its row,
// the query and the key it came from (as the trace holds them).
function explain(si, p, i, j) {
  const s = steps[si], r = rank(s), R = s.shape[r - 2], C = s.shape[r - 1], box = document.getElementById("explain");
  box.replaceChildren(el("h2", { text: `Query ${(s.first_row || 0) + i + 1} “${label(s, r - 2, i)}”, key ${(s.first_key || 0) + j + 1} “${label(s, r - 1, j)}”` }));
  const names = panelNames(s);
  if (names.length > 1) box.append(el("div", { text: names[p] }));
  const path = [];
  for (const t of steps) {
    if (!isSquare(t) || t.data === undefined) continue;
    const rt = rank(t);
    if (t.shape[rt - 2] !== R || t.shape[rt - 1] !== C) continue;
    const n = t.shape.slice(0, rt - 2).reduce((a, b) => a * b, 1), q = n === names.length ? p : n === 1 ? 0 : -1;
    if (q < 0) continue;
    path.push([t.id, fmt(values(t)[q * R * C + i * C + j]), t === s]);
  }
  box.append(el("div", { class: "legend", text: "This cell in each step:" }), valueTable(path));
  const v = values(s), row = [];
  for (let k = 0; k < C; ++k) row.push([label(s, r - 1, k), fmt(v[p * R * C + i * C + k]), k === j]);
  box.append(el("div", { class: "legend", text: `Its row in ${s.id}:` }), valueTable(row));
  if (s.row_sum !== undefined) box.append(el("div", { text: "row sum " + fmt(flat(s.row_sum)[p * R + i]) }));
  // the query and key of this head (a head's columns of Q and K, or its row of the split
  // heads; with grouped-query attention the key head its group reads), not for the grid
  const head = rank(s) === 3 && s.axes[0] === "head" ? p : names.length === 1 ? 0 : -1;
  const vec = (ids, t, share) => { for (const id of ids) { const q = steps.find(x => x.id === id && x.data !== undefined); if (!q) continue;
      const rq = rank(q), w = values(q), rows = q.shape[rq - 2], cols = q.shape[rq - 1];
      if (t >= rows) continue;
      if (rq === 3) { const h = Math.floor(head * q.shape[0] / share); return { id, v: w.slice((h * rows + t) * cols, (h * rows + t + 1) * cols) }; }
      const d = cols / share; if (!Number.isInteger(d)) continue;
      return { id, v: w.slice(t * cols, (t + 1) * cols), d }; } return null; };
  if (head >= 0 && !isGrid(s)) {
    const H = Math.max(1, T.params && T.params.heads ? T.params.heads : names.length);
    const qv = vec(["queries_rotated", "queries_split", "queries"], (s.first_row || 0) + i, H);
    const kv = vec(["keys_rotated", "keys_split", "keys"], (s.first_key || 0) + j, H);
    if (qv && kv) {
      const dh = qv.d || qv.v.length, q = qv.d ? qv.v.slice(head * dh, (head + 1) * dh) : qv.v;
      const groups = kv.d ? kv.v.length / dh : 1, g = Math.floor(head * groups / H), k = kv.d ? kv.v.slice(g * dh, (g + 1) * dh) : kv.v;
      if (q.length === k.length && q.length)
        box.append(el("div", { class: "legend", text: `The score is their dot product, q·k (${qv.id} · ${kv.id}${H > 1 ? ", head " + (head + 1) : ""}):` }),
          valueTable(q.map((x, c) => ["c" + c, fmt(x) + " · " + fmt(k[c])])));
    }
  }
}
// Bertviz's head view: tokens twice, a line from query i to key j as strong as the weight.
function headView(s) {
  const r = rank(s), R = s.shape[r - 2], C = s.shape[r - 1], names = panelNames(s), v = values(s);
  if (R > 64 || !names.length) return null;
  if (!state.heads || state.heads.length !== names.length) state.heads = names.map((_, h) => h === 0);
  const colours = names.map((_, h) => `hsl(${(h * 137) % 360},70%,45%)`);
  const wrap = el("div", {}, el("h2", { text: "Head view" }));
  const picks = el("div", { class: "heads" });
  names.forEach((n, h) => { const box = el("input", { type: "checkbox" }); box.checked = state.heads[h];
    box.addEventListener("change", () => { state.heads[h] = box.checked; draw(); });
    picks.append(el("label", { style: `color:${colours[h]}` }, box, n || "the weights")); });
  const NS = "http://www.w3.org/2000/svg", row = 18, H = 20 + Math.max(R, C) * row;
  const svg = document.createElementNS(NS, "svg"); svg.setAttribute("width", 420); svg.setAttribute("height", H); svg.setAttribute("id", "headview");
  wrap.append(picks, svg);
  let hover = -1;
  function draw() {
    svg.replaceChildren();
    const text = (x, y, t, anchor, i) => { const e = document.createElementNS(NS, "text"); e.setAttribute("x", x); e.setAttribute("y", y); e.setAttribute("text-anchor", anchor); e.setAttribute("font-size", 12); e.textContent = t;
      if (i !== undefined) { e.style.cursor = "pointer"; e.addEventListener("mouseenter", () => { hover = i; draw(); }); e.addEventListener("mouseleave", () => { hover = -1; draw(); }); } svg.append(e); };
    for (let i = 0; i < R; ++i) text(120, 20 + i * row, String(label(s, r - 2, i)).slice(0, 14), "end", i);
    for (let j = 0; j < C; ++j) text(300, 20 + j * row, String(label(s, r - 1, j)).slice(0, 14), "start");
    names.forEach((_, h) => { if (!state.heads[h]) return;
      for (let i = 0; i < R; ++i) { if (hover >= 0 && hover !== i) continue;
        for (let j = 0; j < C; ++j) { const w = v[h * R * C + i * C + j]; if (!Number.isFinite(w) || w <= 0) continue;
          const a = Math.min(1, w); if (a < 0.02) continue;
          const l = document.createElementNS(NS, "line"); l.setAttribute("x1", 126); l.setAttribute("y1", 16 + i * row); l.setAttribute("x2", 294); l.setAttribute("y2", 16 + j * row);
          l.setAttribute("stroke", colours[h]); l.setAttribute("stroke-width", 2); l.setAttribute("stroke-opacity", a); svg.append(l); } } });
  }
  draw();
  return wrap;
}
// The layers × heads grid of a model view: one small heatmap per head; a click opens it.
function grid(si) {
  const s = steps[si];
  const [L, H] = s.shape, table = el("table", {});
  table.append(el("tr", {}, el("td", {}), ...Array.from({ length: H }, (_, h) => el("td", { class: "legend", text: "head " + (h + 1) }))));
  for (let l = 0; l < L; ++l) {
    const tr = el("tr", {}, el("td", { class: "legend", text: "layer " + (l + 1) }));
    for (let h = 0; h < H; ++h) {
      const cv = heatmap(si, l * H + h, Math.max(1, Math.floor(60 / s.shape[3])), () => { state.panel = l * H + h; state.cell = null; show(); });
      cv.setAttribute("title", `layer ${l + 1}, head ${h + 1}: click to open`);
      tr.append(el("td", {}, cv));
    }
    table.append(tr);
  }
  return table;
}
function show() {
  const s = steps[state.step], view = document.getElementById("view");
  document.querySelectorAll("nav a").forEach((a, k) => a.classList.toggle("on", k === state.step));
  view.replaceChildren(el("h1", { text: s.title || s.id }), el("div", { class: "formula", text: s.id + " · " + (s.formula || "") + " · shape " + JSON.stringify(s.shape) }));
  if (s.note) view.append(el("p", { class: "note", text: s.note }));
  if (s.data === undefined) {
    const m = s.summary || {};
    view.append(el("p", { text: "Kept as a summary (--summary):" }), valueTable(Object.keys(m).map(k => [k, typeof m[k] === "number" ? fmt(m[k]) : String(m[k])])));
    return;
  }
  const r = rank(s), v = values(s), si = state.step;
  if (r < 2) { view.append(valueTable(v.map((x, i) => [r ? String(label(s, 0, i)) : "value", fmt(x)]))); return; }
  const sc = scaleOf(si, s, v, 0);
  view.append(el("div", { class: "legend", text: "colour scale: " + sc.words + (sc.row ? "" : " (" + fmt(sc.lo) + " … " + fmt(sc.hi) + ")") + "; grey: −∞ or NaN" }));
  const names = panelNames(s);
  if (isGrid(s)) {
    view.append(grid(si));
    const p = Math.min(state.panel, names.length - 1);
    view.append(el("h2", { text: names[p] }), heatmap(si, p, 0, (i, j) => { state.cell = { p, i, j }; explain(si, p, i, j); show(); }));
    return;
  }
  const panels = el("div", { class: "panels" });
  names.slice(0, 64).forEach((n, p) => panels.append(el("div", { class: "panel" }, el("b", { text: n }),
    heatmap(si, p, 0, (i, j) => { state.cell = { p, i, j }; state.panel = p; if (isSquare(s)) explain(si, p, i, j); show(); }))));
  view.append(panels);
  if (names.length > 64) view.append(el("p", { text: `${names.length - 64} more panels are in the JSON.` }));
  if (isSquare(s) && (F.scales[si] || {}).kind !== "range" && s.row_sum !== undefined) { const hv = headView(s); if (hv) view.append(hv); }
}
const nav = document.getElementById("steps");
nav.append(el("div", { class: "legend", text: "attnwalk " + T.command + (tokens.length ? " · " + tokens.length + " tokens" : "") }));
steps.forEach((s, k) => nav.append(el("a", { href: "#" + s.id, class: s.kind === "parameter" ? "param" : "", text: s.id,
  title: s.title || "", onclick: e => { e.preventDefault(); state.step = k; state.panel = 0; state.cell = null; show(); } })));
document.title = "attnwalk " + T.command;
const first = steps.findIndex(s => s.id === "attention_grid");
const weights = steps.map((s, k) => [s, k]).filter(([s]) => isSquare(s) && s.data !== undefined).map(([, k]) => k);
state.step = first >= 0 ? first : weights.length ? weights[weights.length - 1] : 0;
if (steps.length) show();
})();
</script></body></html>
)HTML";

// Each step's colour scale, chosen as the SVG and the terminal choose it (heatmap.hpp), and
// the colour map itself: the page draws with both and decides neither.
std::string figures_json(const Trace& trace, ColorScale asked) {
    std::string out = "{\"palette\":[";
    for (int k = 0; k < 64; ++k) {
        const Rgb c = heat_rgb(k / 63.0);
        char buf[16];
        std::snprintf(buf, sizeof buf, "\"#%02x%02x%02x\"", c.r, c.g, c.b);
        out += (k ? "," : "") + std::string(buf);
    }
    out += "],\"scales\":[";
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& s = trace.steps[i];
        out += i ? "," : "";
        const std::size_t rank = s.tensor.shape.size();
        if (rank < 2 || s.tensor.data.empty()) {
            out += "null";
            continue;
        }
        float lo = 0.0f, hi = 0.0f;
        bool any = false;
        for (float v : s.tensor.data)
            if (std::isfinite(v)) {
                lo = any ? std::min(lo, v) : v;
                hi = any ? std::max(hi, v) : v;
                any = true;
            }
        const bool weights = !s.row_sum.data.empty() || s.id == "attention_grid";
        const std::size_t longest = std::max(s.tensor.shape[rank - 1], s.tensor.shape[rank - 2]);
        const ColorScale kind = asked == ColorScale::automatic ? automatic_scale(weights, longest, any, lo, hi) : asked;
        const char* names[] = {"automatic", "range", "each", "unit", "symmetric", "row"};
        out += std::string("{\"kind\":\"") + names[static_cast<int>(kind)] + "\",\"words\":\"" + scale_words(kind) + "\"}";
    }
    return out + "]}";
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

std::string html_of(const Trace& trace, ColorScale scale) {
    std::ostringstream json;
    render_json(trace, json, NonFinite::string, /*packed=*/true);
    return page_doctype + std::string(html_generator) + page_head + script_safe(json.str()) +
           "</script>\n<script type=\"application/json\" id=\"figures\">" + script_safe(figures_json(trace, scale)) + page_tail;
}

}  // namespace attnwalk::app
