// warcvisits.mjs — the visits WARC files hold, read with warcio.js (pinned
// in package.json), for tests that compare them with the state store
// (crawl_soak.sh):
//
//   node warcvisits.mjs FILE...
//
// prints one tab-separated line per response or revisit record, in the
// order of the files as given and of the records in each:
//   URI  WARC-DATE-MS  TYPE  REFERS-TO-DATE-MS (or -)  PAYLOAD-DIGEST (or -)
// Dates are epoch milliseconds. Exit 1 when a file cannot be read.
import { createReadStream } from "node:fs";
import { WARCParser } from "warcio";

const files = process.argv.slice(2);
if (!files.length) {
  process.stderr.write("usage: node warcvisits.mjs FILE...\n");
  process.exit(2);
}
const ms = (d) => (d ? String(Date.parse(d)) : "-");
try {
  for (const file of files) {
    const parser = new WARCParser(createReadStream(file));
    for await (const record of parser) {
      const t = record.warcType;
      if (t !== "response" && t !== "revisit") continue;
      const line = [
        record.warcTargetURI,
        ms(record.warcDate),
        t,
        ms(record.warcHeader("WARC-Refers-To-Date")),
        record.warcHeader("WARC-Payload-Digest") || "-",
      ].join("\t");
      process.stdout.write(line + "\n");
    }
  }
} catch (e) {
  process.stderr.write(`warcvisits: ${e.message}\n`);
  process.exit(1);
}
