/*
 * The demo site of `kria demo` (see demo_site.h for its page classes): a
 * pure request -> response function and a small HTTP/1.1 server on the
 * caller's loop around it. The content side hashes (seed, class, page,
 * version) into ETags and into the words of each page, so equal inputs
 * give equal bytes; a page's version is the number of its periods since
 * the start, shifted by a per-page phase. The server side: a listener
 * opened from a socket bound before the loop existed, connections that
 * feed llhttp (request mode) and answer each complete request at once
 * with one uv_write (so pipelined answers keep their order), keep-alive
 * with an idle timer, a lingering half-close after the last answer, and
 * head-size, connection and write-queue limits.
 * A connection owns its TCP handle and its timer and is freed in the
 * second close callback; the site frees itself once the listener and
 * every connection are closed. Sections: classes and versions, content,
 * rendering, connections, the listener.
 */
#include "demo_site.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <llhttp.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "internal.h"
#include "kria/digest.h"
#include "kria/validators.h"

#define HEAD_MAX 8192          /* request line and headers */
#define HEAD_SLACK 1024        /* separators the callbacks never see */
#define MAX_CONNS 64
#define IDLE_MS 15000
#define LINGER_MS 1000         /* draining a closing connection */
#define DRAIN_MAX (64u << 10)
#define WRITE_HIGH (256u << 10) /* pause reading above this much queued */
#define BODY_MAX (64u << 10)
#define VAL_MAX 1024           /* If-None-Match / If-Modified-Since kept */
#define HOST_MAX 256
#define FIELD_MAX 32

/* ---- classes and versions ------------------------------------------------------------ */

static const kr_demo_class_info_t classes[KR_DEMO_NCLASS] = {
    [KR_DEMO_HOME] = {"home", "never changes; ETag, Last-Modified, 304s",
                      "ETag, Last-Modified, 304s", 0},
    [KR_DEMO_NEWS] = {"news", "a new version every 3 s; ETag, Last-Modified, 304s",
                      "ETag, Last-Modified, 304s", 0},
    [KR_DEMO_SECTION] = {"section", "a new version every 15 s; no validators", "no validators",
                         0},
    [KR_DEMO_ARTICLE] = {"article", "not in the default site", "ETag, Last-Modified, 304s", 0},
    [KR_DEMO_ARCHIVE] = {"archive", "never changes; ETag, Last-Modified, 304s",
                         "ETag, Last-Modified, 304s", 0},
    [KR_DEMO_CLOCK] = {"clock", "never, but for a clock section (new on every request)",
                       "no validators, a clock section new on every request", 0},
    [KR_DEMO_IMAGE] = {"image", "never changes; ETag, Last-Modified, conditionals ignored",
                       "ETag, Last-Modified, conditionals ignored", 0},
    [KR_DEMO_LIAR] = {"liar", "every 5 s, but its ETag and Last-Modified never move (304s)",
                      "its ETag and Last-Modified never move (304s)", 1},
};

static const kr_demo_layout_t default_layout = {
    .pages = {[KR_DEMO_HOME] = 1, [KR_DEMO_NEWS] = 4, [KR_DEMO_SECTION] = 3,
              [KR_DEMO_ARCHIVE] = 4, [KR_DEMO_CLOCK] = 2, [KR_DEMO_IMAGE] = 4,
              [KR_DEMO_LIAR] = 3},
    .period_ms = {[KR_DEMO_NEWS] = 3000, [KR_DEMO_SECTION] = 15000, [KR_DEMO_LIAR] = 5000},
    .poisson = 0,
    .total = 21,
};

/* The grown site: each class's share of the pages (per mille; archive
 * takes what rounding leaves) and mean time between changes. A third of
 * the site changes; half of it never does, as on a real site where the
 * archive and the images outnumber what is new. */
static const struct {
  unsigned permille;
  uint32_t mean_ms;
} grown[KR_DEMO_NCLASS] = {
    [KR_DEMO_NEWS] = {33, 5000},      [KR_DEMO_SECTION] = {100, 30000},
    [KR_DEMO_ARTICLE] = {267, 120000}, [KR_DEMO_ARCHIVE] = {0, 0},
    [KR_DEMO_CLOCK] = {30, 0},        [KR_DEMO_IMAGE] = {200, 0},
    [KR_DEMO_LIAR] = {100, 15000},
};

static const char *const prefixes[KR_DEMO_NCLASS] = {
    [KR_DEMO_HOME] = "/",         [KR_DEMO_NEWS] = "/news/",   [KR_DEMO_SECTION] = "/section/",
    [KR_DEMO_ARTICLE] = "/article/", [KR_DEMO_ARCHIVE] = "/archive/",
    [KR_DEMO_CLOCK] = "/clock/",  [KR_DEMO_IMAGE] = "/img/",   [KR_DEMO_LIAR] = "/liar/",
};

const kr_demo_layout_t *kr_demo_layout_default(void) { return &default_layout; }

int kr_demo_layout_grown(kr_demo_layout_t *l, unsigned pages) {
  if (pages < 20 || pages > KR_DEMO_MAX_PAGES) return KR_EINVAL;
  memset(l, 0, sizeof *l);
  l->poisson = 1;
  l->pages[KR_DEMO_HOME] = 1;
  unsigned left = pages - 1;
  for (int k = KR_DEMO_NEWS; k < KR_DEMO_NCLASS; k++) {
    l->period_ms[k] = grown[k].mean_ms;
    if (k == KR_DEMO_ARCHIVE) continue;
    unsigned n = (pages * grown[k].permille + 500) / 1000;
    l->pages[k] = n ? n : 1;
    left -= l->pages[k]; /* the shares sum to 730 per mille: never below 0 */
  }
  l->pages[KR_DEMO_ARCHIVE] = left;
  l->total = pages;
  return 0;
}

static const kr_demo_layout_t *lay(const kr_demo_layout_t *l) { return l ? l : &default_layout; }

const kr_demo_class_info_t *kr_demo_class(kr_demo_class_t k) {
  return &classes[(unsigned)k < KR_DEMO_NCLASS ? k : KR_DEMO_HOME];
}

/* "5 s", "2 min" */
static void fmt_period(uint32_t ms, char *out, size_t n) {
  if (ms % 60000 == 0) snprintf(out, n, "%u min", ms / 60000);
  else if (ms % 1000 == 0) snprintf(out, n, "%u s", ms / 1000);
  else snprintf(out, n, "%u ms", ms);
}

void kr_demo_about(const kr_demo_layout_t *l, kr_demo_class_t k, char *out, size_t n) {
  l = lay(l);
  const kr_demo_class_info_t *ci = kr_demo_class(k);
  if (!l->poisson) {
    snprintf(out, n, "%s", ci->about);
    return;
  }
  char p[32];
  fmt_period(l->period_ms[k], p, sizeof p);
  if (!l->period_ms[k]) snprintf(out, n, "never changes; %s", ci->validators);
  else snprintf(out, n, "changes at random, every %s on average; %s", p, ci->validators);
}

int kr_demo_classify(const kr_demo_layout_t *l, const char *path, size_t n, unsigned *page) {
  l = lay(l);
  const char *q = memchr(path, '?', n);
  if (q) n = (size_t)(q - path);
  *page = 0;
  if (n == 1 && path[0] == '/') return KR_DEMO_HOME;
  for (int k = KR_DEMO_NEWS; k < KR_DEMO_NCLASS; k++) {
    size_t pl = strlen(prefixes[k]);
    if (n <= pl || memcmp(path, prefixes[k], pl)) continue;
    const char *p = path + pl, *end = path + n;
    if (k == KR_DEMO_IMAGE) {
      if ((size_t)(end - p) < 5 || memcmp(end - 4, ".gif", 4)) return -1;
      end -= 4;
    }
    /* one to three digits, no leading zero */
    size_t len = (size_t)(end - p);
    if (len < 1 || len > 3 || (len > 1 && p[0] == '0')) return -1;
    unsigned v = 0;
    for (; p < end; p++) {
      if (*p < '0' || *p > '9') return -1;
      v = v * 10 + (unsigned)(*p - '0');
    }
    if (v >= l->pages[k]) return -1;
    *page = v;
    return k;
  }
  return -1;
}

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return mix(mix(mix(mix(a) ^ b) ^ c) ^ d);
}

static uint64_t phase_ms(const kr_demo_layout_t *l, uint64_t seed, kr_demo_class_t k,
                         unsigned page) {
  uint32_t p = l->period_ms[k];
  return p ? hash4(seed, (uint64_t)k, page, 0x5eed) % p : 0;
}

/* The Poisson pages' i-th time between changes (ms, at least 1): an
 * exponential draw from a stream of its own, so the change times depend
 * on the seed and the page alone. */
static uint64_t gap_ms(uint64_t seed, kr_demo_class_t k, unsigned page, uint64_t i,
                       uint32_t mean_ms) {
  uint64_t h = hash4(seed ^ 0x6a09e667f3bcc908ull, (uint64_t)k, page, i);
  double u = ((double)(h >> 11) + 0.5) * 0x1p-53; /* (0, 1) */
  double g = -log(u) * (double)mean_ms;
  return g < 1 ? 1 : g > 1e15 ? (uint64_t)1e15 : (uint64_t)g;
}

uint64_t kr_demo_version(const kr_demo_layout_t *l, uint64_t seed, kr_demo_class_t k,
                         unsigned page, uint64_t elapsed_ms) {
  l = lay(l);
  if ((unsigned)k >= KR_DEMO_NCLASS || !l->period_ms[k]) return 0;
  if (!l->poisson) return (elapsed_ms + phase_ms(l, seed, k, page)) / l->period_ms[k];
  /* Changes until elapsed_ms: about elapsed / mean steps (a day at the
   * shortest mean, 5 s, is 17,280). */
  uint64_t v = 0, t = 0;
  for (;;) {
    t += gap_ms(seed, k, page, v, l->period_ms[k]);
    if (t > elapsed_ms) return v;
    v++;
  }
}

uint64_t kr_demo_age0_ms(const kr_demo_layout_t *l, uint64_t seed, kr_demo_class_t k,
                         unsigned page) {
  l = lay(l);
  if ((unsigned)k >= KR_DEMO_NCLASS) return 0;
  if (!l->period_ms[k]) { /* a day to a year, log-uniform: an archive's dates */
    double u = (double)(hash4(seed, (uint64_t)k, page, 0xa9e) >> 11) * 0x1p-53;
    return (uint64_t)(86400000.0 * exp(u * log(365.0)));
  }
  if (!l->poisson) return phase_ms(l, seed, k, page);
  /* a Poisson process seen at a fixed time: the time since its last change
   * is exponential with the mean (memoryless), drawn from a stream apart
   * from the changes' own */
  return gap_ms(seed ^ 0xbb67ae8584caa73bull, k, page, 0, l->period_ms[k]) - 1;
}

uint64_t kr_demo_born_ms(const kr_demo_layout_t *l, uint64_t seed, kr_demo_class_t k,
                         unsigned page, uint64_t v) {
  l = lay(l);
  if (!v) return 0;
  if ((unsigned)k >= KR_DEMO_NCLASS || !l->period_ms[k]) return UINT64_MAX;
  if (!l->poisson) return v * l->period_ms[k] - phase_ms(l, seed, k, page);
  uint64_t t = 0;
  for (uint64_t i = 0; i < v; i++) t += gap_ms(seed, k, page, i, l->period_ms[k]);
  return t;
}

/* ---- content ----------------------------------------------------------------------------- */

static const char *const words[] = {
    "tern",    "arctic",  "revisit", "harbour", "tide",    "north",   "wing",    "colony",
    "shore",   "island",  "summer",  "winter",  "flight",  "return",  "feather", "wave",
    "archive", "record",  "change",  "version", "page",    "crawler", "frontier", "wait",
    "interval", "digest", "link",    "queue",   "host",    "politeness", "fresh", "stale",
    "morning", "evening", "news",    "report",  "weather", "market",  "harvest", "river",
    "stone",   "light",   "season",  "journey", "compass", "map",     "signal",  "lantern",
};

/* n words from a stream seeded by h, in sentences. */
static int filler(kr_buf_t *b, uint64_t h, unsigned n) {
  int rc = 0;
  for (unsigned i = 0; i < n && !rc; i++) {
    h = mix(h);
    const char *w = words[h % ARRAY_SIZE(words)];
    int cap = i % 12 == 0;
    int stop = i % 12 == 11 || i + 1 == n;
    rc = kr_buf_printf(b, "%c%s%s%s", cap ? (char)(w[0] - 'a' + 'A') : w[0], w + 1,
                       stop ? "." : "", i + 1 == n ? "" : (i % 48 == 47 ? "\n" : " "));
  }
  return rc;
}

static void fmt_iso_ms(int64_t ms, char out[32]) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

/* A 1x1 GIF in the page's colour, with a comment block of words so the
 * image is big enough for a saved download to count. */
static int gif(kr_buf_t *b, uint64_t h) {
  static const unsigned char head[] = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0};
  static const unsigned char tail[] = {0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, /* image descriptor */
                                       0x02, 0x02, 0x44, 0x01, 0x00,    /* LZW: clear, 0, end */
                                       0x3b};
  unsigned char pal[6] = {(unsigned char)h, (unsigned char)(h >> 8), (unsigned char)(h >> 16),
                          0, 0, 0};
  kr_buf_t text;
  kr_buf_init(&text, 8192);
  int rc = filler(&text, h, 300);
  if (!rc) rc = kr_buf_append(b, head, sizeof head);
  if (!rc) rc = kr_buf_append(b, pal, sizeof pal);
  if (!rc) rc = kr_buf_append(b, "\x21\xfe", 2); /* comment extension */
  for (size_t off = 0; !rc && off < text.len; off += 255) {
    unsigned char n = (unsigned char)KR_MIN((size_t)255, text.len - off);
    rc = kr_buf_append(b, &n, 1);
    if (!rc) rc = kr_buf_append(b, text.data + off, n);
  }
  if (!rc) rc = kr_buf_append(b, "", 1); /* block terminator */
  if (!rc) rc = kr_buf_append(b, tail, sizeof tail);
  kr_buf_free(&text);
  return rc;
}

static const unsigned filler_words[KR_DEMO_NCLASS] = {
    [KR_DEMO_HOME] = 40,     [KR_DEMO_NEWS] = 200,  [KR_DEMO_SECTION] = 500,
    [KR_DEMO_ARTICLE] = 600, [KR_DEMO_ARCHIVE] = 900, [KR_DEMO_CLOCK] = 200,
    [KR_DEMO_LIAR] = 200,
};

static int add_link(kr_buf_t *b, kr_demo_class_t k, unsigned page) {
  if (k == KR_DEMO_HOME) return kr_buf_printf(b, "<a href=\"/\">home</a>\n");
  return kr_buf_printf(b, "<a href=\"%s%u\">%s %u</a>\n", prefixes[k], page, classes[k].name,
                       page);
}

static int html(const kr_demo_params_t *p, const kr_demo_req_t *rq, kr_demo_class_t k,
                unsigned page, uint64_t version, kr_buf_t *b) {
  const kr_demo_layout_t *l = lay(p->layout);
  const kr_demo_class_info_t *ci = &classes[k];
  const unsigned *n = l->pages;
  char about[160];
  kr_demo_about(l, k, about, sizeof about);
  int rc = kr_buf_printf(b,
                         "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                         "<title>kria demo: %s %u</title></head>\n<body>\n<h1>%s %u</h1>\n"
                         "<p class=\"about\">%s</p>\n<p class=\"version\">version %" PRIu64
                         "</p>\n",
                         ci->name, page, ci->name, page, about, version);
  if (!rc && k == KR_DEMO_CLOCK) {
    char when[32];
    fmt_iso_ms(rq->now_ms, when);
    rc = kr_buf_printf(b, "<div class=\"clock\">served %s, request %" PRIu64 "</div>\n", when,
                       rq->request_no);
  }
  if (!rc) rc = kr_buf_append_str(b, "<p>");
  if (!rc) rc = filler(b, hash4(p->seed, (uint64_t)k, page, version), filler_words[k]);
  if (!rc) rc = kr_buf_append_str(b, "</p>\n<nav>\n");
  switch (k) {
  case KR_DEMO_HOME:
    for (int j = KR_DEMO_NEWS; j < KR_DEMO_NCLASS && !rc; j++)
      for (unsigned i = 0; i < n[j] && !rc; i++) {
        if (j == KR_DEMO_IMAGE)
          rc = kr_buf_printf(b, "<img src=\"/img/%u.gif\" alt=\"\">\n", i);
        else if (j == KR_DEMO_LIAR)
          rc = kr_buf_printf(b, "<a href=\"http://localhost:%u/liar/%u\">liar %u</a>\n",
                             (unsigned)p->port, i, i);
        else
          rc = add_link(b, (kr_demo_class_t)j, i);
      }
    break;
  case KR_DEMO_NEWS:
    rc = add_link(b, KR_DEMO_HOME, 0);
    if (!rc) rc = add_link(b, KR_DEMO_NEWS, (page + 1) % n[k]);
    if (!rc && n[KR_DEMO_SECTION])
      rc = add_link(b, KR_DEMO_SECTION, page % n[KR_DEMO_SECTION]);
    break;
  case KR_DEMO_SECTION:
    rc = add_link(b, KR_DEMO_HOME, 0);
    for (unsigned i = 0; i < n[KR_DEMO_NEWS] && !rc; i++) rc = add_link(b, KR_DEMO_NEWS, i);
    break;
  case KR_DEMO_ARTICLE:
    rc = add_link(b, KR_DEMO_HOME, 0);
    if (!rc) rc = add_link(b, KR_DEMO_ARTICLE, (page + 1) % n[k]);
    if (!rc && n[KR_DEMO_ARCHIVE])
      rc = add_link(b, KR_DEMO_ARCHIVE, page % n[KR_DEMO_ARCHIVE]);
    break;
  case KR_DEMO_ARCHIVE:
    rc = add_link(b, KR_DEMO_HOME, 0);
    if (!rc) rc = add_link(b, KR_DEMO_ARCHIVE, (page + 1) % n[k]);
    if (!rc && n[KR_DEMO_IMAGE])
      rc = kr_buf_printf(b, "<img src=\"/img/%u.gif\" alt=\"\">\n", page % n[KR_DEMO_IMAGE]);
    break;
  case KR_DEMO_LIAR:
    rc = add_link(b, KR_DEMO_LIAR, (page + 1) % n[k]);
    break;
  default:
    rc = add_link(b, KR_DEMO_HOME, 0);
    break;
  }
  if (!rc) rc = kr_buf_append_str(b, "</nav>\n</body></html>\n");
  return rc;
}

/* ---- rendering --------------------------------------------------------------------------- */

/* Does an If-None-Match list hold etag (weak comparison) or "*"? */
static int inm_matches(kr_slice_t v, const char *etag) {
  size_t en = strlen(etag);
  size_t i = 0;
  while (i < v.n) {
    while (i < v.n && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ',')) i++;
    if (i >= v.n) break;
    if (v.p[i] == '*') return 1;
    if (i + 2 <= v.n && v.p[i] == 'W' && v.p[i + 1] == '/') i += 2;
    size_t s = i;
    if (i < v.n && v.p[i] == '"') {
      i++;
      while (i < v.n && v.p[i] != '"') i++;
      if (i < v.n) i++;
    } else {
      while (i < v.n && v.p[i] != ',') i++;
    }
    if (i - s == en && !memcmp(v.p + s, etag, en)) return 1;
  }
  return 0;
}

/* 304 per RFC 9110 13.2.2: If-None-Match decides when present, else
 * If-Modified-Since against lm (epoch s, 0 none). */
static int not_modified(const kr_demo_req_t *rq, const char *etag, int64_t lm) {
  if (rq->if_none_match.p) return etag[0] && inm_matches(rq->if_none_match, etag);
  if (!rq->if_modified_since.p || !lm) return 0;
  int64_t ims;
  if (kr_validators_date_parse(rq->if_modified_since.p, rq->if_modified_since.n, &ims)) return 0;
  return lm <= ims;
}

static int host_is_localhost(kr_slice_t h) {
  size_t n = h.n;
  const char *colon = memchr(h.p ? h.p : "", ':', h.n);
  if (colon) n = (size_t)(colon - h.p);
  return n == 9 && !strncasecmp(h.p, "localhost", 9);
}

int kr_demo_render(const kr_demo_params_t *p, const kr_demo_req_t *rq, kr_demo_resp_t *out,
                   kr_buf_t *b) {
  memset(out, 0, sizeof *out);
  out->cls = -1;
  out->status = 404;
  out->content_type = "text/plain; charset=utf-8";
  int liar_host = host_is_localhost(rq->host);
  kr_slice_t path = rq->path;
  const char *q = memchr(path.p ? path.p : "", '?', path.n);
  size_t pn = q ? (size_t)(q - path.p) : path.n;
  if (pn == 11 && !memcmp(path.p, "/robots.txt", 11)) {
    out->status = 200;
    return kr_buf_append_str(b, "User-agent: *\nDisallow:\n");
  }
  unsigned page;
  const kr_demo_layout_t *l = lay(p->layout);
  int k = kr_demo_classify(l, path.p ? path.p : "", path.n, &page);
  if (k < 0 || classes[k].liar_host != liar_host) return kr_buf_append_str(b, "not found\n");
  uint64_t version = kr_demo_version(l, p->seed, (kr_demo_class_t)k, page, rq->elapsed_ms);
  out->cls = k;
  out->page = page;
  out->version = version;
  out->status = 200;
  out->content_type = k == KR_DEMO_IMAGE ? "image/gif" : "text/html; charset=utf-8";

  /* Validators: honest ones follow the version; the liar's never move. */
  int64_t lm = 0;
  int honours = 0;
  int64_t old = p->start_epoch_s - 86400; /* the liar's: "yesterday", for ever */
  /* The first version of a page is as old as the page's changes make it:
   * it appeared before the start, as on a live site (where a page that
   * changes every few seconds never shows a day-old date, and the pages
   * that never change were made on many days, not all on one). */
  uint64_t age0 = kr_demo_age0_ms(l, p->seed, (kr_demo_class_t)k, page);
  int64_t first = p->start_epoch_s - (int64_t)((age0 + 999) / 1000);
  switch (k) {
  case KR_DEMO_HOME:
  case KR_DEMO_NEWS:
  case KR_DEMO_ARTICLE:
  case KR_DEMO_ARCHIVE:
  case KR_DEMO_IMAGE: {
    snprintf(out->etag, sizeof out->etag, "\"%016" PRIx64 "\"",
             hash4(p->seed, (uint64_t)k, page, version));
    if (version > 0)
      lm = p->start_epoch_s +
           (int64_t)(kr_demo_born_ms(l, p->seed, (kr_demo_class_t)k, page, version) / 1000);
    else
      lm = first;
    honours = k != KR_DEMO_IMAGE;
    break;
  }
  case KR_DEMO_LIAR:
    snprintf(out->etag, sizeof out->etag, "\"liar-%016" PRIx64 "\"",
             hash4(p->seed, (uint64_t)k, page, 0));
    lm = old;
    honours = 1;
    break;
  default:
    break;
  }
  if (lm) kr_validators_date_format(lm, out->last_modified);
  if (honours && not_modified(rq, out->etag, lm)) {
    out->status = 304;
    return 0;
  }
  if (k == KR_DEMO_IMAGE) return gif(b, hash4(p->seed, (uint64_t)k, page, 0));
  return html(p, rq, (kr_demo_class_t)k, page, version, b);
}

/* ---- connections ------------------------------------------------------------------------- */

enum { H_OTHER, H_HOST, H_INM, H_IMS };

typedef struct conn {
  uv_tcp_t tcp;
  uv_timer_t timer;             /* idle, then linger */
  uv_shutdown_t shut;
  kr_demo_site_t *site;
  struct conn *next, *prev;
  llhttp_t parser;
  int handles;                  /* open handles; freed at 0 */
  int closing;
  int close_after;              /* no more requests: close once written */
  int draining;                 /* written and shut down: reading to EOF */
  size_t drained;
  int reading;
  size_t head_bytes;            /* of the request being read */
  size_t read_bytes;            /* raw bytes of that head */
  int headers_done;
  size_t pending;               /* response bytes queued in uv_write */
  int field;                    /* header whose value is arriving */
  int error;                    /* status to answer, then close */
  kr_buf_t url, fname, host, inm, ims;
  int has_inm, has_ims, has_host;
} conn_t;

typedef struct wreq {
  uv_write_t req;
  conn_t *c;
  size_t len;
  char data[];
} wreq_t;

/* The account of one page's versions (kr_demo_site_truth_write). */
typedef struct truth_page {
  uint32_t *served;             /* per version: full 200 bodies written */
  uint32_t *n304;               /* per version: 304s answered while it was live */
  size_t cap;                   /* versions the arrays hold */
} truth_page_t;

#define TRUTH_MAX_VERSIONS (1u << 20) /* per page; later versions go uncounted */

struct kr_demo_site {
  uv_loop_t *loop;
  uv_tcp_t listener;
  int listener_open;
  kr_clock_t own_clock;
  const kr_clock_t *clock;      /* own_clock, or the caller's */
  uint64_t start_us;
  kr_demo_layout_t layout;
  kr_demo_params_t params;      /* .layout points at layout */
  truth_page_t *truth;          /* layout.total pages, or NULL: no account */
  conn_t *conns;
  size_t nconns;
  int closing;
  kr_demo_site_stats_t st;
  kr_buf_t body;                /* rendering scratch */
  char rbuf[16384];
};

static void site_maybe_free(kr_demo_site_t *s) {
  if (!s->closing || s->listener_open || s->conns) return;
  kr_buf_free(&s->body);
  if (s->truth)
    for (unsigned i = 0; i < s->layout.total; i++) {
      free(s->truth[i].served);
      free(s->truth[i].n304);
    }
  free(s->truth);
  free(s);
}

static void conn_on_close(uv_handle_t *h) {
  conn_t *c = h->data;
  if (--c->handles) return;
  kr_demo_site_t *s = c->site;
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->nconns--;
  kr_buf_free(&c->url);
  kr_buf_free(&c->fname);
  kr_buf_free(&c->host);
  kr_buf_free(&c->inm);
  kr_buf_free(&c->ims);
  free(c);
  site_maybe_free(s);
}

static void conn_close(conn_t *c) {
  if (c->closing) return;
  c->closing = 1;
  uv_close((uv_handle_t *)&c->tcp, conn_on_close);
  uv_close((uv_handle_t *)&c->timer, conn_on_close);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  conn_t *c = h->data;
  (void)hint;
  *buf = uv_buf_init(c->site->rbuf, sizeof c->site->rbuf);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);
static void on_idle_timeout(uv_timer_t *t);

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)req;
  (void)status; /* the linger timer or EOF closes the connection */
}

/* Everything is written and nothing more will be answered: half-close
 * and read what the client still sends for a moment before closing, so
 * unread bytes never make the kernel reset the connection while the
 * client is still reading the answer. */
static void finish(conn_t *c) {
  if (c->closing || c->draining) return;
  c->draining = 1;
  if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
    conn_close(c);
    return;
  }
  uv_timer_start(&c->timer, on_idle_timeout, LINGER_MS, 0);
  if (!c->reading && uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
    c->reading = 1;
}

static void read_resume(conn_t *c) {
  if (c->reading || c->closing || c->close_after) return;
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) c->reading = 1;
  else conn_close(c);
}

static void read_pause(conn_t *c) {
  if (!c->reading) return;
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = 0;
}

static void on_written(uv_write_t *req, int status) {
  wreq_t *w = container_of(req, wreq_t, req);
  conn_t *c = w->c;
  c->pending -= w->len;
  free(w);
  if (c->closing) return;
  if (status < 0) {
    conn_close(c);
    return;
  }
  if (c->close_after) {
    if (!c->pending) finish(c);
    return;
  }
  if (c->pending < WRITE_HIGH / 2) read_resume(c);
}

static const char *reason(int status) {
  switch (status) {
  case 200: return "OK";
  case 304: return "Not Modified";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 413: return "Content Too Large";
  case 431: return "Request Header Fields Too Large";
  default: return "Error";
  }
}

/* Queue one response: the head, then body (none for HEAD and 304). */
static void send_response(conn_t *c, int status, const kr_demo_resp_t *r, const char *body,
                          size_t blen, int head_only) {
  kr_demo_site_t *s = c->site;
  char date[KR_HTTP_DATE_SIZE];
  kr_validators_date_format((int64_t)(kr_clock_now_ms(s->clock) / 1000), date);
  char head[1024];
  int hn = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nServer: kria-demo\r\nDate: %s\r\n",
                    status, reason(status), date);
  if (status != 304)
    hn += snprintf(head + hn, sizeof head - (size_t)hn, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                   r && r->content_type ? r->content_type : "text/plain; charset=utf-8", blen);
  if (r && r->etag[0]) hn += snprintf(head + hn, sizeof head - (size_t)hn, "ETag: %s\r\n", r->etag);
  if (r && r->last_modified[0])
    hn += snprintf(head + hn, sizeof head - (size_t)hn, "Last-Modified: %s\r\n", r->last_modified);
  if (status == 405) hn += snprintf(head + hn, sizeof head - (size_t)hn, "Allow: GET, HEAD\r\n");
  hn += snprintf(head + hn, sizeof head - (size_t)hn, "Connection: %s\r\n\r\n",
                 c->close_after ? "close" : "keep-alive");
  if (status == 304 || head_only) blen = 0;
  size_t len = (size_t)hn + blen;
  wreq_t *w = kr_xmalloc(sizeof *w + len);
  w->c = c;
  w->len = len;
  memcpy(w->data, head, (size_t)hn);
  if (blen) memcpy(w->data + hn, body, blen);
  uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
  c->pending += len;
  s->st.bytes += len;
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0) {
    c->pending -= len;
    free(w);
    conn_close(c);
    return;
  }
  if (c->pending > WRITE_HIGH) read_pause(c);
}

static void send_error(conn_t *c, int status) {
  c->close_after = 1;
  const char *msg = reason(status);
  char body[128];
  int n = snprintf(body, sizeof body, "%d %s\n", status, msg);
  send_response(c, status, NULL, body, (size_t)n, 0);
  read_pause(c);
}

static kr_slice_t buf_slice(const kr_buf_t *b, int present) {
  return present ? kr_slice(b->data ? b->data : "", b->len) : kr_slice(NULL, 0);
}

/* Index of page `page` of class k among all pages of the layout. */
static unsigned page_index(const kr_demo_layout_t *l, int k, unsigned page) {
  unsigned i = 0;
  for (int j = 0; j < k; j++) i += l->pages[j];
  return i + page;
}

/* Count an answer of a page's version: a full body (200) or a 304. */
static void truth_note(kr_demo_site_t *s, const kr_demo_resp_t *r) {
  if (r->status != 200 && r->status != 304) return;
  if (r->version >= TRUTH_MAX_VERSIONS) return;
  truth_page_t *t = &s->truth[page_index(&s->layout, r->cls, r->page)];
  size_t v = (size_t)r->version;
  if (v >= t->cap) {
    size_t ncap = t->cap ? t->cap : 16;
    while (ncap <= v) ncap *= 2;
    t->served = kr_xrealloc(t->served, ncap * sizeof *t->served);
    t->n304 = kr_xrealloc(t->n304, ncap * sizeof *t->n304);
    memset(t->served + t->cap, 0, (ncap - t->cap) * sizeof *t->served);
    memset(t->n304 + t->cap, 0, (ncap - t->cap) * sizeof *t->n304);
    t->cap = ncap;
  }
  if (r->status == 200) t->served[v]++;
  else t->n304[v]++;
}

/* A complete request: answer it. */
static void answer(conn_t *c) {
  kr_demo_site_t *s = c->site;
  int m = llhttp_get_method(&c->parser);
  if (!llhttp_should_keep_alive(&c->parser)) c->close_after = 1;
  if (m != HTTP_GET && m != HTTP_HEAD) {
    send_error(c, 405);
    return;
  }
  if (!c->url.len || c->url.data[0] != '/') {
    send_error(c, 400);
    return;
  }
  kr_demo_req_t rq = {
      .head = m == HTTP_HEAD,
      .path = kr_slice(c->url.data, c->url.len),
      .host = buf_slice(&c->host, c->has_host),
      .if_none_match = buf_slice(&c->inm, c->has_inm),
      .if_modified_since = buf_slice(&c->ims, c->has_ims),
      .elapsed_ms = kr_demo_site_elapsed_ms(s),
      .now_ms = (int64_t)kr_clock_now_ms(s->clock),
      .request_no = s->st.requests + 1,
  };
  kr_demo_resp_t r;
  kr_buf_reset(&s->body);
  if (kr_demo_render(&s->params, &rq, &r, &s->body)) {
    send_error(c, 500);
    return;
  }
  s->st.requests++;
  if (r.status == 304) s->st.not_modified++;
  if (r.cls >= 0) {
    s->st.by_class[r.cls]++;
    if (r.status == 304) s->st.by_class_304[r.cls]++;
    if (s->truth && (r.status == 304 || !rq.head)) truth_note(s, &r);
  }
  send_response(c, r.status, &r, s->body.data, s->body.len, rq.head);
}

static conn_t *cl(llhttp_t *p) { return p->data; }

static int head_add(conn_t *c, size_t n) {
  c->head_bytes += n;
  if (c->head_bytes > HEAD_MAX) return c->error = 431, -1;
  return 0;
}

static int on_message_begin(llhttp_t *p) {
  conn_t *c = cl(p);
  c->head_bytes = c->read_bytes = 0;
  c->headers_done = 0;
  c->has_inm = c->has_ims = c->has_host = 0;
  kr_buf_reset(&c->url);
  kr_buf_reset(&c->fname);
  kr_buf_reset(&c->host);
  kr_buf_reset(&c->inm);
  kr_buf_reset(&c->ims);
  return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n) {
  conn_t *c = cl(p);
  if (head_add(c, n) || kr_buf_append(&c->url, at, n)) return c->error = 431, -1;
  return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  conn_t *c = cl(p);
  if (head_add(c, n)) return -1;
  if (kr_buf_append(&c->fname, at, n)) c->fname.len = FIELD_MAX; /* long: none of ours */
  return 0;
}

static int on_header_field_complete(llhttp_t *p) {
  conn_t *c = cl(p);
  kr_slice_t f = kr_slice(c->fname.data ? c->fname.data : "", c->fname.len);
  c->field = H_OTHER;
  if (head_add(c, 4)) return -1;
  if (kr_slice_case_eq(f, KR_SLICE_LIT("host"))) c->field = H_HOST, c->has_host = 1;
  else if (kr_slice_case_eq(f, KR_SLICE_LIT("if-none-match"))) c->field = H_INM, c->has_inm = 1;
  else if (kr_slice_case_eq(f, KR_SLICE_LIT("if-modified-since")))
    c->field = H_IMS, c->has_ims = 1;
  kr_buf_reset(&c->fname);
  return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  conn_t *c = cl(p);
  if (head_add(c, n)) return -1;
  kr_buf_t *b = c->field == H_HOST ? &c->host : c->field == H_INM ? &c->inm
              : c->field == H_IMS ? &c->ims : NULL;
  /* A repeated header appends (a list); too long is refused. */
  if (b && b->len && kr_buf_append(b, ",", 1)) return c->error = 431, -1;
  if (b && kr_buf_append(b, at, n)) return c->error = 431, -1;
  return 0;
}

static int on_headers_complete(llhttp_t *p) {
  conn_t *c = cl(p);
  c->headers_done = 1;
  if (((p->flags & F_CONTENT_LENGTH) && p->content_length > 0) || (p->flags & F_CHUNKED))
    return c->error = 413, -1; /* the demo takes no bodies */
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  conn_t *c = cl(p);
  answer(c);
  /* After a Connection: close request nothing more is parsed. */
  return c->close_after || c->closing ? HPE_PAUSED : 0;
}

static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

static void on_idle_timeout(uv_timer_t *t) { conn_close(t->data); }

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
  conn_t *c = st->data;
  if (n == 0 || c->closing) return;
  if (c->draining) {
    c->drained += n > 0 ? (size_t)n : 0;
    if (n < 0 || c->drained > DRAIN_MAX) conn_close(c);
    return;
  }
  if (n < 0) {
    /* EOF: answers already queued still go out; anything else: gone. */
    read_pause(c);
    c->close_after = 1;
    if (n != UV_EOF || !c->pending) conn_close(c);
    return;
  }
  uv_timer_start(&c->timer, on_idle_timeout, IDLE_MS, 0);
  if (c->close_after) return; /* a request said close: ignore the rest */
  llhttp_errno_t e = llhttp_execute(&c->parser, buf->base, (size_t)n);
  if (c->closing) return;
  if (e == HPE_PAUSED) {
    read_pause(c);
    if (!c->pending) finish(c);
    return;
  }
  if (e != HPE_OK) {
    send_error(c, c->error ? c->error : 400);
    return;
  }
  if (!c->headers_done) {
    c->read_bytes += (size_t)n;
    if (c->read_bytes > HEAD_MAX + HEAD_SLACK) send_error(c, 431);
  }
}

/* ---- the listener ------------------------------------------------------------------------ */

static void on_connection(uv_stream_t *ls, int status) {
  kr_demo_site_t *s = ls->data;
  if (status < 0 || s->closing) return;
  conn_t *c = kr_xcalloc(1, sizeof *c);
  c->site = s;
  uv_tcp_init(s->loop, &c->tcp);
  uv_timer_init(s->loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->handles = 2;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  kr_buf_init(&c->url, HEAD_MAX);
  kr_buf_init(&c->fname, FIELD_MAX);
  kr_buf_init(&c->host, HOST_MAX);
  kr_buf_init(&c->inm, VAL_MAX);
  kr_buf_init(&c->ims, VAL_MAX);
  if (uv_accept(ls, (uv_stream_t *)&c->tcp) < 0 || s->nconns > MAX_CONNS) {
    conn_close(c);
    return;
  }
  s->st.connections++;
  llhttp_init(&c->parser, HTTP_REQUEST, &settings);
  c->parser.data = c;
  uv_tcp_nodelay(&c->tcp, 1);
  uv_timer_start(&c->timer, on_idle_timeout, IDLE_MS, 0);
  read_resume(c);
}

int kr_demo_site_bind(int *fd, uint16_t *port) {
  *fd = -1;
  *port = 0;
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return KR_EIO;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &al)) {
    close(s);
    return KR_EIO;
  }
  *fd = s;
  *port = ntohs(a.sin_port);
  return 0;
}

static void on_listener_close(uv_handle_t *h) {
  kr_demo_site_t *s = h->data;
  s->listener_open = 0;
  site_maybe_free(s);
}

int kr_demo_site_start(uv_loop_t *loop, int fd, const kr_demo_site_opts_t *o,
                       kr_demo_site_t **out) {
  *out = NULL;
  kr_demo_site_t *s = kr_xcalloc(1, sizeof *s);
  s->loop = loop;
  kr_clock_init_real(&s->own_clock);
  s->clock = o->clock ? o->clock : &s->own_clock;
  s->start_us = kr_clock_mono_us(s->clock);
  s->layout = *lay(o->layout);
  s->params.layout = &s->layout;
  s->params.seed = o->seed;
  s->params.start_epoch_s = (int64_t)(kr_clock_now_ms(s->clock) / 1000);
  if (o->truth) s->truth = kr_xcalloc(s->layout.total, sizeof *s->truth);
  kr_buf_init(&s->body, BODY_MAX);
  uv_tcp_init(loop, &s->listener);
  s->listener.data = s;
  s->listener_open = 1;
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  int rc = 0;
  if (getsockname(fd, (struct sockaddr *)&a, &al) || a.sin_family != AF_INET) rc = UV_EINVAL;
  if (!rc) rc = uv_tcp_open(&s->listener, fd);
  if (rc) close(fd);
  if (!rc) rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
  if (rc) {
    kr_demo_site_close(s);
    return KR_EIO;
  }
  s->params.port = ntohs(a.sin_port);
  *out = s;
  return 0;
}

uint64_t kr_demo_site_elapsed_ms(const kr_demo_site_t *s) {
  return (kr_clock_mono_us(s->clock) - s->start_us) / 1000;
}

void kr_demo_site_get_stats(const kr_demo_site_t *s, kr_demo_site_stats_t *out) {
  *out = s->st;
}

void kr_demo_site_close(kr_demo_site_t *s) {
  if (s->closing) return;
  s->closing = 1;
  uv_close((uv_handle_t *)&s->listener, on_listener_close);
  for (conn_t *c = s->conns; c; c = c->next) conn_close(c);
}

/* ---- the ground truth -------------------------------------------------------------------- */

/* The "sha1:" label of version v's body as a GET gets it, into label;
 * "-" for the clock pages (every answer differs). */
static int version_digest(const kr_demo_site_t *s, int k, unsigned page, uint64_t v,
                          kr_buf_t *b, char label[KR_SHA1_LABEL_SIZE]) {
  if (k == KR_DEMO_CLOCK) {
    snprintf(label, KR_SHA1_LABEL_SIZE, "-");
    return 0;
  }
  kr_demo_req_t rq = {.path = KR_SLICE_LIT("/")}; /* read by the clock section only */
  kr_buf_reset(b);
  int rc = k == KR_DEMO_IMAGE ? gif(b, hash4(s->params.seed, (uint64_t)k, page, 0))
                              : html(&s->params, &rq, (kr_demo_class_t)k, page, v, b);
  if (rc) return rc;
  uint8_t d[KR_SHA1_LEN];
  if (kr_sha1(b->data, b->len, d)) return KR_EIO;
  kr_sha1_label(d, label);
  return 0;
}

int kr_demo_site_truth_write(const kr_demo_site_t *s, FILE *f) {
  if (!s->truth) return KR_EINVAL;
  const kr_demo_layout_t *l = &s->layout;
  uint64_t el = kr_demo_site_elapsed_ms(s);
  fprintf(f, "# kria demo ground truth: seed %" PRIu64 ", %u pages (%s), elapsed_ms %" PRIu64
          ", port %u\n",
          s->params.seed, l->total, l->poisson ? "grown, Poisson changes" : "default, periodic",
          el, (unsigned)s->params.port);
  fprintf(f, "# url\tclass\tpage\tmean_ms\tversion\tborn_ms\tsha1\tserved\tn304\n");
  kr_buf_t b;
  kr_buf_init(&b, BODY_MAX);
  int rc = 0;
  unsigned idx = 0;
  for (int k = 0; k < KR_DEMO_NCLASS && !rc; k++)
    for (unsigned p = 0; p < l->pages[k] && !rc; p++, idx++) {
      const truth_page_t *t = &s->truth[idx];
      char url[96];
      if (k == KR_DEMO_HOME) snprintf(url, sizeof url, "http://127.0.0.1:%u/",
                                      (unsigned)s->params.port);
      else
        snprintf(url, sizeof url, "http://%s:%u%s%u%s", classes[k].liar_host ? "localhost"
                                                                              : "127.0.0.1",
                 (unsigned)s->params.port, prefixes[k], p, k == KR_DEMO_IMAGE ? ".gif" : "");
      uint64_t last = kr_demo_version(l, s->params.seed, (kr_demo_class_t)k, p, el);
      uint64_t born = 0; /* version v's, summed as v grows (born_ms is O(v)) */
      for (uint64_t v = 0; v <= last && !rc; v++) {
        char label[KR_SHA1_LABEL_SIZE];
        rc = version_digest(s, k, p, v, &b, label);
        if (rc) break;
        if (v && l->poisson) born += gap_ms(s->params.seed, (kr_demo_class_t)k, p, v - 1,
                                            l->period_ms[k]);
        else if (v) born = kr_demo_born_ms(l, s->params.seed, (kr_demo_class_t)k, p, v);
        fprintf(f, "%s\t%s\t%u\t%u\t%" PRIu64 "\t%" PRIu64 "\t%s\t%u\t%u\n", url,
                classes[k].name, p, l->period_ms[k], v, born, label,
                v < t->cap ? t->served[v] : 0, v < t->cap ? t->n304[v] : 0);
      }
    }
  kr_buf_free(&b);
  if (!rc && (fflush(f) || ferror(f))) rc = KR_EIO;
  return rc;
}
