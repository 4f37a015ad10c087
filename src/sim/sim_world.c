/*
 * Simulator worlds (see sim.h): the ground truth of `kria simulate`, built
 * from a trace file or synthetically, and read-only while runs use it.
 * One array of URIs, their URLs in one string pool, the content types
 * interned, explicit change times in one array, and an index by
 * fingerprint. Sections: common, change processes (Poisson with shifts
 * and cycles), synthetic (with the rate mix, shifts, cycles and
 * importance), trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier.h" /* KR_URL_MAX */
#include "internal.h"
#include "kria/fp.h"
#include "kria/url.h"
#include "sim_int.h"

#define MIN_PERIOD_MS 1000          /* Poisson and regular periods: >= 1 s */
#define MAX_PERIOD_MS (100 * KR__SIM_YEAR_MS)
#define MAX_SIZE (UINT64_C(1) << 30)
#define DEFAULT_SIZE 10240

int kr__sim_errf(char *err, size_t errlen, int rc, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* ---- common ------------------------------------------------------------------ */

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
  free(w->ev);
  for (size_t i = 0; i < w->nhev; i++) free(w->hev[i].host);
  free(w->hev);
  free(w);
}

size_t kr_sim_world_count(const kr_sim_world_t *w) { return w->n; }


void kr_sim_world_uri(const kr_sim_world_t *w, size_t i, kr_sim_uri_info_t *out) {
  const wuri_t *u = &w->u[i];
  out->url = kr__sim_url(w, u);
  out->content_type = w->types[u->ctype];
  out->change = (kr_sim_change_t)u->change;
  out->rate = u->rate;
  out->period_ms = u->period_ms;
  out->at_n = u->at_n;
  out->validators = (kr_sim_validators_t)u->validators;
  out->is_volatile = u->is_volatile;
  out->size = u->size;
  out->importance = (double)u->imp_q / KR_SIM_IMP_ONE_Q;
  out->shift_at_ms = u->shift_at == KR__SIM_NEVER ? -1 : u->shift_at;
  out->rate_after = u->shift_at == KR__SIM_NEVER ? u->rate : u->rate2;
}

/* ---- change processes -------------------------------------------------------- */

#define CYC_DAY_MS 86400000.0
#define CYC_WEEK_MS (7 * CYC_DAY_MS)

/* The cycles' factor at offset off (ms) from the start. */
static double cycle_factor(const kr_sim_world_t *w, int64_t off) {
  double d = (double)off;
  return (1 + w->cyc_a * cos(2 * M_PI * d / CYC_DAY_MS + w->cyc_pd)) *
         (1 + w->cyc_b * cos(2 * M_PI * d / CYC_WEEK_MS + w->cyc_pw));
}

/* The integral of cos(omega x + phi) over [0, d]. */
static double icos(double omega, double phi, double d) {
  return (sin(omega * d + phi) - sin(phi)) / omega;
}

/* The mean of the cycles' factor over [0, d) (ms): the product expanded,
 * each term in closed form. */
static double cycle_mean(const kr_sim_world_t *w, int64_t d_ms) {
  if (!w->cyc_on || d_ms <= 0) return 1;
  double d = (double)d_ms, od = 2 * M_PI / CYC_DAY_MS, ow = 2 * M_PI / CYC_WEEK_MS;
  double a = w->cyc_a, b = w->cyc_b, pd = w->cyc_pd, pw = w->cyc_pw;
  double sum = d + a * icos(od, pd, d) + b * icos(ow, pw, d) +
               a * b / 2 * (icos(od - ow, pd - pw, d) + icos(od + ow, pd + pw, d));
  return sum / d;
}

uint64_t kr__sim_stream(const kr_sim_world_t *w, const wuri_t *u) {
  return kr__sim_mix64(w->seed * UINT64_C(0x9e3779b97f4a7c15) ^ kr__sim_mix64(u->fp));
}

int64_t kr__sim_next_change(const kr_sim_world_t *w, const wuri_t *u, uint64_t *rng, int64_t t0,
                            int64_t from) {
  int64_t shift = u->shift_at == KR__SIM_NEVER ? INT64_MAX : t0 + u->shift_at;
  double fmax = w->cyc_on ? (1 + w->cyc_a) * (1 + w->cyc_b) : 1;
  int64_t p = from;
  for (int guard = 0; guard < 10000000; guard++) {
    double rate = p < shift ? u->rate : u->rate2;
    if (!(rate > 0)) {
      if (p >= shift) return INT64_MAX;
      p = shift;
      continue;
    }
    int64_t c = p + kr__sim_exp_ms(rng, rate * fmax);
    if (p < shift && c >= shift) { /* memoryless: drawn again from the shift */
      p = shift;
      continue;
    }
    /* thinning: a candidate at the peak rate kept with rate / peak rate */
    if (w->cyc_on && kr__sim_unif(rng) * fmax > cycle_factor(w, c - t0)) {
      p = c;
      continue;
    }
    return c;
  }
  return INT64_MAX;
}

void kr__sim_poisson_start(const kr_sim_world_t *w, const wuri_t *u, uint64_t *rng, int64_t t0,
                           int64_t *last, int64_t *next) {
  /* the live version's birth: at the rate before any shift, no cycle */
  int64_t back = u->rate > 0 ? kr__sim_exp_ms(rng, u->rate) : KR__SIM_YEAR_MS;
  *last = t0 - KR_MIN(back, KR__SIM_YEAR_MS);
  *next = kr__sim_next_change(w, u, rng, t0, t0);
}

double kr__sim_true_rate(const kr_sim_world_t *w, const wuri_t *u, int64_t duration_ms, int64_t at) {
  switch (u->change) {
  case KR_SIM_POISSON_RATE:
    return (at >= u->shift_at ? u->rate2 : u->rate) * cycle_mean(w, duration_ms);
  case KR_SIM_EVERY: return 1000.0 / (double)u->period_ms;
  case KR_SIM_AT: return (double)u->at_n * 1000.0 / (double)duration_ms;
  default: return 0;
  }
}

double kr_sim_world_true_rate(const kr_sim_world_t *w, size_t i, int64_t duration_ms,
                              int64_t at_ms) {
  return kr__sim_true_rate(w, &w->u[i], duration_ms, at_ms);
}

size_t kr_sim_world_changes(const kr_sim_world_t *w, size_t i, int64_t duration_ms,
                            int64_t *out, size_t max) {
  const wuri_t *u = &w->u[i];
  const int64_t t0 = KR_SIM_T0;
  size_t n = 0;
  switch (u->change) {
  case KR_SIM_POISSON_RATE: {
    uint64_t rng = kr__sim_stream(w, u);
    int64_t last, next;
    kr__sim_poisson_start(w, u, &rng, t0, &last, &next);
    for (; next < t0 + duration_ms; next = kr__sim_next_change(w, u, &rng, t0, next)) {
      if (out && n < max) out[n] = next - t0;
      n++;
    }
    break;
  }
  case KR_SIM_EVERY:
    for (int64_t t = u->period_ms; t < duration_ms; t += u->period_ms) {
      if (out && n < max) out[n] = t;
      n++;
    }
    break;
  case KR_SIM_AT:
    for (uint32_t k = 0; k < u->at_n && w->at[u->at_off + k] < duration_ms; k++) {
      if (out && n < max) out[n] = w->at[u->at_off + k];
      n++;
    }
    break;
  default:
    break;
  }
  return n;
}

/* ---- the population's rates (the bayes reference's prior) ------------------- */

#define PRIOR_STEP 0.1 /* cells over ln rate: a posterior of 64 visits is
                        * >= 0.12 wide, and sums over cells this fine
                        * integrate such a bell to within 1e-9 */

/* P(ln rate <= u) of one mix component that changes. */
static double mix_cdf(const kr_sim_mix_item_t *it, double u) {
  if (it->wb_shape > 0) /* rate 1/P, P Weibull: P(P >= e^-u) */
    return exp(-pow(exp(-u) / it->wb_scale_s, it->wb_shape));
  double a = -log(it->hi_s), b = -log(it->lo_s);
  if (!(b - a > 1e-12)) return u >= a ? 1.0 : 0.0;
  return u <= a ? 0.0 : u >= b ? 1.0 : (u - a) / (b - a);
}

/* The range of ln rate where a component has all but 1e-12 of its mass,
 * within the clamps of the periods. */
static void mix_range(const kr_sim_mix_item_t *it, double *lo, double *hi) {
  double umin = -log((double)MAX_PERIOD_MS / 1000.0), umax = -log((double)MIN_PERIOD_MS / 1000.0);
  if (it->wb_shape > 0) {
    double ls = log(it->wb_scale_s), q = -log(1e-12); /* (e^-u / s)^k = q or 1/q */
    *lo = KR_MAX(umin, -ls - log(q) / it->wb_shape);
    *hi = KR_MIN(umax, -ls + q / it->wb_shape);
  } else {
    *lo = -log(it->hi_s);
    *hi = -log(it->lo_s);
  }
}

size_t kr_sim_world_prior(const kr_sim_world_t *w, int64_t duration_ms, double *rate,
                          double *logw, size_t max) {
  double never = 0, lo = INFINITY, hi = -INFINITY;
  size_t ncells = max - 1; /* one kept for never */
  double *mass = kr_xcalloc(ncells, sizeof *mass);
  double scale = w->mix.n ? cycle_mean(w, duration_ms) : 1.0;
  if (w->mix.n) {
    double wsum = 0;
    for (unsigned c = 0; c < w->mix.n; c++) wsum += w->mix.item[c].weight;
    for (unsigned c = 0; c < w->mix.n; c++) {
      const kr_sim_mix_item_t *it = &w->mix.item[c];
      if (it->never) {
        never += it->weight / wsum;
        continue;
      }
      double a, b;
      mix_range(it, &a, &b);
      lo = KR_MIN(lo, a), hi = KR_MAX(hi, b);
    }
  } else {
    for (size_t i = 0; i < w->n; i++) {
      double r = kr__sim_true_rate(w, &w->u[i], duration_ms, 0);
      if (r > 0) lo = KR_MIN(lo, log(r)), hi = KR_MAX(hi, log(r));
    }
  }
  size_t g = 0;
  if (hi >= lo) {
    double step = PRIOR_STEP;
    if ((hi - lo) / step + 1 > (double)ncells) step = (hi - lo) / (double)(ncells - 1);
    g = (size_t)floor((hi - lo) / step) + 1;
    if (g > ncells) g = ncells;
    for (size_t j = 0; j < g; j++) rate[j] = lo + step * (double)j; /* ln, for now */
    if (w->mix.n) {
      double wsum = 0;
      for (unsigned c = 0; c < w->mix.n; c++) wsum += w->mix.item[c].weight;
      for (unsigned c = 0; c < w->mix.n; c++) {
        const kr_sim_mix_item_t *it = &w->mix.item[c];
        if (it->never) continue;
        /* cell j holds (u_j - step/2, u_j + step/2]; the end cells all below or above */
        double prev = 0;
        for (size_t j = 0; j < g; j++) {
          double f = j + 1 == g ? 1.0 : mix_cdf(it, rate[j] + step / 2);
          mass[j] += (f - prev) * it->weight / wsum;
          prev = f;
        }
      }
    } else {
      for (size_t i = 0; i < w->n; i++) {
        double r = kr__sim_true_rate(w, &w->u[i], duration_ms, 0);
        if (!(r > 0)) {
          never += 1;
          continue;
        }
        size_t j = (size_t)floor((log(r) - lo) / step + 0.5);
        mass[j < g ? j : g - 1] += 1;
      }
    }
  } else if (!w->mix.n) {
    never = 1; /* nothing changes */
  }
  size_t k = 0;
  for (size_t j = 0; j < g; j++) {
    if (!(mass[j] > 0)) continue;
    rate[k] = exp(rate[j]) * scale;
    logw[k++] = log(mass[j]);
  }
  if (never > 0 || k == 0) {
    rate[k] = 0;
    logw[k++] = never > 0 ? log(never) : 0.0;
  }
  free(mass);
  return k;
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
  u->imp_q = KR_SIM_IMP_ONE_Q;
  u->shift_at = KR__SIM_NEVER;
  return u;
}

int64_t kr__sim_world_find(const kr_sim_world_t *w, uint64_t fp) {
  if (!w->map_cap) return -1;
  size_t mask = w->map_cap - 1;
  for (size_t j = (size_t)kr__sim_mix64(fp) & mask;; j = (j + 1) & mask) {
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
  for (size_t j = (size_t)kr__sim_mix64(fp) & mask;; j = (j + 1) & mask) {
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

/* SHAPE:SCALE of a Weibull component (n bytes at p). */
static int weibull_parse(const char *p, size_t n, kr_sim_mix_item_t *it) {
  const char *colon = memchr(p, ':', n);
  char num[64];
  if (!colon || (size_t)(colon - p) >= sizeof num || colon == p) return -1;
  memcpy(num, p, (size_t)(colon - p));
  num[colon - p] = 0;
  char *end;
  errno = 0;
  double k = strtod(num, &end);
  if (*end || errno || !(k >= 0.1 && k <= 10)) return -1;
  int64_t scale;
  size_t sn = n - (size_t)(colon - p) - 1;
  if (dur_parse(colon + 1, sn, &scale) || scale < MIN_PERIOD_MS || scale > MAX_PERIOD_MS) return -1;
  it->wb_shape = k;
  it->wb_scale_s = (double)scale / 1000.0;
  return 0;
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
    if (!n) return kr__sim_errf(err, errlen, KR_EINVAL, "mix: empty component");
    if (out->n >= KR_SIM_MAX_MIX)
      return kr__sim_errf(err, errlen, KR_EINVAL, "mix: more than %u components", KR_SIM_MAX_MIX);
    kr_sim_mix_item_t *it = &out->item[out->n];
    it->weight = 1;
    const char *colon = memchr(p, ':', n);
    if (colon && !(n >= 8 && memcmp(p, "weibull:", 8) == 0)) {
      char num[64];
      size_t wl = (size_t)(colon - p);
      if (wl == 0 || wl >= sizeof num)
        return kr__sim_errf(err, errlen, KR_EINVAL, "mix: bad weight in '%.*s'", (int)n, p);
      memcpy(num, p, wl);
      num[wl] = 0;
      char *end;
      errno = 0;
      double wt = strtod(num, &end);
      if (*end || errno || !(wt > 0) || !isfinite(wt))
        return kr__sim_errf(err, errlen, KR_EINVAL, "mix: bad weight '%s'", num);
      it->weight = wt;
      n -= wl + 1;
      p = colon + 1;
    }
    if (n == 5 && memcmp(p, "never", 5) == 0) {
      it->never = 1;
    } else if (n >= 8 && memcmp(p, "weibull:", 8) == 0) {
      if (weibull_parse(p + 8, n - 8, it))
        return kr__sim_errf(err, errlen, KR_EINVAL,
                            "mix: bad '%.*s' (want weibull:SHAPE:SCALE, 0.1 <= SHAPE <= 10, SCALE "
                            "a period within 1s..36500d, e.g. weibull:0.8:5d)",
                            (int)n, p);
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
          return kr__sim_errf(err, errlen, KR_EINVAL, "mix: bad range '%.*s' (want LO..HI, e.g. 1h..30d)",
                      (int)n, p);
      } else {
        if (dur_parse(p, n, &lo))
          return kr__sim_errf(err, errlen, KR_EINVAL,
                      "mix: bad component '%.*s' (want never, a period or LO..HI)", (int)n, p);
        hi = lo;
      }
      if (lo < MIN_PERIOD_MS || hi > MAX_PERIOD_MS || lo > hi)
        return kr__sim_errf(err, errlen, KR_EINVAL,
                    "mix: '%.*s': periods must be within 1s..36500d, low first", (int)n, p);
      it->lo_s = (double)lo / 1000.0;
      it->hi_s = (double)hi / 1000.0;
    }
    out->n++;
    i = j + 1;
  }
  return 0;
}

/* A change rate from the mix (changes/s; 0: never), the draws from r:
 * one to pick the component, one for its rate. */
static double draw_rate(const kr_sim_mix_t *mix, double wsum, uint64_t *r) {
  double pick = kr__sim_unif(r) * wsum;
  const kr_sim_mix_item_t *it = &mix->item[mix->n - 1];
  for (unsigned c = 0; c < mix->n; c++) {
    if (pick < mix->item[c].weight) {
      it = &mix->item[c];
      break;
    }
    pick -= mix->item[c].weight;
  }
  if (it->never) return 0;
  if (it->wb_shape > 0) {
    double p = it->wb_scale_s * pow(-log(kr__sim_unif(r)), 1.0 / it->wb_shape);
    p = KR_MAX(p, MIN_PERIOD_MS / 1000.0);
    p = KR_MIN(p, MAX_PERIOD_MS / 1000.0);
    return 1.0 / p;
  }
  double lp = log(it->lo_s) + kr__sim_unif(r) * (log(it->hi_s) - log(it->lo_s));
  return 1.0 / exp(lp);
}

/* A number of the whole token after a prefix; -1 when it is not one. */
static int num_after(const char *s, size_t skip, double *out) {
  char *end;
  errno = 0;
  double d = strtod(s + skip, &end);
  if (end == s + skip || *end || errno || !isfinite(d)) return -1;
  *out = d;
  return 0;
}

int kr_sim_importance_parse(const char *s, kr_sim_importance_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (strcmp(s, "1") == 0) return 0;
  if (strncmp(s, "pareto:", 7) == 0) {
    if (num_after(s, 7, &out->param) || !(out->param > 1) || out->param > 100)
      return kr__sim_errf(err, errlen, KR_EINVAL,
                          "--importance: bad '%s' (pareto:ALPHA wants 1 < ALPHA <= 100)", s);
    out->kind = KR_SIM_IMP_PARETO;
    return 0;
  }
  if (strncmp(s, "lognormal:", 10) == 0) {
    if (num_after(s, 10, &out->param) || !(out->param > 0) || out->param > 4)
      return kr__sim_errf(err, errlen, KR_EINVAL,
                          "--importance: bad '%s' (lognormal:SIGMA wants 0 < SIGMA <= 4)", s);
    out->kind = KR_SIM_IMP_LOGNORMAL;
    return 0;
  }
  return kr__sim_errf(err, errlen, KR_EINVAL,
                      "--importance: bad '%s' (want 1, pareto:ALPHA or lognormal:SIGMA)", s);
}

/* An importance in units of 2^-16, within 0..KR_SIM_IMP_MAX. */
static uint64_t imp_quantise(double v) {
  if (!(v > 0)) return 0;
  if (v > KR_SIM_IMP_MAX) v = KR_SIM_IMP_MAX;
  return (uint64_t)llround(v * KR_SIM_IMP_ONE_Q);
}

/* A share of the URIs, picked by a stream of their own, shift their rate
 * at the given time: multiplied, or drawn anew from the mix. */
static void synth_shift(const kr_sim_synth_t *s, const kr_sim_mix_t *mix, double wsum, uint64_t i,
                        wuri_t *u) {
  uint64_t z = kr__sim_mix64(s->seed * UINT64_C(0xd6e8feb86659fd93) ^ (i + 0x5b1f7));
  if (!(kr__sim_unif(&z) < s->shift.share)) return;
  double after = s->shift.redraw ? draw_rate(mix, wsum, &z) : u->rate * s->shift.factor;
  if (!(u->rate > 0) && !(after > 0)) return; /* never, before and after */
  u->change = KR_SIM_POISSON_RATE;
  u->rate2 = after;
  u->shift_at = s->shift.at_ms;
}

/* The cycles' phases at the start (sim.h: peaks in UTC on the virtual
 * clock; 1970-01-05 was a Monday). */
static void synth_cycles(const kr_sim_synth_t *s, kr_sim_world_t *w) {
  const kr_sim_cycles_t *c = &s->cycles;
  if (!(c->daily > 0) && !(c->weekly > 0)) return;
  const double day = 86400000.0, week = 7 * day;
  double pd = c->daily_peak_h * 3600000.0;
  double pw = (4 + c->weekly_peak_day) * day + day / 2;
  w->cyc_on = 1;
  w->cyc_a = c->daily;
  w->cyc_b = c->weekly;
  w->cyc_pd = 2 * M_PI * fmod((double)KR_SIM_T0 - pd, day) / day;
  w->cyc_pw = 2 * M_PI * fmod((double)KR_SIM_T0 - pw, week) / week;
}

/* Draw every URI's importance from a stream of its own (so that the
 * other draws of the world do not move), then divide by the mean. */
static void synth_importance(const kr_sim_synth_t *s, kr_sim_world_t *w) {
  if (s->importance.kind == KR_SIM_IMP_ONE) return;
  double *v = kr_xmalloc(w->n * sizeof *v), sum = 0;
  for (size_t i = 0; i < w->n; i++) {
    uint64_t r = kr__sim_mix64(s->seed * UINT64_C(0x9e6c63d0676a9a99) ^ (i + 0x1a7));
    if (s->importance.kind == KR_SIM_IMP_PARETO)
      v[i] = pow(kr__sim_unif(&r), -1.0 / s->importance.param); /* x_m = 1 */
    else
      v[i] = exp(s->importance.param * kr__sim_gauss(&r));
    sum += v[i];
  }
  double mean = sum / (double)w->n;
  for (size_t i = 0; i < w->n; i++) w->u[i].imp_q = imp_quantise(v[i] / mean);
  free(v);
}

/* The next comma-separated item of *sp into buf (NUL-terminated); 0 at
 * the end, -1 when it is longer than buf. */
static int item_next(const char **sp, char *buf, size_t len) {
  const char *p = *sp;
  if (!*p) return 0;
  size_t n = strcspn(p, ",");
  *sp = p + n + (p[n] == ',');
  if (n >= len) return -1;
  memcpy(buf, p, n);
  buf[n] = 0;
  return 1;
}

int kr_sim_shift_parse(const char *s, kr_sim_shift_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  const char *p = s;
  char it[96];
  int rc, has_share = 0, has_at = 0;
  while ((rc = item_next(&p, it, sizeof it)) != 0) {
    char *eq = strchr(it, '=');
    double d;
    if (rc < 0) return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: item too long in '%s'", s);
    if (!strcmp(it, "redraw")) {
      out->redraw = 1;
      continue;
    }
    if (!eq)
      return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: bad item '%s' (share=S, at=T, factor=F or redraw)", it);
    *eq = 0;
    const char *val = eq + 1;
    if (!strcmp(it, "share")) {
      if (num_after(val, 0, &d) || !(d > 0 && d <= 1))
        return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: bad share=%s (within (0, 1])", val);
      out->share = d;
      has_share = 1;
    } else if (!strcmp(it, "at")) {
      if (!*val || kr_config_parse_duration(val, strlen(val), &out->at_ms) || out->at_ms < 0 ||
          out->at_ms > MAX_PERIOD_MS)
        return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: bad at=%s (a duration from the start, e.g. 10d)", val);
      has_at = 1;
    } else if (!strcmp(it, "factor")) {
      if (num_after(val, 0, &d) || !(d > 0 && d <= 1000))
        return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: bad factor=%s (within (0, 1000])", val);
      out->factor = d;
    } else {
      return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: unknown key '%s' (share, at, factor, redraw)", it);
    }
  }
  if (!has_share || !has_at)
    return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: needs share=S and at=T ('%s')", s);
  if (out->redraw == (out->factor > 0))
    return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: needs one of factor=F and redraw ('%s')", s);
  return 0;
}

static const char *const day_names[7] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

int kr_sim_cycles_parse(const char *s, kr_sim_cycles_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  out->daily_peak_h = 14;
  out->weekly_peak_day = 2;
  const char *p = s;
  char it[96];
  int rc, any = 0;
  while ((rc = item_next(&p, it, sizeof it)) != 0) {
    if (rc < 0) return kr__sim_errf(err, errlen, KR_EINVAL, "--cycles: item too long in '%s'", s);
    int daily = !strncmp(it, "daily:", 6), weekly = !strncmp(it, "weekly:", 7);
    if (!daily && !weekly)
      return kr__sim_errf(err, errlen, KR_EINVAL, "--cycles: bad item '%s' (daily:A[@HOUR] or weekly:A[@DAY])", it);
    char *amp = it + (daily ? 6 : 7), *at = strchr(amp, '@');
    if (at) *at++ = 0;
    double a, h;
    if (num_after(amp, 0, &a) || !(a >= 0 && a <= 1))
      return kr__sim_errf(err, errlen, KR_EINVAL, "--cycles: bad amplitude '%s' (within 0..1)", amp);
    if (daily) {
      out->daily = a;
      if (at && (num_after(at, 0, &h) || !(h >= 0 && h <= 24)))
        return kr__sim_errf(err, errlen, KR_EINVAL, "--cycles: bad peak hour '%s' (0..24, UTC)", at);
      if (at) out->daily_peak_h = h;
    } else {
      out->weekly = a;
      if (at) {
        int d = -1;
        for (int k = 0; k < 7; k++)
          if (!strcmp(at, day_names[k])) d = k;
        if (d < 0) return kr__sim_errf(err, errlen, KR_EINVAL, "--cycles: bad peak day '%s' (mon..sun)", at);
        out->weekly_peak_day = d;
      }
    }
    any = 1;
  }
  return any ? 0 : kr__sim_errf(err, errlen, KR_EINVAL, "--cycles: empty");
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
    return kr__sim_errf(err, errlen, KR_EINVAL, "--urls must be within 1..%u", KR_SIM_MAX_URIS);
  if (s->hosts == 0 || s->hosts > s->urls)
    return kr__sim_errf(err, errlen, KR_EINVAL, "--hosts must be within 1..urls");
  if (!(s->volatile_share >= 0 && s->volatile_share <= 1))
    return kr__sim_errf(err, errlen, KR_EINVAL, "the volatile share must be within 0..1");
  double tot = 0;
  for (int i = 0; i < 3; i++) {
    if (!(s->share[i] >= 0) || !isfinite(s->share[i]))
      return kr__sim_errf(err, errlen, KR_EINVAL, "validator shares must be >= 0");
    tot += s->share[i];
  }
  if (!(tot > 0)) return kr__sim_errf(err, errlen, KR_EINVAL, "validator shares are all 0");
  if (s->size == 0 || s->size > MAX_SIZE)
    return kr__sim_errf(err, errlen, KR_EINVAL, "the body size must be within 1..1GiB");
  if (!(s->shift.share >= 0 && s->shift.share <= 1) ||
      (s->shift.share > 0 && !s->shift.redraw && !(s->shift.factor > 0 && s->shift.factor <= 1000)) ||
      s->shift.at_ms < 0)
    return kr__sim_errf(err, errlen, KR_EINVAL, "--shift: share within 0..1, at >= 0, factor within (0, 1000] or redraw");
  const kr_sim_cycles_t *cy = &s->cycles;
  if (!(cy->daily >= 0 && cy->daily <= 1) || !(cy->weekly >= 0 && cy->weekly <= 1) ||
      !(cy->daily_peak_h >= 0 && cy->daily_peak_h <= 24) || cy->weekly_peak_day < 0 ||
      cy->weekly_peak_day > 6)
    return kr__sim_errf(err, errlen, KR_EINVAL, "--cycles: amplitudes within 0..1, peak hour 0..24, day mon..sun");
  if (s->importance.kind != KR_SIM_IMP_ONE && !(s->importance.param > 0))
    return kr__sim_errf(err, errlen, KR_EINVAL, "--importance: the parameter must be > 0");
  kr_sim_mix_t mix = s->mix;
  if (mix.n == 0) kr_sim_mix_parse("1h..30d", &mix, NULL, 0);
  double wsum = 0;
  for (unsigned i = 0; i < mix.n; i++) wsum += mix.item[i].weight;

  kr_sim_world_t *w = world_new(s->seed);
  w->mix = mix;
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
  uint64_t rs = kr__sim_mix64(s->seed ^ UINT64_C(0x5151));
  for (uint64_t i = s->hosts; i > 1; i--) { /* Fisher-Yates */
    uint64_t j = kr__sim_rnd(&rs) % i;
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
    uint64_t r = kr__sim_mix64(s->seed * UINT64_C(0x2545f4914f6cdd1d) ^ (i + 1));
    u->rate = draw_rate(&mix, wsum, &r);
    u->change = u->rate > 0 ? KR_SIM_POISSON_RATE : KR_SIM_NEVER;
    if (s->shift.share > 0) synth_shift(s, &mix, wsum, i, u);
    u->is_volatile = kr__sim_unif(&r) < s->volatile_share;
    double sz = (double)s->size * exp(0.5 * kr__sim_gauss(&r));
    if (sz < 256) sz = 256;
    if (sz > 16.0 * (double)s->size) sz = 16.0 * (double)s->size;
    u->size = (uint64_t)sz;
  }
  free(hv);
  synth_importance(s, w);
  synth_cycles(s, w);
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
  if (nf < 5) return kr__sim_errf(msg, msglen, KR_EINVAL, "expected URI CONTENT-TYPE CHANGES VALIDATORS VOLATILE, got %zu field%s", nf, nf == 1 ? "" : "s");
  kr_buf_reset(canon);
  int rc = kr_url_canon_str(f[0].p, f[0].n, NULL, NULL, canon);
  if (rc) return kr__sim_errf(msg, msglen, KR_EINVAL, "invalid URI '%.*s'", (int)KR_MIN(f[0].n, 200), f[0].p);
  if (!(canon->len >= 7 && memcmp(canon->data, "http://", 7) == 0) &&
      !(canon->len >= 8 && memcmp(canon->data, "https://", 8) == 0))
    return kr__sim_errf(msg, msglen, KR_EINVAL, "not an http or https URI: '%.*s'",
                (int)KR_MIN(f[0].n, 200), f[0].p);
  if (canon->len > KR_URL_MAX) return kr__sim_errf(msg, msglen, KR_EINVAL, "URI longer than %d bytes", KR_URL_MAX);
  if (!ctype_ok(f[1]))
    return kr__sim_errf(msg, msglen, KR_EINVAL, "bad content type '%.*s' (want type/subtype or -)",
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
      return kr__sim_errf(msg, msglen, KR_EINVAL, "bad period in '%.*s' (a duration within 1s..36500d, e.g. 6h)",
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
        return kr__sim_errf(msg, msglen, KR_EINVAL, "bad time '%.*s' in at= (durations from the start, e.g. 2d,9d12h)",
                    (int)KR_MIN(n, 100), p);
      }
      if (t <= prev) {
        w->nat = at_start;
        return kr__sim_errf(msg, msglen, KR_EINVAL, "at= times must increase strictly ('%.*s')",
                    (int)KR_MIN(n, 100), p);
      }
      if (w->nat - at_start >= KR_SIM_MAX_AT) {
        w->nat = at_start;
        return kr__sim_errf(msg, msglen, KR_EINVAL, "more than %u change times", KR_SIM_MAX_AT);
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
    return kr__sim_errf(msg, msglen, KR_EINVAL, "bad CHANGES '%.*s' (want never, rate=PERIOD, every=PERIOD or at=T,...)",
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
    return kr__sim_errf(msg, msglen, KR_EINVAL, "bad VALIDATORS '%.*s' (want correct, missing or lying)",
                (int)KR_MIN(f[3].n, 100), f[3].p);
  }
  int vol;
  if (tok_is(f[4], "yes"))
    vol = 1;
  else if (tok_is(f[4], "no"))
    vol = 0;
  else {
    w->nat = at_start;
    return kr__sim_errf(msg, msglen, KR_EINVAL, "bad VOLATILE '%.*s' (want yes or no)",
                (int)KR_MIN(f[4].n, 100), f[4].p);
  }
  uint64_t size = DEFAULT_SIZE, imp_q = KR_SIM_IMP_ONE_Q;
  for (size_t i = 5; i < nf; i++) {
    if (tok_prefix(f[i], "importance=")) {
      char num[64];
      size_t n = f[i].n - 11;
      double d = -1;
      if (n && n < sizeof num) {
        memcpy(num, f[i].p + 11, n);
        num[n] = 0;
        if (num_after(num, 0, &d)) d = -1;
      }
      if (!(d >= 0 && d <= KR_SIM_IMP_MAX)) {
        w->nat = at_start;
        return kr__sim_errf(msg, msglen, KR_EINVAL, "bad importance '%.*s' (a number within 0..1e6)",
                    (int)KR_MIN(f[i].n, 100), f[i].p);
      }
      imp_q = imp_quantise(d);
    } else if (tok_prefix(f[i], "size=")) {
      if (kr_config_parse_size(f[i].p + 5, f[i].n - 5, &size) || size > MAX_SIZE) {
        w->nat = at_start;
        return kr__sim_errf(msg, msglen, KR_EINVAL, "bad size '%.*s' (at most 1GiB)",
                    (int)KR_MIN(f[i].n, 100), f[i].p);
      }
    } else {
      w->nat = at_start;
      return kr__sim_errf(msg, msglen, KR_EINVAL, "unknown field '%.*s' (only size=BYTES and importance=W may follow)",
                  (int)KR_MIN(f[i].n, 100), f[i].p);
    }
  }
  int t = type_intern(w, tok_is(f[1], "-") ? "" : f[1].p, tok_is(f[1], "-") ? 0 : f[1].n);
  if (t < 0) {
    w->nat = at_start;
    return kr__sim_errf(msg, msglen, KR_EINVAL, "more than %u distinct content types", KR_SIM_MAX_TYPES);
  }
  if (w->n >= KR_SIM_MAX_URIS) {
    w->nat = at_start;
    return kr__sim_errf(msg, msglen, KR_EINVAL, "more than %u URIs", KR_SIM_MAX_URIS);
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
  u->imp_q = imp_q;
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
      rc = kr__sim_errf(err, errlen, KR_EINVAL, "%s:%zu: line longer than %u bytes", name, lineno,
                KR_SIM_MAX_LINE);
      break;
    }
    if (memchr(p, 0, n)) {
      rc = kr__sim_errf(err, errlen, KR_EINVAL, "%s:%zu: NUL byte", name, lineno);
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
      rc = kr__sim_errf(err, errlen, KR_EINVAL, "%s:%zu: too many fields", name, lineno);
      break;
    }
    if (trace_line(w, f, nf, &canon, msg, sizeof msg)) {
      rc = kr__sim_errf(err, errlen, KR_EINVAL, "%s:%zu: %s", name, lineno, msg);
      break;
    }
    if (w->n > lines_cap) {
      lines_cap = lines_cap ? lines_cap * 2 : 1024;
      lines = kr_xrealloc(lines, lines_cap * sizeof *lines);
    }
    lines[w->n - 1] = (uint32_t)KR_MIN(lineno, UINT32_MAX);
  }
  if (!rc && w->n == 0) rc = kr__sim_errf(err, errlen, KR_EINVAL, "%s: no URIs", name);
  if (!rc) {
    world_map_alloc(w, w->n);
    for (size_t i = 0; i < w->n && !rc; i++) {
      int64_t d = world_index_one(w, i);
      if (d >= 0)
        rc = kr__sim_errf(err, errlen, KR_EINVAL, "%s:%u: duplicate URI %s (first on line %u)", name,
                  lines[i], kr__sim_url(w, &w->u[i]), lines[d]);
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

/* Read a whole file of at most 1 GiB into *buf (*len bytes). 0, KR_EIO or
 * KR_EINVAL (too large) with a message. */
static int read_all(const char *path, char **buf, size_t *len, char *err, size_t errlen) {
  *buf = NULL;
  *len = 0;
  FILE *fp = fopen(path, "rb");
  if (!fp) return kr__sim_errf(err, errlen, KR_EIO, "%s: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *b = kr_xmalloc(cap);
  int rc = 0;
  for (;;) {
    if (n == cap) {
      if (cap >= MAX_SIZE) {
        rc = kr__sim_errf(err, errlen, KR_EINVAL, "%s: larger than 1GiB", path);
        break;
      }
      cap *= 2;
      b = kr_xrealloc(b, cap);
    }
    size_t got = fread(b + n, 1, cap - n, fp);
    n += got;
    if (got == 0) {
      if (ferror(fp)) rc = kr__sim_errf(err, errlen, KR_EIO, "%s: %s", path, strerror(errno));
      break;
    }
  }
  fclose(fp);
  if (rc) {
    free(b);
    return rc;
  }
  *buf = b;
  *len = n;
  return 0;
}

int kr_sim_world_trace_file(const char *path, uint64_t seed, kr_sim_world_t **out, char *err,
                            size_t errlen) {
  *out = NULL;
  char *buf;
  size_t len;
  int rc = read_all(path, &buf, &len, err, errlen);
  if (rc) return rc;
  rc = kr_sim_world_trace(buf, len, path, seed, out, err, errlen);
  free(buf);
  return rc;
}

/* ---- events (sim.h "Events") --------------------------------------------------- */

#define DAY_MS INT64_C(86400000)
#define MAX_EVENTS 100000u
#define MAX_BORN 1000000u /* pages a grow event may add */

/* Every URI gets its event record, defaults first. */
static void ev_sync(kr_sim_world_t *w, size_t from) {
  w->ev = kr_xrealloc(w->ev, (w->cap ? w->cap : 1) * sizeof *w->ev);
  for (size_t i = from; i < w->n; i++) {
    wev_t *e = &w->ev[i];
    memset(e, 0, sizeof *e);
    e->busy_from = e->busy_until = KR__SIM_NEVER;
    e->dead_at = e->unlinked_at = KR__SIM_NEVER;
  }
}

static void hev_add(kr_sim_world_t *w, kr_slice_t host, int kind, int64_t from, int64_t until,
                    uint32_t hub) {
  if ((w->nhev & (w->nhev + 1)) == 0)
    w->hev = kr_xrealloc(w->hev, (w->nhev * 2 + 2) * sizeof *w->hev);
  whev_t *h = &w->hev[w->nhev++];
  h->host = kr_xstrndup(host.p, host.n);
  for (char *c = h->host; *c; c++)
    if (*c >= 'A' && *c <= 'Z') *c = (char)(*c | 0x20);
  h->kind = kind;
  h->from = from;
  h->until = until;
  h->hub = hub;
}

/* The hub of a host: the one named by a hub event, else 0. */
static uint32_t host_hub(const kr_sim_world_t *w, kr_slice_t host) {
  for (size_t i = 0; i < w->nhev; i++)
    if (w->hev[i].kind == KR__SIM_H_HUB && kr__sim_key_eq(kr_slice_cstr(w->hev[i].host), host))
      return w->hev[i].hub;
  return 0;
}

static int host_known(const kr_sim_world_t *w, kr_slice_t host, size_t *first) {
  for (size_t i = 0; i < w->n; i++)
    if (kr__sim_key_eq(kr__sim_host_key(kr__sim_url(w, &w->u[i]), w->u[i].url_len), host)) {
      if (first) *first = i;
      return 1;
    }
  return 0;
}

/* Uniform in [0, 1) from the world's seed, the URI and the event. */
static double ev_unif(const kr_sim_world_t *w, size_t i, uint64_t salt) {
  uint64_t z = kr__sim_mix64(w->seed ^ kr__sim_mix64(w->u[i].fp ^ salt));
  return kr__sim_unif(&z);
}

typedef struct evspec {
  tok_t kind, target;
  int64_t at, at2, dur;  /* at2 > at: a range; dur KR__SIM_NEVER: forever */
  int has_at, has_for;
  double share;          /* 1: every URI of a host target */
  int status;
  int64_t ra_ms;
  int ra_kind;
  double per_day;
  tok_t hub;
  int64_t change_ms;     /* grow: Poisson period of the new pages, 0 never */
} evspec_t;

static int ev_dur(tok_t v, int64_t *ms) {
  return kr_config_parse_duration(v.p, v.n, ms) || *ms < 0 || *ms > MAX_PERIOD_MS ? -1 : 0;
}

static int ev_number(tok_t v, double lo, double hi, double *out) {
  char num[64];
  if (!v.n || v.n >= sizeof num) return -1;
  memcpy(num, v.p, v.n);
  num[v.n] = 0;
  char *end;
  errno = 0;
  double d = strtod(num, &end);
  if (*end || errno || !isfinite(d) || d < lo || d > hi) return -1;
  *out = d;
  return 0;
}

#define EVERR(...) kr__sim_errf(msg, msglen, KR_EINVAL, __VA_ARGS__)

static int ev_keys(evspec_t *e, const tok_t *f, size_t nf, char *msg, size_t msglen) {
  for (size_t i = 2; i < nf; i++) {
    const char *eq = memchr(f[i].p, '=', f[i].n);
    if (!eq) return EVERR("expected KEY=VALUE, got '%.*s'", (int)KR_MIN(f[i].n, 100), f[i].p);
    tok_t k = {f[i].p, (size_t)(eq - f[i].p)}, v = {eq + 1, f[i].n - k.n - 1};
    double d;
    if (tok_is(k, "at")) {
      const char *dots = NULL;
      for (size_t j = 0; j + 1 < v.n; j++)
        if (v.p[j] == '.' && v.p[j + 1] == '.') dots = v.p + j;
      if (dots) {
        tok_t a = {v.p, (size_t)(dots - v.p)}, b = {dots + 2, v.n - a.n - 2};
        if (ev_dur(a, &e->at) || ev_dur(b, &e->at2) || e->at2 <= e->at)
          return EVERR("bad at='%.*s' (T or T1..T2, durations from the start)", (int)KR_MIN(v.n, 100), v.p);
      } else {
        if (ev_dur(v, &e->at)) return EVERR("bad at='%.*s' (a duration from the start, e.g. 10d)", (int)KR_MIN(v.n, 100), v.p);
        e->at2 = e->at;
      }
      e->has_at = 1;
    } else if (tok_is(k, "for")) {
      if (tok_is(v, "forever"))
        e->dur = KR__SIM_NEVER;
      else if (ev_dur(v, &e->dur) || e->dur == 0)
        return EVERR("bad for='%.*s' (a positive duration or forever)", (int)KR_MIN(v.n, 100), v.p);
      e->has_for = 1;
    } else if (tok_is(k, "share")) {
      if (ev_number(v, 0, 1, &e->share) || !(e->share > 0))
        return EVERR("bad share='%.*s' (within (0, 1])", (int)KR_MIN(v.n, 100), v.p);
    } else if (tok_is(k, "status")) {
      if (ev_number(v, 100, 599, &d) || d != floor(d))
        return EVERR("bad status='%.*s'", (int)KR_MIN(v.n, 100), v.p);
      e->status = (int)d;
    } else if (tok_is(k, "retry-after")) {
      if (ev_number(v, 0, 1e9, &d) || d != floor(d))
        return EVERR("bad retry-after='%.*s' (delay-seconds)", (int)KR_MIN(v.n, 100), v.p);
      e->ra_ms = (int64_t)d * 1000;
      e->ra_kind = 1;
    } else if (tok_is(k, "retry-after-date")) {
      if (ev_dur(v, &e->ra_ms))
        return EVERR("bad retry-after-date='%.*s' (how far ahead the HTTP-date is)", (int)KR_MIN(v.n, 100), v.p);
      e->ra_kind = 2;
    } else if (tok_is(k, "per-day")) {
      if (ev_number(v, 0, 100000, &e->per_day) || !(e->per_day > 0))
        return EVERR("bad per-day='%.*s' (pages a day, within (0, 100000])", (int)KR_MIN(v.n, 100), v.p);
    } else if (tok_is(k, "hub")) {
      e->hub = v;
    } else if (tok_is(k, "change")) {
      if (tok_is(v, "never"))
        e->change_ms = 0;
      else if (dur_parse(v.p, v.n, &e->change_ms) || e->change_ms < MIN_PERIOD_MS)
        return EVERR("bad change='%.*s' (never or a period of at least 1s)", (int)KR_MIN(v.n, 100), v.p);
    } else {
      return EVERR("unknown key '%.*s'", (int)KR_MIN(k.n, 100), k.p);
    }
  }
  return 0;
}

/* The URIs an event applies to: its URI, or a share of its host's pages
 * (grown pages and the hub aside, unless only grown pages will do). */
typedef struct evtarget {
  int64_t uri;            /* >= 0: one URI */
  kr_slice_t host;
} evtarget_t;

static int ev_picks(const kr_sim_world_t *w, const evtarget_t *t, const evspec_t *e, size_t i,
                    uint64_t salt, int grown_only) {
  if (t->uri >= 0) return (size_t)t->uri == i;
  if (!kr__sim_key_eq(kr__sim_host_key(kr__sim_url(w, &w->u[i]), w->u[i].url_len), t->host))
    return 0;
  const wev_t *v = &w->ev[i];
  if (v->is_hub) return 0;
  if (grown_only ? !v->born : v->born) return 0;
  return e->share >= 1 || ev_unif(w, i, salt) < e->share;
}

/* An offset within [at, at2] for URI i. */
static int64_t ev_time(const kr_sim_world_t *w, const evspec_t *e, size_t i, uint64_t salt) {
  if (e->at2 <= e->at) return e->at;
  return e->at + (int64_t)(ev_unif(w, i, salt ^ 0x7469) * (double)(e->at2 - e->at));
}

static int ev_grow(kr_sim_world_t *w, const evspec_t *e, kr_slice_t host, int64_t horizon_ms,
                   char *msg, size_t msglen) {
  if (!(e->per_day > 0)) return EVERR("grow needs per-day=N");
  size_t first = 0;
  if (!host_known(w, host, &first)) return EVERR("no URI of host '%.*s' in the world", (int)host.n, host.p);
  uint32_t hub = host_hub(w, host);
  if (e->hub.n) {
    kr_buf_t canon;
    kr_buf_init(&canon, KR_URL_MAX * 4);
    int rc = kr_url_canon_str(e->hub.p, e->hub.n, NULL, NULL, &canon);
    int64_t i = rc ? -1 : kr__sim_world_find(w, kr_fp((const char *)canon.data, canon.len));
    kr_buf_free(&canon);
    if (i < 0) return EVERR("hub='%.*s' is not a URI of the world", (int)KR_MIN(e->hub.n, 200), e->hub.p);
    if (!kr__sim_key_eq(kr__sim_host_key(kr__sim_url(w, &w->u[i]), w->u[i].url_len), host))
      return EVERR("hub='%.*s' is not on host '%.*s'", (int)KR_MIN(e->hub.n, 200), e->hub.p, (int)host.n, host.p);
    if (hub && hub != (uint32_t)i + 1) return EVERR("host '%.*s' has another hub already", (int)host.n, host.p);
    hub = (uint32_t)i + 1;
  }
  if (!hub) hub = (uint32_t)first + 1;
  if (w->ev[hub - 1].born) return EVERR("a hub must be there from the start");
  if (!host_hub(w, host)) hev_add(w, host, KR__SIM_H_HUB, 0, 0, hub);
  w->ev[hub - 1].is_hub = 1;
  int64_t end = e->dur == KR__SIM_NEVER ? horizon_ms : KR_MIN(horizon_ms, e->at + e->dur);
  double step = (double)DAY_MS / e->per_day;
  const wuri_t *h = &w->u[hub - 1];
  /* the new pages take the hub's scheme, type, validators and size */
  char prefix[KR_URL_MAX]; /* scheme://host: the pool moves as pages are added */
  const char *hu = kr__sim_url(w, h);
  size_t scheme = (size_t)(strstr(hu, "://") - hu) + 3;
  snprintf(prefix, sizeof prefix, "%.*s", (int)(scheme + strcspn(hu + scheme, "/?#")), hu);
  char url[KR_URL_MAX];
  for (uint64_t k = 0;; k++) {
    int64_t born = e->at + (int64_t)ceil((double)(k + 1) * step);
    if (born >= end) break;
    if (k >= MAX_BORN || w->n >= KR_SIM_MAX_URIS) return EVERR("grow: more than %u new pages", MAX_BORN);
    int n = snprintf(url, sizeof url, "%s/g%u/%" PRIu64, prefix, w->ngrow, k);
    if (n < 0 || (size_t)n >= sizeof url) return EVERR("grow: URL too long");
    if (kr__sim_world_find(w, kr_fp(url, (size_t)n)) >= 0) continue; /* the trace has it */
    wuri_t *u = world_push(w, url, (size_t)n);
    h = &w->u[hub - 1];
    u->ctype = h->ctype;
    u->validators = h->validators;
    u->size = h->size;
    if (e->change_ms) {
      u->change = KR_SIM_POISSON_RATE;
      u->rate = 1000.0 / (double)e->change_ms;
    }
    ev_sync(w, w->n - 1);
    w->ev[w->n - 1].born = born > 0 ? born : 1;
    w->ev[w->n - 1].hub = hub;
    if (w->n * 2 > w->map_cap) {
      world_map_alloc(w, w->n * 2);
      for (size_t i = 0; i < w->n; i++) world_index_one(w, i);
    } else {
      world_index_one(w, w->n - 1);
    }
  }
  w->ngrow++;
  return 0;
}

int kr_sim_world_event(kr_sim_world_t *w, const char *line, size_t len, int64_t horizon_ms,
                       char *msg, size_t msglen) {
  tok_t f[16];
  size_t nf = 0, k = 0;
  while (k < len && nf <= ARRAY_SIZE(f)) {
    while (k < len && is_blank(line[k])) k++;
    if (k == len) break;
    size_t s = k;
    while (k < len && !is_blank(line[k])) k++;
    if (nf == ARRAY_SIZE(f)) return EVERR("too many fields");
    f[nf++] = (tok_t){line + s, k - s};
  }
  if (nf < 2) return EVERR("expected KIND TARGET [KEY=VALUE ...]");
  if (memchr(line, 0, len)) return EVERR("NUL byte");
  if (!w->ev) ev_sync(w, 0);
  evspec_t e;
  memset(&e, 0, sizeof e);
  e.kind = f[0];
  e.target = f[1];
  e.share = 1;
  e.dur = KR__SIM_NEVER;
  if (ev_keys(&e, f, nf, msg, msglen)) return KR_EINVAL;
  /* the target: a URI of the world, or a host with URIs in it */
  evtarget_t t = {.uri = -1};
  int is_uri = 0;
  for (size_t j = 0; j + 3 <= e.target.n && !is_uri; j++) is_uri = !memcmp(e.target.p + j, "://", 3);
  if (is_uri) {
    kr_buf_t canon;
    kr_buf_init(&canon, KR_URL_MAX * 4);
    int rc = kr_url_canon_str(e.target.p, e.target.n, NULL, NULL, &canon);
    t.uri = rc ? -1 : kr__sim_world_find(w, kr_fp((const char *)canon.data, canon.len));
    kr_buf_free(&canon);
    if (t.uri < 0)
      return EVERR("'%.*s' is not a URI of the world", (int)KR_MIN(e.target.n, 200), e.target.p);
    t.host = kr__sim_host_key(kr__sim_url(w, &w->u[t.uri]), w->u[t.uri].url_len);
    if (e.share < 1) return EVERR("share= is for a host target");
  } else {
    t.host = kr_slice(e.target.p, e.target.n);
    if (!host_known(w, t.host, NULL))
      return EVERR("no URI of host '%.*s' in the world", (int)KR_MIN(e.target.n, 200), e.target.p);
  }
  int64_t until = e.dur == KR__SIM_NEVER || e.at > KR__SIM_NEVER - e.dur ? KR__SIM_NEVER : e.at + e.dur;
  uint64_t salt = kr__sim_mix64(w->nhev * 131 + (uint64_t)w->n + (uint64_t)e.kind.n * 7 + 1);
  int host_only = tok_is(e.kind, "outage") || tok_is(e.kind, "robots-down") || tok_is(e.kind, "grow");
  if (host_only && t.uri >= 0) return EVERR("%.*s names a host, not a URI", (int)e.kind.n, e.kind.p);
  if ((tok_is(e.kind, "outage") || tok_is(e.kind, "robots-down")) && !e.has_for)
    return EVERR("%.*s needs for=DUR (or for=forever)", (int)e.kind.n, e.kind.p);
  if (e.at2 > e.at && !tok_is(e.kind, "die") && !tok_is(e.kind, "unlink"))
    return EVERR("at=T1..T2 is for die and unlink");
  size_t hits = 0;
  if (tok_is(e.kind, "outage")) {
    /* its robots.txt is refused too, and expires hourly: modelled */
    hev_add(w, t.host, KR__SIM_H_OUTAGE, e.at, until, 0);
    hev_add(w, t.host, KR__SIM_H_ROBOTS, 0, 0, 0);
    return 0;
  } else if (tok_is(e.kind, "robots-down")) {
    hev_add(w, t.host, KR__SIM_H_ROBOTS_DOWN, e.at, until, 0);
    hev_add(w, t.host, KR__SIM_H_ROBOTS, 0, 0, 0);
    return 0;
  } else if (tok_is(e.kind, "grow")) {
    return ev_grow(w, &e, t.host, horizon_ms, msg, msglen);
  } else if (tok_is(e.kind, "busy")) {
    if (e.status != 0 && e.status != 429 && e.status != 503)
      return EVERR("busy: status must be 503 or 429");
    for (size_t i = 0; i < w->n; i++)
      if (ev_picks(w, &t, &e, i, salt, 0)) {
        wev_t *v = &w->ev[i];
        v->busy_from = e.at;
        v->busy_until = until;
        v->busy_status = (uint16_t)(e.status ? e.status : 503);
        v->ra_kind = (uint8_t)e.ra_kind;
        v->ra_ms = e.ra_ms;
        hits++;
      }
  } else if (tok_is(e.kind, "die")) {
    if (e.status != 0 && e.status != 404 && e.status != 410) return EVERR("die: status must be 404 or 410");
    if (!e.has_at) return EVERR("die needs at=T or at=T1..T2");
    for (size_t i = 0; i < w->n; i++)
      if (ev_picks(w, &t, &e, i, salt, 0)) {
        w->ev[i].dead_at = ev_time(w, &e, i, salt);
        w->ev[i].dead_status = (uint16_t)(e.status ? e.status : 404);
        hits++;
      }
  } else if (tok_is(e.kind, "unlink")) {
    if (!e.has_at) return EVERR("unlink needs at=T or at=T1..T2");
    for (size_t i = 0; i < w->n; i++)
      if (ev_picks(w, &t, &e, i, salt, 1) || (t.uri >= 0 && (size_t)t.uri == i)) {
        if (!w->ev[i].hub) return EVERR("unlink: %s is not linked by a hub (only grown pages are)", kr__sim_url(w, &w->u[i]));
        w->ev[i].unlinked_at = ev_time(w, &e, i, salt);
        hits++;
      }
  } else if (tok_is(e.kind, "robots-relax")) {
    if (!e.has_at || e.at <= 0) return EVERR("robots-relax needs at=T > 0 (when robots.txt allows them)");
    for (size_t i = 0; i < w->n; i++)
      if (ev_picks(w, &t, &e, i, salt, 0)) {
        w->ev[i].disallow_until = e.at;
        hits++;
      }
    hev_add(w, t.host, KR__SIM_H_ROBOTS, 0, 0, 0);
  } else if (tok_is(e.kind, "seeds-reload")) {
    return EVERR("seeds-reload is not modelled: the seeds and the scope are the crawl's (src/core/scope.c), "
                 "which the simulator does not run");
  } else {
    return EVERR("unknown event '%.*s' (outage, busy, robots-down, robots-relax, grow, die, unlink)",
                 (int)KR_MIN(e.kind.n, 100), e.kind.p);
  }
  if (!hits) return EVERR("no page of '%.*s' picked (raise share=)", (int)KR_MIN(e.target.n, 200), e.target.p);
  return 0;
}

int kr_sim_world_events(kr_sim_world_t *w, const char *text, size_t len, const char *name,
                        int64_t horizon_ms, char *err, size_t errlen) {
  if (!name) name = "<events>";
  size_t lineno = 0, nev = 0;
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && text[j] != '\n') j++;
    lineno++;
    const char *p = text + i;
    size_t n = j - i;
    i = j + 1;
    if (n > KR_SIM_MAX_LINE)
      return kr__sim_errf(err, errlen, KR_EINVAL, "%s:%zu: line longer than %u bytes", name, lineno, KR_SIM_MAX_LINE);
    size_t k = 0;
    while (k < n && is_blank(p[k])) k++;
    if (k == n || p[k] == '#') continue;
    if (++nev > MAX_EVENTS)
      return kr__sim_errf(err, errlen, KR_EINVAL, "%s:%zu: more than %u events", name, lineno, MAX_EVENTS);
    char msg[512];
    if (kr_sim_world_event(w, p, n, horizon_ms, msg, sizeof msg))
      return kr__sim_errf(err, errlen, KR_EINVAL, "%s:%zu: %s", name, lineno, msg);
  }
  return 0;
}

int kr_sim_world_events_file(kr_sim_world_t *w, const char *path, int64_t horizon_ms, char *err,
                             size_t errlen) {
  char *buf;
  size_t len;
  int rc = read_all(path, &buf, &len, err, errlen);
  if (rc) return rc;
  rc = kr_sim_world_events(w, buf, len, path, horizon_ms, err, errlen);
  free(buf);
  return rc;
}

int kr_sim_world_has_events(const kr_sim_world_t *w) { return w->ev != NULL || w->nhev > 0; }
