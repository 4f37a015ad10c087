// warcdigests.mjs — the two readings of WARC-Payload-Digest, read with
// warcio.js (pinned in package.json), for tests about chunked responses:
//
//   node warcdigests.mjs FILE...
//
// prints one tab-separated line per response record with an HTTP block:
//   URI  WARC-PAYLOAD-DIGEST  RAW  TE  X-ORIG-TE
// RAW is the SHA-1 (base32) of the block's bytes after the HTTP head as
// they are, chunk framing included: the payload digest Python warcio's
// `warcio check` (1.x) computes. The spec's reading (the entity, chunks
// joined) is warccheck.mjs's. TE and X-ORIG-TE are the head's
// Transfer-Encoding and X-Orig-Transfer-Encoding values, "-" when absent.
// Exit 1 when a file cannot be read.
import { createReadStream } from "node:fs";
import { WARCParser } from "warcio";
import { sha1Label } from "./sha1label.mjs";


const files = process.argv.slice(2);
if (!files.length) {
  process.stderr.write("usage: node warcdigests.mjs FILE...\n");
  process.exit(2);
}
const field = (head, name) => {
  const m = new RegExp(`^${name}:[ \\t]*(.*?)[ \\t]*\\r?$`, "im").exec(head);
  return m ? m[1] : "-";
};
try {
  for (const file of files) {
    const parser = new WARCParser(createReadStream(file), { parseHttp: false });
    for await (const record of parser) {
      const block = Buffer.from(await record.readFully(false));
      if (record.warcType !== "response" || !/^application\/http/i.test(record.warcContentType || ""))
        continue;
      const end = block.indexOf("\r\n\r\n");
      if (end < 0) continue;
      const head = block.subarray(0, end).toString("latin1");
      const raw = sha1Label(block.subarray(end + 4));
      const line = [record.warcTargetURI, record.warcHeader("WARC-Payload-Digest") || "-", raw,
                    field(head, "Transfer-Encoding"), field(head, "X-Orig-Transfer-Encoding")];
      process.stdout.write(line.join("\t") + "\n");
    }
  }
} catch (e) {
  process.stderr.write(`warcdigests.mjs: ${e.message}\n`);
  process.exit(1);
}
