/*
 * Change signals as evidence (see include/kria/signal.h): the per-host,
 * per-source reliability counts, their Beta posteriors and lower bounds,
 * the two decisions a trusted signal drives (pull forward, stretch the
 * regular wait), the share of a host's fetches pulled and what it
 * leaves the allocator, and the versioned encoding another module
 * persists. Sections: counts, posteriors, decisions, budget, encoding.
 */
#include "kria/signal.h"

#include <math.h>
#include <string.h>

#include "kria/error.h"
#include "kria/validators.h"

void kr_sig_params_default(kr_sig_params_t *p) {
  p->prior_a = 1;
  p->prior_b = 1;
  p->decay = 0.99;
  p->z = 1.64;
  p->precision_min = 0.6;
  p->recall_min = 0.6;
  p->max_stretch = 8;
  p->sample_rate = 0.01;
  p->probation = 10;
}

const char *kr_sig_source_name(kr_sig_source_t s) {
  return s == KR_SIG_LASTMOD  ? "lastmod"
         : s == KR_SIG_FEED   ? "feed"
         : s == KR_SIG_WEBSUB ? "websub"
                              : "?";
}

/* ---- counts -------------------------------------------------------------------- */

void kr_sig_seen(kr_sig_rel_t *r) {
  if (r->seen < UINT32_MAX) r->seen++;
}

kr_sig_verdict_t kr_sig_record(kr_sig_rel_t *r, const kr_sig_params_t *p, int signalled,
                               int changed) {
  if (!signalled && !changed) return KR_SIG_TN;
  float d = (float)(p->decay > 0 && p->decay <= 1 ? p->decay : 1);
  r->tp *= d;
  r->fp *= d;
  r->fn *= d;
  kr_sig_verdict_t v = signalled ? (changed ? KR_SIG_TP : KR_SIG_FP) : KR_SIG_FN;
  float *c = v == KR_SIG_TP ? &r->tp : v == KR_SIG_FP ? &r->fp : &r->fn;
  if (*c < (float)KR_SIG_COUNT_MAX - 1) *c += 1;
  if (r->verified < UINT32_MAX) r->verified++;
  return v;
}

/* ---- posteriors ------------------------------------------------------------------ */

/* Mean and lower bound of Beta(a + s, b + f). */
static double beta_mean(const kr_sig_params_t *p, double s, double f) {
  return (p->prior_a + s) / (p->prior_a + p->prior_b + s + f);
}

static double beta_lb(const kr_sig_params_t *p, double s, double f) {
  double a = p->prior_a + s, b = p->prior_b + f, n = a + b;
  double m = a / n, sd = sqrt(a * b / (n * n * (n + 1)));
  double lb = m - p->z * sd;
  return lb > 0 ? lb : 0;
}

double kr_sig_precision(const kr_sig_rel_t *r, const kr_sig_params_t *p) {
  return beta_mean(p, r->tp, r->fp);
}
double kr_sig_recall(const kr_sig_rel_t *r, const kr_sig_params_t *p) {
  return beta_mean(p, r->tp, r->fn);
}
double kr_sig_precision_lb(const kr_sig_rel_t *r, const kr_sig_params_t *p) {
  return beta_lb(p, r->tp, r->fp);
}
double kr_sig_recall_lb(const kr_sig_rel_t *r, const kr_sig_params_t *p) {
  return beta_lb(p, r->tp, r->fn);
}

/* ---- decisions -------------------------------------------------------------------- */

int kr_sig_pulls(const kr_sig_rel_t *r, const kr_sig_params_t *p) {
  if (r->verified < p->probation) return 1;
  return kr_sig_precision_lb(r, p) >= p->precision_min;
}

double kr_sig_stretch(const kr_sig_rel_t *r, const kr_sig_params_t *p, uint64_t fp,
                      uint32_t visit) {
  if (r->verified < p->probation || !(p->max_stretch > 1)) return 1;
  if (kr_sig_precision_lb(r, p) < p->precision_min) return 1; /* no pull: no stretch */
  double rec = kr_sig_recall_lb(r, p);
  if (rec < p->recall_min) return 1;
  /* a sample independent of the validator-trust one */
  if (kr_vtrust_is_sample(p->sample_rate, fp ^ UINT64_C(0x5167a15e5167a15e), visit)) return 1;
  double s = rec < 1 ? 1 / (1 - rec) : p->max_stretch;
  return s < p->max_stretch ? s : p->max_stretch;
}

/* ---- budget ------------------------------------------------------------------------- */

void kr_sig_host_fetched(kr_sig_host_t *h, int pulled) {
  if (h->fetched < KR_SIG_PULL_WINDOW) h->fetched++;
  h->pulled += ((pulled ? 1.0f : 0.0f) - h->pulled) / (float)h->fetched;
}

double kr_sig_host_budget(const kr_sig_host_t *h, double budget) {
  double s = h->pulled;
  if (!(s > 0)) return budget; /* NaN too */
  return budget * (s < 0.9 ? 1 - s : 0.1); /* a tenth stays planned */
}

/* ---- encoding ------------------------------------------------------------------------ */

static void put32(uint8_t *o, uint32_t v) {
  for (int i = 0; i < 4; i++) o[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t fixed(float c) {
  double v = (double)c;
  if (!(v > 0)) return 0;
  if (v > KR_SIG_COUNT_MAX) v = KR_SIG_COUNT_MAX;
  return (uint32_t)lround(v * 1024);
}

void kr_sig_host_encode(const kr_sig_host_t *h, uint8_t out[KR_SIG_HOST_BYTES]) {
  out[0] = KR_SIG_VERSION;
  out[1] = KR_SIG_SOURCES;
  uint8_t *o = out + 2;
  for (int s = 0; s < KR_SIG_SOURCES; s++, o += 20) {
    const kr_sig_rel_t *r = &h->src[s];
    put32(o, fixed(r->tp));
    put32(o + 4, fixed(r->fp));
    put32(o + 8, fixed(r->fn));
    put32(o + 12, r->seen);
    put32(o + 16, r->verified);
  }
}

/* Sources are appended, never reordered: a record of n sources holds
 * ours up to n (older records: the rest start fresh) and perhaps a newer
 * build's after them (skipped, but still checked for range). */
int kr_sig_host_decode(kr_sig_host_t *h, const uint8_t *p, size_t len) {
  kr_sig_host_init(h);
  if (!p || len < 2 || p[0] != KR_SIG_VERSION || p[1] < KR_SIG_SOURCES_MIN ||
      len != 2 + 20 * (size_t)p[1])
    return KR_EINVAL;
  kr_sig_host_t t;
  kr_sig_host_init(&t);
  const uint8_t *q = p + 2;
  for (int s = 0; s < p[1]; s++, q += 20) {
    uint32_t c[3];
    for (int k = 0; k < 3; k++) {
      c[k] = get32(q + 4 * k);
      if ((double)c[k] > KR_SIG_COUNT_MAX * 1024) return KR_EINVAL;
    }
    if (s >= KR_SIG_SOURCES) continue;
    t.src[s] = (kr_sig_rel_t){.tp = (float)(c[0] / 1024.0),
                              .fp = (float)(c[1] / 1024.0),
                              .fn = (float)(c[2] / 1024.0),
                              .seen = get32(q + 12),
                              .verified = get32(q + 16)};
  }
  *h = t;
  return 0;
}
