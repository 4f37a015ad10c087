// cluster_console.mjs — the console's cluster page (GET /cluster) in headless
// Chromium driven by puppeteer-core (pinned in package.json), for
// cluster_console.sh:
//
//   node cluster_console.mjs --chromium PATH --log FILE [--shot PNG]
//                            URL WAIT [URL WAIT ...]
//
// Each URL is loaded in a new tab; WAIT, a JavaScript expression, is
// awaited in the page (the page's own script fetches cluster.json and
// fills the table; it refreshes every 2 s) for at most 15 s. Then one
// line of JSON per URL on stdout: what the page shows —
//   {"url", "waited": true|false, "name", "taken", "note", "err",
//    "tiles": {label: value}, "rows": [{"id", "cls", "cells": [text...],
//    "k": {figure: text}}]}
// The first page is saved as a PNG (--shot) for a person to look at. Page
// errors (an exception, a refused script under the CSP) go to stderr and
// make the exit status 1. Chromium (--no-sandbox, a temporary profile) is
// closed at the end and its PID written to <log>.chromium-pid first.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

const WAIT_MS = 15000;
const opt = { pages: [] };
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    if (["--chromium", "--log", "--shot"].includes(a[i])) opt[a[i].slice(2)] = a[++i];
    else opt.pages.push([a[i], a[++i]]);
  }
  if (!opt.chromium || !opt.log || !opt.pages.length || opt.pages.some(([, w]) => w === undefined)) {
    process.stderr.write("usage: node cluster_console.mjs --chromium PATH --log FILE [--shot PNG] URL WAIT...\n");
    process.exit(2);
  }
}

const profile = mkdtempSync(join(tmpdir(), "kria-cluster-chromium."));
const browser = await puppeteer.launch({
  executablePath: opt.chromium,
  headless: true,
  userDataDir: profile,
  protocolTimeout: 30000,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1200,900"],
});
writeFileSync(opt.log + ".chromium-pid", String(browser.process()?.pid ?? ""));
let errors = 0;
try {
  let first = true;
  for (const [url, wait] of opt.pages) {
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 900 });
    page.on("pageerror", (e) => { errors++; process.stderr.write(`page error (${url}): ${e.message}\n`); });
    page.on("console", (m) => {
      if (m.type() === "error") { errors++; process.stderr.write(`console error (${url}): ${m.text()}\n`); }
    });
    await page.goto(url, { waitUntil: "load", timeout: WAIT_MS });
    let waited = true;
    try {
      await page.waitForFunction(wait, { timeout: WAIT_MS, polling: 100 });
    } catch {
      waited = false;
    }
    const shown = await page.evaluate(() => {
      const t = (id) => document.getElementById(id)?.textContent ?? null;
      const tiles = {};
      for (const d of document.querySelectorAll("#tiles .tile"))
        tiles[d.querySelector("span").textContent] = d.querySelector("b").textContent;
      const rows = [...document.querySelectorAll("#members tr")].map((tr) => {
        const k = {};
        for (const td of tr.querySelectorAll("td[data-k]")) k[td.dataset.k] = td.textContent;
        return { id: tr.id, cls: tr.className, cells: [...tr.children].map((c) => c.textContent), k };
      });
      return { name: t("name"), taken: t("taken"), note: t("note"), err: t("err"), tiles, rows };
    });
    process.stdout.write(JSON.stringify({ url, waited, ...shown }) + "\n");
    if (first && opt.shot) await page.screenshot({ path: opt.shot });
    first = false;
    await page.close();
  }
} finally {
  await browser.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
process.exit(errors ? 1 : 0);
