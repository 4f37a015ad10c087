/*
 * The revisit simulator (see sim.h for the model, the trace format and the
 * metrics). A world is the ground truth: URIs with change processes,
 * validator behaviour and sizes, built from a trace or synthetically, and
 * read-only during runs. A run opens a real frontier in a temporary state
 * directory on a virtual clock, adds every URI, and lets the timer wheel
 * drive it: the frontier's on_ready pulls URIs, each issued URI becomes a
 * simulated fetch whose completion is one more wheel entry at issue time +
 * a drawn duration, and the completion plays the server (status, ETag,
 * Last-Modified, body) and the crawler's processors (conditional request,
 * mid-fetch check with validator trust, change digest, wait policy)
 * before handing the outcome to kr_frontier_finished(). Scoring happens
 * on the side from the ground truth. Sections: helpers and random numbers,
 * worlds (common, synthetic, mix, trace), change processes, runs (hosts,
 * metrics, fetches, the loop), names.
 */
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "frontier.h"
#include "internal.h"
#include "kria/estimate.h"
#include "kria/fp.h"
#include "kria/url.h"
#include "kria/wait.h"
#include "log.h"
#include "timer.h"

#define YEAR_MS (365 * INT64_C(86400000))
#define MIN_PERIOD_MS 1000          /* Poisson and regular periods: >= 1 s */
#define MAX_PERIOD_MS (100 * YEAR_MS)
#define MAX_SIZE (UINT64_C(1) << 30)
#define DEFAULT_SIZE 10240
#define MAX_CHANGES 1e9             /* expected changes of a world in one run */
#define CHUNK_MS 10000              /* virtual time between kr_frontier_turn calls */
#define ETAG_LEN 18                 /* "%016llx" quoted */

/* ---- helpers and random numbers ------------------------------------------- */

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int errf(char *err, size_t errlen, int rc, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* splitmix64: small state, good enough for simulation, and a URI's stream
 * depends only on (seed, index). */
static uint64_t rnd(uint64_t *s) { return mix64(*s += UINT64_C(0x9e3779b97f4a7c15)); }
static double unif(uint64_t *s) { return ((double)(rnd(s) >> 11) + 0.5) * 0x1p-53; }
static double gauss(uint64_t *s) {
  return sqrt(-2.0 * log(unif(s))) * cos(2 * M_PI * unif(s));
}
/* Exponential with mean 1/rate (changes/s), in whole ms >= 1, bounded. */
static int64_t exp_ms(uint64_t *s, double rate) {
  double ms = -log(unif(s)) / rate * 1000.0;
  if (!(ms < 1e15)) return INT64_C(1000000000000000);
  return ms < 1 ? 1 : (int64_t)ceil(ms);
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* ---- worlds ------------------------------------------------------------------ */

typedef struct wuri {
  uint64_t url_off;    /* into pool, NUL-terminated */
  uint32_t url_len;
  uint32_t ctype;      /* index into types */
  uint8_t change;      /* kr_sim_change_t */
  uint8_t validators;  /* kr_sim_validators_t */
  uint8_t is_volatile;
  double rate;         /* POISSON_RATE */
  int64_t period_ms;   /* EVERY */
  uint64_t at_off;     /* AT: into at[] */
  uint32_t at_n;
  uint64_t size;
  uint64_t fp;
} wuri_t;

struct kr_sim_world {
  wuri_t *u;
  size_t n, cap;
  char *pool;
  size_t pool_len, pool_cap;
  char **types;
  size_t ntypes;
  int64_t *at;          /* change offsets from the start (ms) */
  size_t nat, at_cap;
  uint64_t seed;
  uint32_t *map;        /* fp -> index + 1, open addressing */
  size_t map_cap;
};

static kr_sim_world_t *world_new(uint64_t seed) {
  kr_sim_world_t *w = kr_xcalloc(1, sizeof *w);
  w->seed = seed;
  return w;
}

void kr_sim_world_free(kr_sim_world_t *w) {
  if (!w) return;
  for (size_t i = 0; i < w->ntypes; i++) free(w->types[i]);
  free(w->types);
  free(w->u);
  free(w->pool);
  free(w->at);
  free(w->map);
  free(w);
}

size_t kr_sim_world_count(const kr_sim_world_t *w) { return w->n; }

static const char *wurl(const kr_sim_world_t *w, const wuri_t *u) { return w->pool + u->url_off; }

void kr_sim_world_uri(const kr_sim_world_t *w, size_t i, kr_sim_uri_info_t *out) {
  const wuri_t *u = &w->u[i];
  out->url = wurl(w, u);
  out->content_type = w->types[u->ctype];
  out->change = (kr_sim_change_t)u->change;
  out->rate = u->rate;
  out->period_ms = u->period_ms;
  out->at_n = u->at_n;
  out->validators = (kr_sim_validators_t)u->validators;
  out->is_volatile = u->is_volatile;
  out->size = u->size;
}

/* Intern a content type; -1 when there are too many. */
static int type_intern(kr_sim_world_t *w, const char *s, size_t n) {
  for (size_t i = 0; i < w->ntypes; i++)
    if (strlen(w->types[i]) == n && memcmp(w->types[i], s, n) == 0) return (int)i;
  if (w->ntypes >= KR_SIM_MAX_TYPES) return -1;
  if ((w->ntypes & (w->ntypes + 1)) == 0 || w->ntypes == 0)
    w->types = kr_xrealloc(w->types, (w->ntypes * 2 + 2) * sizeof *w->types);
  w->types[w->ntypes] = kr_xstrndup(s, n);
  return (int)w->ntypes++;
}

/* Append a URI (url copied into the pool). */
static wuri_t *world_push(kr_sim_world_t *w, const char *url, size_t len) {
  if (w->n == w->cap) {
    w->cap = w->cap ? w->cap * 2 : 1024;
    w->u = kr_xrealloc(w->u, w->cap * sizeof *w->u);
  }
  if (w->pool_len + len + 1 > w->pool_cap) {
    size_t nc = w->pool_cap ? w->pool_cap : 65536;
    while (nc < w->pool_len + len + 1) nc *= 2;
    w->pool = kr_xrealloc(w->pool, nc);
    w->pool_cap = nc;
  }
  wuri_t *u = &w->u[w->n++];
  memset(u, 0, sizeof *u);
  u->url_off = w->pool_len;
  u->url_len = (uint32_t)len;
  memcpy(w->pool + w->pool_len, url, len);
  w->pool[w->pool_len + len] = 0;
  w->pool_len += len + 1;
  u->fp = kr_fp(url, len);
  u->size = DEFAULT_SIZE;
  return u;
}

static int64_t world_find(const kr_sim_world_t *w, uint64_t fp) {
  if (!w->map_cap) return -1;
  size_t mask = w->map_cap - 1;
  for (size_t j = (size_t)mix64(fp) & mask;; j = (j + 1) & mask) {
    uint32_t v = w->map[j];
    if (!v) return -1;
    if (w->u[v - 1].fp == fp) return (int64_t)v - 1;
  }
}

/* Index every fingerprint; the index of the first URI with the same fp
 * as URI i when there is one (a duplicate), else -1. */
static int64_t world_index_one(kr_sim_world_t *w, size_t i) {
  size_t mask = w->map_cap - 1;
  uint64_t fp = w->u[i].fp;
  for (size_t j = (size_t)mix64(fp) & mask;; j = (j + 1) & mask) {
    uint32_t v = w->map[j];
    if (!v) {
      w->map[j] = (uint32_t)i + 1;
      return -1;
    }
    if (w->u[v - 1].fp == fp) return (int64_t)v - 1;
  }
}

static void world_map_alloc(kr_sim_world_t *w, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  free(w->map);
  w->map = kr_xcalloc(cap, sizeof *w->map);
  w->map_cap = cap;
}

/* ---- synthetic --------------------------------------------------------------- */

void kr_sim_synth_default(kr_sim_synth_t *s) {
  memset(s, 0, sizeof *s);
  s->urls = 1000;
  s->hosts = 10;
  s->seed = 1;
  s->volatile_share = 0.1;
  s->share[KR_SIM_VAL_CORRECT] = 0.7;
  s->share[KR_SIM_VAL_MISSING] = 0.2;
  s->share[KR_SIM_VAL_LYING] = 0.1;
  s->size = DEFAULT_SIZE;
  s->content_type = "text/html";
}

static int dur_parse(const char *s, size_t n, int64_t *ms) {
  if (n == 1 && s[0] == '0') return KR_EINVAL; /* periods are positive */
  return kr_config_parse_duration(s, n, ms);
}

int kr_sim_mix_parse(const char *s, kr_sim_mix_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  size_t len = strlen(s);
  size_t i = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && s[j] != ',') j++;
    const char *p = s + i;
    size_t n = j - i;
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (!n) return errf(err, errlen, KR_EINVAL, "mix: empty component");
    if (out->n >= KR_SIM_MAX_MIX)
      return errf(err, errlen, KR_EINVAL, "mix: more than %u components", KR_SIM_MAX_MIX);
    kr_sim_mix_item_t *it = &out->item[out->n];
    it->weight = 1;
    const char *colon = memchr(p, ':', n);
    if (colon) {
      char num[64];
      size_t wl = (size_t)(colon - p);
      if (wl == 0 || wl >= sizeof num)
        return errf(err, errlen, KR_EINVAL, "mix: bad weight in '%.*s'", (int)n, p);
      memcpy(num, p, wl);
      num[wl] = 0;
      char *end;
      errno = 0;
      double wt = strtod(num, &end);
      if (*end || errno || !(wt > 0) || !isfinite(wt))
        return errf(err, errlen, KR_EINVAL, "mix: bad weight '%s'", num);
      it->weight = wt;
      n -= wl + 1;
      p = colon + 1;
    }
    if (n == 5 && memcmp(p, "never", 5) == 0) {
      it->never = 1;
    } else {
      const char *dots = NULL;
      for (size_t k = 0; k + 1 < n; k++)
        if (p[k] == '.' && p[k + 1] == '.') {
          dots = p + k;
          break;
        }
      int64_t lo, hi;
      if (dots) {
        if (dur_parse(p, (size_t)(dots - p), &lo) || dur_parse(dots + 2, n - (size_t)(dots - p) - 2, &hi))
          return errf(err, errlen, KR_EINVAL, "mix: bad range '%.*s' (want LO..HI, e.g. 1h..30d)",
                      (int)n, p);
      } else {
        if (dur_parse(p, n, &lo))
          return errf(err, errlen, KR_EINVAL,
                      "mix: bad component '%.*s' (want never, a period or LO..HI)", (int)n, p);
        hi = lo;
      }
      if (lo < MIN_PERIOD_MS || hi > MAX_PERIOD_MS || lo > hi)
        return errf(err, errlen, KR_EINVAL,
                    "mix: '%.*s': periods must be within 1s..36500d, low first", (int)n, p);
      it->lo_s = (double)lo / 1000.0;
      it->hi_s = (double)hi / 1000.0;
    }
    out->n++;
    i = j + 1;
  }
  return 0;
}

/* Largest remainder: how many of n items get each of k shares. */
static void apportion(const double *share, int k, uint64_t n, uint64_t *cnt) {
  double tot = 0;
  for (int i = 0; i < k; i++) tot += share[i] > 0 ? share[i] : 0;
  uint64_t given = 0;
  double rem[8] = {0};
  for (int i = 0; i < k; i++) {
    double q = tot > 0 && share[i] > 0 ? (double)n * share[i] / tot : 0;
    cnt[i] = (uint64_t)floor(q);
    rem[i] = q - floor(q);
    given += cnt[i];
  }
  if (tot <= 0) {
    cnt[0] = n;
    return;
  }
  while (given < n) {
    int best = 0;
    for (int i = 1; i < k; i++)
      if (rem[i] > rem[best]) best = i;
    cnt[best]++;
    rem[best] = -1;
    given++;
  }
}

int kr_sim_world_synthetic(const kr_sim_synth_t *s, kr_sim_world_t **out, char *err,
                           size_t errlen) {
  *out = NULL;
  if (s->urls == 0 || s->urls > KR_SIM_MAX_URIS)
    return errf(err, errlen, KR_EINVAL, "--urls must be within 1..%u", KR_SIM_MAX_URIS);
  if (s->hosts == 0 || s->hosts > s->urls)
    return errf(err, errlen, KR_EINVAL, "--hosts must be within 1..urls");
  if (!(s->volatile_share >= 0 && s->volatile_share <= 1))
    return errf(err, errlen, KR_EINVAL, "the volatile share must be within 0..1");
  double tot = 0;
  for (int i = 0; i < 3; i++) {
    if (!(s->share[i] >= 0) || !isfinite(s->share[i]))
      return errf(err, errlen, KR_EINVAL, "validator shares must be >= 0");
    tot += s->share[i];
  }
  if (!(tot > 0)) return errf(err, errlen, KR_EINVAL, "validator shares are all 0");
  if (s->size == 0 || s->size > MAX_SIZE)
    return errf(err, errlen, KR_EINVAL, "the body size must be within 1..1GiB");
  kr_sim_mix_t mix = s->mix;
  if (mix.n == 0) kr_sim_mix_parse("1h..30d", &mix, NULL, 0);
  double wsum = 0;
  for (unsigned i = 0; i < mix.n; i++) wsum += mix.item[i].weight;

  kr_sim_world_t *w = world_new(s->seed);
  const char *ct = s->content_type && *s->content_type ? s->content_type : "text/html";
  int t = type_intern(w, ct, strlen(ct));
  (void)t;

  /* validators per host: the first hosts correct, then missing, then
   * lying, in a shuffled host order so host index says nothing */
  uint64_t cnt[3];
  apportion(s->share, 3, s->hosts, cnt);
  uint8_t *hv = kr_xmalloc(s->hosts);
  uint64_t k = 0;
  for (int v = 0; v < 3; v++)
    for (uint64_t j = 0; j < cnt[v]; j++) hv[k++] = (uint8_t)v;
  uint64_t rs = mix64(s->seed ^ UINT64_C(0x5151));
  for (uint64_t i = s->hosts; i > 1; i--) { /* Fisher-Yates */
    uint64_t j = rnd(&rs) % i;
    uint8_t tmp = hv[i - 1];
    hv[i - 1] = hv[j];
    hv[j] = tmp;
  }

  char url[128];
  for (uint64_t i = 0; i < s->urls; i++) {
    uint64_t h = i % s->hosts;
    int n = snprintf(url, sizeof url, "http://h%" PRIu64 ".sim.test/p/%" PRIu64, h, i / s->hosts);
    wuri_t *u = world_push(w, url, (size_t)n);
    u->ctype = 0;
    u->validators = hv[h];
    uint64_t r = mix64(s->seed * UINT64_C(0x2545f4914f6cdd1d) ^ (i + 1));
    double pick = unif(&r) * wsum;
    const kr_sim_mix_item_t *it = &mix.item[mix.n - 1];
    for (unsigned c = 0; c < mix.n; c++) {
      if (pick < mix.item[c].weight) {
        it = &mix.item[c];
        break;
      }
      pick -= mix.item[c].weight;
    }
    if (it->never) {
      u->change = KR_SIM_NEVER;
    } else {
      double lp = log(it->lo_s) + unif(&r) * (log(it->hi_s) - log(it->lo_s));
      u->change = KR_SIM_POISSON_RATE;
      u->rate = 1.0 / exp(lp);
    }
    u->is_volatile = unif(&r) < s->volatile_share;
    double sz = (double)s->size * exp(0.5 * gauss(&r));
    if (sz < 256) sz = 256;
    if (sz > 16.0 * (double)s->size) sz = 16.0 * (double)s->size;
    u->size = (uint64_t)sz;
  }
  free(hv);
  world_map_alloc(w, w->n);
  for (size_t i = 0; i < w->n; i++) world_index_one(w, i);
  *out = w;
  return 0;
}

/* ---- trace ------------------------------------------------------------------- */

typedef struct tok {
  const char *p;
  size_t n;
} tok_t;

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static int tok_is(tok_t t, const char *s) { return t.n == strlen(s) && memcmp(t.p, s, t.n) == 0; }

static int tok_prefix(tok_t t, const char *s) {
  size_t n = strlen(s);
  return t.n >= n && memcmp(t.p, s, n) == 0;
}

static int ctype_ok(tok_t t) {
  if (tok_is(t, "-")) return 1;
  size_t slash = 0;
  for (size_t i = 0; i < t.n; i++) {
    unsigned char c = (unsigned char)t.p[i];
    if (c == '/') {
      if (slash || i == 0 || i + 1 == t.n) return 0;
      slash = i;
    } else if (!(c > 0x20 && c < 0x7f) || strchr("()<>@,;:\\\"[]?={}", c)) {
      return 0;
    }
  }
  return slash != 0;
}

/* Parse the line's fields into u; the message names the problem. */
static int trace_line(kr_sim_world_t *w, const tok_t *f, size_t nf, kr_buf_t *canon,
                      char *msg, size_t msglen) {
  if (nf < 5) return errf(msg, msglen, KR_EINVAL, "expected URI CONTENT-TYPE CHANGES VALIDATORS VOLATILE, got %zu field%s", nf, nf == 1 ? "" : "s");
  kr_buf_reset(canon);
  int rc = kr_url_canon_str(f[0].p, f[0].n, NULL, NULL, canon);
  if (rc) return errf(msg, msglen, KR_EINVAL, "invalid URI '%.*s'", (int)KR_MIN(f[0].n, 200), f[0].p);
  if (!(canon->len >= 7 && memcmp(canon->data, "http://", 7) == 0) &&
      !(canon->len >= 8 && memcmp(canon->data, "https://", 8) == 0))
    return errf(msg, msglen, KR_EINVAL, "not an http or https URI: '%.*s'",
                (int)KR_MIN(f[0].n, 200), f[0].p);
  if (canon->len > KR_URL_MAX) return errf(msg, msglen, KR_EINVAL, "URI longer than %d bytes", KR_URL_MAX);
  if (!ctype_ok(f[1]))
    return errf(msg, msglen, KR_EINVAL, "bad content type '%.*s' (want type/subtype or -)",
                (int)KR_MIN(f[1].n, 100), f[1].p);
  /* fields checked before the URI is added */
  kr_sim_change_t change;
  double rate = 0;
  int64_t period = 0;
  size_t at_start = w->nat;
  tok_t c = f[2];
  if (tok_is(c, "never")) {
    change = KR_SIM_NEVER;
  } else if (tok_prefix(c, "rate=") || tok_prefix(c, "every=")) {
    size_t k = c.p[0] == 'r' ? 5 : 6;
    if (dur_parse(c.p + k, c.n - k, &period) || period < MIN_PERIOD_MS || period > MAX_PERIOD_MS)
      return errf(msg, msglen, KR_EINVAL, "bad period in '%.*s' (a duration within 1s..36500d, e.g. 6h)",
                  (int)KR_MIN(c.n, 100), c.p);
    change = k == 5 ? KR_SIM_POISSON_RATE : KR_SIM_EVERY;
    rate = 1000.0 / (double)period;
  } else if (tok_prefix(c, "at=")) {
    change = KR_SIM_AT;
    const char *p = c.p + 3, *end = c.p + c.n;
    int64_t prev = -1;
    while (p <= end) {
      const char *q = p;
      while (q < end && *q != ',') q++;
      int64_t t;
      size_t n = (size_t)(q - p);
      if (n == 0 || kr_config_parse_duration(p, n, &t) || t < 0 || t > MAX_PERIOD_MS) {
        w->nat = at_start;
        return errf(msg, msglen, KR_EINVAL, "bad time '%.*s' in at= (durations from the start, e.g. 2d,9d12h)",
                    (int)KR_MIN(n, 100), p);
      }
      if (t <= prev) {
        w->nat = at_start;
        return errf(msg, msglen, KR_EINVAL, "at= times must increase strictly ('%.*s')",
                    (int)KR_MIN(n, 100), p);
      }
      if (w->nat - at_start >= KR_SIM_MAX_AT) {
        w->nat = at_start;
        return errf(msg, msglen, KR_EINVAL, "more than %u change times", KR_SIM_MAX_AT);
      }
      if (w->nat == w->at_cap) {
        w->at_cap = w->at_cap ? w->at_cap * 2 : 1024;
        w->at = kr_xrealloc(w->at, w->at_cap * sizeof *w->at);
      }
      w->at[w->nat++] = t;
      prev = t;
      p = q + 1;
    }
  } else {
    return errf(msg, msglen, KR_EINVAL, "bad CHANGES '%.*s' (want never, rate=PERIOD, every=PERIOD or at=T,...)",
                (int)KR_MIN(c.n, 100), c.p);
  }
  int val;
  if (tok_is(f[3], "correct"))
    val = KR_SIM_VAL_CORRECT;
  else if (tok_is(f[3], "missing"))
    val = KR_SIM_VAL_MISSING;
  else if (tok_is(f[3], "lying"))
    val = KR_SIM_VAL_LYING;
  else {
    w->nat = at_start;
    return errf(msg, msglen, KR_EINVAL, "bad VALIDATORS '%.*s' (want correct, missing or lying)",
                (int)KR_MIN(f[3].n, 100), f[3].p);
  }
  int vol;
  if (tok_is(f[4], "yes"))
    vol = 1;
  else if (tok_is(f[4], "no"))
    vol = 0;
  else {
    w->nat = at_start;
    return errf(msg, msglen, KR_EINVAL, "bad VOLATILE '%.*s' (want yes or no)",
                (int)KR_MIN(f[4].n, 100), f[4].p);
  }
  uint64_t size = DEFAULT_SIZE;
  for (size_t i = 5; i < nf; i++) {
    if (tok_prefix(f[i], "size=")) {
      if (kr_config_parse_size(f[i].p + 5, f[i].n - 5, &size) || size > MAX_SIZE) {
        w->nat = at_start;
        return errf(msg, msglen, KR_EINVAL, "bad size '%.*s' (at most 1GiB)",
                    (int)KR_MIN(f[i].n, 100), f[i].p);
      }
    } else {
      w->nat = at_start;
      return errf(msg, msglen, KR_EINVAL, "unknown field '%.*s' (only size=BYTES may follow)",
                  (int)KR_MIN(f[i].n, 100), f[i].p);
    }
  }
  int t = type_intern(w, tok_is(f[1], "-") ? "" : f[1].p, tok_is(f[1], "-") ? 0 : f[1].n);
  if (t < 0) {
    w->nat = at_start;
    return errf(msg, msglen, KR_EINVAL, "more than %u distinct content types", KR_SIM_MAX_TYPES);
  }
  if (w->n >= KR_SIM_MAX_URIS) {
    w->nat = at_start;
    return errf(msg, msglen, KR_EINVAL, "more than %u URIs", KR_SIM_MAX_URIS);
  }
  wuri_t *u = world_push(w, (const char *)canon->data, canon->len);
  u->ctype = (uint32_t)t;
  u->change = (uint8_t)change;
  u->rate = change == KR_SIM_POISSON_RATE ? rate : 0;
  u->period_ms = change == KR_SIM_EVERY ? period : 0;
  u->at_off = at_start;
  u->at_n = (uint32_t)(w->nat - at_start);
  u->validators = (uint8_t)val;
  u->is_volatile = (uint8_t)vol;
  u->size = size;
  return 0;
}

int kr_sim_world_trace(const char *text, size_t len, const char *name, uint64_t seed,
                       kr_sim_world_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (!name) name = "<trace>";
  kr_sim_world_t *w = world_new(seed);
  kr_buf_t canon;
  kr_buf_init(&canon, KR_URL_MAX * 4);
  uint32_t *lines = NULL; /* line of each URI, for duplicate messages */
  size_t lines_cap = 0;
  int rc = 0;
  size_t lineno = 0;
  tok_t f[16];
  for (size_t i = 0; i < len && !rc;) {
    size_t j = i;
    while (j < len && text[j] != '\n') j++;
    lineno++;
    const char *p = text + i;
    size_t n = j - i;
    i = j + 1;
    if (n > KR_SIM_MAX_LINE) {
      rc = errf(err, errlen, KR_EINVAL, "%s:%zu: line longer than %u bytes", name, lineno,
                KR_SIM_MAX_LINE);
      break;
    }
    if (memchr(p, 0, n)) {
      rc = errf(err, errlen, KR_EINVAL, "%s:%zu: NUL byte", name, lineno);
      break;
    }
    size_t nf = 0, k = 0;
    while (k < n && is_blank(p[k])) k++;
    if (k == n || p[k] == '#') continue;
    while (k < n) {
      size_t s = k;
      while (k < n && !is_blank(p[k])) k++;
      if (nf == ARRAY_SIZE(f)) {
        nf++;
        break;
      }
      f[nf++] = (tok_t){p + s, k - s};
      while (k < n && is_blank(p[k])) k++;
    }
    char msg[512];
    if (nf > ARRAY_SIZE(f)) {
      rc = errf(err, errlen, KR_EINVAL, "%s:%zu: too many fields", name, lineno);
      break;
    }
    if (trace_line(w, f, nf, &canon, msg, sizeof msg)) {
      rc = errf(err, errlen, KR_EINVAL, "%s:%zu: %s", name, lineno, msg);
      break;
    }
    if (w->n > lines_cap) {
      lines_cap = lines_cap ? lines_cap * 2 : 1024;
      lines = kr_xrealloc(lines, lines_cap * sizeof *lines);
    }
    lines[w->n - 1] = (uint32_t)KR_MIN(lineno, UINT32_MAX);
  }
  if (!rc && w->n == 0) rc = errf(err, errlen, KR_EINVAL, "%s: no URIs", name);
  if (!rc) {
    world_map_alloc(w, w->n);
    for (size_t i = 0; i < w->n && !rc; i++) {
      int64_t d = world_index_one(w, i);
      if (d >= 0)
        rc = errf(err, errlen, KR_EINVAL, "%s:%u: duplicate URI %s (first on line %u)", name,
                  lines[i], wurl(w, &w->u[i]), lines[d]);
    }
  }
  free(lines);
  kr_buf_free(&canon);
  if (rc) {
    kr_sim_world_free(w);
    return rc;
  }
  *out = w;
  return 0;
}

int kr_sim_world_trace_file(const char *path, uint64_t seed, kr_sim_world_t **out, char *err,
                            size_t errlen) {
  *out = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) return errf(err, errlen, KR_EIO, "%s: %s", path, strerror(errno));
  size_t cap = 1 << 16, len = 0;
  char *buf = kr_xmalloc(cap);
  int rc = 0;
  for (;;) {
    if (len == cap) {
      if (cap >= MAX_SIZE) {
        rc = errf(err, errlen, KR_EINVAL, "%s: larger than 1GiB", path);
        break;
      }
      cap *= 2;
      buf = kr_xrealloc(buf, cap);
    }
    size_t got = fread(buf + len, 1, cap - len, fp);
    len += got;
    if (got == 0) {
      if (ferror(fp)) rc = errf(err, errlen, KR_EIO, "%s: %s", path, strerror(errno));
      break;
    }
  }
  fclose(fp);
  if (!rc) rc = kr_sim_world_trace(buf, len, path, seed, out, err, errlen);
  free(buf);
  return rc;
}

/* ---- change processes --------------------------------------------------------- */

/* Per run and URI: the ground truth as it unfolds, and the scoring. */
typedef struct suri {
  uint64_t rng;          /* the URI's change stream */
  int64_t next_change;   /* epoch ms; INT64_MAX never */
  int64_t last_change;   /* birth of the live version (Last-Modified) */
  uint32_t version;      /* changes so far */
  uint32_t at_idx;
  uint32_t version_w;    /* changes within the window */
  uint32_t responses;    /* answers so far (volatile ETags and digests) */
  int32_t cap_version;   /* newest archived, -1 none */
  int32_t seen_version;  /* live at the previous visit, -1 none */
  int64_t stale_at;      /* the archived copy is fresh until then */
  int64_t acc_from;      /* metrics integrated up to here; 0: no copy yet */
  uint32_t host;         /* run host index */
  int8_t cls;            /* allocator class, -1 none */
  uint8_t w_done;        /* version_w final */
  uint8_t in_flight;
  const kr_cfg_wait_t *wait; /* evaluator, NULL: crawl.default-wait */
  double lambda;         /* poisson: what the host's sketch counts it as */
  int64_t last_wait;
  uint32_t visits;
} suri_t;

static void advance_to(const kr_sim_world_t *w, const wuri_t *u, suri_t *s, int64_t t0,
                       int64_t t) {
  switch (u->change) {
  case KR_SIM_POISSON_RATE:
    /* One draw per change, whenever it is looked at: the changes do not
     * depend on the visits, so every policy sees the same ones. */
    while (s->next_change <= t) {
      s->version++;
      s->last_change = s->next_change;
      s->next_change += exp_ms(&s->rng, u->rate);
    }
    break;
  case KR_SIM_EVERY:
    if (t >= s->next_change) {
      int64_t k = (t - t0) / u->period_ms;
      s->version = (uint32_t)KR_MIN(k, (int64_t)UINT32_MAX);
      s->last_change = t0 + k * u->period_ms;
      s->next_change = s->last_change + u->period_ms;
    }
    break;
  case KR_SIM_AT:
    while (s->at_idx < u->at_n && t0 + w->at[u->at_off + s->at_idx] <= t) {
      s->version++;
      s->last_change = t0 + w->at[u->at_off + s->at_idx];
      s->at_idx++;
    }
    s->next_change = s->at_idx < u->at_n ? t0 + w->at[u->at_off + s->at_idx] : INT64_MAX;
    break;
  default:
    break;
  }
}

/* Bring the URI's truth to time t, noting the version count at the end
 * of the window on the way. */
static void advance(const kr_sim_world_t *w, const wuri_t *u, suri_t *s, int64_t t0, int64_t wend,
                    int64_t t) {
  if (!s->w_done && t >= wend) {
    advance_to(w, u, s, t0, wend);
    s->version_w = s->version;
    s->w_done = 1;
  }
  advance_to(w, u, s, t0, t);
}

/* The true change rate (changes/s; 0 for never), for the oracle and for
 * scoring estimates. A list of change times counts as its mean rate. */
static double true_rate(const wuri_t *u, int64_t duration_ms) {
  switch (u->change) {
  case KR_SIM_POISSON_RATE: return u->rate;
  case KR_SIM_EVERY: return 1000.0 / (double)u->period_ms;
  case KR_SIM_AT: return (double)u->at_n * 1000.0 / (double)duration_ms;
  default: return 0;
  }
}

static void truth_init(const kr_sim_world_t *w, size_t i, suri_t *s, int64_t t0) {
  const wuri_t *u = &w->u[i];
  s->rng = mix64(w->seed * UINT64_C(0x9e3779b97f4a7c15) ^ mix64(u->fp));
  s->cap_version = -1;
  s->seen_version = -1;
  s->cls = -1;
  switch (u->change) {
  case KR_SIM_POISSON_RATE: {
    int64_t back = exp_ms(&s->rng, u->rate);
    s->last_change = t0 - KR_MIN(back, YEAR_MS);
    s->next_change = t0 + exp_ms(&s->rng, u->rate);
    break;
  }
  case KR_SIM_EVERY:
    s->last_change = t0;
    s->next_change = t0 + u->period_ms;
    break;
  case KR_SIM_AT:
    s->last_change = t0 - YEAR_MS;
    s->next_change = u->at_n ? t0 + w->at[u->at_off] : INT64_MAX;
    break;
  default:
    s->last_change = t0 - YEAR_MS;
    s->next_change = INT64_MAX;
  }
}

/* ---- runs: state --------------------------------------------------------------- */

typedef struct shost {
  kr_hostq_t *h;
  uint32_t idx;              /* in run->hosts */
  char *name;
  const kr_config_view_t *view;
  kr_frontier_opts_t fo;     /* this host's frontier options (stable address) */
  int conditional;
  uint32_t valence;
  kr_alloc_host_t alloc;
  double cycle_ms;           /* mean fetch time + politeness delay */
  int64_t free_at;           /* valence 1: finish + delay of the last fetch */
  int has_free_at;
  uint32_t in_flight;
} shost_t;

typedef struct sfetch {
  kr_wheel_entry_t e;
  struct run *run;
  kr_curi_t *c;
  size_t uri;
  struct sfetch *next_free;
} sfetch_t;

typedef struct run {
  const kr_sim_world_t *w;
  const kr_sim_opts_t *o;
  kr_sim_policy_t policy;
  kr_sim_result_t *res;
  kr_sim_trace_out_t *traces;
  kr_config_t *cfg;          /* o->cfg or our defaults */
  kr_config_t *own_cfg;
  kr_config_matcher_t *matcher;
  kr_clock_t clock;
  kr_timers_t timers;
  kr_frontier_t *f;
  kr_frontier_opts_t fo;     /* global */
  kr_est_params_t ep;
  int64_t t0, wend, end;
  uint64_t rng;              /* fetch durations */
  suri_t *s;
  shost_t **hosts;
  size_t nhosts, hosts_cap;
  shost_t **hmap;            /* kr_hostq_t* -> host, open addressing */
  size_t hmap_cap;
  sfetch_t *free_fetches;
  sfetch_t **all_fetches;
  size_t nfetch_objs;
  int64_t last_day;
  int err;
  char *errbuf;
  size_t errlen;
} run_t;

static size_t ptr_slot(const void *p, size_t mask) {
  return (size_t)mix64((uint64_t)(uintptr_t)p) & mask;
}

static shost_t *host_of(run_t *r, const kr_hostq_t *h) {
  if (!r->hmap_cap) return NULL;
  size_t mask = r->hmap_cap - 1;
  for (size_t j = ptr_slot(h, mask); r->hmap[j]; j = (j + 1) & mask)
    if (r->hmap[j]->h == h) return r->hmap[j];
  return NULL;
}

static void hmap_put(run_t *r, shost_t *sh) {
  if ((r->nhosts + 1) * 2 > r->hmap_cap) {
    size_t nc = r->hmap_cap ? r->hmap_cap * 2 : 64;
    shost_t **m = kr_xcalloc(nc, sizeof *m);
    for (size_t i = 0; i < r->hmap_cap; i++) {
      if (!r->hmap[i]) continue;
      size_t j = ptr_slot(r->hmap[i]->h, nc - 1);
      while (m[j]) j = (j + 1) & (nc - 1);
      m[j] = r->hmap[i];
    }
    free(r->hmap);
    r->hmap = m;
    r->hmap_cap = nc;
  }
  size_t j = ptr_slot(sh->h, r->hmap_cap - 1);
  while (r->hmap[j]) j = (j + 1) & (r->hmap_cap - 1);
  r->hmap[j] = sh;
}

/* The politeness fields of a config view, as the crawl maps them. */
static void fopts_politeness(kr_frontier_opts_t *fo, const kr_config_view_t *v,
                             const kr_sim_opts_t *o) {
  fo->delay_factor = kr_config_float(v, KR_CFG_POLITENESS_DELAY_FACTOR);
  fo->min_delay_ms = (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_MIN_DELAY);
  fo->max_delay_ms = (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_MAX_DELAY);
  fo->respect_crawl_delay_up_to_ms =
      (uint64_t)kr_config_ms(v, KR_CFG_POLITENESS_RESPECT_CRAWL_DELAY_UP_TO);
  fo->host_valence = (uint32_t)kr_config_int(v, KR_CFG_POLITENESS_HOST_VALENCE);
  fo->default_wait_ms = (uint64_t)kr_config_ms(v, KR_CFG_CRAWL_DEFAULT_WAIT);
  if (o->delay_ms >= 0) fo->min_delay_ms = fo->max_delay_ms = (uint64_t)o->delay_ms;
  if (o->valence > 0) fo->host_valence = (uint32_t)KR_MIN(o->valence, 64);
}

/* The frontier made a host queue: give it its options. */
static void on_host(void *ud, kr_frontier_t *f, kr_hostq_t *h) {
  run_t *r = ud;
  shost_t *sh = kr_xcalloc(1, sizeof *sh);
  sh->h = h;
  sh->name = kr_xstrdup(kr_frontier_host_name(h));
  size_t n = strlen(sh->name);
  if (sh->name[0] == '[') {
    const char *e = strchr(sh->name, ']');
    n = e ? (size_t)(e - sh->name + 1) : n;
  } else {
    const char *colon = strchr(sh->name, ':');
    if (colon) n = (size_t)(colon - sh->name);
  }
  sh->view = kr_config_view(r->cfg, sh->name, n);
  sh->fo = r->fo;
  fopts_politeness(&sh->fo, sh->view, r->o);
  sh->valence = sh->fo.host_valence ? sh->fo.host_valence : 1;
  sh->conditional = r->o->conditional && kr_config_bool(sh->view, KR_CFG_HTTP_CONDITIONAL_REQUESTS);
  kr_alloc_host_init(&sh->alloc, r->ep.x_min);
  double fm = (double)r->o->fetch_ms;
  double d = sh->fo.delay_factor * fm;
  if (d < (double)sh->fo.min_delay_ms) d = (double)sh->fo.min_delay_ms;
  if (d > (double)sh->fo.max_delay_ms) d = (double)sh->fo.max_delay_ms;
  sh->cycle_ms = fm + d;
  if (r->nhosts == r->hosts_cap) {
    r->hosts_cap = r->hosts_cap ? r->hosts_cap * 2 : 64;
    r->hosts = kr_xrealloc(r->hosts, r->hosts_cap * sizeof *r->hosts);
  }
  hmap_put(r, sh);
  sh->idx = (uint32_t)r->nhosts;
  r->hosts[r->nhosts++] = sh;
  kr_frontier_host_set_opts(f, h, &sh->fo, kr_clock_now_ms(&r->clock));
}

/* ---- runs: metrics --------------------------------------------------------------- */

/* Integrate freshness and age over [a, b] (ms) for a copy fresh until
 * stale_at, into m, and into early for the part before wend. */
static void integrate_piece(kr_sim_metrics_t *m, int64_t a, int64_t b, int64_t stale_at) {
  if (b <= a) return;
  m->observed_s += (double)(b - a) / 1000.0;
  if (a < stale_at) m->fresh_s += (double)(KR_MIN(b, stale_at) - a) / 1000.0;
  if (b > stale_at) {
    double x0 = (double)(KR_MAX(a, stale_at) - stale_at) / 1000.0;
    double x1 = (double)(b - stale_at) / 1000.0;
    m->age_s2 += (x1 * x1 - x0 * x0) / 2.0;
  }
}

static void integrate(run_t *r, suri_t *s, int64_t t) {
  if (!s->acc_from || t <= s->acc_from) return;
  integrate_piece(&r->res->all, s->acc_from, t, s->stale_at);
  if (s->acc_from < r->wend)
    integrate_piece(&r->res->early, s->acc_from, KR_MIN(t, r->wend), s->stale_at);
  s->acc_from = t;
}

/* ---- runs: fetches ----------------------------------------------------------------- */

static void pull(run_t *r);

static int64_t fetch_duration(run_t *r) {
  double d = (double)r->o->fetch_ms * exp(r->o->fetch_sigma * gauss(&r->rng));
  if (d < 1) d = 1;
  if (d > 60000) d = 60000;
  return (int64_t)d;
}

static void make_etag(char out[ETAG_LEN + 1], uint64_t h) {
  snprintf(out, ETAG_LEN + 1, "\"%016" PRIx64 "\"", h);
}

static void fail(run_t *r, int rc, const char *what) {
  if (!r->err) {
    r->err = rc;
    errf(r->errbuf, r->errlen, rc, "%s: %s", what, kr_strerror(rc));
  }
}

static void on_fetch_done(kr_wheel_entry_t *e);

static void start_fetch(run_t *r, kr_curi_t *c) {
  int64_t idx = world_find(r->w, c->fp);
  KR_BUG_ON(idx < 0);
  suri_t *s = &r->s[idx];
  shost_t *sh = r->hosts[s->host];
  uint64_t now = kr_clock_now_ms(&r->clock);
  if (sh->valence == 1 && sh->has_free_at) {
    int64_t gap = (int64_t)now - sh->free_at;
    if (r->res->politeness_min_gap_ms < 0 || gap < r->res->politeness_min_gap_ms)
      r->res->politeness_min_gap_ms = gap;
    if (gap < 0) r->res->politeness_violations++;
    r->res->politeness_checked++;
  }
  sh->in_flight++;
  if (sh->in_flight > r->res->max_in_flight_host) r->res->max_in_flight_host = sh->in_flight;
  KR_BUG_ON(s->in_flight);
  s->in_flight = 1;
  sfetch_t *fx = r->free_fetches;
  if (fx) {
    r->free_fetches = fx->next_free;
  } else {
    fx = kr_xcalloc(1, sizeof *fx);
    if ((r->nfetch_objs & (r->nfetch_objs + 1)) == 0)
      r->all_fetches = kr_xrealloc(r->all_fetches, (r->nfetch_objs * 2 + 2) * sizeof *r->all_fetches);
    r->all_fetches[r->nfetch_objs++] = fx;
    kr_wheel_entry_init(&fx->e, on_fetch_done);
  }
  fx->run = r;
  fx->c = c;
  fx->uri = (size_t)idx;
  kr_timer_start(&r->timers, &fx->e, now + (uint64_t)fetch_duration(r), on_fetch_done);
}

/* The next wait of a visit, by the run's policy. The visit history (the
 * URI's row, kr_vhist) gets this visit appended into hist/hist_len, which
 * the outcome hands back to the frontier to persist. */
static int64_t next_wait(run_t *r, suri_t *s, shost_t *sh, const kr_curi_t *c, kr_content_t st,
                         int64_t now, int64_t age_s, int has_lm, uint8_t *hist,
                         size_t *hist_len) {
  kr_vhist_visit_t v;
  v.interval_s = 0;
  if (c->visits && c->last_visit && (uint64_t)now > c->last_visit)
    v.interval_s = (int64_t)(((uint64_t)now - c->last_visit + 999) / 1000);
  if (c->visits && v.interval_s < 1) v.interval_s = 1;
  v.state = st;
  v.age_s = age_s;
  *hist_len = kr_vhist_push(c->history, c->history_len, &v, hist, NULL);
  if (r->policy == KR_SIM_FIXED) return r->o->fixed_interval_ms;
  if (!s->wait) return 0; /* no evaluator: the frontier's default wait */
  kr_wait_params_t p;
  kr_wait_params_from_config(&p, s->wait);
  if (r->policy == KR_SIM_MULTIPLICATIVE)
    return kr_wait_multiplicative(&p, c->visits ? (int64_t)c->wait_ms : 0, st,
                                  (int64_t)c->overdue_ms);
  if (r->policy == KR_SIM_ORACLE) {
    double budget = kr_alloc_budget((int)sh->valence, (int64_t)sh->cycle_ms, r->o->utilisation);
    kr_alloc_host_maybe_solve(&sh->alloc, budget, r->o->solve_every);
    double lambda = s->lambda > 0 ? s->lambda : 1e-12;
    return kr_wait_clamp(&p, (int64_t)KR_MIN(kr_alloc_host_x(&sh->alloc) / lambda * 1000.0, 9e18));
  }
  kr_vhist_t h;
  if (kr_vhist_decode(&h, hist, *hist_len)) kr_vhist_init(&h);
  kr_est_hints_t hints = kr_est_hints_none();
  hints.last_modified = has_lm;
  double budget = kr_alloc_budget((int)sh->valence, (int64_t)sh->cycle_ms, r->o->utilisation);
  kr_alloc_host_maybe_solve(&sh->alloc, budget, r->o->solve_every);
  kr_wait_info_t info;
  int64_t wait = kr_wait_poisson(&p, &r->ep, &h, st, &hints, kr_alloc_host_x(&sh->alloc), &info);
  if (s->cls >= 0 && info.observations > 0) {
    kr_alloc_host_update(&sh->alloc, s->cls, s->lambda, info.lambda);
    s->lambda = info.lambda;
  }
  return wait;
}

static void on_fetch_done(kr_wheel_entry_t *e) {
  sfetch_t *fx = container_of(e, sfetch_t, e);
  run_t *r = fx->run;
  kr_curi_t *c = fx->c;
  const kr_sim_world_t *w = r->w;
  const wuri_t *u = &w->u[fx->uri];
  suri_t *s = &r->s[fx->uri];
  shost_t *sh = r->hosts[s->host];
  const kr_sim_opts_t *o = r->o;
  int64_t now = (int64_t)kr_clock_now_ms(&r->clock);
  int64_t ti = (int64_t)c->issued_at; /* the server answered then */
  int early = ti < r->wend;
  kr_sim_metrics_t *ms[2] = {&r->res->all, early ? &r->res->early : NULL};

  advance(w, u, s, r->t0, r->wend, ti);
  integrate(r, s, ti);
  s->responses++;

  /* the server's validators for this response */
  char etag[ETAG_LEN + 1] = "";
  int64_t lm = 0; /* epoch s, 0 none */
  switch (u->validators) {
  case KR_SIM_VAL_CORRECT:
    if (u->is_volatile) {
      make_etag(etag, mix64(u->fp ^ mix64(((uint64_t)s->version << 32) ^ s->responses)));
    } else {
      make_etag(etag, mix64(u->fp ^ mix64((uint64_t)s->version + 1)));
      lm = s->last_change / 1000;
    }
    break;
  case KR_SIM_VAL_LYING:
    make_etag(etag, mix64(u->fp));
    lm = (r->t0 - YEAR_MS) / 1000;
    break;
  default:
    break;
  }
  size_t etag_len = strlen(etag);
  int has_hist = c->visits > 0;
  int has_val = has_hist && (c->etag_len > 0 || c->last_modified > 0);
  kr_vtrust_t trust = *kr_frontier_host_vtrust(c->host);
  kr_vtrust_mode_t mode = has_val ? kr_vtrust_mode(&trust, &o->trust, c->fp, c->visits, ti)
                                  : KR_VTRUST_PROBATION;
  int conditional = has_val && sh->conditional && mode == KR_VTRUST_USE;
  int status = 200;
  if (conditional) {
    /* RFC 9110 13.2.2: If-None-Match first, If-Modified-Since without it */
    if (c->etag_len)
      status = etag_len && c->etag_len == etag_len && !memcmp(c->etag, etag, etag_len) ? 304 : 200;
    else
      status = lm && lm <= c->last_modified ? 304 : 200;
  }

  uint64_t bytes;
  kr_content_t st;
  uint64_t digest = 0;
  int full = 0;
  if (status == 304) {
    bytes = 0;
    st = KR_CONTENT_UNCHANGED;
    kr_vtrust_record(&trust, &o->trust, 0, KR_CONTENT_UNKNOWN, ti);
    for (int k = 0; k < 2; k++)
      if (ms[k]) ms[k]->not_modified++;
  } else {
    int predicted = 1;
    if (has_val) {
      char date[KR_HTTP_DATE_SIZE] = "";
      if (lm) kr_validators_date_format(lm, date);
      kr_val_result_t vr;
      predicted = kr_validators_check(o->scheme, o->etag_mode, kr_slice(c->etag, c->etag_len),
                                      kr_slice(etag, etag_len), c->last_modified,
                                      kr_slice(date, strlen(date)), &vr);
    }
    if (has_val && mode == KR_VTRUST_USE && !predicted) {
      bytes = KR_MIN(u->size, o->abort_bytes);
      st = KR_CONTENT_UNCHANGED;
      kr_vtrust_record(&trust, &o->trust, 0, KR_CONTENT_UNKNOWN, ti);
      for (int k = 0; k < 2; k++)
        if (ms[k]) ms[k]->aborted++;
    } else {
      full = 1;
      bytes = u->size;
      uint64_t salt = u->is_volatile && !o->strip ? s->responses : 0;
      digest = mix64(u->fp ^ mix64(((uint64_t)s->version << 32) + salt + 7));
      if (!has_hist)
        st = KR_CONTENT_CHANGED;
      else
        st = c->digest_len == 8 && !memcmp(c->digest, &digest, 8) ? KR_CONTENT_UNCHANGED
                                                                   : KR_CONTENT_CHANGED;
      if (has_val) kr_vtrust_record(&trust, &o->trust, predicted, st, ti);
    }
  }

  /* scoring */
  int captured = 0;
  if (full && s->cap_version != (int32_t)s->version) {
    captured = 1;
    if (s->acc_from == 0) {
      r->res->uris_visited++;
      r->res->mean_first_visit_s += (double)(ti - r->t0) / 1000.0;
    }
    s->cap_version = (int32_t)s->version;
    s->stale_at = s->next_change;
    s->acc_from = ti;
  }
  int unchanged_visit = s->seen_version == (int32_t)s->version;
  int lost = !full && s->cap_version != (int32_t)s->version;
  s->seen_version = (int32_t)s->version;
  for (int k = 0; k < 2; k++) {
    kr_sim_metrics_t *m = ms[k];
    if (!m) continue;
    m->fetches++;
    m->body_bytes += bytes;
    /* the version live at the start is every policy's first download */
    m->captured += (uint64_t)(captured && s->version > 0);
    m->lost_by_validators += (uint64_t)lost;
    if (unchanged_visit) {
      m->unchanged_visits++;
      m->unchanged_full_bytes += u->size;
      m->unchanged_body_bytes += bytes;
    }
  }

  if (has_val) kr_frontier_host_set_vtrust(r->f, c->host, &trust);

  /* the wait */
  int64_t age_s = lm && ti / 1000 >= lm ? ti / 1000 - lm : -1;
  uint8_t hist[KR_VHIST_BYTES];
  size_t hist_len = 0;
  int64_t wait = next_wait(r, s, sh, c, st, now, age_s, lm != 0, hist, &hist_len);
  s->last_wait = wait;
  s->visits++;

  /* politeness bookkeeping, before the frontier frees c */
  uint64_t fetch_ms = (uint64_t)(now - ti);
  uint64_t delay = kr_frontier_host_delay(r->f, c->host, fetch_ms);
  sh->free_at = now + (int64_t)delay;
  sh->has_free_at = 1;
  sh->cycle_ms = 0.98 * sh->cycle_ms + 0.02 * (double)(fetch_ms + delay);
  sh->in_flight--;
  s->in_flight = 0;

  kr_outcome_t oc;
  memset(&oc, 0, sizeof oc);
  oc.kind = KR_OUTCOME_SUCCESS;
  oc.status = status;
  oc.fetch_ms = fetch_ms;
  oc.bytes = bytes;
  oc.wait_ms = wait > 0 ? (uint64_t)wait : 0;
  oc.content = st == KR_CONTENT_CHANGED ? 1 : 0;
  if (!has_hist) {
    oc.content_type = w->types[u->ctype];
    oc.content_type_len = strlen(oc.content_type);
  }
  if (full) {
    oc.digest = (const uint8_t *)&digest;
    oc.digest_len = 8;
  }
  if (etag_len) {
    oc.etag = etag;
    oc.etag_len = etag_len;
  }
  oc.last_modified = lm;
  oc.history = hist;
  oc.history_len = hist_len;
  fx->c = NULL;
  fx->next_free = r->free_fetches;
  r->free_fetches = fx;
  int rc = kr_frontier_finished(r->f, c, &oc, NULL, 0, (uint64_t)now);
  if (rc < 0) fail(r, rc, "recording a visit");
  pull(r);
}

static void pull(run_t *r) {
  if (r->err) return;
  /* bounded: every URI issued is one fetch in flight */
  for (size_t guard = 0; guard < 1000000; guard++) {
    kr_curi_t *c;
    int rc = kr_frontier_next(r->f, kr_clock_now_ms(&r->clock), &c);
    if (rc < 0) {
      fail(r, rc, "picking the next URI");
      return;
    }
    if (rc == 0) return;
    start_fetch(r, c);
  }
}

static void on_ready(kr_frontier_t *f, void *ud) {
  (void)f;
  pull(ud);
}

/* ---- runs: the loop ------------------------------------------------------------------- */

/* -v -v: once a simulated day, what each host's allocator believes. */
static void report_day(run_t *r) {
  int64_t now = (int64_t)kr_clock_now_ms(&r->clock);
  int64_t day = (now - r->t0) / 86400000;
  if (day <= r->last_day) return;
  r->last_day = day;
  for (size_t j = 0; j < r->nhosts && j < 20; j++) {
    shost_t *sh = r->hosts[j];
    double sum = 0;
    uint32_t n = 0;
    for (unsigned c = 0; c < sh->alloc.ncls; c++)
      for (unsigned b = 0; b < KR_ALLOC_BUCKETS; b++) {
        sum += sh->alloc.cls[c].count[b] * kr_alloc_bucket_lambda(b);
        n += sh->alloc.cls[c].count[b];
      }
    KR_LOG(KR_LOG_INFO, sh->name,
           "%s day %" PRId64 ": fetches %" PRIu64 ", budget %.4f/s, x %.3f (%s), sketch %u URIs, "
           "sum lambda %.4g/s",
           kr_sim_policy_name(r->policy), day, r->res->all.fetches,
           kr_alloc_budget((int)sh->valence, (int64_t)sh->cycle_ms, r->o->utilisation),
           sh->alloc.x,
           sh->alloc.state == KR_ALLOC_SLACK ? "slack" : sh->alloc.state == KR_ALLOC_BINDS ? "binds" : "over",
           n, sum);
  }
}

void kr_sim_opts_default(kr_sim_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->duration_ms = 30 * INT64_C(86400000);
  o->window_ms = 3 * INT64_C(86400000);
  o->seed = 1;
  o->delay_ms = -1;
  o->fetch_ms = 150;
  o->fetch_sigma = 0.5;
  o->utilisation = 0.95;
  o->conditional = 1;
  o->strip = 1;
  o->scheme = KR_VSCHEME_DEFAULT;
  o->etag_mode = KR_ETAG_EXACT;
  kr_vtrust_params_default(&o->trust);
  o->abort_bytes = 1460;
  o->fixed_interval_ms = 86400000;
  o->solve_every = 200;
}

static const char *state_parent(const kr_sim_opts_t *o) {
  if (o->state_parent) return o->state_parent;
  const char *t = getenv("TMPDIR");
  if (t && *t) return t;
  struct stat sb;
  if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  return "/tmp";
}

static void remove_state(const char *dir) {
  static const char *const names[] = {KR_STORE_DB_NAME, KR_STORE_DB_NAME "-wal",
                                      KR_STORE_DB_NAME "-shm", KR_STORE_LOCK_NAME};
  for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
    char *p = kr_xasprintf("%s/%s", dir, names[i]);
    unlink(p);
    free(p);
  }
  rmdir(dir);
}

/* Add every URI at the start, then tie each to its host and evaluator. */
static int add_all(run_t *r) {
  const kr_sim_world_t *w = r->w;
  uint64_t now = kr_clock_now_ms(&r->clock);
  enum { BATCH = 4096 };
  kr_link_t *links = kr_xcalloc(BATCH, sizeof *links);
  int rc = 0;
  for (size_t i = 0; i < w->n && !rc; i += BATCH) {
    size_t n = KR_MIN((size_t)BATCH, w->n - i);
    for (size_t k = 0; k < n; k++) {
      const wuri_t *u = &w->u[i + k];
      links[k] = (kr_link_t){.url = wurl(w, u), .url_len = u->url_len, .hop_path = "",
                             .hop_len = 0, .next_at = now, .directive = KR_DIRECTIVE_NORMAL};
    }
    size_t added = 0;
    rc = kr_frontier_add_batch(r->f, links, n, now, &added);
    if (!rc && added != n) {
      rc = errf(r->errbuf, r->errlen, KR_EINVAL,
                "the frontier refused %zu of the URIs (bad or duplicate)", n - added);
      break;
    }
    if (!rc) rc = kr_frontier_turn(r->f, now);
  }
  free(links);
  if (rc < 0 && !r->err) fail(r, rc, "adding the URIs");
  if (rc) return rc;
  rc = kr_frontier_commit(r->f);
  if (rc < 0) {
    fail(r, rc, "committing the URIs");
    return rc;
  }

  char key[1024];
  for (size_t i = 0; i < w->n; i++) {
    const wuri_t *u = &w->u[i];
    suri_t *s = &r->s[i];
    truth_init(w, i, s, r->t0);
    int k = kr_frontier_queue_key(r->f, wurl(w, u), u->url_len, key, sizeof key);
    kr_hostq_t *h = k == 0 ? kr_frontier_host_lookup(r->f, key, strlen(key)) : NULL;
    shost_t *sh = h ? host_of(r, h) : NULL;
    if (!sh) {
      return errf(r->errbuf, r->errlen, KR_EINVAL, "no host queue for %s", wurl(w, u));
    }
    s->host = sh->idx;
    const char *ct = w->types[u->ctype];
    s->wait = kr_config_wait_match(sh->view, r->matcher, ct, strlen(ct));
    if (s->wait && (r->policy == KR_SIM_POISSON || r->policy == KR_SIM_ORACLE)) {
      kr_wait_params_t p;
      kr_wait_params_from_config(&p, s->wait);
      s->cls = (int8_t)kr_alloc_host_class(&sh->alloc, p.min_ms, p.max_ms);
      if (r->policy == KR_SIM_ORACLE) {
        s->lambda = KR_MAX(true_rate(u, r->end - r->t0), 1e-12);
        kr_alloc_host_update(&sh->alloc, s->cls, 0, s->lambda);
      }
    }
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* How far each URI's last estimate is from its true rate. */
static void score_estimates(run_t *r) {
  const kr_sim_world_t *w = r->w;
  double *ratio = kr_xmalloc((w->n ? w->n : 1) * sizeof *ratio);
  size_t n = 0, within = 0;
  for (size_t i = 0; i < w->n; i++) {
    const wuri_t *u = &w->u[i];
    if (u->change != KR_SIM_POISSON_RATE && u->change != KR_SIM_EVERY) continue;
    if (!(r->s[i].lambda > 0)) continue;
    double q = r->s[i].lambda / true_rate(u, r->end - r->t0);
    ratio[n++] = q;
    if (q >= 0.5 && q <= 2) within++;
  }
  r->res->est_n = n;
  if (n) {
    qsort(ratio, n, sizeof *ratio, cmp_double);
    r->res->est_median_ratio = n % 2 ? ratio[n / 2] : sqrt(ratio[n / 2 - 1] * ratio[n / 2]);
    r->res->est_within2 = (double)within / (double)n;
  }
  free(ratio);
}

int kr_sim_run_ex(const kr_sim_world_t *w, const kr_sim_opts_t *o, kr_sim_policy_t policy,
                  kr_sim_result_t *out, kr_sim_trace_out_t *traces, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (err && errlen) err[0] = 0;
  if (o->duration_ms <= 0 || o->window_ms < 0 || o->fetch_ms <= 0 || !(o->fetch_sigma >= 0) ||
      !(o->utilisation > 0 && o->utilisation <= 1))
    return errf(err, errlen, KR_EINVAL, "invalid simulation options");
  if (policy == KR_SIM_FIXED && o->fixed_interval_ms <= 0)
    return errf(err, errlen, KR_EINVAL, "the fixed policy needs an interval");
  double expect = 0;
  for (size_t i = 0; i < w->n; i++)
    if (w->u[i].change == KR_SIM_POISSON_RATE)
      expect += w->u[i].rate * (double)o->duration_ms / 1000.0;
  if (expect > MAX_CHANGES)
    return errf(err, errlen, KR_ETOOBIG,
                "the URIs would change about %.3g times in the run, more than the %.0g a run "
                "may simulate: shorten it or slow the changes",
                expect, MAX_CHANGES);
  double wall0 = mono_s(), cpu0 = cpu_s();
  run_t rr, *r = &rr;
  memset(r, 0, sizeof *r);
  r->w = w;
  r->o = o;
  r->policy = policy;
  r->res = out;
  r->traces = traces;
  r->errbuf = err;
  r->errlen = errlen;
  r->rng = mix64(o->seed ^ UINT64_C(0x6b726961));
  out->policy = policy;
  out->fixed_interval_ms = policy == KR_SIM_FIXED ? o->fixed_interval_ms : 0;
  out->politeness_min_gap_ms = -1;
  kr_est_params_default(&r->ep);
  r->cfg = o->cfg;
  if (!r->cfg) {
    r->own_cfg = r->cfg = kr_config_new();
    if (kr_config_finish(r->cfg)) {
      kr_config_free(r->own_cfg);
      return errf(err, errlen, KR_ECONFIG, "the default configuration does not finish");
    }
  }
  r->matcher = kr_config_matcher_new();
  r->t0 = KR_SIM_T0;
  r->wend = r->t0 + KR_MIN(o->window_ms, o->duration_ms);
  r->end = r->t0 + o->duration_ms;
  kr_clock_init_virtual(&r->clock, (uint64_t)r->t0);
  kr_timers_init(&r->timers, NULL, &r->clock);
  r->s = kr_xcalloc(w->n ? w->n : 1, sizeof *r->s);

  kr_frontier_opts_default(&r->fo);
  fopts_politeness(&r->fo, kr_config_global(r->cfg), o);
  r->fo.commit_ms = UINT32_MAX;
  r->fo.commit_updates = 20000;
  r->fo.quick_check = 0;
  r->fo.max_connections = 1000000;
  r->fo.on_host = on_host;
  r->fo.host_ud = r;

  char *dir = kr_xasprintf("%s/kria-sim.XXXXXX", state_parent(o));
  int rc = 0;
  if (!mkdtemp(dir)) {
    rc = errf(err, errlen, KR_EIO, "cannot create a state directory under %s: %s",
              state_parent(o), strerror(errno));
    goto out;
  }
  char ferr[512] = "";
  rc = kr_frontier_open(dir, &r->fo, &r->timers, &r->f, ferr, sizeof ferr);
  if (rc) {
    errf(err, errlen, rc, "%s", ferr[0] ? ferr : "cannot open the frontier");
    r->f = NULL;
    goto out;
  }
  kr_frontier_set_on_ready(r->f, on_ready, r);
  rc = add_all(r);
  out->hosts = r->nhosts;
  if (!rc) {
    for (uint64_t now = kr_clock_now_ms(&r->clock); now < (uint64_t)r->end && !r->err;
         now = kr_clock_now_ms(&r->clock)) {
      uint64_t step = KR_MIN((uint64_t)CHUNK_MS, (uint64_t)r->end - now);
      kr_timers_advance(&r->timers, step);
      if (r->err) break;
      if (kr_log_level >= KR_LOG_INFO) report_day(r);
      int t = kr_frontier_turn(r->f, kr_clock_now_ms(&r->clock));
      if (t < 0) fail(r, t, "committing");
    }
    rc = r->err;
  }
  if (!rc) {
    /* close every URI's books at the end */
    for (size_t i = 0; i < w->n; i++) {
      suri_t *s = &r->s[i];
      advance(w, &w->u[i], s, r->t0, r->wend, r->end);
      integrate(r, s, r->end);
      out->all.versions += s->version;
      out->early.versions += s->version_w;
      if (s->visits && s->wait) {
        kr_wait_params_t p;
        kr_wait_params_from_config(&p, s->wait);
        if (policy != KR_SIM_FIXED && s->last_wait <= p.min_ms) out->at_min_wait++;
        if (policy != KR_SIM_FIXED && s->last_wait >= p.max_ms) out->at_max_wait++;
      }
      if (traces && traces->last_wait_ms) traces->last_wait_ms[i] = s->last_wait;
      if (traces && traces->visits) traces->visits[i] = s->visits;
    }
    if (out->uris_visited) out->mean_first_visit_s /= (double)out->uris_visited;
    if (policy == KR_SIM_POISSON) score_estimates(r);
    for (size_t j = 0; j < r->nhosts; j++)
      if (kr_frontier_host_vtrust(r->hosts[j]->h)->distrusts) out->hosts_distrusted++;
  }

out:
  if (r->f) {
    int c = kr_frontier_close(r->f);
    if (c < 0 && !rc) rc = errf(err, errlen, c, "closing the frontier: %s", kr_strerror(c));
  }
  kr_timers_close(&r->timers, NULL);
  if (!o->keep_state && dir[0]) remove_state(dir);
  free(dir);
  for (size_t i = 0; i < r->nfetch_objs; i++) free(r->all_fetches[i]);
  free(r->all_fetches);
  for (size_t i = 0; i < r->nhosts; i++) {
    free(r->hosts[i]->name);
    free(r->hosts[i]);
  }
  free(r->hosts);
  free(r->hmap);
  free(r->s);
  kr_config_matcher_free(r->matcher);
  if (r->own_cfg) kr_config_free(r->own_cfg);
  out->wall_s = mono_s() - wall0;
  out->cpu_s = cpu_s() - cpu0;
  return rc;
}

int kr_sim_run(const kr_sim_world_t *w, const kr_sim_opts_t *o, kr_sim_policy_t policy,
               kr_sim_result_t *out, char *err, size_t errlen) {
  return kr_sim_run_ex(w, o, policy, out, NULL, err, errlen);
}

/* ---- derived figures and names ----------------------------------------------------------- */

double kr_sim_capture_ratio(const kr_sim_metrics_t *m) {
  return m->versions ? (double)m->captured / (double)m->versions : 0;
}
double kr_sim_freshness(const kr_sim_metrics_t *m) {
  return m->observed_s > 0 ? m->fresh_s / m->observed_s : 0;
}
double kr_sim_age_s(const kr_sim_metrics_t *m) {
  return m->observed_s > 0 ? m->age_s2 / m->observed_s : 0;
}
double kr_sim_fetches_per_version(const kr_sim_metrics_t *m) {
  return m->captured ? (double)m->fetches / (double)m->captured : 0;
}
double kr_sim_unchanged_saving(const kr_sim_metrics_t *m) {
  return m->unchanged_full_bytes
             ? 1.0 - (double)m->unchanged_body_bytes / (double)m->unchanged_full_bytes
             : 0;
}

int64_t kr_sim_fixed_interval(const kr_sim_result_t *ref, uint64_t uris, int64_t duration_ms) {
  double n = (double)uris, f = (double)ref->all.fetches;
  double span = (double)duration_ms / 1000.0 - ref->mean_first_visit_s;
  if (!(f > n) || !(span > 0)) return duration_ms;
  double ms = n * span / (f - n) * 1000.0;
  if (ms < 1000) ms = 1000;
  if (ms > (double)duration_ms) ms = (double)duration_ms;
  return (int64_t)ms;
}

static const char *const policy_names[KR_SIM_POLICIES] = {"fixed", "multiplicative", "poisson",
                                                           "oracle"};

const char *kr_sim_policy_name(kr_sim_policy_t p) {
  return (unsigned)p < KR_SIM_POLICIES ? policy_names[p] : "?";
}

int kr_sim_policy_parse(const char *s, size_t n, kr_sim_policy_t *out) {
  for (int i = 0; i < KR_SIM_POLICIES; i++)
    if (strlen(policy_names[i]) == n && memcmp(policy_names[i], s, n) == 0) {
      *out = (kr_sim_policy_t)i;
      return 0;
    }
  return KR_EINVAL;
}

const char *kr_sim_validators_name(kr_sim_validators_t v) {
  static const char *const names[] = {"correct", "missing", "lying"};
  return (unsigned)v < 3 ? names[v] : "?";
}
