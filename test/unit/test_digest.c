/* Unit tests for digest: SHA-1 test vectors (FIPS 180 / RFC 3174),
 * streaming in odd pieces, context reuse, RFC 4648 base32 vectors and the
 * WARC label of the empty payload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kria/digest.h"
#include "kria/error.h"

static void hex(const uint8_t *d, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void sha1_vectors(void **state) {
  (void)state;
  static const struct { const char *in, *hex; } v[] = {
      {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
      {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    uint8_t d[KR_SHA1_LEN];
    char h[41];
    assert_int_equal(kr_sha1(v[i].in, strlen(v[i].in), d), 0);
    hex(d, sizeof d, h);
    assert_string_equal(h, v[i].hex);
  }
}

static void sha1_streams_and_reuses(void **state) {
  (void)state;
  kr_sha1_t s;
  uint8_t d[KR_SHA1_LEN];
  char h[41];
  assert_int_equal(kr_sha1_init(&s), 0);
  /* A million 'a' in pieces of 1..997 bytes. */
  static char block[1000];
  memset(block, 'a', sizeof block);
  size_t left = 1000000, step = 1;
  while (left) {
    size_t n = step < left ? step : left;
    assert_int_equal(kr_sha1_update(&s, block, n), 0);
    left -= n;
    step = step % 997 + 1;
  }
  assert_int_equal(kr_sha1_final(&s, d), 0);
  hex(d, sizeof d, h);
  assert_string_equal(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  /* Update after final is refused until reset. */
  assert_int_equal(kr_sha1_update(&s, "x", 1), KR_EIO);
  /* Reuse the same context: an unfinished message is discarded. */
  assert_int_equal(kr_sha1_reset(&s), 0);
  assert_int_equal(kr_sha1_update(&s, "garbage", 7), 0);
  assert_int_equal(kr_sha1_reset(&s), 0);
  assert_int_equal(kr_sha1_update(&s, "ab", 2), 0);
  assert_int_equal(kr_sha1_update(&s, "c", 1), 0);
  assert_int_equal(kr_sha1_final(&s, d), 0);
  hex(d, sizeof d, h);
  assert_string_equal(h, "a9993e364706816aba3e25717850c26c9cd0d89d");
  kr_sha1_free(&s);
  kr_sha1_free(&s); /* idempotent */
}

static void base32_rfc4648_vectors(void **state) {
  (void)state;
  static const struct { const char *in, *out; } v[] = {
      {"", ""},           {"f", "MY======"},         {"fo", "MZXQ===="},
      {"foo", "MZXW6==="}, {"foob", "MZXW6YQ="},      {"fooba", "MZXW6YTB"},
      {"foobar", "MZXW6YTBOI======"},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    char out[64];
    uint8_t back[64];
    size_t n = strlen(v[i].in);
    assert_int_equal(kr_base32_encode((const uint8_t *)v[i].in, n, out), strlen(v[i].out));
    assert_string_equal(out, v[i].out);
    assert_true(kr_base32_size(n) >= strlen(out) + 1);
    assert_int_equal(kr_base32_decode(out, strlen(out), back, sizeof back), (int)n);
    assert_memory_equal(back, v[i].in, n);
  }
}

static void base32_decode_rejects_bad_input(void **state) {
  (void)state;
  uint8_t out[16];
  assert_int_equal(kr_base32_decode("MY1=====", 8, out, sizeof out), KR_EINVAL); /* '1' */
  assert_int_equal(kr_base32_decode("M", 1, out, sizeof out), KR_EINVAL);        /* length */
  assert_int_equal(kr_base32_decode("MZ======", 8, out, sizeof out), KR_EINVAL); /* leftover bits */
  assert_int_equal(kr_base32_decode("MZXW6YTB", 8, out, 2), KR_EINVAL);          /* room */
  assert_int_equal(kr_base32_decode("mzxw6ytb", 8, out, sizeof out), 5);         /* lower case */
}

static void warc_label_of_empty_payload(void **state) {
  (void)state;
  uint8_t d[KR_SHA1_LEN];
  char b32[KR_SHA1_B32_LEN + 1], label[KR_SHA1_LABEL_SIZE];
  assert_int_equal(kr_sha1("", 0, d), 0);
  kr_sha1_base32(d, b32);
  assert_string_equal(b32, "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
  kr_sha1_label(d, label);
  assert_string_equal(label, "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sha1_vectors),
      cmocka_unit_test(sha1_streams_and_reuses),
      cmocka_unit_test(base32_rfc4648_vectors),
      cmocka_unit_test(base32_decode_rejects_bad_input),
      cmocka_unit_test(warc_label_of_empty_payload),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
