// The page's template (render_html.cpp fills it): its style, its layout, and the script
// that draws what attnwalk wrote into it and handles input. The script computes nothing of
// a figure: every number arrives written, every cell with its colour's index.
#include "page_template.hpp"

namespace attnwalk::app {

const char* const page_doctype = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";  // then html_generator
const char* const page_head = R"HTML(<meta name="viewport" content="width=device-width">
<title>attnwalk</title>
<style>
:root{--zoom:1}
body{margin:0;font:calc(16px*var(--zoom))/1.45 system-ui,sans-serif;color:#1b1b1b;display:grid;grid-template-columns:auto minmax(0,1fr) auto;height:100vh}
nav{overflow:auto;border-right:1px solid #ddd;padding:8px;width:min(15em,19vw);box-sizing:border-box}
nav a{display:block;padding:2px 4px;color:#124;text-decoration:none;border-radius:3px;font-family:monospace;font-size:0.95em;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
nav a.on{background:#dde8ff}nav a.param{color:#888}
main{overflow:auto;scrollbar-gutter:stable;padding:10px 16px;min-width:0}
aside{overflow:auto;border-left:1px solid #ddd;padding:10px;font-size:0.95em;width:min(31em,38vw);box-sizing:border-box;position:relative}
body.closed aside{display:none}aside .close{position:sticky;top:0;float:right;font-size:1em}.hint{color:#555;font-style:italic;margin:4px 0}
h1{font-size:1.25em;margin:0 0 4px}h2{font-size:1.08em;margin:12px 0 4px}.formula{font-family:monospace;color:#333}
.note{color:#444;max-width:60em}.panels{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}.panel{display:inline-block}
.panel b{display:block}canvas{cursor:crosshair}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:2px 6px;border-radius:3px;display:none}
table.vals{border-collapse:collapse;font-family:monospace}table.vals td{padding:1px 6px;text-align:right}
table.vals td.k{text-align:left;color:#555}tr.here{background:#fff3c4}
.heads label{margin-right:10px}.legend{color:#444}.legend span{white-space:pre-wrap}.legend canvas{vertical-align:middle}.mark{color:#7a3e00;font-size:0.9em}
.meaning{color:#7a3e00;margin:4px 0}table.vals div.m{text-align:left;color:#7a3e00;font-family:system-ui,sans-serif;font-size:0.85em;padding-left:1em}
.glance{display:flex;flex-wrap:wrap;gap:calc(10px*var(--zoom));align-items:flex-start;margin:6px 0 12px}.glance figure{margin:0;width:min-content;text-align:center;font-size:0.8em;color:#444}.glance canvas{display:block}
.zoom{position:fixed;right:8px;bottom:8px;background:#fff;border:1px solid #ccc;border-radius:4px;padding:2px}
.zoom button{font-size:1em;min-width:2.2em}
.xstep{margin:8px 0;padding-top:4px;border-top:1px solid #eee}.xstep .t{font-weight:600}
.xline{font-family:monospace;white-space:pre-wrap;word-break:break-word}aside .xline{font-size:0.8em;white-space:pre;overflow-x:auto}.numbers{font-family:monospace;font-size:0.85em;white-space:pre;overflow-x:auto}
</style></head><body class="closed">
<nav id="steps"></nav><main id="view"></main><aside id="explain"></aside>
<div id="tip"></div><div class="zoom"><button id="zoomout" title="smaller">A−</button> <button id="zoomin" title="larger (a projector)">A+</button></div>
<script type="application/json" id="trace">)HTML";

const char* const page_tail = R"HTML(</script>
<script>
"use strict";
// Draws what attnwalk wrote and handles input: every number arrives written (the text
// view's rule), every cell with its colour's index, every label and name spelled out.
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
const steps = T.steps || [], tokens = T.tokens || [];
const state = { step: 0, panel: 0, cell: null, zoom: 1, sel: null };  // sel: the attention cell last chosen, kept across steps
const rgb = F.colours.map(hex => [1, 3, 5].map(k => parseInt(hex.slice(k, k + 2), 16)));
const css = c => `rgb(${c[0]},${c[1]},${c[2]})`;
const tip = document.getElementById("tip");
let hatch = null;
function pattern(g) {
  if (hatch) return g.createPattern(hatch, "repeat");
  hatch = document.createElement("canvas"); hatch.width = hatch.height = 8;
  const h = hatch.getContext("2d"); h.fillStyle = "#f2f2f2"; h.fillRect(0, 0, 8, 8); h.strokeStyle = "#a8a8a8"; h.lineWidth = 2;
  h.beginPath(); h.moveTo(0, 8); h.lineTo(8, 0); h.moveTo(-2, 2); h.lineTo(2, -2); h.moveTo(6, 10); h.lineTo(10, 6); h.stroke();
  return g.createPattern(hatch, "repeat");
}
// The width a drawing may take: the main column's, inside its padding. The page fits the
// window: a heatmap's cells are as large as A+/A− ask while its columns fit this width.
function room() {
  const m = document.getElementById("view"), cs = getComputedStyle(m);
  return Math.max(120, Math.floor(m.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)) - 2);
}
// One panel of a figure on a canvas: labels, axis names, cells (values in them when they
// are big enough), masked cells hatched, the cursor. `size`: a thumbnail's cell size.
// A label cut to n characters ends in "…", as the text view's and the SVG's do.
const cut = (s, n) => { const c = [...s]; return c.length > n ? c.slice(0, n - 1).join("") + "…" : s; };
function heatmap(f, p, size, onclick) {
  const R = f.rows, C = f.cols, cells = f.cells[p], z = state.zoom, width = room();
  const fs = Math.round(14 * z), longest = Math.min(12, Math.max(...f.row_labels.map(l => l.length), ...f.col_labels.map(l => l.length)));
  const margin = Math.round(fs * 0.62 * longest + fs * 2.2), tail = Math.round(fs * 0.31 * longest);  // the row labels' margin; the last column's label past the cells
  const fit = w => Math.max(3, Math.min(Math.round(54 * z), Math.floor(640 * z / Math.max(R, C)), Math.floor(w / C)));
  let cell = size || fit(width - margin - tail);
  const labels = !size && cell >= 12;
  if (!size && !labels) cell = fit(width);  // too narrow for labels: the cells alone fit the width
  const padX = labels ? margin : 0, padY = labels ? margin : 0, right = labels ? Math.max(0, tail - Math.floor(cell / 2)) : 0;
  const cv = el("canvas", { width: padX + C * cell + right, height: padY + R * cell, "data-step": steps[f.step].id, "data-panel": p, "data-cell": cell, "data-pad-x": padX, "data-pad-y": padY, "data-rows": R, "data-cols": C });
  const g = cv.getContext("2d");
  g.font = fs + "px system-ui,sans-serif"; g.fillStyle = "#222"; g.textBaseline = "middle";
  if (labels) {
    for (let i = 0; i < R; ++i) g.fillText(cut(f.row_labels[i], 12), fs * 1.6, padY + (i + 0.5) * cell);
    for (let j = 0; j < C; ++j) { g.save(); g.translate(padX + (j + 0.5) * cell, padY - 6); g.rotate(-Math.PI / 3); g.fillText(cut(f.col_labels[j], 12), 0, 0); g.restore(); }
    g.fillStyle = "#555";  // the axis names: rows, columns
    g.save(); g.translate(fs * 0.7, padY + R * cell / 2); g.rotate(-Math.PI / 2); g.textAlign = "center"; g.fillText("← " + f.row_axis, 0, 0); g.restore();
    g.textAlign = "left"; g.fillText(f.col_axis + " →", padX, fs * 0.8);
  }
  g.fillStyle = pattern(g); g.fillRect(padX, padY, C * cell, R * cell);  // the masked cells: the pattern behind the drawn ones
  for (let i = 0; i < R; ++i) for (let j = 0; j < C; ++j) {
    const k = i * C + j, colour = cells.colour[k];
    if (colour < 0) continue;  // masked
    const c = rgb[colour];
    g.fillStyle = css(c); g.fillRect(padX + j * cell, padY + i * cell, cell, cell);
    if (cell >= 36 * z && !size) {  // the number in its cell, as small as it must be to fit, dark or light on its colour
      const text = cells.text[k];
      g.fillStyle = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] > 140 ? "#111" : "#fff"; g.textAlign = "center";
      g.font = Math.min(Math.round(cell * 0.27), Math.floor((cell - 4) / (0.58 * text.length))) + "px system-ui,sans-serif";
      g.fillText(text, padX + (j + 0.5) * cell, padY + (i + 0.5) * cell);
      g.textAlign = "left";
    }
  }
  if (state.cell && state.cell.step === f.step && state.cell.p === p && !size) { g.strokeStyle = "#000"; g.lineWidth = 3; g.strokeRect(padX + state.cell.j * cell + 1.5, padY + state.cell.i * cell + 1.5, cell - 3, cell - 3); }
  if (state.sel && f.token_at && !size)  // the chosen cell's query row (blue) and key row (orange, dashed) in Q, K, V and the like
    [[state.sel.query, "#1f77b4", []], [state.sel.key, "#ff7f0e", [6, 4]]].forEach(([t, colour, dash]) => { const r = f.token_at.indexOf(t); if (r < 0) return;
      g.strokeStyle = colour; g.lineWidth = 3; g.setLineDash(dash); g.strokeRect(padX + 1.5, padY + r * cell + 1.5, C * cell - 3, cell - 3); g.setLineDash([]); });
  const at = e => { const b = cv.getBoundingClientRect(), k = cv.width / b.width, j = Math.floor(((e.clientX - b.left) * k - padX) / cell), i = Math.floor(((e.clientY - b.top) * k - padY) / cell); return i >= 0 && j >= 0 && i < R && j < C ? { i, j } : null; };
  cv.addEventListener("mousemove", e => { const c = at(e); if (!c) { tip.style.display = "none"; return; }
    tip.textContent = f.row_labels[c.i] + " → " + f.col_labels[c.j] + ": " + cells.text[c.i * C + c.j];
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px"; tip.style.display = "block"; });
  cv.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  cv.addEventListener("click", e => { const c = at(e); if (c) onclick(c.i, c.j); });
  return cv;
}
// The colour bar of a panel: its scale in words, the ends, the masked swatch.
function colourBar(f, p) {
  const lg = f.legend[p], z = state.zoom, w = Math.min(Math.round(240 * z), Math.floor(room() * 0.3)), h = Math.round(16 * z), cv = el("canvas", { width: w, height: h, class: "bar" }), g = cv.getContext("2d");
  lg.bar.forEach((c, k) => { g.fillStyle = css(rgb[c]); g.fillRect(Math.floor(k * w / lg.bar.length), 0, Math.ceil(w / lg.bar.length), h); });
  const box = el("div", { class: "legend" }, el("span", { text: "colour: " + lg.words + "   " + lg.lo + " " }), cv, el("span", { text: " " + lg.hi }));
  if (f.masked) { const m = el("canvas", { width: h, height: h }); const g2 = m.getContext("2d"); g2.fillStyle = pattern(g2); g2.fillRect(0, 0, h, h); box.append(el("span", { text: "   " }), el("span", {}, m, " masked")); }
  return box;
}
// A step's legend, where its values are drawn: what they mean where a number alone does not say (a mask's 1 and 0).
const meaning = f => el("p", { class: "meaning", id: "meaning", text: f.meaning });
const valueTable = rows => el("table", { class: "vals" }, ...rows.flatMap(([k, v, here, m]) => [el("tr", here ? { class: "here" } : {}, el("td", { class: "k", text: k }), el("td", { text: v })),
  ...(m ? [el("tr", { class: "m" }, el("td", { colspan: 2 }, el("div", { class: "m", text: m })))] : [])]));  // a value's meaning (a mask's 1), under it
// One written-out step: its title, formula, its numbers as the text view prints them, its note.
function writtenStep(s, k) {
  const box = el("div", { class: "xstep" }, el("div", { class: "t", text: `[${k + 1}] ${s.title}` }), el("div", { class: "formula", text: s.formula }));
  box.append(el("div", { class: "xline", text: s.text }));
  if (s.note) box.append(el("div", { class: "note", text: s.note }));
  return box;
}
// The written-out lines keep their columns: where a line is wider than the panel, its font is
// made smaller until it fits (not below 9 px), rather than scrolling sideways.
function fitLines() {
  document.querySelectorAll("aside .xline").forEach(x => { x.style.fontSize = "";
    const least = 9 / parseFloat(getComputedStyle(x.parentNode).fontSize);
    for (let em = 0.8; x.scrollWidth > x.clientWidth + 1 && em > least;) { em = Math.max(least, em * 0.97 * x.clientWidth / x.scrollWidth); x.style.fontSize = em + "em"; } });
}
// A clicked cell: named, its path through the steps and its written-out steps (all from attnwalk).
function explain(f, p, i, j) {
  const box = document.getElementById("explain"), cells = f.cells[p], w = cells.written ? cells.written[i * f.cols + j] : -1;
  box.replaceChildren(el("button", { class: "close", title: "close this panel (a click on a cell opens it again)", text: "×", onclick: () => { document.body.classList.add("closed"); show(); } }),
    el("h2", { text: f.row_names[i] + ", " + f.col_names[j] }));
  if (f.titles[p]) box.append(el("div", { text: f.titles[p] }));
  if (w >= 0) {
    const written = X.cells[w];
    if (written.path.length) box.append(el("div", { class: "legend", text: "This cell in each step:" }),
      valueTable(written.path.map(([si, text]) => [steps[si].id, text, si === f.step, F.steps[si].meaning])));
    box.append(el("h2", { text: "Written out" }));
    written.s.forEach((k, n) => box.append(writtenStep(X.steps[k], n)));
    fitLines();
  } else {
    box.append(el("div", { class: "legend", text: `Its row in ${steps[f.step].id}:` }),
      valueTable(f.col_labels.map((label, k) => [label, cells.text[i * f.cols + k], k === j])));
    if (f.attention) box.append(el("p", { class: "note", text: X.note || "This cell is not among those written out in this page." }));
  }
}
// Bertviz's head view: tokens twice, a line from query i to key j as strong as the weight; a colour a head.
const headColours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939"];
function headView(f) {
  const R = f.rows, C = f.cols, panels = f.drawn;
  if (!state.heads || state.heads.length !== panels.length) state.heads = panels.map((_, h) => h === 0);
  const wrap = el("div", {}, el("h2", { text: "Head view" })), picks = el("div", { class: "heads" });
  panels.forEach((p, h) => { const box = el("input", { type: "checkbox" }); box.checked = state.heads[h];
    box.addEventListener("change", () => { state.heads[h] = box.checked; draw(); });
    picks.append(el("label", { style: `color:${headColours[h % headColours.length]};font-weight:600` }, box, " " + (f.titles[p] || "the weights"))); });
  const NS = "http://www.w3.org/2000/svg", z = state.zoom, row = Math.round(22 * z), H = 20 + Math.max(R, C) * row, W = Math.min(Math.round(480 * z), room());
  const svg = document.createElementNS(NS, "svg"); svg.setAttribute("width", W); svg.setAttribute("height", H); svg.setAttribute("id", "headview");
  wrap.append(picks, svg);
  let hover = -1;
  function draw() {
    svg.replaceChildren();
    const text = (x, y, t, anchor, i) => { const e = document.createElementNS(NS, "text"); e.setAttribute("x", x); e.setAttribute("y", y); e.setAttribute("text-anchor", anchor); e.setAttribute("font-size", Math.round(15 * z)); e.textContent = t;
      if (i !== undefined) { e.style.cursor = "pointer"; e.addEventListener("mouseenter", () => { hover = i; draw(); }); e.addEventListener("mouseleave", () => { hover = -1; draw(); }); } svg.append(e); };
    const x1 = W * 0.3, x2 = W * 0.7;
    for (let i = 0; i < R; ++i) text(x1 - 6, 20 + i * row, cut(f.row_labels[i], 14), "end", i);
    for (let j = 0; j < C; ++j) text(x2 + 6, 20 + j * row, cut(f.col_labels[j], 14), "start");
    const shown = panels.filter((_, h) => state.heads[h]);
    panels.forEach((p, h) => { if (!state.heads[h]) return;
      const off = (shown.indexOf(p) - (shown.length - 1) / 2) * 2.5;  // each head its own track, so two heads stay two colours
      for (const [i, j, opacity] of f.head_view[p]) { if (hover >= 0 && hover !== i) continue;
        const l = document.createElementNS(NS, "line"); l.setAttribute("x1", x1); l.setAttribute("y1", 15 + i * row + off); l.setAttribute("x2", x2); l.setAttribute("y2", 15 + j * row + off);
        l.setAttribute("stroke", headColours[h % headColours.length]); l.setAttribute("stroke-width", 2.5); l.setAttribute("stroke-opacity", opacity); svg.append(l); } });
  }
  draw();
  return wrap;
}
// Every head at a glance, as bertviz's head view sets them side by side: each drawn panel a
// small heatmap, as many in a row as the width holds at 3 px a cell or more; a click on a
// cell opens it as in the panel's own heatmap.
function glance(f, open) {
  const n = f.drawn.length, C = f.cols, width = room(), gap = Math.round(10 * state.zoom);
  let per = n, cell = Math.floor((width - (per - 1) * gap) / (per * C));
  if (cell < 3) { per = Math.max(1, Math.floor((width + gap) / (3 * C + gap))); cell = Math.max(1, Math.floor((width - (per - 1) * gap) / (per * C))); }
  cell = Math.max(1, Math.min(cell, Math.floor(96 * state.zoom / C) || 1));  // small: about 96 px a head at most
  const box = el("div", { class: "glance", id: "glance" });
  f.drawn.forEach(p => { const cv = heatmap(f, p, cell, (i, j) => open(p, i, j)); cv.classList.add("thumb"); cv.setAttribute("title", (f.titles[p] || "") + ": click a cell to write it out");
    box.append(el("figure", {}, cv, el("figcaption", { text: f.names[p] || "" }))); });
  return box;
}
// The layers × heads grid of a model view: one small heatmap per head, each layer's kind
// beside it; a click opens the head. `names`: the width of the column of layer names,
// measured once the grid is drawn (0: a guess), so that the heads fit what is left.
function grid(f, names) {
  const H = f.grid.head_names.length, table = el("table", { id: "grid" });
  const each = Math.min(Math.round(72 * state.zoom), Math.floor((room() - (names || Math.round(112 * state.zoom)) - 6 * (H + 1)) / H));
  table.append(el("tr", {}, el("td", {}), ...f.grid.head_names.map(name => el("td", { class: "legend", text: name }))));
  f.grid.layers.forEach(([name, mark], l) => {
    const tr = el("tr", {}, el("td", { class: "legend" }, el("div", { text: name }), el("div", { class: "mark", text: mark })));
    for (let h = 0; h < H; ++h) {
      const p = l * H + h, cv = heatmap(f, p, Math.max(1, Math.floor(each / f.cols)), () => { state.panel = p; state.cell = null; show(); });
      cv.setAttribute("title", f.titles[p] + ": click to open");
      tr.append(el("td", {}, cv));
    }
    table.append(tr);
  });
  return table;
}
function show() {
  const s = steps[state.step], view = document.getElementById("view"), f = F.steps[state.step];
  document.querySelectorAll("nav a").forEach((a, k) => a.classList.toggle("on", k === state.step));
  view.replaceChildren(el("h1", { text: s.title || s.id }), el("div", { class: "formula", text: s.id + " · " + (s.formula || "") + " · shape " + JSON.stringify(s.shape) }));
  if (s.note) view.append(el("p", { class: "note", text: s.note }));
  if (f.text !== undefined) { if (f.meaning) view.append(meaning(f)); view.append(el("div", { class: "numbers", text: f.text })); return; }  // the text view's table, aligned
  if (document.body.classList.contains("closed"))  // the explanation's panel opens on a click, and the heatmaps make room for it
    view.append(el("p", { class: "hint", id: "hint", text: "Click a cell: it is written out in a panel beside the heatmaps, with its value in every step." }));
  const open = (p, i, j) => { state.cell = { step: state.step, p, i, j }; state.panel = p;
    if (f.attention) { const query = f.query_at[i], key = f.key_at[j]; state.sel = { query, key, ql: tokens[query], kl: tokens[key] }; }
    document.body.classList.remove("closed"); show(); explain(f, p, i, j); };
  if (f.token_at && state.sel)
    view.append(el("p", { class: "legend", id: "rows-chosen", text: `Outlined: the row of the query “${state.sel.ql}” (blue) and of the key “${state.sel.kl}” (orange, dashed): the cell last chosen, query ${state.sel.query + 1}, key ${state.sel.key + 1}.` }));
  if (f.grid) {
    const table = grid(f, 0);
    view.append(table);
    if (table.offsetWidth > room()) table.replaceWith(grid(f, table.rows[0].cells[0].offsetWidth));  // the layer names measured
    const p = Math.min(state.panel, f.panels - 1);
    view.append(el("h2", { text: f.titles[p] }), colourBar(f, p));
    if (f.meaning) view.append(meaning(f));
    view.append(heatmap(f, p, 0, (i, j) => open(p, i, j)));
    return;
  }
  view.append(colourBar(f, f.drawn[0] || 0));
  if (f.meaning) view.append(meaning(f));
  if (f.drawn.length > 1) view.append(el("h2", { text: "At a glance: every panel small, side by side" }), glance(f, open));
  const panels = el("div", { class: "panels" });
  f.drawn.slice(0, 64).forEach(p => panels.append(el("div", { class: "panel" }, el("b", { text: f.titles[p] }), heatmap(f, p, 0, (i, j) => open(p, i, j)))));
  view.append(panels);
  if (f.drawn.length > 64) view.append(el("p", { text: `${f.drawn.length - 64} more panels are in the JSON.` }));
  if (f.head_view) view.append(headView(f));
}
const nav = document.getElementById("steps");
nav.append(el("div", { class: "legend", text: "attnwalk " + T.command + (tokens.length ? " · " + tokens.length + " tokens" : "") }));
if (X.note) nav.append(el("div", { class: "legend", text: X.note }));
steps.forEach((s, k) => nav.append(el("a", { href: "#" + s.id, class: s.kind === "parameter" ? "param" : "", text: s.id,
  title: s.id + (s.title ? ": " + s.title : ""), onclick: e => { e.preventDefault(); state.step = k; state.panel = 0; state.cell = null; show(); } })));
document.title = "attnwalk " + T.command;
const zoom = d => { state.zoom = Math.max(0.6, Math.min(2.5, state.zoom * d)); document.documentElement.style.setProperty("--zoom", state.zoom); show(); fitLines(); };
let resized = 0;  // a new window size: drawn again to fit it
window.addEventListener("resize", () => { clearTimeout(resized); resized = setTimeout(() => { if (steps.length) show(); fitLines(); }, 120); });
document.getElementById("zoomin").addEventListener("click", () => zoom(1.25));
document.getElementById("zoomout").addEventListener("click", () => zoom(0.8));
state.step = F.start;
if (steps.length) show();
})();
</script></body></html>
)HTML";

}  // namespace attnwalk::app
