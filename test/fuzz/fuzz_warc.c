/*
 * libFuzzer harness for the WARC reader (and, on the same bytes, the
 * writer). Byte 0: bits 0-1 the source's read size (1, 7, 777, all),
 * bit 2 a small max_header (300), bit 3 few fields (8), bits 4-5 wrap the
 * rest: as is, one gzip member, or one gzip member per 300 bytes (split
 * members, records spanning them), bit 6 the lenient reader (ARC v1
 * records, warcio's slips). The rest is the input.
 *
 * Invariants, beyond ASan/UBSan:
 *  - the reader ends cleanly or with KR_EWARC / KR_ETOOBIG, and its
 *    results (records, header fields, blocks, extents, error) do not
 *    depend on how the source cuts the input;
 *  - every record's block has exactly Content-Length bytes (lenient: or
 *    fewer, with a warning, when plain input ends inside it); extents lie
 *    inside the input, in order; in plain input each record starts where
 *    the previous ended (lenient: or after blanks);
 *  - the input written as the block of a resource record (plain, gzip
 *    through libdeflate and through zlib) reads back as the same bytes
 *    with the digest the writer put in its header.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz.h"
#include "kria/buf.h"
#include "kria/digest.h"
#include "kria/error.h"
#include "kria/warc.h"

typedef struct warcfz_src {
  const uint8_t *p;
  size_t n, at, step;
} warcfz_src_t;

static long warcfz_read(void *ctx, void *buf, size_t n) {
  warcfz_src_t *s = ctx;
  size_t k = s->n - s->at;
  if (k > n) k = n;
  if (k > s->step) k = s->step;
  memcpy(buf, s->p + s->at, k);
  s->at += k;
  return (long)k;
}

typedef struct warcfz_sum {
  uint64_t hash;
  int records, rc;
} warcfz_sum_t;

static uint64_t warcfz_fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

static void warcfz_run(const uint8_t *p, size_t n, size_t step, const kr_warc_reader_opts_t *o,
                       int plain, warcfz_sum_t *out) {
  warcfz_src_t s = {p, n, 0, step};
  kr_warc_reader_t *r = kr_warc_reader_new(o, warcfz_read, &s);
  const kr_warc_header_t *h;
  uint64_t h64 = 0xcbf29ce484222325ull, prev_end = 0;
  int rc, count = 0;
  static char buf[4096];
  /* Bounded: every record consumes input. A record counts (its header
   * and block go into the hash) only once it is finished: in a corrupt
   * gzip member the error shows before its header or after part of its
   * block, as much of the member as the reads brought decides. */
  while ((rc = kr_warc_reader_next(r, &h)) == 1) {
    FUZZ_CHECK(h->offset >= prev_end && h->offset < n);
    if (plain && !o->lenient) FUZZ_CHECK(h->offset == prev_end);
    uint64_t rh = warcfz_fnv(h64, &h->type, sizeof h->type);
    for (size_t i = 0; i < h->nfields; i++) {
      rh = warcfz_fnv(rh, h->fields[i].name, strlen(h->fields[i].name) + 1);
      rh = warcfz_fnv(rh, h->fields[i].value.p, h->fields[i].value.n);
    }
    uint64_t got = 0;
    long k;
    while ((k = kr_warc_reader_read(r, buf, (size_t)(count % 3 == 0 ? 1 : sizeof buf))) > 0) {
      rh = warcfz_fnv(rh, buf, (size_t)k);
      got += (uint64_t)k;
    }
    if (k < 0) {
      rc = (int)k;
      break;
    }
    FUZZ_CHECK(got == h->content_length ||
               (o->lenient && plain && got < h->content_length && kr_warc_reader_warning(r)[0]));
    kr_warc_extent_t e;
    rc = kr_warc_reader_finish(r, &e);
    if (rc) break;
    FUZZ_CHECK(e.offset == h->offset);
    if (e.aligned) {
      FUZZ_CHECK(e.end <= n && e.end > e.offset && e.offset + e.length <= e.end);
      prev_end = e.end;
    }
    h64 = warcfz_fnv(rh, &e, sizeof e);
    count++;
  }
  FUZZ_CHECK(rc == 0 || rc == KR_EWARC || rc == KR_ETOOBIG);
  if (rc) FUZZ_CHECK(kr_warc_reader_errmsg(r)[0] != '\0');
  kr_warc_reader_free(r);
  out->hash = h64;
  out->records = count;
  out->rc = rc;
}

static int warcfz_sink(void *ctx, const kr_slice_t *v, size_t n) {
  kr_buf_t *b = ctx;
  for (size_t i = 0; i < n; i++)
    if (kr_buf_append(b, v[i].p, v[i].n)) return KR_ETOOBIG;
  return 0;
}

static void warcfz_round_trip(const uint8_t *p, size_t n, int gzip, int engine) {
  kr_buf_t out;
  kr_buf_init(&out, 64u << 20);
  kr_warc_writer_opts_t o;
  kr_warc_writer_opts_default(&o);
  o.gzip = gzip;
  o.engine = engine;
  o.seed = 1;
  o.whole_max = 4096; /* larger inputs take the zlib stream */
  kr_warc_writer_t *w;
  FUZZ_CHECK(kr_warc_writer_new(&o, warcfz_sink, &out, &w) == 0);
  kr_warc_rec_t rec = {.type = KR_WARC_RESOURCE, .date_ms = 1700000000000ull,
                       .target_uri = KR_SLICE_LIT("urn:fuzz"), .payload = KR_WARC_PAYLOAD_FROM};
  kr_slice_t b = {(const char *)p, n};
  kr_warc_written_t wr;
  FUZZ_CHECK(kr_warc_write(w, &rec, &b, 1, &wr) == 0);
  FUZZ_CHECK(wr.bytes == out.len);
  kr_warc_writer_free(w);
  warcfz_src_t s = {(const uint8_t *)out.data, out.len, 0, SIZE_MAX};
  kr_warc_reader_t *r = kr_warc_reader_new(NULL, warcfz_read, &s);
  const kr_warc_header_t *h;
  FUZZ_CHECK(kr_warc_reader_next(r, &h) == 1);
  FUZZ_CHECK(h->type == KR_WARC_RESOURCE && h->content_length == n);
  kr_slice_t bd = kr_warc_header_get(h, "WARC-Block-Digest");
  FUZZ_CHECK(bd.n == strlen(wr.block_digest) && !memcmp(bd.p, wr.block_digest, bd.n));
  kr_sha1_t sha;
  FUZZ_CHECK(kr_sha1_init(&sha) == 0);
  static char buf[8192];
  long k;
  size_t at = 0;
  while ((k = kr_warc_reader_read(r, buf, sizeof buf)) > 0) {
    FUZZ_CHECK(at + (size_t)k <= n && !memcmp(buf, p + at, (size_t)k));
    kr_sha1_update(&sha, buf, (size_t)k);
    at += (size_t)k;
  }
  FUZZ_CHECK(k == 0 && at == n);
  uint8_t d[KR_SHA1_LEN];
  char label[KR_SHA1_LABEL_SIZE];
  kr_sha1_final(&sha, d);
  kr_sha1_label(d, label);
  FUZZ_CHECK(!strcmp(label, wr.block_digest) && !strcmp(label, wr.payload_digest));
  kr_sha1_free(&sha);
  kr_warc_extent_t e;
  FUZZ_CHECK(kr_warc_reader_finish(r, &e) == 0 && e.aligned);
  FUZZ_CHECK(kr_warc_reader_next(r, &h) == 0);
  kr_warc_reader_free(r);
  kr_buf_free(&out);
}

/* gzip p as one member, or one member per piece bytes. */
static uint8_t *warcfz_gzip(const uint8_t *p, size_t n, size_t piece, size_t *outn) {
  size_t cap = n + n / 8 + 64 * (n / (piece ? piece : 1) + 2) + 64;
  uint8_t *o = malloc(cap);
  size_t w = 0, at = 0;
  do {
    size_t k = piece && n - at > piece ? piece : n - at;
    z_stream z;
    memset(&z, 0, sizeof z);
    FUZZ_CHECK(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    z.next_in = (Bytef *)(p + at);
    z.avail_in = (uInt)k;
    z.next_out = o + w;
    z.avail_out = (uInt)(cap - w);
    FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
    w += z.total_out;
    deflateEnd(&z);
    at += k;
  } while (at < n);
  *outn = w;
  return o;
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 20)) return 0;
  uint8_t ctl = data[0];
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  kr_warc_reader_opts_t o = {.max_header = (ctl & 4) ? 300 : 0, .max_fields = (ctl & 8) ? 8 : 0,
                             .lenient = (ctl >> 6) & 1};
  int wrap = (ctl >> 4) & 3;
  uint8_t *z = NULL;
  if (wrap == 1 || wrap == 2) {
    z = warcfz_gzip(p, n, wrap == 2 ? 300 : 0, &n);
    p = z;
  }
  static const size_t steps[4] = {1, 7, 777, SIZE_MAX};
  warcfz_sum_t ref, other;
  int plain = !(n >= 2 && p[0] == 0x1f && p[1] == 0x8b);
  warcfz_run(p, n, steps[ctl & 3], &o, plain, &ref);
  warcfz_run(p, n, SIZE_MAX, &o, plain, &other);
  FUZZ_CHECK(ref.hash == other.hash && ref.records == other.records && ref.rc == other.rc);
  free(z);
  if (size <= 65536) {
    warcfz_round_trip(data + 1, size - 1, 0, 0);
    warcfz_round_trip(data + 1, size - 1, 1, KR_WARC_ENGINE_LIBDEFLATE);
    warcfz_round_trip(data + 1, size - 1, 1, KR_WARC_ENGINE_ZLIB);
  }
  return 0;
}
