// warcrecs.mjs — where each record of WARC files is, read with warcio.js
// (pinned in package.json), for tests about which file holds which record:
//
//   node warcrecs.mjs FILE...
//
// prints one tab-separated line per record, in the order of the files as
// given and of the records in each:
//   FILE  TYPE  RECORD-ID  CONCURRENT-TO (or -)  URI (or -)  VIA (or -)
// FILE is the base name; VIA is the "via:" field of a metadata record's
// block. Exit 1 when a file cannot be read.
import { createReadStream } from "node:fs";
import { basename } from "node:path";
import { WARCParser } from "warcio";

const files = process.argv.slice(2);
if (!files.length) {
  process.stderr.write("usage: node warcrecs.mjs FILE...\n");
  process.exit(2);
}
try {
  for (const file of files) {
    const parser = new WARCParser(createReadStream(file));
    for await (const record of parser) {
      const t = record.warcType;
      let via = "-";
      if (t === "metadata") {
        const m = /^via: *(.*?)\r?$/m.exec(await record.contentText());
        if (m) via = m[1];
      } else {
        await record.skipFully();
      }
      const line = [basename(file), t, record.warcHeader("WARC-Record-ID"),
                    record.warcHeader("WARC-Concurrent-To") || "-",
                    record.warcTargetURI || "-", via];
      process.stdout.write(line.join("\t") + "\n");
    }
  }
} catch (e) {
  process.stderr.write(`warcrecs.mjs: ${e.message}\n`);
  process.exit(1);
}
