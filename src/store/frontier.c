/*
 * The frontier (see frontier.h for the model): host queues in memory over
 * URI rows in the store. This file keeps the host table (by name and by
 * id), the ready list fed by the timer wheel, the seen filter in front of
 * every insert, the URIs in flight, statistics and limits; the rules of
 * one host queue live in hostq.c. Every change to a host goes through
 * kr__frontier_rearm(), which derives its ready time and puts it on the
 * wheel, on the ready list, or nowhere. Sections here: options, host
 * table, dispatch (wheel, ready list), a host's heads, queue keys, adding,
 * issuing, completing, writes held back during a drain. Opening, recovery
 * and closing are in frontier_open.c; prerequisites, the hosts API,
 * reports and validation in frontier_hosts.c; the Retry-After parser in
 * frontier_retry_after.c; frontier_int.h is what they share.
 */
#include "frontier.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "frontier_int.h"
#include "hostq.h"
#include "internal.h"
#include "kria/fp.h"
#include "kria/seen.h"
#include "kria/url.h"
#include "log.h"
#include "turnprof.h"

static int finish_now(kr_frontier_t *f, kr_curi_t *c, const kr_outcome_t *o,
                      const kr_link_t *links, size_t nlinks, uint64_t now);
static int finish_held(kr_frontier_t *f, kr_curi_t *c, const kr_outcome_t *o,
                       const kr_link_t *links, size_t nlinks, uint64_t now);
static void queue_op(kr_frontier_t *f, kr_hostq_t *h, const kr_uri_row_t *row,
                     const kr_link_t *links, size_t nlinks, uint64_t now);
static int add_batch_now(kr_frontier_t *f, const kr_link_t *links, size_t n,
                         uint64_t now, size_t *added);

/* ---- options ------------------------------------------------------------- */

void kr_frontier_opts_default(kr_frontier_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->delay_factor = 5.0;
  o->min_delay_ms = 2000;
  o->max_delay_ms = 5000;
  o->respect_crawl_delay_up_to_ms = 300000;
  o->host_valence = 1;
  o->retry_delay_ms = 900000;
  o->max_retries = 30;
  o->revisit_failed = 1;
  o->failed_wait_ms = UINT64_C(86400000);
  o->default_wait_ms = UINT64_C(259200000);
  o->backoff_initial_ms = 60000;
  o->backoff_max_ms = 3600000;
  o->host_failures_before_backoff = 3;
  o->max_uris_per_host = 100000;
  o->retire_after = 3;
  o->retired_wait_ms = UINT64_C(7776000000);
  o->revisit = 1;
  o->preference_embed_hops = 0;
  o->max_connections = 4096;
  o->queue_assign = KR_QUEUE_BY_HOST;
  o->commit_ms = 50;
  o->commit_updates = 1000;
  o->seen_open_budget_ms = 500;
  o->seen_turn_step = 50000;
  o->quick_check = 2;
  o->cache_mib = 64;
  o->wal_checkpoint_mib = 256;
  o->page_size = 4096;
}

/* ---- host table ------------------------------------------------------------ */

/* Only statistics changed (finished, succeeded, bytes...): the row is
 * written with a commit at most every HOST_STATS_FLUSH_MS, so a revisit
 * costs one row write, not two. A crash can lose that much of these
 * counters; discovered and queued are always exact. */
#define HOST_STATS_FLUSH_MS 5000
static void mark_stats(kr_frontier_t *f, kr_hostq_t *h) {
  if (h->dirty) return;
  h->dirty = 1;
  h->dirty_next = f->dirty;
  f->dirty = h;
}

static void map_put(kr_frontier_t *f, kr_hostq_t *h) {
  if ((f->nhosts + 1) * 2 > f->map_cap) {
    size_t cap = f->map_cap ? f->map_cap * 2 : 64;
    kr_hostq_t **m = kr_xcalloc(cap, sizeof(*m));
    for (size_t i = 0; i < f->map_cap; i++) {
      kr_hostq_t *x = f->map[i];
      if (!x) continue;
      size_t j = x->hash & (cap - 1);
      while (m[j]) j = (j + 1) & (cap - 1);
      m[j] = x;
    }
    free(f->map);
    f->map = m;
    f->map_cap = cap;
  }
  size_t j = h->hash & (f->map_cap - 1);
  while (f->map[j]) j = (j + 1) & (f->map_cap - 1);
  f->map[j] = h;
}

/* A new in-memory host queue (the row exists already). */
kr_hostq_t *kr__frontier_host_new(kr_frontier_t *f, int64_t id, const char *name, size_t len) {
  kr_hostq_t *h = kr_xcalloc(1, sizeof(*h));
  h->f = f;
  h->id = id;
  h->name = kr_xstrndup(name, len);
  h->name_len = len;
  h->hash = kr_fp(name, len);
  h->crawl_delay_ms = -1;
  kr_wheel_entry_init(&h->timer, NULL);
  kr__hostq_set_valence(h, f->opts.host_valence);
  if (f->nhosts == f->hosts_cap) {
    f->hosts_cap = f->hosts_cap ? f->hosts_cap * 2 : 64;
    f->hosts = kr_xrealloc(f->hosts, f->hosts_cap * sizeof(*f->hosts));
  }
  f->hosts[f->nhosts] = h;
  map_put(f, h);
  f->nhosts++;
  if ((size_t)id >= f->by_id_cap) {
    size_t cap = f->by_id_cap ? f->by_id_cap : 64;
    while (cap <= (size_t)id) cap *= 2;
    f->by_id = kr_xrealloc(f->by_id, cap * sizeof(*f->by_id));
    memset(f->by_id + f->by_id_cap, 0, (cap - f->by_id_cap) * sizeof(*f->by_id));
    f->by_id_cap = cap;
  }
  f->by_id[id] = h;
  return h;
}

void kr__frontier_host_free(kr_hostq_t *h) {
  kr_timer_stop(&h->timer);
  for (kr_curi_t *c = h->inflight, *n; c; c = n) {
    n = c->next_inflight;
    free(c);
  }
  free(h->slots);
  free(h->name);
  free(h->rekey_url);
  free(h->learned);
  free(h);
}

static void host_row(const kr_hostq_t *h, kr_host_row_t *r) {
  memset(r, 0, sizeof(*r));
  r->id = h->id;
  r->name = h->name;
  r->name_len = h->name_len;
  r->robots_expires = h->robots_expires;
  r->robots_status = h->robots_status;
  r->crawl_delay_ms = h->crawl_delay_ms;
  r->backoff_level = h->backoff_level;
  r->backoff_until = h->backoff_until;
  r->fail_streak = h->fail_streak;
  r->c = h->c;
  r->vt = h->vt;
}

/* Pre-commit: write the rows of the hosts changed in this transaction. */
int kr__frontier_flush_hosts(void *ud) {
  kr_frontier_t *f = ud;
  uint64_t now = kr_clock_now_ms(f->clock);
  int all = f->flush_all || now >= f->stats_flushed_at + HOST_STATS_FLUSH_MS;
  kr_hostq_t *keep = NULL;
  while (f->dirty) {
    kr_hostq_t *h = f->dirty;
    f->dirty = h->dirty_next;
    /* Statistics only: later. A host whose rows wait for a drain: once
     * they are written (its counters already count them). */
    if ((h->dirty < 2 && !all) || h->pending_rows) {
      h->dirty_next = keep;
      keep = h;
      continue;
    }
    kr_host_row_t r;
    host_row(h, &r);
    if (kr_store_host_update(f->st, &r) < 0 ||
        (h->learned_dirty &&
         kr_store_host_set_learned(f->st, h->id, h->learned, h->learned_len) < 0)) {
      h->dirty_next = f->dirty; /* keep the rest for the next commit */
      f->dirty = h;
      while (keep) {
        kr_hostq_t *k = keep;
        keep = k->dirty_next;
        k->dirty_next = f->dirty;
        f->dirty = k;
      }
      return KR_EDB;
    }
    if (h->learned_dirty) { /* in the row now: the crawl keeps it decoded */
      h->learned_dirty = 0;
      free(h->learned);
      h->learned = NULL;
      h->learned_len = 0;
    }
    h->dirty = 0;
    h->dirty_next = NULL;
  }
  f->dirty = keep;
  if (all) f->stats_flushed_at = now;
  return 0;
}

/* Add delta to a counter of h and of the totals. */
#define COUNT(f, h, field, delta)  \
  do {                             \
    (h)->c.field += (delta);       \
    (f)->total.field += (delta);   \
  } while (0)

/* ---- dispatch ---------------------------------------------------------------- */

static void ready_remove(kr_frontier_t *f, kr_hostq_t *h) {
  if (!h->on_ready_list) return;
  if (h->ready_prev)
    h->ready_prev->ready_next = h->ready_next;
  else
    f->ready_head = h->ready_next;
  if (h->ready_next)
    h->ready_next->ready_prev = h->ready_prev;
  else
    f->ready_tail = h->ready_prev;
  h->ready_prev = h->ready_next = NULL;
  h->on_ready_list = 0;
  f->nready--;
}

static void ready_append(kr_frontier_t *f, kr_hostq_t *h) {
  h->ready_prev = f->ready_tail;
  h->ready_next = NULL;
  if (f->ready_tail)
    f->ready_tail->ready_next = h;
  else
    f->ready_head = h;
  f->ready_tail = h;
  h->on_ready_list = 1;
  f->nready++;
}

/* The wheel reached h's ready time: it joins the back of the ready list. */
static void on_host_timer(kr_wheel_entry_t *e) {
  kr_hostq_t *h = container_of(e, kr_hostq_t, timer);
  kr_frontier_t *f = h->f;
  uint64_t now = kr_clock_now_ms(f->clock);
  uint64_t t = kr__hostq_ready_at(h);
  if (t > now) { /* moved later without a rearm: cannot happen, but heal */
    (void)KR_COUNT_IF(1);
    kr__frontier_rearm(f, h, now);
    return;
  }
  if (h->on_ready_list) return;
  int was_empty = f->ready_head == NULL;
  ready_append(f, h);
  if (was_empty && f->on_ready) f->on_ready(f, f->on_ready_ud);
}

/* Bring h's dispatch in line with its derived ready time: nowhere when it
 * is busy, empty or held; on the ready list when it is there and still
 * ready; else one wheel entry at the ready time. An entry already due
 * keeps its place in the wheel's FIFO. */
void kr__frontier_rearm(kr_frontier_t *f, kr_hostq_t *h, uint64_t now) {
  uint64_t t = kr__hostq_ready_at(h);
  if (t >= KR_NEVER) {
    kr_timer_stop(&h->timer);
    ready_remove(f, h);
    return;
  }
  if (h->on_ready_list) {
    if (t <= now) return;
    ready_remove(f, h);
  }
  if (kr_timer_is_active(&h->timer)) {
    uint64_t due = h->timer.due;
    if (due == t || (due <= now && t <= now)) return;
  }
  kr_timer_start(f->timers, &h->timer, t, on_host_timer);
}

/* The hosts kr_frontier_next() left off the ready list while their move
 * to their address' queue waited for held-back writes. */
void kr__frontier_rekey_rearm(kr_frontier_t *f, uint64_t now) {
  for (size_t i = 0; i < f->nhosts; i++)
    if (f->hosts[i]->rekey_url) kr__frontier_rearm(f, f->hosts[i], now);
}

/* ---- a host's heads ------------------------------------------------------------ */

/* Refill h's heads from its index. URIs in flight are skipped (their rows
 * keep the key they were issued with until they finish), and so are rows
 * whose write waits for a drain: their new keys come from the pending
 * list. Asking for in_flight + pending + KR_HEADS rows leaves KR_HEADS
 * usable ones whenever the store holds that many. */
int kr__frontier_fill_heads(kr_frontier_t *f, kr_hostq_t *h) {
  size_t want = h->in_flight + h->pending_rows + KR_HEADS;
  if (want > f->pick_cap) {
    f->pick_cap = want * 2;
    f->pick = kr_xrealloc(f->pick, f->pick_cap * sizeof(*f->pick));
  }
  int n = kr_store_pick(f->st, h->id, f->pick, (int)want);
  if (n < 0) return n;
  kr_head_t v[KR_HEADS];
  size_t k = 0, usable = 0;
  for (int i = 0; i < n; i++) {
    uint64_t fp = f->pick[i].fp;
    if (h->in_flight && in_flight_on(h, fp)) continue;
    if (h->pending_rows && kr__frontier_pending_row(f, fp)) continue;
    usable++;
    if (k < KR_HEADS)
      v[k++] = (kr_head_t){.fp = fp, .next_at = f->pick[i].next_at,
                           .dir = f->pick[i].directive};
  }
  int full = (size_t)n == want; /* the store may hold more after the last */
  kr__hostq_heads_set(h, v, k, full || usable > KR_HEADS);
  /* Rows waiting for a drain, at their new keys (each URI's newest; those
   * in flight again are skipped). Past the last row read while the store
   * holds more, a key is left out: the next refill offers it again. */
  const kr_store_pick_t *last = n > 0 ? &f->pick[n - 1] : NULL;
  for (pending_t *p = h->pend_head; p; p = p->host_next) {
    if (kr__frontier_pending_row(f, p->row.fp) != p || in_flight_on(h, p->row.fp)) continue;
    if (full && last &&
        !kr__hostq_before(p->row.directive, p->row.next_at, p->row.fp, last->directive,
                          last->next_at, last->fp))
      continue;
    kr__hostq_offer(h, p->row.fp, p->row.directive, p->row.next_at);
  }
  return 0;
}

/* After the heads lost an entry: refill them when they ran out while the
 * store holds more. */
static int heads_ensure(kr_frontier_t *f, kr_hostq_t *h) {
  return h->nheads == 0 && h->heads_more ? kr__frontier_fill_heads(f, h) : 0;
}

/* Offer a queued URI's new key to h (see kr__hostq_offer), refilling the
 * heads if that emptied them. */
static int offer(kr_frontier_t *f, kr_hostq_t *h, uint64_t fp, int dir, uint64_t next_at) {
  kr__hostq_offer(h, fp, dir, next_at);
  return heads_ensure(f, h);
}

/* ---- queue keys -------------------------------------------------------------- */

/* Split "scheme://[userinfo@]host[:port]/..." into the host and host[:port]. */
static int url_host(const char *url, size_t len, kr_slice_t *host, kr_slice_t *hostport) {
  size_t i = 0;
  while (i < len && i < 32 && (isalnum((unsigned char)url[i]) || url[i] == '+' ||
                               url[i] == '-' || url[i] == '.'))
    i++;
  if (i == 0 || i + 3 > len || memcmp(url + i, "://", 3) != 0) return KR_EURL;
  size_t a = i + 3, e = a;
  while (e < len && url[e] != '/' && url[e] != '?' && url[e] != '#') e++;
  for (size_t k = e; k > a; k--)
    if (url[k - 1] == '@') {
      a = k;
      break;
    }
  if (a == e) return KR_EURL;
  *hostport = kr_slice(url + a, e - a);
  size_t h = a;
  if (url[a] == '[') {
    while (h < e && url[h] != ']') h++;
    if (h == e) return KR_EURL;
    h++;
  } else {
    while (h < e && url[h] != ':') h++;
  }
  if (h == a) return KR_EURL;
  *host = kr_slice(url + a, h - a);
  return 0;
}

static int put_key(kr_slice_t s, char *out, size_t outlen) {
  if (s.n + 1 > outlen) return KR_ETOOBIG;
  for (size_t i = 0; i < s.n; i++) out[i] = (char)tolower((unsigned char)s.p[i]);
  out[s.n] = 0;
  return (int)s.n;
}

/* Returns the key length or a negative error. */
int kr__frontier_queue_key(const kr_frontier_t *f, const char *url, size_t len, char *out,
                     size_t outlen) {
  kr_slice_t host, hostport;
  int rc = url_host(url, len, &host, &hostport);
  if (rc) return rc;
  switch (f->opts.queue_assign) {
  case KR_QUEUE_BY_DOMAIN: {
    char lower[256];
    int n = put_key(host, lower, sizeof(lower));
    kr_slice_t reg;
    if (n > 0 && kr_url_registrable_domain(kr_slice(lower, (size_t)n), &reg) == 0)
      return put_key(reg, out, outlen);
    return put_key(host, out, outlen);
  }
  case KR_QUEUE_BY_IP:
    if (f->opts.ip_of) {
      int n = f->opts.ip_of(f->opts.ip_ud, host.p, host.n, out, outlen);
      if (n > 0 && (size_t)n < outlen) {
        out[n] = 0;
        return n;
      }
    }
    return put_key(host, out, outlen);
  case KR_QUEUE_BY_HOST:
  default:
    return put_key(hostport, out, outlen);
  }
}

int kr_frontier_queue_key(kr_frontier_t *f, const char *url, size_t len, char *out,
                          size_t outlen) {
  int n = kr__frontier_queue_key(f, url, len, out, outlen);
  return n < 0 ? n : 0;
}

/* The host queue of url, created (row and struct) when new. */
int kr__frontier_host_for(kr_frontier_t *f, const char *url, size_t len, kr_hostq_t **out) {
  char key[512];
  int n = kr__frontier_queue_key(f, url, len, key, sizeof(key));
  if (n < 0) return n;
  uint64_t hash = kr_fp(key, (size_t)n);
  kr_hostq_t *h = map_get(f, key, (size_t)n, hash);
  if (!h) {
    int64_t id;
    int rc = kr_store_host_insert(f->st, key, (size_t)n, &id);
    if (rc) return rc;
    if (id <= 0 || id > INT32_MAX) return KR_EDB;
    h = kr__frontier_host_new(f, id, key, (size_t)n);
    if (f->opts.on_host) f->opts.on_host(f->opts.host_ud, f, h);
  }
  *out = h;
  return 0;
}

/* ---- adding -------------------------------------------------------------------- */

/* Trailing hops that are not links: embeds, redirects, prerequisites. */
static size_t trans_hops(const char *hop, size_t n) {
  size_t k = 0;
  while (k < n && hop[n - 1 - k] != 'L') k++;
  return k;
}

/* A known URI asked for more: raise its directive, move it earlier,
 * revive it. Never later, never a URI in flight (its finish decides). */
static int raise_known(kr_frontier_t *f, uint64_t fp, int dir, uint64_t next_at,
                       unsigned flags, uint64_t now) {
  kr_uri_row_t r;
  int rc = kr_store_uri_sched_get(f->st, fp, &r);
  if (rc <= 0) return rc;
  kr_hostq_t *h = host_by_id(f, r.host_id);
  /* In flight, or finished with its row waiting for a drain: the finish
   * decides (as for a URI in flight). */
  if (!h || in_flight_on(h, fp) || (h->pending_rows && kr__frontier_pending_row(f, fp))) return 0;
  int revive = r.next_at >= KR_NEVER && (flags & KR_LINK_REVIVE);
  if (r.next_at >= KR_NEVER && !revive) return 0;
  /* A link does not pull a retired URI forward (see Bounds). */
  if (r.state == KR_URI_RETIRED && !revive) return 0;
  int ndir = dir > r.directive ? dir : r.directive;
  uint64_t nnext = r.next_at;
  if (revive)
    nnext = next_at;
  else if ((dir > r.directive || (flags & KR_LINK_RESCHEDULE)) && next_at < nnext)
    nnext = next_at;
  int nstate = revive ? KR_URI_QUEUED : r.state;
  if (ndir == r.directive && nnext == r.next_at && nstate == r.state) return 0;
  rc = kr_store_uri_set_sched(f->st, fp, ndir, nnext, nstate);
  if (rc < 0) return rc;
  if (revive) {
    COUNT(f, h, queued, 1);
    mark_dirty(f, h);
  }
  rc = offer(f, h, fp, ndir, nnext);
  kr__frontier_rearm(f, h, now);
  return rc;
}

/* ---- bounds (frontier.h, Bounds) ---- */

/* h holds as many distinct URIs as it may. */
static int at_cap(const kr_frontier_t *f, const kr_hostq_t *h) {
  uint64_t cap = hopts(f, h)->max_uris_per_host;
  return cap && h->c.discovered >= cap;
}

/* Retirement for want of links does not apply to seeds and
 * prerequisites (robots.txt): nothing links to them. */
static int linkable(const char *hop, size_t hop_len) {
  return hop_len > 0 && hop[hop_len - 1] != 'P';
}

/* A retired URI back to its normal schedule, due now (a link to it was
 * seen again). r: its scheduling columns. */
static int unretire(kr_frontier_t *f, const kr_uri_row_t *r, uint64_t now) {
  kr_hostq_t *h = host_by_id(f, r->host_id);
  /* In flight or waiting for a drain: its finish decides. */
  if (!h || in_flight_on(h, r->fp) || (h->pending_rows && kr__frontier_pending_row(f, r->fp))) return 0;
  /* before the write, which ends r's read */
  KR_LOG(KR_LOG_INFO, h->name, "URI linked again, no longer retired: %.*s",
         (int)KR_MIN(r->url_len, 200), r->url ? r->url : "");
  uint64_t fp = r->fp, was_at = r->next_at;
  int rc = kr_store_uri_set_sched(f->st, fp, KR_DIRECTIVE_NORMAL, now, KR_URI_QUEUED);
  if (rc <= 0) return rc;
  if (was_at >= KR_NEVER) {
    COUNT(f, h, queued, 1);
    mark_dirty(f, h);
  }
  rc = offer(f, h, fp, KR_DIRECTIVE_NORMAL, now);
  kr__frontier_rearm(f, h, now);
  return rc;
}

/* A page linked to known URI fp again: note when (at most once per
 * epoch), and bring it back if it was retired for want of links. */
static int note_linked(kr_frontier_t *f, uint64_t fp, uint64_t now) {
  uint64_t t = f->opts.retire_unlinked_ms;
  if (!t) return 0;
  uint64_t epoch = now / (t / 8 ? t / 8 : 1);
  if (!f->linked || epoch != f->linked_epoch) {
    kr_seen_free(f->linked);
    f->linked = kr_seen_new();
    f->linked_epoch = epoch;
  }
  if (!kr_seen_add(f->linked, fp)) return 0;
  int rc = kr_store_uri_set_linked(f->st, fp, now);
  if (rc <= 0) return rc;
  kr_uri_row_t r;
  rc = kr_store_uri_get(f->st, fp, &r);
  if (rc <= 0 || r.state != KR_URI_RETIRED || r.gone) return rc < 0 ? rc : 0;
  return unretire(f, &r, now);
}

/* A completion's retirement, over its planned row r (finish_plan): the
 * 404/410 streak, then retire or not. Only visits (SUCCESS) count. */
static void retire_plan(kr_frontier_t *f, kr_curi_t *c, kr_outcome_kind_t kind,
                        kr_uri_row_t *r, uint64_t now) {
  kr_hostq_t *h = c->host;
  const kr_frontier_opts_t *ho = hopts(f, h);
  if (kind != KR_OUTCOME_SUCCESS) return;
  r->gone = r->status == 404 || r->status == 410 ? c->gone + 1 : 0;
  const char *why = NULL;
  int prereq = c->hop_len && c->hop_path[c->hop_len - 1] == 'P';
  if (ho->retire_after && r->gone >= ho->retire_after && !prereq)
    why = "gone";
  else if (f->opts.retire_unlinked_ms && linkable(c->hop_path, c->hop_len) &&
           (c->last_linked ? c->last_linked : c->first_seen) + f->opts.retire_unlinked_ms <= now)
    why = "no longer linked";
  if (!why) return;
  r->state = KR_URI_RETIRED;
  r->next_at = ho->retired_wait_ms && f->opts.revisit ? now + ho->retired_wait_ms : KR_NEVER;
  if (c->state != KR_URI_RETIRED) {
    COUNT(f, h, retired, 1);
    KR_LOG(KR_LOG_INFO, h->name, "URI retired (%s): %.200s", why, c->url);
  }
}

/* 0 when l has a URL the frontier can take, else why not. */
static int link_ok(const kr_link_t *l) {
  if (!l->url || l->url_len == 0) return KR_EURL;
  if (l->url_len > KR_URL_MAX) return KR_ETOOBIG;
  return 0;
}

/* l's fingerprint, or 0 when link_ok refuses it (add_one then says why). */
static uint64_t link_fp(const kr_link_t *l) {
  return link_ok(l) ? 0 : kr_fp(l->url, l->url_len);
}

/* l, whose fingerprint is fp (link_fp). */
static int add_one(kr_frontier_t *f, const kr_link_t *l, uint64_t fp, uint64_t now) {
  int ok = link_ok(l);
  if (ok) return ok;
  const char *hop = l->hop_path ? l->hop_path : "";
  size_t hop_len = l->hop_path ? l->hop_len : 0;
  if (hop_len > KR_HOP_PATH_MAX) {
    hop += hop_len - KR_HOP_PATH_MAX;
    hop_len = KR_HOP_PATH_MAX;
  }
  int dir = l->directive;
  if (dir < KR_DIRECTIVE_NORMAL) dir = KR_DIRECTIVE_NORMAL;
  if (dir > KR_DIRECTIVE_HIGHEST) dir = KR_DIRECTIVE_HIGHEST;
  size_t th = trans_hops(hop, hop_len);
  if (dir < KR_DIRECTIVE_MEDIUM && th > 0 && th <= f->opts.preference_embed_hops)
    dir = KR_DIRECTIVE_MEDIUM;
  uint64_t next_at = l->next_at ? l->next_at : now;
  if (next_at >= KR_NEVER) next_at = KR_NEVER - 1;
  if (next_at > now) dir = KR_DIRECTIVE_NORMAL; /* see frontier.h */
  int wants_more = dir > KR_DIRECTIVE_NORMAL || (l->flags & (KR_LINK_RESCHEDULE | KR_LINK_REVIVE));

  if (!kr_seen_add(f->seen, fp)) {
    f->duplicates++;
    int rc = hop_len ? note_linked(f, fp, now) : 0;
    if (rc < 0) return rc;
    if (!wants_more) return 0; /* the common case: SQLite never sees it */
    rc = raise_known(f, fp, dir, next_at, l->flags, now);
    return rc < 0 ? rc : 0;
  }
  kr_hostq_t *h;
  int rc = kr__frontier_host_for(f, l->url, l->url_len, &h);
  if (rc) {
    kr_seen_remove(f->seen, fp); /* not stored: forget it */
    return rc;
  }
  if (hop_len && dir < KR_DIRECTIVE_HIGHEST && at_cap(f, h)) {
    /* Refused, unless the store knows it (the filter is still loading). */
    kr_uri_row_t known;
    rc = f->seen_complete ? 0 : kr_store_uri_sched_get(f->st, fp, &known);
    if (rc <= 0) {
      kr_seen_remove(f->seen, fp); /* a raised cap takes it next time */
      if (rc < 0) return rc;
      COUNT(f, h, refused, 1);
      mark_stats(f, h);
      return 0;
    }
  }
  kr_uri_row_t r;
  memset(&r, 0, sizeof(r));
  r.fp = fp;
  r.host_id = h->id;
  r.directive = dir;
  r.next_at = next_at;
  r.state = KR_URI_QUEUED;
  r.url = l->url;
  r.url_len = l->url_len;
  r.via = l->via;
  r.hop_path = hop;
  r.hop_len = hop_len;
  r.first_seen = now;
  r.hint_rate = l->hint_rate;
  rc = kr_store_uri_insert(f->st, &r);
  if (rc < 0) {
    kr_seen_remove(f->seen, fp);
    return rc;
  }
  if (rc == 0) { /* known to the store, not yet to the filter (loading) */
    f->duplicates++;
    rc = hop_len ? note_linked(f, fp, now) : 0;
    if (rc < 0) return rc;
    if (!wants_more) return 0;
    rc = raise_known(f, fp, dir, next_at, l->flags, now);
    return rc < 0 ? rc : 0;
  }
  COUNT(f, h, discovered, 1);
  COUNT(f, h, queued, 1);
  mark_dirty(f, h);
  if (!in_flight_on(h, fp) && (rc = offer(f, h, fp, dir, next_at)) < 0) return rc;
  kr__frontier_rearm(f, h, now);
  return 1;
}

static int replay_all(kr_frontier_t *f, int force);

/* 1 when writes must wait (a drain, or older writes waiting). */
int kr__frontier_must_queue(kr_frontier_t *f) {
  if (kr__frontier_replay(f) < 0) return 0; /* let the caller's write report it */
  if (f->pending_bytes >= held_back_max(f)) {
    /* A commit waiting for its presync step (the WARC sync) must not take
     * these writes: it completes first, its step inline. */
    if (kr_store_presync_waiting(f->st) && kr_store_commit(f->st) < 0) return 1;
    /* The drain takes too long for memory: write now, in order. */
    f->drains_cut++;
    if (replay_all(f, 1) < 0) return 0;
    return 0;
  }
  return f->pending_head != NULL || !kr_store_writable(f->st);
}

int kr_frontier_add(kr_frontier_t *f, const kr_link_t *link, uint64_t now) {
  if (kr__frontier_must_queue(f)) {
    queue_op(f, NULL, NULL, link, 1, now);
    return KR_FRONTIER_HELD;
  }
  return add_one(f, link, link_fp(link), now);
}

int kr_frontier_add_batch(kr_frontier_t *f, const kr_link_t *links, size_t n,
                          uint64_t now, size_t *added) {
  if (added) *added = 0;
  if (kr__frontier_must_queue(f)) {
    queue_op(f, NULL, NULL, links, n, now);
    return 0;
  }
  return add_batch_now(f, links, n, now, added);
}

static int add_batch_now(kr_frontier_t *f, const kr_link_t *links, size_t n,
                         uint64_t now, size_t *added) {
  /* A page's links mostly end at the seen filter, whose first read of
   * each is a trip to memory: the fingerprints of a group of links are
   * computed and their slots prefetched first, so the trips overlap. */
  enum { GROUP = 16 };
  uint64_t fps[GROUP];
  size_t k = 0;
  for (size_t i = 0; i < n; i += GROUP) {
    size_t g = n - i < GROUP ? n - i : GROUP;
    for (size_t j = 0; j < g; j++) {
      fps[j] = link_fp(&links[i + j]);
      kr_seen_prefetch(f->seen, fps[j]);
    }
    for (size_t j = 0; j < g; j++) {
      int rc = add_one(f, &links[i + j], fps[j], now);
      if (rc == KR_EDB) {
        if (added) *added = k;
        return rc;
      }
      if (rc < 0)
        f->rejected++;
      else
        k += (size_t)rc;
    }
  }
  if (added) *added = k;
  return 0;
}

/* ---- issuing ---------------------------------------------------------------------- */

/* The period with limits per period has ended: the crawl loop pulls. */
static void on_period_timer(kr_wheel_entry_t *e) {
  kr_frontier_t *f = container_of(e, kr_frontier_t, period_timer);
  if (f->on_ready) f->on_ready(f, f->on_ready_ud);
}

/* 1 when a limit stops issuing: for good, or (limits_period_ms) until
 * limit_until, when the next period starts with its counts at 0. */
int kr__frontier_check_limits(kr_frontier_t *f, uint64_t now) {
  const kr_frontier_opts_t *o = &f->opts;
  uint64_t p = o->limits_period_ms;
  if (p && now / p != f->period) {
    f->period = now / p;
    f->run_bytes = f->run_documents = 0;
    if (f->limit_until) {
      KR_LOG(KR_LOG_NOTICE, kr_store_path(f->st), "limit %s: a new period, issuing again",
             f->limit);
      f->limit = NULL;
      f->limit_until = 0;
    }
  }
  if (f->limit) return 1;
  if (o->max_time_ms && now >= f->started_at + o->max_time_ms) {
    f->limit = "max-time";
  } else {
    if (o->max_bytes_download && f->run_bytes >= o->max_bytes_download)
      f->limit = "max-bytes-download";
    else if (o->max_document_download && f->run_documents >= o->max_document_download)
      f->limit = "max-document-download";
    if (f->limit && p) {
      f->limit_until = (f->period + 1) * p;
      kr_timer_start(f->timers, &f->period_timer, f->limit_until, on_period_timer);
      KR_LOG(KR_LOG_NOTICE, kr_store_path(f->st),
             "limit %s reached for this period: issuing again in %" PRIu64 " s", f->limit,
             (f->limit_until - now + 999) / 1000);
      return 1;
    }
  }
  if (f->limit)
    KR_LOG(KR_LOG_NOTICE, kr_store_path(f->st), "limit %s reached: issuing nothing more",
           f->limit);
  return f->limit != NULL;
}

/* 1 when one more URI may be issued under max_document_download: every
 * URI in flight may yet bring a response, so it holds a place in the
 * count until it finishes. Issuing waits (without stopping) while they
 * would fill it; one that ends with no response gives its place back.
 * So the limit is exact: a crawl that stops at it downloaded that many
 * documents, never more. */
static int documents_room(const kr_frontier_t *f) {
  uint64_t max = f->opts.max_document_download;
  return !max || f->run_documents + f->in_flight < max;
}

static char *copy_in(char **p, const void *src, size_t n) {
  if (!src) return NULL;
  char *dst = *p;
  memcpy(dst, src, n);
  dst[n] = 0;
  *p += n + 1;
  return dst;
}

/* A curi holding a copy of row r in one allocation. */
static kr_curi_t *curi_from_row(const kr_uri_row_t *r) {
  size_t extra = r->url_len + 1 + r->hop_len + 1 + r->content_type_len + 1 +
                 r->digest_len + 1 + r->etag_len + 1 + r->history_len + 1;
  kr_curi_t *c = kr_xcalloc(1, sizeof(*c) + extra);
  char *p = (char *)(c + 1);
  c->fp = r->fp;
  c->url = copy_in(&p, r->url ? r->url : "", r->url_len);
  c->url_len = r->url_len;
  c->hop_path = copy_in(&p, r->hop_path ? r->hop_path : "", r->hop_len);
  c->hop_len = r->hop_len;
  c->content_type = copy_in(&p, r->content_type, r->content_type_len);
  c->content_type_len = r->content_type_len;
  c->digest = (const uint8_t *)copy_in(&p, r->digest, r->digest_len);
  c->digest_len = r->digest_len;
  c->etag = copy_in(&p, r->etag, r->etag_len);
  c->etag_len = r->etag_len;
  c->history = (const uint8_t *)copy_in(&p, r->history, r->history_len);
  c->history_len = r->history_len;
  c->directive = r->directive;
  c->next_at = r->next_at;
  c->state = r->state;
  c->wait_ms = r->wait_ms;
  c->visits = r->visits;
  c->versions = r->versions;
  c->retries = r->retries;
  c->status = r->status;
  c->last_modified = r->last_modified;
  c->via = r->via;
  c->first_seen = r->first_seen;
  c->last_visit = r->last_visit;
  c->hint_rate = r->hint_rate;
  c->gone = r->gone;
  c->last_linked = r->last_linked;
  return c;
}

/* The columns a completion writes (kr_store_uri_update), from a row
 * still waiting for a drain, over the stored row. */
static void pending_overlay(kr_uri_row_t *r, const kr_uri_row_t *w) {
  r->directive = w->directive;
  r->next_at = w->next_at;
  r->state = w->state;
  r->last_visit = w->last_visit;
  r->wait_ms = w->wait_ms;
  r->visits = w->visits;
  r->versions = w->versions;
  r->retries = w->retries;
  r->status = w->status;
  r->content_type = w->content_type;
  r->content_type_len = w->content_type_len;
  r->digest = w->digest;
  r->digest_len = w->digest_len;
  r->etag = w->etag;
  r->etag_len = w->etag_len;
  r->last_modified = w->last_modified;
  r->history = w->history;
  r->history_len = w->history_len;
  r->gone = w->gone;
}

/* Issue h's head. 1 and *out; 0 when the store disagreed with memory
 * (h's heads are reloaded from what the store says); KR_EDB. */
static int issue(kr_frontier_t *f, kr_hostq_t *h, uint64_t now, kr_curi_t **out) {
  const kr_head_t *head = kr__hostq_head(h);
  KR_BUG_ON(!head);
  kr_uri_row_t r;
  int rc = kr_store_uri_get(f->st, head->fp, &r);
  if (rc < 0) return rc;
  const pending_t *pw = h->pending_rows && rc == 1 ? kr__frontier_pending_row(f, head->fp) : NULL;
  if (pw) pending_overlay(&r, &pw->row); /* its write waits for a drain */
  if (rc == 0 || r.host_id != h->id || r.directive != head->dir || r.next_at != head->next_at) {
    /* Memory and store disagree: trust the store. */
    (void)KR_COUNT_IF(1);
    KR_LOG(KR_LOG_WARN, h->name, "head differs from the store; reloading it");
    kr__hostq_heads_reset(h);
    rc = kr__frontier_fill_heads(f, h);
    kr__frontier_rearm(f, h, now);
    return rc < 0 ? rc : 0;
  }
  int slot = kr__hostq_free_slot(h, now);
  KR_BUG_ON(slot < 0);
  kr_curi_t *c = curi_from_row(&r);
  c->host = h;
  c->issued_at = now;
  c->overdue_ms = now > c->next_at ? now - c->next_at : 0;
  c->slot = (uint32_t)slot;
  h->slots[slot].curi = c;
  c->next_inflight = h->inflight;
  h->inflight = c;
  h->in_flight++;
  f->in_flight++;
  kr__hostq_take(h, c->fp);
  rc = heads_ensure(f, h);
  kr__frontier_rearm(f, h, now);
  if (rc < 0) return rc;
  *out = c;
  return 1;
}

void kr_frontier_set_waiting(kr_frontier_t *f, uint64_t n) { f->waiting = n; }

int kr_frontier_next(kr_frontier_t *f, uint64_t now, kr_curi_t **out) {
  *out = NULL;
  if (kr__frontier_check_limits(f, now) || !documents_room(f)) return 0;
  if (f->pending_bytes >= held_back_max(f) / 4 && kr__frontier_replay(f) == 0 &&
      f->pending_bytes >= held_back_max(f) / 4)
    return 0; /* back-pressure while the store drains */
  if (kr_store_wal_held(f->st)) { /* or while its WAL is past the cap */
    f->wal_held = 1;
    return 0;
  }
  if (f->in_flight >= f->opts.max_connections + KR_MIN(f->waiting, f->opts.max_connections))
    return 0;
  /* Bounded: each pass removes the front host from the list or issues. */
  for (size_t guard = f->nready + 1; f->ready_head && guard > 0; guard--) {
    kr_hostq_t *h = f->ready_head;
    if (kr__hostq_state(h, now) != KR_HOSTQ_READY) {
      ready_remove(f, h); /* back on the wheel, or nowhere */
      kr__frontier_rearm(f, h, now);
      continue;
    }
    ready_remove(f, h);
    if (h->rekey_url) {
      /* A move to the queue of h's address waits: h's URIs go from there. */
      if (kr__frontier_must_queue(f)) {
        f->rekey_held = 1;
        continue; /* kr_frontier_turn() calls on_ready when writable */
      }
      char *url = h->rekey_url;
      h->rekey_url = NULL;
      int rc = kr_frontier_host_rekey(f, h, url, strlen(url), now);
      free(url);
      if (rc < 0) return rc;
      if (rc > 0) {
        KR_LOG(KR_LOG_INFO, h->name, "%d URIs moved to the queue of its address", rc);
        continue;
      }
      /* Nothing to move (or URIs in flight, whose finish moves them). */
    }
    int rc = issue(f, h, now, out);
    if (rc != 0) return rc;
  }
  return 0;
}

/* ---- completing --------------------------------------------------------------------- */

static void unlink_inflight(kr_frontier_t *f, kr_hostq_t *h, kr_curi_t *c) {
  for (kr_curi_t **pp = &h->inflight; *pp; pp = &(*pp)->next_inflight)
    if (*pp == c) {
      *pp = c->next_inflight;
      break;
    }
  KR_BUG_ON(c->slot >= h->nslots || h->slots[c->slot].curi != c);
  h->slots[c->slot].curi = NULL;
  h->in_flight--;
  f->in_flight--;
}

/* Free c's slot until now + delay, put c's row back as a head candidate,
 * re-arm the host, free c. */
static int release(kr_frontier_t *f, kr_curi_t *c, uint64_t delay, int dir,
                   uint64_t next_at, uint64_t now) {
  kr_hostq_t *h = c->host;
  uint32_t slot = c->slot;
  unlink_inflight(f, h, c);
  h->slots[slot].free_at = now + delay;
  kr__hostq_trim_slots(h);
  int rc = offer(f, h, c->fp, dir, next_at);
  free(c);
  kr__frontier_rearm(f, h, now);
  return rc;
}

static void host_backoff(kr_frontier_t *f, kr_hostq_t *h, const kr_frontier_opts_t *o,
                         uint64_t retry_after_ms, uint64_t now) {
  h->backoff_level++;
  uint64_t until = now + kr__hostq_backoff(o, h->backoff_level, retry_after_ms);
  if (until > h->backoff_until) h->backoff_until = until;
  KR_LOG(KR_LOG_NOTICE, h->name, "backing off for %" PRIu64 " s (level %u)",
         (h->backoff_until - now) / 1000, h->backoff_level);
  mark_dirty(f, h);
}

int kr_frontier_finished(kr_frontier_t *f, kr_curi_t *c, const kr_outcome_t *o,
                         const kr_link_t *links, size_t nlinks, uint64_t now) {
  if (kr__frontier_must_queue(f)) return finish_held(f, c, o, links, nlinks, now);
  return finish_now(f, c, o, links, nlinks, now);
}

/* What a completion does: its new uris row into *rp (pointing into c, o
 * and hist), the counters, the host's failure and back-off state, and
 * the politeness delay of its slot. No store access. */
static void finish_plan(kr_frontier_t *f, kr_curi_t *c, const kr_outcome_t *o, uint64_t now,
                        kr_uri_row_t *rp, uint8_t *hist, uint64_t *delay_out) {
  kr_hostq_t *h = c->host;
  const kr_frontier_opts_t *ho = hopts(f, h);
  kr_uri_row_t r;
  memset(&r, 0, sizeof(r));
  r.fp = c->fp;
  r.directive = KR_DIRECTIVE_NORMAL;
  r.state = c->state;
  r.last_visit = c->last_visit;
  r.wait_ms = c->wait_ms;
  r.visits = c->visits;
  r.versions = c->versions;
  r.retries = c->retries;
  r.status = c->status;
  r.content_type = c->content_type;
  r.content_type_len = c->content_type_len;
  r.digest = c->digest;
  r.digest_len = c->digest_len;
  r.etag = c->etag;
  r.etag_len = c->etag_len;
  r.last_modified = c->last_modified;
  r.history = c->history;
  r.history_len = c->history_len;
  r.gone = c->gone;
  int urgent = 0;
  uint64_t delay = o->no_contact ? 0 : kr__hostq_politeness(h, ho, o->fetch_ms);

  COUNT(f, h, finished, 1);
  COUNT(f, h, bytes, o->bytes);
  f->run_bytes += o->bytes;
  if (o->status > 0) f->run_documents++; /* a response, whatever its status or outcome */

  kr_outcome_kind_t kind = o->kind;
  if (kind == KR_OUTCOME_RETRY && c->retries >= ho->max_retries) kind = KR_OUTCOME_FAILED;
  switch (kind) {
  case KR_OUTCOME_SUCCESS: {
    uint64_t wait = o->wait_ms ? o->wait_ms : ho->default_wait_ms;
    r.state = KR_URI_SUCCESS;
    r.next_at = f->opts.revisit ? now + wait : KR_NEVER;
    r.wait_ms = wait;
    if (c->visits == 0)
      r.versions = 1;
    else if (o->content == 1)
      r.versions++;
    r.visits++;
    r.retries = 0;
    r.status = o->status;
    if (o->content_type) {
      r.content_type = o->content_type;
      r.content_type_len = o->content_type_len;
    }
    if (o->digest) {
      r.digest = o->digest;
      r.digest_len = o->digest_len;
    }
    if (o->etag) {
      r.etag = o->etag;
      r.etag_len = o->etag_len;
    }
    if (o->last_modified) r.last_modified = o->last_modified;
    if (o->history) {
      r.history = o->history;
      r.history_len = o->history_len;
    } else {
      /* whole seconds, at least 1 after a first visit (estimate.h) */
      uint64_t iv = c->last_visit && now > c->last_visit ? (now - c->last_visit + 999) / 1000 : 0;
      if (c->last_visit && iv == 0) iv = 1;
      kr_vhist_visit_t v = {.interval_s = (int64_t)iv,
                            .state = c->visits == 0 ? KR_CONTENT_CHANGED
                                     : o->content == 0 ? KR_CONTENT_UNCHANGED
                                     : o->content == 1 ? KR_CONTENT_CHANGED
                                                       : KR_CONTENT_UNKNOWN,
                            .age_s = -1};
      r.history_len = kr_vhist_push(c->history, c->history_len, &v, hist, NULL);
      r.history = hist;
    }
    r.last_visit = now;
    COUNT(f, h, succeeded, 1);
    h->last_backoff_fp = 0;
    if (h->fail_streak || h->backoff_level) {
      h->fail_streak = 0;
      h->backoff_level = 0;
      urgent = 1;
    }
    break;
  }
  case KR_OUTCOME_RETRY:
    r.state = KR_URI_RETRY;
    r.retries = c->retries + 1;
    r.status = o->status;
    /* A prerequisite stays first for the host that waits for it. */
    if (c->directive == KR_DIRECTIVE_HIGHEST) r.directive = KR_DIRECTIVE_HIGHEST;
    r.next_at = now + (o->retry_after_ms ? KR_MIN(o->retry_after_ms, ho->backoff_max_ms)
                                         : ho->retry_delay_ms);
    COUNT(f, h, retried, 1);
    break;
  case KR_OUTCOME_FAILED:
    r.state = KR_URI_FAILED;
    r.status = o->status;
    /* A host failure's URIs come back with the host (below). */
    r.next_at = ho->revisit_failed && f->opts.revisit ? now + ho->failed_wait_ms : KR_NEVER;
    COUNT(f, h, failed, 1);
    break;
  case KR_OUTCOME_DISREGARDED:
    r.state = KR_URI_DISREGARDED;
    r.status = o->status;
    r.next_at = KR_NEVER;
    delay = 0;
    COUNT(f, h, disregarded, 1);
    break;
  case KR_OUTCOME_BACKOFF:
  default:
    /* The URI's own 429/503: it alone backs off, exponentially (its
     * retries count the answers in a row) or as Retry-After says, and
     * goes behind the host's other URIs; the host backs off only when
     * several URIs in a row answer so (fail_streak, below). A snapshot
     * crawl gives up after max-retries, so it ends. */
    r.state = KR_URI_RETRY;
    r.retries = c->retries + 1;
    r.status = o->status;
    if (c->directive == KR_DIRECTIVE_HIGHEST) r.directive = KR_DIRECTIVE_HIGHEST;
    if (!f->opts.revisit && r.retries > ho->max_retries)
      r.next_at = KR_NEVER;
    else
      r.next_at = now + kr__hostq_backoff(ho, r.retries, o->retry_after_ms);
    COUNT(f, h, backoffs, 1);
    if (h->last_backoff_fp != c->fp) { /* one URI again says nothing of the host */
      h->last_backoff_fp = c->fp;
      h->fail_streak++;
      urgent = 1;
      if (h->fail_streak >= ho->host_failures_before_backoff)
        host_backoff(f, h, ho, o->retry_after_ms, now);
    }
    break;
  }
  retire_plan(f, c, kind, &r, now);
  if (r.next_at >= KR_NEVER && c->next_at < KR_NEVER) {
    COUNT(f, h, queued, (uint64_t)-1);
    urgent = 1;
  }
  if (o->host_error && (kind == KR_OUTCOME_RETRY || kind == KR_OUTCOME_FAILED)) {
    h->fail_streak++;
    urgent = 1;
    if (h->fail_streak >= ho->host_failures_before_backoff) host_backoff(f, h, ho, 0, now);
  }
  /* Failed with its host (DNS, connect, robots.txt unavailable): back
   * when the host is tried again — its back-off, and not before a failed
   * robots.txt is asked again (retry-delay), at most max-backoff — so a
   * host that recovers gets its URIs within one back-off period, and one
   * still down is not asked every minute by each of its URIs. */
  if ((o->host_error || o->with_host) && kind == KR_OUTCOME_FAILED && r.next_at < KR_NEVER) {
    uint64_t back = h->backoff_until > now ? h->backoff_until - now : 0;
    back = KR_MAX(back, KR_MAX(ho->backoff_initial_ms, ho->retry_delay_ms));
    r.next_at = now + KR_MIN(back, ho->backoff_max_ms);
  }
  if (r.next_at >= KR_NEVER) r.next_at = KR_NEVER;
  if (urgent)
    mark_dirty(f, h);
  else
    mark_stats(f, h);
  *rp = r;
  *delay_out = delay;
}

static int finish_now(kr_frontier_t *f, kr_curi_t *c, const kr_outcome_t *o,
                      const kr_link_t *links, size_t nlinks, uint64_t now) {
  kr_store_hold(f->st); /* the row, the links and the host: one transaction */
  int rc = 0;
  if (nlinks) rc = add_batch_now(f, links, nlinks, now, NULL);
  kr_uri_row_t r;
  uint8_t hist[KR_VHIST_BYTES];
  uint64_t delay;
  finish_plan(f, c, o, now, &r, hist, &delay);
  if (rc == 0) {
    int u = kr_store_uri_update(f->st, &r);
    if (u < 0) rc = u;
  }
  int rr = release(f, c, delay, r.directive, r.next_at, now);
  if (rc == 0) rc = rr;
  kr_store_release(f->st);
  kr__frontier_check_limits(f, now);
  return rc < 0 ? rc : 0;
}

/* A completion while the store drains: everything in memory now (the
 * slot frees after its politeness delay, the URI takes its new key), the
 * row and the links once the drain is over. */
static int finish_held(kr_frontier_t *f, kr_curi_t *c, const kr_outcome_t *o,
                       const kr_link_t *links, size_t nlinks, uint64_t now) {
  kr_uri_row_t r;
  uint8_t hist[KR_VHIST_BYTES];
  uint64_t delay;
  finish_plan(f, c, o, now, &r, hist, &delay);
  queue_op(f, c->host, &r, links, nlinks, now);
  int rc = release(f, c, delay, r.directive, r.next_at, now);
  kr__frontier_check_limits(f, now);
  return rc < 0 ? rc : 0;
}

void kr_frontier_defer(kr_frontier_t *f, kr_curi_t *c, uint64_t now) {
  /* No fetch happened: the slot is free at once, the row untouched. */
  /* A failed refill (KR_EDB) shows again at the next write, and a store
   * error stops the crawl there. */
  (void)release(f, c, 0, c->directive, c->next_at, now);
}

/* ---- writes held back during a drain ----------------------------------------------- */

static size_t str_room(const void *p, size_t n) { return p ? n + 1 : 0; }

static char *keep(char **at, const void *src, size_t n) {
  if (!src) return NULL;
  char *d = *at;
  memcpy(d, src, n);
  d[n] = 0;
  *at += n + 1;
  return d;
}

/* pmap: fp -> the newest pending_t holding that URI's row; linear
 * probing over fingerprints (already hashes). */
pending_t *kr__frontier_pending_row(const kr_frontier_t *f, uint64_t fp) {
  if (!f->pmap_n) return NULL;
  size_t m = f->pmap_cap - 1;
  for (size_t j = (size_t)fp & m; f->pmap[j]; j = (j + 1) & m)
    if (f->pmap[j]->row.fp == fp) return f->pmap[j];
  return NULL;
}

static void pmap_put(kr_frontier_t *f, pending_t *p) {
  if ((f->pmap_n + 1) * 2 > f->pmap_cap) {
    size_t cap = f->pmap_cap ? f->pmap_cap * 2 : 256;
    pending_t **nm = kr_xcalloc(cap, sizeof(*nm));
    for (size_t i = 0; i < f->pmap_cap; i++) {
      pending_t *x = f->pmap[i];
      if (!x) continue;
      size_t j = (size_t)x->row.fp & (cap - 1);
      while (nm[j]) j = (j + 1) & (cap - 1);
      nm[j] = x;
    }
    free(f->pmap);
    f->pmap = nm;
    f->pmap_cap = cap;
  }
  size_t m = f->pmap_cap - 1, j = (size_t)p->row.fp & m;
  for (; f->pmap[j]; j = (j + 1) & m)
    if (f->pmap[j]->row.fp == p->row.fp) {
      f->pmap[j] = p; /* a newer completion of the same URI */
      return;
    }
  f->pmap[j] = p;
  f->pmap_n++;
}

/* Forget p's entry if it is still the newest for its URI. */
static void pmap_del(kr_frontier_t *f, const pending_t *p) {
  if (!f->pmap_n) return;
  size_t m = f->pmap_cap - 1, i = (size_t)p->row.fp & m;
  while (f->pmap[i] && f->pmap[i]->row.fp != p->row.fp) i = (i + 1) & m;
  if (f->pmap[i] != p) return;
  f->pmap[i] = NULL;
  f->pmap_n--;
  /* Shift back the entries of the cluster that the hole now hides. */
  for (size_t k = (i + 1) & m; f->pmap[k]; k = (k + 1) & m) {
    size_t home = (size_t)f->pmap[k]->row.fp & m;
    int stays = i <= k ? (home > i && home <= k) : (home > i || home <= k);
    if (stays) continue;
    f->pmap[i] = f->pmap[k];
    f->pmap[k] = NULL;
    i = k;
  }
}

/* Copy a completion's row (of host h) and/or a batch of links into the
 * queue; the write happens at the drain's end. */
static void queue_op(kr_frontier_t *f, kr_hostq_t *h, const kr_uri_row_t *row,
                     const kr_link_t *links, size_t nlinks, uint64_t now) {
  size_t room = sizeof(pending_t) + nlinks * sizeof(kr_link_t);
  for (size_t i = 0; i < nlinks; i++)
    room += str_room(links[i].url, links[i].url_len) +
            str_room(links[i].hop_path, links[i].hop_len);
  if (row)
    room += str_room(row->content_type, row->content_type_len) +
            str_room(row->digest, row->digest_len) + str_room(row->etag, row->etag_len) +
            str_room(row->history, row->history_len);
  pending_t *p = kr_xcalloc(1, room);
  char *at = (char *)(p + 1) + nlinks * sizeof(kr_link_t);
  p->now = now;
  if (row) {
    p->has_row = 1;
    p->h = h;
    p->row = *row;
    p->row.url = NULL; /* not among the columns an update writes */
    p->row.hop_path = NULL;
    p->row.content_type = keep(&at, row->content_type, row->content_type_len);
    p->row.digest = (const uint8_t *)keep(&at, row->digest, row->digest_len);
    p->row.etag = keep(&at, row->etag, row->etag_len);
    p->row.history = (const uint8_t *)keep(&at, row->history, row->history_len);
    if (h->pend_tail)
      h->pend_tail->host_next = p;
    else
      h->pend_head = p;
    h->pend_tail = p;
    h->pending_rows++;
    pmap_put(f, p);
  }
  p->links = nlinks ? (kr_link_t *)(p + 1) : NULL;
  p->nlinks = nlinks;
  for (size_t i = 0; i < nlinks; i++) {
    p->links[i] = links[i];
    p->links[i].url = keep(&at, links[i].url, links[i].url_len);
    p->links[i].hop_path = keep(&at, links[i].hop_path, links[i].hop_len);
  }
  if (f->pending_tail)
    f->pending_tail->next = p;
  else
    f->pending_head = p;
  f->pending_tail = p;
  p->bytes = room;
  f->pending_bytes += room;
  f->npending++;
  f->pending_total++;
  if (f->npending > f->pending_max) f->pending_max = f->npending;
}

/* p's row no longer waits: off its host's list and the map. */
void kr__frontier_pending_row_done(kr_frontier_t *f, pending_t *p) {
  kr_hostq_t *h = p->h;
  KR_BUG_ON(h->pend_head != p);
  h->pend_head = p->host_next;
  if (!h->pend_head) h->pend_tail = NULL;
  h->pending_rows--;
  pmap_del(f, p);
}

/* Apply the held-back writes in arrival order once the store is writable.
 * 0 or KR_EDB (the rest stay queued). */
static int replay_some(kr_frontier_t *f, int force);

int kr__frontier_replay(kr_frontier_t *f) { return replay_all(f, 0); }

static int replay_all(kr_frontier_t *f, int force) {
  if (!f->pending_head || !(force || kr_store_writable(f->st))) return 0;
  KR_TP_ENTER(KR_TP_REPLAY);
  int rc = replay_some(f, force);
  KR_TP_LEAVE();
  return rc;
}

static int replay_some(kr_frontier_t *f, int force) {
  while (f->pending_head && (force || kr_store_writable(f->st))) {
    pending_t *p = f->pending_head;
    f->pending_head = p->next;
    if (!f->pending_head) f->pending_tail = NULL;
    f->npending--;
    f->pending_bytes -= p->bytes;
    kr_store_hold(f->st); /* a completion's row and links: one transaction */
    int rc = p->nlinks ? add_batch_now(f, p->links, p->nlinks, p->now, NULL) : 0;
    if (p->has_row) {
      kr__frontier_pending_row_done(f, p);
      if (rc == 0) {
        int u = kr_store_uri_update(f->st, &p->row);
        if (u < 0) rc = u;
      }
    }
    kr_store_release(f->st);
    free(p);
    if (rc < 0) return rc;
  }
  return 0;
}

