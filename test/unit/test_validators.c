/* Validators: ETag comparison in each mode (strong, weak W/, unquoted,
 * blanks, missing), Last-Modified (any difference is a change, older
 * too), the four schemes of Table 1 against a literal table of every
 * (ETag, Last-Modified) x (same, changed, missing) combination, the same
 * through kr_validators_check with nginx-style header values, HTTP-date
 * parsing (three formats, impossible dates, hostile text) checked against
 * timegm, formatting round trips, and trust: the sample is deterministic
 * and 5 % +- a binomial margin, its decay to the floor with
 * confirmations and return on a miss, probation, distrust on a miss,
 * extension and recovery after the period, the two measures on a scripted host,
 * a simulated liar caught while an honest host never is, and a host
 * that starts lying after a long honest run caught at the floor rate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/error.h"
#include "kria/validators.h"
#include "helpers.h"

#define SL(s) kr_slice((s), strlen(s))

static uint64_t rng_state = 99;
static uint64_t rnd(void) { return th_splitmix64(&rng_state); }

static void etag_compare(void **state) {
  (void)state;
  static const struct {
    const char *a, *b;
    kr_val_cmp_t exact, strong, weak;
  } t[] = {
      {"\"abc\"", "\"abc\"", KR_VAL_SAME, KR_VAL_SAME, KR_VAL_SAME},
      {"\"abc\"", "\"abd\"", KR_VAL_CHANGED, KR_VAL_CHANGED, KR_VAL_CHANGED},
      {"W/\"abc\"", "W/\"abc\"", KR_VAL_SAME, KR_VAL_MISSING, KR_VAL_SAME},
      {"W/\"abc\"", "\"abc\"", KR_VAL_CHANGED, KR_VAL_MISSING, KR_VAL_SAME},
      {"\"abc\"", "W/\"abc\"", KR_VAL_CHANGED, KR_VAL_MISSING, KR_VAL_SAME},
      {"W/\"abc\"", "W/\"abd\"", KR_VAL_CHANGED, KR_VAL_MISSING, KR_VAL_CHANGED},
      {"w/\"abc\"", "W/\"abc\"", KR_VAL_SAME, KR_VAL_MISSING, KR_VAL_SAME},
      {"  \"abc\"\t", "\"abc\"", KR_VAL_SAME, KR_VAL_SAME, KR_VAL_SAME},
      {"abc", "abc", KR_VAL_SAME, KR_VAL_SAME, KR_VAL_SAME}, /* unquoted */
      {"abc", "\"abc\"", KR_VAL_CHANGED, KR_VAL_CHANGED, KR_VAL_CHANGED},
      {"\"\"", "\"\"", KR_VAL_SAME, KR_VAL_SAME, KR_VAL_SAME}, /* empty tag is a tag */
      {"\"ABC\"", "\"abc\"", KR_VAL_CHANGED, KR_VAL_CHANGED, KR_VAL_CHANGED},
      {"", "\"abc\"", KR_VAL_MISSING, KR_VAL_MISSING, KR_VAL_MISSING},
      {"\"abc\"", "", KR_VAL_MISSING, KR_VAL_MISSING, KR_VAL_MISSING},
      {"\"abc\"", "   ", KR_VAL_MISSING, KR_VAL_MISSING, KR_VAL_MISSING},
      {"W/", "W/", KR_VAL_MISSING, KR_VAL_MISSING, KR_VAL_MISSING},
      {"\"65a1b2c3-264\"", "\"65a1b2c3-264\"", KR_VAL_SAME, KR_VAL_SAME, KR_VAL_SAME}, /* nginx */
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    kr_val_cmp_t e = kr_validators_etag_cmp(SL(t[i].a), SL(t[i].b), KR_ETAG_EXACT);
    kr_val_cmp_t s = kr_validators_etag_cmp(SL(t[i].a), SL(t[i].b), KR_ETAG_STRONG);
    kr_val_cmp_t w = kr_validators_etag_cmp(SL(t[i].a), SL(t[i].b), KR_ETAG_WEAK);
    if (e != t[i].exact || s != t[i].strong || w != t[i].weak)
      fail_msg("[%s] vs [%s]: exact %d strong %d weak %d", t[i].a, t[i].b, e, s, w);
  }
  assert_int_equal(kr_validators_etag_cmp(kr_slice(NULL, 0), SL("\"a\""), KR_ETAG_EXACT),
                   KR_VAL_MISSING);
  /* bytes after a NUL count */
  assert_int_equal(kr_validators_etag_cmp(kr_slice("\"a\"\0x", 5), kr_slice("\"a\"\0y", 5),
                                          KR_ETAG_EXACT),
                   KR_VAL_CHANGED);
  kr_etag_mode_t m;
  assert_int_equal(kr_validators_etag_mode_parse("Weak", 4, &m), 0);
  assert_int_equal(m, KR_ETAG_WEAK);
  assert_int_equal(kr_validators_etag_mode_parse(" strong ", 8, &m), 0);
  assert_int_equal(m, KR_ETAG_STRONG);
  assert_int_equal(kr_validators_etag_mode_parse("exact", 5, &m), 0);
  assert_int_equal(m, KR_ETAG_EXACT);
  assert_int_equal(kr_validators_etag_mode_parse("fuzzy", 5, &m), KR_EINVAL);
  assert_int_equal(kr_validators_etag_mode_parse(NULL, 0, &m), KR_EINVAL);
}

static void lm_compare(void **state) {
  (void)state;
  assert_int_equal(kr_validators_lm_cmp(1000, 1000), KR_VAL_SAME);
  assert_int_equal(kr_validators_lm_cmp(1000, 1001), KR_VAL_CHANGED);
  assert_int_equal(kr_validators_lm_cmp(1000, 999), KR_VAL_CHANGED); /* older: a change too */
  assert_int_equal(kr_validators_lm_cmp(0, 1000), KR_VAL_MISSING);
  assert_int_equal(kr_validators_lm_cmp(1000, 0), KR_VAL_MISSING);
  assert_int_equal(kr_validators_lm_cmp(-5, -5), KR_VAL_SAME); /* before 1970 is a date */
}

/* Table 1: for each scheme, downloads over (ETag, LM) in the order SS SC
 * SM CS CC CM MS MC MM (S same, C changed, M missing). */
static const char *const table1[5] = {
    NULL,
    "011011011", /* 1 timestamp only */
    "000111111", /* 2 ETag only */
    "000011011", /* 3 both must predict change */
    "011111111", /* 4 either */
};

static void schemes(void **state) {
  (void)state;
  const kr_val_cmp_t v[3] = {KR_VAL_SAME, KR_VAL_CHANGED, KR_VAL_MISSING};
  for (int s = 1; s <= 4; s++)
    for (int e = 0; e < 3; e++)
      for (int l = 0; l < 3; l++) {
        int want = table1[s][e * 3 + l] - '0';
        int got = kr_validators_predict((kr_vscheme_t)s, v[e], v[l]);
        if (got != want) fail_msg("scheme %d etag %d lm %d: %d want %d", s, e, l, got, want);
      }
  /* an unknown scheme always downloads */
  assert_int_equal(kr_validators_predict((kr_vscheme_t)0, KR_VAL_SAME, KR_VAL_SAME), 1);
  assert_int_equal(kr_validators_predict((kr_vscheme_t)9, KR_VAL_SAME, KR_VAL_SAME), 1);
  assert_int_equal(KR_VSCHEME_DEFAULT, KR_VSCHEME_EITHER);
  kr_vscheme_t sc;
  static const struct {
    const char *s;
    kr_vscheme_t want;
  } names[] = {{"1", KR_VSCHEME_TIMESTAMP}, {"timestamp", KR_VSCHEME_TIMESTAMP},
               {"2", KR_VSCHEME_ETAG},      {"ETag", KR_VSCHEME_ETAG},
               {"3", KR_VSCHEME_BOTH},      {" both", KR_VSCHEME_BOTH},
               {"4", KR_VSCHEME_EITHER},    {"EITHER", KR_VSCHEME_EITHER}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    assert_int_equal(kr_validators_scheme_parse(names[i].s, strlen(names[i].s), &sc), 0);
    assert_int_equal(sc, names[i].want);
    static const char *const nm[] = {NULL, "timestamp", "etag", "both", "either"};
    assert_string_equal(kr_validators_scheme_name(sc), nm[sc]);
  }
  assert_int_equal(kr_validators_scheme_parse("5", 1, &sc), KR_EINVAL);
  assert_int_equal(kr_validators_scheme_parse("0", 1, &sc), KR_EINVAL);
  assert_int_equal(kr_validators_scheme_parse("44", 2, &sc), KR_EINVAL);
  assert_int_equal(kr_validators_scheme_parse("", 0, &sc), KR_EINVAL);
  assert_int_equal(kr_validators_scheme_parse(NULL, 1, &sc), KR_EINVAL);
  assert_string_equal(kr_validators_scheme_name((kr_vscheme_t)0), "?");
  assert_string_equal(kr_validators_scheme_name((kr_vscheme_t)5), "?");
}

/* The same table from header values as nginx sends them. */
static void check_with_headers(void **state) {
  (void)state;
  const char *stored_etag = "\"65a1b2c3-264\"";
  int64_t stored_lm;
  assert_int_equal(kr_validators_date_parse("Fri, 12 Jan 2024 10:00:00 GMT", 29, &stored_lm), 0);
  const char *etags[3] = {"\"65a1b2c3-264\"", "\"65a2f001-270\"", ""};
  const char *lms[3] = {"Fri, 12 Jan 2024 10:00:00 GMT", "Sat, 13 Jan 2024 09:30:00 GMT", ""};
  for (int s = 1; s <= 4; s++)
    for (int e = 0; e < 3; e++)
      for (int l = 0; l < 3; l++) {
        kr_val_result_t r;
        int got = kr_validators_check((kr_vscheme_t)s, KR_ETAG_EXACT, SL(stored_etag),
                                      SL(etags[e]), stored_lm, SL(lms[l]), &r);
        assert_int_equal(got, table1[s][e * 3 + l] - '0');
        assert_int_equal(r.change, got);
        assert_int_equal(r.etag, (kr_val_cmp_t)e);
        assert_int_equal(r.lm, (kr_val_cmp_t)l);
        assert_true(l == 2 ? r.lm_time == 0 : r.lm_time > 0);
      }
  kr_val_result_t r;
  /* an older Last-Modified is a change; an unreadable one is missing */
  kr_validators_check(KR_VSCHEME_TIMESTAMP, KR_ETAG_EXACT, SL(""), SL(""), stored_lm,
                      SL("Thu, 11 Jan 2024 10:00:00 GMT"), &r);
  assert_int_equal(r.lm, KR_VAL_CHANGED);
  assert_int_equal(r.change, 1);
  kr_validators_check(KR_VSCHEME_EITHER, KR_ETAG_EXACT, SL(stored_etag), SL(stored_etag),
                      stored_lm, SL("yesterday"), &r);
  assert_int_equal(r.lm, KR_VAL_MISSING);
  assert_int_equal(r.change, 1);
  /* nothing stored: always a change */
  kr_validators_check(KR_VSCHEME_BOTH, KR_ETAG_EXACT, SL(""), SL(stored_etag), 0, SL(lms[0]), &r);
  assert_int_equal(r.change, 1);
  /* the same instant in another format is the same */
  kr_validators_check(KR_VSCHEME_TIMESTAMP, KR_ETAG_EXACT, SL(""), SL(""), stored_lm,
                      SL("Friday, 12-Jan-24 10:00:00 GMT"), &r);
  assert_int_equal(r.lm, KR_VAL_SAME);
  kr_validators_check(KR_VSCHEME_TIMESTAMP, KR_ETAG_EXACT, SL(""), SL(""), stored_lm,
                      kr_slice(NULL, 0), &r);
  assert_int_equal(r.lm, KR_VAL_MISSING);
}

static void dates(void **state) {
  (void)state;
  static const struct {
    const char *s;
    int64_t want; /* -1: invalid */
  } t[] = {
      {"Sun, 06 Nov 1994 08:49:37 GMT", 784111777},
      {"Sunday, 06-Nov-94 08:49:37 GMT", 784111777},
      {"Sun Nov  6 08:49:37 1994", 784111777},
      {"Sun Nov 06 08:49:37 1994", 784111777},
      {"  Sun, 06 Nov 1994 08:49:37 GMT\r\n", 784111777},
      {"sun, 06 nov 1994 08:49:37 gmt", 784111777},
      {"Mon, 06 Nov 1994 08:49:37 GMT", 784111777}, /* wrong day name: not checked */
      {"Sun, 6 Nov 1994 08:49:37 GMT", 784111777},
      {"Sun, 06 Nov 1994 08:49:37 UTC", 784111777},
      {"Thu, 01 Jan 1970 00:00:00 GMT", 0},
      {"Thu, 29 Feb 2024 23:59:59 GMT", 1709251199},
      {"Tue, 29 Feb 2000 00:00:00 GMT", 951782400},
      {"Wed, 31 Dec 1969 23:59:59 GMT", -1},
      {"Thursday, 01-Jan-70 00:00:00 GMT", 0},
      {"Tuesday, 01-Jan-69 00:00:00 GMT", 3124224000},
      {"Sat, 31 Dec 2016 23:59:60 GMT", 1483228799}, /* leap second read as :59 */
      {"Fri, 31 Dec 9999 23:59:59 GMT", 253402300799},
      {"Mon, 01 Jan 1601 00:00:00 GMT", -11644473600},
      /* invalid */
      {"Thu, 29 Feb 2023 00:00:00 GMT", -2},
      {"Thu, 29 Feb 1900 00:00:00 GMT", -2},
      {"Thu, 31 Apr 2023 00:00:00 GMT", -2},
      {"Thu, 00 Jan 2023 00:00:00 GMT", -2},
      {"Thu, 01 Foo 2023 00:00:00 GMT", -2},
      {"Thu, 01 Jan 2023 24:00:00 GMT", -2},
      {"Thu, 01 Jan 2023 23:60:00 GMT", -2},
      {"Thu, 01 Jan 2023 23:59:61 GMT", -2},
      {"Thu, 01 Jan 2023 23:59:59 CET", -2},
      {"Thu, 01 Jan 2023 23:59:59", -2},
      {"Thu, 01 Jan 2023 23:59:59 GMT x", -2},
      {"Thu, 01 Jan 1600 00:00:00 GMT", -2},
      {"Thu, 01 Jan 10000 00:00:00 GMT", -2},
      {"Thu, 01 Jan 23 00:00:00 GMT", -2},
      {"Thursday, 01-Jan-202 00:00:00 GMT", -2},
      {"Thu, 001 Jan 2023 00:00:00 GMT", -2},
      {"Thu, 01 Jan 2023 0:00:00 GMT", -2},
      {"Xyz, 01 Jan 2023 00:00:00 GMT", -2},
      {"1673000000", -2},
      {"", -2},
      {"Thu Jan  1 00:00:00", -2},
      {"Thu,01 Jan 2023 00:00:00 GMT", -2},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    int64_t got = 12345;
    int rc = kr_validators_date_parse(t[i].s, strlen(t[i].s), &got);
    if (t[i].want == -2) {
      if (rc != KR_EINVAL) fail_msg("[%s] accepted as %lld", t[i].s, (long long)got);
    } else if (rc != 0 || got != t[i].want) {
      fail_msg("[%s]: rc %d got %lld want %lld", t[i].s, rc, (long long)got, (long long)t[i].want);
    }
  }
  int64_t e;
  assert_int_equal(kr_validators_date_parse(NULL, 4, &e), KR_EINVAL);
  /* longer than 64 bytes after trimming */
  char longs[200];
  memset(longs, ' ', sizeof longs);
  memcpy(longs + 50, "Sun, 06 Nov 1994 08:49:37 GMT", 29);
  assert_int_equal(kr_validators_date_parse(longs, sizeof longs, &e), 0);
  memset(longs + 100, 'x', 60);
  assert_int_equal(kr_validators_date_parse(longs, sizeof longs, &e), KR_EINVAL);

  /* format: fixed examples, then round trips against timegm/gmtime */
  char out[KR_HTTP_DATE_SIZE];
  kr_validators_date_format(784111777, out);
  assert_string_equal(out, "Sun, 06 Nov 1994 08:49:37 GMT");
  kr_validators_date_format(0, out);
  assert_string_equal(out, "Thu, 01 Jan 1970 00:00:00 GMT");
  kr_validators_date_format(-1, out);
  assert_string_equal(out, "Wed, 31 Dec 1969 23:59:59 GMT");
  kr_validators_date_format(INT64_MAX, out);
  assert_string_equal(out, "Fri, 31 Dec 9999 23:59:59 GMT");
  kr_validators_date_format(INT64_MIN, out);
  assert_string_equal(out, "Mon, 01 Jan 1601 00:00:00 GMT");
  for (int i = 0; i < 100000; i++) {
    int64_t v = (int64_t)(rnd() % (UINT64_C(253402300800) + 11644473600)) - 11644473600;
    kr_validators_date_format(v, out);
    assert_int_equal(strlen(out), 29);
    int64_t back;
    assert_int_equal(kr_validators_date_parse(out, 29, &back), 0);
    assert_true(back == v);
    time_t tt = (time_t)v;
    struct tm tm;
    if (gmtime_r(&tt, &tm)) {
      char ref[64];
      strftime(ref, sizeof ref, "%a, %d %b %Y %H:%M:%S GMT", &tm);
      if (tm.tm_year + 1900 >= 1601 && tm.tm_year + 1900 <= 9999) assert_string_equal(out, ref);
    }
  }
  /* hostile bytes never crash and never read past n */
  for (int i = 0; i < 100000; i++) {
    size_t n = (size_t)(rnd() % 40);
    char *b = malloc(n ? n : 1);
    static const char alpha[] = "SunMonThuJanFebNov GMT,-: 0123456789\t";
    for (size_t j = 0; j < n; j++) b[j] = alpha[rnd() % (sizeof alpha - 1)];
    int64_t v;
    int rc = kr_validators_date_parse(b, n, &v);
    assert_true(rc == 0 || rc == KR_EINVAL);
    free(b);
  }
}

/* ---- trust ----------------------------------------------------------------- */

static void sampling(void **state) {
  (void)state;
  const int n = 200000;
  int hits = 0;
  for (int i = 0; i < n; i++) {
    uint64_t fp = rnd();
    uint32_t visit = (uint32_t)(rnd() % 1000);
    int s = kr_vtrust_is_sample(0.05, fp, visit);
    assert_int_equal(s, kr_vtrust_is_sample(0.05, fp, visit)); /* deterministic */
    hits += s;
  }
  /* 5 % +- 5 standard deviations of a binomial(200000, 0.05) */
  double sd = sqrt(n * 0.05 * 0.95);
  printf("# sampled %d of %d visits (%.3f %%)\n", hits, n, 100.0 * hits / n);
  assert_true(fabs(hits - n * 0.05) < 5 * sd);
  /* consecutive visits of one URI and one visit of consecutive URIs are
   * both sampled at the rate (no URI always or never sampled) */
  int by_visit = 0, by_fp = 0;
  for (uint32_t v = 0; v < 100000; v++) by_visit += kr_vtrust_is_sample(0.05, 42, v);
  for (uint64_t f = 1; f <= 100000; f++) by_fp += kr_vtrust_is_sample(0.05, f, 7);
  sd = sqrt(100000 * 0.05 * 0.95);
  assert_true(fabs((double)by_visit - 5000) < 5 * sd);
  assert_true(fabs((double)by_fp - 5000) < 5 * sd);
  /* pinned values: a change of the hash changes every crawl's sample */
  int pinned = 0;
  for (uint32_t v = 0; v < 64; v++) pinned |= kr_vtrust_is_sample(0.05, 0x123456789abcdefu, v) << (v % 31);
  assert_int_equal(pinned, 0x20080202);
  assert_int_equal(kr_vtrust_is_sample(0, 1, 1), 0);
  assert_int_equal(kr_vtrust_is_sample(-1, 1, 1), 0);
  assert_int_equal(kr_vtrust_is_sample(NAN, 1, 1), 0);
  assert_int_equal(kr_vtrust_is_sample(1, 1, 1), 1);
  assert_int_equal(kr_vtrust_is_sample(2, 1, 1), 1);
}

static void probation_distrust_recovery(void **state) {
  (void)state;
  kr_vtrust_params_t p;
  kr_vtrust_params_default(&p);
  assert_true(p.sample_rate == 0.05 && p.misses_to_distrust == 1 && p.probation == 3);
  assert_int_equal(p.distrust_ms, 7 * 86400 * 1000LL);
  p.sample_rate = 0; /* no sampling noise in this test */
  kr_vtrust_t t;
  kr_vtrust_init(&t);
  int64_t now = 1000000;
  /* probation: full downloads until 3 right "unchanged" verified */
  for (int i = 0; i < 3; i++) {
    assert_int_equal(kr_vtrust_mode(&t, &p, 1, (uint32_t)i, now), KR_VTRUST_PROBATION);
    kr_vtrust_record(&t, &p, 1, KR_CONTENT_CHANGED, now);   /* a change, predicted */
    assert_int_equal(kr_vtrust_mode(&t, &p, 1, (uint32_t)i, now), KR_VTRUST_PROBATION);
    kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNCHANGED, now); /* "no change", right */
  }
  assert_int_equal(kr_vtrust_mode(&t, &p, 1, 9, now), KR_VTRUST_USE);
  assert_string_equal(kr_vtrust_mode_name(KR_VTRUST_USE), "use");
  /* trusted: skipped downloads */
  kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNKNOWN, now);
  assert_int_equal(t.skipped, 1);
  /* a sampled visit catches a lie: distrusted for the period */
  kr_vtrust_record(&t, &p, 0, KR_CONTENT_CHANGED, now);
  assert_int_equal(t.misses, 1);
  assert_int_equal(t.distrusts, 1);
  assert_int_equal(kr_vtrust_mode(&t, &p, 1, 10, now), KR_VTRUST_DISTRUSTED);
  assert_int_equal(kr_vtrust_mode(&t, &p, 1, 10, now + p.distrust_ms - 1), KR_VTRUST_DISTRUSTED);
  assert_int_equal(kr_vtrust_is_distrusted(&t, now + 5), 1);
  /* another miss while distrusted restarts the period (not a new distrust) */
  int64_t later = now + p.distrust_ms / 2;
  kr_vtrust_record(&t, &p, 0, KR_CONTENT_CHANGED, later);
  assert_int_equal(t.distrusts, 1);
  assert_int_equal(kr_vtrust_mode(&t, &p, 1, 10, now + p.distrust_ms), KR_VTRUST_DISTRUSTED);
  assert_int_equal(kr_vtrust_mode(&t, &p, 1, 10, later + p.distrust_ms - 1), KR_VTRUST_DISTRUSTED);
  /* recovery after a full period without a miss */
  assert_int_equal(kr_vtrust_mode(&t, &p, 1, 10, later + p.distrust_ms), KR_VTRUST_USE);
  assert_int_equal(kr_vtrust_is_distrusted(&t, later + p.distrust_ms), 0);
  assert_string_equal(kr_vtrust_mode_name(KR_VTRUST_DISTRUSTED), "distrusted");
  assert_string_equal(kr_vtrust_mode_name(KR_VTRUST_SAMPLE), "sample");
  assert_string_equal(kr_vtrust_mode_name(KR_VTRUST_PROBATION), "probation");
  assert_string_equal(kr_vtrust_mode_name((kr_vtrust_mode_t)9), "?");

  /* misses_to_distrust = 2: one miss is tolerated, the second is not,
   * however many right predictions lie between */
  kr_vtrust_params_t p2 = p;
  p2.misses_to_distrust = 2;
  p2.probation = 0;
  kr_vtrust_t u;
  kr_vtrust_init(&u);
  kr_vtrust_record(&u, &p2, 0, KR_CONTENT_CHANGED, now);
  assert_int_equal(kr_vtrust_mode(&u, &p2, 1, 1, now), KR_VTRUST_USE);
  for (int i = 0; i < 50; i++) kr_vtrust_record(&u, &p2, 0, KR_CONTENT_UNCHANGED, now);
  kr_vtrust_record(&u, &p2, 0, KR_CONTENT_CHANGED, now);
  assert_int_equal(kr_vtrust_mode(&u, &p2, 1, 1, now), KR_VTRUST_DISTRUSTED);
  /* after recovery the count starts over */
  int64_t back = now + p2.distrust_ms;
  kr_vtrust_record(&u, &p2, 0, KR_CONTENT_CHANGED, back);
  assert_int_equal(kr_vtrust_mode(&u, &p2, 1, 1, back), KR_VTRUST_USE);
  /* a period reaching past INT64_MAX saturates */
  kr_vtrust_params_t p3 = p;
  p3.distrust_ms = INT64_MAX;
  kr_vtrust_t v;
  kr_vtrust_init(&v);
  kr_vtrust_record(&v, &p3, 0, KR_CONTENT_CHANGED, 5);
  assert_true(v.distrust_until == INT64_MAX);
}

static void measures(void **state) {
  (void)state;
  kr_vtrust_params_t p;
  kr_vtrust_params_default(&p);
  p.misses_to_distrust = 1000;
  kr_vtrust_t t;
  kr_vtrust_init(&t);
  assert_true(kr_vtrust_reliability(&t) == -1 && kr_vtrust_usefulness(&t) == -1);
  /* 100 checks: 40 predicted a change (10 of those were unchanged: false
   * alarms), 60 predicted none: 50 skipped, 10 verified of which 2 wrong */
  for (int i = 0; i < 30; i++) kr_vtrust_record(&t, &p, 1, KR_CONTENT_CHANGED, 0);
  for (int i = 0; i < 10; i++) kr_vtrust_record(&t, &p, 1, KR_CONTENT_UNCHANGED, 0);
  for (int i = 0; i < 50; i++) kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNKNOWN, 0);
  /* before anything is verified reliability is unknown, usefulness assumes 1 */
  assert_true(kr_vtrust_reliability(&t) == -1);
  assert_true(fabs(kr_vtrust_usefulness(&t) - 50.0 / 90) < 1e-12);
  for (int i = 0; i < 8; i++) kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNCHANGED, 0);
  for (int i = 0; i < 2; i++) kr_vtrust_record(&t, &p, 0, KR_CONTENT_CHANGED, 0);
  assert_int_equal(t.checks, 100);
  assert_int_equal(t.predicted_unchanged, 60);
  assert_int_equal(t.skipped, 50);
  assert_int_equal(t.verified, 10);
  assert_int_equal(t.misses, 2);
  assert_int_equal(t.false_alarms, 10);
  assert_true(fabs(kr_vtrust_reliability(&t) - 0.8) < 1e-12);
  assert_true(fabs(kr_vtrust_usefulness(&t) - 0.8 * 0.6) < 1e-12);
}

/* A host whose validators say "unchanged" for 10 % of real changes is
 * caught by 5 % sampling; an honest host never is, and its sample decays
 * to the 1 % floor. */
static void liar_and_honest(void **state) {
  (void)state;
  kr_vtrust_params_t p;
  kr_vtrust_params_default(&p);
  for (int liar = 0; liar <= 1; liar++) {
    kr_vtrust_t t;
    kr_vtrust_init(&t);
    int64_t now = 0;
    long caught_at = -1, full = 0;
    const long visits = 200000;
    for (long i = 0; i < visits; i++) {
      now += 1000;
      uint64_t fp = 1 + (uint64_t)(i % 5000);
      uint32_t visit = (uint32_t)(i / 5000);
      kr_vtrust_mode_t m = kr_vtrust_mode(&t, &p, fp, visit, now);
      int changed = rnd() % 100 < 30; /* the truth */
      int predicted_change = changed ? !(liar && rnd() % 10 == 0) : 0;
      kr_content_t digest;
      if (m == KR_VTRUST_USE && !predicted_change) digest = KR_CONTENT_UNKNOWN; /* skipped */
      else {
        digest = changed ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED;
        full += m != KR_VTRUST_USE;
      }
      kr_vtrust_record(&t, &p, predicted_change, digest, now);
      if (caught_at < 0 && t.distrusts) caught_at = i;
    }
    printf("# %s host: distrusted %llu times (first after %ld visits), reliability %.4f, "
           "usefulness %.3f, %.1f %% of visits downloaded for checking\n",
           liar ? "lying" : "honest", (unsigned long long)t.distrusts, caught_at,
           kr_vtrust_reliability(&t), kr_vtrust_usefulness(&t), 100.0 * full / visits);
    if (liar) {
      assert_true(caught_at >= 0 && caught_at < 5000);
      assert_true(kr_vtrust_reliability(&t) < 0.99);
    } else {
      assert_int_equal(t.distrusts, 0);
      assert_true(kr_vtrust_reliability(&t) == 1.0);
      assert_true(fabs(kr_vtrust_usefulness(&t) - 0.7) < 0.01);
      /* the sample decayed to its floor: 1 %, not 5 % */
      assert_true(fabs((double)full / visits - 0.01) < 0.002);
    }
  }
}

/* The sampled share halves every sample_halving confirmations down to
 * sample_min; a miss puts it back at sample_rate. */
static void sample_decay(void **state) {
  (void)state;
  kr_vtrust_params_t p;
  kr_vtrust_params_default(&p);
  assert_true(p.sample_min == 0.01 && p.sample_halving == 20);
  p.probation = 0;
  p.misses_to_distrust = 1000; /* misses here only reset the run */
  kr_vtrust_t t;
  kr_vtrust_init(&t);
  assert_true(kr_vtrust_sample_rate(&t, &p) == 0.05);
  for (int i = 0; i < 19; i++) kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNCHANGED, 0);
  assert_true(kr_vtrust_sample_rate(&t, &p) == 0.05);
  kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNCHANGED, 0);
  assert_int_equal(t.confirm_run, 20);
  assert_true(kr_vtrust_sample_rate(&t, &p) == 0.025);
  /* skipped downloads, predicted changes and false alarms confirm nothing */
  kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNKNOWN, 0);
  kr_vtrust_record(&t, &p, 1, KR_CONTENT_UNCHANGED, 0);
  kr_vtrust_record(&t, &p, 1, KR_CONTENT_CHANGED, 0);
  assert_int_equal(t.confirm_run, 20);
  for (int i = 0; i < 20; i++) kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNCHANGED, 0);
  assert_true(kr_vtrust_sample_rate(&t, &p) == 0.0125);
  for (int i = 0; i < 20; i++) kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNCHANGED, 0);
  assert_true(kr_vtrust_sample_rate(&t, &p) == 0.01); /* the floor, not 0.00625 */
  t.confirm_run = UINT32_MAX;                          /* saturates, no wrap */
  kr_vtrust_record(&t, &p, 0, KR_CONTENT_UNCHANGED, 0);
  assert_true(t.confirm_run == UINT32_MAX && kr_vtrust_sample_rate(&t, &p) == 0.01);
  /* a miss: back to the full rate */
  kr_vtrust_record(&t, &p, 0, KR_CONTENT_CHANGED, 0);
  assert_int_equal(t.confirm_run, 0);
  assert_true(kr_vtrust_sample_rate(&t, &p) == 0.05);
  /* the share is what kr_vtrust_mode samples with: a decayed sample is a
   * subset of the full one (same hash, lower threshold) */
  t.confirm_run = 1000;
  long full = 0, decayed = 0;
  for (uint32_t v = 0; v < 20000; v++) {
    int a = kr_vtrust_is_sample(0.05, 77, v);
    int b = kr_vtrust_mode(&t, &p, 77, v, 0) == KR_VTRUST_SAMPLE;
    assert_true(!b || a);
    full += a;
    decayed += b;
  }
  assert_true(labs(decayed - 200) < 50 && labs(full - 1000) < 100);
  /* no decay; a floor above the rate is the rate; rate 0 stays 0 */
  kr_vtrust_params_t q = p;
  q.sample_halving = 0;
  assert_true(kr_vtrust_sample_rate(&t, &q) == 0.05);
  q = p;
  q.sample_min = 0.5;
  assert_true(kr_vtrust_sample_rate(&t, &q) == 0.05);
  q.sample_rate = 0;
  assert_true(kr_vtrust_sample_rate(&t, &q) == 0);
  assert_int_equal(kr_vtrust_mode(&t, &q, 77, 1, 0), KR_VTRUST_USE);
}

/* A host honest for a long time that starts lying is caught at the floor
 * rate: within a few hundred of its lies, not never. */
static void late_liar(void **state) {
  (void)state;
  kr_vtrust_params_t p;
  kr_vtrust_params_default(&p);
  kr_vtrust_t t;
  kr_vtrust_init(&t);
  int64_t now = 0;
  long lies = 0, caught_after = -1;
  for (long i = 0; i < 400000 && caught_after < 0; i++) {
    now += 1000;
    int liar = i >= 200000;
    kr_vtrust_mode_t m = kr_vtrust_mode(&t, &p, 1 + (uint64_t)(i % 5000), (uint32_t)(i / 5000), now);
    int changed = rnd() % 100 < 30;
    int predicted_change = changed && !liar; /* a liar never admits a change */
    kr_content_t digest = m == KR_VTRUST_USE && !predicted_change
                              ? KR_CONTENT_UNKNOWN
                              : changed ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED;
    lies += liar && changed;
    if (i == 199999) assert_true(kr_vtrust_sample_rate(&t, &p) == 0.01);
    kr_vtrust_record(&t, &p, predicted_change, digest, now);
    if (t.distrusts) caught_after = lies;
  }
  printf("# late liar caught after %ld lies\n", caught_after);
  assert_true(caught_after >= 0 && caught_after < 1000);
  assert_int_equal(t.confirm_run, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(etag_compare),   cmocka_unit_test(lm_compare),
      cmocka_unit_test(schemes),        cmocka_unit_test(check_with_headers),
      cmocka_unit_test(dates),          cmocka_unit_test(sampling),
      cmocka_unit_test(probation_distrust_recovery),
      cmocka_unit_test(measures),       cmocka_unit_test(liar_and_honest),
      cmocka_unit_test(sample_decay),   cmocka_unit_test(late_liar),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
