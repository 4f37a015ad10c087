// waczgen.mjs — synthesise WARC files with many captures, fast, for
// `kria wacz` tests and bench/wacz (no crawl needed).
//
//   node waczgen.mjs OUTDIR CAPTURES [FILES]
//
// Writes FILES (default 1) files OUTDIR/gen-K.warc.gz holding CAPTURES
// response records in all (each with the request record before it; one
// gzip member per record, as kria and every WARC writer do), from the host
// http://gen.test/, one second apart from 2024-01-01T00:00:00Z. Every
// fourth capture is an HTML page http://gen.test/p/N whose <title> is
// "Page N" (every eighth page's is "Café N & café", from character
// references, white space and UTF-8; every
// third is gzip-coded, every fifth chunked, page 3 has no title), linking
// the next pages and embedding the image and style sheet captured right
// after it; the others are /img/C.png and /css/C.css (C the capture's
// number: page N is capture 4N, its image 4N+1, its style sheet 4N+2). Prints one JSON line: the files,
// captures, pages, and the first page's URL. Deterministic: the same
// arguments give the same bytes.
import { createHash } from "node:crypto";
import { mkdirSync, openSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { sha1Label } from "./sha1label.mjs";

const [outDir, capArg, filesArg] = process.argv.slice(2);
const captures = Number(capArg);
const nfiles = Number(filesArg || 1);
if (!outDir || !Number.isInteger(captures) || captures < 1 || !Number.isInteger(nfiles) || nfiles < 1) {
  console.error("usage: node waczgen.mjs OUTDIR CAPTURES [FILES]");
  process.exit(64);
}
mkdirSync(outDir, { recursive: true });


let idn = 0;
function uuid() {
  const h = createHash("sha1").update("waczgen" + idn++).digest("hex");
  return `<urn:uuid:${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}>`;
}

function record(type, url, date, ctype, block, extra = {}, id = uuid()) {
  const head = [
    "WARC/1.1",
    `WARC-Type: ${type}`,
    `WARC-Record-ID: ${id}`,
    `WARC-Date: ${date}`,
    `WARC-Target-URI: ${url}`,
    ...Object.entries(extra).map(([k, v]) => `${k}: ${v}`),
    `Content-Type: ${ctype}`,
    `Content-Length: ${block.length}`,
    "",
    "",
  ].join("\r\n");
  return gzipSync(Buffer.concat([Buffer.from(head), block, Buffer.from("\r\n\r\n")]), { level: 1 });
}

function page(n) {
  const title = n === 3 ? "" : n % 8 === 0 ? `<title>\n  Caf&#xE9; ${n} &amp; caf\u00e9 </title>` : `<title>Page ${n}</title>`;
  const links = [1, 2, 3].map((k) => `<a href="/p/${n + 4 * k}">next ${k}</a>`).join(" ");
  return Buffer.from(
    `<!doctype html><html><head><meta charset="utf-8">${title}` +
      `<link rel="stylesheet" href="/css/${4 * n + 2}.css"></head><body><h1>Page ${n}</h1>` +
      `<p>Synthetic page ${n} of kria's WACZ tests. ${"Lorem ipsum dolor sit amet. ".repeat(8)}</p>` +
      `<img src="/img/${4 * n + 1}.png"> ${links}</body></html>\n`,
  );
}

// A 1x1 PNG.
const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201e2f7d4a40000000049454e44ae426082",
  "hex",
);

const base = Date.UTC(2024, 0, 1);
const perFile = Math.ceil(captures / nfiles);
const files = [];
let pages = 0, c = 0;
for (let f = 0; f < nfiles && c < captures; f++) {
  const path = join(outDir, `gen-${f}.warc.gz`);
  files.push(path);
  const fd = openSync(path, "w");
  const chunks = [];
  let size = 0;
  const flush = () => {
    writeSync(fd, Buffer.concat(chunks));
    chunks.length = 0;
    size = 0;
  };
  const push = (b) => {
    chunks.push(b);
    size += b.length;
    if (size > 4 << 20) flush();
  };
  const info = Buffer.from("software: kria waczgen.mjs\r\nformat: WARC File Format 1.1\r\n");
  push(record("warcinfo", `gen-${f}.warc.gz`, new Date(base).toISOString().replace(".000Z", "Z"),
    "application/warc-fields", info));
  for (let k = 0; k < perFile && c < captures; k++, c++) {
    const date = new Date(base + c * 1000).toISOString().replace(".000Z", "Z");
    let url, ctype, body, payload, headers = [];
    if (c % 4 === 0) {
      const n = c / 4;
      url = `http://gen.test/p/${n}`;
      ctype = "text/html; charset=utf-8";
      body = page(n);
      pages++;
      if (n % 3 === 1) {
        body = gzipSync(body);
        headers.push("Content-Encoding: gzip");
      }
      payload = body;
      if (n % 5 === 2) {
        const mid = body.length >> 1;
        body = Buffer.concat([
          Buffer.from(mid.toString(16) + "\r\n"), body.subarray(0, mid), Buffer.from("\r\n"),
          Buffer.from((body.length - mid).toString(16) + ";ext=1\r\n"), body.subarray(mid),
          Buffer.from("\r\n0\r\n\r\n"),
        ]);
        headers.push("Transfer-Encoding: chunked");
      } else {
        headers.push(`Content-Length: ${body.length}`);
      }
    } else if (c % 4 === 1) {
      url = `http://gen.test/img/${c}.png`;
      ctype = "image/png";
      body = PNG;
      headers.push(`Content-Length: ${body.length}`);
    } else {
      url = `http://gen.test/css/${c}.css`;
      ctype = "text/css";
      body = Buffer.from(`body { margin: ${c % 50}px; }\nh1 { color: #${(c % 4096).toString(16).padStart(3, "0")}; }\n`);
      headers.push(`Content-Length: ${body.length}`);
    }
    const respId = uuid();
    const req = Buffer.from(`GET ${new URL(url).pathname} HTTP/1.1\r\nHost: gen.test\r\nUser-Agent: waczgen\r\n\r\n`);
    push(record("request", url, date, "application/http;msgtype=request", req, { "WARC-Concurrent-To": respId }));
    const head = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: ${ctype}\r\n${headers.join("\r\n")}\r\n\r\n`);
    const block = Buffer.concat([head, body]);
    push(record("response", url, date, "application/http;msgtype=response", block,
      { "WARC-Payload-Digest": sha1Label(payload || body) }, respId));
  }
  flush();
  closeSync(fd);
}
console.log(JSON.stringify({ files, captures: c, pages, first: "http://gen.test/p/0" }));
