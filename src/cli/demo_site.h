/*
 * The demo site of `kria demo`: a small HTTP/1.1 server on the crawl's own
 * libuv loop (llhttp in request mode) on 127.0.0.1, serving a site whose
 * pages change at known rates, so a short crawl shows the wait intervals
 * adapting. Page classes (kr_demo_class_t) of the default site:
 *
 *   home     /                  never changes; ETag + Last-Modified, 304s
 *   news     /news/0..3         a new version every 3 s; ETag + LM, 304s
 *   section  /section/0..2      every 15 s; no validators (digest only)
 *   archive  /archive/0..3      never; ETag + LM, 304s
 *   clock    /clock/0..1        never, but a clock section that changes
 *                               on every request; no validators (the
 *                               digest-strip rule of config/demo.conf)
 *   image    /img/0..3.gif      never; ETag + LM, but the server ignores
 *                               conditional requests (the mid-fetch check)
 *   liar     /liar/0..2         every 5 s, served only for Host localhost
 *                               (its own host queue and validator trust):
 *                               the ETag and Last-Modified never move and
 *                               conditional requests get 304s all the same
 *
 * plus /robots.txt (allows everything). Content is deterministic: a page's
 * bytes depend on the seed, its path and its version, and its version on
 * the time since the site started (each page has its own phase, so a
 * class does not change all at once). The clock section is the only part
 * that differs between two requests of one version.
 *
 * The grown site (kr_demo_layout_grown, `kria demo --pages N`): N pages
 * in the same classes plus articles (/article/N: ETag + LM, 304s), in
 * fixed shares, each page changing as a Poisson process with its class's
 * mean (news 5 s, sections 30 s, articles 2 min, liar 15 s; home,
 * archive, clock and images never), its change times drawn from the seed
 * alone, so every run with one seed sees the same changes at the same
 * offsets from the start. The home page links every page.
 *
 * Ground truth (kr_demo_site_truth_write): every version of every page
 * that existed while the site ran, when it appeared, the SHA-1 of its
 * body (what an archive holding it holds), and how often the site served
 * it in a full 200 body and answered 304 while it was live. Whether a
 * crawler captured a version is for its archive to show (a payload with
 * that digest); served in full is not archived when the crawler stops
 * reading mid-body.
 *
 * Two layers: kr_demo_render() answers one request as a pure function of
 * the request and the time (unit-tested without a loop), and the server
 * around it. Limits on what clients send: request head 8 KiB (431), a
 * request body is refused (413), 64 connections (more are closed),
 * 15 s idle per connection, reading pauses while 256 KiB of responses
 * wait to be written. Keep-alive and pipelining are supported.
 */
#ifndef KRIA_DEMO_SITE_H
#define KRIA_DEMO_SITE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "clock.h"
#include "kria/buf.h"

typedef enum kr_demo_class {
  KR_DEMO_HOME = 0,
  KR_DEMO_NEWS,
  KR_DEMO_SECTION,
  KR_DEMO_ARTICLE,
  KR_DEMO_ARCHIVE,
  KR_DEMO_CLOCK,
  KR_DEMO_IMAGE,
  KR_DEMO_LIAR,
  KR_DEMO_NCLASS
} kr_demo_class_t;

typedef struct kr_demo_class_info {
  const char *name;       /* "news" */
  const char *about;      /* one line: change rate and validators (default site) */
  const char *validators; /* what its validators do (the grown site's line) */
  int liar_host;          /* served for Host: localhost only */
} kr_demo_class_info_t;

#define KR_DEMO_MAX_PAGES 1000 /* the grown site's size limit (and per class) */

/* Which pages exist and how they change. */
typedef struct kr_demo_layout {
  unsigned pages[KR_DEMO_NCLASS];     /* pages per class */
  uint32_t period_ms[KR_DEMO_NCLASS]; /* periodic: the period; poisson: the mean time
                                         between changes; 0 = never changes */
  int poisson;                        /* changes are Poisson processes (grown) */
  unsigned total;                     /* pages in all */
} kr_demo_layout_t;

/* The default demo site: 23 pages, periodic changes. */
const kr_demo_layout_t *kr_demo_layout_default(void);
/* The grown site of `pages` pages in all (20..KR_DEMO_MAX_PAGES): 0, or
 * KR_EINVAL outside that range. */
int kr_demo_layout_grown(kr_demo_layout_t *l, unsigned pages);

/* Class k's description (k < KR_DEMO_NCLASS). */
const kr_demo_class_info_t *kr_demo_class(kr_demo_class_t k);
/* Class k's line of the intro and its pages' about text: how it changes
 * and its validators, into out (NUL-terminated, cut to n). */
void kr_demo_about(const kr_demo_layout_t *l, kr_demo_class_t k, char *out, size_t n);
/* The class and page index of a URL path ("/news/2" -> NEWS, 2) in
 * layout l (NULL: the default). The class, or -1 for paths outside the
 * classes (robots.txt, 404s). */
int kr_demo_classify(const kr_demo_layout_t *l, const char *path, size_t n, unsigned *page);
/* Page `page` of class k's version at elapsed_ms after the start (0 at
 * the start). l NULL: the default. */
uint64_t kr_demo_version(const kr_demo_layout_t *l, uint64_t seed, kr_demo_class_t k,
                         unsigned page, uint64_t elapsed_ms);
/* How long before the start that page's version 0 appeared (ms): the
 * phase of a periodic page, an exponential draw with the class's mean for
 * a Poisson one, a day to a year (log-uniform, per page) for a page that
 * never changes. Its Last-Modified is the start less this, rounded up to
 * a second (the liar's is a day before the start, whatever its version). */
uint64_t kr_demo_age0_ms(const kr_demo_layout_t *l, uint64_t seed, kr_demo_class_t k,
                         unsigned page);
/* When version v (>= 1) of that page appeared, ms after the start; 0 for
 * v = 0 and UINT64_MAX for a page that never changes. */
uint64_t kr_demo_born_ms(const kr_demo_layout_t *l, uint64_t seed, kr_demo_class_t k,
                         unsigned page, uint64_t v);

/* ---- one request, as a pure function ---------------------------------------------- */

typedef struct kr_demo_params {
  const kr_demo_layout_t *layout; /* NULL: the default site */
  uint64_t seed;            /* content seed */
  int64_t start_epoch_s;    /* wall time of the start: Last-Modified values */
  uint16_t port;            /* for the absolute links to http://localhost:PORT/ */
} kr_demo_params_t;

typedef struct kr_demo_req {
  int head;                 /* HEAD: the same answer without a body */
  kr_slice_t path;          /* origin-form target, query included */
  kr_slice_t host;          /* Host header, port included ({0}: absent) */
  kr_slice_t if_none_match; /* raw header values ({0}: absent) */
  kr_slice_t if_modified_since;
  uint64_t elapsed_ms;      /* since the start */
  int64_t now_ms;           /* wall clock, epoch ms (the clock section, Date) */
  uint64_t request_no;      /* the server's request counter (the clock section) */
} kr_demo_req_t;

typedef struct kr_demo_resp {
  int status;               /* 200, 304, 404 */
  const char *content_type; /* static */
  char etag[40];            /* "" none */
  char last_modified[32];   /* "" none */
  int cls;                  /* kr_demo_class_t, -1 none */
  unsigned page;            /* of the class */
  uint64_t version;         /* the page's version answered */
} kr_demo_resp_t;

/* Answer rq: status, validators and the body (appended to body, which
 * should allow 64 KiB). 0, or KR_ETOOBIG when body is too small. */
int kr_demo_render(const kr_demo_params_t *p, const kr_demo_req_t *rq, kr_demo_resp_t *out,
                   kr_buf_t *body);

/* ---- the server ----------------------------------------------------------------------- */

typedef struct kr_demo_site kr_demo_site_t;

typedef struct kr_demo_site_stats {
  uint64_t connections;     /* accepted */
  uint64_t requests;        /* answered */
  uint64_t not_modified;    /* 304s */
  uint64_t bytes;           /* response bytes written */
  uint64_t by_class[KR_DEMO_NCLASS];   /* requests per class */
  uint64_t by_class_304[KR_DEMO_NCLASS];
} kr_demo_site_stats_t;

/* Bind a TCP socket to 127.0.0.1 on a free port, before any loop exists
 * (the crawl's seeds need the port before the crawl, and with it the
 * loop, is made). 0 with *fd and *port, or a negative KR_E*. */
int kr_demo_site_bind(int *fd, uint16_t *port);
typedef struct kr_demo_site_opts {
  uint64_t seed;                  /* content and change seed */
  const kr_demo_layout_t *layout; /* NULL: the default site (copied) */
  int truth;                      /* keep the account of versions served */
  const kr_clock_t *clock;        /* NULL: real time; else read (never moved) from
                                     this clock, which must outlive the site */
} kr_demo_site_opts_t;

/* Serve on loop from fd (bound by kr_demo_site_bind; owned from here on,
 * also on failure). The site's clock starts now. 0 and *out, or a
 * negative KR_E*. */
int kr_demo_site_start(uv_loop_t *loop, int fd, const kr_demo_site_opts_t *o,
                       kr_demo_site_t **out);
/* Milliseconds since kr_demo_site_start. */
uint64_t kr_demo_site_elapsed_ms(const kr_demo_site_t *s);
void kr_demo_site_get_stats(const kr_demo_site_t *s, kr_demo_site_stats_t *out);
/* The ground truth up to now (the site kept its account: opts.truth),
 * tab-separated, one line per version that existed:
 *   URL CLASS PAGE MEAN_MS VERSION BORN_MS SHA1 SERVED N304
 * after '#' lines naming the seed, layout and elapsed time. SHA1 is the
 * "sha1:" base32 label of the version's body ("-" for the clock pages,
 * whose every answer differs), SERVED the full 200 bodies of it written
 * (GET), N304 the 304s answered while it was the live version. 0, or
 * KR_EIO (write error) or KR_EINVAL (no account kept). */
int kr_demo_site_truth_write(const kr_demo_site_t *s, FILE *f);
/* Close the listener and every connection; the site frees itself in the
 * last close callback (the loop must run on). Not called back. */
void kr_demo_site_close(kr_demo_site_t *s);

#endif
