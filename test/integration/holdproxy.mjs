// holdproxy.mjs — a TCP proxy on loopback to 127.0.0.1:TARGET that holds
// whatever its clients send until it gets SIGUSR2, then passes it all on
// in order (and everything after at once); the target's answers pass
// straight back. For cluster_dedup.sh: a Redis that accepts connections
// but answers nothing for a while, then answers late.
//
//   node holdproxy.mjs PORT-FILE TARGET-PORT
//
// writes the port it listens on (ephemeral, 127.0.0.1) to PORT-FILE once
// listening; ends on SIGTERM.
import { createServer, connect } from "node:net";
import { writeFileSync } from "node:fs";

const [portFile, target] = process.argv.slice(2);
if (!portFile || !target) {
  process.stderr.write("usage: node holdproxy.mjs PORT-FILE TARGET-PORT\n");
  process.exit(2);
}
let held = true;
const later = [];
process.on("SIGUSR2", () => {
  held = false;
  for (const send of later.splice(0)) send();
});
process.on("SIGTERM", () => process.exit(0));
const server = createServer((client) => {
  const up = connect(Number(target), "127.0.0.1");
  up.on("data", (d) => client.write(d));
  client.on("data", (d) => (held ? later.push(() => up.write(d)) : up.write(d)));
  client.on("close", () => up.destroy());
  up.on("close", () => client.destroy());
  client.on("error", () => {});
  up.on("error", () => {});
});
server.listen(0, "127.0.0.1", () => writeFileSync(portFile, String(server.address().port)));
