// waczcheck.mjs — validate a WACZ 1.1.1 file as py-wacz's `wacz validate`
// does (wacz/validate.py: check_required_contents, the frictionless
// checks on datapackage.json that matter here, check_file_paths,
// check_file_hashes, check_data_package_hash_and_sig, check_compression)
// and as wabac.js (ReplayWeb.page) reads it, with nothing but Node:
//
//   node waczcheck.mjs FILE.wacz
//
//  1. the ZIP: end record, central directory and local headers agree,
//     every entry's CRC-32 and sizes are right; archive/*.warc(.gz) and
//     indexes/*.cdx.gz are stored, not deflated (the spec's "already
//     compressed files MUST NOT be compressed again");
//  2. the entries: one or more WARCs, an index (indexes/index.cdx, or
//     indexes/index.cdx.gz with indexes/index.idx), pages/pages.jsonl,
//     datapackage.json, datapackage-digest.json, nothing unlisted;
//  3. datapackage.json: profile "data-package", wacz_version "1.1.1",
//     created, every other entry listed once with a lower-case name
//     (frictionless), its path, "sha256:" hash and bytes matching the
//     entry; mainPageURL, when present, is a captured URL and
//     mainPageDate a date; datapackage-digest.json's hash is the one of
//     datapackage.json;
//  4. index.idx: the "!meta 0" header (format cdxj-gzip-1.0, filename
//     index.cdx.gz), then per block its key and {offset, length, digest,
//     filename}: the blocks tile index.cdx.gz from 0 to its end, each is
//     one gzip member whose SHA-256 is its digest and whose first line
//     starts with its key;
//  5. the CDXJ lines (of index.cdx or of all blocks): sorted bytewise,
//     each "KEY TIMESTAMP14 JSON" naming a WARC in archive/, whose bytes
//     at offset..offset+length are a record (gunzipped when .gz) for
//     that url, and whose SHA-256 is "recordDigest";
//  6. pages.jsonl: the json-pages-1.0 header, then pages with id, url
//     (captured) and ts (a date); a title, when present, is a non-empty
//     string.
// Prints "error: ..." lines, then one JSON summary line (index kind,
// blocks, lines, pages, titles, mainPageURL); exits 0 when all passed,
// 1 otherwise, 2 on usage errors.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import zlib from "node:zlib";

const file = process.argv[2];
if (!file || process.argv.length !== 3) {
  console.error("usage: node waczcheck.mjs FILE.wacz");
  process.exit(2);
}
const errors = [];
const fail = (msg) => {
  if (errors.length < 50) errors.push(msg);
  else if (errors.length === 50) errors.push("(more errors left out)");
};
const sha256 = (b) => "sha256:" + createHash("sha256").update(b).digest("hex");

// ---- 1. the ZIP ---------------------------------------------------------------
const zip = readFileSync(file);
const entries = new Map(); // name -> { method, data }
(function readZip() {
  let e = zip.length - 22;
  while (e >= 0 && zip.readUInt32LE(e) !== 0x06054b50) e--;
  if (e < 0) return fail("no ZIP end record");
  const count = zip.readUInt16LE(e + 10);
  let c = zip.readUInt32LE(e + 16);
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(c) !== 0x02014b50) return fail(`central entry ${i}: bad signature`);
    const method = zip.readUInt16LE(c + 10);
    const crc = zip.readUInt32LE(c + 16);
    const csize = zip.readUInt32LE(c + 20);
    const size = zip.readUInt32LE(c + 24);
    const nlen = zip.readUInt16LE(c + 28);
    const xlen = zip.readUInt16LE(c + 30);
    const clen = zip.readUInt16LE(c + 32);
    const local = zip.readUInt32LE(c + 42);
    const name = zip.toString("utf8", c + 46, c + 46 + nlen);
    c += 46 + nlen + xlen + clen;
    if (zip.readUInt32LE(local) !== 0x04034b50) { fail(`${name}: bad local header`); continue; }
    const lname = zip.toString("utf8", local + 30, local + 30 + zip.readUInt16LE(local + 26));
    // readers that go by local headers alone (HTTP range readers) need these
    if (lname !== name || zip.readUInt32LE(local + 14) !== crc || zip.readUInt32LE(local + 18) !== csize ||
        zip.readUInt32LE(local + 22) !== size || zip.readUInt16LE(local + 8) !== method)
      fail(`${name}: the local header disagrees with the central directory`);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const raw = zip.subarray(start, start + csize);
    let data;
    try {
      data = method === 0 ? raw : method === 8 ? zlib.inflateRawSync(raw) : null;
    } catch (err) {
      fail(`${name}: cannot inflate: ${err.message}`);
      continue;
    }
    if (!data) { fail(`${name}: method ${method}`); continue; }
    if (data.length !== size) fail(`${name}: ${data.length} bytes, header says ${size}`);
    if (zlib.crc32 && zlib.crc32(data) !== crc) fail(`${name}: CRC-32 mismatch`);
    if (entries.has(name)) fail(`${name}: twice in the ZIP`);
    entries.set(name, { method, data });
  }
})();
for (const [name, { method }] of entries)
  if ((name.startsWith("archive/") || name.endsWith(".cdx.gz")) && method !== 0)
    fail(`${name}: deflated, must be stored`);

// ---- 2. the entries ------------------------------------------------------------
const names = [...entries.keys()];
const warcs = names.filter((n) => /^archive\/[^/]+\.warc(\.gz)?$/.test(n));
if (!warcs.length) fail("no archive/*.warc or *.warc.gz");
const has = (n) => entries.has(n);
let indexKind = null;
if (has("indexes/index.cdx.gz") && has("indexes/index.idx") && !has("indexes/index.cdx")) indexKind = "idx";
else if (has("indexes/index.cdx") && !has("indexes/index.cdx.gz") && !has("indexes/index.idx")) indexKind = "cdx";
else fail(`indexes: want index.cdx, or index.cdx.gz with index.idx; have ${names.filter((n) => n.startsWith("indexes/"))}`);
for (const n of ["pages/pages.jsonl", "datapackage.json", "datapackage-digest.json"]) if (!has(n)) fail(`${n} missing`);
for (const n of names)
  if (!warcs.includes(n) && !/^indexes\/index\.(cdx|cdx\.gz|idx)$/.test(n) &&
      !["pages/pages.jsonl", "datapackage.json", "datapackage-digest.json"].includes(n))
    fail(`unexpected entry ${n}`);

const text = (n) => (has(n) ? entries.get(n).data.toString("utf8") : "");
const json = (n) => {
  try {
    return JSON.parse(text(n));
  } catch (err) {
    fail(`${n}: not JSON: ${err.message}`);
    return {};
  }
};

// ---- 3. datapackage.json -------------------------------------------------------
const dp = json("datapackage.json");
if (dp.profile !== "data-package") fail(`datapackage.json: profile ${dp.profile}`);
if (dp.wacz_version !== "1.1.1") fail(`datapackage.json: wacz_version ${dp.wacz_version}`);
if (typeof dp.created !== "string" || isNaN(Date.parse(dp.created))) fail("datapackage.json: created");
const listed = new Map();
for (const r of dp.resources || []) {
  if (typeof r.name !== "string" || !/^[-a-z0-9._/]+$/.test(r.name)) fail(`resource name ${r.name}: frictionless wants [-a-z0-9._/]+`);
  if (listed.has(r.path)) fail(`${r.path}: listed twice`);
  listed.set(r.path, r);
  if (!/^sha256:[0-9a-f]{64}$/.test(r.hash)) fail(`${r.path}: hash ${r.hash}`);
  if (!Number.isInteger(r.bytes)) fail(`${r.path}: bytes ${r.bytes}`);
  const e = entries.get(r.path);
  if (!e) { fail(`${r.path}: listed, not in the ZIP`); continue; }
  if (sha256(e.data) !== r.hash) fail(`${r.path}: hash does not match`);
  if (e.data.length !== r.bytes) fail(`${r.path}: bytes ${r.bytes}, entry has ${e.data.length}`);
}
for (const n of names)
  if (n !== "datapackage.json" && n !== "datapackage-digest.json" && !listed.has(n)) fail(`${n}: not listed in datapackage.json`);
const dg = json("datapackage-digest.json");
if (dg.path !== "datapackage.json" || dg.hash !== sha256(entries.get("datapackage.json")?.data ?? ""))
  fail("datapackage-digest.json does not match datapackage.json");

// ---- 4. index.idx ---------------------------------------------------------------
let lines = [];
let blocks = 0;
if (indexKind === "idx") {
  const gz = entries.get("indexes/index.cdx.gz").data;
  const idx = text("indexes/index.idx").split("\n");
  if (idx.pop() !== "") fail("index.idx: last line without newline");
  const meta = idx.shift() || "";
  if (!meta.startsWith("!meta 0 ")) fail(`index.idx: first line ${meta.slice(0, 80)}`);
  else {
    const m = JSON.parse(meta.slice(8));
    if (m.format !== "cdxj-gzip-1.0" || m.filename !== "index.cdx.gz") fail(`index.idx: meta ${meta}`);
  }
  let offset = 0, prevKey = "";
  for (const l of idx) {
    const at = l.indexOf(" {");
    if (at < 0) { fail(`index.idx: line ${l.slice(0, 80)}`); continue; }
    const key = l.slice(0, at);
    const b = JSON.parse(l.slice(at + 1));
    blocks++;
    if (Buffer.compare(Buffer.from(prevKey), Buffer.from(key)) > 0) fail(`index.idx: ${key} after ${prevKey}`);
    prevKey = key;
    if (b.filename !== "index.cdx.gz") fail(`index.idx: block ${blocks} filename ${b.filename}`);
    if (b.offset !== offset) fail(`index.idx: block ${blocks} at ${b.offset}, the previous ended at ${offset}`);
    const slice = gz.subarray(b.offset, b.offset + b.length);
    if (slice.length !== b.length || !Number.isInteger(b.length) || b.length <= 0) fail(`index.idx: block ${blocks} length ${b.length}`);
    if (b.digest !== sha256(slice)) fail(`index.idx: block ${blocks} digest`);
    offset = b.offset + b.length;
    let body;
    try {
      body = zlib.gunzipSync(slice).toString("utf8");
    } catch (err) {
      fail(`index.idx: block ${blocks} does not gunzip: ${err.message}`);
      continue;
    }
    const bl = body.split("\n");
    if (bl.pop() !== "") fail(`block ${blocks}: last line without newline`);
    if (!bl.length || !bl[0].startsWith(key + " {")) fail(`block ${blocks}: first line does not start with its key ${key}`);
    lines.push(...bl);
  }
  if (offset !== gz.length) fail(`index.idx: the blocks end at ${offset}, index.cdx.gz has ${gz.length} bytes`);
} else if (indexKind === "cdx") {
  lines = text("indexes/index.cdx").split("\n");
  if (lines.pop() !== "") fail("index.cdx: last line without newline");
}

// ---- 5. the CDXJ lines -----------------------------------------------------------
const urls = new Set();
for (let i = 0; i < lines.length; i++) {
  const l = lines[i];
  if (i && Buffer.compare(Buffer.from(lines[i - 1]), Buffer.from(l)) > 0) fail(`line ${i + 1} sorts before the one above it`);
  const m = /^(\S+) (\d{14}) (\{.*\})$/.exec(l);
  if (!m) { fail(`line ${i + 1}: ${l.slice(0, 80)}`); continue; }
  const j = JSON.parse(m[3]);
  urls.add(j.url);
  const w = entries.get("archive/" + j.filename);
  if (!w) { fail(`line ${i + 1}: filename ${j.filename} not in archive/`); continue; }
  const off = Number(j.offset), len = Number(j.length);
  const rec = w.data.subarray(off, off + len);
  if (rec.length !== len) { fail(`line ${i + 1}: offset/length past the file`); continue; }
  if (j.recordDigest !== sha256(rec)) fail(`line ${i + 1}: recordDigest ${j.recordDigest} is not the record's`);
  let head;
  try {
    head = (j.filename.endsWith(".gz") ? zlib.gunzipSync(rec) : rec).subarray(0, 4096).toString("latin1");
  } catch (err) {
    fail(`line ${i + 1}: the record does not gunzip: ${err.message}`);
    continue;
  }
  const uri = /\r\nWARC-Target-URI: <?([^\r>]*)>?\r\n/i.exec(head);
  if (!head.startsWith("WARC/") || !uri || Buffer.from(uri[1], "latin1").toString("utf8") !== j.url)
    fail(`line ${i + 1}: offset ${off} is not the record of ${j.url}`);
}
if (dp.mainPageURL !== undefined && !urls.has(dp.mainPageURL)) fail(`mainPageURL ${dp.mainPageURL} is not captured`);
if (dp.mainPageDate !== undefined && isNaN(Date.parse(dp.mainPageDate))) fail(`mainPageDate ${dp.mainPageDate}`);

// ---- 6. pages.jsonl ---------------------------------------------------------------
const pl = text("pages/pages.jsonl").split("\n");
if (pl.pop() !== "") fail("pages.jsonl: last line without newline");
let header = {};
try { header = JSON.parse(pl.shift() || "{}"); } catch { fail("pages.jsonl: header is not JSON"); }
if (header.format !== "json-pages-1.0") fail(`pages.jsonl: header ${JSON.stringify(header)}`);
let titles = 0;
for (const l of pl) {
  let p;
  try { p = JSON.parse(l); } catch { fail(`pages.jsonl: ${l.slice(0, 80)}`); continue; }
  if (typeof p.id !== "string" || !p.id) fail(`page ${l.slice(0, 80)}: no id`);
  if (!urls.has(p.url)) fail(`page ${p.url}: not in the index`);
  if (isNaN(Date.parse(p.ts))) fail(`page ${p.url}: ts ${p.ts}`);
  if ("title" in p && (typeof p.title !== "string" || !p.title)) fail(`page ${p.url}: title ${p.title}`);
  if (p.title) titles++;
}

for (const e of errors) console.log("error: " + e);
console.log(JSON.stringify({ index: indexKind, blocks, lines: lines.length, pages: pl.length, titles,
  mainPageURL: dp.mainPageURL ?? null, mainPageDate: dp.mainPageDate ?? null }));
process.exit(errors.length ? 1 : 0);
