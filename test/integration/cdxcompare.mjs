// cdxcompare.mjs — kria's CDXJ index of third-party WARC files against
// warcio.js's own CDX indexer (pinned in package.json), field by field.
// For cdx_thirdparty.sh.
//
//   node cdxcompare.mjs KRIA_CDXJ FILE...
//
// Lines are matched by filename and offset; timestamp, url, mime, status,
// digest and length must agree, with these deliberate differences (kria
// follows python's cdxj-indexer, which pywb and replayweb.page's own
// tooling use, where warcio.js differs from it):
//  - url: warcio.js keeps a space in WARC-Target-URI, kria (as python
//    warcio) makes it %20;
//  - digest: warcio.js gives none to a record without
//    WARC-Payload-Digest, kria the one cdxj-indexer computes;
//  - mime: compared up to the first ';' or blank (warcio.js keeps a
//    resource record's parameters, e.g. "text/html; charset=utf-8");
//  - the SURT keys are not compared (warcio.js uses a simplified SURT).
// ARC files are not for this script: warcio.js does not read ARC.
// Prints "ok N lines agree" or "error: ..." lines; exit 0 or 1.
import { createReadStream, readFileSync } from "node:fs";
import { basename } from "node:path";
import { CDXIndexer } from "warcio";

const [cdxFile, ...files] = process.argv.slice(2);
if (!cdxFile || !files.length) {
  process.stderr.write("usage: node cdxcompare.mjs KRIA_CDXJ FILE...\n");
  process.exit(2);
}
const errors = [];
for (const k of ["warn", "error", "log", "info"]) console[k] = () => {};
const ours = new Map();
for (const line of readFileSync(cdxFile, "utf8").split("\n").filter(Boolean)) {
  const m = /^(\S+) (\d{14}) (\{.*\})$/.exec(line);
  if (!m) {
    errors.push(`malformed line: ${line}`);
    continue;
  }
  const j = JSON.parse(m[3]);
  ours.set(`${j.filename} ${j.offset}`, { ts: m[2], ...j });
}
const mimeOf = (m) => (m === undefined || m === null ? undefined : String(m).split(/[;\s]/)[0]);
const indexer = new CDXIndexer({});
let theirs = 0;
for await (const r of indexer.iterIndex(files.map((f) => ({ filename: basename(f), reader: createReadStream(f) })))) {
  theirs++;
  const key = `${r.filename} ${r.offset}`;
  const o = ours.get(key);
  if (!o) {
    errors.push(`warcio.js indexes ${key} (${r.url}), kria does not`);
    continue;
  }
  const want = {
    ts: r.timestamp, url: r.url && r.url.replaceAll(" ", "%20"), mime: mimeOf(r.mime),
    status: r.status === undefined || r.status === null ? undefined : String(r.status),
    digest: r.digest ?? o.digest?.replace(/^sha1:/, ""), length: String(r.length),
  };
  const got = { ts: o.ts, url: o.url, mime: mimeOf(o.mime), status: o.status,
                digest: o.digest?.replace(/^sha1:/, ""), length: o.length };
  for (const k of Object.keys(want))
    if ((want[k] ?? "") !== (got[k] ?? "")) errors.push(`${key}: ${k} is '${got[k]}', warcio.js says '${want[k]}'`);
}
if (theirs !== ours.size) errors.push(`kria has ${ours.size} lines, warcio.js ${theirs}`);
for (const e of errors) process.stdout.write(`error: ${e}\n`);
if (!errors.length) process.stdout.write(`ok ${theirs} lines agree\n`);
process.exit(errors.length ? 1 : 0);
