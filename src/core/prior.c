/*
 * Informed priors: path templates, per-host pools of change evidence and
 * the hierarchical estimate (see include/kria/prior.h).
 */
#include "kria/prior.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"

#define RATE_MIN 1e-12 /* changes/s: once in 30,000 years */
#define RATE_MAX 10.0
#define LM_BAD_SHARE 0.1

/* ---- templates ---------------------------------------------------------------- */

typedef struct tbuf {
  char *p;
  size_t n, cap; /* cap includes the NUL */
} tbuf_t;

static void put(tbuf_t *b, const char *s, size_t n) {
  if (b->n + 1 >= b->cap) return;
  size_t room = b->cap - 1 - b->n;
  if (n > room) n = room;
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void puts_(tbuf_t *b, const char *s) { put(b, s, strlen(s)); }

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

static int all_of(const char *s, size_t n, int (*f)(char)) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!f(s[i])) return 0;
  return 1;
}

/* 8-4-4-4-12 hex digits. */
static int is_uuid(const char *s, size_t n) {
  if (n != 36) return 0;
  for (size_t i = 0; i < n; i++) {
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i])) return 0;
  }
  return 1;
}

/* 2024-05-31 or 2024_05_31. */
static int is_date(const char *s, size_t n) {
  if (n != 10 || (s[4] != '-' && s[4] != '_') || s[7] != s[4]) return 0;
  for (size_t i = 0; i < n; i++)
    if (i != 4 && i != 7 && !is_digit(s[i])) return 0;
  return 1;
}

/* A percent escape of a byte >= 0x80 (UTF-8 text, encoded). */
static int has_high_escape(const char *s, size_t n) {
  for (size_t i = 0; i + 2 < n; i++)
    if (s[i] == '%' && is_hex(s[i + 1]) && is_hex(s[i + 2]) && lower(s[i + 1]) >= '8') return 1;
  return 0;
}

/* Words separated by - _ + or %20. */
static unsigned words(const char *s, size_t n) {
  unsigned w = 0;
  int in = 0;
  for (size_t i = 0; i < n; i++) {
    int sep = s[i] == '-' || s[i] == '_' || s[i] == '+';
    if (s[i] == '%' && i + 2 < n && s[i + 1] == '2' && s[i + 2] == '0') {
      sep = 1;
      i += 2;
    }
    if (sep) {
      in = 0;
    } else if (!in) {
      in = 1;
      w++;
    }
  }
  return w;
}

/* Letters and digits mixed with a digit run before a letter (abc123def,
 * a1b2c3): an identifier, not a word with a number at its end. */
static int is_mixed_id(const char *s, size_t n) {
  if (n < 6) return 0;
  int digit_then_alpha = 0, seen_digit = 0, seen_alpha = 0;
  for (size_t i = 0; i < n; i++) {
    if (is_digit(s[i])) {
      seen_digit = 1;
    } else if (is_alpha(s[i])) {
      seen_alpha = 1;
      if (seen_digit) digit_then_alpha = 1;
    } else {
      return 0;
    }
  }
  return seen_digit && seen_alpha && digit_then_alpha;
}

static int isd(char c) { return is_digit(c); }
static int ish(char c) { return is_hex(c); }

/* Write a segment's base (no extension) as the template has it. */
static void put_base(tbuf_t *b, const char *s, size_t n) {
  if (!n) return;
  if (all_of(s, n, isd)) return puts_(b, "{n}");
  if (is_date(s, n)) return puts_(b, "{date}");
  if (is_uuid(s, n)) return puts_(b, "{id}");
  if (n >= 8 && all_of(s, n, ish)) {
    for (size_t i = 0; i < n; i++)
      if (is_digit(s[i])) return puts_(b, "{id}");
  }
  if (is_mixed_id(s, n)) return puts_(b, "{id}");
  if (n > 32 || words(s, n) >= 3 || has_high_escape(s, n)) return puts_(b, "{slug}");
  /* kept, with runs of digits as {n} (page10, v2) */
  for (size_t i = 0; i < n;) {
    if (is_digit(s[i])) {
      while (i < n && is_digit(s[i])) i++;
      puts_(b, "{n}");
    } else {
      put(b, &s[i], 1);
      i++;
    }
  }
}

static void put_segment(tbuf_t *b, const char *s, size_t n) {
  /* a short alphanumeric extension stays, lowercased */
  size_t dot = n;
  for (size_t i = n; i > 0; i--) {
    if (s[i - 1] == '.') {
      dot = i - 1;
      break;
    }
  }
  size_t elen = dot < n ? n - dot - 1 : 0;
  int ext = dot > 0 && dot < n && elen >= 1 && elen <= 5;
  for (size_t i = dot + 1; ext && i < n; i++)
    if (!is_digit(s[i]) && !is_alpha(s[i])) ext = 0;
  if (!ext) return put_base(b, s, n);
  put_base(b, s, dot);
  put(b, ".", 1);
  for (size_t i = dot + 1; i < n; i++) {
    char c = lower(s[i]);
    put(b, &c, 1);
  }
}

typedef struct qkey {
  const char *p;
  size_t n;
} qkey_t;

static int qkey_cmp(const qkey_t *a, const qkey_t *b) {
  size_t m = a->n < b->n ? a->n : b->n;
  int c = memcmp(a->p, b->p, m);
  return c ? c : (a->n > b->n) - (a->n < b->n);
}

static void put_query(tbuf_t *b, const char *q, size_t n) {
  qkey_t k[KR_PRIOR_QUERY_KEYS];
  size_t nk = 0;
  int more = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && q[j] != '&' && q[j] != ';') j++;
    size_t e = i;
    while (e < j && q[e] != '=') e++;
    qkey_t key = {q + i, e - i};
    if (key.n > 32) key = (qkey_t){"{k}", 3};
    if (key.n) {
      /* insertion into the sorted, deduplicated list */
      size_t at = 0;
      while (at < nk && qkey_cmp(&k[at], &key) < 0) at++;
      if (at < nk && qkey_cmp(&k[at], &key) == 0) {
        /* repeated */
      } else if (nk == KR_PRIOR_QUERY_KEYS) {
        more = 1;
      } else {
        memmove(&k[at + 1], &k[at], (nk - at) * sizeof *k);
        k[at] = key;
        nk++;
      }
    }
    i = j + 1;
  }
  for (size_t i = 0; i < nk; i++) {
    put(b, i ? "&" : "?", 1);
    put(b, k[i].p, k[i].n);
  }
  if (more) puts_(b, nk ? "&{more}" : "?{more}");
}

size_t kr_prior_template(const char *url, size_t n, char *out, size_t cap) {
  if (!cap) return 0;
  tbuf_t b = {out, 0, cap};
  out[0] = 0;
  if (!url) n = 0;
  /* the path of an absolute URL */
  size_t i = 0;
  for (size_t k = 0; k + 2 < n && url[k] != '/' && url[k] != '?'; k++) {
    if (url[k] == ':' && url[k + 1] == '/' && url[k + 2] == '/') {
      i = k + 3;
      while (i < n && url[i] != '/' && url[i] != '?' && url[i] != '#') i++;
      break;
    }
  }
  size_t end = i;
  while (end < n && url[end] != '#') end++;
  size_t qpos = i;
  while (qpos < end && url[qpos] != '?') qpos++;
  unsigned depth = 0;
  size_t s = i < qpos && url[i] == '/' ? i + 1 : i;
  if (s >= qpos) put(&b, "/", 1);
  while (s < qpos) {
    size_t e = s;
    while (e < qpos && url[e] != '/') e++;
    if (depth == KR_PRIOR_DEPTH) {
      puts_(&b, "/{more}");
      break;
    }
    put(&b, "/", 1);
    put_segment(&b, url + s, e - s);
    depth++;
    if (e == qpos) break;
    s = e + 1;
    if (s == qpos) put(&b, "/", 1); /* a trailing slash */
  }
  if (qpos < end) put_query(&b, url + qpos + 1, end - qpos - 1);
  return b.n;
}

uint64_t kr_prior_key(const char *s, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= UINT64_C(0x100000001b3);
  }
  h ^= h >> 33;
  h *= UINT64_C(0xff51afd7ed558ccd);
  h ^= h >> 33;
  return h ? h : 1;
}

uint64_t kr_prior_type_key(const char *ct, size_t n) {
  char t[128];
  size_t m = 0;
  for (size_t i = 0; ct && i < n && ct[i] != ';'; i++) {
    if (ct[i] == ' ' || ct[i] == '\t') continue;
    if (m < sizeof t) t[m++] = lower(ct[i]);
  }
  return m ? kr_prior_key(t, m) : 0;
}

/* ---- pools ----------------------------------------------------------------------- */

#define EULER_GAMMA 0.5772156649015329
#define AGE_NOISE 1.6449340668482264 /* pi^2 / 6: variance of ln of an Exp(1) */
#define TAU2_MIN 0.01
#define AGE_SPREAD_N 8     /* age samples before their spread is judged */
#define AGE_SPREAD_MIN 0.5 /* variance of ln a below which ages are not evidence */

void kr_prior_params_default(kr_prior_params_t *pp) {
  pp->group_k = 4;
  pp->max_n = 4096;
  pp->weight_min = 0.25;
  pp->weight_max = 0.5;
  pp->min_obs = 3;
  pp->lm_verified = 3;
  pp->unverified_wait = 2 * 86400;
  pp->unjudged_wait = 86400;
}

void kr_prior_pool_init(kr_prior_pool_t *p) { memset(p, 0, sizeof *p); }

void kr_prior_pool_free(kr_prior_pool_t *p) {
  free(p->types);
  free(p->tmpls);
  memset(p, 0, sizeof *p);
}

static void stat_halve(kr_prior_stat_t *s) {
  s->h_n *= 0.5, s->h_sum *= 0.5, s->h_sq *= 0.5, s->h_noise *= 0.5;
  s->a_n *= 0.5, s->a_sum *= 0.5, s->a_sq *= 0.5;
  s->lm_n *= 0.5, s->lm_bad *= 0.5, s->lm_chg *= 0.5;
}

static void stat_bound(kr_prior_stat_t *s, double max_n) {
  if (!(max_n >= 16)) max_n = 16;
  while (s->h_n > max_n || s->a_n > max_n || s->lm_n > max_n) stat_halve(s);
  if (s->members > 1e12) s->members = 1e12;
}

/* The group of key in a (n held, at most cap_max), created when absent,
 * the least recently observed replaced when full. */
static kr_prior_group_t *group_get(kr_prior_pool_t *p, kr_prior_group_t **a, unsigned *n,
                                   unsigned *cap, unsigned cap_max, uint64_t key) {
  if (!key) return NULL;
  for (unsigned i = 0; i < *n; i++)
    if ((*a)[i].key == key) return &(*a)[i];
  kr_prior_group_t *g;
  if (*n < cap_max) {
    if (*n == *cap) {
      unsigned nc = *cap ? *cap * 2 : 2;
      if (nc > cap_max) nc = cap_max;
      *a = kr_xrealloc(*a, nc * sizeof **a);
      *cap = nc;
    }
    g = &(*a)[(*n)++];
  } else {
    g = &(*a)[0];
    for (unsigned i = 1; i < *n; i++)
      if ((*a)[i].used < g->used) g = &(*a)[i];
    p->evicted++;
  }
  memset(g, 0, sizeof *g);
  g->key = key;
  return g;
}

static const kr_prior_group_t *group_find(const kr_prior_group_t *a, unsigned n, uint64_t key) {
  if (!key) return NULL;
  for (unsigned i = 0; i < n; i++)
    if (a[i].key == key) return &a[i];
  return NULL;
}

/* The host's Last-Modified ages: 0 contradicted by the content, 1 not
 * (yet), 2 checked against it and held (prior.h "Groups"). */
static int lm_state(const kr_prior_stat_t *host, const kr_prior_params_t *pp) {
  if (host->lm_bad > LM_BAD_SHARE * host->lm_n) return 0;
  /* the ages of pages changing as Poisson processes are exponential: ln a
   * spreads by pi^2/6 at least. Ages that agree (one Last-Modified for
   * every page: a template's date, a deploy) are not change evidence */
  if (host->a_n >= AGE_SPREAD_N) {
    double mean = host->a_sum / host->a_n;
    if (host->a_sq / host->a_n - mean * mean < AGE_SPREAD_MIN) return 0;
  }
  return host->lm_chg >= pp->lm_verified ? 2 : 1;
}

/* A group's (m, tau2) from its parent's (prior.h "Estimate"). */
static void stat_solve(const kr_prior_stat_t *s, const kr_prior_params_t *pp, int ages, double pm,
                       double ptau2, double *m, double *tau2, double *evidence) {
  /* usable ages replace the history samples: those depend on the
   * intervals the policy chose (a page unchanged over six visits says
   * only that its rate is below about one over them), the ages do not */
  double n = s->h_n, sum = s->h_sum, sq = s->h_sq, noise = s->h_noise;
  if (ages && s->a_n > 0) n = s->a_n, sum = s->a_sum, sq = s->a_sq, noise = s->a_n * AGE_NOISE;
  double k = pp->group_k > 0 ? pp->group_k : 1;
  *m = pm;
  *tau2 = ptau2;
  *evidence = n;
  if (!(n > 0) || !isfinite(sum) || !isfinite(sq)) return;
  double mean = sum / n;
  *m = (n * mean + k * pm) / (n + k);
  if (n >= 2) {
    double t = sq / n - mean * mean - noise / n;
    if (!(t > TAU2_MIN)) t = TAU2_MIN;
    *tau2 = (n * t + k * ptau2) / (n + k);
  }
}

typedef struct chain {
  const kr_prior_stat_t *s[3]; /* host, type, template (NULL: none) */
  double m[4], tau2[4], ev[4]; /* root, host, type, template */
  int ages;                    /* lm_state of the host */
} chain_t;

/* Does h say the URI sends no Last-Modified (visits, none with an age)?
 * Such a URI's groups speak through history samples alone (prior.h
 * "Estimate"). */
static int without_lm(const kr_vhist_t *h) {
  if (!h || !h->n) return 0;
  unsigned n = h->n > KR_VHIST_MAX ? KR_VHIST_MAX : h->n;
  for (unsigned i = 0; i < n; i++)
    if (h->v[i].age_s >= 0) return 0;
  return 1;
}

/* no_lm: the URI sends no Last-Modified (without_lm). When its template
 * has no ages either, its pages are not the population the host's ages
 * describe, and the chain rests on history samples (prior.h "Estimate"). */
static void chain_solve(const kr_prior_pool_t *p, const kr_prior_params_t *pp, uint64_t type,
                        uint64_t tmpl, double root, double root_tau2, int no_lm, chain_t *c) {
  const kr_prior_group_t *tg = group_find(p->types, p->ntypes, type);
  const kr_prior_group_t *pg = group_find(p->tmpls, p->ntmpls, tmpl);
  c->s[0] = &p->host;
  c->s[1] = tg ? &tg->s : NULL;
  c->s[2] = pg ? &pg->s : NULL;
  c->ages = no_lm && !(pg && pg->s.a_n > 0) ? 0 : lm_state(&p->host, pp);
  /* the root's mean rate exp(m + tau2/2) is the evaluator's lambda0 */
  c->tau2[0] = root_tau2;
  c->m[0] = log(root) - root_tau2 / 2;
  c->ev[0] = 0;
  for (int i = 0; i < 3; i++) {
    c->m[i + 1] = c->m[i], c->tau2[i + 1] = c->tau2[i], c->ev[i + 1] = 0;
    if (c->s[i])
      stat_solve(c->s[i], pp, c->ages, c->m[i], c->tau2[i], &c->m[i + 1], &c->tau2[i + 1],
                 &c->ev[i + 1]);
  }
}

static double root_tau2_of(double default_weight) {
  return 2.0 / (default_weight > 0.05 && isfinite(default_weight) ? default_weight : 1.0);
}

static double clean_root(double root) {
  if (!(root >= RATE_MIN)) return RATE_MIN; /* also NaN */
  return root > RATE_MAX ? RATE_MAX : root;
}

/* The first visit's version age in h, as a log-rate sample; 0 none. */
static int first_age(const kr_vhist_t *h, const kr_est_params_t *ep, double *l) {
  if (!h || !h->n || h->v[0].interval_s != 0 || h->v[0].state == KR_CONTENT_UNKNOWN) return 0;
  int64_t a = h->v[0].age_s;
  if (a < 0 || (double)a < ep->lm_min_age_s || a < 1) return 0;
  *l = -log((double)a) - EULER_GAMMA;
  return 1;
}

void kr_prior_estimate(const kr_prior_pool_t *p, const kr_prior_params_t *pp,
                       const kr_est_params_t *ep, uint64_t type, uint64_t tmpl,
                       const kr_vhist_t *h, double root_rate, double default_weight,
                       kr_prior_est_t *out) {
  root_rate = clean_root(root_rate);
  out->rate = root_rate;
  out->weight = default_weight;
  out->evidence = 0;
  out->level = 0;
  out->tau2 = 0;
  if (!p) return;
  chain_t c;
  chain_solve(p, pp, type, tmpl, root_rate, root_tau2_of(default_weight), without_lm(h), &c);
  double m = c.m[3], v = c.tau2[3];
  for (int i = 0; i < 3; i++) {
    out->evidence += c.ev[i + 1];
    if (c.s[i] && c.ev[i + 1] > 0) out->level = i + 1;
  }
  if (!out->level) return; /* nothing learned: the evaluator's prior as it is */
  double l;
  if (c.ages && first_age(h, ep, &l)) { /* the URI's own first age, a noisy sample */
    double v2 = 1.0 / (1.0 / v + 1.0 / AGE_NOISE);
    m = v2 * (m / v + l / AGE_NOISE);
    v = v2;
  }
  /* the mean rate of a log-normal: the changes a new URI is expected to make */
  double rate = exp(m + v / 2);
  /* ages not yet checked (the first pass of a host: no revisits yet) are
   * used, but may only bring a URI back within unverified_wait: a server
   * whose Last-Modified never moves looks like a static site until a
   * revisit finds the content changed under an old date; within
   * unjudged_wait while too few ages say whether they spread at all */
  double cap = p->host.a_n >= AGE_SPREAD_N ? pp->unverified_wait : pp->unjudged_wait;
  double floor_rate = log(2.0) / (cap > 0 ? cap : 86400);
  if (c.ages == 1 && p->host.a_n > 0 && rate < floor_rate) rate = floor_rate;
  out->rate = clean_root(rate);
  double w = 2.0 / v;
  if (w < pp->weight_min) w = pp->weight_min;
  if (w > pp->weight_max) w = pp->weight_max;
  out->weight = w;
  /* the posterior only under a log-normal fitted to first-visit ages: one
   * fitted to history samples is censored by the intervals the policy
   * chose (a page that changed at each of its first visits says only
   * that its rate is above about one over them), and its narrow tail
   * holds the fast pages back (prior.h "Estimate") */
  out->tau2 = c.ages && p->host.a_n > 0 ? v : 0;
}

static void stat_add(kr_prior_stat_t *s, int first, int has_age, double age_l, int lm_check,
                     int lm_bad, int lm_chg, int has_h, double h_l, double h_noise) {
  if (first) s->members += 1;
  if (has_age) s->a_n += 1, s->a_sum += age_l, s->a_sq += age_l * age_l;
  if (lm_check) s->lm_n += 1, s->lm_bad += lm_bad, s->lm_chg += lm_chg;
  if (has_h) s->h_n += 1, s->h_sum += h_l, s->h_sq += h_l * h_l, s->h_noise += h_noise;
}

void kr_prior_observe(kr_prior_pool_t *p, const kr_prior_params_t *pp, const kr_est_params_t *ep,
                      uint64_t type, uint64_t tmpl, const kr_vhist_t *h, double root_rate) {
  if (!p || !h || !h->n) return;
  const kr_vhist_visit_t *last = &h->v[h->n - 1];
  if (last->state == KR_CONTENT_UNKNOWN) return;
  int first = h->n == 1 && last->interval_s == 0;
  int has_age = 0, lm_check = 0, lm_bad = 0, lm_chg = 0, has_h = 0;
  double age_l = 0, h_l = 0, h_noise = 0;
  if (first) {
    has_age = first_age(h, ep, &age_l);
    if (!has_age && last->age_s >= 0) lm_check = lm_bad = 1; /* "Last-Modified: now" */
  } else {
    kr_est_obs_t obs[KR_VHIST_MAX];
    size_t no = kr_vhist_observations(h, obs, KR_VHIST_MAX);
    if (!no || !(obs[no - 1].t > 0) || !isfinite(obs[no - 1].t)) return;
    const kr_est_obs_t *o = &obs[no - 1];
    if (o->age >= 0) {
      lm_check = 1;
      if (o->changed) {
        lm_bad = !(o->age >= ep->lm_min_age_s && o->age <= o->t + ep->lm_slack_s);
        lm_chg = !lm_bad;
      } else {
        lm_bad = !(o->age >= o->t - ep->lm_slack_s && o->age >= ep->lm_min_age_s);
      }
    }
    /* once, when its history first rests on min_obs observations: the
     * URI's own estimate, pulled only weakly toward its group so that
     * the spread measures the URIs and not the shrinkage */
    if ((double)no == floor(pp->min_obs) && no >= 2) {
      kr_est_params_t weak = *ep;
      weak.prior_weight = pp->weight_min;
      kr_est_result_t own;
      kr_est_rate(&weak, h, clean_root(root_rate), &own);
      if (own.lambda > 0 && isfinite(own.lambda)) {
        has_h = 1;
        h_l = log(own.lambda);
        h_noise = 2.0 / (double)no;
      }
    }
  }
  if (!first && !lm_check && !has_h) return;
  p->tick++;
  kr_prior_group_t *tg = group_get(p, &p->types, &p->ntypes, &p->cap_types, KR_PRIOR_TYPES, type);
  kr_prior_group_t *pg =
      group_get(p, &p->tmpls, &p->ntmpls, &p->cap_tmpls, KR_PRIOR_TEMPLATES, tmpl);
  if (tg) tg->used = p->tick;
  if (pg) pg->used = p->tick;
  kr_prior_stat_t *s[3] = {&p->host, tg ? &tg->s : NULL, pg ? &pg->s : NULL};
  for (int i = 0; i < 3; i++) {
    if (!s[i]) continue;
    stat_add(s[i], first, has_age, age_l, lm_check, lm_bad, lm_chg, has_h, h_l, h_noise);
    stat_bound(s[i], pp->max_n);
  }
}

/* ---- the pool's format ------------------------------------------------------------ */

static void put_u32(uint8_t *o, uint32_t v) {
  for (int i = 0; i < 4; i++) o[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *o, uint64_t v) {
  for (int i = 0; i < 8; i++) o[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

#define STAT_BYTES (KR_PRIOR_STAT_FIELDS * 8)
#define GROUP_BYTES (8 + STAT_BYTES)

static void stat_fields(kr_prior_stat_t *s, double **f) {
  double *a[KR_PRIOR_STAT_FIELDS] = {&s->members, &s->h_n,  &s->h_sum,  &s->h_sq,
                                     &s->h_noise, &s->a_n,  &s->a_sum,  &s->a_sq,
                                     &s->lm_n,    &s->lm_bad, &s->lm_chg};
  memcpy(f, a, sizeof a);
}

static void put_stat(uint8_t *o, const kr_prior_stat_t *s) {
  kr_prior_stat_t c = *s;
  double *f[KR_PRIOR_STAT_FIELDS];
  stat_fields(&c, f);
  for (int i = 0; i < KR_PRIOR_STAT_FIELDS; i++) {
    uint64_t u;
    memcpy(&u, f[i], 8);
    put_u64(o + 8 * i, u);
  }
}

static int get_stat(const uint8_t *in, kr_prior_stat_t *s) {
  double *f[KR_PRIOR_STAT_FIELDS];
  stat_fields(s, f);
  for (int i = 0; i < KR_PRIOR_STAT_FIELDS; i++) {
    uint64_t u = get_u64(in + 8 * i);
    memcpy(f[i], &u, 8);
    if (!isfinite(*f[i])) return KR_EINVAL;
    if (f[i] != &s->h_sum && f[i] != &s->a_sum && *f[i] < 0) return KR_EINVAL;
  }
  return 0;
}

size_t kr_prior_pool_encode(const kr_prior_pool_t *p, uint8_t *out, size_t cap) {
  size_t need = 1 + 8 + STAT_BYTES + (size_t)(p->ntypes + p->ntmpls) * GROUP_BYTES;
  if (cap < need) return need;
  out[0] = KR_PRIOR_VERSION;
  put_u32(out + 1, p->ntypes);
  put_u32(out + 5, p->ntmpls);
  put_stat(out + 9, &p->host);
  uint8_t *o = out + 9 + STAT_BYTES;
  for (int l = 0; l < 2; l++) {
    const kr_prior_group_t *a = l ? p->tmpls : p->types;
    unsigned n = l ? p->ntmpls : p->ntypes;
    for (unsigned i = 0; i < n; i++, o += GROUP_BYTES) {
      put_u64(o, a[i].key);
      put_stat(o + 8, &a[i].s);
    }
  }
  return need;
}

int kr_prior_pool_decode(kr_prior_pool_t *p, const uint8_t *in, size_t len) {
  kr_prior_pool_free(p);
  if (!in || len < 9 + STAT_BYTES || in[0] != KR_PRIOR_VERSION) return KR_EINVAL;
  uint32_t nt = get_u32(in + 1), np = get_u32(in + 5);
  if (nt > KR_PRIOR_TYPES || np > KR_PRIOR_TEMPLATES ||
      len != 9 + STAT_BYTES + (size_t)(nt + np) * GROUP_BYTES)
    return KR_EINVAL;
  kr_prior_pool_t q;
  kr_prior_pool_init(&q);
  if (get_stat(in + 9, &q.host)) return KR_EINVAL;
  if (nt) q.types = kr_xcalloc(nt, sizeof *q.types);
  if (np) q.tmpls = kr_xcalloc(np, sizeof *q.tmpls);
  q.cap_types = nt, q.cap_tmpls = np;
  const uint8_t *o = in + 9 + STAT_BYTES;
  for (int l = 0; l < 2; l++) {
    kr_prior_group_t *a = l ? q.tmpls : q.types;
    unsigned n = l ? np : nt;
    for (unsigned i = 0; i < n; i++, o += GROUP_BYTES) {
      a[i].key = get_u64(o);
      a[i].used = ++q.tick; /* the LRU order restarts in array order */
      int bad = !a[i].key || get_stat(o + 8, &a[i].s);
      for (unsigned j = 0; !bad && j < i; j++) bad = a[j].key == a[i].key;
      if (bad) {
        kr_prior_pool_free(&q);
        return KR_EINVAL;
      }
      if (l) q.ntmpls++;
      else q.ntypes++;
    }
  }
  *p = q;
  return 0;
}
