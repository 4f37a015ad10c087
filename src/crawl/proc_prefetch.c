/*
 * The scope re-check and robots.txt: the prefetch processors, the
 * per-origin robots.txt cache, and the post processor that stores the
 * rules a robots.txt fetch brought.
 *
 * scope   the scope may have changed since the URI was queued (new
 *         exclude rules, a [host] section): a URI it now rejects is
 *         disregarded with Heritrix's status for the rule (-5000 ...).
 * robots  a URI whose origin has no fresh robots.txt in the cache goes
 *         back to the frontier, which schedules the origin's robots.txt at
 *         HIGHEST (hop P) and holds the host until it is in
 *         (kr_frontier_prereq_require). With fresh rules: disallowed ->
 *         disregarded, crawl.log -9998, unless a robots.exempt pattern
 *         matches the path; robots.txt unavailable (5xx, network error:
 *         disallow all) -> retried later with -61, so a server that was
 *         down for an hour does not lose its URIs forever.
 * robots.txt unavailable and out of retries (its own: proc_post.c counts
 * a 5xx or 429 robots.txt as a retry) -> the URIs fail at once with -61,
 * annotated robots:gave-up, so a robots.txt that answers 503 forever
 * cannot hold a snapshot crawl: it ends after (max-retries + 1) fetches of
 * the robots.txt, retry-delay apart. Either way a host failure (the
 * outcome's with_host): in a revisit crawl the failed URIs come back
 * with the host's back-off, at most politeness.max-backoff, and find the
 * robots.txt asked for again (its failure expires after retry-delay). When the host's addresses were
 * refused by the address policy the URIs fail at once with the same -5005
 * as the robots.txt (annotated address-refused).
 * The cache keys rules by origin ("http://host:port"), expires them after
 * robots.expiry (failures sooner: after retry-delay) and holds at most a
 * fixed number of origins, dropping the least recently used. Each fetch's
 * outcome (status, 2xx body, expiry) is also kept in the state database
 * (store.h, robots table): an origin the cache does not hold is looked up
 * there before its robots.txt is fetched again, so a restart within the
 * expiry fetches none.
 * robots-update (post, after a robots.txt fetch, any outcome but a
 * shutdown) parses it with RFC 9309's status policy, caches the rules for
 * the origin, tells the frontier the host's robots state and Crawl-delay,
 * releases the host from its prerequisite gate and leaves the rules on
 * the fetch (f->robots) for the feed module's sitemaps. When the outcome differs
 * from the one kept (status or body), the URIs the old rules disallowed
 * (-9998) that the new ones allow are queued again (scopestate.h).
 * Sections: the cache, origins, the scope processor, the robots
 * processor, storing rules, the processors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "kria/fp.h"
#include "log.h"
#include "procs.h"
#include "scopestate.h"

/* ---- the cache ----------------------------------------------------------------- */

typedef struct robots_entry {
  char *origin;
  uint64_t hash;
  kr_robots_t *robots;
  uint64_t expires;                      /* epoch ms */
  int final;                             /* unavailable, its prerequisite gave up */
  int err;                               /* KR_E* of a robots.txt fetch without response */
  struct robots_entry *chain;            /* bucket */
  struct robots_entry *lru_prev, *lru_next; /* most recent first */
} robots_entry_t;

struct kr_rulecache {
  robots_entry_t **buckets;
  size_t nbuckets;                       /* power of two */
  size_t n, max;
  robots_entry_t *lru_head, *lru_tail;
};

#define RULECACHE_ENTRIES 65536 /* origins */

static kr_rulecache_t *rulecache_new(size_t max_entries) {
  kr_rulecache_t *rc = kr_xcalloc(1, sizeof *rc);
  rc->max = max_entries ? max_entries : 1;
  rc->nbuckets = 64;
  while (rc->nbuckets < rc->max) rc->nbuckets *= 2;
  rc->buckets = kr_xcalloc(rc->nbuckets, sizeof *rc->buckets);
  return rc;
}

static void entry_free(robots_entry_t *e) {
  kr_robots_free(e->robots);
  free(e->origin);
  free(e);
}

static void rulecache_free(kr_rulecache_t *rc) {
  if (!rc) return;
  for (robots_entry_t *e = rc->lru_head, *n; e; e = n) {
    n = e->lru_next;
    entry_free(e);
  }
  free(rc->buckets);
  free(rc);
}

void kr__rulecache_open(kr_crawl_t *c) {
  if (!c->robots) c->robots = rulecache_new(RULECACHE_ENTRIES);
}

void kr__rulecache_close(kr_crawl_t *c) {
  rulecache_free(c->robots);
  c->robots = NULL;
}

static void lru_unlink(kr_rulecache_t *rc, robots_entry_t *e) {
  if (e->lru_prev)
    e->lru_prev->lru_next = e->lru_next;
  else
    rc->lru_head = e->lru_next;
  if (e->lru_next)
    e->lru_next->lru_prev = e->lru_prev;
  else
    rc->lru_tail = e->lru_prev;
  e->lru_prev = e->lru_next = NULL;
}

static void lru_front(kr_rulecache_t *rc, robots_entry_t *e) {
  e->lru_prev = NULL;
  e->lru_next = rc->lru_head;
  if (rc->lru_head) rc->lru_head->lru_prev = e;
  rc->lru_head = e;
  if (!rc->lru_tail) rc->lru_tail = e;
}

static robots_entry_t *cache_get(kr_rulecache_t *rc, const char *origin, size_t n) {
  uint64_t h = kr_fp(origin, n);
  for (robots_entry_t *e = rc->buckets[h & (rc->nbuckets - 1)]; e; e = e->chain)
    if (e->hash == h && strcmp(e->origin, origin) == 0) {
      if (rc->lru_head != e) {
        lru_unlink(rc, e);
        lru_front(rc, e);
      }
      return e;
    }
  return NULL;
}

static void cache_remove(kr_rulecache_t *rc, robots_entry_t *e) {
  robots_entry_t **pp = &rc->buckets[e->hash & (rc->nbuckets - 1)];
  while (*pp != e) pp = &(*pp)->chain;
  *pp = e->chain;
  lru_unlink(rc, e);
  rc->n--;
  entry_free(e);
}

/* Put rules for origin (owned by the cache from now on). */
static robots_entry_t *cache_put(kr_rulecache_t *rc, const char *origin, size_t n,
                                 kr_robots_t *r, uint64_t expires, int final, int err) {
  robots_entry_t *e = cache_get(rc, origin, n);
  if (e) {
    kr_robots_free(e->robots);
    e->robots = r;
    e->expires = expires;
    e->final = final;
    e->err = err;
    return e;
  }
  if (rc->n >= rc->max) cache_remove(rc, rc->lru_tail);
  e = kr_xcalloc(1, sizeof *e);
  e->origin = kr_xstrndup(origin, n);
  e->hash = kr_fp(origin, n);
  e->robots = r;
  e->expires = expires;
  e->final = final;
  e->err = err;
  robots_entry_t **b = &rc->buckets[e->hash & (rc->nbuckets - 1)];
  e->chain = *b;
  *b = e;
  lru_front(rc, e);
  rc->n++;
  return e;
}

/* The rules of origin as the state database kept them (a robots.txt
 * fetched before a restart), when they have not expired; NULL otherwise. */
static robots_entry_t *cache_load(kr_crawl_t *c, const char *origin, size_t n, uint64_t now) {
  kr_store_robots_t row;
  int rc = kr_store_robots_get(kr_frontier_store(c->frontier), origin, n, &row);
  if (rc <= 0 || row.expires <= now) return NULL;
  kr_robots_options_t ro = {.max_bytes = c->robots_max_size};
  kr_robots_t *r = NULL;
  if (kr_robots_from_status(row.status, row.body, row.body_len, c->robots_agent, &ro, &r))
    return NULL;
  c->st.robots_reused++;
  return cache_put(c->robots, origin, n, r, row.expires, row.final, row.status < 0 ? row.status : 0);
}

/* ---- origins ---------------------------------------------------------------------- */

int kr__origin_key(const kr_url_t *url, char *out, size_t outlen) {
  kr_buf_t b;
  kr_buf_init(&b, outlen ? outlen - 1 : 0);
  int rc = kr_url_origin(url, &b);
  if (rc == 0 && b.len < outlen) {
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
  } else {
    rc = KR_ETOOBIG;
  }
  kr_buf_free(&b);
  return rc;
}

/* ---- scope -------------------------------------------------------------------------- */

static int scope_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  if (!f->url) {
    kr_fetch_decide(f, KR_OUTCOME_FAILED, KR_S_UNFETCHABLE_URI);
    kr_fetch_annotate(f, "bad-url");
    return KR_PROC_SKIP_TO_POST;
  }
  /* An origin's robots.txt is always wanted, whatever hops led to it. */
  if (f->is_robots) return KR_PROC_NEXT;
  kr_scope_candidate_t cand = {
      .url = f->url, .hops = kr_slice(f->curi->hop_path, f->curi->hop_len), .via = NULL};
  kr_scope_rule_t rule;
  if (kr_scope_decide(c->scope, &cand, &f->hc->limits, &rule)) return KR_PROC_NEXT;
  c->st.out_of_scope++;
  kr_fetch_decide(f, KR_OUTCOME_DISREGARDED, kr_crawllog_status_of_scope(rule, 0));
  const char *name = kr_scope_rule_name(c->scope, rule);
  char *a = kr_arena_alloc(&f->arena, strlen(name) + 7);
  if (a) {
    sprintf(a, "scope:%s", name);
    kr_fetch_annotate(f, a);
  }
  return KR_PROC_SKIP_TO_POST;
}

/* ---- robots --------------------------------------------------------------------------- */

static int exempt(kr_crawl_t *c, const kr_fetch_t *f) {
  if (!f->hc->n_exempt) return 0;
  kr_slice_t path = kr_url_pathname(f->url);
  for (size_t i = 0; i < f->hc->n_exempt; i++)
    if (kr_config_regex_match(c->chain.matcher, f->hc->exempt[i], path.p, path.n) == 1)
      return 1;
  return 0;
}

static int robots_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  if (f->is_robots || !f->hc->obey_robots) return KR_PROC_NEXT;
  char origin[512];
  if (kr__origin_key(f->url, origin, sizeof origin - 16)) {
    kr_fetch_decide(f, KR_OUTCOME_FAILED, KR_S_UNFETCHABLE_URI);
    kr_fetch_annotate(f, "origin-too-long");
    return KR_PROC_SKIP_TO_POST;
  }
  size_t on = strlen(origin);
  uint64_t now = kr_crawl_now(c);
  robots_entry_t *e = cache_get(c->robots, origin, on);
  if (!e) e = cache_load(c, origin, on, now);
  if (!e || e->expires <= now) {
    /* Prerequisite: the URI waits in its queue for the robots.txt. */
    memcpy(origin + on, "/robots.txt", 12);
    c->st.prerequisites++;
    kr_curi_t *curi = f->curi;
    f->curi = NULL;
    f->disp = KR_DISP_RETURNED;
    int rc = kr_frontier_prereq_require(c->frontier, curi, origin, on + 11, now);
    if (rc == KR_EDB) return rc;
    if (rc < 0) KR_LOG(KR_LOG_WARN, origin, "cannot schedule robots.txt: %s", kr_strerror(rc));
    return KR_PROC_SKIP_TO_POST;
  }
  kr_robots_decision_t d;
  if (kr_robots_allowed(e->robots, kr_url_request_target(f->url), &d)) return KR_PROC_NEXT;
  if (exempt(c, f)) {
    kr_fetch_annotate(f, "robots:exempt");
    return KR_PROC_NEXT;
  }
  if (d.reason == KR_ROBOTS_BY_STATUS && e->err == KR_EADDR_REFUSED) {
    /* robots.txt was never asked for: the host's addresses are refused,
     * and so is this URI (same status, no retries). */
    c->st.address_refused++;
    kr_fetch_decide(f, KR_OUTCOME_FAILED, KR_S_BLOCKED_BY_ADDRESS_POLICY);
    kr_fetch_annotate(f, kr_err_name(KR_EADDR_REFUSED));
    return KR_PROC_SKIP_TO_POST;
  }
  if (d.reason == KR_ROBOTS_BY_STATUS) {
    /* Retried while the robots.txt is; once it has given up, so do its
     * URIs (a snapshot crawl ends, a revisit crawl tries them again
     * after the failed wait). */
    kr_fetch_decide(f, e->final ? KR_OUTCOME_FAILED : KR_OUTCOME_RETRY,
                    KR_S_ROBOTS_PREREQUISITE_FAILURE);
    /* the host failed, not the URI: failed, it comes back with the host's
     * back-off (at most max-backoff), not after failed-wait */
    f->outcome.with_host = 1;
    f->cause = e->err;
    kr_fetch_annotate(f, "robots:unavailable");
    /* why, when no response came (dns-timeout, tls, connect-timeout...) */
    if (e->err) kr_fetch_annotate(f, kr_err_name(e->err));
    if (e->final) kr_fetch_annotate(f, "robots:gave-up");
    return KR_PROC_SKIP_TO_POST;
  }
  c->st.disregarded++;
  kr_fetch_decide(f, KR_OUTCOME_DISREGARDED, KR_S_ROBOTS_PRECLUDED);
  return KR_PROC_SKIP_TO_POST;
}

/* ---- storing rules ------------------------------------------------------------------------ */

static void robots_store(kr_fetch_t *f) {
  kr_crawl_t *c = f->crawl;
  char origin[512];
  if (!f->url || !f->curi || kr__origin_key(f->url, origin, sizeof origin)) return;
  int status = f->resp && f->resp->status ? f->resp->status : 0;
  kr_robots_options_t ro = {.max_bytes = c->robots_max_size};
  kr_robots_t *r = NULL;
  if (kr_robots_from_status(status, f->body.data, f->body.len, c->robots_agent, &ro, &r)) return;
  uint64_t now = kr_crawl_now(c);
  uint64_t ttl = f->hc->robots_expiry_ms;
  if (kr_robots_policy(r) == KR_ROBOTS_DISALLOW_ALL && f->hc->fopts.retry_delay_ms < ttl)
    ttl = f->hc->fopts.retry_delay_ms; /* try again sooner after a failure */
  uint64_t expires = now + ttl;
  /* Unavailable (5xx, 429, no response) and out of retries: the robots.txt
   * fails now (proc_post.c) and the URIs waiting for it fail with it. */
  int final = kr_robots_policy(r) == KR_ROBOTS_DISALLOW_ALL &&
              f->curi->retries >= f->hc->fopts.max_retries;
  int64_t delay = kr_robots_crawl_delay_ms(r);
  c->st.robots_fetched++;
  KR_LOG(KR_LOG_INFO, origin, "robots.txt: status %d, %s, %u rules, crawl-delay %lld ms", status,
         kr_robots_policy(r) == KR_ROBOTS_PARSE       ? "parsed"
         : kr_robots_policy(r) == KR_ROBOTS_ALLOW_ALL ? "allow all"
                                                      : "disallow all",
         kr_robots_stats(r)->rules_kept, (long long)delay);
  /* Kept for a restart, in the transaction that finishes this fetch. */
  kr_store_robots_t row = {.expires = expires, .status = status ? status : f->http_err,
                         .final = final};
  if (status >= 200 && status < 300) {
    row.body = f->body.data;
    row.body_len = f->body.len;
  }
  /* robots.txt changed (another policy than the one kept, or other rule
   * lines): the URIs its old rules disallowed are checked against the new
   * ones. Comments do not count: a file stamped with the time it was made
   * would send every URI it disallows through that check at each fetch. */
  kr_store_robots_t was;
  int known = kr_store_robots_get(kr_frontier_store(c->frontier), origin, strlen(origin), &was);
  if (known > 0 &&
      (kr_robots_policy_for_status(was.status) != kr_robots_policy_for_status(row.status) ||
       !kr_robots_same_text(was.body, was.body_len, row.body, row.body_len))) {
    int64_t n = kr__scopestate_robots_revive(c, f->url, r, now);
    if (n > 0)
      KR_LOG(KR_LOG_NOTICE, origin, "robots.txt changed: %lld URIs it disallowed are allowed now: "
             "queued", (long long)n);
    else if (n < 0)
      KR_LOG(KR_LOG_WARN, origin, "robots.txt changed: cannot queue again the URIs it allows now");
  }
  cache_put(c->robots, origin, strlen(origin), r, expires, final, status ? 0 : f->http_err);
  f->robots = r; /* its sitemaps, for the feed module (the cache keeps r) */
  if (kr_store_robots_put(kr_frontier_store(c->frontier), origin, strlen(origin), &row))
    KR_LOG(KR_LOG_WARN, origin, "robots.txt rules not kept in the state database");
  kr_frontier_host_set_robots(c->frontier, f->curi->host, expires, status ? status : f->http_err,
                              delay, now);
  kr_frontier_prereq_done(c->frontier, f->curi->host, now);
}

/* ---- the processors ---------------------------------------------------------------------- */

/* After a robots.txt fetch: its rules stored (a post processor). */
static int robots_update_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  if (!f->is_robots || !f->curi || f->disp != KR_DISP_FINISH) return KR_PROC_NEXT;
  if (f->http_err == KR_ECANCELED && c->stopping) return KR_PROC_NEXT;
  robots_store(f);
  return KR_PROC_NEXT;
}

const kr_processor_t kr_proc_scope = {.name = "scope", .run = scope_run};
const kr_processor_t kr_proc_robots = {.name = "robots", .run = robots_run};
const kr_processor_t kr_proc_robots_update = {.name = "robots-update", .run = robots_update_run};
