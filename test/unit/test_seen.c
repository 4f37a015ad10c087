/* The seen filter against a reference (a sorted array): adds report new
 * vs present, contains/remove agree, the key 0 and keys at the edges of
 * every shard, validation after growth, and the memory per fingerprint at
 * a million keys (about 11 bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/fp.h"
#include "kria/seen.h"
#include "helpers.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) { return th_splitmix64(&rng_state); } /* deterministic */

static void empty_set(void **state) {
  (void)state;
  kr_seen_t *s = kr_seen_new();
  assert_int_equal(kr_seen_count(s), 0);
  assert_int_equal(kr_seen_contains(s, 1), 0);
  assert_int_equal(kr_seen_contains(s, 0), 0);
  assert_int_equal(kr_seen_remove(s, 42), 0);
  assert_int_equal(kr_seen_validate(s), 0);
  kr_seen_free(s);
}

static void edge_keys(void **state) {
  (void)state;
  kr_seen_t *s = kr_seen_new();
  uint64_t keys[] = {0, 1, 2, UINT64_MAX, UINT64_MAX - 1, UINT64_C(1) << 63,
                     (UINT64_C(1) << 63) - 1, UINT64_C(0x00ffffffffffffff),
                     UINT64_C(0x0100000000000000)};
  size_t n = sizeof(keys) / sizeof(keys[0]);
  for (size_t i = 0; i < n; i++) assert_int_equal(kr_seen_add(s, keys[i]), 1);
  for (size_t i = 0; i < n; i++) assert_int_equal(kr_seen_add(s, keys[i]), 0);
  for (size_t i = 0; i < n; i++) assert_int_equal(kr_seen_contains(s, keys[i]), 1);
  assert_int_equal(kr_seen_count(s), n);
  assert_int_equal(kr_seen_validate(s), 0);
  /* Every shard's first and last key. */
  for (uint64_t sh = 0; sh < 256; sh++) {
    uint64_t lo = sh << 56, hi = lo | UINT64_C(0x00ffffffffffffff);
    kr_seen_add(s, lo | 3);
    kr_seen_add(s, hi);
    assert_true(kr_seen_contains(s, lo | 3));
    assert_true(kr_seen_contains(s, hi));
    assert_false(kr_seen_contains(s, lo | 4));
  }
  assert_int_equal(kr_seen_validate(s), 0);
  assert_int_equal(kr_seen_remove(s, 0), 1);
  assert_int_equal(kr_seen_contains(s, 0), 0);
  assert_int_equal(kr_seen_remove(s, 0), 0);
  assert_int_equal(kr_seen_validate(s), 0);
  kr_seen_free(s);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int ref_has(const uint64_t *ref, size_t n, uint64_t k) {
  return bsearch(&k, ref, n, sizeof(*ref), cmp_u64) != NULL;
}

/* Random adds, half of them repeats, then removals, all checked against a
 * sorted reference, with validation at every growth stage. */
static void against_reference(void **state) {
  (void)state;
  enum { N = 200000 };
  kr_seen_t *s = kr_seen_new();
  uint64_t *keys = malloc(N * sizeof(*keys));
  assert_non_null(keys);
  size_t distinct = 0;
  for (size_t i = 0; i < N; i++) {
    uint64_t k = (i && (rnd() & 1)) ? keys[rnd() % i] : rnd();
    keys[i] = k;
    int was = kr_seen_contains(s, k);
    int added = kr_seen_add(s, k);
    assert_int_equal(added, !was);
    distinct += (size_t)added;
    if ((i & (i - 1)) == 0) assert_int_equal(kr_seen_validate(s), 0);
  }
  assert_int_equal(kr_seen_count(s), distinct);
  assert_int_equal(kr_seen_validate(s), 0);
  uint64_t *ref = malloc(N * sizeof(*ref));
  memcpy(ref, keys, N * sizeof(*ref));
  qsort(ref, N, sizeof(*ref), cmp_u64);
  size_t m = 0;
  for (size_t i = 0; i < N; i++)
    if (m == 0 || ref[m - 1] != ref[i]) ref[m++] = ref[i];
  assert_int_equal(m, distinct);
  for (size_t i = 0; i < 100000; i++) {
    uint64_t k = rnd();
    assert_int_equal(kr_seen_contains(s, k), ref_has(ref, m, k));
  }
  /* Remove every third distinct key; the rest stay findable. */
  for (size_t i = 0; i < m; i += 3) assert_int_equal(kr_seen_remove(s, ref[i]), 1);
  assert_int_equal(kr_seen_validate(s), 0);
  for (size_t i = 0; i < m; i++)
    assert_int_equal(kr_seen_contains(s, ref[i]), i % 3 != 0);
  for (size_t i = 0; i < m; i += 3) assert_int_equal(kr_seen_add(s, ref[i]), 1);
  assert_int_equal(kr_seen_count(s), m);
  assert_int_equal(kr_seen_validate(s), 0);
  free(ref);
  free(keys);
  kr_seen_free(s);
}

/* Keys packed into one corner of one shard make one long run: still
 * exact (slow, but fingerprints are SipHash outputs, not chosen keys). */
static void clustered_keys(void **state) {
  (void)state;
  kr_seen_t *s = kr_seen_new();
  for (uint64_t k = 1; k <= 3000; k++) assert_int_equal(kr_seen_add(s, k * 7), 1);
  for (uint64_t k = 1; k <= 3000; k++) {
    assert_int_equal(kr_seen_contains(s, k * 7), 1);
    assert_int_equal(kr_seen_contains(s, k * 7 + 1), 0);
  }
  assert_int_equal(kr_seen_validate(s), 0);
  kr_seen_free(s);
}

static int cmp_signed(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Reserved for n, a set loaded in sorted order (as the frontier loads it
 * from the store) never has to grow and stays sound; a reserve over keys
 * already there keeps them, and one smaller than the set changes nothing. */
static void reserve_then_sorted_load(void **state) {
  (void)state;
  enum { N = 200000 };
  uint64_t *v = malloc(N * sizeof(*v));
  assert_non_null(v);
  for (size_t i = 0; i < N; i++) v[i] = rnd();
  qsort(v, N, sizeof(*v), cmp_signed);
  kr_seen_t *s = kr_seen_new();
  for (size_t i = 0; i < 1000; i++) assert_int_equal(kr_seen_add(s, v[i * 7]), 1);
  kr_seen_reserve(s, N);
  assert_int_equal(kr_seen_count(s), 1000);
  for (size_t i = 0; i < 1000; i++) assert_int_equal(kr_seen_contains(s, v[i * 7]), 1);
  size_t mem = kr_seen_memory(s);
  size_t added = 0;
  for (size_t i = 0; i < N; i++) added += (size_t)kr_seen_add(s, v[i]);
  assert_int_equal(added, N - 1000);
  assert_int_equal(kr_seen_memory(s), mem); /* no shard had to grow */
  assert_int_equal(kr_seen_validate(s), 0);
  kr_seen_reserve(s, 10);
  assert_int_equal(kr_seen_memory(s), mem);
  for (size_t i = 0; i < N; i += 97) assert_int_equal(kr_seen_contains(s, v[i]), 1);
  kr_seen_free(s);
  free(v);
}

/* A million URL fingerprints: memory per key stays near 11 bytes. */
static void memory_per_key(void **state) {
  (void)state;
  kr_seen_t *s = kr_seen_new();
  char u[96];
  double worst = 0;
  for (int i = 1; i <= 1000000; i++) {
    int n = snprintf(u, sizeof(u), "http://h%d.example/page/%d", i % 10000, i);
    assert_int_equal(kr_seen_add(s, kr_fp(u, (size_t)n)), 1);
    if (i >= 100000 && i % 50000 == 0) {
      double per = (double)kr_seen_memory(s) / i;
      if (per > worst) worst = per;
    }
  }
  double per = (double)kr_seen_memory(s) / 1e6;
  printf("# seen: %.2f bytes/key at 1M, worst %.2f from 100k up\n", per, worst);
  assert_true(worst < 12.5);
  assert_int_equal(kr_seen_validate(s), 0);
  kr_seen_free(s);
}

/* kr_seen_prefetch is a hint: on an empty set, on the zero key, on each
 * shard's first and last key and through growth it changes nothing. */
static void prefetch_is_a_hint(void **state) {
  (void)state;
  kr_seen_t *s = kr_seen_new();
  kr_seen_prefetch(s, 0);
  kr_seen_prefetch(s, UINT64_MAX);
  assert_int_equal(kr_seen_count(s), 0);
  for (uint64_t sh = 0; sh < 256; sh++) {
    uint64_t lo = sh << 56, hi = lo | UINT64_C(0x00ffffffffffffff);
    kr_seen_prefetch(s, lo);
    kr_seen_prefetch(s, hi);
    assert_int_equal(kr_seen_add(s, hi), 1);
    kr_seen_prefetch(s, lo);
    kr_seen_prefetch(s, hi);
  }
  for (int i = 0; i < 20000; i++) {
    uint64_t k = rnd();
    kr_seen_prefetch(s, k);
    kr_seen_add(s, k);
    kr_seen_prefetch(s, k);
  }
  assert_int_equal(kr_seen_contains(s, 0), 0);
  assert_int_equal(kr_seen_validate(s), 0);
  kr_seen_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(empty_set),
      cmocka_unit_test(edge_keys),
      cmocka_unit_test(against_reference),
      cmocka_unit_test(clustered_keys),
      cmocka_unit_test(memory_per_key),
      cmocka_unit_test(reserve_then_sorted_load),
      cmocka_unit_test(prefetch_is_a_hint),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
