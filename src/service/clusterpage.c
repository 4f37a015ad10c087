/*
 * A cluster's snapshot as text, JSON and the console's cluster page
 * (clusterpage.h). The text and the JSON are what `kria status
 * --cluster [--json]` prints; /cluster.json is the same JSON read by the
 * running crawl. Absent figures (a member not seen, a stream without its
 * group yet) are "-" in the text and null in the JSON.
 */
#include "clusterpage.h"

#include <inttypes.h>
#include <string.h>

#include "console.h"
#include "status.h"

static int64_t age(int64_t at, uint64_t now) {
  if (at < 0) return -1;
  return (uint64_t)at < now ? (int64_t)(now - (uint64_t)at) : 0;
}

void kr_clusterpage_text(const kr_clusterview_t *v, uint64_t now, kr_buf_t *out) {
  kr_buf_printf(out, "%-16s %10s", "member", "seen");
  for (size_t k = 0; k < KR_BEAT__COUNT; k++)
    kr_buf_printf(out, " %*s", kr_clusterview_beat_widths[k], kr_clusterview_beat_names[k]);
  kr_buf_printf(out, " %7s %7s\n", "stream", "pending");
  for (size_t i = 0; i < v->n; i++) {
    const kr_clusterview_member_t *m = &v->m[i];
    char ago[32];
    if (m->at >= 0) snprintf(ago, sizeof ago, "%.1f s ago", (double)age(m->at, now) / 1000.0);
    else snprintf(ago, sizeof ago, "not seen");
    kr_buf_printf(out, "%-16s %10s", m->name, ago);
    for (size_t k = 0; k < KR_BEAT__COUNT; k++) {
      if (m->beat[k] >= 0) kr_buf_printf(out, " %*" PRId64, kr_clusterview_beat_widths[k], m->beat[k]);
      else kr_buf_printf(out, " %*s", kr_clusterview_beat_widths[k], "-");
    }
    /* no group yet: the member never connected */
    int64_t sp[2] = {m->stream, m->pending};
    for (int k = 0; k < 2; k++) {
      if (sp[k] >= 0) kr_buf_printf(out, " %7" PRId64, sp[k]);
      else kr_buf_printf(out, " %7s", "-");
    }
    kr_buf_append_str(out, "\n");
  }
  kr_buf_printf(out, "cluster %s on Redis %s: %zu members, %zu seen in the last 10 s\n", v->prefix,
                v->redis, v->n, kr_clusterview_seen(v));
}

static void json_key(kr_buf_t *out, int first, const char *k) {
  kr_buf_printf(out, "%s\"%s\":", first ? "" : ",", k);
}
static void json_num(kr_buf_t *out, const char *k, int64_t n) {
  json_key(out, 0, k);
  if (n >= 0) kr_buf_printf(out, "%" PRId64, n);
  else kr_buf_append_str(out, "null");
}
static void json_str(kr_buf_t *out, const char *k, const char *s) {
  json_key(out, 0, k);
  kr_status_json_str(out, s, strlen(s));
}

/* What a member's row and the totals hold, past its name and age. */
static void json_figures(kr_buf_t *out, const int64_t beat[KR_BEAT__COUNT], int64_t stream,
                         int64_t pending) {
  for (size_t k = 0; k < KR_BEAT__COUNT; k++) json_num(out, kr_clusterview_beat_names[k], beat[k]);
  json_num(out, "stream", stream);
  json_num(out, "pending", pending);
}

static void add(int64_t *sum, int64_t v) {
  if (v < 0) return;
  *sum = *sum < 0 ? v : *sum + v;
}

void kr_clusterpage_json(const kr_clusterview_t *v, uint64_t now, kr_buf_t *out) {
  if (!v) {
    kr_buf_append_str(out, "{\"on\":false}");
    return;
  }
  kr_buf_append_str(out, "{\"on\":true");
  json_str(out, "prefix", v->prefix);
  json_str(out, "redis", v->redis);
  json_str(out, "node", v->self);
  json_key(out, 0, "redis_up");
  kr_buf_append_str(out, v->redis_down ? "false" : "true");
  json_num(out, "taken_ms_ago", v->taken ? age((int64_t)v->taken, now) : -1);
  json_key(out, 0, "members");
  kr_buf_append_str(out, "[");
  int64_t beat[KR_BEAT__COUNT], stream = -1, pending = -1;
  for (size_t k = 0; k < KR_BEAT__COUNT; k++) beat[k] = -1;
  for (size_t i = 0; i < v->n; i++) {
    const kr_clusterview_member_t *m = &v->m[i];
    kr_buf_append_str(out, i ? ",{" : "{");
    json_key(out, 1, "node");
    kr_status_json_str(out, m->name, strlen(m->name));
    json_num(out, "seen_ms_ago", age(m->at, now));
    json_figures(out, m->beat, m->stream, m->pending);
    kr_buf_append_str(out, "}");
    for (size_t k = 0; k < KR_BEAT__COUNT; k++) add(&beat[k], m->beat[k]);
    add(&stream, m->stream);
    add(&pending, m->pending);
  }
  kr_buf_append_str(out, "]");
  json_num(out, "seen", (int64_t)kr_clusterview_seen(v));
  json_key(out, 0, "missing"); /* expected, no heartbeat */
  kr_buf_append_str(out, "[");
  int first = 1;
  for (size_t i = 0; i < v->n; i++) {
    if (v->m[i].at >= 0) continue;
    if (!first) kr_buf_append_str(out, ",");
    kr_status_json_str(out, v->m[i].name, strlen(v->m[i].name));
    first = 0;
  }
  kr_buf_append_str(out, "]");
  json_key(out, 0, "totals"); /* over the members seen; streams over those known */
  kr_buf_append_str(out, "{\"members\":");
  kr_buf_printf(out, "%zu", v->n);
  json_figures(out, beat, stream, pending);
  kr_buf_append_str(out, "}}");
}

/* ---- the page ------------------------------------------------------------------------------- */

/* One row per member of cluster.nodes, in its order (tr id m-NAME, class
 * "missing" without a heartbeat), tiles for the cluster's totals. */
const char kr__clusterpage_html[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
    "<title>kria cluster</title>\n<style>\n" KR_CONSOLE_STYLE
    "main section{grid-column:1/-1}\ntr.missing td{color:var(--bad)}\n"
    "</style></head><body>\n"
    "<header><h1>kria</h1><span class=\"pill\">cluster</span><span id=\"name\" class=\"mute\"></span>"
    "<span id=\"taken\" class=\"mute\"></span><span id=\"err\" class=\"bad\"></span></header>\n"
    "<main>\n<div class=\"tiles\" id=\"tiles\"></div>\n"
    "<section><h2>Members &middot; from their heartbeats in Redis</h2><table><thead><tr>"
    "<th>member</th><th>heartbeat</th><th>fetched</th><th>hosts</th><th>URIs</th><th>queued</th>"
    "<th>links sent</th><th>received</th><th>acked</th><th>outbox</th><th>held</th>"
    "<th>in stream</th><th>unacked</th></tr></thead><tbody id=\"members\"></tbody></table>"
    "<p class=\"mute\" id=\"note\"></p></section>\n</main>\n"
    "<footer>Refreshes every 2 s from <a class=\"mute\" href=\"cluster.json\">/cluster.json</a> "
    "&middot; <a class=\"mute\" href=\"./\">console</a></footer>\n"
    "<script>\n'use strict';\n" KR_CONSOLE_JS
    "const COLS=['fetched','hosts','uris','queued','sent','received','acked','outbox','held',"
    "'stream','pending'];\n"
    "function render(v){\n"
    "if(!v.on){$('name').textContent='this crawl runs alone';$('tiles').replaceChildren();"
    "$('members').replaceChildren();$('note').textContent='No [cluster] in its configuration: "
    "there are no other members to show.';return}\n"
    "$('name').textContent=v.prefix+' on Redis '+v.redis+(v.node?' \\u00b7 this is '+v.node:'');\n"
    "$('taken').textContent=v.taken_ms_ago==null?'first reading pending':"
    "'read '+dur(v.taken_ms_ago)+' ago';\n"
    "if(!v.redis_up)$('err').textContent='Redis unreachable: the figures are from the last reading';\n"
    "const t=v.totals;\n"
    "$('tiles').replaceChildren(tile('members seen',v.seen+' / '+t.members),"
    "tile('fetched',num(t.fetched)),tile('hosts',num(t.hosts)),tile('links sent',num(t.sent)),"
    "tile('links received',num(t.received)),tile('in streams',num(t.stream)),"
    "tile('unacknowledged',num(t.pending)),tile('in outboxes',num(t.outbox)));\n"
    "const tb=$('members');tb.replaceChildren();for(const m of v.members){const tr=el('tr',"
    "m.seen_ms_ago==null?'missing':null);tr.id='m-'+m.node;"
    "tr.append(el('td',null,m.node+(m.node===v.node?' (this)':'')));"
    "tr.append(el('td',null,m.seen_ms_ago==null?'missing':dur(m.seen_ms_ago)+' ago'));"
    "for(const k of COLS){const td=el('td',null,m[k]==null?'-':String(m[k]));td.dataset.k=k;"
    "tr.append(td)}tb.append(tr)}\n"
    "$('note').textContent=v.missing.length?'expected but missing (no heartbeat in 10 s): '+"
    "v.missing.join(', '):'every member of cluster.nodes is seen'}\n"
    "async function refresh(){try{const r=await fetch('cluster.json',{cache:'no-store'});"
    "if(!r.ok)throw new Error('HTTP '+r.status);$('err').textContent='';render(await r.json())}"
    "catch(e){$('err').textContent='cluster view unavailable: '+e.message}}\n"
    "refresh();setInterval(refresh,2000);\n"
    "</script></body></html>\n";
const size_t kr__clusterpage_len = sizeof kr__clusterpage_html - 1;
