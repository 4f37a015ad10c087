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
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { WARCParser } from "warcio";

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
function base32(buf) {
  let bits = 0, value = 0, out = "";
  for (const b of buf) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

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
      const raw = "sha1:" + base32(createHash("sha1").update(block.subarray(end + 4)).digest());
      const line = [record.warcTargetURI, record.warcHeader("WARC-Payload-Digest") || "-", raw,
                    field(head, "Transfer-Encoding"), field(head, "X-Orig-Transfer-Encoding")];
      process.stdout.write(line.join("\t") + "\n");
    }
  }
} catch (e) {
  process.stderr.write(`warcdigests.mjs: ${e.message}\n`);
  process.exit(1);
}
