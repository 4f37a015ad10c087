/*
 * libFuzzer harness for the content decoder (gzip / deflate / identity).
 * Byte 0: coding (bits 0-1: identity, gzip, deflate, or 3 = "compress
 * the rest with zlib first, then decode it"), max_out (bits 2-3),
 * max_ratio (bits 4-5), ratio_after (bit 6), multi-member gzip (bit 7,
 * compress mode). Byte 1: size of the pieces fed (bits 0-2), the
 * decoder's output chunk (bits 3-4), the compressed format of compress
 * mode (bits 5-6: gzip, zlib, raw deflate). The rest is the body.
 *
 * Invariants, beyond ASan/UBSan:
 *  - the caps hold whatever the input: at most max_out bytes come out,
 *    exactly max_out when KR_EBODY_TOO_BIG is returned, and past
 *    ratio_after never more than max_ratio times the bytes fed;
 *  - every callback chunk is non-empty and at most the chunk size (identity
 *    passes the caller's pieces through without a copy); the
 *    callbacks add up to kr_inflate_total_out; ignored <= total_in;
 *  - results do not depend on how the input is cut nor on the output
 *    chunk size, and a reused decoder (kr_inflate_start) behaves as a new
 *    one: fed in pieces to a reused decoder, the output bytes and the
 *    result equal those of one feed to a fresh decoder (without a ratio
 *    limit, which is measured as input arrives);
 *  - after an error the decoder stays failed and delivers nothing;
 *  - decoding what zlib compressed gives back the original (a prefix of
 *    it when a cap stopped it); identity passes bytes through unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz.h"
#include "kria/error.h"
#include "kria/inflate.h"

typedef struct infl_sink {
  uint64_t hash, total;
  size_t chunk;
  const uint8_t *expect; /* identity / round trip: output must match */
  size_t expect_len;
  int refuse;            /* must not be called */
  int identity;          /* input pieces pass through uncut */
} infl_sink_t;

static kr_inflate_t *infl_reused[4];
static const size_t infl_chunks[4] = {0, 1, 13, 256};
static const size_t infl_pieces[8] = {1, 2, 3, 7, 64, 512, 4096, SIZE_MAX};
static const uint64_t infl_max_out[4] = {0, 100, 4096, 1 << 20};
static const uint32_t infl_max_ratio[4] = {0, 2, 10, 100};

static int infl_cb(void *data, const char *p, size_t n) {
  infl_sink_t *s = data;
  FUZZ_CHECK(!s->refuse);
  FUZZ_CHECK(n > 0 && (s->identity || n <= (s->chunk ? s->chunk : 16384)));
  if (s->expect) {
    FUZZ_CHECK(s->total + n <= s->expect_len);
    FUZZ_CHECK(memcmp(s->expect + s->total, p, n) == 0);
  }
  for (size_t i = 0; i < n; i++) s->hash = (s->hash ^ (uint8_t)p[i]) * 0x100000001b3ull;
  s->total += n;
  return 0;
}

/* Feed in pieces until an error, then finish; the first error or the
 * result of finish. */
static int infl_run(kr_inflate_t *z, const uint8_t *p, size_t n, size_t piece, infl_sink_t *s) {
  int rc = 0;
  size_t i = 0;
  do {
    size_t k = n - i < piece ? n - i : piece;
    rc = kr_inflate_feed(z, p + i, k, infl_cb, s);
    i += k;
  } while (!rc && i < n);
  if (!rc) rc = kr_inflate_finish(z);
  FUZZ_CHECK(rc == 0 || rc == KR_EDECODE || rc == KR_ERATIO || rc == KR_EBODY_TOO_BIG);
  FUZZ_CHECK(kr_inflate_total_out(z) == s->total);
  FUZZ_CHECK(kr_inflate_total_in(z) <= n);
  FUZZ_CHECK(kr_inflate_ignored(z) <= kr_inflate_total_in(z));
  if (rc) {
    /* Failed until the next start: nothing more comes out. */
    s->refuse = 1;
    FUZZ_CHECK(kr_inflate_feed(z, p, n, infl_cb, s) != 0);
    FUZZ_CHECK(kr_inflate_finish(z) != 0);
    s->refuse = 0;
    FUZZ_CHECK(kr_inflate_total_out(z) == s->total);
  }
  return rc;
}

/* zlib-compress p (as one or two gzip members, a zlib or a raw stream). */
static uint8_t *infl_compress(const uint8_t *p, size_t n, int fmt, int two, size_t *out_len) {
  int bits = fmt == 0 ? 15 + 16 : fmt == 1 ? 15 : -15;
  size_t cap = 2 * (n + 64) + 64, len = 0;
  uint8_t *out = malloc(cap);
  int parts = two && fmt == 0 ? 2 : 1;
  for (int part = 0; part < parts; part++) {
    size_t from = part ? n / 2 : 0, to = parts == 2 && !part ? n / 2 : n;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    FUZZ_CHECK(deflateInit2(&zs, (int)(n % 10), Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = (Bytef *)(uintptr_t)(p + from);
    zs.avail_in = (uInt)(to - from);
    zs.next_out = out + len;
    zs.avail_out = (uInt)(cap - len);
    FUZZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    len = cap - zs.avail_out;
    deflateEnd(&zs);
  }
  *out_len = len;
  return out;
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  unsigned m0 = data[0], m1 = data[1];
  const uint8_t *body = data + 2;
  size_t n = size - 2;
  int compress = (m0 & 3) == 3;
  int fmt = (int)((m1 >> 5) & 3) % 3;
  enum kr_coding coding = compress ? (fmt == 0 ? KR_CODING_GZIP : KR_CODING_DEFLATE)
                                   : (enum kr_coding)(m0 & 3);
  kr_inflate_limits_t lim = {
      .max_out = infl_max_out[(m0 >> 2) & 3],
      .max_ratio = infl_max_ratio[(m0 >> 4) & 3],
      .ratio_after = (m0 & 0x40) ? 256 : 0,
  };
  size_t piece = infl_pieces[m1 & 7];
  unsigned ci = (m1 >> 3) & 3;

  const uint8_t *in = body;
  size_t in_len = n;
  uint8_t *packed = NULL;
  if (compress) in = packed = infl_compress(body, n, fmt, (m0 & 0x80) != 0, &in_len);

  /* Pieces, through a reused decoder with the chosen chunk. */
  if (!infl_reused[ci]) infl_reused[ci] = kr_inflate_new(infl_chunks[ci]);
  kr_inflate_t *z = infl_reused[ci];
  FUZZ_CHECK(kr_inflate_start(z, coding, &lim) == 0);
  infl_sink_t a = {0xcbf29ce484222325ull, 0, infl_chunks[ci], NULL, 0, 0, 0};
  a.identity = coding == KR_CODING_IDENTITY;
  if (compress || coding == KR_CODING_IDENTITY) {
    a.expect = body;
    a.expect_len = n;
  }
  int ra = infl_run(z, in, in_len, piece, &a);

  if (lim.max_out) {
    FUZZ_CHECK(a.total <= lim.max_out);
    if (ra == KR_EBODY_TOO_BIG) FUZZ_CHECK(a.total == lim.max_out);
  } else {
    FUZZ_CHECK(ra != KR_EBODY_TOO_BIG);
  }
  if (lim.max_ratio && coding != KR_CODING_IDENTITY) {
    uint64_t bound = (uint64_t)lim.max_ratio * kr_inflate_total_in(z);
    FUZZ_CHECK(a.total <= (bound > lim.ratio_after ? bound : lim.ratio_after));
  } else {
    FUZZ_CHECK(ra != KR_ERATIO);
  }
  if (compress && ra == 0) FUZZ_CHECK(a.total == n);
  if (compress && !lim.max_out && !lim.max_ratio) FUZZ_CHECK(ra == 0);
  if (coding == KR_CODING_IDENTITY) {
    FUZZ_CHECK(ra == 0 || ra == KR_EBODY_TOO_BIG);
    FUZZ_CHECK(a.total == (lim.max_out && lim.max_out < n ? lim.max_out : n));
  }

  /* One feed, fresh decoder, default chunk: same bytes, same result. */
  if (!lim.max_ratio) {
    kr_inflate_t *f = kr_inflate_new(0);
    FUZZ_CHECK(kr_inflate_start(f, coding, &lim) == 0);
    infl_sink_t b = {0xcbf29ce484222325ull, 0, 0, NULL, 0, 0, coding == KR_CODING_IDENTITY};
    int rb = infl_run(f, in, in_len, SIZE_MAX, &b);
    FUZZ_CHECK(ra == rb);
    FUZZ_CHECK(a.total == b.total && a.hash == b.hash);
    kr_inflate_free(f);
  }

  enum kr_coding parsed;
  if (kr_inflate_coding((const char *)body, n, &parsed) == 0)
    FUZZ_CHECK(parsed == KR_CODING_IDENTITY || parsed == KR_CODING_GZIP ||
               parsed == KR_CODING_DEFLATE);
  free(packed);
  return 0;
}
