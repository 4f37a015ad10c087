// sha1label.mjs — a SHA-1 as WARC files write it ("sha1:" and RFC 4648
// base32, as in WARC-Payload-Digest), for the test scripts that compute
// digests themselves.
import { createHash } from "node:crypto";

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function base32(buf) {
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

export const sha1Label = (bytes) => "sha1:" + base32(createHash("sha1").update(bytes).digest());
