/*
 * The crawl: one object tying the loop, the clock, timers, DNS, the HTTP
 * client, the frontier (and its store), scope, the crawl log and the
 * processor chain together, built from a finished kr_config_t.
 *
 *   kr_crawl_new()   open everything (refusals of the state directory
 *                    come back here with a message), add the seeds
 *   kr_crawl_run()   run the loop until the crawl ends: a snapshot crawl
 *                    (crawl.revisit = false) once every in-scope URI was
 *                    visited, any crawl when a limit is reached or on
 *                    SIGINT/SIGTERM (issue nothing more, let in-flight
 *                    fetches finish for up to 4 s, cancel the rest, commit:
 *                    gone within 5 s)
 *   kr_crawl_free()
 *
 * Dispatch is driven by the frontier: its on_ready callback (a host became
 * ready) and every finished fetch (capacity came back) pull URIs with
 * kr_frontier_next() while it has some to give; nothing polls. Each issued
 * URI becomes a kr_fetch_t walking the chain. Store commits are grouped:
 * a uv_check runs kr_frontier_turn() once per loop turn (and a timer makes
 * sure a pending transaction is committed within commit-interval even
 * when the loop would sleep); the crawl log is flushed right before, so a
 * committed URI always has its crawl.log line.
 *
 * The second half of this header is for the processors (src/proc_*.c):
 * the fetch object, per-host settings and the crawl's innards.
 */
#ifndef KRIA_CRAWL_H
#define KRIA_CRAWL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "chain.h"
#include "clock.h"
#include "counters.h"
#include "crawllog.h"
#include "dns.h"
#include "fetch.h"
#include "frontier.h"
#include "http.h"
#include "linkcache.h"
#include "kria/arena.h"
#include "kria/config.h"
#include "kria/digest.h"
#include "kria/estimate.h"
#include "kria/extract.h"
#include "kria/feed.h"
#include "kria/signal.h"
#include "kria/strip.h"
#include "kria/validators.h"
#include "kria/wait.h"
#include "kria/robots.h"
#include "kria/scope.h"
#include "kria/seeds.h"
#include "kria/url.h"
#include "timer.h"

typedef struct kr_crawl kr_crawl_t;
typedef struct kr_fetch kr_fetch_t;

typedef struct kr_curi kr_curi_t;

/* Observers of the crawl's life, called at fixed points; each may be
 * NULL. The service (src/service/service.h: status server, sd_notify,
 * progress, reload) is one, installed by the front end that builds the
 * crawl: the crawl knows nothing of it. */
typedef struct kr_crawl_hooks {
  /* The end of kr_crawl_new, everything else open: *state is the
   * observer's own, passed to the others (which are called only once it
   * is set). A negative KR_E* with a reason in err fails the start (e.g.
   * the status port is taken): the crawl then calls close and free, and
   * removes what the start created. */
  int (*open)(kr_crawl_t *c, void **state, char *err, size_t errlen);
  void (*ready)(void *state);    /* kr_crawl_run, before the loop runs */
  void (*issued)(void *state, const kr_curi_t *curi); /* a URI was issued */
  void (*stopping)(void *state); /* the crawl begins to stop */
  void (*close)(void *state);    /* the crawl closes its handles */
  void (*free)(void *state);     /* kr_crawl_free, once the loop ran dry */
} kr_crawl_hooks_t;

/* Test hooks and overrides; zero = defaults. */
typedef struct kr_crawl_opts {
  uint32_t shutdown_grace_ms;   /* in-flight fetches may finish (4000: with
                                   the cancel and the commit, the process
                                   is gone within 5 s of the signal) */
  int no_signals;               /* 1: do not install SIGINT/SIGTERM handlers */
  int revisit_now;              /* 1: every known URI is due at start
                                   (kria crawl --revisit-now) */
  /* SIGHUP reload (src/service/service.c): the file and -o assignments the
   * config was loaded from; NULL: reload is refused. Copied. */
  const char *config_path;
  const char *const *overrides;
  size_t n_overrides;
  int allow_scope_change;       /* 1: this start may put hosts with URIs
                                   out of scope (kria crawl
                                   --allow-scope-change; scope.allow-change
                                   is the key for every start and reload) */
  const kr_crawl_hooks_t *hooks; /* NULL: no observer */
} kr_crawl_opts_t;

/* The crawl's counters: one field per row of KR_CRAWL_COUNTERS
 * (counters.h, where each is defined), also reachable by index in v[]. */
typedef struct kr_crawl_stats {
  union {
    struct {
#define KR_CTR_FIELD_(name, metric, unit, help, line, summary) uint64_t name;
      KR_CRAWL_COUNTERS(KR_CTR_FIELD_)
#undef KR_CTR_FIELD_
    };
    uint64_t v[KR_CTR__N];
  };
} kr_crawl_stats_t;

/* Build a crawl from cfg (finished; must outlive the crawl). 0 and *out,
 * or a negative KR_E* with a one-line reason in err (KR_ECONFIG: a value
 * the modules refused; KR_EDB: the state directory; KR_EIO: seeds or
 * crawl.log). A failure removes what this call created (the state
 * directory, or the files it added to an existing one, and a new WARC
 * directory), never what existed before, nor anything while another
 * process holds the state directory's lock. */
int kr_crawl_new(kr_config_t *cfg, const kr_crawl_opts_t *opts, kr_crawl_t **out,
                 char *err, size_t errlen);
/* Run until the crawl ends (see above). 0, KR_EDB when the state
 * database failed (the crawl stopped), or KR_ENET when a snapshot crawl
 * ended without fetching any of the seeds it tried (the reason is
 * logged). */
int kr_crawl_run(kr_crawl_t *c);
/* Ask the crawl to stop, as SIGTERM does. Safe from any loop callback. */
void kr_crawl_stop(kr_crawl_t *c);
/* Hold dispatch (paused = 1: fetches running finish, nothing new is
 * issued) or let it go on (0). Safe from any loop callback. */
void kr_crawl_pause(kr_crawl_t *c, int paused);
void kr_crawl_free(kr_crawl_t *c);
void kr_crawl_get_stats(const kr_crawl_t *c, kr_crawl_stats_t *out);
/* What the crawl is doing now, for reports (src/service). */
typedef struct kr_crawl_state {
  uint64_t in_flight;           /* fetches running */
  uint64_t fetch_objs;          /* fetch objects allocated, pooled or running */
  int paused;                   /* dispatch held (kr_crawl_pause) */
  int stopping;                 /* issuing nothing more (stopping or closing) */
  int disk_held;                /* dispatch held: the state disk is low */
  int fatal;                    /* the store failed: the crawl is stopping */
  int disk_watched;             /* disk_* below are known (a disk guard runs) */
  uint64_t disk_free, disk_reserve, disk_lows; /* diskguard.h */
} kr_crawl_state_t;
void kr_crawl_get_state(const kr_crawl_t *c, kr_crawl_state_t *out);
/* The configuration in force (a SIGHUP reload replaces it). */
const kr_config_t *kr_crawl_config(const kr_crawl_t *c);
/* The canonicalization URLs get (seeds, links, `/uri?url=`). */
kr_url_canon_opts_t *kr_crawl_canon(const kr_crawl_t *c);
/* The HTTP client's statistics; 0 when it is closed (out zeroed). */
int kr_crawl_http_stats(const kr_crawl_t *c, kr_http_stats_t *out);
/* The link cache's statistics (zero when there is none). */
void kr_crawl_linkcache_stats(const kr_crawl_t *c, kr_linkcache_stats_t *out);
kr_frontier_t *kr_crawl_frontier(kr_crawl_t *c);
/* WebSub (websub.c), for the status server's /websub/TOKEN route.
 * verify: the hub's verification of intent (hub.mode, hub.topic,
 * hub.lease_seconds, 0 when absent): 200 (the caller echoes
 * hub.challenge) or 404. notify: a push with its X-Hub-Signature (n = 0:
 * none) and body: 202 (also for a bad signature: ignored, counted), 404
 * for an unknown token. active: subscriptions with a lease running. */
int kr_crawl_websub_verify(kr_crawl_t *c, kr_slice_t token, kr_slice_t mode, kr_slice_t topic,
                           int64_t lease_s);
int kr_crawl_websub_notify(kr_crawl_t *c, kr_slice_t token, kr_slice_t sig, kr_slice_t body);
size_t kr_crawl_websub_active(const kr_crawl_t *c);
/* The WARC writer (archive.h), NULL when WARC writing is off. */
struct kr_archive *kr_crawl_archive(kr_crawl_t *c);
/* The crawl's loop: front ends (kria demo) put their own handles on it
 * before kr_crawl_run(); they must close them once kr_crawl_is_closing(). */
uv_loop_t *kr_crawl_loop(kr_crawl_t *c);
/* 1 once the crawl has begun closing its handles (the run is ending). */
int kr_crawl_is_closing(const kr_crawl_t *c);
/* The scope of cfg's [scope] section, without seeds (kr_crawl_new, and a
 * SIGHUP reload building the next one). 0 and *out, or KR_ECONFIG with a
 * reason in err. */
int kr_crawl_scope_new(const kr_config_t *cfg, kr_scope_t **out, char *err, size_t errlen);

/* ===================================================================== */
/* For processors.                                                        */

/* Settings of one config view (global, or a [host] section's), resolved
 * once and cached by view. */
typedef struct kr_hostcfg {
  const kr_config_view_t *view;
  kr_frontier_opts_t fopts;     /* politeness, outcomes (frontier's fields) */
  kr_scope_limits_t limits;     /* scope re-check and link checks */
  const pcre2_code **inc, **exc;/* storage behind limits */
  const pcre2_code **exempt;    /* robots.exempt */
  size_t n_exempt;
  int obey_robots;
  uint64_t robots_expiry_ms;
  int conditional;              /* http.conditional-requests */
  kr_http_opts_t http;          /* this view's [http] (req.opts of its fetches) */
  /* adaptive revisiting ([adaptive]) */
  int midfetch;
  kr_vscheme_t vscheme;
  kr_etag_mode_t etag_mode;
  kr_vtrust_params_t vtrust;
  kr_strip_t *strip;            /* NULL: no digest-strip patterns */
  size_t strip_max;             /* bodies kept for stripping up to this */
  const pcre2_code *strip_url;  /* NULL: every URL */
  int refresh_embeds, feeds, robots_sitemaps;
  uint32_t feed_pull_max;
  int hint_changefreq, hint_lm;
  kr_est_params_t est;          /* poisson estimator (hints applied) */
  kr_sig_params_t sig;          /* change signals' trust (adaptive.signal-*) */
  double utilisation;           /* of the host's politeness budget */
  int capacity_plan;            /* multiplicative within the budget */
  int informed_priors;          /* priors pooled per host (kria/prior.h) */
  int objective;                /* poisson: kr_plan_objective_t (adaptive.objective) */
} kr_hostcfg_t;

/* Per-origin robots.txt rules kept in memory. */
typedef struct kr_rulecache kr_rulecache_t;

struct kr_crawl {
  kr_config_t *cfg;
  kr_crawl_opts_t opts;
  uv_loop_t loop;
  kr_clock_t clock;
  kr_timers_t timers;
  kr_dns_t *dns;
  kr_http_client_t *http;
  kr_frontier_t *frontier;
  kr_crawllog_t *log;
  kr_scope_t *scope;
  kr_url_canon_opts_t *canon;
  kr_chain_t chain;
  kr_extract_opts_t xopts;
  const kr_hostcfg_t *global_hc;
  /* per-view settings cache: open addressing on the view pointer */
  kr_hostcfg_t **hcs;
  size_t hcs_cap, hcs_n;
  /* robots */
  kr_rulecache_t *robots;
  const char *robots_agent;
  size_t robots_max_size;
  kr_buf_t canon_buf, hop_buf;  /* scratch for links */
  struct kr_linkcache *links_cache; /* links resolved + canonicalised (src/crawl/linkcache.h) */
  size_t links_bytes;           /* held by all fetches (sum of theirs) */
  size_t links_budget;          /* cap on links_bytes */
  /* content-type filters of the extractors */
  pcre2_code *re_html, *re_css;
  /* the processors, in chain order (procs.c) */
  kr_processor_t procs[32];
  /* adaptive revisiting */
  kr_config_matcher_t *matcher; /* wait evaluators, strip URL filters */
  pcre2_code *re_feed;          /* content types read as feeds/sitemaps */
  struct kr_adapt_host **ahosts;/* per host queue: poisson allocator */
  size_t ahosts_cap, ahosts_n;
  struct kr_adapt_host *ahosts_save_head, *ahosts_save_tail; /* learned state to write */
  struct kr_sig_claims *claims; /* the latest dated claim per listed URI (claims.c) */
  size_t nprocs;
  /* fetch objects */
  kr_fetch_t *free_fetches;
  kr_fetch_t *inflight;         /* doubly linked */
  size_t nfetch_objs;           /* allocated so far (worker numbers) */
  uint64_t in_flight;
  /* via URLs for crawl.log: fp -> URL, direct-mapped */
  struct kr_via_slot *via;
  size_t via_cap;
  /* loop plumbing */
  uv_check_t check;
  uv_prepare_t prepare;         /* turn profile: the poll phase begins */
  uint64_t poll_idle_ns;        /* the loop's idle time when it did */
  uv_idle_t idle;               /* dispatch continues next turn (budget) */
  kr_turn_budget_t turn_budget; /* dispatches and finished fetches per turn */
  kr_turn_budget_t read_budget; /* socket reads (parsing, digests, extraction) per turn */
  kr_turn_budget_t dns_budget;  /* DNS answers delivered (connects) per turn */
  kr_fetch_t *resume_head;      /* finished fetches left for the next turn */
  kr_fetch_t *resume_tail;
  uv_timer_t commit_timer;      /* a pending transaction is committed */
  uv_timer_t grace_timer;       /* shutdown: cancel what is left */
  uv_signal_t sigint, sigterm;
  kr_wheel_entry_t max_time_entry;
  int dispatching, dispatch_again;
  int stopping;                 /* issue nothing more */
  int closing;                  /* handles being closed */
  int fatal;                    /* KR_EDB: the store failed */
  /* Seeds done with in this run (an answer, or a failure not retried)
   * and why they failed: a snapshot crawl that fetched none of them
   * ends with an error. */
  struct {
    uint64_t fetched, failed, policy, dns, refused, robots, robots_down;
    int none; /* the snapshot ended without a seed fetched */
  } seeds;
  uint64_t started_ms;
  uint64_t run_started_us;
  kr_crawl_stats_t st;
  void *hooks_state;            /* the observer's (kr_crawl_hooks_t.open) */
  int paused;                   /* dispatch held (kr_crawl_pause) */
  uint32_t reloads;             /* configurations applied by SIGHUP */
  struct kr_archive *warc;      /* the WARC writer (archive.h), NULL when off */
  /* queue-assignment = ip: host -> address it answered from (crawl.c) */
  int ip_queues;
  struct kr_ipmap_slot *ipmap;
  size_t ipmap_cap, ipmap_n;
  struct kr_diskguard *disk;    /* free space of the state directory */
  int disk_held;                /* dispatch held: the state disk is low */
  kr_wheel_entry_t disk_retry;
  kr_seeds_t scope_seeds;       /* the seeds in force, as kept in the state
                                   database (scopestate.h) */
  struct kr_scopestate_walk *scope_walk; /* a revival after a reload, in steps */
  struct kr_websub *websub;     /* WebSub subscriptions (websub.c), NULL when off */
  struct kr_crawl_cluster *cluster;   /* [cluster] (cluster.c), NULL when crawling alone */
  struct kr_crawl_xdedup *xdedup;     /* cluster.shared-dedup (clusterdedup.c), NULL when off */
  int cluster_held;             /* dispatch held: the cluster's outbox is full */
  struct kr_clusterview_reader *cluster_view; /* the members' heartbeats (clusterview.c) */
};

/* Settings for host (ASCII, any case). Never NULL. */
const kr_hostcfg_t *kr_crawl_hostcfg(kr_crawl_t *c, const char *host, size_t len);
uint64_t kr_crawl_now(const kr_crawl_t *c);
/* Settings of host queue h (its key without the port). Never NULL. */
const kr_hostcfg_t *kr__crawl_queue_hostcfg(kr_crawl_t *c, const kr_hostq_t *h);

/* websub.c: with websub.callback set, load the stored subscriptions and
 * schedule their renewals (after the frontier opened). 0 or KR_EDB. */
int kr__crawl_websub_open(kr_crawl_t *c);
/* No more requests (the crawl closes); free everything (kr_crawl_free). */
void kr__crawl_websub_stop(kr_crawl_t *c);
void kr__crawl_websub_free(kr_crawl_t *c);
/* A feed (URL feed) named hub and self (as written; n = 0: none):
 * subscribe to its topic unless it is. */
void kr__crawl_websub_discovered(kr_crawl_t *c, const kr_url_t *feed, kr_slice_t hub, kr_slice_t self);

/* Add a seed (at the start, at a reload): with [cluster], a seed whose
 * host another member owns goes to that member's stream (through the
 * outbox) and is not crawled here: KR_CRAWL_SEED_SENT; else as
 * kr_frontier_add. */
#define KR_CRAWL_SEED_SENT 3
int kr_crawl_add_seed(kr_crawl_t *c, const kr_link_t *l, uint64_t now);

/* cluster.c: hold dispatch (the outbox is at its bound) or let it go on. */
void kr__crawl_cluster_hold(kr_crawl_t *c, int held);
/* Stop the crawl on a fatal error of the store (err: KR_EDB). */
void kr__crawl_fail(kr_crawl_t *c, int err);

/* The chain (procs.c): every processor of the crawl, in one table of
 * phases and order; kr_crawl_new puts it together. 0 or KR_E*. */
int kr__crawl_chain_build(kr_crawl_t *c);
/* ... and what its modules keep for the whole crawl released (kr_crawl_free). */
void kr__crawl_chain_close(kr_crawl_t *c);

/* What the processor modules keep for the whole crawl (created and freed
 * by crawl.c, read by the status pages). */
/* proc_wait.c: free the claims and the per-host allocators (the revisit
 * processor's close). */
void kr__revisit_free(kr_crawl_t *c);
/* adapthost.c, learned state (kria/hoststate.h). Once per loop turn: hand
 * the records of hosts that changed adaptive.learned-state-interval ago
 * or more to the frontier (a few per turn), or every changed one (all:
 * a clean stop, before the last commit). */
void kr__adapt_hosts_turn(kr_crawl_t *c, uint64_t now, int all);
/* h's learned state changed outside the revisit processor (its trust run). */
void kr__adapt_host_touch(kr_crawl_t *c, kr_hostq_t *h, double x_min);
/* on_host at open: take over h's stored record (an unreadable one is
 * logged and counted; the host starts fresh). */
void kr__adapt_host_load(kr_crawl_t *c, kr_frontier_t *f, kr_hostq_t *h, const kr_hostcfg_t *hc);
/* A host's revisit plan against its politeness capacity, for reports
 * (as loaded from its learned state at a start, then as it moves). */
typedef struct kr_host_capacity {
  double budget;        /* fetches/s its politeness serves (x budget-utilisation) */
  /* multiplicative with adaptive.capacity-plan: uris > 0 */
  uint32_t uris;        /* URIs in the plan */
  double wanted;        /* fetches/s the thesis' waits ask for */
  double planned;       /* fetches/s with the floor applied */
  int64_t floor_ms;     /* 0: the waits fit as they are */
  /* poisson: alloc_state >= 0 (KR_PLAN_SLACK/BINDS/OVER), x */
  int alloc_state;
  double x;
  double gain;          /* realised-rate feedback (estimate.h) */
  int objective;        /* kr_plan_objective_t it solves for */
  double mu;            /* freshness, harmonic: its multiplier */
} kr_host_capacity_t;
/* 1 and *out when h has a plan, 0 when not. */
int kr__adapt_host_capacity(const kr_crawl_t *c, const kr_hostq_t *h, kr_host_capacity_t *out);
/* 1 and *out, the reliability of h's change signals (adapthost.c), when
 * any was seen or verified; 0 when not. */
int kr__adapt_host_signals(const kr_crawl_t *c, const kr_hostq_t *h, kr_sig_host_t *out);
/* claims.c: a change claim from outside a fetch (a WebSub push): the
 * URI of canonical url (n bytes) changed at at_ms (epoch ms, news for it),
 * says source src. Kept as the URI's latest claim when newer, verified
 * at its next visit like a feed's, and counted as seen on its host.
 * 1 when it may pull the URI forward (its host's signals of src verify,
 * or are still on probation, or the host has none yet), 0 when not
 * (counted as ignored). */
int kr__crawl_sig_claim(kr_crawl_t *c, const char *url, size_t n, int64_t at_ms,
                        kr_sig_source_t src);
/* Settings of view v built afresh (config reload, src/service/service.c), and
 * their release. */
kr_hostcfg_t *kr__crawl_hostcfg_new(kr_crawl_t *c, const kr_config_view_t *v);
void kr__crawl_hostcfg_free(kr_hostcfg_t *hc);

/* robots cache (proc_prefetch.c) */
void kr__rulecache_open(kr_crawl_t *c);
void kr__rulecache_close(kr_crawl_t *c);
/* Origin key "scheme://host[:port]" of url into out (NUL-terminated). */
int kr__origin_key(const kr_url_t *url, char *out, size_t outlen);

/* post (proc_post.c): remember url as fp's URL for later via columns. */
void kr__via_remember(kr_crawl_t *c, uint64_t fp, const char *url, size_t len);
void kr__via_free(kr_crawl_t *c);
/* post: the URL of fp (a URI's via), "" for 0 or an unknown fp; valid
 * until the next kr__via_* call. */
kr_slice_t kr__via_url(kr_crawl_t *c, uint64_t fp);

#endif
