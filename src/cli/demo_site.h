/*
 * The demo site of `kria demo`: a small HTTP/1.1 server on the crawl's own
 * libuv loop (llhttp in request mode) on 127.0.0.1, serving a site whose
 * pages change at known rates, so a short crawl shows the wait intervals
 * adapting. Page classes (kr_demo_class_t):
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
#include <uv.h>

#include "kria/buf.h"

typedef enum kr_demo_class {
  KR_DEMO_HOME = 0,
  KR_DEMO_NEWS,
  KR_DEMO_SECTION,
  KR_DEMO_ARCHIVE,
  KR_DEMO_CLOCK,
  KR_DEMO_IMAGE,
  KR_DEMO_LIAR,
  KR_DEMO_NCLASS
} kr_demo_class_t;

typedef struct kr_demo_class_info {
  const char *name;     /* "news" */
  const char *about;    /* one line: change rate and validators */
  unsigned pages;       /* pages in the class */
  uint32_t period_ms;   /* a new version this often; 0 = never */
  int liar_host;        /* served for Host: localhost only */
} kr_demo_class_info_t;

/* Class k's description (k < KR_DEMO_NCLASS). */
const kr_demo_class_info_t *kr_demo_class(kr_demo_class_t k);
/* The class and page index of a URL path ("/news/2" -> NEWS, 2). The
 * class, or -1 for paths outside the classes (robots.txt, 404s). */
int kr_demo_classify(const char *path, size_t n, unsigned *page);
/* Page `page` of class k's version at elapsed_ms after the start. */
uint64_t kr_demo_version(uint64_t seed, kr_demo_class_t k, unsigned page, uint64_t elapsed_ms);

/* ---- one request, as a pure function ---------------------------------------------- */

typedef struct kr_demo_params {
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
/* Serve on loop from fd (bound by kr_demo_site_bind; owned from here on,
 * also on failure). The site's clock starts now. 0 and *out, or a
 * negative KR_E*. */
int kr_demo_site_start(uv_loop_t *loop, int fd, uint64_t seed, kr_demo_site_t **out);
/* Milliseconds since kr_demo_site_start. */
uint64_t kr_demo_site_elapsed_ms(const kr_demo_site_t *s);
void kr_demo_site_get_stats(const kr_demo_site_t *s, kr_demo_site_stats_t *out);
/* Close the listener and every connection; the site frees itself in the
 * last close callback (the loop must run on). Not called back. */
void kr_demo_site_close(kr_demo_site_t *s);

#endif
