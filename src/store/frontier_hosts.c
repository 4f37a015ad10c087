/*
 * The frontier seen from outside a fetch: prerequisites (a URI that must
 * be fetched first), the hosts API (lookup, rekey, per-host options,
 * robots.txt, validator trust), reports and statistics, and
 * kr_frontier_validate's check of every invariant (frontier.h).
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
#include "kria/hoststate.h"
#include "kria/seen.h"
#include "kria/url.h"
#include "log.h"
#include "turnprof.h"

/* ---- prerequisites ------------------------------------------------------------------ */

int kr_frontier_prereq_require(kr_frontier_t *f, kr_curi_t *c, const char *url,
                               size_t len, uint64_t now) {
  kr_hostq_t *h = c->host;
  char hop[KR_HOP_PATH_MAX + 1];
  size_t hl = c->hop_len < KR_HOP_PATH_MAX ? c->hop_len : KR_HOP_PATH_MAX - 1;
  memcpy(hop, c->hop_path + (c->hop_len - hl), hl);
  hop[hl++] = 'P';
  kr_link_t l = {.url = url,
                 .url_len = len,
                 .hop_path = hop,
                 .hop_len = hl,
                 .via = c->fp,
                 .directive = KR_DIRECTIVE_HIGHEST,
                 .next_at = now,
                 .flags = KR_LINK_RESCHEDULE | KR_LINK_REVIVE};
  h->gated = 1;
  kr_frontier_defer(f, c, now);
  int rc = kr_frontier_add(f, &l, now);
  kr__frontier_rearm(f, h, now);
  return rc < 0 ? rc : 0;
}

void kr_frontier_prereq_done(kr_frontier_t *f, kr_hostq_t *h, uint64_t now) {
  h->gated = 0;
  kr__frontier_rearm(f, h, now);
}

/* ---- hosts API ---------------------------------------------------------------------- */

int kr_frontier_host_rekey(kr_frontier_t *f, kr_hostq_t *h, const char *url, size_t len,
                           uint64_t now) {
  /* Rows of URIs in flight, held back or waiting for a prerequisite stay
   * where they are; a later call moves them. */
  if (h->in_flight || h->gated) return 0;
  char key[512];
  int n = kr__frontier_queue_key(f, url, len, key, sizeof(key));
  if (n < 0) return n;
  if ((size_t)n == h->name_len && memcmp(key, h->name, (size_t)n) == 0) return 0;
  if (kr__frontier_must_queue(f)) {
    /* Held-back writes come first; kr_frontier_next() tries again before
     * it issues from h, so no URI leaves the old queue meanwhile. */
    if (!h->rekey_url) h->rekey_url = kr_xstrndup(url, len);
    f->rekey_held = 1;
    return 0;
  }
  free(h->rekey_url);
  h->rekey_url = NULL;
  kr_hostq_t *to;
  int rc = kr__frontier_host_for(f, url, len, &to);
  if (rc) return rc;
  if (to == h) return 0;
  int64_t moved = kr_store_uris_move_host(f->st, h->id, to->id);
  if (moved < 0) return (int)moved;
  if (moved == 0) return 0;
  uint64_t m = (uint64_t)moved;
  if (m > h->c.queued) m = h->c.queued;
  h->c.queued -= m;
  to->c.queued += m; /* totals unchanged */
  /* the strictest robots.txt Crawl-delay of the hosts sharing the queue */
  if (h->crawl_delay_ms > to->crawl_delay_ms) to->crawl_delay_ms = h->crawl_delay_ms;
  kr__hostq_heads_reset(h);
  kr__hostq_heads_reset(to);
  if ((rc = kr__frontier_fill_heads(f, h)) != 0 || (rc = kr__frontier_fill_heads(f, to)) != 0) return rc;
  mark_dirty(f, h);
  mark_dirty(f, to);
  kr__frontier_rearm(f, h, now);
  kr__frontier_rearm(f, to, now);
  return moved > INT32_MAX ? INT32_MAX : (int)moved;
}

kr_hostq_t *kr_frontier_host_lookup(kr_frontier_t *f, const char *key, size_t len) {
  return map_get(f, key, len, kr_fp(key, len));
}

const char *kr_frontier_host_name(const kr_hostq_t *h) { return h->name; }

void kr_frontier_host_set_opts(kr_frontier_t *f, kr_hostq_t *h,
                               const kr_frontier_opts_t *o, uint64_t now) {
  h->opts = o;
  kr__hostq_set_valence(h, hopts(f, h)->host_valence);
  kr__frontier_rearm(f, h, now);
}

void kr_frontier_host_set_robots(kr_frontier_t *f, kr_hostq_t *h, uint64_t expires,
                                 int status, int64_t crawl_delay_ms, uint64_t now) {
  h->robots_expires = expires;
  h->robots_status = status;
  h->crawl_delay_ms = crawl_delay_ms;
  mark_dirty(f, h);
  kr__frontier_rearm(f, h, now);
}

const kr_vtrust_t *kr_frontier_host_vtrust(const kr_hostq_t *h) { return &h->vt; }

void kr_frontier_host_set_vtrust(kr_frontier_t *f, kr_hostq_t *h, const kr_vtrust_t *vt) {
  h->vt = *vt;
  mark_dirty(f, h);
}

const uint8_t *kr_frontier_host_learned(const kr_hostq_t *h, size_t *len) {
  *len = h->learned_len;
  return h->learned_len ? h->learned : NULL;
}

void kr_frontier_host_set_learned(kr_frontier_t *f, kr_hostq_t *h, const uint8_t *p,
                                  size_t len) {
  if (len > KR_HOSTSTATE_BYTES) return; /* not a record kria writes */
  free(h->learned);
  h->learned = len ? kr_xmalloc(len) : NULL;
  if (len) memcpy(h->learned, p, len);
  h->learned_len = (uint32_t)len;
  h->learned_dirty = 1;
  mark_dirty(f, h);
}

uint64_t kr_frontier_host_delay(kr_frontier_t *f, const kr_hostq_t *h, uint64_t fetch_ms) {
  return kr__hostq_politeness(h, hopts(f, h), fetch_ms);
}

/* ---- reports and statistics ------------------------------------------------------------ */

void kr_frontier_host_report(kr_frontier_t *f, const kr_hostq_t *h, uint64_t now,
                             kr_host_report_t *out) {
  (void)f;
  memset(out, 0, sizeof(*out));
  out->name = h->name;
  out->state = kr__hostq_state(h, now);
  out->ready_at = kr__hostq_ready_at(h);
  out->queued = h->c.queued;
  out->in_flight = h->in_flight;
  out->valence = h->valence;
  const kr_head_t *head = kr__hostq_head(h);
  out->has_head = head != NULL;
  out->head_directive = head ? head->dir : 0;
  out->head_next_at = head ? head->next_at : 0;
  out->overdue_ms = head && now > head->next_at ? now - head->next_at : 0;
  out->gated = h->gated;
  out->backoff_level = h->backoff_level;
  out->fail_streak = h->fail_streak;
  out->backoff_until = h->backoff_until;
  out->robots_expires = h->robots_expires;
  out->robots_status = h->robots_status;
  out->crawl_delay_ms = h->crawl_delay_ms;
  out->c = h->c;
  out->vt = h->vt;
}

int kr_frontier_report_next(kr_frontier_t *f, size_t *iter, uint64_t now,
                            kr_host_report_t *out) {
  if (*iter >= f->nhosts) return 0;
  kr_frontier_host_report(f, f->hosts[(*iter)++], now, out);
  return 1;
}

static int by_overdue(const void *a, const void *b) {
  const kr_host_report_t *x = a, *y = b;
  if (x->overdue_ms != y->overdue_ms) return x->overdue_ms > y->overdue_ms ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void fmt_ms(char *buf, size_t n, uint64_t ms) {
  if (ms >= KR_NEVER)
    snprintf(buf, n, "never");
  else if (ms < 10000)
    snprintf(buf, n, "%" PRIu64 "ms", ms);
  else if (ms < 3600000)
    snprintf(buf, n, "%" PRIu64 "s", ms / 1000);
  else
    snprintf(buf, n, "%" PRIu64 "h%02" PRIu64 "m", ms / 3600000, ms / 60000 % 60);
}

int kr_frontier_report_text(kr_frontier_t *f, uint64_t now, size_t max_hosts,
                            kr_buf_t *out) {
  kr_frontier_stats_t s;
  kr_frontier_stats(f, &s);
  int rc = kr_buf_printf(
      out,
      "frontier: %" PRIu64 " hosts (%" PRIu64 " ready), discovered %" PRIu64
      ", queued %" PRIu64 ", in flight %" PRIu64 ", finished %" PRIu64
      ", succeeded %" PRIu64 ", retried %" PRIu64 ", failed %" PRIu64
      ", disregarded %" PRIu64 ", backoffs %" PRIu64 ", bytes %" PRIu64
      ", duplicates %" PRIu64 "%s%s\n",
      s.hosts, s.ready_hosts, s.c.discovered, s.c.queued, s.in_flight, s.c.finished,
      s.c.succeeded, s.c.retried, s.c.failed, s.c.disregarded, s.c.backoffs, s.c.bytes,
      s.duplicates, s.limit ? ", limit reached: " : "", s.limit ? s.limit : "");
  if (rc) return rc;
  size_t n = f->nhosts;
  kr_host_report_t *r = kr_xcalloc(n ? n : 1, sizeof(*r));
  for (size_t i = 0; i < n; i++) kr_frontier_host_report(f, f->hosts[i], now, &r[i]);
  qsort(r, n, sizeof(*r), by_overdue);
  rc = kr_buf_printf(out, "%-32s %-8s %10s %6s %10s %10s %s\n", "host", "state", "queued",
                     "flight", "next-ready", "overdue", "notes");
  for (size_t i = 0; !rc && i < n && i < max_hosts; i++) {
    char ready[32], over[32], vt[96] = "";
    fmt_ms(ready, sizeof(ready),
           r[i].ready_at >= KR_NEVER ? KR_NEVER : r[i].ready_at > now ? r[i].ready_at - now : 0);
    fmt_ms(over, sizeof(over), r[i].overdue_ms);
    if (r[i].vt.checks) { /* validators.h: -1 while undefined */
      double rel = kr_vtrust_reliability(&r[i].vt), use = kr_vtrust_usefulness(&r[i].vt);
      snprintf(vt, sizeof vt, " validators reliability %s%.2f usefulness %.2f%s",
               rel < 0 ? "?" : "", rel < 0 ? 0.0 : rel, use < 0 ? 0.0 : use,
               kr_vtrust_is_distrusted(&r[i].vt, (int64_t)now) ? " distrusted" : "");
    }
    rc = kr_buf_printf(out, "%-32s %-8s %10" PRIu64 " %3u/%-2u %10s %10s%s%s%s\n", r[i].name,
                       kr__hostq_state_name(r[i].state), r[i].queued, r[i].in_flight,
                       r[i].valence, ready, over, r[i].gated ? " gated" : "",
                       r[i].backoff_until > now ? " backoff" : "", vt);
  }
  if (!rc && n > max_hosts)
    rc = kr_buf_printf(out, "... %zu more hosts\n", n - max_hosts);
  free(r);
  return rc;
}

kr_frontier_status_t kr_frontier_status(kr_frontier_t *f, uint64_t now) {
  if (kr__frontier_check_limits(f, now) && !f->limit_until) return KR_FRONTIER_LIMIT;
  /* held-back links may still queue URIs */
  if (!f->opts.revisit && f->total.queued == 0 && f->in_flight == 0 && !f->pending_head)
    return KR_FRONTIER_DONE;
  return KR_FRONTIER_RUNNING;
}

void kr_frontier_stats(kr_frontier_t *f, kr_frontier_stats_t *out) {
  memset(out, 0, sizeof(*out));
  out->c = f->total;
  out->in_flight = f->in_flight;
  out->hosts = f->nhosts;
  out->ready_hosts = f->nready;
  out->duplicates = f->duplicates;
  out->rejected = f->rejected;
  out->run_bytes = f->run_bytes;
  out->run_documents = f->run_documents;
  out->seen = kr_seen_count(f->seen);
  out->seen_bytes = kr_seen_memory(f->seen);
  out->seen_complete = f->seen_complete;
  out->limit = f->limit;
  out->limit_until = f->limit_until;
  out->held_back = f->npending;
  out->held_back_max = f->pending_max;
  out->held_back_total = f->pending_total;
  out->held_back_bytes = f->pending_bytes;
  out->drains_cut = f->drains_cut;
}

/* ---- validation ------------------------------------------------------------------------ */

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond)) {                                              \
      KR_LOG(KR_LOG_ERROR, h ? h->name : "frontier", __VA_ARGS__); \
      return KR_EINVAL;                                         \
    }                                                           \
  } while (0)

static int validate_host(kr_frontier_t *f, kr_hostq_t *h, uint64_t now) {
  CHECK(h->valence >= 1 && h->nslots >= h->valence, "slots %u < valence %u", h->nslots,
        h->valence);
  uint32_t used = 0, listed = 0;
  for (uint32_t i = 0; i < h->nslots; i++)
    if (h->slots[i].curi) {
      used++;
      CHECK(h->slots[i].curi->slot == i && h->slots[i].curi->host == h, "slot %u mislinked", i);
    }
  for (kr_curi_t *c = h->inflight; c; c = c->next_inflight) listed++;
  CHECK(used == h->in_flight && listed == h->in_flight, "in flight %u, slots %u, list %u",
        h->in_flight, used, listed);
  CHECK(h->nslots == h->valence || used == h->nslots, "%u slots for valence %u",
        h->nslots, h->valence);
  uint64_t q;
  if (kr_store_count_queued(f->st, h->id, &q) < 0) return KR_EDB;
  /* Rows waiting for a drain are counted in memory already. */
  CHECK(q == h->c.queued || h->pending_rows, "queued %" PRIu64 " in memory, %" PRIu64 " in the store",
        h->c.queued, q);
  /* The heads are exactly the queue order without the URIs in flight, up
   * to their number — and all of it when heads_more is 0. The queue is
   * the store's, with the new keys of rows waiting for a drain. */
  size_t want = h->in_flight + h->pending_rows + KR_HEADS + 1;
  kr_store_pick_t *p = kr_xcalloc(want + h->pending_rows, sizeof(*p));
  int n = kr_store_pick(f->st, h->id, p, (int)want);
  CHECK(n >= 0, "pick failed");
  /* Past the last row read, when there may be more, the order is not
   * known from this read: compare only up to it. */
  int full = (size_t)n == want;
  kr_store_pick_t last = n > 0 ? p[n - 1] : (kr_store_pick_t){0};
  size_t m = 0;
  for (int i = 0; i < n; i++)
    if (!in_flight_on(h, p[i].fp) && !kr__frontier_pending_row(f, p[i].fp)) p[m++] = p[i];
  for (pending_t *w = h->pend_head; w; w = w->host_next) {
    if (kr__frontier_pending_row(f, w->row.fp) != w || in_flight_on(h, w->row.fp) ||
        w->row.next_at >= KR_NEVER)
      continue;
    p[m++] = (kr_store_pick_t){.fp = w->row.fp, .directive = w->row.directive,
                               .next_at = w->row.next_at};
  }
  for (size_t i = 1; i < m; i++) /* insertion sort: a few dozen entries */
    for (size_t j = i; j > 0 && kr__hostq_before(p[j].directive, p[j].next_at, p[j].fp,
                                                 p[j - 1].directive, p[j - 1].next_at,
                                                 p[j - 1].fp); j--) {
      kr_store_pick_t t = p[j];
      p[j] = p[j - 1];
      p[j - 1] = t;
    }
  size_t known = m;
  if (full)
    for (known = 0; known < m && !kr__hostq_before(last.directive, last.next_at, last.fp,
                                                   p[known].directive, p[known].next_at,
                                                   p[known].fp);
         known++) {
    }
  int ok = 1;
  for (size_t k = 0; k < h->nheads; k++)
    if (k >= known || p[k].fp != h->heads[k].fp || p[k].directive != h->heads[k].dir ||
        p[k].next_at != h->heads[k].next_at)
      ok = 0;
  size_t beyond = known > h->nheads ? known - h->nheads : 0;
  free(p);
  CHECK(ok, "heads (%u, first %d, %" PRIu64 ") are not the top of the queue",
        (unsigned)h->nheads, h->nheads ? h->heads[0].dir : 0, h->nheads ? h->heads[0].next_at : 0);
  CHECK(h->heads_more || (beyond == 0 && !full), "heads say the queue ends, the store holds more");
  CHECK(h->nheads || !h->heads_more, "no heads while the store may hold more");
  kr_hostq_state_t s = kr__hostq_state(h, now);
  uint64_t t = kr__hostq_ready_at(h);
  if (t >= KR_NEVER) {
    CHECK(!kr_timer_is_active(&h->timer) && !h->on_ready_list,
          "state %s but armed or listed", kr__hostq_state_name(s));
  } else {
    CHECK(kr_timer_is_active(&h->timer) != h->on_ready_list,
          "armed %d and listed %d", kr_timer_is_active(&h->timer), h->on_ready_list);
    if (h->on_ready_list) CHECK(s == KR_HOSTQ_READY, "listed but %s", kr__hostq_state_name(s));
    if (kr_timer_is_active(&h->timer))
      CHECK(h->timer.due == t || (h->timer.due <= now && t <= now),
            "armed at %" PRIu64 ", ready at %" PRIu64, h->timer.due, t);
  }
  return 0;
}

int kr_frontier_validate(kr_frontier_t *f, uint64_t now) {
  kr_hostq_t *h = NULL;
  kr_counts_t sum;
  memset(&sum, 0, sizeof(sum));
  uint64_t flight = 0;
  for (size_t i = 0; i < f->nhosts; i++) {
    h = f->hosts[i];
    CHECK(host_by_id(f, h->id) == h, "id map");
    CHECK(map_get(f, h->name, h->name_len, h->hash) == h, "name map");
    int rc = validate_host(f, h, now);
    if (rc) return rc;
    const uint64_t *src = &h->c.discovered;
    uint64_t *dst = &sum.discovered;
    for (size_t k = 0; k < sizeof(kr_counts_t) / sizeof(uint64_t); k++) dst[k] += src[k];
    flight += h->in_flight;
  }
  h = NULL;
  CHECK(memcmp(&sum, &f->total, sizeof(sum)) == 0, "totals differ from the hosts' sum");
  CHECK(flight == f->in_flight, "in flight %" PRIu64 " vs %" PRIu64, flight, f->in_flight);
  size_t listed = 0;
  for (kr_hostq_t *x = f->ready_head; x; x = x->ready_next) {
    listed++;
    CHECK(x->on_ready_list && (x->ready_next ? x->ready_next->ready_prev == x : f->ready_tail == x),
          "ready list links");
  }
  CHECK(listed == f->nready, "ready list count");
  uint64_t rows;
  if (kr_store_count_uris(f->st, &rows) < 0) return KR_EDB;
  CHECK(rows == f->total.discovered, "%" PRIu64 " rows, %" PRIu64 " discovered", rows,
        f->total.discovered);
  if (f->seen_complete) CHECK(kr_seen_count(f->seen) == rows, "seen filter holds %zu of %" PRIu64,
                              kr_seen_count(f->seen), rows);
  return kr_seen_validate(f->seen);
}

