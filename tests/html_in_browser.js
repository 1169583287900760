// Drives html_in_browser.sh's pages in headless chromium (puppeteer-core); see there.
const puppeteer = require("puppeteer-core");
const path = require("path");
const [browserPath, dir] = process.argv.slice(2);
let failures = 0;
const check = (ok, what) => { console.log((ok ? "ok   " : "FAIL ") + what); if (!ok) failures++; };

// The page's point for cell (i, j) of a heatmap canvas: its label margins and cell size
// are on the canvas (data-pad-x, data-pad-y, data-cell), in canvas pixels.
async function cellPoint(canvas, i, j) {
  return canvas.evaluate((cv, i, j) => {
    const b = cv.getBoundingClientRect(), k = b.width / cv.width, d = cv.dataset;
    return { x: b.left + (+d.padX + (j + 0.5) * +d.cell) * k, y: b.top + (+d.padY + (i + 0.5) * +d.cell) * k };
  }, i, j);
}

(async () => {
  const browser = await puppeteer.launch({ executablePath: browserPath, headless: "new", args: ["--no-sandbox", "--disable-gpu"] });
  try {
    {  // the walkthrough: one page, a frame per part, each part's own page inside
      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 800 });
      const errors = [];
      page.on("pageerror", e => errors.push(String(e)));
      await page.goto("file://" + path.resolve(dir, "walkthrough.html"), { waitUntil: "load" });
      const parts = await page.$$eval("section h2", hs => hs.map(h => h.textContent));
      check(parts.length === 7 && /Part 1 of 7: Attention scores/.test(parts[0]), `walkthrough: seven parts (${parts.length})`);
      const frame = await (await page.$("section iframe")).contentFrame();
      await frame.waitForSelector("main canvas", { timeout: 10000 }).catch(() => null);
      check(await frame.$("main canvas") !== null, "walkthrough: the first part's page draws its heatmap");
      await page.screenshot({ path: path.resolve(dir, "walkthrough.png") });
      check(errors.length === 0, `walkthrough: no error${errors.length ? ": " + errors.join("; ") : ""}`);
      await page.close();
    }
    for (const name of ["mha", "softmax", "view"]) {
      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 800 });
      const errors = [];
      page.on("console", m => { if (m.type() === "error") errors.push(m.text()); });
      page.on("pageerror", e => errors.push(String(e)));
      page.on("request", r => { if (!r.url().startsWith("file:")) errors.push("network request: " + r.url()); });
      await page.goto("file://" + path.resolve(dir, name + ".html"), { waitUntil: "load" });
      check(await page.$("main canvas") !== null, `${name}: a heatmap is drawn`);
      const font = await page.evaluate(() => parseFloat(getComputedStyle(document.body).fontSize));
      check(font >= 16, `${name}: text is at least 16 px (${font})`);
      if (name === "view") {  // the grid: a click on layer 2, head 3 opens that head
        const grids = await page.$$("main table canvas");
        check(grids.length === 9, `${name}: the grid has 3 × 3 heads (${grids.length})`);
        await grids[5].click();
        const h2 = await page.$eval("main h2", e => e.textContent);
        check(h2.startsWith("layer 2, head 3"), `${name}: the grid opens layer 2, head 3 (${h2})`);
      }
      // the first panel of the step shown: hover, then click its cell (row 3, column 1)
      const target = (await page.$$("main .panel canvas, main > canvas"))[0];
      const at = await cellPoint(target, 2, 0);
      await page.mouse.move(at.x, at.y);
      const tip = await page.$eval("#tip", e => e.style.display === "block" ? e.textContent : "");
      check(/→/.test(tip), `${name}: hovering a cell shows its value (${tip})`);
      await page.mouse.click(at.x, at.y);
      const explained = await page.$eval("#explain", e => e.textContent);
      check(/query 3/.test(explained) && /key 1/.test(explained), `${name}: the clicked cell is named (${explained.slice(0, 60)}…)`);
      check(/Written out/.test(explained) && /The score of/.test(explained), `${name}: and written out by the engine`);
      if (name !== "view" || /The weight of/.test(explained)) {
        // the written-out weight is the matrix's: the path's value for `weights` equals the division's result
        const numbers = await page.evaluate(() => {
          const path = [...document.querySelectorAll("#explain table.vals tr")].map(r => [...r.cells].map(c => c.textContent));
          const weight = (path.find(r => r[0] === "weights" || r[0] === "attention_grid") || [])[1];
          const steps = [...document.querySelectorAll("#explain .xstep")].map(s => s.textContent);
          const division = steps.find(t => /The weight of/.test(t)) || "";
          const sum = steps.find(t => /The sum of the exponentials/.test(t)) || "";
          const exps = steps.find(t => /Each exponential/.test(t)) || "";
          return { weight, division, sum, exps };
        });
        check(numbers.sum !== "" && numbers.exps !== "", `${name}: the exponentials and their sum are shown`);
        check(numbers.weight !== undefined && numbers.division.includes("= " + numbers.weight),
              `${name}: the division's result equals the weights' entry (${numbers.weight})`);
      }
      if (name === "mha") {  // the chosen cell's rows outlined in the queries, keys and values
        await page.evaluate(() => [...document.querySelectorAll("nav a")].find(a => a.textContent === "keys").click());
        const said = await page.$eval("#rows-chosen", e => e.textContent).catch(() => "");
        check(/query “starts”/.test(said) && /key “Your”/.test(said), `${name}: the keys step outlines the chosen cell's rows (${said.slice(0, 70)}…)`);
        await page.screenshot({ path: path.resolve(dir, name + "-keys.png") });
        await page.evaluate(() => [...document.querySelectorAll("nav a")].find(a => a.textContent === "weights").click());
      }
      if (name === "mha") {  // two heads ticked in the head view: two colours
        const boxes = await page.$$(".heads input");
        check(boxes.length === 2, `${name}: the head view offers both heads`);
        if (boxes.length === 2) await boxes[1].click();
        const colours = await page.$$eval("#headview line", ls => [...new Set(ls.map(l => l.getAttribute("stroke")))]);
        check(colours.length === 2, `${name}: one colour per head (${colours.join(", ")})`);
      }
      await page.screenshot({ path: path.resolve(dir, name + ".png") });
      check(errors.length === 0, `${name}: no console error or network request${errors.length ? ": " + errors.join("; ") : ""}`);
      await page.close();
    }
  } finally {
    await browser.close();
  }
  process.exit(failures ? 1 : 0);
})().catch(e => { console.error(e); process.exit(1); });
