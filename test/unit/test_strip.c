/* Volatile-section strip: the thesis' clock example (two pages differing
 * only in the clock hash the same once stripped, differently without the
 * rule, and a real change still shows), the digest equals SHA-1 of the
 * stripped copy made by pcre2_substitute, several rules act as one
 * alternation (checked on random bodies), host and URL filters, the size
 * cap, a catastrophic pattern and too many sections fall back to the
 * unstripped digest with "stripLimit" in bounded time, bad patterns are
 * refused with a message, and binary bodies, empty bodies and \K do not
 * upset it. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/digest.h"
#include "kria/error.h"
#include "kria/strip.h"
#include "helpers.h"

#define SL(s) kr_slice((s), strlen(s))
#define CLOCK "<span id=\"clock\">[^<]*</span>"

static uint64_t rng_state = 5;
static uint64_t rnd(void) { return th_splitmix64(&rng_state); }

static kr_sha1_t sha;
static int setup(void **state) {
  (void)state;
  return kr_sha1_init(&sha);
}
static int teardown(void **state) {
  (void)state;
  kr_sha1_free(&sha);
  return 0;
}

static void plain_b32(const void *p, size_t n, char out[KR_SHA1_B32_LEN + 1]) {
  uint8_t d[KR_SHA1_LEN];
  assert_int_equal(kr_sha1(p, n, d), 0);
  kr_sha1_base32(d, out);
}

static void digest(kr_strip_t *s, const char *host, const char *url, const void *body, size_t n,
                   kr_strip_result_t *r) {
  assert_int_equal(kr_strip_digest(s, &sha, SL(host), SL(url), body, n, r), 0);
}

static const char page1[] =
    "<html><body><h1>News</h1>\n<span id=\"clock\">Mon 12:00:01</span>\n"
    "<p>The story of the day.</p></body></html>\n";
static const char page2[] =
    "<html><body><h1>News</h1>\n<span id=\"clock\">Mon 12:07:59</span>\n"
    "<p>The story of the day.</p></body></html>\n";
static const char page3[] =
    "<html><body><h1>News</h1>\n<span id=\"clock\">Mon 12:09:30</span>\n"
    "<p>Another story.</p></body></html>\n";

static void clock_example(void **state) {
  (void)state;
  kr_strip_t *none = kr_strip_new(NULL);
  kr_strip_t *s = kr_strip_new(NULL);
  char err[200];
  assert_int_equal(kr_strip_add(s, "news.example.is", NULL, CLOCK, err, sizeof err), 0);
  assert_int_equal(kr_strip_rule_count(s), 1);
  kr_strip_result_t a, b, c, pa, pb;
  const char *host = "news.example.is", *url = "http://news.example.is/";
  digest(none, host, url, page1, strlen(page1), &pa);
  digest(none, host, url, page2, strlen(page2), &pb);
  assert_int_equal(pa.status, KR_STRIP_NONE);
  assert_string_not_equal(pa.b32, pb.b32); /* without the rule: a "change" every visit */
  digest(s, host, url, page1, strlen(page1), &a);
  digest(s, host, url, page2, strlen(page2), &b);
  digest(s, host, url, page3, strlen(page3), &c);
  assert_int_equal(a.status, KR_STRIP_DONE);
  assert_int_equal(a.rules, 1);
  assert_int_equal(a.sections, 1);
  assert_int_equal(a.bytes_removed, strlen("<span id=\"clock\">Mon 12:00:01</span>"));
  assert_string_equal(a.b32, b.b32);     /* only the clock differs: unchanged */
  assert_string_not_equal(a.b32, c.b32); /* the story changed: changed */
  assert_string_equal(kr_strip_annotation(&a), "stripped");
  /* the digest is that of the copy with the section replaced by a space */
  const char *stripped = "<html><body><h1>News</h1>\n \n<p>The story of the day.</p></body></html>\n";
  char want[KR_SHA1_B32_LEN + 1];
  plain_b32(stripped, strlen(stripped), want);
  assert_string_equal(a.b32, want);
  /* the plain digest is SHA-1 of the body */
  plain_b32(page1, strlen(page1), want);
  assert_string_equal(pa.b32, want);
  assert_null(kr_strip_annotation(&pa));
  /* the body buffer was not touched */
  assert_non_null(strstr(page1, "12:00:01"));
  kr_strip_free(none);
  kr_strip_free(s);
}

static void filters(void **state) {
  (void)state;
  kr_strip_t *s = kr_strip_new(NULL);
  assert_int_equal(kr_strip_add(s, "Example.ORG.", NULL, CLOCK, NULL, 0), 0);
  assert_int_equal(kr_strip_add(s, NULL, "^https?://other\\.net/news/", "<!--ts:[0-9]+-->", NULL, 0), 0);
  static const struct {
    const char *host, *url;
    int applies;
  } t[] = {
      {"example.org", "http://example.org/", 1},
      {"www.example.org", "http://www.example.org/a", 1},
      {"WWW.EXAMPLE.ORG.", "http://www.example.org/a", 1},
      {"badexample.org", "http://badexample.org/", 0},
      {"example.org.evil.net", "http://example.org.evil.net/", 0},
      {"org", "http://org/", 0},
      {"other.net", "http://other.net/news/1", 1},
      {"other.net", "http://other.net/sport/1", 0},
      {"", "", 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (kr_strip_applies(s, SL(t[i].host), SL(t[i].url)) != t[i].applies)
      fail_msg("%s %s: applies != %d", t[i].host, t[i].url, t[i].applies);
    kr_strip_result_t r;
    digest(s, t[i].host, t[i].url, page1, strlen(page1), &r);
    assert_int_equal(r.status, t[i].applies ? KR_STRIP_DONE : KR_STRIP_NONE);
  }
  /* the URL rule strips its own pattern only */
  const char *a = "<p>x</p><!--ts:1700000000--><p>y</p>", *b = "<p>x</p><!--ts:1700000099--><p>y</p>";
  kr_strip_result_t ra, rb;
  digest(s, "other.net", "http://other.net/news/1", a, strlen(a), &ra);
  digest(s, "other.net", "http://other.net/news/1", b, strlen(b), &rb);
  assert_string_equal(ra.b32, rb.b32);
  assert_int_equal(ra.rules, 1);
  kr_strip_free(s);
}

/* Reference: pcre2_substitute of one pattern (which cannot match empty)
 * with " ", globally, then SHA-1 of the copy. */
static void reference(const char *pattern, const char *body, size_t n, char out[KR_SHA1_B32_LEN + 1]) {
  int ec;
  PCRE2_SIZE off;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &ec, &off, NULL);
  assert_non_null(re);
  PCRE2_SIZE cap = n * 2 + 16;
  PCRE2_UCHAR *buf = malloc(cap);
  PCRE2_SIZE outlen = cap;
  int rc = pcre2_substitute(re, (PCRE2_SPTR)body, n, 0, PCRE2_SUBSTITUTE_GLOBAL, NULL, NULL,
                            (PCRE2_SPTR) " ", 1, buf, &outlen);
  assert_true(rc >= 0);
  plain_b32(buf, outlen, out);
  free(buf);
  pcre2_code_free(re);
}

static void rules_as_alternation(void **state) {
  (void)state;
  static const char *const pats[][2] = {
      {"ab+", "b+c"},         /* overlapping: the leftmost wins */
      {"b+c", "ab+"},
      {"a[^c]*", "[bc]{2}"},
      {"(?s)<x>.*?</x>", "[0-9]{3,}"},
      {"cab", "ca"},          /* same start: the earlier rule wins */
      {"ca", "cab"},
  };
  const char alpha[] = "abc0123<x>/\n";
  for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++) {
    kr_strip_t *two = kr_strip_new(NULL), *one = kr_strip_new(NULL);
    assert_int_equal(kr_strip_add(two, NULL, NULL, pats[k][0], NULL, 0), 0);
    assert_int_equal(kr_strip_add(two, NULL, NULL, pats[k][1], NULL, 0), 0);
    char alt[200];
    snprintf(alt, sizeof alt, "(?:%s)|(?:%s)", pats[k][0], pats[k][1]);
    assert_int_equal(kr_strip_add(one, NULL, NULL, alt, NULL, 0), 0);
    for (int i = 0; i < 3000; i++) {
      size_t n = (size_t)(rnd() % 60);
      char body[64];
      for (size_t j = 0; j < n; j++) body[j] = alpha[rnd() % (sizeof alpha - 1)];
      kr_strip_result_t r2, r1;
      digest(two, "h", "u", body, n, &r2);
      digest(one, "h", "u", body, n, &r1);
      if (strcmp(r1.b32, r2.b32) != 0)
        fail_msg("rules %s, %s on [%.*s]: differs from %s", pats[k][0], pats[k][1], (int)n, body, alt);
      assert_int_equal(r1.sections, r2.sections);
      char want[KR_SHA1_B32_LEN + 1];
      reference(alt, body, n, want);
      assert_string_equal(r1.b32, want);
    }
    kr_strip_free(two);
    kr_strip_free(one);
  }
}

static void size_cap(void **state) {
  (void)state;
  kr_strip_opts_t o;
  kr_strip_opts_default(&o);
  assert_int_equal(o.max_size, 1u << 20);
  o.max_size = 4096;
  kr_strip_t *s = kr_strip_new(&o);
  assert_int_equal(kr_strip_add(s, NULL, NULL, "x+", NULL, 0), 0);
  char *body = malloc(4097);
  memset(body, 'x', 4097);
  kr_strip_result_t r;
  char want[KR_SHA1_B32_LEN + 1];
  digest(s, "h", "u", body, 4096, &r);
  assert_int_equal(r.status, KR_STRIP_DONE);
  plain_b32(" ", 1, want);
  assert_string_equal(r.b32, want);
  digest(s, "h", "u", body, 4097, &r);
  assert_int_equal(r.status, KR_STRIP_SKIPPED_SIZE);
  plain_b32(body, 4097, want);
  assert_string_equal(r.b32, want);
  assert_string_equal(kr_strip_annotation(&r), "stripSkippedSize");
  free(body);
  kr_strip_free(s);
}

static void catastrophic(void **state) {
  (void)state;
  size_t n = 100000;
  char *body = malloc(n);
  memset(body, 'a', n);
  body[n - 1] = '!';
  char want[KR_SHA1_B32_LEN + 1];
  plain_b32(body, n, want);
  kr_strip_result_t r;
  /* exponential backtracking on a run of 'a's that does not end the
   * line, JIT-compiled and interpreted */
  static const char *const pats[] = {"(a|aa)+$", "(a+)+$", "^(\\w+\\s?)*$"};
  for (int jit = 1; jit >= 0; jit--) {
    for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++) {
      kr_strip_opts_t o;
      kr_strip_opts_default(&o);
      o.use_jit = jit;
      kr_strip_t *s = kr_strip_new(&o);
      assert_int_equal(kr_strip_add(s, NULL, NULL, pats[k], NULL, 0), 0);
      double t0 = th_now_s();
      digest(s, "h", "u", body, n, &r);
      double dt = th_now_s() - t0;
      printf("# catastrophic %s (%s): status %d, PCRE2 error %d, %.1f ms\n", pats[k],
             jit ? "JIT" : "interpreter", r.status, r.pcre2_error, dt * 1e3);
      assert_int_equal(r.status, KR_STRIP_LIMIT);
      assert_true(r.pcre2_error == PCRE2_ERROR_MATCHLIMIT ||
                  r.pcre2_error == PCRE2_ERROR_JIT_STACKLIMIT ||
                  r.pcre2_error == PCRE2_ERROR_DEPTHLIMIT || r.pcre2_error == PCRE2_ERROR_HEAPLIMIT);
      assert_string_equal(r.b32, want); /* falls back to the unstripped digest */
      assert_string_equal(kr_strip_annotation(&r), "stripLimit");
      assert_true(dt < 2.0);
      kr_strip_free(s);
    }
  }
  free(body);
  kr_strip_t *s;

  /* too many sections */
  kr_strip_opts_t o;
  kr_strip_opts_default(&o);
  o.max_sections = 10;
  s = kr_strip_new(&o);
  assert_int_equal(kr_strip_add(s, NULL, NULL, "x", NULL, 0), 0);
  digest(s, "h", "u", "xxxxxxxxxx", 10, &r);
  assert_int_equal(r.status, KR_STRIP_DONE);
  assert_int_equal(r.sections, 10);
  digest(s, "h", "u", "xxxxxxxxxxx", 11, &r);
  assert_int_equal(r.status, KR_STRIP_LIMIT);
  assert_int_equal(r.pcre2_error, 0);
  plain_b32("xxxxxxxxxxx", 11, want);
  assert_string_equal(r.b32, want);
  kr_strip_free(s);

  /* a URL pattern hitting its limit: not applied, annotated */
  s = kr_strip_new(NULL);
  assert_int_equal(kr_strip_add(s, NULL, "(a|aa)+$", "x", NULL, 0), 0);
  char url[3000];
  memset(url, 'a', sizeof url - 2);
  url[sizeof url - 2] = '!';
  url[sizeof url - 1] = 0;
  assert_int_equal(kr_strip_applies(s, SL("h"), SL(url)), KR_ETOOBIG);
  digest(s, "h", url, "xx", 2, &r);
  assert_int_equal(r.status, KR_STRIP_LIMIT);
  plain_b32("xx", 2, want);
  assert_string_equal(r.b32, want);
  kr_strip_free(s);
}

static void bad_rules(void **state) {
  (void)state;
  kr_strip_t *s = kr_strip_new(NULL);
  char err[200];
  assert_int_equal(kr_strip_add(s, NULL, NULL, "(unclosed", err, sizeof err), KR_EINVAL);
  assert_non_null(strstr(err, "strip pattern \"(unclosed\""));
  assert_int_equal(kr_strip_add(s, NULL, "[bad", "x", err, sizeof err), KR_EINVAL);
  assert_non_null(strstr(err, "URL pattern"));
  assert_int_equal(kr_strip_add(s, NULL, NULL, "", err, sizeof err), KR_EINVAL);
  assert_int_equal(kr_strip_add(s, NULL, NULL, NULL, err, sizeof err), KR_EINVAL);
  assert_int_equal(kr_strip_add(s, NULL, NULL, "(*UTF)x", err, sizeof err), KR_EINVAL);
  assert_int_equal(kr_strip_add(s, NULL, NULL, "(unclosed", NULL, 0), KR_EINVAL);
  assert_int_equal(kr_strip_rule_count(s), 0);
  for (int i = 0; i < KR_STRIP_MAX_RULES; i++)
    assert_int_equal(kr_strip_add(s, "h", NULL, "q", NULL, 0), 0);
  assert_int_equal(kr_strip_add(s, "h", NULL, "q", err, sizeof err), KR_ETOOBIG);
  assert_int_equal(kr_strip_rule_count(s), KR_STRIP_MAX_RULES);
  kr_strip_result_t r;
  digest(s, "h", "u", "qqq", 3, &r);
  assert_int_equal(r.rules, KR_STRIP_MAX_RULES);
  assert_int_equal(r.sections, 3);
  kr_strip_free(s);
  kr_strip_free(NULL);
}

static void odd_bodies(void **state) {
  (void)state;
  kr_strip_t *s = kr_strip_new(NULL);
  assert_int_equal(kr_strip_add(s, NULL, NULL, "<t>[^<]*</t>", NULL, 0), 0);
  /* binary: NULs and invalid UTF-8 inside and around the section */
  const char bin[] = "\xff\xfe\0<t>\x80\x81\0</t>\xc3\x28\0";
  kr_strip_result_t r;
  digest(s, "h", "u", bin, sizeof bin - 1, &r);
  assert_int_equal(r.status, KR_STRIP_DONE);
  assert_int_equal(r.sections, 1);
  const char want_body[] = "\xff\xfe\0 \xc3\x28\0";
  char want[KR_SHA1_B32_LEN + 1];
  plain_b32(want_body, sizeof want_body - 1, want);
  assert_string_equal(r.b32, want);
  /* empty and NULL bodies */
  plain_b32("", 0, want);
  digest(s, "h", "u", "", 0, &r);
  assert_string_equal(r.b32, want);
  assert_int_equal(kr_strip_digest(s, &sha, SL("h"), SL("u"), NULL, 5, &r), 0);
  assert_string_equal(r.b32, want);
  assert_int_equal(kr_strip_digest(s, &sha, kr_slice(NULL, 0), kr_slice(NULL, 0), "ab", 2, &r), 0);
  /* a section at the very start and at the very end */
  digest(s, "h", "u", "<t>a</t>mid<t>b</t>", 19, &r);
  plain_b32(" mid ", 5, want);
  assert_string_equal(r.b32, want);
  assert_int_equal(r.sections, 2);
  kr_strip_free(s);
  /* \K can report an empty match: it is not replaced and the walk ends */
  s = kr_strip_new(NULL);
  assert_int_equal(kr_strip_add(s, NULL, NULL, "x\\K", NULL, 0), 0);
  digest(s, "h", "u", "xxxx", 4, &r);
  assert_int_equal(r.status, KR_STRIP_DONE);
  plain_b32("xxxx", 4, want);
  assert_string_equal(r.b32, want);
  kr_strip_free(s);
  /* a lookbehind sees before the cursor, as in one alternation */
  s = kr_strip_new(NULL);
  assert_int_equal(kr_strip_add(s, NULL, NULL, "(?<=a)b", NULL, 0), 0);
  digest(s, "h", "u", "abab", 4, &r);
  plain_b32("a a ", 4, want);
  assert_string_equal(r.b32, want);
  kr_strip_free(s);
}

/* A megabyte page with thousands of clock sections: cost per body, JIT
 * and interpreter (whose step budget must not refuse a sane pattern). */
static void throughput(void **state) {
  (void)state;
  size_t cap = 1u << 20, n = 0;
  char *body = malloc(cap);
  while (n + 200 < cap)
    n += (size_t)snprintf(body + n, cap - n,
                          "<p>paragraph %zu with <b>some</b> text in it and more text</p>\n"
                          "<span id=\"clock\">%zu</span>\n",
                          n, n);
  for (int jit = 1; jit >= 0; jit--) {
    kr_strip_opts_t o;
    kr_strip_opts_default(&o);
    o.use_jit = jit;
    kr_strip_t *s = kr_strip_new(&o);
    assert_int_equal(kr_strip_add(s, NULL, NULL, CLOCK, NULL, 0), 0);
    assert_int_equal(kr_strip_add(s, NULL, NULL, "<b>[^<]*</b>", NULL, 0), 0);
    kr_strip_result_t r;
    double t0 = th_now_s();
    for (int i = 0; i < 3; i++) digest(s, "h", "u", body, n, &r);
    double dt = (th_now_s() - t0) / 3;
    printf("# %zu-byte body, %zu sections, %s: %.2f ms per digest (%.0f MB/s)\n", n,
           r.sections, jit ? "JIT" : "interpreter", dt * 1e3, n / dt / 1e6);
    assert_int_equal(r.status, KR_STRIP_DONE);
    assert_true(r.sections > 10000);
    kr_strip_free(s);
  }
  free(body);
}

/* The interpreter's match limit restarts at every start position: a
 * body of many candidate starts must still end quickly. */
static void interpreter_budget(void **state) {
  (void)state;
  size_t n = 1u << 20;
  char *body = malloc(n);
  for (size_t i = 0; i < n; i++) body[i] = i % 10000 == 9999 ? '\n' : "<s>"[i % 3];
  for (int jit = 1; jit >= 0; jit--) {
    kr_strip_opts_t o;
    kr_strip_opts_default(&o);
    o.use_jit = jit;
    kr_strip_t *s = kr_strip_new(&o);
    assert_int_equal(kr_strip_add(s, NULL, NULL, "<s>.*?</s>", NULL, 0), 0);
    kr_strip_result_t r;
    double t0 = th_now_s();
    digest(s, "h", "u", body, n, &r);
    double dt = th_now_s() - t0;
    printf("# 1 MiB of \"<s>\" against <s>.*?</s>, %s: status %d, %.0f ms\n",
           jit ? "JIT" : "interpreter", r.status, dt * 1e3);
    assert_true(r.status == KR_STRIP_DONE || r.status == KR_STRIP_LIMIT);
    assert_true(dt < 2.0);
    kr_strip_free(s);
  }
  free(body);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(clock_example), cmocka_unit_test(filters),
      cmocka_unit_test(rules_as_alternation), cmocka_unit_test(size_cap),
      cmocka_unit_test(catastrophic), cmocka_unit_test(bad_rules),
      cmocka_unit_test(odd_bodies),   cmocka_unit_test(throughput),
      cmocka_unit_test(interpreter_budget),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
