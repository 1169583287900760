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

// Every heatmap in the main column, each as its columns inside the window (right of the
// column's left edge, left of the window's and the column's right edge) out of all, its
// cell size; the main column's and the panel's widths; the title's lines.
async function layout(page) {
  return page.evaluate(() => {
    const main = document.querySelector("main").getBoundingClientRect(), right = Math.min(window.innerWidth, main.right);
    const maps = [...document.querySelectorAll("main canvas[data-cols]")].map(cv => {
      const b = cv.getBoundingClientRect(), k = b.width / cv.width, d = cv.dataset;
      let inside = 0;
      for (let j = 0; j < +d.cols; ++j) {
        const left = b.left + (+d.padX + j * +d.cell) * k, end = b.left + (+d.padX + (j + 1) * +d.cell) * k;
        if (left >= main.left - 0.5 && end <= right + 0.5) inside++;
      }
      return { inside, cols: +d.cols, cell: +d.cell, thumb: cv.closest("table, .glance") !== null };
    });
    const h1 = document.querySelector("main h1"), line = parseFloat(getComputedStyle(h1).lineHeight);
    return { maps, main: main.width, aside: document.querySelector("aside").getBoundingClientRect().width,
             lines: Math.round(h1.getBoundingClientRect().height / line), width: window.innerWidth };
  });
}
const columns = l => l.maps.map(m => `${m.inside}/${m.cols}`).join(" ");
const allInside = l => l.maps.length > 0 && l.maps.every(m => m.inside === m.cols);

(async () => {
  const browser = await puppeteer.launch({ executablePath: browserPath, headless: "new", args: ["--no-sandbox", "--disable-gpu"] });
  try {
    // A projector's screens: every column of every heatmap in the window, before and after
    // A+ twice and after a click; the panel closed (no width) until a click opens it.
    for (const name of ["mha", "view", "gptoss"])
      for (const [w, h] of [[1024, 768], [1280, 800]]) {
        const page = await browser.newPage(), at = `${name} at ${w}×${h}`;
        await page.setViewport({ width: w, height: h });
        const errors = [];
        page.on("pageerror", e => errors.push(String(e)));
        await page.goto("file://" + path.resolve(dir, name + ".html"), { waitUntil: "load" });
        const first = await layout(page);
        check(allInside(first), `${at}: every column of each heatmap is in the window (${columns(first)})`);
        check(first.aside <= 0.1 * w, `${at}: the explanation's panel is closed before a click (${Math.round(first.aside)} px)`);
        check(await page.$("#hint") !== null, `${at}: the page says a click on a cell opens it`);
        await page.screenshot({ path: path.resolve(dir, `${name}-${w}x${h}.png`) });
        await page.click("#zoomin");
        await page.click("#zoomin");
        const zoomed = await layout(page);
        check(allInside(zoomed), `${at}, A+ twice: every column is still in the window (${columns(zoomed)})`);
        const big = l => l.maps.find(m => !m.thumb) || { cell: 0 };
        check(big(zoomed).cell > big(first).cell, `${at}, A+ twice: the cells grew (${big(first).cell} -> ${big(zoomed).cell} px)`);
        check(zoomed.lines <= 2 && zoomed.main >= 0.4 * w, `${at}, A+ twice: the title on ${zoomed.lines} line(s), the main column ${Math.round(zoomed.main)} px`);
        const target = (await page.$$("main .panel canvas, main > canvas"))[0];
        await target.evaluate(cv => cv.scrollIntoView({ block: "center" }));
        const point = await cellPoint(target, 2, 0);
        await page.mouse.click(point.x, point.y);
        const opened = await layout(page), said = await page.$eval("#explain", e => e.textContent);
        check(opened.aside >= 0.2 * w && /query 3/.test(said) && /key 1/.test(said),
              `${at}, A+ twice: a click opens the panel on the cell (${Math.round(opened.aside)} px: ${said.slice(1, 40)}…)`);
        check(allInside(opened), `${at}, A+ twice, the panel open: every column is in the window (${columns(opened)})`);
        // the written-out lines fit the panel: none scrolls sideways (their font shrinks instead)
        const wide = await page.$$eval("aside .xline", xs => xs.filter(x => x.scrollWidth > x.clientWidth + 1).map(x => x.textContent.slice(0, 30)));
        check(wide.length === 0, `${at}, A+ twice: every written-out line fits the panel${wide.length ? " (" + wide.length + " scroll: " + wide[0] + "…)" : ""}`);
        await page.screenshot({ path: path.resolve(dir, `${name}-${w}x${h}-zoomed.png`) });
        check(errors.length === 0, `${at}: no error${errors.length ? ": " + errors.join("; ") : ""}`);
        await page.close();
      }
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
      if (name === "mha") {  // the mask's 1 and 0 said where the mask is drawn, and beside its value in the cell's path
        const legend = await page.$$eval("#explain table.vals tr", rows => { const at = rows.findIndex(r => r.cells[0].textContent === "mask"); return at >= 0 && rows[at + 1] ? rows[at + 1].textContent : ""; });
        check(/1 = visible, 0 = masked/.test(legend), `${name}: the cell's path says what the mask's value means (${legend})`);
        await page.evaluate(() => [...document.querySelectorAll("nav a")].find(a => a.textContent === "mask").click());
        const meaning = await page.$eval("#meaning", e => e.textContent).catch(() => "");
        check(/1 = visible, 0 = masked/.test(meaning) && await page.$("main canvas") !== null, `${name}: the mask step says what its 1 and 0 mean (${meaning})`);
      }
      // a negative number after an operator is written in parentheses, as the terminal writes it
      check(!/[−+×/] -\d/.test(explained), `${name}: no negative operand without its parentheses (${(explained.match(/.{20}[−+×/] -\d.{8}/) || [""])[0]})`);
      if (name === "view") {  // and so in every written-out cell of the page (a LayerNorm's mean, scale and shift)
        check(/Feature 1: \(/.test(explained), `${name}: the norm's feature 1 is written out`);
        const all = await page.$eval("#cells", e => e.textContent), bad = all.match(/.{30}[−+×/] -\d.{8}/);
        check(/Feature 1: \(/.test(all) && bad === null, `${name}: every written-out cell writes a negative operand in parentheses${bad ? " (" + bad[0] + ")" : ""}`);
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
