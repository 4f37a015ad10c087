// warcrefs.mjs — what each response and revisit record of WARC files names
// and refers to, read with warcio.js (pinned in package.json), for tests
// about revisits across files (cluster_dedup.sh):
//
//   node warcrefs.mjs FILE...
//
// prints one tab-separated line per response or revisit record:
//   DIR  TYPE  RECORD-ID  URI  DATE  PAYLOAD-DIGEST  PROFILE  REFERS-TO
//   REFERS-TO-TARGET-URI  REFERS-TO-DATE
// DIR is the name of the file's directory's parent (the member's state
// directory when FILE is STATE/warcs/NAME); "-" for an absent field.
// Exit 1 when a file cannot be read.
import { createReadStream } from "node:fs";
import { basename, dirname } from "node:path";
import { WARCParser } from "warcio";

const files = process.argv.slice(2);
if (!files.length) {
  process.stderr.write("usage: node warcrefs.mjs FILE...\n");
  process.exit(2);
}
const h = (r, name) => r.warcHeader(name) || "-";
try {
  for (const file of files) {
    const parser = new WARCParser(createReadStream(file));
    for await (const r of parser) {
      await r.skipFully();
      if (r.warcType !== "response" && r.warcType !== "revisit") continue;
      const line = [basename(dirname(dirname(file))), r.warcType, h(r, "WARC-Record-ID"),
                    r.warcTargetURI || "-", h(r, "WARC-Date"), h(r, "WARC-Payload-Digest"),
                    h(r, "WARC-Profile"), h(r, "WARC-Refers-To"),
                    h(r, "WARC-Refers-To-Target-URI"), h(r, "WARC-Refers-To-Date")];
      process.stdout.write(line.join("\t") + "\n");
    }
  }
} catch (e) {
  process.stderr.write(`warcrefs.mjs: ${e.message}\n`);
  process.exit(1);
}
