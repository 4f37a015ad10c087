// warclist.mjs — one line per record of WARC files, read with warcio.js
// (pinned in package.json), for tests that count what a crawl wrote:
//
//   node warclist.mjs FILE...
//
// prints "TYPE PROFILE URI [TRUNCATED]" where PROFILE is "identical",
// "not-modified" (revisits), the HTTP status for responses with HTTP
// headers, "-" otherwise; TRUNCATED is WARC-Truncated when present.
// A revisit's line ends in "head=STATUS", the HTTP status of its block,
// or "head=none" when the block is empty.
import { createReadStream } from "node:fs";
import { WARCParser } from "warcio";

const files = process.argv.slice(2);
if (!files.length) {
  process.stderr.write("usage: node warclist.mjs FILE...\n");
  process.exit(2);
}
for (const file of files) {
  const parser = new WARCParser(createReadStream(file), { parseHttp: true });
  for await (const record of parser) {
    const t = record.warcType;
    let p = "-";
    if (t === "revisit") {
      const prof = record.warcHeader("WARC-Profile") || "";
      p = prof.endsWith("/identical-payload-digest") ? "identical"
        : prof.endsWith("/server-not-modified") ? "not-modified" : "unknown";
    } else if (t === "response" && /^application\/http/i.test(record.warcContentType || "") &&
               record.httpHeaders) {
      p = String(record.httpHeaders.statusCode);
    }
    const tr = record.warcHeader("WARC-Truncated");
    const head = t === "revisit"
      ? " head=" + (record.httpHeaders ? String(record.httpHeaders.statusCode) : "none") : "";
    process.stdout.write(`${t} ${p} ${record.warcTargetURI || "-"}${tr ? " " + tr : ""}${head}\n`);
    await record.skipFully();
  }
}
