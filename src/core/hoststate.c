/*
 * A host's learned-state record (see include/kria/hoststate.h for the
 * format). The writer and the reader are bounded cursors over a byte
 * buffer: every put checks the room left and every get the bytes left,
 * so neither can run past its buffer whatever the input. The decoder
 * refuses anything out of range instead of clamping it: a record that is
 * not what kria wrote is not evidence, and the host starts fresh.
 * The pool and signals sections (tags 4, 5) carry their own modules'
 * encodings (prior.h, signal.h): what those refuse costs only that part.
 * Sections: cursors, sections (allocator, capacity plan, trust, pool,
 * signals), record.
 */
#include "kria/hoststate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"

/* ---- cursors ----------------------------------------------------------------- */

#define VARINT_MAX 10 /* 64 bits */
#define SECONDS_MAX (UINT64_C(1) << 40)

typedef struct wcur {
  uint8_t *p;
  size_t n, cap;
  int bad; /* out of room, or a value that cannot be written */
} wcur_t;

static void put_byte(wcur_t *w, uint8_t b) {
  if (w->n >= w->cap) {
    w->bad = 1;
    return;
  }
  w->p[w->n++] = b;
}

static void put_varint(wcur_t *w, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    put_byte(w, (uint8_t)(b | (v ? 0x80 : 0)));
  } while (v);
}

static void put_double(wcur_t *w, double d) {
  if (!isfinite(d)) w->bad = 1;
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  for (int i = 0; i < 8; i++) put_byte(w, (uint8_t)(u >> (8 * i)));
}

typedef struct rcur {
  const uint8_t *p, *end;
} rcur_t;

static int get_byte(rcur_t *r, uint8_t *b) {
  if (r->p >= r->end) return KR_EINVAL;
  *b = *r->p++;
  return 0;
}

static int get_varint(rcur_t *r, uint64_t *out) {
  uint64_t v = 0;
  for (unsigned i = 0; i < VARINT_MAX; i++) {
    uint8_t b;
    if (get_byte(r, &b)) return KR_EINVAL;
    if (i == VARINT_MAX - 1 && b > 1) return KR_EINVAL; /* past 64 bits */
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      if (b == 0 && i > 0) return KR_EINVAL; /* overlong */
      *out = v;
      return 0;
    }
  }
  return KR_EINVAL;
}

/* A varint at most max. */
static int get_upto(rcur_t *r, uint64_t max, uint64_t *out) {
  return get_varint(r, out) || *out > max ? KR_EINVAL : 0;
}

/* A finite double in [lo, hi]. */
static int get_double(rcur_t *r, double lo, double hi, double *out) {
  if (r->end - r->p < 8) return KR_EINVAL;
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u |= (uint64_t)r->p[i] << (8 * i);
  r->p += 8;
  double d;
  memcpy(&d, &u, sizeof d);
  if (!(d >= lo && d <= hi)) return KR_EINVAL; /* NaN fails both */
  *out = d;
  return 0;
}

/* ---- sections -------------------------------------------------------------------- */

static void put_alloc(wcur_t *w, const kr_plan_host_t *a) {
  unsigned ncls = a->ncls <= KR_PLAN_CLASSES ? a->ncls : KR_PLAN_CLASSES;
  put_byte(w, (uint8_t)ncls);
  for (unsigned c = 0; c < ncls; c++) {
    int64_t lo = a->cls[c].min_ms, hi = a->cls[c].max_ms;
    if (lo < 0 || hi < lo || (uint64_t)hi > SECONDS_MAX) w->bad = 1;
    put_varint(w, (uint64_t)(lo < 0 ? 0 : lo));
    put_varint(w, (uint64_t)(hi < 0 ? 0 : hi));
    unsigned held = 0;
    for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++) held += a->cls[c].count[b] != 0;
    put_varint(w, held);
    for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++)
      if (a->cls[c].count[b]) {
        put_byte(w, (uint8_t)b);
        put_varint(w, a->cls[c].count[b]);
      }
  }
  if (!(a->x > 0 && a->x <= KR_HOSTSTATE_X_MAX) || !(a->budget >= 0) ||
      !(a->gain >= KR_PLAN_GAIN_MIN && a->gain <= KR_PLAN_GAIN_MAX) || a->state < 0 ||
      a->state > KR_PLAN_OVER)
    w->bad = 1;
  put_double(w, a->x);
  put_double(w, a->budget);
  put_double(w, a->gain);
  put_byte(w, (uint8_t)a->state);
  put_byte(w, a->solved ? 1 : 0);
}

/* Buckets held, ascending: byte index, varint count. */
static int get_bucket(rcur_t *r, int *prev, unsigned *idx, uint32_t *count) {
  uint8_t b;
  uint64_t n;
  if (get_byte(r, &b) || b >= KR_PLAN_BUCKETS || (int)b <= *prev) return KR_EINVAL;
  if (get_varint(r, &n) || n == 0 || n > UINT32_MAX) return KR_EINVAL;
  *prev = b;
  *idx = b;
  *count = (uint32_t)n;
  return 0;
}

static int get_flag(rcur_t *r, int *out) {
  uint8_t b;
  if (get_byte(r, &b) || b > 1) return KR_EINVAL;
  *out = b;
  return 0;
}

static int get_alloc(rcur_t *r, kr_plan_host_t *a) {
  kr_plan_host_init(a, 0);
  uint8_t ncls;
  if (get_byte(r, &ncls) || ncls > KR_PLAN_CLASSES) return KR_EINVAL;
  a->ncls = ncls;
  for (unsigned c = 0; c < ncls; c++) {
    uint64_t lo, hi, held;
    if (get_upto(r, SECONDS_MAX, &lo) || get_upto(r, SECONDS_MAX, &hi) || lo > hi ||
        get_upto(r, KR_PLAN_BUCKETS, &held))
      return KR_EINVAL;
    a->cls[c].min_ms = (int64_t)lo;
    a->cls[c].max_ms = (int64_t)hi;
    uint64_t total = 0;
    int prev = -1;
    for (uint64_t k = 0; k < held; k++) {
      unsigned b;
      uint32_t n;
      if (get_bucket(r, &prev, &b, &n)) return KR_EINVAL;
      a->cls[c].count[b] = n;
      total += n;
    }
    if (total > UINT32_MAX) return KR_EINVAL;
    a->cls[c].total = (uint32_t)total;
  }
  uint8_t state;
  if (get_double(r, 1e-300, KR_HOSTSTATE_X_MAX, &a->x) || get_double(r, 0, 1e300, &a->budget) ||
      get_double(r, KR_PLAN_GAIN_MIN, KR_PLAN_GAIN_MAX, &a->gain) || get_byte(r, &state) ||
      state > KR_PLAN_OVER || get_flag(r, &a->solved))
    return KR_EINVAL;
  a->state = state;
  return 0;
}

static void put_capplan(wcur_t *w, const kr_capplan_t *p) {
  unsigned held = 0;
  for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++) held += p->count[b] != 0;
  put_varint(w, held);
  for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++)
    if (p->count[b]) {
      put_byte(w, (uint8_t)b);
      put_varint(w, p->count[b]);
      if (!(p->rate[b] >= 0)) w->bad = 1;
      put_double(w, p->rate[b]);
    }
  if (!(p->budget >= 0) || p->floor_ms < 0 || (uint64_t)p->floor_ms > SECONDS_MAX) w->bad = 1;
  put_double(w, p->budget);
  put_varint(w, (uint64_t)(p->floor_ms < 0 ? 0 : p->floor_ms));
  put_byte(w, p->solved ? 1 : 0);
}

static int get_capplan(rcur_t *r, kr_capplan_t *p) {
  memset(p, 0, sizeof *p);
  uint64_t held, total = 0, floor_ms;
  if (get_upto(r, KR_PLAN_BUCKETS, &held)) return KR_EINVAL;
  int prev = -1;
  for (uint64_t k = 0; k < held; k++) {
    unsigned b;
    uint32_t n;
    if (get_bucket(r, &prev, &b, &n) || get_double(r, 0, 1e300, &p->rate[b])) return KR_EINVAL;
    p->count[b] = n;
    total += n;
  }
  if (total > UINT32_MAX) return KR_EINVAL;
  p->total = (uint32_t)total;
  if (get_double(r, 0, 1e300, &p->budget) || get_upto(r, SECONDS_MAX, &floor_ms) ||
      get_flag(r, &p->solved))
    return KR_EINVAL;
  p->floor_ms = (int64_t)floor_ms;
  return 0;
}

#define MS_MAX (UINT64_C(1) << 53)

static void put_vtrust(wcur_t *w, const kr_vtrust_t *t, double sample) {
  const uint64_t v[] = {t->checks,   t->predicted_unchanged, t->skipped, t->verified,
                        t->misses,   t->false_alarms,        t->distrusts, t->miss_run,
                        t->confirm_run};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) put_varint(w, v[i]);
  if (t->distrust_until < 0 || (uint64_t)t->distrust_until > MS_MAX || !(sample >= 0) ||
      !(sample <= 1))
    w->bad = 1;
  put_varint(w, (uint64_t)(t->distrust_until < 0 ? 0 : t->distrust_until));
  put_double(w, sample);
}

static int get_vtrust(rcur_t *r, kr_vtrust_t *t, double *sample) {
  kr_vtrust_init(t);
  uint64_t *c[] = {&t->checks, &t->predicted_unchanged, &t->skipped, &t->verified,
                   &t->misses, &t->false_alarms,        &t->distrusts};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    if (get_varint(r, c[i])) return KR_EINVAL;
  uint64_t miss_run, confirm_run, until;
  if (get_upto(r, UINT32_MAX, &miss_run) || get_upto(r, UINT32_MAX, &confirm_run) ||
      get_upto(r, MS_MAX, &until) || get_double(r, 0, 1, sample))
    return KR_EINVAL;
  t->miss_run = (uint32_t)miss_run;
  t->confirm_run = (uint32_t)confirm_run;
  t->distrust_until = (int64_t)until;
  return 0;
}

/* Another module's blob, written in place: room checked first. */
static void put_pool(wcur_t *w, const kr_prior_pool_t *p) {
  if (!p) {
    w->bad = 1;
    return;
  }
  size_t room = w->cap - w->n, need = kr_prior_pool_encode(p, w->p + w->n, room);
  if (need > room) w->bad = 1;
  else w->n += need;
}

static void put_signals(wcur_t *w, const kr_sig_host_t *h) {
  if (w->cap - w->n < KR_SIG_HOST_BYTES) {
    w->bad = 1;
    return;
  }
  kr_sig_host_encode(h, w->p + w->n);
  w->n += KR_SIG_HOST_BYTES;
}

/* ---- record ------------------------------------------------------------------------ */

void kr_hoststate_init(kr_hoststate_t *s) {
  memset(s, 0, sizeof *s);
  kr_plan_host_init(&s->alloc, 0);
  kr_vtrust_init(&s->vt);
  kr_sig_host_init(&s->sig);
}

void kr_hoststate_free(kr_hoststate_t *s) {
  if (!s->pool) return;
  kr_prior_pool_free(s->pool);
  free(s->pool);
  s->pool = NULL;
}

/* A section: tag, then its payload behind a length. The payload is
 * written in place after the longest length field it could need (2
 * bytes: KR_HOSTSTATE_BYTES < 2^14) and moved back if shorter. */
static void put_section(wcur_t *w, uint8_t tag, const kr_hoststate_t *s) {
  put_byte(w, tag);
  size_t at = w->n;
  put_byte(w, 0);
  put_byte(w, 0);
  if (w->bad) return;
  size_t start = w->n;
  switch (tag) {
  case KR_HS_TAG_ALLOC: put_alloc(w, &s->alloc); break;
  case KR_HS_TAG_CAPPLAN: put_capplan(w, &s->cap); break;
  case KR_HS_TAG_VTRUST: put_vtrust(w, &s->vt, s->vt_sample); break;
  case KR_HS_TAG_PRIORS: put_pool(w, s->pool); break;
  case KR_HS_TAG_SIGNALS: put_signals(w, &s->sig); break;
  default: w->bad = 1;
  }
  if (w->bad) return;
  size_t len = w->n - start;
  if (len >= (1u << 14)) {
    w->bad = 1;
    return;
  }
  if (len < 0x80) { /* one length byte: close the gap */
    w->p[at] = (uint8_t)len;
    memmove(w->p + at + 1, w->p + start, len);
    w->n--;
  } else {
    w->p[at] = (uint8_t)(0x80 | (len & 0x7f));
    w->p[at + 1] = (uint8_t)(len >> 7);
  }
}

size_t kr_hoststate_encode(const kr_hoststate_t *s, uint8_t *out, size_t cap) {
  wcur_t w = {.p = out, .cap = cap < KR_HOSTSTATE_BYTES ? cap : KR_HOSTSTATE_BYTES};
  put_byte(&w, KR_HOSTSTATE_VERSION);
  if (s->has & KR_HS_ALLOC) put_section(&w, KR_HS_TAG_ALLOC, s);
  if (s->has & KR_HS_CAPPLAN) put_section(&w, KR_HS_TAG_CAPPLAN, s);
  if (s->has & KR_HS_VTRUST) put_section(&w, KR_HS_TAG_VTRUST, s);
  if (s->has & KR_HS_PRIORS) put_section(&w, KR_HS_TAG_PRIORS, s);
  if (s->has & KR_HS_SIGNALS) put_section(&w, KR_HS_TAG_SIGNALS, s);
  return w.bad ? 0 : w.n;
}

/* A pool or signals section, decoded by its module. */
static int get_blob(kr_hoststate_t *s, unsigned bit, const uint8_t *p, size_t n) {
  if (bit == KR_HS_SIGNALS) return kr_sig_host_decode(&s->sig, p, n);
  kr_prior_pool_t *pool = kr_xmalloc(sizeof *pool);
  kr_prior_pool_init(pool);
  if (kr_prior_pool_decode(pool, p, n)) {
    free(pool);
    return KR_EINVAL;
  }
  s->pool = pool;
  return 0;
}

static int decode(kr_hoststate_t *s, const uint8_t *p, size_t len) {
  rcur_t r = {p, p + len};
  uint8_t ver;
  if (len > KR_HOSTSTATE_BYTES || get_byte(&r, &ver) || ver != KR_HOSTSTATE_VERSION)
    return KR_EINVAL;
  while (r.p < r.end) {
    uint8_t tag;
    uint64_t n;
    if (get_byte(&r, &tag) || tag == 0 || get_varint(&r, &n) || n > (uint64_t)(r.end - r.p))
      return KR_EINVAL;
    rcur_t sec = {r.p, r.p + n};
    r.p += n;
    unsigned bit = tag == KR_HS_TAG_ALLOC     ? KR_HS_ALLOC
                   : tag == KR_HS_TAG_CAPPLAN ? KR_HS_CAPPLAN
                   : tag == KR_HS_TAG_VTRUST  ? KR_HS_VTRUST
                   : tag == KR_HS_TAG_PRIORS  ? KR_HS_PRIORS
                   : tag == KR_HS_TAG_SIGNALS ? KR_HS_SIGNALS
                                              : 0;
    if (!bit) { /* another module's, or a newer build's */
      s->skipped++;
      continue;
    }
    if ((s->has | s->damaged) & bit) return KR_EINVAL;
    if (bit == KR_HS_PRIORS || bit == KR_HS_SIGNALS) {
      if (get_blob(s, bit, sec.p, n)) s->damaged |= bit;
      else s->has |= bit;
      continue;
    }
    int rc = bit == KR_HS_ALLOC     ? get_alloc(&sec, &s->alloc)
             : bit == KR_HS_CAPPLAN ? get_capplan(&sec, &s->cap)
                                    : get_vtrust(&sec, &s->vt, &s->vt_sample);
    if (rc || sec.p != sec.end) return KR_EINVAL; /* short, or bytes left over */
    s->has |= bit;
  }
  return 0;
}

int kr_hoststate_decode(kr_hoststate_t *s, const uint8_t *p, size_t len) {
  kr_hoststate_init(s);
  if (!len) return 0;
  if (!p || decode(s, p, len)) {
    kr_hoststate_free(s);
    kr_hoststate_init(s);
    return KR_EINVAL;
  }
  return 0;
}
