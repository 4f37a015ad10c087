/*
 * libFuzzer harness for a host's learned-state record (kria/hoststate.h):
 * the input is the record as the state database would hand it over.
 *
 * Invariants, beyond ASan/UBSan:
 *  - a refused record leaves nothing (has == 0);
 *  - more than KR_HOSTSTATE_BYTES is always refused;
 *  - a record read encodes again, into at most KR_HOSTSTATE_BYTES, and
 *    that encoding reads back to the same state and encodes to the same
 *    bytes (the writer's form is canonical: what kria writes, it reads);
 *  - the values read are within the ranges the crawl relies on: sketch
 *    totals are their buckets' sums, x > 0 and finite, gain within its
 *    bounds, the sample in [0, 1], a pool within its caps;
 *  - a pool or signals section is held or named damaged, never both, and
 *    a pool is there exactly when held (freed by kr_hoststate_free).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kria/hoststate.h"

static void hsfz_check_ranges(const kr_hoststate_t *s) {
  if (s->has & KR_HS_ALLOC) {
    FUZZ_CHECK(s->alloc.ncls <= KR_PLAN_CLASSES);
    for (unsigned c = 0; c < s->alloc.ncls; c++) {
      uint64_t t = 0;
      for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++) t += s->alloc.cls[c].count[b];
      FUZZ_CHECK(t == s->alloc.cls[c].total);
      FUZZ_CHECK(s->alloc.cls[c].min_ms <= s->alloc.cls[c].max_ms);
    }
    FUZZ_CHECK(s->alloc.x > 0 && isfinite(s->alloc.x));
    FUZZ_CHECK(s->alloc.gain >= KR_PLAN_GAIN_MIN && s->alloc.gain <= KR_PLAN_GAIN_MAX);
    FUZZ_CHECK(s->alloc.budget >= 0 && isfinite(s->alloc.budget));
  }
  if (s->has & KR_HS_CAPPLAN) {
    uint64_t t = 0;
    for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++) {
      t += s->cap.count[b];
      FUZZ_CHECK(s->cap.rate[b] >= 0 && isfinite(s->cap.rate[b]));
    }
    FUZZ_CHECK(t == s->cap.total);
    FUZZ_CHECK(s->cap.floor_ms >= 0);
  }
  if (s->has & KR_HS_VTRUST) FUZZ_CHECK(s->vt_sample >= 0 && s->vt_sample <= 1);
  FUZZ_CHECK(!(s->has & s->damaged));
  FUZZ_CHECK(!(s->damaged & ~(unsigned)(KR_HS_PRIORS | KR_HS_SIGNALS)));
  FUZZ_CHECK(!!(s->has & KR_HS_PRIORS) == (s->pool != NULL));
  if (s->pool)
    FUZZ_CHECK(s->pool->ntypes <= KR_PRIOR_TYPES && s->pool->ntmpls <= KR_PRIOR_TEMPLATES);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  kr_hoststate_t *s = malloc(sizeof *s), *d = malloc(sizeof *d);
  uint8_t *a = malloc(KR_HOSTSTATE_BYTES), *b = malloc(KR_HOSTSTATE_BYTES);
  if (!s || !d || !a || !b) abort();
  int rc = kr_hoststate_decode(s, data, size);
  if (size > KR_HOSTSTATE_BYTES) FUZZ_CHECK(rc != 0);
  if (rc) {
    FUZZ_CHECK(s->has == 0 && s->pool == NULL);
  } else {
    hsfz_check_ranges(s);
    size_t n = kr_hoststate_encode(s, a, KR_HOSTSTATE_BYTES);
    FUZZ_CHECK(n > 0 && n <= KR_HOSTSTATE_BYTES);
    FUZZ_CHECK(kr_hoststate_decode(d, a, n) == 0);
    FUZZ_CHECK(d->has == s->has);
    size_t m = kr_hoststate_encode(d, b, KR_HOSTSTATE_BYTES);
    FUZZ_CHECK(m == n && memcmp(a, b, n) == 0);
    kr_hoststate_free(d);
  }
  kr_hoststate_free(s);
  free(s);
  free(d);
  free(a);
  free(b);
  return 0;
}
