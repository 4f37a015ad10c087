/* WebSub pieces (kria/websub.h): hub and self from Link headers (several
 * links, rel lists, quoted commas, junk), notification signatures against
 * the RFC 2202 / 4231 HMAC vectors for every method, and what must be
 * refused: another method, a wrong digit, a short value, no value; the
 * waits between unverified requests (doubling, capped, no overflow) and
 * when a lease is renewed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kria/websub.h"

static int rel(const char *v, const char *r, char *out, size_t cap) {
  kr_slice_t u;
  if (!kr_link_header_rel(v, strlen(v), r, &u)) return 0;
  snprintf(out, cap, "%.*s", (int)u.n, u.p);
  return 1;
}

static void link_headers(void **state) {
  (void)state;
  char u[128];
  const char *v = "<https://hub.example/>; rel=\"hub\", <http://ex.org/feed>; rel=self";
  assert_true(rel(v, "hub", u, sizeof u));
  assert_string_equal(u, "https://hub.example/");
  assert_true(rel(v, "self", u, sizeof u));
  assert_string_equal(u, "http://ex.org/feed");
  assert_false(rel(v, "alternate", u, sizeof u));
  /* a rel list names both; case does not matter */
  assert_true(rel("<http://a/x>; REL=\"Self Hub\"", "hub", u, sizeof u));
  assert_string_equal(u, "http://a/x");
  /* quoted values hold ',' and ';': the next link is not cut there */
  v = "<http://a/1>; title=\"a, b; c\"; rel=next, <http://h/>;rel=hub";
  assert_true(rel(v, "hub", u, sizeof u));
  assert_string_equal(u, "http://h/");
  assert_true(rel(v, "next", u, sizeof u));
  assert_string_equal(u, "http://a/1");
  /* "hubs" is not "hub"; a rel with no value, junk, nothing */
  assert_false(rel("<http://a/>; rel=hubs", "hub", u, sizeof u));
  assert_false(rel("<http://a/>; rel", "hub", u, sizeof u));
  assert_true(rel("junk; rel=hub, <http://b/>; rel=hub", "hub", u, sizeof u));
  assert_string_equal(u, "http://b/");
  assert_false(rel("<http://a/; rel=hub", "hub", u, sizeof u));
  assert_false(rel("", "hub", u, sizeof u));
}

static int sig(const char *s, const char *key, const char *body) {
  return kr_websub_sig_ok(s, s ? strlen(s) : 0, key, strlen(key), body, strlen(body));
}

static void signatures(void **state) {
  (void)state;
  const char *key = "Jefe", *body = "what do ya want for nothing?";
  /* RFC 2202 test 2, RFC 4231 test case 2 */
  assert_true(sig("sha1=effcdf6ae5eb2fa2d27416d5f184df9c259a7c79", key, body));
  assert_true(sig("sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", key,
                  body));
  assert_true(sig("sha384=af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e"
                  "8e2240ca5e69e2c78b3239ecfab21649",
                  key, body));
  assert_true(sig("sha512=164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
                  "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
                  key, body));
  /* upper-case hex and method, blanks around */
  assert_true(sig(" SHA256=5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843 ", key,
                  body));
  /* one digit off, other key, other body */
  assert_false(sig("sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3844", key,
                   body));
  assert_false(sig("sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
                   "jefe", body));
  assert_false(sig("sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", key,
                   "what do ya want for nothing!"));
  /* a method WebSub does not name, the right digest under the wrong
   * method, short, not hex, no '=', empty, missing */
  assert_false(sig("md5=750c783e6ab0b503eaa86e310a5db738", key, body));
  assert_false(sig("sha512=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", key,
                   body));
  assert_false(sig("sha1=effcdf6ae5eb2fa2d27416d5f184df9c259a7c7", key, body));
  assert_false(sig("sha1=effcdf6ae5eb2fa2d27416d5f184df9c259a7cxx", key, body));
  assert_false(sig("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79", key, body));
  assert_false(sig("", key, body));
  assert_false(sig(NULL, key, body));
}

/* The waits between requests a hub has not verified double, to a cap;
 * a renewal comes a tenth of the lease before its end, never later than
 * min before it, never before now. */
static void timing(void **state) {
  (void)state;
  const uint64_t m = 60000, day = 86400000;
  assert_int_equal(kr_websub_retry_ms(10 * m, 0, day), 10 * m);
  assert_int_equal(kr_websub_retry_ms(10 * m, 1, day), 10 * m);
  assert_int_equal(kr_websub_retry_ms(10 * m, 2, day), 20 * m);
  assert_int_equal(kr_websub_retry_ms(10 * m, 6, day), 320 * m);
  assert_int_equal(kr_websub_retry_ms(10 * m, 9, day), day); /* 2560 min: capped */
  assert_int_equal(kr_websub_retry_ms(10 * m, 100, day), day);
  assert_int_equal(kr_websub_retry_ms(UINT64_MAX / 3, 4000000000u, UINT64_MAX), UINT64_MAX);
  assert_int_equal(kr_websub_retry_ms(1000, 3, 500), 500);
  /* a 10-day lease granted at 0: renewed one day before its end */
  assert_int_equal(kr_websub_renew_at(0, 10 * day, 10 * day, 1000), 9 * day);
  /* a 3 s lease: at least min (1 s) early */
  assert_int_equal(kr_websub_renew_at(5000, 8000, 3000, 1000), 7000);
  /* too late for that, or past the end: now */
  assert_int_equal(kr_websub_renew_at(7500, 8000, 3000, 1000), 7500);
  assert_int_equal(kr_websub_renew_at(9000, 8000, 3000, 1000), 9000);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(link_headers),
                                     cmocka_unit_test(signatures), cmocka_unit_test(timing)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
