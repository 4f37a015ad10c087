/* Shared dedup (kria/xdedup.h): the Redis key and value of a payload's
 * original, read back as written; values that must not be trusted
 * (another version, malformed, a field out of bounds) read as none; and
 * when a visit asks Redis: only a complete 2xx payload the local index
 * does not know, and never while Redis is away. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kria/xdedup.h"

static const char *RID = "<urn:uuid:0b5c3f0e-6a8e-4d2b-9a43-1f6a7d2c9e01>";

static kr_xdedup_orig_t orig(const char *url) {
  return (kr_xdedup_orig_t){.date_ms = 1795000000123ull, .rid = kr_slice_cstr(RID),
                            .node = kr_slice_cstr("m2"), .url = kr_slice_cstr(url)};
}

static void key_names_the_payload_digest(void **state) {
  (void)state;
  uint8_t d[KR_SHA1_LEN] = {0};
  char k[128];
  size_t n = kr_xdedup_key(k, sizeof k, "crawl7", d);
  assert_int_equal(n, strlen("crawl7:dd:sha1:") + 32);
  assert_string_equal(k, "crawl7:dd:sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
  assert_int_equal(kr_xdedup_key(k, 20, "crawl7", d), 0); /* does not fit */
}

static void value_round_trip(void **state) {
  (void)state;
  kr_xdedup_orig_t o = orig("http://a.example/x?q=1"), r;
  char v[KR_XDEDUP_VALUE_MAX + 1];
  size_t n = kr_xdedup_encode(v, sizeof v, &o);
  assert_string_equal(v, "1 1795000000123 <urn:uuid:0b5c3f0e-6a8e-4d2b-9a43-1f6a7d2c9e01> m2 "
                         "http://a.example/x?q=1");
  assert_int_equal(n, strlen(v));
  assert_int_equal(kr_xdedup_decode(v, n, &r), 1);
  assert_true(r.date_ms == o.date_ms);
  assert_int_equal(r.rid.n, strlen(RID));
  assert_memory_equal(r.rid.p, RID, r.rid.n);
  assert_int_equal(r.node.n, 2);
  assert_memory_equal(r.node.p, "m2", 2);
  assert_int_equal(r.url.n, strlen("http://a.example/x?q=1"));
  assert_memory_equal(r.url.p, "http://a.example/x?q=1", r.url.n);
}

static void unsharable_not_encoded(void **state) {
  (void)state;
  char v[KR_XDEDUP_VALUE_MAX + 1], big[KR_XDEDUP_VALUE_MAX + 8];
  kr_xdedup_orig_t o = orig("http://a.example/a b"); /* a space in the URI */
  assert_int_equal(kr_xdedup_encode(v, sizeof v, &o), 0);
  o = orig("http://a.example/");
  o.rid = kr_slice_cstr("urn:uuid:no-brackets");
  assert_int_equal(kr_xdedup_encode(v, sizeof v, &o), 0);
  o = orig("http://a.example/");
  o.date_ms = 0;
  assert_int_equal(kr_xdedup_encode(v, sizeof v, &o), 0);
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  o = orig(big);
  assert_int_equal(kr_xdedup_encode(v, sizeof v, &o), 0);
  o = orig("http://a.example/");
  assert_int_equal(kr_xdedup_encode(v, 30, &o), 0); /* the buffer is short */
}

static int reads(const char *v) {
  kr_xdedup_orig_t r;
  return kr_xdedup_decode(v, strlen(v), &r);
}

static void untrusted_values_read_as_none(void **state) {
  (void)state;
  char ok[256];
  snprintf(ok, sizeof ok, "1 17 %s m1 http://h/", RID);
  assert_int_equal(reads(ok), 1);
  snprintf(ok, sizeof ok, "2 17 %s m1 http://h/", RID); /* a later version */
  assert_int_equal(reads(ok), 0);
  snprintf(ok, sizeof ok, "1 1x7 %s m1 http://h/", RID);
  assert_int_equal(reads(ok), 0);
  snprintf(ok, sizeof ok, "1 0 %s m1 http://h/", RID);
  assert_int_equal(reads(ok), 0);
  snprintf(ok, sizeof ok, "1 17 %s m1 ", RID); /* no URI */
  assert_int_equal(reads(ok), 0);
  snprintf(ok, sizeof ok, "1 17 %s m1 http://h/\r\n", RID);
  assert_int_equal(reads(ok), 0);
  assert_int_equal(reads("1 17 <urn:uuid:x> m1"), 0);
  assert_int_equal(reads("1 17 urn:uuid:x m1 http://h/"), 0);
  assert_int_equal(reads("1 17 <urn:uuid:a-record-id-far-longer-than-any-warc-id-is> m1 http://h/"),
                   0);
  assert_int_equal(reads("1 99999999999999999999 <u> m1 http://h/"), 0);
  assert_int_equal(reads(""), 0);
  assert_int_equal(reads("1"), 0);
  kr_xdedup_orig_t r;
  assert_int_equal(kr_xdedup_decode(NULL, 0, &r), 0);
}

static void asks_only_what_the_local_index_lacks(void **state) {
  (void)state;
  kr_xdedup_visit_t v = {.on = 1, .status = 200, .complete = 1, .redis_up = 1};
  assert_int_equal(kr_xdedup_decide(&v), KR_XDEDUP_ASK);
  v.status = 206;
  assert_int_equal(kr_xdedup_decide(&v), KR_XDEDUP_ASK);
  v.redis_up = 0; /* local only, counted by the caller */
  assert_int_equal(kr_xdedup_decide(&v), KR_XDEDUP_AWAY);
  v.redis_up = 1;
  kr_xdedup_visit_t no;
  no = v, no.on = 0;
  assert_int_equal(kr_xdedup_decide(&no), KR_XDEDUP_SKIP);
  no = v, no.local = 1; /* the fast path answered */
  assert_int_equal(kr_xdedup_decide(&no), KR_XDEDUP_SKIP);
  no = v, no.complete = 0;
  assert_int_equal(kr_xdedup_decide(&no), KR_XDEDUP_SKIP);
  no = v, no.not_modified = 1;
  assert_int_equal(kr_xdedup_decide(&no), KR_XDEDUP_SKIP);
  no = v, no.robots = 1;
  assert_int_equal(kr_xdedup_decide(&no), KR_XDEDUP_SKIP);
  no = v, no.status = 404;
  assert_int_equal(kr_xdedup_decide(&no), KR_XDEDUP_SKIP);
  no = v, no.status = 304;
  assert_int_equal(kr_xdedup_decide(&no), KR_XDEDUP_SKIP);
  no = v, no.local = 1, no.redis_up = 0; /* nothing to miss: not counted away */
  assert_int_equal(kr_xdedup_decide(&no), KR_XDEDUP_SKIP);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(key_names_the_payload_digest),
      cmocka_unit_test(value_round_trip),
      cmocka_unit_test(unsharable_not_encoded),
      cmocka_unit_test(untrusted_values_read_as_none),
      cmocka_unit_test(asks_only_what_the_local_index_lacks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
