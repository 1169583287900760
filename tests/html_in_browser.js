// Drives html_in_browser.sh's pages in headless chromium (puppeteer-core); see there.
const puppeteer = require("puppeteer-core");
const path = require("path");
const [browserPath, dir] = process.argv.slice(2);
let failures = 0;
const check = (ok, what) => { console.log((ok ? "ok   " : "FAIL ") + what); if (!ok) failures++; };

// Clicks the middle of cell (i, j) of the canvas `selector` (its label margin read from the page).
async function clickCell(page, selector, i, j) {
  const box = await page.$eval(selector, c => { const b = c.getBoundingClientRect(); return { x: b.left, y: b.top, w: b.width, h: b.height }; });
  const shape = await page.$eval(selector, c => [c.width, c.height]);
  return { box, shape, click: async (pad, cell) => page.mouse.click(box.x + pad + (j + 0.5) * cell, box.y + pad + (i + 0.5) * cell) };
}

(async () => {
  const browser = await puppeteer.launch({ executablePath: browserPath, headless: "new", args: ["--no-sandbox", "--disable-gpu"] });
  try {
    for (const name of ["mha", "softmax", "view"]) {
      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 800 });
      const errors = [];
      page.on("console", m => { if (m.type() === "error") errors.push(m.text()); });
      page.on("pageerror", e => errors.push(String(e)));
      page.on("request", r => { if (!r.url().startsWith("file:")) errors.push("network request: " + r.url()); });
      await page.goto("file://" + path.resolve(dir, name + ".html"), { waitUntil: "load" });
      check(await page.$("main canvas") !== null, `${name}: a heatmap is drawn`);
      if (name === "view") {  // the grid: a click on layer 2, head 3 opens that head
        const grids = await page.$$("main table canvas");
        check(grids.length === 9, `${name}: the grid has 3 × 3 heads (${grids.length})`);
        await grids[5].click();
        const h2 = await page.$eval("main h2", e => e.textContent);
        check(h2 === "layer 2, head 3", `${name}: the grid opens layer 2, head 3 (${h2})`);
      }
      // the last canvas of the page is the big heatmap: click its cell (row 3, column 1)
      const canvases = await page.$$("main > canvas, main .panel canvas");
      const target = canvases[canvases.length - 1];
      const geometry = await target.evaluate(c => { const b = c.getBoundingClientRect(); return { x: b.left, y: b.top, w: c.width, h: c.height }; });
      const rows = await page.evaluate(() => 6);
      const pad = geometry.w > 200 ? 70 : 0, cell = (geometry.w - pad) / (name === "view" ? 8 : rows);
      await page.mouse.move(geometry.x + pad + 0.5 * cell, geometry.y + pad + 2.5 * cell);
      const tip = await page.$eval("#tip", e => e.style.display === "block" ? e.textContent : "");
      check(/→/.test(tip), `${name}: hovering a cell shows its value (${tip})`);
      await page.mouse.click(geometry.x + pad + 0.5 * cell, geometry.y + pad + 2.5 * cell);
      const explained = await page.$eval("#explain", e => e.textContent);
      check(/Query 3/.test(explained) && /key 1/.test(explained), `${name}: the clicked cell is explained (${explained.slice(0, 60)}…)`);
      await page.screenshot({ path: path.resolve(dir, name + ".png") });
      check(errors.length === 0, `${name}: no console error or network request${errors.length ? ": " + errors.join("; ") : ""}`);
      await page.close();
    }
  } finally {
    await browser.close();
  }
  process.exit(failures ? 1 : 0);
})().catch(e => { console.error(e); process.exit(1); });
