/*
 * The crawl object (see crawl.h): it maps the configuration onto the
 * modules' options, owns the loop and every handle on it, keeps a pool of
 * fetch objects walking the processor chain, pulls URIs from the frontier
 * when told it can (on_ready, or a fetch finished), commits grouped store
 * transactions once per loop turn, bounds the work of one turn (dispatches
 * and walks of finished fetches past TURN_BUDGET_NS wait, in order, for
 * the next turn; so do socket reads past another TURN_BUDGET_NS, their
 * bytes left in the kernel, and DNS answers past DNS_BUDGET_NS; all three
 * are reset once a turn, after the poll), enforces max-time, and shuts down in
 * order on a signal, a limit or the end of a snapshot crawl. Nothing here
 * runs inside another module's callback when it could free that module:
 * the end of the crawl is noticed where it happens but carried out from a
 * uv_idle callback on the next turn. Sections: settings from the config,
 * fetch objects, dispatch, the loop, stopping and closing, creation.
 */
#include "crawl.h"
#include "cluster.h"
#include "clusterview.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "diskguard.h"
#include "internal.h"
#include "linkcache.h"
#include "scopestate.h"
#include "kria/fp.h"
#include "kria/seeds.h"
#include "log.h"
#include "turnprof.h"

#define DISPATCH_BUDGET 512       /* URIs started per dispatch call */
/* Dispatches and chain walks of finished fetches per loop turn (a few ms:
 * each page costs ~0.4 ms, libuv hands over up to 1,024 ready sockets at
 * once); the rest waits for the next turn so timers and I/O are not late. */
#define TURN_BUDGET_NS (4u * 1000 * 1000)
/* DNS answers delivered per turn: each usually connects a socket (on
 * loopback the handshake runs inside connect(), ~20 µs), so a dispatch
 * burst of thousands would otherwise connect them all in one turn. */
#define DNS_BUDGET_NS (2u * 1000 * 1000)
#define LINKS_BUDGET (256u << 20)    /* links held by all fetches at once */
/* The link cache: a site's navigation and most of its inner links (a
 * 20,000-page site has ~20,000 distinct link targets; an entry is ~250
 * bytes, so ~30,000 fit the budget). 4,096 slots measured worse, 65,536
 * with 16 MiB no better, on bench/crawl's sites (bench/RESULTS.md). */
#define LINKS_CACHE_SLOTS 32768
#define LINKS_CACHE_BYTES (8u << 20)

static void check_end(kr_crawl_t *c);
static void http_from_view(kr_http_opts_t *o, const kr_config_view_t *v);
static void crawl_fail(kr_crawl_t *c, int err);
static void dispatch(kr_crawl_t *c);
static void on_idle(uv_idle_t *h);
static void on_setup_wait(void *data);
static void on_commit_timer(uv_timer_t *t);

uint64_t kr_crawl_now(const kr_crawl_t *c) { return kr_clock_now_ms(&c->clock); }

kr_frontier_t *kr_crawl_frontier(kr_crawl_t *c) { return c->frontier; }
struct kr_archive *kr_crawl_archive(kr_crawl_t *c) { return c->warc; }

uv_loop_t *kr_crawl_loop(kr_crawl_t *c) { return &c->loop; }

int kr_crawl_is_closing(const kr_crawl_t *c) { return c->closing; }

/* Call the observer's hook `name` (kr_crawl_hooks_t) once it has a state. */
#define HOOK(c, name)                                                       \
  do {                                                                      \
    if ((c)->hooks_state && (c)->opts.hooks->name) (c)->opts.hooks->name((c)->hooks_state); \
  } while (0)

/* ---- host addresses (queue-assignment = ip) ------------------------------------ */

/* The address each host was first reached at, learned from responses:
 * the frontier's ip_of asks here, so once a host's address is known its
 * URIs join the queue of that address. Open addressing on kr_fp(host). */
struct kr_ipmap_slot {
  uint64_t hash;
  char *host;                   /* NULL: free */
  char ip[46];
};

static struct kr_ipmap_slot *ipmap_find(const kr_crawl_t *c, const char *host, size_t len,
                                        uint64_t h) {
  if (!c->ipmap_cap) return NULL;
  for (size_t j = h & (c->ipmap_cap - 1);; j = (j + 1) & (c->ipmap_cap - 1)) {
    struct kr_ipmap_slot *e = &c->ipmap[j];
    if (!e->host) return e;
    if (e->hash == h && strlen(e->host) == len && memcmp(e->host, host, len) == 0) return e;
  }
}

static void ipmap_learn(kr_crawl_t *c, const char *host, size_t len, const char *ip) {
  if (!len || !ip[0] || strlen(ip) >= sizeof c->ipmap->ip) return;
  if ((c->ipmap_n + 1) * 2 > c->ipmap_cap) {
    size_t ocap = c->ipmap_cap, ncap = ocap ? ocap * 2 : 256;
    struct kr_ipmap_slot *old = c->ipmap;
    c->ipmap = kr_xcalloc(ncap, sizeof *c->ipmap);
    c->ipmap_cap = ncap;
    for (size_t i = 0; i < ocap; i++)
      if (old[i].host) *ipmap_find(c, old[i].host, strlen(old[i].host), old[i].hash) = old[i];
    free(old);
  }
  uint64_t h = kr_fp(host, len);
  struct kr_ipmap_slot *e = ipmap_find(c, host, len, h);
  if (e->host) return; /* the first address stays: one queue per host */
  e->host = kr_xstrndup(host, len);
  e->hash = h;
  snprintf(e->ip, sizeof e->ip, "%s", ip);
  c->ipmap_n++;
}

static void ipmap_free(kr_crawl_t *c) {
  for (size_t i = 0; i < c->ipmap_cap; i++) free(c->ipmap[i].host);
  free(c->ipmap);
  c->ipmap = NULL;
  c->ipmap_cap = c->ipmap_n = 0;
}

/* kr_frontier_opts_t.ip_of: an IP literal is its own address; a name's
 * is known once a response came from it. */
static int ip_of(void *ud, const char *host, size_t len, char *out, size_t outlen) {
  const kr_crawl_t *c = ud;
  char lit[64];
  unsigned char bin[16];
  if (len >= 2 && host[0] == '[' && len - 2 < sizeof lit) {
    memcpy(lit, host + 1, len - 2);
    lit[len - 2] = '\0';
    if (inet_pton(AF_INET6, lit, bin) == 1 && len < outlen) {
      memcpy(out, host, len);
      return (int)len;
    }
  } else if (len < sizeof lit) {
    memcpy(lit, host, len);
    lit[len] = '\0';
    if (inet_pton(AF_INET, lit, bin) == 1 && len < outlen) {
      memcpy(out, host, len);
      return (int)len;
    }
  }
  const struct kr_ipmap_slot *e = ipmap_find(c, host, len, kr_fp(host, len));
  if (!e || !e->host) return 0;
  size_t n = strlen(e->ip);
  if (n >= outlen) return 0;
  memcpy(out, e->ip, n);
  return (int)n;
}

/* After a fetch of host queue h answered (from peer_ip): remember the
 * host's address and move the host queue's URIs to that address's queue. */
static void ip_assign(kr_crawl_t *c, kr_fetch_t *f, kr_hostq_t *h, uint64_t now) {
  if (!f->url) return;
  kr_slice_t host = kr_url_hostname(f->url);
  if (f->resp && f->resp->status && !f->redirects && f->resp->peer_ip[0])
    ipmap_learn(c, host.p, host.n, f->resp->peer_ip);
  int rc = kr_frontier_host_rekey(c->frontier, h, f->cf.url, f->cf.url_len, now);
  if (rc > 0)
    KR_LOG(KR_LOG_INFO, kr_frontier_host_name(h), "%d URIs moved to the queue of its address", rc);
  else if (rc == KR_EDB)
    crawl_fail(c, rc);
}

/* ---- settings from the config ------------------------------------------------- */

/* The frontier's per-host fields from a view. */
void kr_frontier_opts_from_view(kr_frontier_opts_t *o, const kr_config_view_t *v) {
  o->delay_factor = kr_config_float(v, KR_CFG_POLITENESS_DELAY_FACTOR);
  o->min_delay_ms = (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_MIN_DELAY);
  o->max_delay_ms = (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_MAX_DELAY);
  o->respect_crawl_delay_up_to_ms =
      (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_RESPECT_CRAWL_DELAY_UP_TO);
  o->host_valence = (uint32_t)kr_config_int(v, KR_CFG_POLITENESS_HOST_VALENCE);
  o->retry_delay_ms = (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_RETRY_DELAY);
  o->max_retries = (uint32_t)kr_config_int(v, KR_CFG_POLITENESS_MAX_RETRIES);
  o->revisit_failed = kr_config_bool(v, KR_CFG_POLITENESS_REVISIT_FAILED);
  o->max_uris_per_host = (uint64_t)kr_config_int(v, KR_CFG_LIMITS_MAX_URIS_PER_HOST);
  o->retire_after = (uint32_t)kr_config_int(v, KR_CFG_CRAWL_RETIRE_AFTER);
  o->retired_wait_ms = (uint64_t)kr_config_ms(v, KR_CFG_CRAWL_RETIRED_WAIT);
  o->backoff_max_ms = (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_MAX_BACKOFF);
  if (o->backoff_initial_ms > o->backoff_max_ms) o->backoff_initial_ms = o->backoff_max_ms;
  /* Until the adaptive issue: every success waits crawl.default-wait. */
  o->default_wait_ms = (uint64_t)kr_config_ms(v, KR_CFG_CRAWL_DEFAULT_WAIT);
  o->failed_wait_ms = (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_FAILED_WAIT);
}

static const pcre2_code **regex_list(const kr_config_view_t *v, kr_cfg_key_t key, size_t *n) {
  *n = kr_config_list_len(v, key);
  if (!*n) return NULL;
  const pcre2_code **a = kr_xcalloc(*n, sizeof *a);
  for (size_t i = 0; i < *n; i++) a[i] = kr_config_list_regex(v, key, i);
  return a;
}

/* [adaptive] settings of a view. 0, or KR_ECONFIG with a reason in err
 * (a digest-strip pattern that PCRE2 refuses byte-wise: the config
 * checked it in UTF mode). */
static int adapt_from_view(kr_hostcfg_t *hc, const kr_config_view_t *v, char *err,
                           size_t errlen) {
  hc->midfetch = kr_config_bool(v, KR_CFG_ADAPTIVE_MIDFETCH);
  hc->vscheme = (kr_vscheme_t)(kr_config_enum(v, KR_CFG_ADAPTIVE_MIDFETCH_SCHEME) + 1);
  static const kr_etag_mode_t modes[] = {[KR_CFG_ETAG_EXACT] = KR_ETAG_EXACT,
                                         [KR_CFG_ETAG_STRONG] = KR_ETAG_STRONG,
                                         [KR_CFG_ETAG_WEAK] = KR_ETAG_WEAK};
  hc->etag_mode = modes[kr_config_enum(v, KR_CFG_ADAPTIVE_ETAG_COMPARE)];
  kr_vtrust_params_default(&hc->vtrust);
  hc->vtrust.sample_rate = kr_config_float(v, KR_CFG_ADAPTIVE_TRUST_SAMPLE);
  hc->vtrust.sample_min = kr_config_float(v, KR_CFG_ADAPTIVE_TRUST_SAMPLE_MIN);
  hc->vtrust.sample_halving = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_TRUST_SAMPLE_HALVING);
  hc->vtrust.misses_to_distrust = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_TRUST_MISSES);
  hc->vtrust.distrust_ms = kr_config_ms(v, KR_CFG_ADAPTIVE_DISTRUST_PERIOD);
  hc->vtrust.probation = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_TRUST_PROBATION);
  hc->strip_max = (size_t)kr_config_size(v, KR_CFG_ADAPTIVE_DIGEST_STRIP_MAX_SIZE);
  size_t n = kr_config_list_len(v, KR_CFG_ADAPTIVE_DIGEST_STRIP);
  if (n) {
    kr_strip_opts_t so;
    kr_strip_opts_default(&so);
    so.max_size = hc->strip_max;
    hc->strip = kr_strip_new(&so);
    for (size_t i = 0; i < n; i++) {
      char e[256] = "";
      if (kr_strip_add(hc->strip, NULL, NULL, kr_config_list_item(v, KR_CFG_ADAPTIVE_DIGEST_STRIP, i),
                       e, sizeof e)) {
        snprintf(err, errlen, "adaptive.digest-strip: %s", e);
        kr_strip_free(hc->strip);
        hc->strip = NULL;
        return KR_ECONFIG;
      }
    }
  }
  hc->strip_url = kr_config_regex(v, KR_CFG_ADAPTIVE_DIGEST_STRIP_URL);
  hc->refresh_embeds = kr_config_bool(v, KR_CFG_ADAPTIVE_REFRESH_EMBEDS);
  hc->feeds = kr_config_bool(v, KR_CFG_ADAPTIVE_FEEDS);
  hc->robots_sitemaps = kr_config_bool(v, KR_CFG_ADAPTIVE_ROBOTS_SITEMAPS);
  hc->feed_pull_max = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_FEED_PULL_MAX);
  hc->hint_changefreq = kr_config_bool(v, KR_CFG_ADAPTIVE_HINT_CHANGEFREQ);
  hc->hint_lm = kr_config_bool(v, KR_CFG_ADAPTIVE_HINT_LAST_MODIFIED);
  kr_sig_params_default(&hc->sig);
  hc->sig.precision_min = kr_config_float(v, KR_CFG_ADAPTIVE_SIGNAL_PRECISION);
  hc->sig.recall_min = kr_config_float(v, KR_CFG_ADAPTIVE_SIGNAL_RECALL);
  hc->sig.max_stretch = kr_config_float(v, KR_CFG_ADAPTIVE_SIGNAL_MAX_STRETCH);
  hc->sig.probation = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_SIGNAL_PROBATION);
  kr_est_params_default(&hc->est);
  hc->est.depth_halving = kr_config_float(v, KR_CFG_ADAPTIVE_HINT_DEPTH);
  hc->utilisation = kr_config_float(v, KR_CFG_ADAPTIVE_BUDGET_UTILISATION);
  hc->capacity_plan = kr_config_bool(v, KR_CFG_ADAPTIVE_CAPACITY_PLAN);
  hc->informed_priors = kr_config_bool(v, KR_CFG_ADAPTIVE_INFORMED_PRIORS);
  hc->objective = kr_config_enum(v, KR_CFG_ADAPTIVE_OBJECTIVE);
  return 0;
}

static kr_hostcfg_t *hostcfg_build(kr_crawl_t *c, const kr_config_view_t *v,
                                   const kr_frontier_opts_t *base) {
  kr_hostcfg_t *hc = kr_xcalloc(1, sizeof *hc);
  hc->view = v;
  hc->fopts = *base;
  kr_frontier_opts_from_view(&hc->fopts, v);
  hc->limits.max_url_len = (size_t)kr_config_int(v, KR_CFG_SCOPE_MAX_URL_LENGTH);
  hc->limits.max_path_depth = (unsigned)kr_config_int(v, KR_CFG_SCOPE_MAX_PATH_DEPTH);
  hc->limits.max_repeated_segments =
      (unsigned)kr_config_int(v, KR_CFG_SCOPE_MAX_REPEATED_SEGMENTS);
  hc->inc = regex_list(v, KR_CFG_SCOPE_INCLUDE, &hc->limits.n_include);
  hc->exc = regex_list(v, KR_CFG_SCOPE_EXCLUDE, &hc->limits.n_exclude);
  hc->limits.include = hc->inc;
  hc->limits.exclude = hc->exc;
  hc->exempt = regex_list(v, KR_CFG_ROBOTS_EXEMPT, &hc->n_exempt);
  hc->obey_robots = kr_config_bool(v, KR_CFG_ROBOTS_OBEY);
  hc->robots_expiry_ms = (uint64_t)kr_config_ms(v, KR_CFG_ROBOTS_EXPIRY);
  hc->conditional = kr_config_bool(v, KR_CFG_HTTP_CONDITIONAL_REQUESTS);
  kr_http_opts_default(&hc->http);
  http_from_view(&hc->http, v);
  char err[320];
  if (adapt_from_view(hc, v, err, sizeof err))
    KR_LOG(KR_LOG_WARN, kr_config_view_host(v), "%s: no digest-strip for these hosts", err);
  (void)c;
  return hc;
}

static void hostcfg_free(kr_hostcfg_t *hc) {
  if (!hc) return;
  kr_strip_free(hc->strip);
  free(hc->inc);
  free(hc->exc);
  free(hc->exempt);
  free(hc);
}

kr_hostcfg_t *kr__crawl_hostcfg_new(kr_crawl_t *c, const kr_config_view_t *v) {
  return hostcfg_build(c, v, &c->global_hc->fopts);
}

void kr__crawl_hostcfg_free(kr_hostcfg_t *hc) { hostcfg_free(hc); }

static size_t ptr_hash(const void *p, size_t mask) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x & mask;
}

static void hcs_insert(kr_crawl_t *c, kr_hostcfg_t *hc) {
  if ((c->hcs_n + 1) * 2 > c->hcs_cap) {
    size_t ncap = c->hcs_cap ? c->hcs_cap * 2 : 64;
    kr_hostcfg_t **n = kr_xcalloc(ncap, sizeof *n);
    for (size_t i = 0; i < c->hcs_cap; i++) {
      if (!c->hcs[i]) continue;
      size_t j = ptr_hash(c->hcs[i]->view, ncap - 1);
      while (n[j]) j = (j + 1) & (ncap - 1);
      n[j] = c->hcs[i];
    }
    free(c->hcs);
    c->hcs = n;
    c->hcs_cap = ncap;
  }
  size_t j = ptr_hash(hc->view, c->hcs_cap - 1);
  while (c->hcs[j]) j = (j + 1) & (c->hcs_cap - 1);
  c->hcs[j] = hc;
  c->hcs_n++;
}

const kr_hostcfg_t *kr_crawl_hostcfg(kr_crawl_t *c, const char *host, size_t len) {
  const kr_config_view_t *v = kr_config_view(c->cfg, host, len);
  if (v == c->global_hc->view) return c->global_hc;
  /* Views exist once per [host] section: this table stays small. */
  if (c->hcs_cap) {
    size_t j = ptr_hash(v, c->hcs_cap - 1);
    while (c->hcs[j]) {
      if (c->hcs[j]->view == v) return c->hcs[j];
      j = (j + 1) & (c->hcs_cap - 1);
    }
  }
  kr_hostcfg_t *hc = hostcfg_build(c, v, &c->global_hc->fopts);
  hcs_insert(c, hc);
  return hc;
}

const kr_hostcfg_t *kr__crawl_queue_hostcfg(kr_crawl_t *c, const kr_hostq_t *h) {
  const char *name = kr_frontier_host_name(h);
  size_t n = strlen(name);
  if (name[0] == '[') {
    const char *e = strchr(name, ']');
    n = e ? (size_t)(e - name + 1) : n;
  } else {
    const char *colon = strchr(name, ':');
    if (colon) n = (size_t)(colon - name);
  }
  return kr_crawl_hostcfg(c, name, n);
}

/* The frontier created or loaded a host queue: give it its own options
 * when a [host] section applies. The key is host[:port] (or a domain). */
static void on_host(void *ud, kr_frontier_t *f, kr_hostq_t *h) {
  kr_crawl_t *c = ud;
  const kr_hostcfg_t *hc = kr__crawl_queue_hostcfg(c, h);
  /* After a reload the global values may differ from the frontier's. */
  if (hc != c->global_hc || c->reloads)
    kr_frontier_host_set_opts(f, h, &hc->fopts, kr_crawl_now(c));
  kr__adapt_host_load(c, f, h, hc); /* before any of its waits */
}

static int canon_from_config(kr_crawl_t *c, char *err, size_t errlen) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  unsigned flags = 0;
  if (kr_config_bool(g, KR_CFG_CANON_STRIP_USERINFO)) flags |= KR_URL_CANON_STRIP_USERINFO;
  if (kr_config_bool(g, KR_CFG_CANON_STRIP_WWW)) flags |= KR_URL_CANON_STRIP_WWW;
  if (kr_config_bool(g, KR_CFG_CANON_SORT_QUERY)) flags |= KR_URL_CANON_SORT_QUERY;
  if (kr_config_bool(g, KR_CFG_CANON_TIDY_QUERY)) flags |= KR_URL_CANON_TIDY_QUERY;
  c->canon = kr_url_canon_opts_new(flags);
  if (kr_config_bool(g, KR_CFG_CANON_STRIP_SESSION_IDS) &&
      kr_url_canon_opts_add_ruleset(c->canon, "session-ids")) {
    snprintf(err, errlen, "canon: the session-ids rules would not compile");
    return KR_ECONFIG;
  }
  for (size_t i = 0; i < kr_config_list_len(g, KR_CFG_CANON_STRIP); i++) {
    char e[256] = "";
    if (kr_url_canon_opts_add_rule(c->canon, kr_config_list_item(g, KR_CFG_CANON_STRIP, i),
                                   NULL, e, sizeof e)) {
      snprintf(err, errlen, "canon.strip: %s", e);
      return KR_ECONFIG;
    }
  }
  return 0;
}

int kr_crawl_scope_new(const kr_config_t *cfg, kr_scope_t **out, char *err, size_t errlen) {
  const kr_config_view_t *g = kr_config_global(cfg);
  kr_scope_opts_t so;
  kr_scope_opts_init(&so);
  static const kr_scope_mode_t modes[] = {
      [KR_CFG_SCOPE_HOST] = KR_SCOPE_HOST, [KR_CFG_SCOPE_DOMAIN] = KR_SCOPE_DOMAIN,
      [KR_CFG_SCOPE_PATH] = KR_SCOPE_PATH, [KR_CFG_SCOPE_SURT] = KR_SCOPE_SURT};
  so.mode = modes[kr_config_enum(g, KR_CFG_SCOPE_MODE)];
  so.max_url_len = (size_t)kr_config_int(g, KR_CFG_SCOPE_MAX_URL_LENGTH);
  so.max_link_hops = (int)kr_config_int(g, KR_CFG_SCOPE_MAX_LINK_HOPS);
  so.max_trans_hops = (int)kr_config_int(g, KR_CFG_SCOPE_MAX_TRANS_HOPS);
  so.max_path_depth = (unsigned)kr_config_int(g, KR_CFG_SCOPE_MAX_PATH_DEPTH);
  so.max_repeated_segments = (unsigned)kr_config_int(g, KR_CFG_SCOPE_MAX_REPEATED_SEGMENTS);
  size_t np = kr_config_list_len(g, KR_CFG_SCOPE_SURT_PREFIXES);
  const char **pre = np ? kr_xcalloc(np, sizeof *pre) : NULL;
  for (size_t i = 0; i < np; i++) pre[i] = kr_config_list_item(g, KR_CFG_SCOPE_SURT_PREFIXES, i);
  so.surt_prefixes = pre;
  so.n_surt_prefixes = np;
  /* include/exclude are applied per host through kr_scope_limits_t from
   * the config's compiled patterns, so the scope needs none of its own. */
  int rc = kr_scope_new(&so, out, err, errlen);
  free(pre);
  return rc;
}

/* The [http] keys a [host] section may override, from view v: what a
 * fetch of that host reads from its own options (kr_http_req_t.opts). */
static void http_from_view(kr_http_opts_t *o, const kr_config_view_t *v) {
  o->connect_timeout_ms = (uint32_t)kr_config_ms(v, KR_CFG_HTTP_TIMEOUT_CONNECT);
  o->first_byte_timeout_ms = (uint32_t)kr_config_ms(v, KR_CFG_HTTP_TIMEOUT_FIRST_BYTE);
  o->idle_timeout_ms = (uint32_t)kr_config_ms(v, KR_CFG_HTTP_TIMEOUT_IDLE);
  o->total_timeout_ms = (uint32_t)kr_config_ms(v, KR_CFG_HTTP_TIMEOUT_TOTAL);
  o->max_header_bytes = (size_t)kr_config_size(v, KR_CFG_HTTP_MAX_HEADER_BYTES);
  o->max_body_bytes = kr_config_size(v, KR_CFG_HTTP_MAX_BODY_BYTES);
  o->max_ratio = (uint32_t)kr_config_int(v, KR_CFG_HTTP_MAX_RATIO);
  o->drain_max_bytes = (size_t)kr_config_size(v, KR_CFG_HTTP_DRAIN_THRESHOLD);
  static const int verify[] = {[KR_CFG_TLS_RECORD] = KR_TLS_VERIFY_RECORD,
                               [KR_CFG_TLS_REQUIRE] = KR_TLS_VERIFY_REQUIRE,
                               [KR_CFG_TLS_OFF] = KR_TLS_VERIFY_OFF};
  o->tls_verify = verify[kr_config_enum(v, KR_CFG_HTTP_TLS_VERIFY)];
  /* Busy connections are bounded by the host's valence (one fetch each);
   * this bounds the idle ones kept for it. */
  int64_t per_host = kr_config_int(v, KR_CFG_HTTP_CONNECTIONS_PER_HOST);
  o->pool_max_idle_per_key =
      (uint32_t)(per_host ? per_host : kr_config_int(v, KR_CFG_POLITENESS_HOST_VALENCE));
}

/* The items of a list key joined with ',' (malloc'd; "" when empty). */
static char *join_list(const kr_config_view_t *g, kr_cfg_key_t k) {
  kr_buf_t b;
  kr_buf_init(&b, 1 << 20);
  for (size_t i = 0; i < kr_config_list_len(g, k); i++) {
    if (i) kr_buf_append_str(&b, ",");
    kr_buf_append_str(&b, kr_config_list_item(g, k, i));
  }
  char *s = kr_xstrndup(b.data ? b.data : "", b.len);
  kr_buf_free(&b);
  return s;
}

/* Descriptors kept for what is not a connection: the database and its
 * WAL, WARC and log files, DNS sockets, status clients. */
#define FD_RESERVE 256

/* http.idle-connections, lowered to the descriptors left once the soft
 * limit is raised to the hard one and every busy connection has its own:
 * a pool that outgrows the limit would make connect() fail with EMFILE.
 * With thousands of hosts the pool must hold one connection per host
 * visited within the pool's idle time, or its LRU evicts each before its
 * host's next fetch and every fetch pays a new handshake. */
static uint32_t idle_connections(const kr_config_view_t *g) {
  uint64_t want = (uint64_t)kr_config_int(g, KR_CFG_HTTP_IDLE_CONNECTIONS);
  uint64_t busy = (uint64_t)kr_config_int(g, KR_CFG_HTTP_MAX_CONNECTIONS);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return (uint32_t)want;
  if (rl.rlim_cur < rl.rlim_max) {
    struct rlimit up = {rl.rlim_max, rl.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl.rlim_cur = rl.rlim_max;
  }
  uint64_t lim = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
  uint64_t room = lim > busy + FD_RESERVE ? lim - busy - FD_RESERVE : 0;
  if (busy + FD_RESERVE > lim)
    KR_LOG(KR_LOG_WARN, NULL,
           "http.max-connections = %" PRIu64 " needs more than the descriptor limit of %" PRIu64
           " allows (%d kept for files); fetches past it fail (raise LimitNOFILE or ulimit -n)",
           busy, lim, FD_RESERVE);
  if (want > room) {
    KR_LOG(KR_LOG_NOTICE, NULL,
           "http.idle-connections lowered from %" PRIu64 " to %" PRIu64
           ": the descriptor limit is %" PRIu64 " (http.max-connections = %" PRIu64
           ", %d kept for files)", want, room, lim, busy, FD_RESERVE);
    want = room;
  }
  return (uint32_t)want;
}

/* o->allow_addresses and o->deny_addresses are malloc'd (the caller
 * frees them once the client is made). */
static void http_from_config(kr_crawl_t *c, kr_http_opts_t *o) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  kr_http_opts_default(o);
  o->allow_private_addresses = kr_config_bool(g, KR_CFG_HTTP_ALLOW_PRIVATE_ADDRESSES);
  o->allow_addresses = join_list(g, KR_CFG_HTTP_ALLOW_ADDRESSES);
  o->deny_addresses = join_list(g, KR_CFG_HTTP_DENY_ADDRESSES);
  o->user_agent = kr_config_user_agent(c->cfg);
  http_from_view(o, g);
  o->pool_max_idle = idle_connections(g);
  o->tls_sessions = (uint32_t)kr_config_int(g, KR_CFG_HTTP_TLS_SESSIONS);
  o->setups_per_address = (uint32_t)kr_config_int(g, KR_CFG_HTTP_SETUPS_PER_ADDRESS);
  o->on_setup_wait = on_setup_wait;
  o->on_setup_wait_data = c;
  /* the WARC's certificate facts (proc_warc.c); the key takes a restart */
  o->tls_chain = kr_config_bool(g, KR_CFG_WARC_ENABLED);
}

static void dns_from_config(kr_crawl_t *c, kr_dns_opts_t *o, kr_buf_t *servers) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  kr_dns_opts_default(o);
  for (size_t i = 0; i < kr_config_list_len(g, KR_CFG_DNS_SERVERS); i++) {
    if (i) kr_buf_append_str(servers, ",");
    kr_buf_append_str(servers, kr_config_list_item(g, KR_CFG_DNS_SERVERS, i));
  }
  o->servers = servers->len ? servers->data : NULL;
  const char *hosts = kr_config_str(g, KR_CFG_DNS_HOSTS_FILE);
  o->use_hosts_file = hosts[0] != '\0';
  o->hosts_file = hosts[0] ? hosts : NULL;
  o->min_ttl_s = (uint32_t)(kr_config_ms(g, KR_CFG_DNS_MIN_TTL) / 1000);
  o->max_ttl_s = (uint32_t)(kr_config_ms(g, KR_CFG_DNS_MAX_TTL) / 1000);
  o->negative_ttl_s = (uint32_t)(kr_config_ms(g, KR_CFG_DNS_NEGATIVE_TTL) / 1000);
  o->timeout_ms = (uint32_t)kr_config_ms(g, KR_CFG_DNS_TIMEOUT);
  o->tries = (int)kr_config_int(g, KR_CFG_DNS_TRIES);
  static const int fam[] = {[KR_CFG_FAMILY_ANY] = AF_UNSPEC, [KR_CFG_FAMILY_IPV4] = AF_INET,
                            [KR_CFG_FAMILY_IPV6] = AF_INET6};
  o->family = fam[kr_config_enum(g, KR_CFG_DNS_FAMILY)];
}

static void frontier_from_config(kr_crawl_t *c, kr_frontier_opts_t *o) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  kr_frontier_opts_default(o);
  kr_frontier_opts_from_view(o, g);
  o->revisit = kr_config_bool(g, KR_CFG_CRAWL_REVISIT);
  o->revisit_now = c->opts.revisit_now;
  o->preference_embed_hops = (uint32_t)kr_config_int(g, KR_CFG_CRAWL_PREFERENCE_EMBED_HOPS);
  o->max_connections = (uint32_t)kr_config_int(g, KR_CFG_HTTP_MAX_CONNECTIONS);
  static const kr_queue_assign_t qa[] = {[KR_CFG_QUEUE_BY_HOST] = KR_QUEUE_BY_HOST,
                                         [KR_CFG_QUEUE_BY_DOMAIN] = KR_QUEUE_BY_DOMAIN,
                                         [KR_CFG_QUEUE_BY_IP] = KR_QUEUE_BY_IP};
  o->queue_assign = qa[kr_config_enum(g, KR_CFG_POLITENESS_QUEUE_ASSIGNMENT)];
  if (o->queue_assign == KR_QUEUE_BY_IP) {
    o->ip_of = ip_of;
    o->ip_ud = c;
    c->ip_queues = 1;
  }
  o->max_bytes_download = kr_config_size(g, KR_CFG_LIMITS_MAX_BYTES_DOWNLOAD);
  o->max_document_download = (uint64_t)kr_config_int(g, KR_CFG_LIMITS_MAX_DOCUMENT_DOWNLOAD);
  o->max_time_ms = (uint64_t)kr_config_ms(g, KR_CFG_LIMITS_MAX_TIME);
  o->limits_period_ms = (uint64_t)kr_config_ms(g, KR_CFG_LIMITS_PERIOD);
  o->retire_unlinked_ms = (uint64_t)kr_config_ms(g, KR_CFG_CRAWL_RETIRE_UNLINKED_AFTER);
  o->commit_ms = (uint32_t)kr_config_ms(g, KR_CFG_STORE_COMMIT_INTERVAL);
  o->commit_updates = (uint32_t)kr_config_int(g, KR_CFG_STORE_COMMIT_UPDATES);
  /* Only dedupe with WARC files looks originals up by digest (proc_change,
   * the archive); both keys take a restart. */
  o->orig_index = kr_config_bool(g, KR_CFG_ADAPTIVE_DEDUPE) &&
                          kr_config_bool(g, KR_CFG_WARC_ENABLED)
                      ? 1
                      : -1;
  o->on_host = on_host;
  o->host_ud = c;
}

static int is_robots_url(const kr_url_t *u) {
  kr_slice_t p = kr_url_pathname(u);
  return p.n == 11 && memcmp(p.p, "/robots.txt", 11) == 0 && kr_url_query(u).p == NULL;
}

static void start_fetch(kr_crawl_t *c, kr_curi_t *curi) {
  kr_fetch_t *f = kr__fetch_get(c);
  f->curi = curi;
  f->issued_ms = kr_crawl_now(c);
  f->ad.content = KR_CONTENT_UNKNOWN;
  f->ad.vt_mode = -1;
  c->st.issued++;
  if (c->hooks_state && c->opts.hooks->issued) c->opts.hooks->issued(c->hooks_state, curi);
  kr_slice_t host = {"", 0};
  if (kr_url_parse(curi->url, curi->url_len, NULL, &f->url) == 0) {
    host = kr_url_hostname(f->url);
    f->is_robots = is_robots_url(f->url);
  } else {
    f->url = NULL; /* scope sees it and fails the URI */
  }
  f->hc = kr_crawl_hostcfg(c, host.p, host.n);
  /* The chain's copy: the curi goes back to the frontier before the walk
   * ends (prerequisites), the URL must outlive it. */
  const char *url = kr_arena_strndup(&f->arena, curi->url, curi->url_len);
  kr_chain_fetch_init(&c->chain, &f->cf, url ? url : "", url ? curi->url_len : 0, host);
  kr_chain_start(&f->cf);
}

/* A seed's last word in this run: an answer of any status, or a failure
 * that is not retried (sorted by why, for the end of a snapshot). */
static void seed_done(kr_crawl_t *c, const kr_fetch_t *f, const kr_curi_t *curi) {
  if (curi->hop_len || f->is_robots) return;
  if (!f->decided && f->resp && f->resp->status) {
    c->seeds.fetched++;
    return;
  }
  const kr_outcome_t *o = &f->outcome;
  if (o->kind == KR_OUTCOME_RETRY && curi->retries < f->hc->fopts.max_retries) return;
  if (o->kind == KR_OUTCOME_SUCCESS || o->kind == KR_OUTCOME_BACKOFF) return;
  int err = f->decided ? f->cause : o->status;
  if (f->decided && f->log_status == KR_S_BLOCKED_BY_ADDRESS_POLICY) err = KR_EADDR_REFUSED;
  c->seeds.failed++;
  if (f->decided && f->log_status == KR_S_ROBOTS_PRECLUDED)
    c->seeds.robots++;
  else if (f->decided && f->log_status == KR_S_ROBOTS_PREREQUISITE_FAILURE && !err)
    c->seeds.robots_down++; /* robots.txt answered 429 or 5xx until it gave up */
  else if (err == KR_EADDR_REFUSED)
    c->seeds.policy++;
  else if (err == KR_EDNS_NXDOMAIN || err == KR_EDNS_NODATA || err == KR_EDNS_TIMEOUT ||
           err == KR_EDNS_FAIL)
    c->seeds.dns++;
  else if (err == KR_ECONNREFUSED)
    c->seeds.refused++;
}

void kr__fetch_complete(kr_fetch_t *f) {
  kr_crawl_t *c = f->crawl;
  kr_curi_t *curi = f->curi;
  if (!curi) return;
  f->curi = NULL;
  uint64_t now = kr_crawl_now(c);
  if (f->disp == KR_DISP_DEFER || !c->frontier) {
    c->st.deferred++;
    if (c->frontier) kr_frontier_defer(c->frontier, curi, now);
    return;
  }
  kr_hostq_t *h = curi->host;
  seed_done(c, f, curi);
  /* Links another member owns go to the outbox first, so they are
   * committed no later than this URI. */
  long nlinks = c->cluster ? kr__crawl_cluster_divert_links(c, f->links, f->nlinks) : (long)f->nlinks;
  if (nlinks < 0) {
    crawl_fail(c, (int)nlinks);
    nlinks = 0;
  }
  KR_TP_ENTER(KR_TP_FINISH);
  int rc = kr_frontier_finished(c->frontier, curi, &f->outcome, f->links, (size_t)nlinks, now);
  KR_TP_LEAVE();
  if (rc < 0) crawl_fail(c, rc);
  else if (c->ip_queues) ip_assign(c, f, h, now);
}

/* The chain is done with f. */
static void on_finalize(kr_chain_fetch_t *cf, void *ud) {
  kr_crawl_t *c = ud;
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  /* post hands the URI back; should a post processor have failed to, it
   * goes back untouched rather than leaking its slot. */
  if (f->curi) {
    (void)KR_COUNT_IF(1);
    f->disp = KR_DISP_DEFER;
    kr__fetch_complete(f);
  }
  kr__fetch_put(c, f);
  dispatch(c); /* capacity came back */
}

void kr__fetch_resume(kr_fetch_t *f, int err) {
  kr_crawl_t *c = f->crawl;
  if (!c->resume_head && kr_turn_budget_take(&c->turn_budget, uv_hrtime())) {
    kr_chain_resume(&f->cf, err);
    return;
  }
  f->resume_err = err;
  f->resume_next = NULL;
  if (c->resume_tail) c->resume_tail->resume_next = f;
  else c->resume_head = f;
  c->resume_tail = f;
  if (!c->closing) uv_idle_start(&c->idle, on_idle);
}

/* Walk the finished fetches left by earlier turns, oldest first, as far as
 * this turn's budget goes. 1: some are left. */
static int resume_waiting(kr_crawl_t *c) {
  while (c->resume_head) {
    if (!kr_turn_budget_take(&c->turn_budget, uv_hrtime())) return 1;
    kr_fetch_t *f = c->resume_head;
    c->resume_head = f->resume_next;
    if (!c->resume_head) c->resume_tail = NULL;
    f->resume_next = NULL;
    kr_chain_resume(&f->cf, f->resume_err);
  }
  return 0;
}

/* ---- dispatch ---------------------------------------------------------------------- */

static void dispatch(kr_crawl_t *c) {
  if (c->dispatching) {
    c->dispatch_again = 1;
    return;
  }
  if (c->stopping || c->closing || !c->frontier || c->paused || c->disk_held ||
      c->cluster_held) {
    check_end(c);
    return;
  }
  c->dispatching = 1;
  size_t budget = DISPATCH_BUDGET;
  KR_TP_ENTER(KR_TP_DISPATCH);
  do {
    c->dispatch_again = 0;
    while (budget && !c->stopping) {
      if (!kr_turn_budget_take(&c->turn_budget, uv_hrtime())) {
        budget = 0; /* this turn has done its share */
        break;
      }
      kr_curi_t *curi;
      kr_frontier_set_waiting(c->frontier, c->http ? kr_http_client_setups_waiting(c->http) : 0);
      int rc = kr_frontier_next(c->frontier, kr_crawl_now(c), &curi);
      if (rc < 0) {
        crawl_fail(c, rc);
        break;
      }
      if (rc == 0) break;
      budget--;
      start_fetch(c, curi);
    }
  } while (c->dispatch_again && budget && !c->stopping);
  KR_TP_LEAVE();
  c->dispatching = 0;
  /* Out of budget with work left: go on next turn, after I/O. */
  if (!budget && !c->stopping) uv_idle_start(&c->idle, on_idle);
  check_end(c);
}

static void on_ready(kr_frontier_t *f, void *ud) {
  (void)f;
  dispatch(ud);
}

/* ---- the loop ------------------------------------------------------------------------ */

void kr__crawl_fail(kr_crawl_t *c, int err) { crawl_fail(c, err); }

/* A fetch waits for a connection setup slot at its server's address: it
 * no longer counts against http.max-connections (dispatch tells the
 * frontier), so another may be issued, on a later turn. */
static void on_setup_wait(void *data) {
  kr_crawl_t *c = data;
  if (!c->stopping && !c->closing) uv_idle_start(&c->idle, on_idle);
}

void kr__crawl_cluster_hold(kr_crawl_t *c, int held) {
  c->cluster_held = held;
  if (!held && !c->stopping && !c->closing) uv_idle_start(&c->idle, on_idle);
}

static void crawl_fail(kr_crawl_t *c, int err) {
  if (!c->fatal) {
    c->fatal = err;
    KR_LOG(KR_LOG_ERROR, c->frontier ? kr_store_path(kr_frontier_store(c->frontier)) : NULL,
           "stopping the crawl: %s", kr_strerror(err));
  }
  kr_crawl_stop(c);
}

/* ---- the state disk ------------------------------------------------------------------- */

static void on_disk_retry(kr_wheel_entry_t *e);

/* Low on space under the state directory: the reserve is released (the
 * commits of the fetches running now land in it) and nothing new is
 * issued until kr_diskguard_recover sees room again. */
static void disk_check(kr_crawl_t *c, uint64_t now_ms) {
  if (!c->disk || c->disk_held || !kr_diskguard_check(c->disk, now_ms)) return;
  kr_diskguard_stats_t ds;
  kr_diskguard_stats(c->disk, &ds);
  c->disk_held = 1;
  KR_LOG(KR_LOG_ERROR, kr_diskguard_dir(c->disk),
         "state directory: only %" PRIu64 " bytes free: no new fetches until %" PRIu64
         " bytes are free; the fetches running now finish and are committed, what was "
         "committed stays; checking every second", ds.avail, ds.resume_mark);
  kr_timer_start(&c->timers, &c->disk_retry, kr_crawl_now(c) + 1000, on_disk_retry);
}

static void on_disk_retry(kr_wheel_entry_t *e) {
  kr_crawl_t *c = container_of(e, kr_crawl_t, disk_retry);
  if (c->closing || !c->disk_held) return;
  kr_diskguard_stats_t ds;
  if (!kr_diskguard_recover(c->disk)) {
    kr_diskguard_stats(c->disk, &ds);
    KR_LOG(KR_LOG_INFO, kr_diskguard_dir(c->disk),
           "state directory: still %" PRIu64 " bytes free: fetches stay held", ds.avail);
    kr_timer_start(&c->timers, &c->disk_retry, kr_crawl_now(c) + 1000, on_disk_retry);
    return;
  }
  kr_diskguard_stats(c->disk, &ds);
  c->disk_held = 0;
  KR_LOG(KR_LOG_NOTICE, kr_diskguard_dir(c->disk),
         "state directory: %" PRIu64 " bytes free again: fetches resume", ds.avail);
  if (!c->stopping) uv_idle_start(&c->idle, on_idle);
}

/* Right before each COMMIT (the store's presync hook). */
static int presync(void *ud, int may_wait) {
  kr_crawl_t *c = ud;
  disk_check(c, 0); /* always: the COMMIT is next */
  return kr_archive_presync(c->warc, may_wait);
}

/* Once per loop turn: write crawl.log lines, then commit what is due. */
static void turn(kr_crawl_t *c) {
  if (!c->frontier) return;
  uint64_t now = kr_crawl_now(c);
  kr_store_t *st = kr_frontier_store(c->frontier);
  const kr_config_view_t *g = kr_config_global(c->cfg);
  uint64_t commit_ms = (uint64_t)kr_config_ms(g, KR_CFG_STORE_COMMIT_INTERVAL);
  /* The lines of URIs that may be committed now reach crawl.log first: a
   * crash may repeat a line, never drop the line of a committed URI. One
   * write per busy loop turn at most (nothing when no line waits). */
  if (kr_store_in_tx(st)) {
    disk_check(c, now); /* room for these lines and the commit first */
    kr_crawllog_flush(c->log);
  }
  int rc = kr_frontier_turn(c->frontier, now);
  if (rc < 0) {
    crawl_fail(c, rc);
    return;
  }
  kr__crawl_cluster_turn(c); /* after the commit: acknowledge what it took, send the outbox */
  if (!kr_store_in_tx(st)) {
    uv_timer_stop(&c->commit_timer);
  } else if (!uv_is_active((uv_handle_t *)&c->commit_timer)) {
    /* Commit within commit-interval even if the loop would sleep. */
    uv_timer_start(&c->commit_timer, on_commit_timer, commit_ms + 1, 0);
  }
  kr_crawllog_tick(c->log, now);
  kr__adapt_hosts_turn(c, now, 0);
  /* Nothing running: the end may have come with held-back writes applied
   * (the last links of a snapshot crawl after a commit's WARC sync). */
  if (c->in_flight == 0) check_end(c);
}

static void on_check(uv_check_t *h) {
  kr_crawl_t *c = container_of(h, kr_crawl_t, check);
  if (kr_turnprof.on)
    kr_tp_poll_end(&kr_turnprof, uv_hrtime(), uv_metrics_idle_time(&c->loop) - c->poll_idle_ns);
  kr_turn_budget_reset(&c->turn_budget); /* the poll phase is over */
  kr_turn_budget_reset(&c->read_budget);
  kr_turn_budget_reset(&c->dns_budget);
  if (c->http) kr_http_client_turn(c->http); /* sockets left unread read again */
  KR_TP_ENTER(KR_TP_TURN);
  if (!c->closing) turn(c);
  KR_TP_LEAVE();
  if (kr_turnprof.on) kr_tp_turn_end(&kr_turnprof, uv_hrtime(), kr_tp_thread_cpu());
}

static void on_prepare(uv_prepare_t *h) {
  kr_crawl_t *c = container_of(h, kr_crawl_t, prepare);
  c->poll_idle_ns = uv_metrics_idle_time(&c->loop);
  if (kr_turnprof.on) kr_tp_poll_begin(&kr_turnprof, uv_hrtime());
}

static void on_commit_timer(uv_timer_t *t) {
  kr_crawl_t *c = container_of(t, kr_crawl_t, commit_timer);
  if (!c->closing) turn(c);
}

/* ---- stopping and closing ------------------------------------------------------------ */

static void close_everything(kr_crawl_t *c);

static void on_idle(uv_idle_t *h) {
  kr_crawl_t *c = container_of(h, kr_crawl_t, idle);
  uv_idle_stop(h);
  if (c->closing) return;
  KR_TP_ENTER(KR_TP_RESUME);
  if (resume_waiting(c)) uv_idle_start(h, on_idle);
  KR_TP_LEAVE();
  if (c->stopping && c->in_flight == 0) {
    close_everything(c);
    return;
  }
  dispatch(c);
}

/* Cancel every HTTP exchange still running; their on_done follows. */
static void cancel_inflight(kr_crawl_t *c) {
  kr_archive_cancel(c->warc);
  for (kr_fetch_t *f = c->inflight; f; f = f->next)
    if (f->http) kr_http_fetch_cancel(f->http);
}

/* Fetches still waiting for a setup slot at their server's address
 * (http.setups-per-address) have sent nothing: given back now, not
 * connected during the stop. */
static void cancel_queued(kr_crawl_t *c) {
  for (kr_fetch_t *f = c->inflight; f; f = f->next)
    if (f->http && kr_http_fetch_queued(f->http)) kr_http_fetch_cancel(f->http);
}

static void on_grace(uv_timer_t *t) {
  kr_crawl_t *c = container_of(t, kr_crawl_t, grace_timer);
  if (c->in_flight) {
    KR_LOG(KR_LOG_NOTICE, NULL, "abandoning %" PRIu64 " fetches still running", c->in_flight);
    cancel_inflight(c);
  }
}

void kr_crawl_stop(kr_crawl_t *c) {
  if (c->closing) return;
  if (!c->stopping) {
    c->stopping = 1;
    HOOK(c, stopping);
    cancel_queued(c);
    if (c->in_flight && c->opts.shutdown_grace_ms)
      uv_timer_start(&c->grace_timer, on_grace, c->opts.shutdown_grace_ms, 0);
    else if (c->in_flight)
      cancel_inflight(c);
  }
  check_end(c);
}

void kr_crawl_pause(kr_crawl_t *c, int paused) {
  if (c->paused == !!paused) return;
  c->paused = !!paused;
  KR_LOG(KR_LOG_NOTICE, NULL, paused ? "paused: running fetches finish, nothing new is issued"
                                     : "resumed");
  if (!paused && !c->stopping && !c->closing) uv_idle_start(&c->idle, on_idle);
}

/* Notice the end of the crawl; act on it from the idle callback, outside
 * whatever callback we are in now. */
static void check_end(kr_crawl_t *c) {
  if (c->closing || !c->frontier) return;
  if (!c->stopping) {
    kr_frontier_status_t s = kr_frontier_status(c->frontier, kr_crawl_now(c));
    if (s == KR_FRONTIER_RUNNING) return;
    /* A member with nothing to do waits: another may send it links. */
    if (s == KR_FRONTIER_DONE && c->cluster) return;
    if (s == KR_FRONTIER_DONE && !c->seeds.fetched && c->seeds.failed) {
      c->seeds.none = 1; /* said last, after the summary (kr_crawl_run) */
    } else if (s == KR_FRONTIER_DONE) {
      KR_LOG(KR_LOG_NOTICE, NULL, "snapshot crawl complete: every in-scope URI visited");
    } else {
      kr_frontier_stats_t fs;
      kr_frontier_stats(c->frontier, &fs);
      KR_LOG(KR_LOG_NOTICE, NULL, "limit %s reached: stopping", fs.limit ? fs.limit : "?");
    }
    kr_crawl_stop(c);
    return;
  }
  if (c->in_flight == 0 && !uv_is_active((uv_handle_t *)&c->idle))
    uv_idle_start(&c->idle, on_idle);
}

static void on_signal(uv_signal_t *s, int signum) {
  kr_crawl_t *c = s->data;
  if (c->stopping && c->in_flight) {
    KR_LOG(KR_LOG_NOTICE, NULL, "signal %d again: abandoning running fetches", signum);
    cancel_inflight(c);
    return;
  }
  KR_LOG(KR_LOG_NOTICE, NULL, "signal %d: finishing running fetches, then stopping", signum);
  kr_crawl_stop(c);
}

static void on_max_time(kr_wheel_entry_t *e) {
  kr_crawl_t *c = container_of(e, kr_crawl_t, max_time_entry);
  check_end(c);
}

static void close_handle(uv_handle_t *h) {
  if (h->loop && !uv_is_closing(h)) uv_close(h, NULL);
}

/* Every fetch is done: commit, close the modules and the handles. */
static void close_everything(kr_crawl_t *c) {
  c->closing = 1;
  HOOK(c, close);
  if (c->frontier) {
    kr__crawl_summary(c);
    if (c->log) kr_crawllog_flush(c->log);
    kr_archive_close(c->warc); /* records on disk before the last commit */
    kr_timer_stop(&c->disk_retry);
    kr__crawl_websub_stop(c);
    kr__crawl_cluster_stop(c); /* its callbacks see no frontier after this */
    kr__adapt_hosts_turn(c, kr_crawl_now(c), 1); /* into the last commit */
    int rc = kr_frontier_close(c->frontier);
    c->frontier = NULL;
    if (rc < 0 && !c->fatal) {
      c->fatal = rc;
      KR_LOG(KR_LOG_ERROR, NULL, "the last commit failed: %s", kr_strerror(rc));
    }
  }
  if (c->http) kr_http_client_close(c->http);
  c->http = NULL;
  if (c->dns) kr_dns_free(c->dns);
  c->dns = NULL;
  kr_timers_close(&c->timers, NULL);
  close_handle((uv_handle_t *)&c->check);
  close_handle((uv_handle_t *)&c->prepare);
  close_handle((uv_handle_t *)&c->idle);
  close_handle((uv_handle_t *)&c->commit_timer);
  close_handle((uv_handle_t *)&c->grace_timer);
  close_handle((uv_handle_t *)&c->sigint);
  close_handle((uv_handle_t *)&c->sigterm);
}

/* ---- creation ---------------------------------------------------------------------------- */

static pcre2_code *compile(const char *pat) {
  int ec;
  PCRE2_SIZE off;
  pcre2_code *r = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                PCRE2_CASELESS | PCRE2_UTF, &ec, &off, NULL);
  KR_BUG_ON(!r);
  pcre2_jit_compile(r, PCRE2_JIT_COMPLETE);
  return r;
}

int kr_crawl_add_seed(kr_crawl_t *c, const kr_link_t *l, uint64_t now) {
  int rc = kr__crawl_cluster_divert(c, l); /* another member's: to its stream */
  if (rc) return rc == 1 ? KR_CRAWL_SEED_SENT : rc;
  return kr_frontier_add(c->frontier, l, now);
}

/* The scope of a start: the seeds file's seeds, or with crawl.seeds
 * empty those kept in the state database (scopestate.h). A start that
 * would put out of scope hosts with URIs is refused unless allowed; then
 * the seeds and rules in force are kept, the seeds are queued, and the
 * URIs the scope disregarded are decided again. */
static int add_seeds(kr_crawl_t *c, char *err, size_t errlen) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  kr_store_t *st = kr_frontier_store(c->frontier);
  const char *path = kr_config_str(g, KR_CFG_CRAWL_SEEDS);
  kr_seeds_t kept, seeds;
  kr_seeds_init(&kept);
  kr_seeds_init(&seeds);
  kr_scope_t *old = NULL;
  int rc = kr__scopestate_seeds_load(st, &kept);
  if (rc) {
    snprintf(err, errlen, "%s: cannot read the seeds kept there", kr_store_path(st));
    goto out;
  }
  if (path[0]) {
    kr_seeds_opts_t so;
    kr_seeds_opts_init(&so);
    so.canon = c->canon;
    rc = kr_seeds_load(&seeds, path, &so);
    if (rc == KR_EIO) { /* unreadable: its message is the error, reported once by the caller */
      snprintf(err, errlen, "%s", seeds.n_messages ? seeds.messages[seeds.n_messages - 1] : path);
      goto out;
    }
    for (size_t i = 0; i < seeds.n_messages; i++)
      KR_LOG(KR_LOG_WARN, NULL, "%s", seeds.messages[i]);
    /* As a reload would: a crawl's seeds are not replaced by an empty,
     * half-written or junk file. */
    if (kept.n && (!seeds.n || seeds.bad > seeds.n)) {
      snprintf(err, errlen,
               "%s: %s (%zu lines, %zu bad, %zu seeds): the %zu seeds kept in %s stay in force; "
               "fix the file, or set crawl.seeds empty to crawl on with them",
               path, seeds.n ? "more bad lines than seeds" : "no seed in it", seeds.lines,
               seeds.bad, seeds.n, kept.n, kr_store_path(st));
      rc = KR_ECONFIG;
      goto out;
    }
  } else if (kept.n) {
    KR_LOG(KR_LOG_NOTICE, kr_store_path(st),
           "crawl.seeds is empty: the %zu seeds kept in the state database are in force", kept.n);
  }
  const kr_seeds_t *in_force = path[0] ? &seeds : &kept;
  rc = kr_scope_add_seeds(c->scope, in_force);
  if (rc) KR_LOG(KR_LOG_WARN, path, "a seed could not be put in scope: %s", kr_strerror(rc));
  if ((rc = kr__scopestate_kept_new(c, g, &kept, &old, err, errlen))) goto out;
  char names[512];
  size_t nexiled = kr__scopestate_exiled(c, old, &kept, c->scope, names, sizeof names);
  if (nexiled) {
    if (!c->opts.allow_scope_change && !kr_config_bool(g, KR_CFG_SCOPE_ALLOW_CHANGE)) {
      snprintf(err, errlen,
               "scope: %zu host%s with URIs in %s would go out of scope: %s. Put %s seeds back "
               "in crawl.seeds (or leave it empty: the seeds kept are used), or start with "
               "--allow-scope-change (scope.allow-change = true) to let %s go",
               nexiled, nexiled > 1 ? "s" : "", kr_store_path(st), names,
               nexiled > 1 ? "their" : "its", nexiled > 1 ? "them" : "it");
      rc = KR_ECONFIG;
      goto out;
    }
    KR_LOG(KR_LOG_WARN, kr_store_path(st), "scope change allowed: %zu host%s with URIs go%s out "
           "of scope: %s", nexiled, nexiled > 1 ? "s" : "", nexiled > 1 ? "" : "es", names);
  }
  uint64_t now = kr_crawl_now(c);
  if ((rc = kr__scopestate_save(st, path[0] ? &seeds : NULL, g, now))) {
    snprintf(err, errlen, "%s: cannot keep the seeds", kr_store_path(st));
    goto out;
  }
  size_t added = 0;
  for (size_t i = 0; i < seeds.n; i++) {
    kr_link_t l = {.url = seeds.v[i].url, .url_len = seeds.v[i].len, .hop_path = "",
                   .directive = KR_DIRECTIVE_NORMAL};
    rc = kr_crawl_add_seed(c, &l, now);
    if (rc == KR_CRAWL_SEED_SENT) continue;
    if (rc == KR_EDB) {
      snprintf(err, errlen, "%s: cannot add the seeds", kr_store_path(st));
      goto out;
    }
    if (rc == 1) added++;
  }
  if (path[0]) KR_LOG(KR_LOG_INFO, path, "%zu seeds, %zu new", seeds.n, added);
  int64_t revived = kr__scopestate_revive(c, now);
  if (revived < 0) {
    rc = (int)revived;
    snprintf(err, errlen, "%s: cannot queue again the URIs back in scope", kr_store_path(st));
    goto out;
  }
  if (revived)
    KR_LOG(KR_LOG_NOTICE, kr_store_path(st),
           "%" PRId64 " URIs disregarded by an earlier scope are in scope again: queued", revived);
  rc = kr_frontier_commit(c->frontier);
out:
  kr_scope_free(old);
  /* the seeds in force stay with the crawl (a reload compares with them) */
  if (path[0]) {
    c->scope_seeds = seeds;
    kr_seeds_free(&kept);
  } else {
    c->scope_seeds = kept;
  }
  return rc;
}

/* What a start creates in the state directory and where the WARC files
 * go. A start that fails removes what did not exist before it, so a typo
 * on a first run leaves no state directory behind (mistaken later for a
 * crawl, or refused as one that is not); never anything that existed. */
typedef struct fresh {
  char *lock;      /* the lock file: checked before removing anything */
  char *paths[16]; /* absent before the start */
  size_t n;
} fresh_t;

static void fresh_note(fresh_t *f, char *path) {
  struct stat sb;
  if (f->n < ARRAY_SIZE(f->paths) && lstat(path, &sb) != 0 && errno == ENOENT)
    f->paths[f->n++] = path;
  else
    free(path);
}

static void fresh_init(fresh_t *f, const kr_config_view_t *g) {
  static const char *const files[] = {
      KR_STORE_DB_NAME, KR_STORE_DB_NAME "-wal", KR_STORE_DB_NAME "-shm",
      KR_STORE_DB_NAME "-journal", KR_STORE_LOCK_NAME, "kria.reserve", "logs",
      "logs/crawl.log", "status.addr"};
  const char *dir = kr_config_str(g, KR_CFG_CRAWL_STATE_DIR);
  memset(f, 0, sizeof *f);
  f->lock = kr_xasprintf("%s/%s", dir, KR_STORE_LOCK_NAME);
  struct stat sb;
  if (lstat(dir, &sb) != 0 && errno == ENOENT) {
    f->paths[f->n++] = kr_xstrdup(dir); /* all of it, then */
  } else {
    for (size_t i = 0; i < ARRAY_SIZE(files); i++)
      fresh_note(f, kr_xasprintf("%s/%s", dir, files[i]));
  }
  const char *wd = kr_config_str(g, KR_CFG_CRAWL_WARC_DIR);
  if (kr_config_bool(g, KR_CFG_WARC_ENABLED))
    fresh_note(f, wd[0] ? kr_xstrdup(wd) : kr_xasprintf("%s/warcs", dir));
}

static void fresh_free(fresh_t *f) {
  for (size_t i = 0; i < f->n; i++) free(f->paths[i]);
  free(f->lock);
  f->n = 0;
  f->lock = NULL;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  if (remove(path) != 0 && errno != ENOENT)
    KR_LOG(KR_LOG_WARN, path, "cannot remove: %s", strerror(errno));
  return 0;
}

/* After a failed start (the store closed, our lock released): remove
 * what it created. Not while another process holds the lock: a start
 * racing ours for a new directory would lose its state. */
static void fresh_undo(fresh_t *f) {
  int lfd = open(f->lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) != 0) {
    close(lfd);
    fresh_free(f);
    return;
  }
  for (size_t i = 0; i < f->n; i++)
    nftw(f->paths[i], remove_one, 16, FTW_DEPTH | FTW_PHYS); /* absent: nothing to do */
  if (lfd >= 0) close(lfd);
  fresh_free(f);
}

/* Undo a partial kr_crawl_new: close what opened, run the loop until the
 * handles are closed. */
static void teardown(kr_crawl_t *c) {
  if (!c->closing) {
    c->closing = c->stopping = 1;
    HOOK(c, close);
    /* Fetches still running are cancelled and given back first. */
    if (c->http) kr_http_client_close(c->http);
    c->http = NULL;
    if (c->dns) kr_dns_free(c->dns);
    c->dns = NULL;
    kr__crawl_cluster_stop(c);
    if (c->frontier) kr_frontier_close(c->frontier);
    c->frontier = NULL;
    kr__crawl_websub_stop(c); /* its renewals off the wheel before it closes */
    if (c->timers.clock) kr_timers_close(&c->timers, NULL);
    close_handle((uv_handle_t *)&c->check);
    close_handle((uv_handle_t *)&c->prepare);
    close_handle((uv_handle_t *)&c->idle);
    close_handle((uv_handle_t *)&c->commit_timer);
    close_handle((uv_handle_t *)&c->grace_timer);
    close_handle((uv_handle_t *)&c->sigint);
    close_handle((uv_handle_t *)&c->sigterm);
    kr_archive_detach(c->warc);
  }
  c->http = NULL;
  c->dns = NULL;
}

/* The archive's hooks: a failed WARC write holds dispatch until writing
 * works again. */
static int archive_pause(void *ud) {
  kr_crawl_t *c = ud;
  if (c->paused) return 0;
  kr_crawl_pause(c, 1);
  return 1;
}

static void archive_resume(void *ud) { kr_crawl_pause(ud, 0); }

static int archive_closing(void *ud) { return ((kr_crawl_t *)ud)->closing; }

/* The WARC writer, once the frontier is open (a no-op with warc.enabled =
 * false). On an error c->warc may be set all the same: it is detached and
 * freed with the crawl. */
static int archive_open(kr_crawl_t *c, char *err, size_t errlen) {
  kr_archive_host_t h = {.loop = &c->loop, .timers = &c->timers, .clock = &c->clock,
                         .store = kr_frontier_store(c->frontier), .ud = c,
                         .pause = archive_pause, .resume = archive_resume,
                         .closing = archive_closing};
  return kr_archive_open(c->cfg, &h, &c->warc, err, errlen);
}

int kr_crawl_new(kr_config_t *cfg, const kr_crawl_opts_t *opts, kr_crawl_t **out, char *err,
                 size_t errlen) {
  *out = NULL;
  if (errlen) err[0] = '\0';
  fresh_t fresh = {0};
  kr_crawl_t *c = kr_xcalloc(1, sizeof *c);
  c->cfg = cfg;
  if (opts) c->opts = *opts;
  if (!opts || !opts->shutdown_grace_ms) c->opts.shutdown_grace_ms = 4000;
  const kr_config_view_t *g = kr_config_global(cfg);
  int lvl = kr_log_level_parse(kr_config_str(g, KR_CFG_CRAWL_LOG_LEVEL));
  if (lvl > 0) kr_log_level = lvl;

  uv_loop_init(&c->loop);
  /* the turn profile leaves the poll phase's waiting out */
  uv_loop_configure(&c->loop, UV_METRICS_IDLE_TIME);
  kr_clock_init_real(&c->clock);
  c->started_ms = kr_crawl_now(c);
  int rc = kr_timers_init(&c->timers, &c->loop, &c->clock);
  KR_BUG_ON(rc);
  uv_check_init(&c->loop, &c->check);
  uv_prepare_init(&c->loop, &c->prepare);
  uv_idle_init(&c->loop, &c->idle);
  kr_turn_budget_init(&c->turn_budget, TURN_BUDGET_NS);
  kr_turn_budget_init(&c->read_budget, TURN_BUDGET_NS);
  kr_turn_budget_init(&c->dns_budget, DNS_BUDGET_NS);
  uv_timer_init(&c->loop, &c->commit_timer);
  uv_timer_init(&c->loop, &c->grace_timer);
  kr_wheel_entry_init(&c->max_time_entry, on_max_time);

  kr_frontier_opts_t fo;
  frontier_from_config(c, &fo);
  c->global_hc = hostcfg_build(c, g, &fo);
  c->robots_agent = kr_config_str(g, KR_CFG_ROBOTS_AGENT);
  c->robots_max_size = (size_t)kr_config_size(g, KR_CFG_ROBOTS_MAX_SIZE);
  c->links_budget = LINKS_BUDGET;
  kr_buf_init(&c->canon_buf, 4 * KR_URL_MAX);
  kr_buf_init(&c->hop_buf, 256);
  c->links_cache = kr_linkcache_new(LINKS_CACHE_SLOTS, LINKS_CACHE_BYTES);
  kr_extract_opts_default(&c->xopts);
  c->xopts.flags |= KR_EXTRACT_HTTP_ONLY;
  c->re_html = compile("^\\s*(text/html|application/xhtml\\+xml)\\b");
  c->re_css = compile("^\\s*text/css\\b");
  c->re_feed = compile("^\\s*(application/((rss|atom|rdf|x-rss)\\+)?xml|text/xml)\\b");
  c->matcher = kr_config_matcher_new();

  if ((rc = canon_from_config(c, err, errlen)) || (rc = kr_crawl_scope_new(c->cfg, &c->scope, err, errlen)))
    goto fail;

  const char *state_dir = kr_config_str(g, KR_CFG_CRAWL_STATE_DIR);
  fresh_init(&fresh, g);
  rc = kr_frontier_open(state_dir, &fo, &c->timers, &c->frontier, err, errlen);
  if (rc) goto fail;
  kr_frontier_set_on_ready(c->frontier, on_ready, c);
  c->disk = kr_diskguard_new(state_dir, NULL);
  kr_wheel_entry_init(&c->disk_retry, on_disk_retry);
  kr_store_set_presync(kr_frontier_store(c->frontier), presync, c);

  kr_crawllog_opts_t lo;
  kr_crawllog_opts_init(&lo);
  lo.flush_ms = fo.commit_ms ? fo.commit_ms : 50;
  rc = kr_crawllog_open(state_dir, &lo, &c->log);
  if (rc) {
    snprintf(err, errlen, "%s/logs/crawl.log: cannot open: %s", state_dir, strerror(errno));
    goto fail;
  }

  kr_buf_t servers;
  kr_buf_init(&servers, 1 << 16);
  kr_dns_opts_t dopts;
  dns_from_config(c, &dopts, &servers);
  dopts.deliver_budget = &c->dns_budget;
  dopts.err = err;
  dopts.errlen = errlen;
  rc = kr_dns_new(&c->loop, &c->clock, &dopts, &c->dns);
  kr_buf_free(&servers);
  if (rc) {
    if (!err[0]) snprintf(err, errlen, "dns: cannot set up the resolver (servers, hosts-file)");
    goto fail;
  }
  kr_http_opts_t ho;
  http_from_config(c, &ho);
  ho.read_budget = &c->read_budget;
  rc = kr_http_client_new(&c->loop, &c->clock, c->dns, &ho, &c->http);
  free((char *)ho.allow_addresses);
  free((char *)ho.deny_addresses);
  if (rc) {
    snprintf(err, errlen, "http: cannot set up the client");
    goto fail;
  }

  /* A digest-strip pattern of the global view that PCRE2 refuses
   * byte-wise stops the crawl here ([host] views are built lazily: theirs
   * are logged and skipped). */
  {
    kr_hostcfg_t probe;
    memset(&probe, 0, sizeof probe);
    rc = adapt_from_view(&probe, g, err, errlen);
    kr_strip_free(probe.strip);
    if (rc) goto fail;
  }
  if ((rc = archive_open(c, err, errlen))) goto fail;
  kr_chain_init(&c->chain, on_finalize, c);
  if ((rc = kr__crawl_chain_build(c))) {
    snprintf(err, errlen, "chain: cannot build the processor chain: %s", kr_err_name(rc));
    goto fail;
  }

  if ((rc = kr__crawl_cluster_open(c, err, errlen))) goto fail;
  if ((rc = add_seeds(c, err, errlen))) goto fail;
  kr_frontier_stats_t fs;
  kr_frontier_stats(c->frontier, &fs);
  /* a member may own none of the seeds: it waits for links */
  if (fs.c.discovered == 0 && !(c->cluster && c->scope_seeds.n)) {
    snprintf(err, errlen, "nothing to crawl: no seeds (crawl.seeds) and no URIs in %s",
             kr_store_path(kr_frontier_store(c->frontier)));
    rc = KR_ECONFIG;
    goto fail;
  }

  if ((rc = kr__crawl_websub_open(c))) {
    snprintf(err, errlen, "websub: cannot read the subscriptions: %s", kr_strerror(rc));
    goto fail;
  }

  if (!c->opts.no_signals) {
    uv_signal_init(&c->loop, &c->sigint);
    uv_signal_init(&c->loop, &c->sigterm);
    c->sigint.data = c->sigterm.data = c;
    uv_signal_start(&c->sigint, on_signal, SIGINT);
    uv_signal_start(&c->sigterm, on_signal, SIGTERM);
  }
  if (c->opts.hooks && c->opts.hooks->open &&
      (rc = c->opts.hooks->open(c, &c->hooks_state, err, errlen)))
    goto fail;
  fresh_free(&fresh);
  *out = c;
  return 0;

fail:
  if (!err[0] && errlen) snprintf(err, errlen, "%s", kr_strerror(rc));
  teardown(c);
  kr_crawl_free(c);
  fresh_undo(&fresh);
  return rc;
}

/* A snapshot crawl that fetched none of its seeds did nothing: a
 * mistyped host, seeds on a private network the address policy refuses,
 * a server that is down. One line says how each seed failed. */
static void no_seed_fetched(kr_crawl_t *c) {
  const uint64_t n[] = {c->seeds.policy, c->seeds.dns, c->seeds.refused, c->seeds.robots,
                        c->seeds.robots_down};
  const char *const what[][2] = {{"refused by the address policy", "refused by the address policy"},
                                 {"DNS failure", "DNS failures"},
                                 {"connection refused", "connections refused"},
                                 {"disallowed by robots.txt", "disallowed by robots.txt"},
                                 {"robots.txt unavailable", "robots.txt unavailable"}};
  char why[256];
  size_t len = 0;
  uint64_t other = c->seeds.failed;
  for (size_t i = 0; i < ARRAY_SIZE(n); i++) {
    if (!n[i]) continue;
    other -= n[i];
    len += (size_t)snprintf(why + len, sizeof why - len, "%s%" PRIu64 " %s", len ? ", " : ": ",
                            n[i], what[i][n[i] > 1]);
  }
  if (other)
    snprintf(why + len, sizeof why - len, "%s%" PRIu64 " other failure%s", len ? ", " : ": ",
             other, other > 1 ? "s" : "");
  KR_LOG(KR_LOG_ERROR, NULL, "no seed could be fetched (%" PRIu64 " seed%s%s)", c->seeds.failed,
         c->seeds.failed > 1 ? "s" : "", why);
}

int kr_crawl_run(kr_crawl_t *c) {
  c->run_started_us = kr_clock_mono_us(&c->clock);
  uv_check_start(&c->check, on_check);
  kr_tp_init(&kr_turnprof, 1, uv_hrtime(), kr_tp_thread_cpu());
  uv_prepare_start(&c->prepare, on_prepare);
  uint64_t max_time = (uint64_t)kr_config_ms(kr_config_global(c->cfg), KR_CFG_LIMITS_MAX_TIME);
  if (max_time) kr_timer_start(&c->timers, &c->max_time_entry, kr_crawl_now(c) + max_time, on_max_time);
  dispatch(c);
  HOOK(c, ready);
  uv_run(&c->loop, UV_RUN_DEFAULT);
  if (!c->fatal && c->seeds.none) {
    no_seed_fetched(c);
    return KR_ENET;
  }
  return c->fatal;
}

void kr_crawl_free(kr_crawl_t *c) {
  if (!c) return;
  /* Never ran to the end (or never ran): close in order now. */
  if (!c->closing) teardown(c);
  /* Only close callbacks and cancellations are left: bounded. */
  uv_run(&c->loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&c->loop)) KR_LOG(KR_LOG_WARN, NULL, "crawl: loop still has handles");
  HOOK(c, free);
  c->hooks_state = NULL;
  kr_archive_free(c->warc);
  c->warc = NULL;
  kr_diskguard_free(c->disk);
  c->disk = NULL;
  if (c->log) kr_crawllog_close(c->log);
  while (c->free_fetches) {
    kr_fetch_t *f = c->free_fetches;
    c->free_fetches = f->next;
    kr__fetch_destroy(f);
  }
  kr__crawl_websub_free(c); /* after the loop ran the cancelled requests' ends */
  kr__crawl_cluster_free(c);
  kr__crawl_cluster_view_free(c); /* its replies came (NULL) when the connections went */
  if (c->nprocs) kr_chain_free(&c->chain);
  kr__crawl_chain_close(c); /* what the processor modules keep for the crawl */
  kr_scope_free(c->scope);
  kr_seeds_free(&c->scope_seeds);
  kr__scopestate_revive_free(c);
  kr_url_canon_opts_free(c->canon);
  for (size_t i = 0; i < c->hcs_cap; i++) hostcfg_free(c->hcs[i]);
  free(c->hcs);
  hostcfg_free((kr_hostcfg_t *)c->global_hc);
  ipmap_free(c);
  kr_buf_free(&c->canon_buf);
  kr_buf_free(&c->hop_buf);
  kr_linkcache_free(c->links_cache);
  if (c->re_html) pcre2_code_free(c->re_html);
  if (c->re_css) pcre2_code_free(c->re_css);
  if (c->re_feed) pcre2_code_free(c->re_feed);
  kr_config_matcher_free(c->matcher);
  free(c);
}
