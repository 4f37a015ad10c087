// A small WebSub publisher and hub on loopback for test/integration/websub.sh.
// One server: GET /feed.xml (an Atom feed; its Link headers name /hub
// and the feed, relative, while the document names another hub; its
// subtitle changes with each signed push that changed something, its
// items stay dated in 2000), /item1 and /item2
// (pages, changed by each signed push of their item); POST /hub takes
// subscription requests (202), then verifies intent at the callback as
// the hub grants LEASE seconds (unless silent).
// Control for the test: GET /_ctl/state (JSON: subscription requests,
// verifications, GETs per path), POST /_ctl/push?sig=good|bad|none
// &item=N&token=TOKEN&change=0 (sign and push a feed whose item N is
// dated in 2099 to the last subscriber's callback, or TOKEN's; answers
// with the status kria gave; change=0: a push of nothing new, the feed
// and the item stay as they are), POST /_ctl/deny (hub.mode=denied at
// the callback), POST /_ctl/silent?on=1|0 (take requests, never verify).
// Usage: node websub_hub.mjs PORTFILE LEASE
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';

const [portFile, leaseArg] = process.argv.slice(2);
const lease = Number(leaseArg || 3);
const state = { requests: [], verified: [], gets: {}, versions: {}, feedVersion: 0, silent: false };
let base = '';

// docHub: the hub the document names (the Link headers of GET /feed.xml
// name the real one, and take precedence)
function feed(newItem, docHub = `${base}/hub`, version = 0) {
  const date = (n) => (n === newItem ? '2099-01-01T00:00:00Z' : '2000-01-01T00:00:00Z');
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><subtitle>version ${version}</subtitle>
<link rel="hub" href="${docHub}"/><link rel="self" href="${base}/feed.xml"/>
<updated>2000-01-01T00:00:00Z</updated>
<entry><id>1</id><link href="${base}/item1"/><updated>${date(1)}</updated></entry>
<entry><id>2</id><link href="${base}/item2"/><updated>${date(2)}</updated></entry>
</feed>`;
}

function body(req) {
  return new Promise((resolve) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => resolve(Buffer.concat(parts)));
  });
}

async function verify(sub) {
  const u = new URL(sub.callback);
  u.searchParams.set('hub.mode', 'subscribe');
  u.searchParams.set('hub.topic', sub.topic);
  const challenge = crypto.randomBytes(12).toString('hex');
  u.searchParams.set('hub.challenge', challenge);
  u.searchParams.set('hub.lease_seconds', String(lease));
  const r = await fetch(u);
  const text = await r.text();
  state.verified.push({ callback: sub.callback, status: r.status, echoed: text === challenge });
  // a wrong topic must not be confirmed
  const w = new URL(u);
  w.searchParams.set('hub.topic', sub.topic + 'x');
  state.wrongTopic = (await fetch(w)).status;
}

async function push(q) {
  const sub = state.requests[state.requests.length - 1];
  const token = q.get('token');
  const url = token ? sub.callback.replace(/[^/]*$/, token) : sub.callback;
  const sig = q.get('sig') || 'good';
  const item = Number(q.get('item') || 1);
  const doc = Buffer.from(feed(item));
  // the pushed item's page and the feed change with the push, unless
  // it announces nothing new (change=0)
  if (sig === 'good' && q.get('change') !== '0') {
    state.versions[`/item${item}`] = (state.versions[`/item${item}`] || 0) + 1;
    state.feedVersion++;
  }
  const headers = { 'Content-Type': 'application/atom+xml' };
  if (sig !== 'none') {
    const key = sig === 'good' ? sub.secret : 'not the secret';
    headers['X-Hub-Signature'] = 'sha256=' + crypto.createHmac('sha256', key).update(doc).digest('hex');
  }
  const r = await fetch(url, { method: 'POST', headers, body: doc });
  return r.status;
}

const server = http.createServer(async (req, res) => {
  const u = new URL(req.url, base);
  if (req.method === 'GET' && !u.pathname.startsWith('/_ctl/'))
    state.gets[u.pathname] = (state.gets[u.pathname] || 0) + 1;
  if (req.method === 'GET' && u.pathname === '/feed.xml') {
    res.writeHead(200, {
      'Content-Type': 'application/atom+xml',
      Link: `<${base}/hub>; rel="hub", </feed.xml>; rel="self"`,
    });
    res.end(feed(0, `${base}/not-the-hub`, state.feedVersion));
  } else if (req.method === 'GET' && /^\/item[12]$/.test(u.pathname)) {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<p>${u.pathname} version ${state.versions[u.pathname] || 0}</p>`);
  } else if (req.method === 'POST' && u.pathname === '/hub') {
    const form = new URLSearchParams((await body(req)).toString());
    const sub = {
      mode: form.get('hub.mode'), topic: form.get('hub.topic'), callback: form.get('hub.callback'),
      secret: form.get('hub.secret'), lease: form.get('hub.lease_seconds'),
      type: req.headers['content-type'],
    };
    state.requests.push(sub);
    res.writeHead(202);
    res.end();
    if (!state.silent) verify(sub).catch((e) => state.verified.push({ error: String(e) }));
  } else if (u.pathname === '/_ctl/state') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(state));
  } else if (req.method === 'POST' && u.pathname === '/_ctl/silent') {
    await body(req);
    state.silent = u.searchParams.get('on') === '1';
    res.writeHead(200);
    res.end(String(state.silent));
  } else if (req.method === 'POST' && u.pathname === '/_ctl/deny') {
    // the hub withdraws the subscription (WebSub 5.2: hub.mode=denied)
    await body(req);
    const sub = state.requests[state.requests.length - 1];
    const d = new URL(sub.callback);
    d.searchParams.set('hub.mode', 'denied');
    d.searchParams.set('hub.topic', sub.topic);
    d.searchParams.set('hub.reason', 'test');
    const r = await fetch(d);
    res.writeHead(200);
    res.end(String(r.status));
  } else if (req.method === 'POST' && u.pathname === '/_ctl/push') {
    await body(req);
    try {
      const status = await push(u.searchParams);
      res.writeHead(200);
      res.end(String(status));
    } catch (e) {
      res.writeHead(500);
      res.end(String(e));
    }
  } else {
    res.writeHead(404);
    res.end();
  }
});
server.listen(0, '127.0.0.1', () => {
  base = `http://127.0.0.1:${server.address().port}`;
  fs.writeFileSync(portFile + '.tmp', String(server.address().port));
  fs.renameSync(portFile + '.tmp', portFile);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
