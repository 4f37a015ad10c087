/*
 * The fetch: one issued URI walking the processor chain, and what its
 * processors share. Only shared state lives here — the URI, the exchange
 * and its response, the results one processor leaves for the others
 * (validators' verdict, digests, content state), the links found and the
 * outcome. What a processor keeps for itself (hash contexts, parsers,
 * buffers) is its chain context (chain.h, kr_chain_ctx), so a fetch
 * object is recycled without knowing its processors: kr__fetch_put
 * zeroes the shared part up to the pooled members and lets the chain
 * reset every context.
 *
 * Links: kr_fetch_add_link resolves a raw link against a base,
 * canonicalises it (through the crawl's link cache), checks the scope for
 * its hop and keeps it in the fetch's arena for post to hand to the
 * frontier in one batch; every processor that finds links (headers,
 * HTML, CSS, feeds, robots.txt sitemaps) adds them this way.
 */
#ifndef KRIA_FETCH_H
#define KRIA_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "frontier.h"
#include "http.h"
#include "linkcache.h"
#include "kria/arena.h"
#include "kria/digest.h"
#include "kria/robots.h"
#include "kria/url.h"

typedef struct kr_crawl kr_crawl_t;
typedef struct kr_fetch kr_fetch_t;
typedef struct kr_hostcfg kr_hostcfg_t;

/* What a fetch ended as, decided by the processors, carried out by post. */
typedef enum kr_fetch_disp {
  KR_DISP_FINISH = 0,   /* outcome + crawl.log line (the default) */
  KR_DISP_RETURNED,     /* curi already handed back (prerequisite) */
  KR_DISP_DEFER,        /* give it back untouched (shutdown) */
} kr_fetch_disp_t;

#define KR_FETCH_MAX_ANNOT 16

/* A feed or sitemap item among a fetch's links. */
typedef struct kr_fetch_item {
  size_t link;                  /* index in f->links */
  int64_t updated;              /* the item's latest date, epoch s; 0 unknown */
  double rate;                  /* sitemap changefreq, changes/s; 0 none */
  int source;                   /* kr_sig_source_t: a sitemap's lastmod or a feed's date */
} kr_fetch_item_t;

/* The adaptive processors' results, for the processors after them. */
typedef struct kr_fetch_adapt {
  /* validators (proc_midfetch.c) */
  int vt_mode;                  /* kr_vtrust_mode_t decided before the request, -1 none */
  int conditional;              /* validators may go out (the trust mode is USE) */
  int conditional_sent;         /* If-None-Match / If-Modified-Since went out */
  int val_checked;              /* stored and current validators compared */
  int val_change;               /* ... and they predicted a change */
  int midfetch_abort;           /* headers said unchanged: body not fetched */
  /* digests (proc_digest.c) */
  int has_payload_digest;
  uint8_t payload_digest[KR_SHA1_LEN];
  int has_block_digest;         /* the response block [raw head, held raw body]'s */
  uint8_t block_digest[KR_SHA1_LEN];
  uint64_t block_body;          /* ... over this many raw body bytes */
  /* change (proc_change.c) */
  int content;                  /* kr_content_t; KR_CONTENT_UNKNOWN until decided */
  int content_set;              /* decided before the body: 304 or abort */
  uint32_t visits, versions;    /* after this visit */
  int has_prior_digest;         /* a 304 or an abort: the payload digest */
  uint8_t prior_digest[KR_SHA1_LEN]; /* of the URI's stored original */
  const char *dup_url;          /* identical payload stored under this URL (arena) */
  uint64_t dup_date;            /* ... at this time (epoch ms) */
  int dup_miss;                 /* the local index knows no original of this
                                   payload (checked for a changed URI) */
  /* shared dedup (clusterdedup.c): another member's original of the
   * payload, as Redis named it (arena); far_url NULL: none */
  const char *far_url;
  const char *far_rid;
  uint64_t far_date;
} kr_fetch_adapt_t;

struct kr_fetch {
  kr_chain_fetch_t cf;          /* the chain's view (url, host, ctype, contexts) */
  kr_crawl_t *crawl;
  kr_fetch_t *next;             /* free list / in-flight list */
  kr_fetch_t *prev;
  kr_fetch_t *resume_next;      /* waiting for a later turn (kr__fetch_resume) */
  int resume_err;
  /* the URI */
  kr_curi_t *curi;              /* owned until handed back to the frontier */
  kr_url_t *url;                /* parsed curi->url */
  const kr_hostcfg_t *hc;
  int is_robots;                /* the URL is an origin's /robots.txt */
  uint64_t issued_ms;
  /* the exchange (the http processor) */
  kr_http_fetch_t *http;        /* released at finalize */
  const kr_http_resp_t *resp;   /* its response once headers came */
  int http_err;                 /* on_done's err */
  uint64_t fetch_start_ms;      /* first request started (epoch ms) */
  uint64_t fetch_duration_ms;
  uint64_t raw_bytes;           /* over every exchange (robots redirects) */
  uint64_t raw_seen;            /* this exchange's raw bytes (head, body)
                                   handed on before any abort: crawl.log's
                                   size is the body's share */
  int redirects;                /* robots.txt: Location hops followed */
  int cut;                      /* download stopped at a size limit of ours */
  /* results */
  int has_digest;               /* the change digest (decoded, stripped) */
  uint8_t digest[KR_SHA1_LEN];
  kr_fetch_adapt_t ad;
  const kr_robots_t *robots;    /* robots.txt rules this fetch stored (robots-update) */
  /* links */
  size_t nlinks;
  uint64_t links_dropped;       /* over the caps */
  size_t links_bytes;           /* URL and hop bytes of links held */
  size_t nfmeta;                /* feed items among them */
  /* the outcome */
  int disp;                     /* kr_fetch_disp_t */
  int decided;                  /* outcome set before the fetch (prefetch) */
  kr_outcome_t outcome;
  int log_status;               /* crawl.log status when decided */
  int cause;                    /* decided failures: the error behind it (robots.txt's) */
  kr_slice_t annot[KR_FETCH_MAX_ANNOT];
  size_t nannot;
  /* Pooled with the object: reset, never zeroed, by kr__fetch_put. */
  unsigned worker;              /* pool index, crawl.log's "#NNN" */
  kr_arena_t arena;             /* link strings, annotations */
  kr_buf_t body;                /* robots.txt body, up to robots.max-size */
  kr_link_t *links;             /* accepted links; strings in arena */
  size_t links_cap;
  kr_fetch_item_t *fmeta;        /* feed items among the links */
  size_t fmeta_cap;
};

/* Add a static annotation (crawl.log column 12) to f. */
void kr_fetch_annotate(kr_fetch_t *f, const char *s);
/* Put a static annotation before the others (crawl.log's Heritrix
 * revisit annotation, "duplicate:..."). */
void kr_fetch_annotate_first(kr_fetch_t *f, const char *s);
/* Add a formatted annotation (copied into f's arena). */
void kr_fetch_annotatef(kr_fetch_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Decide f's outcome before or instead of fetching (prefetch). */
void kr_fetch_decide(kr_fetch_t *f, kr_outcome_kind_t kind, int log_status);

/* Resolve raw against base (NULL: f's URL), canonicalize, check the scope
 * for hop `hop` and keep it in f->links: 1 and *idx (may be NULL) its
 * index, 0 rejected, KR_ETOOBIG over a cap. key: raw's link-cache key
 * against that base when the caller computed it already, else NULL. */
int kr_fetch_add_link(kr_fetch_t *f, const kr_url_t *base, kr_slice_t raw, char hop,
                      size_t *idx, const kr_linkcache_key_t *key);
/* A 2xx body of a page (not robots.txt, not known unchanged) is coming. */
int kr_fetch_wants_links(const kr_fetch_t *f);

/* Fetch objects (crawl.c's pool): a new or pooled object on the in-flight
 * list; back to the pool, the shared part zeroed and every processor
 * context reset; freed for good. */
kr_fetch_t *kr__fetch_get(kr_crawl_t *c);
void kr__fetch_put(kr_crawl_t *c, kr_fetch_t *f);
void kr__fetch_destroy(kr_fetch_t *f);
/* Memory of the fetch objects, pooled or running, with what they keep. */
size_t kr__fetch_pool_bytes(const kr_crawl_t *c);

/* Return f's curi to the frontier according to f->disp and outcome;
 * shared by post and the shutdown path (crawl.c). */
void kr__fetch_complete(kr_fetch_t *f);
/* The HTTP exchange of f ended with err: walk the rest of its chain now,
 * or on a later turn when this one has done its share (first come, first
 * walked; crawl.c). */
void kr__fetch_resume(kr_fetch_t *f, int err);

#endif
