/* Unit tests for inflate: gzip (single and multi-member), deflate in both
 * zlib and raw form, byte-at-a-time feeding, bounded output chunks, the
 * output cap, the gzip-bomb ratio, corrupt and truncated input, trailing
 * garbage, callback errors and reuse of one decoder. Compressed inputs
 * are made here with zlib's deflate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kria/error.h"
#include "kria/inflate.h"

/* wbits: 31 gzip, 15 zlib, -15 raw. Returns a malloc'd buffer. */
static unsigned char *compress_with(const void *in, size_t n, int wbits,
                                    size_t *outn) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&zs, n) + 64;
  unsigned char *out = malloc(cap);
  zs.next_in = (unsigned char *)in;
  zs.avail_in = (uInt)n;
  zs.next_out = out;
  zs.avail_out = (uInt)cap;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  *outn = cap - zs.avail_out;
  deflateEnd(&zs);
  return out;
}

struct sink {
  unsigned char *data;
  size_t len, cap;
  size_t max_piece; /* largest chunk seen */
  int calls;
  int fail_after;   /* return KR_ECANCELED on this call (1-based), 0 = never */
};

static int sink_cb(void *data, const char *p, size_t n) {
  struct sink *s = data;
  s->calls++;
  if (n > s->max_piece) s->max_piece = n;
  if (s->len + n > s->cap) {
    s->cap = (s->len + n) * 2;
    s->data = realloc(s->data, s->cap);
  }
  memcpy(s->data + s->len, p, n);
  s->len += n;
  if (s->fail_after && s->calls == s->fail_after) return KR_ECANCELED;
  return 0;
}

static void sink_free(struct sink *s) { free(s->data); memset(s, 0, sizeof *s); }

/* Text that compresses but not absurdly: a few KB of varied lines. */
static char *sample(size_t n) {
  char *p = malloc(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245 + 12345;
    p[i] = (i % 64 == 63) ? '\n' : "abcdefghij klmnop"[(x >> 16) % 17];
  }
  return p;
}

/* Feed all of in[] in pieces of `piece` bytes; returns the first error. */
static int feed_all(kr_inflate_t *z, const unsigned char *in, size_t n,
                    size_t piece, struct sink *s) {
  for (size_t i = 0; i < n; i += piece) {
    size_t k = n - i < piece ? n - i : piece;
    int err = kr_inflate_feed(z, in + i, k, sink_cb, s);
    if (err) return err;
  }
  return 0;
}

static void roundtrip(int wbits, enum kr_coding coding, size_t piece) {
  size_t n = 50000, cn;
  char *plain = sample(n);
  unsigned char *comp = compress_with(plain, n, wbits, &cn);
  kr_inflate_t *z = kr_inflate_new(1000);
  struct sink s = {0};
  assert_int_equal(kr_inflate_start(z, coding, NULL), 0);
  assert_int_equal(feed_all(z, comp, cn, piece, &s), 0);
  assert_int_equal(kr_inflate_finish(z), 0);
  assert_int_equal(s.len, n);
  assert_memory_equal(s.data, plain, n);
  assert_true(s.max_piece <= 1000);
  assert_int_equal(kr_inflate_total_in(z), cn);
  assert_int_equal(kr_inflate_total_out(z), n);
  sink_free(&s);
  kr_inflate_free(z);
  free(comp);
  free(plain);
}

static void gzip_whole_and_bytewise(void **state) {
  (void)state;
  roundtrip(31, KR_CODING_GZIP, SIZE_MAX);
  roundtrip(31, KR_CODING_GZIP, 1);
  roundtrip(31, KR_CODING_GZIP, 7);
}

static void deflate_zlib_and_raw(void **state) {
  (void)state;
  roundtrip(15, KR_CODING_DEFLATE, SIZE_MAX);
  roundtrip(15, KR_CODING_DEFLATE, 1); /* header sniffed across two feeds */
  roundtrip(-15, KR_CODING_DEFLATE, SIZE_MAX);
  roundtrip(-15, KR_CODING_DEFLATE, 1);
  roundtrip(-15, KR_CODING_DEFLATE, 2);
}

static void gzip_multi_member(void **state) {
  (void)state;
  size_t an, bn;
  unsigned char *a = compress_with("hello, ", 7, 31, &an);
  unsigned char *b = compress_with("world", 5, 31, &bn);
  unsigned char *both = malloc(an + bn);
  memcpy(both, a, an);
  memcpy(both + an, b, bn);
  for (size_t piece = 1; piece <= an + bn; piece = piece * 3 + 1) {
    kr_inflate_t *z = kr_inflate_new(0);
    struct sink s = {0};
    assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, NULL), 0);
    assert_int_equal(feed_all(z, both, an + bn, piece, &s), 0);
    assert_int_equal(kr_inflate_finish(z), 0);
    assert_int_equal(s.len, 12);
    assert_memory_equal(s.data, "hello, world", 12);
    sink_free(&s);
    kr_inflate_free(z);
  }
  free(a);
  free(b);
  free(both);
}

static void gzip_bomb_hits_ratio(void **state) {
  (void)state;
  size_t n = 20u << 20, cn;
  char *zeros = calloc(1, n);
  unsigned char *comp = compress_with(zeros, n, 31, &cn);
  assert_true(cn < n / 500);
  kr_inflate_t *z = kr_inflate_new(16384);
  struct sink s = {0};
  kr_inflate_limits_t lim = {.max_out = 0, .max_ratio = 100, .ratio_after = 1u << 20};
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, &lim), 0);
  assert_int_equal(feed_all(z, comp, cn, 4096, &s), KR_ERATIO);
  /* Stopped right after the threshold, not after 20 MiB. */
  assert_true(s.len <= (1u << 20) + 16384);
  /* Failed for good until restarted. */
  assert_int_equal(kr_inflate_feed(z, comp, 1, sink_cb, &s), KR_EDECODE);
  /* Below the threshold the ratio does not apply. */
  sink_free(&s);
  lim.ratio_after = 32u << 20;
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, &lim), 0);
  assert_int_equal(feed_all(z, comp, cn, 4096, &s), 0);
  assert_int_equal(s.len, n);
  sink_free(&s);
  kr_inflate_free(z);
  free(comp);
  free(zeros);
}

static void output_cap_delivers_exactly_max(void **state) {
  (void)state;
  size_t n = 50000, cn;
  char *plain = sample(n);
  unsigned char *comp = compress_with(plain, n, 31, &cn);
  kr_inflate_t *z = kr_inflate_new(1024);
  struct sink s = {0};
  kr_inflate_limits_t lim = {.max_out = 12345};
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, &lim), 0);
  assert_int_equal(feed_all(z, comp, cn, 100, &s), KR_EBODY_TOO_BIG);
  assert_int_equal(s.len, 12345);
  assert_memory_equal(s.data, plain, 12345);
  sink_free(&s);
  /* Identity obeys the cap too. */
  assert_int_equal(kr_inflate_start(z, KR_CODING_IDENTITY, &lim), 0);
  assert_int_equal(feed_all(z, (unsigned char *)plain, n, 10000, &s), KR_EBODY_TOO_BIG);
  assert_int_equal(s.len, 12345);
  sink_free(&s);
  kr_inflate_free(z);
  free(comp);
  free(plain);
}

static void corrupt_data_is_decode_error(void **state) {
  (void)state;
  size_t n = 5000, cn;
  char *plain = sample(n);
  unsigned char *comp = compress_with(plain, n, 31, &cn);
  kr_inflate_t *z = kr_inflate_new(0);
  struct sink s = {0};
  /* Not gzip at all. */
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, NULL), 0);
  assert_int_equal(kr_inflate_feed(z, "hello world", 11, sink_cb, &s), KR_EDECODE);
  /* Bad CRC in the trailer. */
  comp[cn - 6] ^= 0x55;
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, NULL), 0);
  assert_int_equal(feed_all(z, comp, cn, 1, &s), KR_EDECODE);
  comp[cn - 6] ^= 0x55;
  /* Damaged deflate data in the middle. */
  sink_free(&s);
  memset(comp + cn / 2, 0xff, 8);
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, NULL), 0);
  assert_int_equal(feed_all(z, comp, cn, 64, &s), KR_EDECODE);
  /* Garbage as "deflate" (sniffed as raw, then invalid block type). */
  assert_int_equal(kr_inflate_start(z, KR_CODING_DEFLATE, NULL), 0);
  assert_int_equal(kr_inflate_feed(z, "\xff\xff\xff\xff", 4, sink_cb, &s), KR_EDECODE);
  sink_free(&s);
  kr_inflate_free(z);
  free(comp);
  free(plain);
}

static void truncated_stream_fails_at_finish(void **state) {
  (void)state;
  size_t n = 5000, cn;
  char *plain = sample(n);
  unsigned char *comp = compress_with(plain, n, 31, &cn);
  kr_inflate_t *z = kr_inflate_new(0);
  struct sink s = {0};
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, NULL), 0);
  assert_int_equal(feed_all(z, comp, cn - 4, 100, &s), 0);
  assert_int_equal(kr_inflate_finish(z), KR_EDECODE);
  /* Nothing fed at all (HEAD, 304, empty body): fine. */
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, NULL), 0);
  assert_int_equal(kr_inflate_finish(z), 0);
  /* One byte of raw-or-zlib deflate is incomplete. */
  assert_int_equal(kr_inflate_start(z, KR_CODING_DEFLATE, NULL), 0);
  assert_int_equal(kr_inflate_feed(z, "x", 1, sink_cb, &s), 0);
  assert_int_equal(kr_inflate_finish(z), KR_EDECODE);
  sink_free(&s);
  kr_inflate_free(z);
  free(comp);
  free(plain);
}

static void trailing_garbage_is_ignored(void **state) {
  (void)state;
  size_t cn;
  unsigned char *comp = compress_with("payload", 7, 31, &cn);
  unsigned char *buf = malloc(cn + 5);
  memcpy(buf, comp, cn);
  memcpy(buf + cn, "\0\0junk", 5);
  kr_inflate_t *z = kr_inflate_new(0);
  struct sink s = {0};
  assert_int_equal(kr_inflate_start(z, KR_CODING_GZIP, NULL), 0);
  assert_int_equal(feed_all(z, buf, cn + 5, 3, &s), 0);
  assert_int_equal(kr_inflate_finish(z), 0);
  assert_int_equal(s.len, 7);
  assert_int_equal(kr_inflate_ignored(z), 5);
  sink_free(&s);
  kr_inflate_free(z);
  free(buf);
  free(comp);
}

static void callback_error_stops_and_reuse_works(void **state) {
  (void)state;
  size_t n = 50000, cn;
  char *plain = sample(n);
  unsigned char *comp = compress_with(plain, n, 15, &cn);
  kr_inflate_t *z = kr_inflate_new(1000);
  struct sink s = {.fail_after = 3};
  assert_int_equal(kr_inflate_start(z, KR_CODING_DEFLATE, NULL), 0);
  assert_int_equal(feed_all(z, comp, cn, cn, &s), KR_ECANCELED);
  assert_int_equal(s.calls, 3);
  assert_int_equal(kr_inflate_feed(z, comp, 1, sink_cb, &s), KR_EDECODE);
  sink_free(&s);
  /* The same decoder, other codings, one after another. */
  for (int round = 0; round < 3; round++) {
    assert_int_equal(kr_inflate_start(z, KR_CODING_DEFLATE, NULL), 0);
    assert_int_equal(feed_all(z, comp, cn, 333, &s), 0);
    assert_int_equal(kr_inflate_finish(z), 0);
    assert_int_equal(s.len, n);
    sink_free(&s);
  }
  assert_int_equal(kr_inflate_start(z, 99, NULL), KR_EINVAL);
  kr_inflate_free(z);
  free(comp);
  free(plain);
}

static void coding_names(void **state) {
  (void)state;
  enum kr_coding c;
#define CODING(s, want)                                                  \
  do {                                                                   \
    assert_int_equal(kr_inflate_coding(s, strlen(s), &c), 0);            \
    assert_int_equal(c, want);                                           \
  } while (0)
  CODING("", KR_CODING_IDENTITY);
  CODING("identity", KR_CODING_IDENTITY);
  CODING("gzip", KR_CODING_GZIP);
  CODING(" X-GZip ", KR_CODING_GZIP);
  CODING("Deflate", KR_CODING_DEFLATE);
  CODING("identity, gzip", KR_CODING_GZIP);
  assert_int_equal(kr_inflate_coding("br", 2, &c), KR_EINVAL);
  assert_int_equal(kr_inflate_coding("gzip, gzip", 10, &c), KR_EINVAL);
  assert_int_equal(kr_inflate_coding("gzip, br", 8, &c), KR_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gzip_whole_and_bytewise),
      cmocka_unit_test(deflate_zlib_and_raw),
      cmocka_unit_test(gzip_multi_member),
      cmocka_unit_test(gzip_bomb_hits_ratio),
      cmocka_unit_test(output_cap_delivers_exactly_max),
      cmocka_unit_test(corrupt_data_is_decode_error),
      cmocka_unit_test(truncated_stream_fails_at_finish),
      cmocka_unit_test(trailing_garbage_is_ignored),
      cmocka_unit_test(callback_error_stops_and_reuse_works),
      cmocka_unit_test(coding_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
