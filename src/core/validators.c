/*
 * Validators as change predictors (see include/kria/validators.h): the
 * ETag and Last-Modified comparisons, the four schemes of the thesis'
 * Table 1, HTTP-date parsing and formatting (the store keeps
 * Last-Modified as epoch seconds, and If-Modified-Since needs it back as
 * text), and the per-host trust bookkeeping that samples "no change"
 * predictions and stops trusting a host caught lying. Every parser reads
 * only the bytes it is given. Sections: comparisons, schemes, dates,
 * trust.
 */
#include "kria/validators.h"

#include <math.h>
#include <string.h>

#include "kria/error.h"

/* ---- comparisons ------------------------------------------------------------ */

static kr_slice_t trim(kr_slice_t s) {
  if (!s.p) return kr_slice("", 0);
  while (s.n && (s.p[0] == ' ' || s.p[0] == '\t' || s.p[0] == '\r' || s.p[0] == '\n')) s.p++, s.n--;
  while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t' || s.p[s.n - 1] == '\r' ||
                 s.p[s.n - 1] == '\n'))
    s.n--;
  return s;
}

/* Split an entity-tag into weakness and opaque-tag (quotes kept: an
 * unquoted value is its own opaque-tag). */
static kr_slice_t etag_opaque(kr_slice_t s, int *weak) {
  *weak = s.n >= 2 && (s.p[0] == 'W' || s.p[0] == 'w') && s.p[1] == '/';
  if (*weak) s.p += 2, s.n -= 2;
  return s;
}

kr_val_cmp_t kr_validators_etag_cmp(kr_slice_t stored, kr_slice_t current, kr_etag_mode_t mode) {
  stored = trim(stored);
  current = trim(current);
  if (!stored.n || !current.n) return KR_VAL_MISSING;
  int ws, wc;
  kr_slice_t os = etag_opaque(stored, &ws), oc = etag_opaque(current, &wc);
  if (!os.n || !oc.n) return KR_VAL_MISSING; /* a bare "W/" */
  int same_tag = kr_slice_eq(os, oc);
  switch (mode) {
  case KR_ETAG_STRONG:
    if (ws || wc) return KR_VAL_MISSING;
    return same_tag ? KR_VAL_SAME : KR_VAL_CHANGED;
  case KR_ETAG_WEAK:
    return same_tag ? KR_VAL_SAME : KR_VAL_CHANGED;
  case KR_ETAG_EXACT:
  default:
    return same_tag && ws == wc ? KR_VAL_SAME : KR_VAL_CHANGED;
  }
}

kr_val_cmp_t kr_validators_lm_cmp(int64_t stored, int64_t current) {
  if (stored == 0 || current == 0) return KR_VAL_MISSING;
  return stored == current ? KR_VAL_SAME : KR_VAL_CHANGED;
}

/* ---- schemes ------------------------------------------------------------------- */

static int predicts_change(kr_val_cmp_t c) { return c != KR_VAL_SAME; }

int kr_validators_predict(kr_vscheme_t scheme, kr_val_cmp_t etag, kr_val_cmp_t lm) {
  switch (scheme) {
  case KR_VSCHEME_TIMESTAMP: return predicts_change(lm);
  case KR_VSCHEME_ETAG: return predicts_change(etag);
  case KR_VSCHEME_BOTH: return predicts_change(etag) && predicts_change(lm);
  case KR_VSCHEME_EITHER: return predicts_change(etag) || predicts_change(lm);
  }
  return 1;
}

int kr_validators_check(kr_vscheme_t scheme, kr_etag_mode_t mode, kr_slice_t stored_etag,
                        kr_slice_t current_etag, int64_t stored_lm, kr_slice_t current_lm,
                        kr_val_result_t *out) {
  out->etag = kr_validators_etag_cmp(stored_etag, current_etag, mode);
  int64_t t = 0;
  if (current_lm.p && current_lm.n && kr_validators_date_parse(current_lm.p, current_lm.n, &t) < 0)
    t = 0;
  out->lm_time = t;
  out->lm = kr_validators_lm_cmp(stored_lm, t);
  out->change = kr_validators_predict(scheme, out->etag, out->lm);
  return out->change;
}

static int word_eq(const char *s, size_t n, const char *w) {
  size_t l = strlen(w);
  if (l != n) return 0;
  for (size_t i = 0; i < n; i++)
    if ((char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]) != w[i]) return 0;
  return 1;
}

static const char *const scheme_names[] = {NULL, "timestamp", "etag", "both", "either"};

int kr_validators_scheme_parse(const char *s, size_t n, kr_vscheme_t *out) {
  if (!s) return KR_EINVAL;
  kr_slice_t t = trim(kr_slice(s, n));
  for (int i = 1; i <= 4; i++) {
    char digit = (char)('0' + i);
    if ((t.n == 1 && t.p[0] == digit) || word_eq(t.p, t.n, scheme_names[i])) {
      *out = (kr_vscheme_t)i;
      return 0;
    }
  }
  return KR_EINVAL;
}

const char *kr_validators_scheme_name(kr_vscheme_t scheme) {
  return (int)scheme >= 1 && (int)scheme <= 4 ? scheme_names[scheme] : "?";
}

int kr_validators_etag_mode_parse(const char *s, size_t n, kr_etag_mode_t *out) {
  static const char *const names[] = {"exact", "strong", "weak"};
  if (!s) return KR_EINVAL;
  kr_slice_t t = trim(kr_slice(s, n));
  for (int i = 0; i < 3; i++)
    if (word_eq(t.p, t.n, names[i])) {
      *out = (kr_etag_mode_t)i;
      return 0;
    }
  return KR_EINVAL;
}

/* ---- dates ------------------------------------------------------------------------ */

static const char *const months[12] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const days_short[7] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
static const char *const days_long[7] = {"sunday",   "monday", "tuesday", "wednesday",
                                         "thursday", "friday", "saturday"};

/* Days since 1970-01-01 of a proleptic Gregorian date (m 1-12): shift the
 * year to start in March so the leap day ends it, then count whole 400-
 * year eras (146097 days), years, and days by the 153-days-per-5-months
 * rule. */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int month_days(int64_t y, int m) {
  static const int md[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : md[m - 1];
}

typedef struct cursor {
  const char *p, *end;
} cursor_t;

static int at_end(const cursor_t *c) { return c->p >= c->end; }

static size_t take_alpha(cursor_t *c, const char **start) {
  *start = c->p;
  while (c->p < c->end && ((*c->p | 0x20) >= 'a' && (*c->p | 0x20) <= 'z')) c->p++;
  return (size_t)(c->p - *start);
}

/* 1..max digits; -1 when none. */
static int take_num(cursor_t *c, int min, int max, int64_t *v) {
  int k = 0;
  *v = 0;
  while (c->p < c->end && k < max && *c->p >= '0' && *c->p <= '9') {
    *v = *v * 10 + (*c->p++ - '0');
    k++;
  }
  if (c->p < c->end && *c->p >= '0' && *c->p <= '9') return -1; /* too many digits */
  return k >= min ? 0 : -1;
}

static int take_char(cursor_t *c, char ch) {
  if (at_end(c) || *c->p != ch) return -1;
  c->p++;
  return 0;
}

static int take_spaces(cursor_t *c) {
  if (at_end(c) || *c->p != ' ') return -1;
  while (!at_end(c) && *c->p == ' ') c->p++;
  return 0;
}

static int take_month(cursor_t *c, int *m) {
  const char *s;
  size_t n = take_alpha(c, &s);
  for (int i = 0; i < 12; i++)
    if (word_eq(s, n, months[i])) {
      *m = i + 1;
      return 0;
    }
  return -1;
}

static int take_time(cursor_t *c, int64_t *h, int64_t *mi, int64_t *s) {
  if (take_num(c, 2, 2, h) < 0 || take_char(c, ':') < 0 || take_num(c, 2, 2, mi) < 0 ||
      take_char(c, ':') < 0 || take_num(c, 2, 2, s) < 0)
    return -1;
  return 0;
}

static int take_zone(cursor_t *c) {
  const char *s;
  size_t n = take_alpha(c, &s);
  return word_eq(s, n, "gmt") || word_eq(s, n, "utc") ? 0 : -1;
}

int kr_validators_date_parse(const char *s, size_t n, int64_t *epoch_s) {
  if (!s) return KR_EINVAL;
  kr_slice_t t = trim(kr_slice(s, n));
  if (t.n > 64) return KR_EINVAL;
  cursor_t c = {t.p, t.p + t.n};
  const char *w;
  size_t wn = take_alpha(&c, &w);
  int known = 0;
  for (int i = 0; i < 7; i++)
    known |= word_eq(w, wn, days_short[i]) || word_eq(w, wn, days_long[i]);
  if (!known) return KR_EINVAL;
  int64_t y, d, h, mi, sec;
  int m;
  if (take_char(&c, ',') == 0) {
    if (take_spaces(&c) < 0 || take_num(&c, 1, 2, &d) < 0) return KR_EINVAL;
    if (take_char(&c, '-') == 0) { /* RFC 850 */
      if (take_month(&c, &m) < 0 || take_char(&c, '-') < 0) return KR_EINVAL;
      const char *ys = c.p;
      if (take_num(&c, 2, 4, &y) < 0) return KR_EINVAL;
      size_t yl = (size_t)(c.p - ys);
      if (yl == 3) return KR_EINVAL;
      if (yl == 2) y += y < 70 ? 2000 : 1900;
    } else { /* IMF-fixdate */
      if (take_spaces(&c) < 0 || take_month(&c, &m) < 0 || take_spaces(&c) < 0 ||
          take_num(&c, 4, 4, &y) < 0)
        return KR_EINVAL;
    }
    if (take_spaces(&c) < 0 || take_time(&c, &h, &mi, &sec) < 0 || take_spaces(&c) < 0 ||
        take_zone(&c) < 0)
      return KR_EINVAL;
  } else { /* asctime */
    if (take_spaces(&c) < 0 || take_month(&c, &m) < 0 || take_spaces(&c) < 0 ||
        take_num(&c, 1, 2, &d) < 0 || take_spaces(&c) < 0 || take_time(&c, &h, &mi, &sec) < 0 ||
        take_spaces(&c) < 0 || take_num(&c, 4, 4, &y) < 0)
      return KR_EINVAL;
  }
  if (!at_end(&c)) return KR_EINVAL;
  if (y < 1601 || y > 9999 || d < 1 || d > month_days(y, m) || h > 23 || mi > 59 || sec > 60)
    return KR_EINVAL;
  if (sec == 60) sec = 59;
  *epoch_s = days_from_civil(y, m, (int)d) * 86400 + h * 3600 + mi * 60 + sec;
  return 0;
}

void kr_validators_date_format(int64_t epoch_s, char out[KR_HTTP_DATE_SIZE]) {
  static const char *const mon[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  static const char *const wday[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  const int64_t lo = days_from_civil(1601, 1, 1) * 86400;
  const int64_t hi = days_from_civil(9999, 12, 31) * 86400 + 86399;
  if (epoch_s < lo) epoch_s = lo;
  if (epoch_s > hi) epoch_s = hi;
  int64_t days = epoch_s >= 0 ? epoch_s / 86400 : -((-epoch_s + 86399) / 86400);
  int64_t rem = epoch_s - days * 86400;
  int64_t y;
  int m, d;
  civil_from_days(days, &y, &m, &d);
  int wd = (int)(((days % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
  int hh = (int)(rem / 3600), mm = (int)(rem / 60 % 60), ss = (int)(rem % 60);
  /* fixed width: no snprintf, no truncation warnings */
  char *o = out;
  memcpy(o, wday[wd], 3), o += 3;
  *o++ = ',', *o++ = ' ';
  *o++ = (char)('0' + d / 10), *o++ = (char)('0' + d % 10), *o++ = ' ';
  memcpy(o, mon[m - 1], 3), o += 3;
  *o++ = ' ';
  *o++ = (char)('0' + y / 1000), *o++ = (char)('0' + y / 100 % 10);
  *o++ = (char)('0' + y / 10 % 10), *o++ = (char)('0' + y % 10), *o++ = ' ';
  *o++ = (char)('0' + hh / 10), *o++ = (char)('0' + hh % 10), *o++ = ':';
  *o++ = (char)('0' + mm / 10), *o++ = (char)('0' + mm % 10), *o++ = ':';
  *o++ = (char)('0' + ss / 10), *o++ = (char)('0' + ss % 10);
  memcpy(o, " GMT", 5);
}

/* ---- trust ------------------------------------------------------------------------ */

void kr_vtrust_params_default(kr_vtrust_params_t *p) {
  p->sample_rate = 0.05;
  p->sample_min = 0.01;
  p->sample_halving = 20;
  p->distrust_ms = 7 * 86400 * INT64_C(1000);
  p->misses_to_distrust = 1;
  p->probation = 3;
}

static uint64_t mix64(uint64_t z) { /* splitmix64's finaliser */
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

int kr_vtrust_is_sample(double rate, uint64_t fp, uint32_t visit) {
  if (!(rate > 0)) return 0;
  if (rate >= 1) return 1;
  uint64_t h = mix64(fp ^ mix64((uint64_t)visit + UINT64_C(0x9e3779b97f4a7c15)));
  return (double)(h >> 11) * 0x1p-53 < rate;
}

int kr_vtrust_is_distrusted(const kr_vtrust_t *t, int64_t now_ms) {
  return t->distrust_until != 0 && now_ms < t->distrust_until;
}

double kr_vtrust_sample_rate(const kr_vtrust_t *t, const kr_vtrust_params_t *p) {
  double base = p->sample_rate;
  if (!(base > 0) || !p->sample_halving) return base;
  uint32_t halvings = t->confirm_run / p->sample_halving;
  double r = ldexp(base, -(int)(halvings < 1000 ? halvings : 1000));
  double lo = p->sample_min < base ? p->sample_min : base;
  return r > lo ? r : lo;
}

kr_vtrust_mode_t kr_vtrust_mode(const kr_vtrust_t *t, const kr_vtrust_params_t *p, uint64_t fp,
                                uint32_t visit, int64_t now_ms) {
  if (kr_vtrust_is_distrusted(t, now_ms)) return KR_VTRUST_DISTRUSTED;
  if (t->verified - t->misses < p->probation) return KR_VTRUST_PROBATION;
  if (kr_vtrust_is_sample(kr_vtrust_sample_rate(t, p), fp, visit)) return KR_VTRUST_SAMPLE;
  return KR_VTRUST_USE;
}

void kr_vtrust_record(kr_vtrust_t *t, const kr_vtrust_params_t *p, int predicted_change,
                      kr_content_t digest, int64_t now_ms) {
  /* a distrust period that ran out: trust is back, the run starts over */
  if (t->distrust_until != 0 && now_ms >= t->distrust_until && t->miss_run) t->miss_run = 0;
  t->checks++;
  if (predicted_change) {
    if (digest == KR_CONTENT_UNCHANGED) t->false_alarms++;
    return;
  }
  t->predicted_unchanged++;
  if (digest != KR_CONTENT_CHANGED && digest != KR_CONTENT_UNCHANGED) {
    t->skipped++;
    return;
  }
  t->verified++;
  if (digest == KR_CONTENT_UNCHANGED) {
    if (t->confirm_run < UINT32_MAX) t->confirm_run++;
    return;
  }
  t->misses++;
  t->confirm_run = 0;
  if (t->miss_run < UINT32_MAX) t->miss_run++;
  uint32_t need = p->misses_to_distrust ? p->misses_to_distrust : 1;
  int already = kr_vtrust_is_distrusted(t, now_ms);
  if (t->miss_run >= need || already) {
    int64_t period = p->distrust_ms > 0 ? p->distrust_ms : 0;
    t->distrust_until = now_ms > INT64_MAX - period ? INT64_MAX : now_ms + period;
    if (t->distrust_until == 0) t->distrust_until = 1; /* 0 means never */
    if (!already) t->distrusts++;
    t->miss_run = 0;
  }
}

double kr_vtrust_reliability(const kr_vtrust_t *t) {
  if (!t->verified) return -1.0;
  return (double)(t->verified - t->misses) / (double)t->verified;
}

double kr_vtrust_usefulness(const kr_vtrust_t *t) {
  if (!t->checks) return -1.0;
  double r = t->verified ? kr_vtrust_reliability(t) : 1.0;
  return r * (double)t->predicted_unchanged / (double)t->checks;
}

const char *kr_vtrust_mode_name(kr_vtrust_mode_t m) {
  switch (m) {
  case KR_VTRUST_USE: return "use";
  case KR_VTRUST_SAMPLE: return "sample";
  case KR_VTRUST_PROBATION: return "probation";
  case KR_VTRUST_DISTRUSTED: return "distrusted";
  }
  return "?";
}
