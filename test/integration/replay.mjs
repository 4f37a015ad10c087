// replay.mjs — kria's captures replayed by ReplayWeb.page (npm replaywebpage,
// pinned in package.json) in headless Chromium driven by puppeteer-core
// (pinned too), for replay_browser.sh and replay_large.sh:
//
//   node replay.mjs --chromium PATH --wacz FILE --cdx FILE --log FILE
//                   [--skip URL-ERE] WARC...
//
// The captures are the lines of --cdx (`kria cdx` of the WARCs: URL and the
// 14-digit timestamp ReplayWeb.page looks them up by); the WARC records
// behind them (read with warcio.js) say what each one is and what it must
// show: a response its own payload, a revisit the payload of the record it
// refers to. A small HTTP server on 127.0.0.1 (ephemeral port) serves
// ReplayWeb.page's index.html, ui.js and sw.js (the service worker from
// the app's own path, so its scope covers the app) and the WACZ with
// Range support (wabac.js reads a WACZ by range requests); every request
// it answers goes to --log (for the WACZ with the byte range served,
// START-END). Each capture is opened in a new tab as
//   /?source=<WACZ URL>#view=pages&url=<URL>&ts=<TS>
// and, once the replay frame (<coll>/<TS>mp_/<URL>) has loaded, its
// document is held against the expectation:
//   text/html  the text of #marker; with a stylesheet, the computed colour
//              of .probe and content of .probe::after its own stylesheet
//              sets; each <img> decoded to the size of its captured PNG
//   text/css   the text shown is the captured stylesheet
//   image/png  the image decodes to the captured PNG's width and height
// Output, one tab-separated line per capture checked (by timestamp, --cdx
// order within a second):
//   RESULT  ok|fail  KIND  URL  TS  DETAIL
// KIND: original, changed (a new payload for a URL seen before),
// not-modified (server-not-modified revisit of a 304: no HTTP head, or a
// 304 one), midfetch (server-not-modified revisit with a 200 head: same
// validators, body not read), identical-same-url, identical-cross-url.
// On a failure DETAIL says what the frame showed (HTTP status and type of
// the service worker's answer, the text) and which WACZ byte ranges the
// service worker fetched for it. Lines starting "#" are diagnostics: per
// capture shown, the milliseconds from opening its tab to observing its
// document and the WACZ requests meanwhile; at the end the WACZ GET
// requests and bytes served in all.
// Every wait is bounded; Chromium (--no-sandbox, a temporary profile) is
// closed at the end and its PID written to <log>.chromium-pid first.
import { createServer } from "node:http";
import { appendFileSync, createReadStream, readFileSync, statSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { WARCParser } from "warcio";
import puppeteer from "puppeteer-core";

const HERE = dirname(fileURLToPath(import.meta.url));
const RWP = join(HERE, "node_modules", "replaywebpage");
const FRAME_MS = 20000; // the replay frame appears (first tab: the index loads)
const LOAD_MS = 10000; // its document finishes loading

function usage() {
  process.stderr.write("usage: node replay.mjs --chromium PATH --wacz FILE --cdx FILE --log FILE [--skip ERE] WARC...\n");
  process.exit(2);
}
const opt = { warcs: [] };
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const k = a[i];
    if (["--chromium", "--wacz", "--cdx", "--log", "--skip"].includes(k)) {
      if (i + 1 >= a.length) usage();
      opt[k.slice(2)] = a[++i];
    } else if (k.startsWith("--")) usage();
    else opt.warcs.push(k);
  }
  if (!opt.chromium || !opt.wacz || !opt.cdx || !opt.log || !opt.warcs.length) usage();
}
const say = (s) => process.stdout.write(s + "\n");
const diag = (s) => say("# " + String(s).replace(/\n/g, "\n# "));
const ts14 = (iso) => iso.replace(/[-:TZ]/g, "").slice(0, 14);

// ---- what was captured ---------------------------------------------------------

// records: response and revisit records of the WARCs, by Record-ID and by
// "URL TS14 TYPE"
const byId = new Map();
const byKey = new Map();
for (const file of opt.warcs) {
  for await (const r of new WARCParser(createReadStream(file))) {
    const type = r.warcType;
    if (type !== "response" && type !== "revisit") continue;
    const rec = {
      type,
      url: r.warcTargetURI,
      date: r.warcDate,
      id: r.warcHeader("WARC-Record-ID"),
      refersTo: r.warcHeader("WARC-Refers-To") || "",
      refersToUri: r.warcHeader("WARC-Refers-To-Target-URI") || "",
      refersToDate: r.warcHeader("WARC-Refers-To-Date") || "",
      profile: r.warcHeader("WARC-Profile") || "",
      digest: r.warcHeader("WARC-Payload-Digest") || "",
      status: r.httpHeaders ? Number(r.httpHeaders.statusCode) : 0,
      ctype: (r.httpHeaders?.headers.get("content-type") || "").split(";")[0].trim(),
      payload: type === "response" ? Buffer.from(await r.readFully(true)) : null,
    };
    byId.set(rec.id, rec);
    const key = `${rec.url} ${ts14(rec.date)} ${type}`;
    if (byKey.has(key)) throw new Error(`two ${type} records for ${rec.url} in one second (${rec.date})`);
    byKey.set(key, rec);
  }
}

// original REC: the response a revisit stands for (following WARC-Refers-To)
function original(rec) {
  for (let hops = 0; rec && rec.type === "revisit" && hops < 10; hops++) {
    const next = byId.get(rec.refersTo) ||
      [...byId.values()].find((o) => o.url === rec.refersToUri && o.date === rec.refersToDate);
    rec = next;
  }
  return rec && rec.type === "response" ? rec : null;
}

function pngSize(buf) {
  if (buf.length < 24 || buf.toString("latin1", 1, 4) !== "PNG") return null;
  return `${buf.readUInt32BE(16)}x${buf.readUInt32BE(20)}`;
}

// embedded ORIG RE: the original record of the first capture of the URL
// that RE finds in ORIG's payload (<link rel="stylesheet" href> or <img
// src; the same bytes for every capture of it in kria's tests), or null
const firstCapture = new Map(); // url -> its earliest record
for (const r of byId.values()) {
  const f = firstCapture.get(r.url);
  if (!f || r.date < f.date) firstCapture.set(r.url, r);
}
function embedded(orig, re) {
  const m = orig.payload.toString("utf8").match(re);
  return m ? original(firstCapture.get(new URL(m[1], orig.url).href)) : null;
}

// expectation ORIG: what the replay of ORIG's payload must show; a page's
// colour of .probe and content of .probe::after are the ones its own
// stylesheet sets (each when it sets one), its images the size of its own
// PNG
function expectation(orig) {
  const text = orig.payload.toString("utf8");
  switch (orig.ctype) {
    case "text/html": {
      const m = text.match(/<p id="marker"[^>]*>([^<]*)</);
      const e = { kind: "html", marker: m ? m[1] : null };
      if (/<link rel="stylesheet"/.test(text)) {
        const css = embedded(orig, /<link rel="stylesheet" href="([^"]*)"/)?.payload.toString() ?? null;
        e.color = css === null ? "(no stylesheet captured)" : (css.match(/color: *(rgb\([^)]*\))/) || [])[1];
        e.after = css && (css.match(/::after *\{ *content: *("[^"]*")/) || [])[1];
      }
      if (/<img /.test(text)) {
        const png = embedded(orig, /<img [^>]*src="([^"]*)"/);
        e.img = png ? pngSize(png.payload) : "(no PNG captured)";
      }
      return e;
    }
    case "text/css":
      return { kind: "css", text: text.trim() };
    case "image/png":
      return { kind: "png", size: pngSize(orig.payload) };
    default:
      return null;
  }
}

// the captures, by timestamp
const captures = [];
const seen = new Map(); // url -> digest of its previous capture
const skip = opt.skip ? new RegExp(opt.skip) : null;
for (const line of readFileSync(opt.cdx, "utf8").split("\n")) {
  if (!line) continue;
  const m = line.match(/^\S+ (\d{14}) (\{.*\})$/);
  if (!m) throw new Error(`not a CDXJ line: ${line}`);
  const j = JSON.parse(m[2]);
  const type = j.mime === "warc/revisit" ? "revisit" : "response";
  const rec = byKey.get(`${j.url} ${m[1]} ${type}`);
  if (!rec) throw new Error(`no ${type} record for ${j.url} at ${m[1]}`);
  captures.push({ url: j.url, ts: m[1], index: `${j.mime} ${j.status ?? "(no status)"}`, rec });
}
captures.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0)); // stable: cdx order within a second
const byCapture = new Map(captures.map((c) => [`${c.url} ${c.ts}`, c]));
const byTs = new Map(); // ts -> its captures
for (const c of captures) {
  if (!byTs.has(c.ts)) byTs.set(c.ts, []);
  byTs.get(c.ts).push(c);
}
for (const c of captures) {
  const r = c.rec;
  if (r.type === "response") c.kind = seen.has(c.url) && seen.get(c.url) !== r.digest ? "changed" : "original";
  // server-not-modified: a 304 (an empty block, or a 304 head) or a
  // mid-fetch abort (the 200 head as received)
  else if (/server-not-modified/.test(r.profile)) c.kind = r.status === 0 || r.status === 304 ? "not-modified" : "midfetch";
  else c.kind = r.refersToUri === c.url ? "identical-same-url" : "identical-cross-url";
  seen.set(c.url, r.digest);
  c.orig = original(r);
  c.expect = c.orig && (!skip || !skip.test(c.url)) ? expectation(c.orig) : null;
}

// ---- the server: ReplayWeb.page and the WACZ -----------------------------------

const waczSize = statSync(opt.wacz).size;
writeFileSync(opt.log, "");
let reqLog = []; // WACZ ranges fetched since the last capture began
const waczReads = []; // bytes of each WACZ GET answered
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "application/javascript", ".json": "application/json", ".wasm": "application/wasm" };

const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
  const done = (status, extra = "") => appendFileSync(opt.log, `${req.method} ${req.url} ${req.headers.range || "-"} ${status}${extra}\n`);
  if (path === "/test.wacz") {
    const head = { "Content-Type": "application/wacz", "Accept-Ranges": "bytes", "Cache-Control": "no-store" };
    const range = req.headers.range && req.headers.range.match(/^bytes=(\d*)-(\d*)$/);
    let start = 0;
    let end = waczSize - 1;
    let status = 200;
    if (req.headers.range) {
      if (!range || (range[1] === "" && range[2] === "")) {
        res.writeHead(416, { "Content-Range": `bytes */${waczSize}` }).end();
        return done(416);
      }
      if (range[1] === "") start = Math.max(0, waczSize - Number(range[2]));
      else {
        start = Number(range[1]);
        if (range[2] !== "") end = Math.min(end, Number(range[2]));
      }
      if (start > end || start >= waczSize) {
        res.writeHead(416, { "Content-Range": `bytes */${waczSize}` }).end();
        return done(416);
      }
      status = 206;
      head["Content-Range"] = `bytes ${start}-${end}/${waczSize}`;
    }
    head["Content-Length"] = String(end - start + 1);
    res.writeHead(status, head);
    reqLog.push(`${req.method} ${start}-${end}`);
    if (req.method !== "HEAD") waczReads.push(end - start + 1);
    done(status, ` ${start}-${end}`);
    if (req.method === "HEAD") return res.end();
    createReadStream(opt.wacz, { start, end }).pipe(res);
    return;
  }
  // the app's files, from the package directory only
  const rel = path === "/" ? "index.html" : path.slice(1);
  const file = normalize(join(RWP, rel));
  let st = null;
  try {
    if (file.startsWith(RWP + sep)) st = statSync(file);
  } catch {
    st = null;
  }
  if (!st || !st.isFile()) {
    res.writeHead(404, { "Content-Type": "text/plain" }).end("not found\n");
    return done(404);
  }
  const ext = file.slice(file.lastIndexOf("."));
  res.writeHead(200, { "Content-Type": TYPES[ext] || "application/octet-stream", "Content-Length": String(st.size), "Cache-Control": "no-store" });
  done(200);
  if (req.method === "HEAD") return res.end();
  createReadStream(file).pipe(res);
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const base = `http://127.0.0.1:${server.address().port}`;
diag(`ReplayWeb.page ${JSON.parse(readFileSync(join(RWP, "package.json"))).version} at ${base}/, ` +
  `puppeteer-core ${JSON.parse(readFileSync(join(HERE, "node_modules", "puppeteer-core", "package.json"))).version}`);

// ---- the browser ----------------------------------------------------------------

const profile = mkdtempSync(join(tmpdir(), "kria-replay-chromium."));
const browser = await puppeteer.launch({
  executablePath: opt.chromium,
  headless: true,
  userDataDir: profile,
  protocolTimeout: 30000,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-features=Translate,MediaRouter", "--window-size=1200,900"],
});
writeFileSync(opt.log + ".chromium-pid", String(browser.process()?.pid ?? ""));
diag(`chromium ${await browser.version()}`);

// observe FRAME: what the replayed document shows
function observe(frame) {
  return frame.evaluate(() => {
    const marker = document.querySelector("#marker");
    const probe = document.querySelector(".probe");
    const imgs = [...document.images].map((i) => (i.complete ? `${i.naturalWidth}x${i.naturalHeight}` : "loading"));
    return {
      contentType: document.contentType,
      marker: marker ? marker.textContent : null,
      color: probe ? getComputedStyle(probe).color : null,
      after: probe ? getComputedStyle(probe, "::after").content : null,
      imgs,
      text: (document.body ? document.body.innerText : "").trim(),
    };
  });
}

function compare(exp, got) {
  if (!exp) return "no expectation: the capture's original record was not found";
  const bad = [];
  if (exp.kind === "html") {
    if (exp.marker === null) return "the captured page has no #marker to look for";
    if (got.marker !== exp.marker) bad.push(`#marker ${JSON.stringify(got.marker)}, want ${JSON.stringify(exp.marker)}`);
    if (exp.color && got.color !== exp.color) bad.push(`.probe colour ${got.color}, want ${exp.color} (stylesheet)`);
    if (exp.after && got.after !== exp.after) bad.push(`.probe::after ${got.after}, want ${exp.after} (stylesheet)`);
    if (exp.img && (!got.imgs.length || got.imgs.some((s) => s !== exp.img))) bad.push(`images ${got.imgs.join(",") || "none"}, want ${exp.img}`);
  } else if (exp.kind === "css") {
    if (got.text !== exp.text) bad.push(`text ${JSON.stringify(got.text.slice(0, 80))}, want the stylesheet ${JSON.stringify(exp.text.slice(0, 80))}`);
  } else if (exp.kind === "png") {
    if (got.imgs.length !== 1 || got.imgs[0] !== exp.size) bad.push(`image ${got.imgs.join(",") || "none"}, want ${exp.size}`);
  }
  return bad.join("; ");
}

// swAnswer PAGE URL: what the service worker answers for URL, fetched from
// the app's page (which it controls): "STATUS TYPE, N bytes"
function swAnswer(page, url) {
  return page.evaluate(async (u) => {
    const r = await fetch(u);
    const body = await r.text();
    return `${r.status} ${r.headers.get("content-type") || "no content-type"}, ${body.length} bytes`;
  }, url).catch((e) => `fetch failed: ${e.message.split("\n")[0]}`);
}

async function check(c) {
  reqLog = [];
  const t0 = Date.now();
  const page = await browser.newPage();
  // the replay document: <prefix>/<coll>/[:<wacz hash>/]<TS>mp_/<URL>. A
  // revisit wabac.js has resolved before may be redirected to another
  // capture standing for the same original record (the original itself or
  // an earlier revisit of it), or to its own URL at the timestamp of any
  // capture standing for it (wabac.js finds a payload by its digest; seen
  // for revisits whose original is another URL's): the same content, said
  // in the result line.
  const at = (u) => {
    const m = u.match(/\/(\d{14})mp_\/(.*)$/);
    return m ? { ts: m[1], url: m[2] } : null;
  };
  const isDoc = (u) => {
    const d = at(u);
    if (!d) return false;
    if (d.ts === c.ts && d.url === c.url) return true;
    if (!c.orig) return false;
    return (byTs.get(d.ts) || []).some((x) => x.orig === c.orig && (x.url === d.url || d.url === c.url));
  };
  let docResp = null;
  let navFail = null;
  let onFail;
  const failed = new Promise((res) => (onFail = res));
  page.on("response", (r) => {
    if (at(r.url()) && r.request().isNavigationRequest()) docResp = r;
  });
  page.on("requestfailed", (r) => {
    if (at(r.url()) && r.isNavigationRequest()) {
      navFail = { url: r.url(), why: r.failure()?.errorText || "failed" };
      onFail();
    }
  });
  const hash = new URLSearchParams({ view: "pages", url: c.url, ts: c.ts }).toString();
  const app = `${base}/?source=${encodeURIComponent(base + "/test.wacz")}#${hash}`;
  let detail = "";
  let shownAs = "";
  let ok = false;
  try {
    await page.goto(app, { waitUntil: "load", timeout: FRAME_MS });
    // the replay frame loaded, or its navigation failed: whichever comes first
    // any replay frame: one showing another capture is a failure, not a wait
    const loaded = page.waitForFrame((f) => !!at(f.url()), { timeout: FRAME_MS }).then(async (f) => {
      await f.waitForFunction(() => document.readyState === "complete", { timeout: LOAD_MS });
      return f;
    });
    loaded.catch(() => {});
    const frame = await Promise.race([loaded, failed.then(() => null)]);
    if (!frame) {
      detail = `the replay frame's navigation to ${navFail.url.replace(base, "")} failed (${navFail.why}), ` +
        `the frame stays blank; the service worker answers ${await swAnswer(page, navFail.url)}`;
    } else if (!isDoc(frame.url())) {
      const d = at(frame.url());
      const o = byCapture.get(`${d.url} ${d.ts}`)?.orig;
      detail = `the replay frame shows ${d.url} ${d.ts} instead, ` +
        (o ? `a capture of another original (${o.url} ${ts14(o.date)})` : "not a capture in the index");
    } else {
      const got = await observe(frame);
      c.shownMs = Date.now() - t0;
      const why = compare(c.expect, got);
      ok = !why;
      const d = at(frame.url());
      if (d.ts !== c.ts || d.url !== c.url) shownAs = ` (shown as ${d.url === c.url ? "" : d.url + " "}${d.ts}, the same original)`;
      const sw = docResp ? `${docResp.status()} ${docResp.headers()["content-type"] || "no content-type"}` : "no response seen";
      detail = ok ? "" : `${why}; replay frame ${frame.url().replace(base, "")}: ${sw}, document ${got.contentType}, text ${JSON.stringify(got.text.slice(0, 60))}`;
    }
  } catch (e) {
    const frames = page.frames().slice(1).map((f) => f.url().replace(base, "") || "(blank)");
    detail = `${e.name}: ${e.message.split("\n")[0]}; frames: ${frames.join(" ") || "none"}`;
  }
  await page.close().catch(() => {});
  if (!ok) detail += `; index line: ${c.index}; WACZ reads for it: ${reqLog.length ? reqLog.join(" ") : "none"}`;
  return { ok, detail: shownAs + detail };
}

let failed = 0;
try {
  for (const c of captures) {
    if (skip && skip.test(c.url)) continue;
    const { ok, detail } = await check(c);
    if (!ok) failed++;
    const orig = c.orig && c.orig !== c.rec ? ` of ${c.orig.url === c.url ? "" : c.orig.url + " "}${ts14(c.orig.date)}` : "";
    if (c.shownMs !== undefined) diag(`shown in ${c.shownMs} ms (a new tab to the document observed), ${reqLog.length} WACZ requests: ${c.url} ${c.ts}`);
    say(["RESULT", ok ? "ok" : "fail", c.kind, c.url, c.ts, `${c.expect?.kind ?? "?"}${orig}${detail.startsWith(" (") ? "" : detail ? ": " : ""}${detail}`].join("\t"));
  }
  const bytes = waczReads.reduce((a, b) => a + b, 0);
  diag(`WACZ reads: ${waczReads.length} GET requests, ${bytes} of its ${waczSize} bytes`);
} finally {
  await browser.close().catch(() => {});
  server.close();
  server.closeAllConnections?.();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(0);
