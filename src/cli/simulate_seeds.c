/*
 * The statistics of `kria simulate --seeds N` (see simulate_seeds.h): per
 * policy the mean over the seeds with its 95 % t-interval, and against the
 * reference policy the mean of the per-seed ratios and of the per-seed
 * differences, each with its paired 95 % t-interval (kr_sim_ci95: the
 * seeds pair the runs, which saw the same world and the same changes).
 */
#include "simulate_seeds.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "internal.h"

/* The measures compared, in print order. */
enum { M_CAPTURE, M_FIRST, M_FRESH, M_HARMONIC, M_FETCHES, M_WCAPTURE, M_N };

static const struct {
  const char *key;    /* JSON */
  const char *title;  /* tables */
  const char *fmt;    /* a value */
} measures[M_N] = {
    {"capture_ratio", "capture ratio (versions captured / versions), whole run", "%.4f"},
    {"first_capture_ratio", "capture ratio, first window", "%.4f"},
    {"freshness", "freshness (share of time fresh)", "%.4f"},
    {"harmonic_penalty", "harmonic staleness penalty (lower is better)", "%.4f"},
    {"fetches", "fetches", "%.0f"},
    {"weighted_capture_ratio", "importance-weighted capture ratio", "%.4f"},
};

static double measure(const kr_sim_result_t *r, int m) {
  switch (m) {
  case M_CAPTURE: return kr_sim_capture_ratio(&r->all);
  case M_FIRST: return kr_sim_capture_ratio(&r->early);
  case M_FRESH: return kr_sim_freshness(&r->all);
  case M_HARMONIC: return kr_sim_harmonic(&r->all);
  case M_FETCHES: return (double)r->all.fetches;
  default: return kr_sim_wcapture_ratio(&r->all);
  }
}

typedef struct stat {
  kr_sim_ci_t mean, ratio, diff; /* ratio: NaN when the reference has a 0 */
} stat_t;

static void stat_of(const kr_simulate_seeds_t *v, size_t p, int m, stat_t *st) {
  size_t n = v->nseeds;
  double *x = kr_xcalloc(n, sizeof *x), *q = kr_xcalloc(n, sizeof *q), *d = kr_xcalloc(n, sizeof *d);
  int ratio_ok = 1;
  for (size_t k = 0; k < n; k++) {
    x[k] = measure(&v->res[k * v->npol + p], m);
    double r = measure(&v->res[k * v->npol + v->ref], m);
    d[k] = x[k] - r;
    if (r != 0)
      q[k] = x[k] / r;
    else
      ratio_ok = 0;
  }
  kr_sim_ci95(x, n, &st->mean);
  kr_sim_ci95(d, n, &st->diff);
  kr_sim_ci95(q, ratio_ok ? n : 0, &st->ratio);
  free(x);
  free(q);
  free(d);
}

static const char *pname(const kr_simulate_seeds_t *v, size_t p) {
  return kr_sim_policy_name(v->res[p].policy);
}

/* "mean ± half" or "[lo, hi]" with the measure's format; "-" for NaN. */
static void fmt_ci(char *out, size_t len, const char *fmt, const kr_sim_ci_t *c, int interval) {
  char a[32], b[32];
  if (isnan(c->mean)) {
    snprintf(out, len, "-");
    return;
  }
  if (!interval) {
    snprintf(a, sizeof a, fmt, c->mean);
    if (isnan(c->half)) {
      snprintf(out, len, "%s", a);
      return;
    }
    snprintf(b, sizeof b, fmt, c->half);
    snprintf(out, len, "%s ± %s", a, b);
    return;
  }
  char m[32];
  snprintf(m, sizeof m, fmt, c->mean);
  if (isnan(c->half)) {
    snprintf(out, len, "%s", m);
    return;
  }
  snprintf(a, sizeof a, fmt, c->lo);
  snprintf(b, sizeof b, fmt, c->hi);
  snprintf(out, len, "%s [%s, %s]", m, a, b);
}

static void print_text(FILE *f, const kr_simulate_seeds_t *v) {
  double days = (double)v->o->duration_ms / 86400000.0, wd = (double)v->o->window_ms / 86400000.0;
  fprintf(f, "kria simulate: %zu URIs on %" PRIu64 " hosts (%s), %.4gd simulated (first window %.4gd), "
          "%zu seeds (%" PRIu64 "..%" PRIu64 ")\n",
          v->uris, v->res[0].hosts, v->source, days, wd, v->nseeds, v->seed0,
          v->seed0 + v->nseeds - 1);
  fprintf(f, "means over the seeds with 95 %% t-intervals; against %s: the mean of the per-seed "
          "ratios and differences with paired 95 %% t-intervals\n", pname(v, v->ref));
  for (int m = 0; m < M_N; m++) {
    const char *fmt = m == M_FETCHES ? "%.0f" : m == M_HARMONIC ? "%.4f" : "%.4f";
    fprintf(f, "\n%s\n%-16s %-24s %-28s %s\n", measures[m].title, "policy", "mean ± 95% CI",
            "ratio to ref [95% CI]", "difference [95% CI]");
    for (size_t p = 0; p < v->npol; p++) {
      stat_t st;
      stat_of(v, p, m, &st);
      char a[128], b[128], c[128];
      fmt_ci(a, sizeof a, fmt, &st.mean, 0);
      if (p == v->ref) {
        snprintf(b, sizeof b, "(ref)");
        c[0] = 0;
      } else {
        fmt_ci(b, sizeof b, "%.4f", &st.ratio, 1);
        fmt_ci(c, sizeof c, fmt, &st.diff, 1);
      }
      char name[48];
      const kr_sim_result_t *r0 = &v->res[p];
      if (r0->policy == KR_SIM_FIXED)
        snprintf(name, sizeof name, "fixed");
      else
        snprintf(name, sizeof name, "%s", pname(v, p));
      fprintf(f, "%-16s %-24s %-28s %s\n", name, a, b, c);
    }
  }
}

static void json_num(FILE *f, double x) {
  if (isnan(x) || isinf(x))
    fputs("null", f);
  else
    fprintf(f, "%.9g", x);
}

static void json_ci(FILE *f, const kr_sim_ci_t *c) {
  fputs("{\"mean\": ", f);
  json_num(f, c->mean);
  fputs(", \"lo\": ", f);
  json_num(f, c->lo);
  fputs(", \"hi\": ", f);
  json_num(f, c->hi);
  fputs("}", f);
}

static void print_json(FILE *f, const kr_simulate_seeds_t *v) {
  fprintf(f, "{\"uris\": %zu, \"hosts\": %" PRIu64 ", \"source\": \"%s\"", v->uris, v->res[0].hosts,
          v->source);
  if (v->trace) {
    fputs(", \"trace\": ", f);
    /* a path: escape quotes and backslashes, drop control characters */
    fputc('"', f);
    for (const char *c = v->trace; *c; c++)
      if (*c == '"' || *c == '\\')
        fprintf(f, "\\%c", *c);
      else if ((unsigned char)*c >= 0x20)
        fputc(*c, f);
    fputc('"', f);
  }
  fprintf(f, ", \"days\": %.6g, \"window_days\": %.6g, \"seeds\": %zu, \"seed_first\": %" PRIu64
          ", \"ref\": \"%s\",\n \"policies\": [",
          (double)v->o->duration_ms / 86400000.0, (double)v->o->window_ms / 86400000.0, v->nseeds,
          v->seed0, pname(v, v->ref));
  for (size_t p = 0; p < v->npol; p++) {
    fprintf(f, "%s\n  {\"policy\": \"%s\"", p ? "," : "", pname(v, p));
    if (v->res[p].policy == KR_SIM_FIXED) {
      fputs(", \"fixed_interval_s\": [", f);
      for (size_t k = 0; k < v->nseeds; k++)
        fprintf(f, "%s%.3f", k ? ", " : "",
                (double)v->res[k * v->npol + p].fixed_interval_ms / 1000.0);
      fputs("]", f);
    }
    for (int m = 0; m < M_N; m++) {
      stat_t st;
      stat_of(v, p, m, &st);
      fprintf(f, ",\n   \"%s\": {\"seeds\": [", measures[m].key);
      for (size_t k = 0; k < v->nseeds; k++) {
        if (k) fputs(", ", f);
        json_num(f, measure(&v->res[k * v->npol + p], m));
      }
      fputs("], \"mean\": ", f);
      json_ci(f, &st.mean);
      if (p != v->ref) {
        fputs(", \"ratio_to_ref\": ", f);
        json_ci(f, &st.ratio);
        fputs(", \"difference_to_ref\": ", f);
        json_ci(f, &st.diff);
      }
      fputs("}", f);
    }
    fputs("}", f);
  }
  fputs("]}\n", f);
}

void kr_simulate_print_seeds(FILE *f, const kr_simulate_seeds_t *v) {
  if (v->json)
    print_json(f, v);
  else
    print_text(f, v);
}
