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
#include "crawllog.h"
#include "dns.h"
#include "frontier.h"
#include "http.h"
#include "linkcache.h"
#include "kria/arena.h"
#include "kria/config.h"
#include "kria/digest.h"
#include "kria/estimate.h"
#include "kria/extract.h"
#include "kria/feed.h"
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
} kr_crawl_opts_t;

typedef struct kr_crawl_stats {
  uint64_t issued;              /* URIs taken from the frontier */
  uint64_t fetched;             /* HTTP responses (any status) */
  uint64_t fetch_errors;        /* fetches without a response */
  uint64_t disregarded;         /* robots */
  uint64_t out_of_scope;        /* scope re-check rejected */
  uint64_t address_refused;     /* fetches and URIs refused by the address policy (-5005) */
  uint64_t prerequisites;       /* URIs sent back for robots.txt */
  uint64_t robots_fetched;      /* robots.txt fetches completed */
  uint64_t robots_reused;       /* rules read back from the state database */
  uint64_t links_found;         /* raw links from the extractors */
  uint64_t links_scheduled;     /* handed to the frontier */
  uint64_t links_rejected;      /* bad URL or out of scope */
  uint64_t bytes;               /* raw response bytes */
  uint64_t deferred;            /* given back untouched (shutdown) */
  /* adaptive revisiting */
  uint64_t changed;             /* content state of visits (first ones count changed) */
  uint64_t unchanged;
  uint64_t unknown;
  uint64_t not_modified;        /* unchanged by a 304 */
  uint64_t midfetch_aborts;     /* unchanged by validators at the headers */
  uint64_t unchanged_full;      /* unchanged by the digest: body downloaded */
  uint64_t unchanged_body_bytes;/* body bytes received on unchanged visits */
  uint64_t aborted_bytes_saved; /* Content-Length not received after aborts */
  uint64_t stripped;            /* change digests with volatile sections stripped */
  uint64_t duplicates;          /* payloads already stored under another URL */
  uint64_t embeds_refreshed;    /* embeds pulled forward with a changed page */
  uint64_t feeds;               /* feeds and sitemaps read */
  uint64_t feed_items;          /* items with a URL in them */
  uint64_t feed_pulled;         /* items scheduled now (new or updated) */
  uint64_t feed_errors;         /* unreadable feeds (XML errors, DTDs, limits) */
  uint64_t sitemaps_from_robots;
  uint64_t vtrust_misses;       /* validators said unchanged, digest disagreed */
  uint64_t waits[2];            /* waits decided: multiplicative, poisson */
  uint64_t waits_capped;        /* multiplicative waits raised by the capacity plan */
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
kr_frontier_t *kr_crawl_frontier(kr_crawl_t *c);
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
  double utilisation;           /* of the host's politeness budget */
  int capacity_plan;            /* multiplicative within the budget */
} kr_hostcfg_t;

/* What a fetch ended as, decided by the processors, carried out by post. */
typedef enum kr_fetch_disp {
  KR_DISP_FINISH = 0,   /* outcome + crawl.log line (the default) */
  KR_DISP_RETURNED,     /* curi already handed back (prerequisite) */
  KR_DISP_DEFER,        /* give it back untouched (shutdown) */
} kr_fetch_disp_t;

#define KR_FETCH_MAX_ANNOT 16
/* strip_buf's own cap (adaptive.digest-strip-max-size, at most 1 GiB,
 * is the real limit) */
#define KR_STRIP_BUF_CAP ((size_t)1 << 30)

/* A feed or sitemap item among a fetch's links. */
typedef struct kr_feed_meta {
  size_t link;                  /* index in f->links */
  int64_t updated;              /* the item's latest date, epoch s; 0 unknown */
  double rate;                  /* sitemap changefreq, changes/s; 0 none */
} kr_feed_meta_t;

/* Per-fetch state of the adaptive processors (zeroed per fetch). */
typedef struct kr_fetch_adapt {
  /* validators (proc_midfetch.c) */
  int vt_mode;                  /* kr_vtrust_mode_t decided before the request */
  int conditional_sent;         /* If-None-Match / If-Modified-Since went out */
  int val_checked;              /* stored and current validators compared */
  int val_change;               /* ... and they predicted a change */
  int midfetch_abort;           /* headers said unchanged: body not fetched */
  /* digests (proc_digest.c) */
  int pdigesting;               /* psha holds this response's payload */
  int has_payload_digest;
  uint8_t payload_digest[KR_SHA1_LEN];
  int strip_on;                 /* strip rules apply: body kept in strip_buf */
  int strip_over;               /* body outgrew the strip size limit */
  int change_is_payload;        /* no content coding, no strip: one SHA-1 */
  int pdefer;                   /* payload not streamed: the WARC capture
                                   holds it, hashed at the end with the
                                   block (kr__digest_payload_end) */
  int has_block_digest;         /* the response block [raw head, capture]'s */
  uint8_t block_digest[KR_SHA1_LEN];
  uint64_t block_body;          /* ... over this many capture bytes */
  uint64_t pbytes;              /* payload bytes seen (kr__digest_payload) */
  /* change (proc_change.c) */
  int content;                  /* kr_content_t; KR_CONTENT_UNKNOWN until decided */
  int content_set;              /* decided before the body: 304 or abort */
  uint32_t visits, versions;    /* after this visit */
  const char *dup_url;          /* identical payload stored under this URL (arena) */
  uint64_t dup_date;            /* ... at this time (epoch ms) */
  /* feeds (proc_feed.c) */
  int feed_active;
  int feed_kind;                /* kr_feed_kind_t of the document read */
  int feed_err;                 /* its parse error, 0 none */
  /* wait (proc_wait.c) */
  uint8_t hist[KR_VHIST_BYTES]; /* visit history with this visit */
  size_t hist_len;
} kr_fetch_adapt_t;

#define KR_LINK_DEFER_MAX 256 /* longer links are not deferred */
#define KR_LINK_DEFER_DEPTH 2

struct kr_fetch {
  kr_chain_fetch_t cf;          /* the chain's view (url, host, ctype) */
  kr_crawl_t *crawl;
  unsigned worker;              /* pool index, crawl.log's "#NNN" */
  kr_fetch_t *next;             /* free list / in-flight list */
  kr_fetch_t *prev;
  /* the URI */
  kr_curi_t *curi;              /* owned until handed back to the frontier */
  kr_url_t *url;                /* parsed curi->url */
  const kr_hostcfg_t *hc;
  int is_robots;                /* the URL is an origin's /robots.txt */
  uint64_t issued_ms;
  /* HTTP */
  kr_http_fetch_t *http;        /* the exchange, released at finalize */
  const kr_http_resp_t *resp;   /* its response once headers came */
  int http_err;                 /* on_done's err */
  kr_fetch_t *resume_next;      /* waiting for a later turn (kr__fetch_resume) */
  int resume_err;
  uint64_t fetch_start_ms;      /* first request started (epoch ms) */
  uint64_t fetch_duration_ms;
  uint64_t raw_bytes;           /* over every exchange (robots redirects) */
  int redirects;                /* robots.txt: Location hops followed */
  int cut;                      /* download stopped at a size limit of ours */
  kr_buf_t body;                /* robots.txt body, up to robots.max-size */
  char ims[40];                 /* If-Modified-Since we sent */
  /* digest */
  kr_sha1_t sha;                /* reused across fetches of this object */
  int sha_ready;                /* sha initialised (once per object) */
  int digesting;                /* sha holds this response's content */
  int has_digest;               /* the change digest (decoded, stripped) */
  uint8_t digest[KR_SHA1_LEN];
  kr_sha1_t psha;               /* payload digest, reused */
  int psha_ready;
  kr_buf_t strip_buf;           /* decoded body for digest-strip, reused */
  kr_feed_t *feed;              /* feed/sitemap extractor, reused */
  struct kr_feed_meta *fmeta;   /* feed items among the links, reused */
  size_t nfmeta, fmeta_cap;
  kr_fetch_adapt_t ad;
  /* extraction */
  kr_html_extractor_t *html;    /* reused; reset per document */
  kr_css_extractor_t *css;
  int html_active, css_active;  /* fed this response */
  /* Streamed links wait for the next two (their link-cache slots and
   * entries loading meanwhile, proc_extract.c); never past the end of a
   * fed chunk. */
  struct {
    struct kr_link_waiting {
      char raw[KR_LINK_DEFER_MAX];
      kr_linkcache_key_t key; /* its link-cache key, computed once */
      uint16_t n;
      char hop;
    } q[KR_LINK_DEFER_DEPTH]; /* a ring: the oldest at head (never moved) */
    uint8_t head;
    uint8_t has;  /* links waiting */
    uint8_t full; /* a waiting link found the caps reached: stop the stream */
  } defer;
  kr_url_t *base;               /* <base href>, NULL = the document URL */
  kr_link_t *links;             /* accepted links; strings in arena */
  size_t nlinks, links_cap;
  uint64_t links_dropped;       /* over the caps */
  size_t links_bytes;           /* URL and hop bytes of links held */
  kr_arena_t arena;             /* per fetch, reset at finalize */
  /* the outcome */
  int disp;                     /* kr_fetch_disp_t */
  int decided;                  /* outcome set before the fetch (prefetch) */
  kr_outcome_t outcome;
  int log_status;               /* crawl.log status when decided */
  int cause;                    /* decided failures: the error behind it (robots.txt's) */
  kr_slice_t annot[KR_FETCH_MAX_ANNOT];
  size_t nannot;
  struct kr_warc_cap *wcap;     /* raw response bytes for WARC (proc_warc.c) */
};

/* Add a static annotation (crawl.log column 12) to f. */
void kr_fetch_annotate(kr_fetch_t *f, const char *s);
/* Add a formatted annotation (copied into f's arena). */
void kr_fetch_annotatef(kr_fetch_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Decide f's outcome before or instead of fetching (prefetch). */
void kr_fetch_decide(kr_fetch_t *f, kr_outcome_kind_t kind, int log_status);

/* Per-origin robots.txt rules kept in memory. */
typedef struct kr_robots_cache kr_robots_cache_t;

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
  kr_robots_cache_t *robots;
  const char *robots_agent;
  size_t robots_max_size;
  kr_buf_t canon_buf, hop_buf;  /* scratch for links */
  struct kr_linkcache *links_cache; /* links resolved + canonicalised (src/crawl/linkcache.h) */
  size_t links_bytes;           /* held by all fetches (sum of theirs) */
  size_t links_budget;          /* cap on links_bytes */
  /* content-type filters of the extractors */
  pcre2_code *re_html, *re_css;
  /* processors (registered in this order within their phases) */
  kr_processor_t procs[32];
  /* adaptive revisiting */
  kr_config_matcher_t *matcher; /* wait evaluators, strip URL filters */
  pcre2_code *re_feed;          /* content types read as feeds/sitemaps */
  struct kr_adapt_host **ahosts;/* per host queue: poisson allocator */
  size_t ahosts_cap, ahosts_n;
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
  struct kr_service *svc;       /* status server, sd_notify, progress, reload */
  int paused;                   /* dispatch held (kr_crawl_pause) */
  uint32_t reloads;             /* configurations applied by SIGHUP */
  struct kr_warc *warc;         /* WARC writer (proc_warc.c), NULL when off */
  /* queue-assignment = ip: host -> address it answered from (crawl.c) */
  int ip_queues;
  struct kr_ipmap_slot *ipmap;
  size_t ipmap_cap, ipmap_n;
  struct kr_diskguard *disk;    /* free space of the state directory */
  int disk_held;                /* dispatch held: the state disk is low */
  kr_wheel_entry_t disk_retry;
  kr_seeds_t scope_seeds;       /* the seeds in force, as kept in the state
                                   database (scopestate.h) */
  struct kr_scope_walk *scope_walk; /* a revival after a reload, in steps */
};

/* Settings for host (ASCII, any case). Never NULL. */
const kr_hostcfg_t *kr_crawl_hostcfg(kr_crawl_t *c, const char *host, size_t len);
uint64_t kr_crawl_now(const kr_crawl_t *c);

/* Processors, registered by kr_crawl_new in this order. */
void kr__proc_prefetch_register(kr_crawl_t *c); /* scope, robots */
void kr__proc_fetch_register(kr_crawl_t *c);    /* http, digest */
void kr__proc_extract_register(kr_crawl_t *c);  /* headers, html, css */
void kr__proc_post_register(kr_crawl_t *c);     /* robots-update, outcome, revisit, finish */
/* adaptive processors */
void kr__proc_digest_register(kr_crawl_t *c);   /* digest (payload, change, strip) */
void kr__proc_midfetch_register(kr_crawl_t *c); /* midfetch (stream hook) */
void kr__proc_change_register(kr_crawl_t *c);   /* change */
void kr__proc_feed_register(kr_crawl_t *c);     /* extract-feed */
void kr__proc_wait_register(kr_crawl_t *c);     /* revisit (wait, embeds, feeds) */
/* proc_midfetch.c: how to treat validators on this visit (sets
 * f->ad.vt_mode); 1 when conditional headers may be sent. */
int kr__adapt_before_request(kr_fetch_t *f);
/* proc_digest.c: payload bytes (transfer coding removed) from the HTTP
 * client. */
void kr__digest_payload(kr_fetch_t *f, const char *p, size_t n);
/* Finish the payload digest of f if still open (digest phase, or the
 * WARC writer when the walk skipped it); 1 when f->ad has one. */
int kr__digest_payload_end(kr_fetch_t *f);
/* proc_wait.c: free the per-host allocators. */
void kr__adapt_hosts_free(kr_crawl_t *c);
/* A host's revisit plan against its politeness capacity, for reports (in
 * memory: it fills as the host's URIs are revisited after a start). */
typedef struct kr_host_capacity {
  double budget;        /* fetches/s its politeness serves (x budget-utilisation) */
  /* multiplicative with adaptive.capacity-plan: uris > 0 */
  uint32_t uris;        /* URIs in the plan */
  double wanted;        /* fetches/s the thesis' waits ask for */
  double planned;       /* fetches/s with the floor applied */
  int64_t floor_ms;     /* 0: the waits fit as they are */
  /* poisson: alloc_state >= 0 (KR_ALLOC_SLACK/BINDS/OVER), x */
  int alloc_state;
  double x;
} kr_host_capacity_t;
/* 1 and *out when h has a plan, 0 when not. */
int kr__adapt_host_capacity(const kr_crawl_t *c, const kr_hostq_t *h, kr_host_capacity_t *out);
/* proc_feed.c: sitemap changefreq hints of f's items, after the frontier
 * has the links (post, after finish). */
void kr__proc_feed_post_register(kr_crawl_t *c);
/* proc_feed.c: queue the sitemaps of robots.txt rules r as links of f. */
void kr__feed_robots_sitemaps(kr_fetch_t *f, const kr_robots_t *r);
/* crawl.c: format ms as Heritrix's crawl.log durations ("45s0ms"). */
size_t kr__fmt_duration(char *out, size_t cap, int64_t ms);
/* Settings of view v built afresh (config reload, src/service/service.c), and
 * their release. */
kr_hostcfg_t *kr__crawl_hostcfg_new(kr_crawl_t *c, const kr_config_view_t *v);
void kr__crawl_hostcfg_free(kr_hostcfg_t *hc);
/* Add one processor to c (storage in c->procs). */
kr_processor_t *kr__crawl_add_proc(kr_crawl_t *c, const kr_processor_t *p);

/* robots cache (proc_prefetch.c) */
kr_robots_cache_t *kr__robots_cache_new(size_t max_entries);
void kr__robots_cache_free(kr_robots_cache_t *rc);
/* Origin key "scheme://host[:port]" of url into out (NUL-terminated). */
int kr__origin_key(const kr_url_t *url, char *out, size_t outlen);
/* After a robots.txt fetch (proc_post.c calls it from the robots-update
 * processor): store rules for f's origin, tell the frontier. */
void kr__robots_store(kr_fetch_t *f);

/* extract (proc_extract.c): resolve raw against f's base, canonicalize,
 * check the scope for hop `hop` and keep it in f->links: 1 and *idx (may
 * be NULL) its index, 0 rejected, KR_ETOOBIG over a cap. */
int kr__extract_add_link(kr_fetch_t *f, kr_slice_t raw, char hop, size_t *idx);
/* A 2xx body of a page (not robots.txt, not known unchanged) is coming. */
int kr__extract_wants_links(const kr_fetch_t *f);
void kr__extract_note_capped(kr_fetch_t *f);

/* post (proc_post.c): remember url as fp's URL for later via columns. */
void kr__via_remember(kr_crawl_t *c, uint64_t fp, const char *url, size_t len);
void kr__via_free(kr_crawl_t *c);

/* Return f's curi to the frontier according to f->disp and outcome;
 * shared by post and the shutdown path. */
void kr__fetch_complete(kr_fetch_t *f);
/* The HTTP exchange of f ended with err: walk the rest of its chain now,
 * or on a later turn when this one has done its share (first come, first
 * walked). */
void kr__fetch_resume(kr_fetch_t *f, int err);

#endif
