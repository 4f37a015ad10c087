// warctls.mjs — the TLS certificate records of WARC files, read with
// warcio.js (pinned in package.json):
//
//   node warctls.mjs FILE...
//
// prints one tab-separated line per metadata record whose block names a
// TLS version (kria writes one a TLS connection), in file order:
//   URI  CONTENT-TYPE  CONCURRENT-TYPE  CONCURRENT-URI  VERSION  RESUMED
//   VERIFY  CODE  ERROR  NCERTS  LEAF-SHA256
// CONCURRENT-* describe the record its WARC-Concurrent-To names ("-" when
// no record of the files has that id); LEAF-SHA256 is the SHA-256 of the
// first peerCertificate (base64 DER), in lower-case hex. Exit 1 when a
// file cannot be read.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { WARCParser } from "warcio";

const files = process.argv.slice(2);
if (!files.length) {
  process.stderr.write("usage: node warctls.mjs FILE...\n");
  process.exit(2);
}
const byId = new Map();
const tls = [];
try {
  for (const file of files) {
    const parser = new WARCParser(createReadStream(file));
    for await (const record of parser) {
      const id = record.warcHeader("WARC-Record-ID");
      byId.set(id, { type: record.warcType, uri: record.warcTargetURI || "-" });
      if (record.warcType !== "metadata") {
        await record.skipFully();
        continue;
      }
      const text = await record.contentText();
      if (!/^tlsVersion: /m.test(text)) continue;
      const f = (name) => {
        const m = new RegExp(`^${name}: *(.*?)\\r?$`, "m").exec(text);
        return m ? m[1] : "-";
      };
      const certs = [...text.matchAll(/^peerCertificate: *([A-Za-z0-9+/=]+)\r?$/gm)].map((m) => m[1]);
      const leaf = certs.length
        ? createHash("sha256").update(Buffer.from(certs[0], "base64")).digest("hex")
        : "-";
      tls.push({
        uri: record.warcTargetURI || "-",
        ctype: record.warcHeader("Content-Type") || "-",
        to: record.warcHeader("WARC-Concurrent-To") || "-",
        rest: [f("tlsVersion"), f("tlsResumed"), f("tlsVerifyResult"), f("tlsVerifyCode"),
               f("tlsVerifyError"), certs.length, leaf],
      });
    }
  }
} catch (e) {
  process.stderr.write(`warctls.mjs: ${e.message}\n`);
  process.exit(1);
}
for (const t of tls) {
  const c = byId.get(t.to) || { type: "-", uri: "-" };
  process.stdout.write([t.uri, t.ctype, c.type, c.uri, ...t.rest].join("\t") + "\n");
}
