/* URL fingerprints: SipHash-2-4 against the reference test vectors (key
 * 00..0f, message 00 01 .. n-1), pinned kria fingerprints that must never
 * change (they are persisted), alignment independence, and no collision
 * among a million distinct URLs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/fp.h"

/* From the reference implementation's vectors_sip64 (index = length). */
static const struct {
  size_t len;
  uint64_t want;
} vec[] = {
    {0, UINT64_C(0x726fdb47dd0e0e31)},  {1, UINT64_C(0x74f839c593dc67fd)},
    {2, UINT64_C(0x0d6c8009d9a94f5a)},  {3, UINT64_C(0x85676696d7fb7e2d)},
    {4, UINT64_C(0xcf2794e0277187b7)},  {5, UINT64_C(0x18765564cd99a68d)},
    {6, UINT64_C(0xcbc9466e58fee3ce)},  {7, UINT64_C(0xab0200f58b01d137)},
    {8, UINT64_C(0x93f5f5799a932462)},  {9, UINT64_C(0x9e0082df0ba9e4b0)},
    {10, UINT64_C(0x7a5dbbc594ddb9f3)}, {11, UINT64_C(0xf4b32f46226bada7)},
    {12, UINT64_C(0x751e8fbc860ee5fb)}, {13, UINT64_C(0x14ea5627c0843d90)},
    {14, UINT64_C(0xf723ca908e7af2ee)}, {15, UINT64_C(0xa129ca6149be45e5)},
    {16, UINT64_C(0x3f2acc7f57c29bdb)}, {17, UINT64_C(0x699ae9f52cbe4794)},
    {18, UINT64_C(0x4bc1b3f0968dd39c)}, {19, UINT64_C(0xbb6dc91da77961bd)},
    {20, UINT64_C(0xbed65cf21aa2ee98)}, {21, UINT64_C(0xd0f2cbb02e3b67c7)},
    {22, UINT64_C(0x93536795e3a33e88)}, {23, UINT64_C(0xa80c038ccd5ccec8)},
    {24, UINT64_C(0xb8ad50c6f649af94)}, {25, UINT64_C(0xbce192de8a85b8ea)},
    {26, UINT64_C(0x17d835b85bbb15f3)}, {27, UINT64_C(0x2f2e6163076bcfad)},
    {28, UINT64_C(0xde4daaaca71dc9a5)}, {32, UINT64_C(0x7127512f72f27cce)},
    {33, UINT64_C(0xa7f32346f95978e3)}, {34, UINT64_C(0x12e0b01abb051238)},
    {47, UINT64_C(0xd06c98cd5c0975eb)}, {48, UINT64_C(0xe612a3cb9ecba951)},
    {63, UINT64_C(0x958a324ceb064572)},
};

static void reference_vectors(void **state) {
  (void)state;
  uint8_t key[16], msg[64];
  for (int i = 0; i < 16; i++) key[i] = (uint8_t)i;
  for (int i = 0; i < 64; i++) msg[i] = (uint8_t)i;
  for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
    uint64_t got = kr_siphash24(key, msg, vec[i].len);
    if (got != vec[i].want)
      fail_msg("len %zu: got %016llx want %016llx", vec[i].len,
               (unsigned long long)got, (unsigned long long)vec[i].want);
    /* kria's fingerprint is the same function under the same key. */
    assert_true(kr_fp(msg, vec[i].len) == vec[i].want);
  }
  assert_true(kr_siphash24(key, NULL, 0) == vec[0].want);
  assert_true(kr_fp(NULL, 0) == vec[0].want);
}

/* Persisted values: a change here breaks every state database. */
static void pinned_urls(void **state) {
  (void)state;
  static const struct {
    const char *url;
    uint64_t fp;
  } pin[] = {
      {"http://example.com/", UINT64_C(0x97033e4217c73187)},
      {"https://www.example.org/a/b?c=d", UINT64_C(0x8884d5bc123b79b4)},
      {"http://127.0.0.1:8080/robots.txt", UINT64_C(0x111c7f13d6bffa29)},
  };
  for (size_t i = 0; i < sizeof(pin) / sizeof(pin[0]); i++) {
    uint64_t got = kr_fp(pin[i].url, strlen(pin[i].url));
    if (got != pin[i].fp)
      fail_msg("%s: got %016llx want %016llx", pin[i].url,
               (unsigned long long)got, (unsigned long long)pin[i].fp);
  }
}

/* Any alignment and any tail length give the same answer. */
static void alignment(void **state) {
  (void)state;
  char buf[200 + 8];
  const char *u = "http://host-with-a-long-name.example.net/path/to/some/"
                  "document-with-a-long-name.html?query=string&x=1";
  size_t n = strlen(u);
  uint64_t want = kr_fp(u, n);
  for (int off = 0; off < 8; off++) {
    memcpy(buf + off, u, n);
    assert_true(kr_fp(buf + off, n) == want);
  }
  /* Every prefix differs from its neighbours. */
  for (size_t i = 1; i < n; i++) assert_true(kr_fp(u, i) != kr_fp(u, i + 1));
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void no_collisions_in_a_million(void **state) {
  (void)state;
  enum { N = 1000000 };
  uint64_t *fps = malloc(N * sizeof(*fps));
  assert_non_null(fps);
  char u[128];
  unsigned top[16] = {0};
  for (int i = 0; i < N; i++) {
    int n = snprintf(u, sizeof(u), "http://h%d.example/p/%d.html", i % 10000,
                     i);
    fps[i] = kr_fp(u, (size_t)n);
    assert_true(fps[i] != 0);
    top[fps[i] >> 60]++;
  }
  qsort(fps, N, sizeof(*fps), cmp_u64);
  for (int i = 1; i < N; i++) assert_true(fps[i] != fps[i - 1]);
  /* The top nibble is spread evenly (each ~62,500; 5 sigma ~ 1,200). */
  for (int i = 0; i < 16; i++) {
    assert_true(top[i] > 61000);
    assert_true(top[i] < 64000);
  }
  free(fps);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reference_vectors),
      cmocka_unit_test(pinned_urls),
      cmocka_unit_test(alignment),
      cmocka_unit_test(no_collisions_in_a_million),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
