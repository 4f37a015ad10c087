/* The learned-state record (hoststate.h): a full record round-trips
 * field for field (sketch buckets, x, gain, state, the capacity plan's
 * rates and floor, the whole validator trust with its run); an empty
 * state is one byte and an empty input decodes to nothing; an unknown
 * section is skipped and the rest read; the worst case fits
 * KR_HOSTSTATE_BYTES and a typical host's size is printed; hostile
 * input is refused whole and leaves nothing: every truncation of a good
 * record, a wrong version, an overlong or 11-byte varint, a length past
 * the end, a tag 0, a known tag twice, a section with bytes left over,
 * buckets out of order or out of range, counts of 0 or past 2^32, NaN
 * and infinite doubles, x of 0, gain outside its bounds, a state of 3, a
 * record past the cap; every single-byte corruption of a good record
 * either decodes to a state that encodes again or is refused (never a
 * crash: ASan watches); the encoder refuses a NaN x and a buffer too
 * small instead of writing what the reader would refuse. The informed
 * priors' pool (tag 4) and the signals' reliability (tag 5) round-trip
 * beside the rest; a full pool with the worst case of the rest fits the
 * cap; each of the two damaged alone (its module refuses it) is dropped
 * and named in damaged while the rest of the record is read. A record
 * written before the WebSub signal source (a 42-byte signals section of
 * two sources, bytes from that build) is read whole, the push source
 * fresh, and written again in today's layout. */
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
#include "kria/hoststate.h"
#include "helpers.h"

/* A host as a day of crawling leaves it: two classes, a few dozen
 * buckets, a solved binding plan, a capacity floor, a trusted host. */
static void sample_state(kr_hoststate_t *s) {
  kr_hoststate_init(s);
  s->has = KR_HS_ALLOC | KR_HS_CAPPLAN | KR_HS_VTRUST;
  kr_plan_host_t *a = &s->alloc;
  int c0 = kr_plan_host_class(a, 20000, 86400000);
  int c1 = kr_plan_host_class(a, 60000, 7 * 86400000LL);
  for (int i = 0; i < 300; i++)
    kr_plan_host_update(a, i % 3 ? c0 : c1, 0, 1e-6 * (1 + i % 37) * (1 + i % 5));
  kr_plan_host_solve(a, 0.005);
  a->gain = 1.07;
  for (int i = 0; i < 120; i++) kr_capplan_update(&s->cap, 0, 1000 * (20 + i % 29) * (1 + i % 4));
  kr_capplan_solve(&s->cap, 0.05);
  s->vt = (kr_vtrust_t){.checks = 900, .predicted_unchanged = 700, .skipped = 650,
                        .verified = 50, .misses = 1, .false_alarms = 3, .distrusts = 1,
                        .miss_run = 0, .confirm_run = 47, .distrust_until = 1764000000000};
  s->vt_sample = 0.0125;
}

/* A pool of n types and m templates with distinct stats (prior.h). */
static void sample_pool(kr_prior_pool_t *p, unsigned n, unsigned m) {
  kr_prior_pool_init(p);
  p->host = (kr_prior_stat_t){.members = 40, .h_n = 12, .h_sum = -120, .h_sq = 1300,
                              .h_noise = 4, .a_n = 30, .a_sum = -250, .a_sq = 2200,
                              .lm_n = 9, .lm_bad = 1, .lm_chg = 5};
  p->types = calloc(n ? n : 1, sizeof *p->types);
  p->tmpls = calloc(m ? m : 1, sizeof *p->tmpls);
  assert_non_null(p->types);
  assert_non_null(p->tmpls);
  p->cap_types = n ? n : 1, p->cap_tmpls = m ? m : 1;
  for (unsigned i = 0; i < n + m; i++) {
    kr_prior_group_t *g = i < n ? &p->types[i] : &p->tmpls[i - n];
    g->key = 0x9e3779b97f4a7c15ull * (i + 1);
    g->s = p->host;
    g->s.members = 1 + i;
    g->s.h_sum = -3.5 * (i + 1);
  }
  p->ntypes = n, p->ntmpls = m;
}

static void sample_signals(kr_sig_host_t *h) {
  kr_sig_host_init(h);
  h->src[KR_SIG_LASTMOD] = (kr_sig_rel_t){.tp = 12.5f, .fp = 3.25f, .fn = 1.0f, .seen = 40,
                                          .verified = 17};
  h->src[KR_SIG_FEED] = (kr_sig_rel_t){.tp = 2.0f, .fp = 0, .fn = 6.75f, .seen = 9,
                                       .verified = 9};
}

static void assert_same_pool(const kr_prior_pool_t *a, const kr_prior_pool_t *b) {
  assert_int_equal(a->ntypes, b->ntypes);
  assert_int_equal(a->ntmpls, b->ntmpls);
  assert_memory_equal(&a->host, &b->host, sizeof a->host);
  for (unsigned i = 0; i < a->ntypes; i++) {
    assert_true(a->types[i].key == b->types[i].key);
    assert_memory_equal(&a->types[i].s, &b->types[i].s, sizeof a->types[i].s);
  }
  for (unsigned i = 0; i < a->ntmpls; i++) {
    assert_true(a->tmpls[i].key == b->tmpls[i].key);
    assert_memory_equal(&a->tmpls[i].s, &b->tmpls[i].s, sizeof a->tmpls[i].s);
  }
}

static void refused(const uint8_t *p, size_t n, const char *why);

/* Where the payload of section tag starts in a record (0: absent). */
static size_t section_at(const uint8_t *p, size_t n, uint8_t tag) {
  size_t i = 1;
  while (i < n) {
    uint8_t t = p[i++];
    size_t len = p[i] & 0x7f;
    if (p[i++] & 0x80) len |= (size_t)p[i++] << 7;
    if (t == tag) return i;
    i += len;
  }
  return 0;
}

static void assert_same(const kr_hoststate_t *a, const kr_hoststate_t *b) {
  assert_int_equal(a->has, b->has);
  assert_int_equal(a->alloc.ncls, b->alloc.ncls);
  for (unsigned c = 0; c < a->alloc.ncls; c++) {
    assert_true(a->alloc.cls[c].min_ms == b->alloc.cls[c].min_ms);
    assert_true(a->alloc.cls[c].max_ms == b->alloc.cls[c].max_ms);
    assert_int_equal(a->alloc.cls[c].total, b->alloc.cls[c].total);
    assert_memory_equal(a->alloc.cls[c].count, b->alloc.cls[c].count, sizeof a->alloc.cls[c].count);
  }
  assert_true(a->alloc.x == b->alloc.x);
  assert_true(a->alloc.budget == b->alloc.budget);
  assert_true(a->alloc.gain == b->alloc.gain);
  assert_int_equal(a->alloc.state, b->alloc.state);
  assert_int_equal(a->alloc.solved, b->alloc.solved);
  assert_memory_equal(a->cap.count, b->cap.count, sizeof a->cap.count);
  assert_memory_equal(a->cap.rate, b->cap.rate, sizeof a->cap.rate);
  assert_int_equal(a->cap.total, b->cap.total);
  assert_true(a->cap.budget == b->cap.budget);
  assert_true(a->cap.floor_ms == b->cap.floor_ms);
  assert_int_equal(a->cap.solved, b->cap.solved);
  assert_memory_equal(&a->vt, &b->vt, sizeof a->vt);
  assert_true(a->vt_sample == b->vt_sample);
}

static void round_trip(void **state) {
  (void)state;
  kr_hoststate_t s, d;
  sample_state(&s);
  assert_true(s.alloc.solved && s.alloc.x > s.alloc.x_min && s.cap.floor_ms > 0);
  uint8_t buf[KR_HOSTSTATE_BYTES];
  size_t n = kr_hoststate_encode(&s, buf, sizeof buf);
  printf("# a host of 300 URIs (2 classes) with a capacity plan and trust: %zu bytes\n", n);
  assert_true(n > 10 && n < 600);
  assert_int_equal(kr_hoststate_decode(&d, buf, n), 0);
  assert_same(&s, &d);
  assert_int_equal(d.skipped, 0);
  /* the sketch totals are the buckets' sums */
  assert_int_equal(d.alloc.cls[0].total + d.alloc.cls[1].total, 300);
  assert_int_equal(d.cap.total, 120);
  /* each section alone */
  for (unsigned bit = 1; bit <= KR_HS_VTRUST; bit <<= 1) {
    kr_hoststate_t one = s;
    one.has = bit;
    size_t m = kr_hoststate_encode(&one, buf, sizeof buf);
    assert_true(m > 2);
    assert_int_equal(kr_hoststate_decode(&d, buf, m), 0);
    assert_int_equal(d.has, bit);
  }
}

static void empty(void **state) {
  (void)state;
  kr_hoststate_t s, d;
  kr_hoststate_init(&s);
  uint8_t buf[8];
  assert_int_equal(kr_hoststate_encode(&s, buf, sizeof buf), 1);
  assert_int_equal(buf[0], KR_HOSTSTATE_VERSION);
  assert_int_equal(kr_hoststate_decode(&d, buf, 1), 0);
  assert_int_equal(d.has, 0);
  assert_int_equal(kr_hoststate_decode(&d, NULL, 0), 0);
  assert_int_equal(d.has, 0);
  assert_true(d.alloc.gain == 1.0 && d.alloc.x > 0);
}

/* The pool and the signals beside the rest: each read back as written;
 * each damaged alone (its own version byte) is dropped and named, the
 * rest read; both absent when not asked for. */
static void pool_and_signals(void **state) {
  (void)state;
  kr_hoststate_t s, d;
  kr_prior_pool_t pool;
  sample_state(&s);
  sample_pool(&pool, 3, 5);
  s.has |= KR_HS_PRIORS | KR_HS_SIGNALS;
  s.pool = &pool;
  sample_signals(&s.sig);
  uint8_t buf[KR_HOSTSTATE_BYTES], bad[KR_HOSTSTATE_BYTES];
  size_t n = kr_hoststate_encode(&s, buf, sizeof buf);
  printf("# the same host with a pool of 8 groups and signals: %zu bytes\n", n);
  assert_true(n > 97 + 8 * 96 + KR_SIG_HOST_BYTES);
  assert_int_equal(kr_hoststate_decode(&d, buf, n), 0);
  assert_int_equal(d.has, s.has);
  assert_int_equal(d.damaged, 0);
  assert_non_null(d.pool);
  assert_true(d.pool != &pool);
  assert_same_pool(&pool, d.pool);
  assert_memory_equal(&s.sig, &d.sig, sizeof s.sig);
  d.has &= ~(KR_HS_PRIORS | KR_HS_SIGNALS);
  kr_hoststate_t rest = s;
  rest.has = d.has;
  assert_same(&rest, &d);
  kr_hoststate_free(&d);
  assert_null(d.pool);

  const struct {
    uint8_t tag;
    unsigned bit, kept;
  } cases[] = {{KR_HS_TAG_PRIORS, KR_HS_PRIORS, KR_HS_SIGNALS},
               {KR_HS_TAG_SIGNALS, KR_HS_SIGNALS, KR_HS_PRIORS}};
  for (size_t k = 0; k < 2; k++) {
    memcpy(bad, buf, n);
    size_t at = section_at(bad, n, cases[k].tag);
    assert_true(at > 0);
    bad[at] = 0x7f; /* the module's own version byte */
    assert_int_equal(kr_hoststate_decode(&d, bad, n), 0);
    assert_int_equal(d.damaged, cases[k].bit);
    assert_int_equal(d.has, KR_HS_ALLOC | KR_HS_CAPPLAN | KR_HS_VTRUST | cases[k].kept);
    assert_true(d.alloc.x == s.alloc.x && d.vt.confirm_run == s.vt.confirm_run);
    if (cases[k].kept == KR_HS_PRIORS) {
      assert_same_pool(&pool, d.pool);
      assert_memory_equal(&d.sig, &(kr_sig_host_t){0}, sizeof d.sig); /* fresh */
    } else {
      assert_null(d.pool);
      assert_memory_equal(&s.sig, &d.sig, sizeof s.sig);
    }
    kr_hoststate_free(&d);
  }
  /* a damaged section twice is still a known tag twice: refused whole */
  size_t at = section_at(buf, n, KR_HS_TAG_SIGNALS);
  memcpy(bad, buf, n);
  memcpy(bad + n, bad + at - 2, KR_SIG_HOST_BYTES + 2);
  bad[at] = 0x7f;
  refused(bad, n + KR_SIG_HOST_BYTES + 2, "signals twice");
  /* the encoder without the bits writes neither */
  s.has &= ~(KR_HS_PRIORS | KR_HS_SIGNALS);
  size_t m = kr_hoststate_encode(&s, buf, sizeof buf);
  assert_int_equal(kr_hoststate_decode(&d, buf, m), 0);
  assert_int_equal(d.has, KR_HS_ALLOC | KR_HS_CAPPLAN | KR_HS_VTRUST);
  assert_null(d.pool);
  /* a pool asked for but not lent: nothing rather than a record cut short */
  s.has |= KR_HS_PRIORS;
  s.pool = NULL;
  assert_int_equal(kr_hoststate_encode(&s, buf, sizeof buf), 0);
  kr_prior_pool_free(&pool);
}

/* A section of another module (tag 6) before and after ours is skipped. */
/* Written by kria before KR_SIG_WEBSUB (commit b21ba09's build): trust
 * (checks 5, confirm_run 3, sample 0.25) and sample_signals' two sources
 * in a 42-byte signals section. */
static const uint8_t before_websub[] = {
    0x01, 0x03, 0x12, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd0, 0x3f, 0x05, 0x2a, 0x01, 0x02, 0x00,
    0x32, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x28, 0x00,
    0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x1b, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00};

static void older_signals(void **state) {
  (void)state;
  kr_hoststate_t d, e;
  kr_sig_host_t want;
  sample_signals(&want);
  assert_int_equal(sizeof before_websub, 65);
  assert_int_equal(kr_hoststate_decode(&d, before_websub, sizeof before_websub), 0);
  assert_int_equal(d.has, KR_HS_VTRUST | KR_HS_SIGNALS);
  assert_int_equal(d.damaged, 0);
  assert_true(d.vt.checks == 5 && d.vt.confirm_run == 3 && d.vt_sample == 0.25);
  assert_memory_equal(&d.sig, &want, sizeof want); /* WEBSUB: fresh, as sample_signals' */
  assert_int_equal(d.sig.src[KR_SIG_WEBSUB].verified, 0);
  /* written again: today's layout, 20 bytes more, read back the same */
  uint8_t buf[KR_HOSTSTATE_BYTES];
  size_t n = kr_hoststate_encode(&d, buf, sizeof buf);
  assert_int_equal(n, sizeof before_websub + 20);
  assert_int_equal(kr_hoststate_decode(&e, buf, n), 0);
  assert_memory_equal(&e.sig, &d.sig, sizeof d.sig);
}

static void unknown_sections(void **state) {
  (void)state;
  kr_hoststate_t s, d;
  sample_state(&s);
  uint8_t enc[KR_HOSTSTATE_BYTES], buf[KR_HOSTSTATE_BYTES + 64];
  size_t n = kr_hoststate_encode(&s, enc, sizeof enc);
  size_t m = 0;
  buf[m++] = enc[0];
  buf[m++] = 6;
  buf[m++] = 3;
  buf[m++] = 0xff; /* any bytes: not ours to read */
  buf[m++] = 0x80;
  buf[m++] = 0x00;
  memcpy(buf + m, enc + 1, n - 1);
  m += n - 1;
  buf[m++] = 200; /* a future tag with an empty payload */
  buf[m++] = 0;
  assert_int_equal(kr_hoststate_decode(&d, buf, m), 0);
  assert_same(&s, &d);
  assert_int_equal(d.skipped, 2);
}

/* Every bucket of every class and of the plan held, with large values. */
static void worst_case(void **state) {
  (void)state;
  kr_hoststate_t s, d;
  kr_hoststate_init(&s);
  s.has = KR_HS_ALLOC | KR_HS_CAPPLAN | KR_HS_VTRUST;
  s.alloc.ncls = KR_PLAN_CLASSES;
  for (unsigned c = 0; c < KR_PLAN_CLASSES; c++) {
    s.alloc.cls[c].min_ms = INT64_C(1) << 40;
    s.alloc.cls[c].max_ms = INT64_C(1) << 40;
    for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++) s.alloc.cls[c].count[b] = UINT32_MAX / 320;
    s.alloc.cls[c].total = UINT32_MAX / 320 * KR_PLAN_BUCKETS;
  }
  for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++) {
    s.cap.count[b] = UINT32_MAX / 80;
    s.cap.rate[b] = 1e9;
  }
  s.cap.total = UINT32_MAX / 80 * 80;
  s.cap.floor_ms = INT64_C(1) << 40;
  s.vt = (kr_vtrust_t){UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
                       UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT32_MAX, INT64_C(1) << 53};
  kr_prior_pool_t pool; /* every type and template slot taken */
  sample_pool(&pool, KR_PRIOR_TYPES, KR_PRIOR_TEMPLATES);
  s.has |= KR_HS_PRIORS | KR_HS_SIGNALS;
  s.pool = &pool;
  sample_signals(&s.sig);
  uint8_t buf[KR_HOSTSTATE_BYTES];
  size_t n = kr_hoststate_encode(&s, buf, sizeof buf);
  printf("# worst case: %zu bytes (cap %d)\n", n, KR_HOSTSTATE_BYTES);
  /* hoststate.h's bound less a byte per count that fits 4 (here all
   * 400 of them: 5 in every bucket would break the totals' cap) */
  assert_int_equal(n, 7244 - 4 * KR_PLAN_BUCKETS - KR_PLAN_BUCKETS);
  assert_true(n <= KR_HOSTSTATE_BYTES);
  assert_int_equal(kr_hoststate_decode(&d, buf, n), 0);
  assert_same_pool(&pool, d.pool);
  assert_memory_equal(&s.sig, &d.sig, sizeof s.sig);
  assert_same(&s, &d);
  kr_hoststate_free(&d);
  /* too small a buffer: nothing, not a record cut short */
  assert_int_equal(kr_hoststate_encode(&s, buf, n - 1), 0);
  assert_int_equal(kr_hoststate_encode(&s, buf, 0), 0);
  kr_prior_pool_free(&pool);
}

static void refused(const uint8_t *p, size_t n, const char *why) {
  kr_hoststate_t d;
  int rc = kr_hoststate_decode(&d, p, n);
  if (rc != KR_EINVAL) fail_msg("accepted: %s", why);
  assert_int_equal(d.has, 0);
}

/* A record of one VTRUST section with these bytes as its payload. */
static size_t vt_record(uint8_t *out, const uint8_t *payload, size_t n) {
  out[0] = 1;
  out[1] = KR_HS_TAG_VTRUST;
  out[2] = (uint8_t)n;
  memcpy(out + 3, payload, n);
  return n + 3;
}

static void put_dbl(uint8_t *p, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(u >> (8 * i));
}

static void hostile(void **state) {
  (void)state;
  kr_hoststate_t s;
  sample_state(&s);
  uint8_t good[KR_HOSTSTATE_BYTES], buf[KR_HOSTSTATE_BYTES + 16];
  size_t n = kr_hoststate_encode(&s, good, sizeof good);
  for (size_t k = 1; k < n; k++) {
    /* truncated anywhere: a cut inside a section is refused; a cut
     * between sections is a shorter valid record */
    kr_hoststate_t d;
    int rc = kr_hoststate_decode(&d, good, k);
    if (rc == 0) assert_true(d.has != s.has);
    else assert_int_equal(d.has, 0);
  }
  memcpy(buf, good, n);
  buf[0] = 2;
  refused(buf, n, "version 2");
  buf[0] = 0;
  refused(buf, n, "version 0");
  /* a length past the end */
  uint8_t past[] = {1, KR_HS_TAG_ALLOC, 50, 0};
  refused(past, sizeof past, "length past the end");
  uint8_t tag0[] = {1, 0, 0};
  refused(tag0, sizeof tag0, "tag 0");
  uint8_t overlong_len[] = {1, 7, 0x80, 0x00};
  refused(overlong_len, sizeof overlong_len, "overlong length");
  uint8_t varint11[] = {1, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  refused(varint11, sizeof varint11, "11-byte varint");
  uint8_t varint65[] = {1, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  refused(varint65, sizeof varint65, "65-bit varint");
  /* a known section twice */
  kr_hoststate_t one = s;
  one.has = KR_HS_VTRUST;
  size_t m = kr_hoststate_encode(&one, buf, sizeof buf);
  memcpy(buf + m, buf + 1, m - 1);
  refused(buf, 2 * m - 1, "VTRUST twice");
  /* a section with a byte left over (its length one more) */
  m = kr_hoststate_encode(&one, buf, sizeof buf);
  buf[2]++;
  buf[m++] = 0;
  refused(buf, m, "a byte left over");
  /* past the cap, however well formed */
  uint8_t *big = calloc(1, KR_HOSTSTATE_BYTES + 8);
  big[0] = 1;
  for (size_t at = 1; at + 2 <= KR_HOSTSTATE_BYTES + 8; at += 2) big[at] = 9; /* tag 9, empty */
  refused(big, KR_HOSTSTATE_BYTES + 1, "past the cap");
  assert_int_equal(kr_hoststate_decode(&s, big, KR_HOSTSTATE_BYTES - 1), 0); /* at the cap: fine */
  free(big);

  /* VTRUST: 10 varints then a double */
  uint8_t p[64], rec[80];
  size_t k = 0;
  for (int i = 0; i < 10; i++) p[k++] = 1;
  put_dbl(p + k, 0.05);
  k += 8;
  kr_hoststate_t d;
  assert_int_equal(kr_hoststate_decode(&d, rec, vt_record(rec, p, k)), 0);
  assert_int_equal(d.vt.confirm_run, 1);
  put_dbl(p + 10, NAN);
  refused(rec, vt_record(rec, p, k), "NaN sample");
  put_dbl(p + 10, INFINITY);
  refused(rec, vt_record(rec, p, k), "infinite sample");
  put_dbl(p + 10, 1.5);
  refused(rec, vt_record(rec, p, k), "sample above 1");
  put_dbl(p + 10, 0.05);
  uint8_t huge[64];
  size_t h = 0;
  for (int i = 0; i < 8; i++) huge[h++] = 1;
  const uint8_t run33[] = {0x80, 0x80, 0x80, 0x80, 0x10}; /* 2^32 */
  memcpy(huge + h, run33, sizeof run33);
  h += sizeof run33;
  huge[h++] = 1;
  put_dbl(huge + h, 0.05);
  h += 8;
  refused(rec, vt_record(rec, huge, h), "confirm_run past 2^32");

  /* ALLOC: one class, buckets */
  uint8_t a[64];
  size_t an = 0;
  a[an++] = 1;                           /* classes */
  a[an++] = 10, a[an++] = 20, a[an++] = 2; /* min, max, 2 buckets */
  size_t b0 = an;
  a[an++] = 5, a[an++] = 3, a[an++] = 6, a[an++] = 4;
  size_t xd = an;
  put_dbl(a + an, 0.9), an += 8;
  put_dbl(a + an, 0.2), an += 8;
  put_dbl(a + an, 1.0), an += 8;
  a[an++] = KR_PLAN_BINDS, a[an++] = 1;
  uint8_t arec[96];
#define AREC() (arec[0] = 1, arec[1] = KR_HS_TAG_ALLOC, arec[2] = (uint8_t)an, \
                memcpy(arec + 3, a, an), an + 3)
  size_t ar = AREC();
  assert_int_equal(kr_hoststate_decode(&d, arec, ar), 0);
  assert_int_equal(d.alloc.cls[0].total, 7);
  assert_true(d.alloc.x == 0.9 && d.alloc.state == KR_PLAN_BINDS);
  a[b0 + 2] = 5;
  ar = AREC();
  refused(arec, ar, "bucket repeated");
  a[b0 + 2] = 4;
  ar = AREC();
  refused(arec, ar, "buckets out of order");
  a[b0 + 2] = KR_PLAN_BUCKETS;
  ar = AREC();
  refused(arec, ar, "bucket out of range");
  a[b0 + 2] = 6;
  a[b0 + 1] = 0;
  ar = AREC();
  refused(arec, ar, "count 0");
  a[b0 + 1] = 3;
  a[1] = 30;
  ar = AREC();
  refused(arec, ar, "min-wait above max-wait");
  a[1] = 10;
  a[0] = KR_PLAN_CLASSES + 1;
  ar = AREC();
  refused(arec, ar, "too many classes");
  a[0] = 1;
  put_dbl(a + xd, 0);
  ar = AREC();
  refused(arec, ar, "x 0");
  put_dbl(a + xd, NAN);
  ar = AREC();
  refused(arec, ar, "x NaN");
  put_dbl(a + xd, 0.9);
  put_dbl(a + xd + 16, 2.0);
  ar = AREC();
  refused(arec, ar, "gain above its bound");
  put_dbl(a + xd + 16, 1.0);
  a[xd + 24] = 3;
  ar = AREC();
  refused(arec, ar, "state 3");
  a[xd + 24] = KR_PLAN_BINDS;
  a[xd + 25] = 2;
  ar = AREC();
  refused(arec, ar, "solved 2");
  a[xd + 25] = 1;
  ar = AREC();
  assert_int_equal(kr_hoststate_decode(&d, arec, ar), 0);
#undef AREC
}

/* Every single-byte corruption: refused, or a state that encodes again. */
static void corruptions(void **state) {
  (void)state;
  kr_hoststate_t s, d;
  sample_state(&s);
  uint8_t good[KR_HOSTSTATE_BYTES], buf[KR_HOSTSTATE_BYTES], again[KR_HOSTSTATE_BYTES];
  size_t n = kr_hoststate_encode(&s, good, sizeof good);
  unsigned refusals = 0, reads = 0;
  for (size_t i = 0; i < n; i++)
    for (unsigned v = 0; v < 256; v += 17) {
      memcpy(buf, good, n);
      buf[i] ^= (uint8_t)(v | 1);
      if (kr_hoststate_decode(&d, buf, n) == 0) {
        reads++;
        assert_true(kr_hoststate_encode(&d, again, sizeof again) > 0);
      } else {
        refusals++;
        assert_int_equal(d.has, 0);
      }
    }
  printf("# corruptions: %u refused, %u read\n", refusals, reads);
  assert_true(refusals > 0);
}

static void encoder_refuses(void **state) {
  (void)state;
  kr_hoststate_t s;
  sample_state(&s);
  uint8_t buf[KR_HOSTSTATE_BYTES];
  s.alloc.x = NAN;
  assert_int_equal(kr_hoststate_encode(&s, buf, sizeof buf), 0);
  sample_state(&s);
  s.cap.rate[3] = INFINITY;
  s.cap.count[3] = 1;
  assert_int_equal(kr_hoststate_encode(&s, buf, sizeof buf), 0);
  sample_state(&s);
  s.vt_sample = -0.5;
  assert_int_equal(kr_hoststate_encode(&s, buf, sizeof buf), 0);
}

/* A host at day 200 (100,000 URIs over every rate bucket of one class,
 * a full capacity plan): its size, and what a write and a read cost
 * (printed for bench/RESULTS.md, not asserted). */
static void big_host(void **state) {
  (void)state;
  kr_hoststate_t s, d;
  sample_state(&s);
  kr_plan_host_init(&s.alloc, 0);
  int c0 = kr_plan_host_class(&s.alloc, 20000, 28 * 86400000LL);
  for (unsigned i = 0; i < 100000; i++) {
    kr_plan_host_update(&s.alloc, c0, 0, kr_plan_bucket_lambda(i % KR_PLAN_BUCKETS));
    kr_capplan_update(&s.cap, 0, 20000 + (int64_t)(i % 4000) * 600000);
  }
  kr_plan_host_solve(&s.alloc, 0.5);
  kr_capplan_solve(&s.cap, 0.5);
  uint8_t buf[KR_HOSTSTATE_BYTES];
  size_t n = kr_hoststate_encode(&s, buf, sizeof buf);
  assert_true(n > 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rounds = 2000;
  for (int i = 0; i < rounds; i++) {
    n = kr_hoststate_encode(&s, buf, sizeof buf);
    assert_int_equal(kr_hoststate_decode(&d, buf, n), 0);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / rounds;
  printf("# day-200 host (100,000 URIs, every allocator bucket held): %zu bytes, encode+decode %.1f us\n", n, us);
  assert_same(&s, &d);
  assert_true(n < 2000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip),  cmocka_unit_test(empty),
      cmocka_unit_test(unknown_sections), cmocka_unit_test(worst_case),
      cmocka_unit_test(hostile),     cmocka_unit_test(corruptions),
      cmocka_unit_test(encoder_refuses), cmocka_unit_test(big_host),
      cmocka_unit_test(pool_and_signals), cmocka_unit_test(older_signals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
