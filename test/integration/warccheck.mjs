// warccheck.mjs — validate WARC files with a third-party reader
// (webrecorder's warcio.js, pinned in package.json) plus the checks
// warcio.js does not make itself. For kria's tests (warc_check.sh).
//
//   node warccheck.mjs [--cdx KRIA_CDXJ] [--allow-chunked-digest] FILE...
//
// For every file:
//  1. warcio.js parses every record (HTTP headers too) with no warning or
//     error on the console (console.warn/error are intercepted: warcio
//     reports e.g. a Content-Length that is too small that way);
//  2. the records tile the file exactly (each offset is the previous
//     offset + length, the last ends at the file's size), which catches
//     what warcio silently tolerates (it falls back to reading a broken
//     gzip stream as plain bytes);
//  3. each record has WARC-Record-ID, WARC-Date, WARC-Type, and
//     WARC-Target-URI where the standard requires it;
//  4. WARC-Block-Digest is recomputed over the block and
//     WARC-Payload-Digest over the payload (HTTP entity after the headers,
//     de-chunked when Transfer-Encoding is chunked; the whole block for
//     non-HTTP records); revisits carry their original's payload digest.
//     A digest over the transfer-encoded body (chunk framing included, as
//     wget and Heritrix write it) is an error, or with
//     --allow-chunked-digest a note (for reference writers);
//  5. every revisit's WARC-Refers-To (required), WARC-Refers-To-Target-URI
//     and WARC-Refers-To-Date name one response record in the set of
//     files (its id, URI and date); every WARC-Concurrent-To / WARC-Warcinfo-ID /
//     WARC-Refers-To names a record in the set.
// With --cdx, kria's CDXJ lines must match warcio.js's own CDX index of
// the same files field by field (timestamp, url, mime, status, digest,
// offset, length, filename; the SURT keys are left out: warcio.js uses a
// simplified SURT, kria python surt's). One deliberate difference: a
// record other than a revisit without WARC-Payload-Digest has no digest
// in warcio.js's index; kria gives it the one cdxj-indexer computes, the
// SHA-1 of the block after the HTTP head (whole block without one),
// which is what is expected of kria here.
//
// Prints "ok FILE: N records" per good file and "error: ..." lines;
// exits 0 when everything passed, 1 otherwise, 2 on usage errors.
import { closeSync, createReadStream, openSync, readFileSync, readSync, statSync } from "node:fs";
import { basename } from "node:path";
import { CDXIndexer, WARCParser } from "warcio";
import { base32, sha1Label } from "./sha1label.mjs";

const errors = [];
const fail = (msg) => errors.push(msg);

// warcio.js reports some problems only on the console.
const consoleNotes = [];
for (const k of ["warn", "error", "log", "info"]) {
  console[k] = (...args) => consoleNotes.push(`console.${k}: ${args.join(" ")}`);
}
const print = (s) => process.stdout.write(s + "\n");

const sha1 = sha1Label;

function sameDigest(label, computed) {
  if (!label) return true;
  const i = label.indexOf(":");
  if (i < 0) return false;
  const algo = label.slice(0, i).toLowerCase();
  const val = label.slice(i + 1);
  if (algo !== "sha1") return false;
  if (/^[0-9a-f]{40}$/i.test(val)) {
    const hex = Buffer.from(val, "hex");
    return "sha1:" + base32(hex) === computed;
  }
  return "sha1:" + val.toUpperCase() === computed;
}

const CRLF2 = Buffer.from("\r\n\r\n");

// The entity of an HTTP message block; null when it has no header end.
function httpPayload(block, truncated, where) {
  const end = block.indexOf(CRLF2);
  if (end < 0) return null;
  const head = block.subarray(0, end).toString("latin1");
  let body = block.subarray(end + 4);
  if (/^transfer-encoding:[ \t]*chunked[ \t]*$/im.test(head)) {
    const parts = [];
    let at = 0;
    for (let guard = 0; ; guard++) {
      if (guard > 10_000_000) throw new Error("chunk loop");
      const nl = body.indexOf("\r\n", at);
      if (nl < 0) {
        if (truncated) break;
        fail(`${where}: chunked payload ends without a last chunk`);
        break;
      }
      const size = parseInt(body.subarray(at, nl).toString("latin1").split(";")[0].trim(), 16);
      if (!Number.isFinite(size) || size < 0) {
        fail(`${where}: bad chunk size line`);
        break;
      }
      if (size === 0) break;
      const start = nl + 2;
      if (start + size > body.length) {
        if (!truncated) fail(`${where}: chunk runs past the block`);
        parts.push(body.subarray(start));
        break;
      }
      parts.push(body.subarray(start, start + size));
      at = start + size + 2;
    }
    body = Buffer.concat(parts);
  }
  return body;
}

const unbracket = (u) => (u && u.startsWith("<") && u.endsWith(">") ? u.slice(1, -1) : u);
const needsTarget = new Set(["response", "resource", "request", "revisit", "conversion", "continuation"]);

async function readRecords(file, parseHttp) {
  const out = [];
  const parser = new WARCParser(createReadStream(file), { parseHttp });
  for await (const record of parser) {
    const block = Buffer.from(await record.readFully(false));
    out.push({ record, block, offset: parser.offset, length: parser.recordLength });
  }
  return out;
}

const args = process.argv.slice(2);
let cdxFile = null;
let allowChunkedDigest = false;
for (;;) {
  if (args[0] === "--cdx") {
    cdxFile = args[1];
    args.splice(0, 2);
  } else if (args[0] === "--allow-chunked-digest") {
    allowChunkedDigest = true;
    args.shift();
  } else break;
}
const notes = [];
if (!args.length || args.some((a) => a.startsWith("-"))) {
  process.stderr.write("usage: node warccheck.mjs [--cdx KRIA_CDXJ] [--allow-chunked-digest] FILE...\n");
  process.exit(2);
}

const computedDigests = new Map(); // "filename offset" -> cdxj-indexer's digest
const ids = new Set();
const responses = new Map(); // "uri date" -> { id, payloadDigest }
const refs = []; // [where, field, id]
const revisits = [];
let total = 0;

for (const file of args) {
  const before = errors.length;
  let recs;
  try {
    // Pass 1: warcio.js as a replay tool reads it, HTTP headers parsed.
    recs = await readRecords(file, true);
    for (const { record } of recs) {
      const t = record.warcType;
      if ((t === "response" || t === "request") &&
          /^application\/http/i.test(record.warcContentType || "") && !record.httpHeaders)
        fail(`${file}: ${t} record ${record.warcHeader("WARC-Record-ID")}: no HTTP headers parsed`);
    }
    // Pass 2: whole blocks for the digests.
    recs = await readRecords(file, false);
  } catch (e) {
    fail(`${file}: warcio.js: ${e && e.message ? e.message : e}`);
    continue;
  }
  for (const n of consoleNotes.splice(0)) fail(`${file}: ${n}`);
  const size = statSync(file).size;
  // warcio.js (like python warcio) counts a plain record without the
  // CRLF CRLF after it; a gzip record is its whole member.
  const gz = (() => {
    const b = Buffer.alloc(2);
    const fd = openSync(file, "r");
    const n = readSync(fd, b, 0, 2, 0);
    closeSync(fd);
    return n === 2 && b[0] === 0x1f && b[1] === 0x8b;
  })();
  const gap = gz ? 0 : 4;
  let expect = 0;
  if (recs.length === 0) fail(`${file}: no records`);
  for (const { record, block, offset, length } of recs) {
    const h = (name) => record.warcHeader(name);
    const id = h("WARC-Record-ID");
    const where = `${file} @${offset} ${record.warcType} ${record.warcTargetURI || id}`;
    if (offset !== expect) fail(`${where}: starts at ${offset}, previous record ended at ${expect}`);
    expect = offset + length + gap;
    if (!id || !/^<.+>$/.test(id)) fail(`${where}: bad or no WARC-Record-ID`);
    if (ids.has(id)) fail(`${where}: duplicate WARC-Record-ID`);
    ids.add(id);
    if (!h("WARC-Date") || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/.test(h("WARC-Date")))
      fail(`${where}: bad or no WARC-Date '${h("WARC-Date")}'`);
    const t = record.warcType;
    if (!t) fail(`${where}: no WARC-Type`);
    if (needsTarget.has(t) && !record.warcTargetURI) fail(`${where}: no WARC-Target-URI`);
    if (Number(h("Content-Length")) !== block.length)
      fail(`${where}: Content-Length ${h("Content-Length")} but block of ${block.length}`);
    const bd = h("WARC-Block-Digest");
    const bcomp = sha1(block);
    if (!bd) fail(`${where}: no WARC-Block-Digest`);
    else if (!sameDigest(bd, bcomp)) fail(`${where}: WARC-Block-Digest ${bd}, computed ${bcomp}`);
    const pd = h("WARC-Payload-Digest");
    const isHttp = /^application\/http/i.test(record.warcContentType || "");
    if (!pd && t !== "revisit") {
      // cdxj-indexer: the bytes after the first blank line of an http(s)
      // response's block (chunk framing and all), else the whole block.
      let raw = block;
      if (t === "response" && /^https?:/.test(unbracket(record.warcTargetURI) || "")) {
        const m = /\n[ \t\r]*\n/.exec(block.toString("latin1"));
        raw = m ? block.subarray(m.index + m[0].length) : Buffer.alloc(0);
      }
      computedDigests.set(`${basename(file)} ${offset}`, sha1(raw));
    }
    if (t === "revisit") {
      revisits.push({ where, record, pd });
      if (!pd) fail(`${where}: revisit without WARC-Payload-Digest`);
    } else if (pd) {
      let payload = block;
      if (isHttp) {
        payload = httpPayload(block, !!h("WARC-Truncated"), where);
        if (payload === null) {
          fail(`${where}: HTTP block without the end of its headers`);
          payload = Buffer.alloc(0);
        }
      }
      const pcomp = sha1(payload);
      if (!sameDigest(pd, pcomp)) {
        // wget and Heritrix hash the transfer-encoded body (chunk framing
        // included); the standard's payload is the entity without it.
        const e = isHttp ? block.indexOf(CRLF2) : -1;
        const raw = e >= 0 ? sha1(block.subarray(e + 4)) : null;
        if (raw && sameDigest(pd, raw)) {
          const msg = `${where}: WARC-Payload-Digest covers the transfer-encoded body, not the entity`;
          if (allowChunkedDigest) notes.push(msg);
          else fail(msg);
        } else {
          fail(`${where}: WARC-Payload-Digest ${pd}, computed ${pcomp}`);
        }
      }
    } else if (t === "response" && isHttp) {
      fail(`${where}: response without WARC-Payload-Digest`);
    }
    if (t === "response") {
      const k = `${record.warcTargetURI} ${h("WARC-Date")}`;
      if (!responses.has(k)) responses.set(k, []);
      responses.get(k).push({ id, pd });
    }
    for (const f of ["WARC-Concurrent-To", "WARC-Warcinfo-ID", "WARC-Refers-To"]) {
      const v = h(f);
      if (v) for (const one of v.split(/\s*,\s*|\s+/).filter(Boolean)) refs.push([where, f, one]);
    }
  }
  if (recs.length && expect !== size)
    fail(`${file}: records end at ${expect} but the file has ${size} bytes`);
  total += recs.length;
  if (errors.length === before) print(`ok ${file}: ${recs.length} records`);
}

for (const { where, record, pd } of revisits) {
  const uri = unbracket(record.warcHeader("WARC-Refers-To-Target-URI"));
  const date = record.warcHeader("WARC-Refers-To-Date");
  const profile = record.warcHeader("WARC-Profile") || "";
  if (!/\/revisit\/(identical-payload-digest|server-not-modified)$/.test(profile))
    fail(`${where}: unknown WARC-Profile '${profile}'`);
  if (!uri || !date) {
    fail(`${where}: no WARC-Refers-To-Target-URI / WARC-Refers-To-Date`);
    continue;
  }
  const rt = record.warcHeader("WARC-Refers-To");
  // A revisit must name its original by id too: URI + date alone can be
  // ambiguous (the same capture in two files) and replay tools look the
  // id up first.
  if (!rt) fail(`${where}: revisit without WARC-Refers-To`);
  const cands = (responses.get(`${uri} ${date}`) || []).filter((o) => !rt || o.id === rt);
  if (!cands.length) {
    fail(`${where}: refers to ${uri} at ${date}${rt ? ` (${rt})` : ""}: no such response record`);
    continue;
  }
  if (pd && !cands.some((o) => o.pd === pd))
    fail(`${where}: payload digest ${pd} differs from the original's ${cands[0].pd}`);
}
for (const [where, f, id] of refs)
  if (!ids.has(id)) fail(`${where}: ${f} ${id} names no record in these files`);

if (cdxFile) {
  const ours = new Map();
  const lines = readFileSync(cdxFile, "utf8").split("\n").filter(Boolean);
  const sorted = [...lines].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  if (lines.join("\n") !== sorted.join("\n")) fail(`${cdxFile}: lines not in byte order`);
  for (const line of lines) {
    const m = /^(\S+) (\d{14}) (\{.*\})$/.exec(line);
    if (!m) {
      fail(`${cdxFile}: malformed line: ${line}`);
      continue;
    }
    const j = JSON.parse(m[3]);
    ours.set(`${j.filename} ${j.offset}`, { ts: m[2], ...j });
  }
  const indexer = new CDXIndexer({});
  const files = args.map((f) => ({ filename: basename(f), reader: createReadStream(f) }));
  let theirs = 0;
  for await (const r of indexer.iterIndex(files)) {
    theirs++;
    const key = `${r.filename} ${r.offset}`;
    const o = ours.get(key);
    if (!o) {
      fail(`cdx: warcio.js indexes ${key} (${r.url}), kria does not`);
      continue;
    }
    const want = {
      ts: r.timestamp, url: r.url, mime: r.mime,
      status: r.status === undefined || r.status === null ? undefined : String(r.status),
      digest: r.digest ?? computedDigests.get(key)?.replace(/^sha1:/, ""),
      length: String(r.length),
    };
    const got = { ts: o.ts, url: o.url, mime: o.mime, status: o.status,
                  digest: o.digest ? o.digest.replace(/^sha1:/i, "") : undefined, length: o.length };
    for (const k of Object.keys(want))
      if ((want[k] ?? "") !== (got[k] ?? ""))
        fail(`cdx ${key}: ${k} is '${got[k]}', warcio.js says '${want[k]}'`);
  }
  for (const n of consoleNotes.splice(0)) fail(`cdx: ${n}`);
  if (theirs !== ours.size) fail(`cdx: kria has ${ours.size} lines, warcio.js ${theirs}`);
  else print(`ok cdx: ${theirs} lines agree with warcio.js`);
}

for (const n of notes) print(`note: ${n}`);
for (const e of errors) print(`error: ${e}`);
print(`${args.length} files, ${total} records, ${errors.length} errors`);
process.exit(errors.length ? 1 : 0);
