// Drives the system Chromium through the DevTools protocol over a pipe
// (--remote-debugging-pipe: JSON messages ended by NUL on fds 3 and 4; Node's standard
// library alone, no npm package) to look at a `quakecap report` page as a reader would:
//
//   node tests/report_page.mjs CHROMIUM PAGE.html OUT_DIR
//
// Prints one JSON object: every request the page made, its console errors and uncaught
// exceptions, each player's findings, the plots drawn, the linked charts' time range
// before and after a drag across the first player's ping plot, and writes screenshots at
// 1400 px width to OUT_DIR (report.png: the top of the page, report-plots.png: the first
// player's plots after the zoom). The assertions are in tests/report_page.rs.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [chromium, page, outDir] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "qc-chromium-"));
const proc = spawn(chromium, [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--disable-default-apps", "--hide-scrollbars", "--mute-audio",
  `--user-data-dir=${profile}`, "--remote-debugging-pipe", "about:blank",
], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let stderr = "";
proc.stderr.on("data", (d) => { stderr += d; });
const toBrowser = proc.stdio[3], fromBrowser = proc.stdio[4];

let nextId = 1;
const waiting = new Map();
const listeners = [];
let buf = Buffer.alloc(0);
fromBrowser.on("data", (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  let i;
  while ((i = buf.indexOf(0)) >= 0) {
    const msg = JSON.parse(buf.subarray(0, i).toString("utf8"));
    buf = buf.subarray(i + 1);
    if (msg.id && waiting.has(msg.id)) {
      const { ok, fail } = waiting.get(msg.id);
      waiting.delete(msg.id);
      msg.error ? fail(new Error(JSON.stringify(msg.error))) : ok(msg.result);
    } else if (msg.method) {
      for (const l of listeners) l(msg);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  const m = { id, method, params };
  if (sessionId) m.sessionId = sessionId;
  toBrowser.write(JSON.stringify(m) + "\0");
  return new Promise((ok, fail) => waiting.set(id, { ok, fail }));
}
function once(method) {
  return new Promise((ok) => {
    const l = (m) => { if (m.method === method) { listeners.splice(listeners.indexOf(l), 1); ok(m.params); } };
    listeners.push(l);
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const timer = setTimeout(() => { console.error("timed out\n" + stderr); proc.kill(); process.exit(2); }, 90_000);
try {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId: s } = await send("Target.attachToTarget", { targetId, flatten: true });
  const requests = [], errors = [];
  listeners.push((m) => {
    if (m.sessionId !== s) return;
    const p = m.params;
    if (m.method === "Network.requestWillBeSent") requests.push(p.request.url);
    if (m.method === "Runtime.exceptionThrown") errors.push("exception: " + JSON.stringify(p.exceptionDetails));
    if (m.method === "Runtime.consoleAPICalled" && (p.type === "error" || p.type === "assert"))
      errors.push("console: " + p.args.map((a) => a.value ?? a.description).join(" "));
    if (m.method === "Log.entryAdded" && p.entry.level === "error") errors.push("log: " + p.entry.text + " " + (p.entry.url || ""));
  });
  for (const d of ["Network", "Runtime", "Log", "Page"]) await send(`${d}.enable`, {}, s);
  await send("Emulation.setDeviceMetricsOverride", { width: 1400, height: 1000, deviceScaleFactor: 1, mobile: false }, s);
  const url = pathToFileURL(page).href;
  const loaded = once("Page.loadEventFired");
  await send("Page.navigate", { url }, s);
  await loaded;
  const evaluate = async (expr) => {
    const r = await send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true }, s);
    if (r.exceptionDetails) throw new Error(expr + ": " + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };
  await sleep(300);
  const top = await send("Page.captureScreenshot", { format: "png", clip: { x: 0, y: 0, width: 1400, height: 1000, scale: 1 } }, s);
  writeFileSync(join(outDir, "report.png"), Buffer.from(top.data, "base64"));
  await evaluate("quakecap.buildAll()");
  await sleep(300);
  const players = await evaluate(`[...document.querySelectorAll("section.player")].map((p) => ({
    name: p.dataset.name, flow: p.dataset.flow, first: +p.dataset.first, last: +p.dataset.last,
    findings: [...p.querySelectorAll("ul.findings li")].map((li) => ({ kind: li.dataset.kind || "", text: li.textContent })),
    canvases: p.querySelectorAll("figure canvas").length,
    charts: (quakecap.groups[p.querySelector(".charts").dataset.flow] || []).length,
  }))`);
  const title = await evaluate("document.title");
  const range = (id) => `quakecap.groups[${JSON.stringify(id)}].map((u) => [u.scales.x.min, u.scales.x.max])`;
  let zoom = null;
  if (players.length) {
    const id = await evaluate(`document.querySelector("section.player .charts").dataset.flow`);
    const before = await evaluate(range(id));
    // A drag across the middle fifth of the first player's ping plot, as a mouse does it.
    const box = await evaluate(`(() => { const o = quakecap.groups[${JSON.stringify(id)}][0].over;
      o.scrollIntoView({ block: "center" }); const r = o.getBoundingClientRect();
      return [r.left, r.top, r.width, r.height]; })()`);
    const [x, y, w, h] = box;
    const at = (f) => ({ x: x + w * f, y: y + h / 2 });
    const mouse = (type, p, buttons) => send("Input.dispatchMouseEvent",
      { type, x: p.x, y: p.y, button: "left", buttons, clickCount: 1 }, s);
    await mouse("mouseMoved", at(0.4), 0);
    await mouse("mousePressed", at(0.4), 1);
    for (const f of [0.45, 0.5, 0.55, 0.6]) await mouse("mouseMoved", at(f), 1);
    await mouse("mouseReleased", at(0.6), 0);
    await sleep(200);
    const after = await evaluate(range(id));
    // The wheel over another of the player's plots, zooming out about the pointer.
    const lag = await evaluate(`(() => { const o = quakecap.groups[${JSON.stringify(id)}][5].over;
      o.scrollIntoView({ block: "center" }); const r = o.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`);
    await send("Input.dispatchMouseEvent", { type: "mouseWheel", x: lag[0], y: lag[1], deltaX: 0, deltaY: 100 }, s);
    await sleep(200);
    const wheel = await evaluate(range(id));
    const rect = await evaluate(`(() => { const r = document.querySelector("section.player .charts").getBoundingClientRect();
      return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })()`);
    // Back to the drag's range for the picture.
    await evaluate(`quakecap.groups[${JSON.stringify(id)}][0].setScale("x", { min: ${after[0][0]}, max: ${after[0][1]} })`);
    await sleep(100);
    const shot = await send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true,
      clip: { x: 0, y: Math.max(0, rect[1] - 40), width: 1400, height: Math.min(rect[3] + 40, 1400), scale: 1 } }, s);
    writeFileSync(join(outDir, "report-plots.png"), Buffer.from(shot.data, "base64"));
    zoom = { flow: id, before, after, wheel };
  }
  console.log(JSON.stringify({ url, title, requests, errors, players, zoom }));
  await send("Browser.close").catch(() => {});
} catch (e) {
  console.error(String(e.stack || e) + "\n" + stderr);
  process.exitCode = 1;
} finally {
  clearTimeout(timer);
  if (proc.exitCode === null) {
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill();
    await exited;
  }
  // Chromium's helper processes can still be writing into the profile after the browser
  // exited (ENOTEMPTY seen once in CI): retry, and a profile left in /tmp is no failure.
  try {
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  } catch (e) {
    console.error(`report_page.mjs: could not remove ${profile}: ${e.code || e}`);
  }
}
