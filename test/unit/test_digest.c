/* Unit tests for digest: SHA-1 test vectors (FIPS 180 / RFC 3174),
 * streaming in odd pieces, context reuse, kr_sha1_pair (vectors, every
 * length 0..300 and random lengths and slice splits against OpenSSL, on
 * the SHA-NI path and the forced OpenSSL one), RFC 4648 base32 vectors and
 * the WARC label of the empty payload. */
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

/* ---- kr_sha1_pair ---- */

static const char *path_name(void) { return kr_sha1_pair_accel() ? "SHA-NI" : "OpenSSL"; }

/* Run body on both paths: the CPU's best, then OpenSSL forced. */
#define BOTH_PATHS(...)                          \
  do {                                           \
    for (int accel_ = 1; accel_ >= 0; accel_--) { \
      kr_sha1_pair_set_accel(accel_);            \
      __VA_ARGS__;                               \
    }                                            \
    kr_sha1_pair_set_accel(1);                   \
  } while (0)

static void pair_fips_vectors(void **state) {
  (void)state;
  static const char *abc = "abc";
  static const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  static char mil[1000000];
  memset(mil, 'a', sizeof mil);
  kr_slice_t va = kr_slice(abc, 3), vb = kr_slice(m448, strlen(m448));
  kr_slice_t vm = kr_slice(mil, sizeof mil), ve = kr_slice(NULL, 0);
  /* the million 'a' also cut at 1, 63, 64, 65, 1000 and 998807 bytes */
  kr_slice_t vm6[6] = {{mil, 1}, {mil, 63}, {mil, 64}, {mil, 65}, {mil, 1000}, {mil, 998807}};
  uint8_t da[KR_SHA1_LEN], db[KR_SHA1_LEN];
  char h[41];
  BOTH_PATHS({
    assert_int_equal(kr_sha1_pair(NULL, &va, 1, &vb, 1, da, db), 0);
    hex(da, sizeof da, h);
    assert_string_equal(h, "a9993e364706816aba3e25717850c26c9cd0d89d");
    hex(db, sizeof db, h);
    assert_string_equal(h, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    assert_int_equal(kr_sha1_pair(NULL, &vm, 1, &va, 1, da, db), 0);
    hex(da, sizeof da, h);
    assert_string_equal(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    hex(db, sizeof db, h);
    assert_string_equal(h, "a9993e364706816aba3e25717850c26c9cd0d89d");
    assert_int_equal(kr_sha1_pair(NULL, &ve, 1, vm6, 6, da, db), 0);
    hex(da, sizeof da, h);
    assert_string_equal(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    hex(db, sizeof db, h);
    assert_string_equal(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    assert_int_equal(kr_sha1_pair(NULL, NULL, 0, NULL, 0, da, db), 0); /* no slices */
    hex(db, sizeof db, h);
    assert_string_equal(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  });
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Cut buf[0..n) into at most max slices at random (some empty, the empty
 * ones sometimes with a NULL pointer); the count. */
static size_t cut(const char *buf, size_t n, kr_slice_t *v, size_t max) {
  size_t k = 0, at = 0;
  while (k + 1 < max && at < n && rnd() % 4) {
    size_t len = rnd() % 3 == 0 ? (size_t)(rnd() % 130) : (size_t)(rnd() % (n - at + 1));
    if (len > n - at) len = n - at;
    v[k++] = kr_slice(len || rnd() % 2 ? buf + at : NULL, len);
    at += len;
  }
  v[k++] = kr_slice(buf + at, n - at);
  return k;
}

/* kr_sha1_pair of a = abuf[0..an), b = bbuf[0..bn), cut at random,
 * against OpenSSL's one-shot digests. */
static void check_pair(kr_sha1_t *s, const char *abuf, size_t an, const char *bbuf, size_t bn) {
  kr_slice_t va[12], vb[12];
  size_t na = cut(abuf, an, va, 12), nb = cut(bbuf, bn, vb, 12);
  uint8_t da[KR_SHA1_LEN], db[KR_SHA1_LEN], wa[KR_SHA1_LEN], wb[KR_SHA1_LEN];
  assert_int_equal(kr_sha1(abuf, an, wa), 0);
  assert_int_equal(kr_sha1(bbuf, bn, wb), 0);
  assert_int_equal(kr_sha1_pair(s, va, na, vb, nb, da, db), 0);
  if (memcmp(da, wa, KR_SHA1_LEN) || memcmp(db, wb, KR_SHA1_LEN))
    fail_msg("%s: lengths %zu (%zu slices) and %zu (%zu slices)", path_name(), an, na, bn, nb);
}

static char *random_bytes(size_t n) {
  char *p = test_malloc(n);
  for (size_t i = 0; i < n; i++) p[i] = (char)(rnd() >> 56);
  return p;
}

static void pair_every_length_to_300(void **state) {
  (void)state;
  char *a = random_bytes(301), *b = random_bytes(301);
  kr_sha1_t s;
  assert_int_equal(kr_sha1_init(&s), 0);
  BOTH_PATHS({
    for (size_t n = 0; n <= 300; n++) {
      check_pair(NULL, a, n, b, 300 - n);      /* lanes of different lengths */
      check_pair(&s, a, n, b, n);              /* the same length */
      check_pair(NULL, a, n, b, (n * 7) % 301);
    }
  });
  kr_sha1_free(&s);
  test_free(a);
  test_free(b);
}

static void pair_random_lengths_and_splits(void **state) {
  (void)state;
  enum { MAX = 100 * 1024 };
  char *a = random_bytes(MAX), *b = random_bytes(MAX);
  kr_sha1_t s;
  assert_int_equal(kr_sha1_init(&s), 0);
  BOTH_PATHS({
    for (int i = 0; i < 300; i++) {
      size_t an = (size_t)(rnd() % (MAX + 1)), bn = (size_t)(rnd() % (MAX + 1));
      if (i % 5 == 0) bn = (size_t)(rnd() % 300); /* one long lane, one short */
      check_pair(i % 2 ? &s : NULL, a, an, b, bn);
      check_pair(NULL, b, bn, a + MAX - an, an); /* and swapped, unaligned */
    }
  });
  kr_sha1_free(&s);
  test_free(a);
  test_free(b);
}

static void pair_fallback_can_be_forced(void **state) {
  (void)state;
  kr_sha1_pair_set_accel(0);
  assert_int_equal(kr_sha1_pair_accel(), 0);
  kr_sha1_pair_set_accel(1);
  print_message("# kr_sha1_pair on this CPU: %s\n", path_name());
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
      cmocka_unit_test(pair_fips_vectors),
      cmocka_unit_test(pair_every_length_to_300),
      cmocka_unit_test(pair_random_lengths_and_splits),
      cmocka_unit_test(pair_fallback_can_be_forced),
      cmocka_unit_test(base32_rfc4648_vectors),
      cmocka_unit_test(base32_decode_rejects_bad_input),
      cmocka_unit_test(warc_label_of_empty_payload),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
