/*
 * Streaming gzip/deflate decoding with limits (see include/kria/inflate.h).
 * One z_stream per decoder, initialised once and re-armed per body with
 * inflateReset2, because inflateInit allocates its window each time. The
 * state machine: START (nothing fed) → SNIFF (deflate: one byte seen,
 * wrapper undecided) → RUN → END (a gzip member or deflate stream ended;
 * another gzip member may follow) or TRAIL (ignoring trailing bytes);
 * FAIL after any error. Sections: state and lifecycle, the zlib loop,
 * feeding, and coding names.
 */
#include "kria/inflate.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kria/error.h"
#include "kria/mem.h"

enum { ST_START, ST_SNIFF, ST_RUN, ST_END, ST_TRAIL, ST_FAIL };

struct kr_inflate {
  z_stream zs;
  enum kr_coding coding;
  int state;
  int zinit;              /* zs has been through inflateInit2 */
  unsigned char sniff;    /* the first deflate byte while in ST_SNIFF */
  kr_inflate_limits_t lim;
  uint64_t in;            /* bytes given to kr_inflate_feed */
  uint64_t consumed;      /* compressed bytes zlib consumed */
  uint64_t out;           /* bytes delivered */
  uint64_t ignored;       /* trailing bytes after the end */
  size_t chunk;           /* size of buf */
  unsigned char *buf;     /* output chunk, reused */
};

kr_inflate_t *kr_inflate_new(size_t chunk) {
  kr_inflate_t *z = kr_xcalloc(1, sizeof *z);
  z->chunk = chunk ? chunk : 16384;
  z->buf = kr_xmalloc(z->chunk);
  z->state = ST_FAIL; /* until kr_inflate_start */
  return z;
}

void kr_inflate_free(kr_inflate_t *z) {
  if (!z) return;
  if (z->zinit) inflateEnd(&z->zs);
  free(z->buf);
  free(z);
}

int kr_inflate_start(kr_inflate_t *z, enum kr_coding coding,
                     const kr_inflate_limits_t *lim) {
  if (coding != KR_CODING_IDENTITY && coding != KR_CODING_GZIP &&
      coding != KR_CODING_DEFLATE) {
    z->state = ST_FAIL;
    return KR_EINVAL;
  }
  z->coding = coding;
  z->state = ST_START;
  z->in = z->consumed = z->out = z->ignored = 0;
  if (lim)
    z->lim = *lim;
  else
    memset(&z->lim, 0, sizeof z->lim);
  return 0;
}

/* (Re)arm zlib for a new stream with the given window bits. */
static int zreset(kr_inflate_t *z, int wbits) {
  int ret;
  if (!z->zinit) {
    memset(&z->zs, 0, sizeof z->zs);
    ret = inflateInit2(&z->zs, wbits);
    if (ret == Z_OK) z->zinit = 1;
  } else {
    ret = inflateReset2(&z->zs, wbits);
  }
  if (ret == Z_MEM_ERROR) return KR_ENOMEM;
  return ret == Z_OK ? 0 : KR_EDECODE;
}

/* Hand n decoded bytes to cb, enforcing the output cap and the ratio. */
static int deliver(kr_inflate_t *z, const unsigned char *p, size_t n,
                   kr_inflate_cb cb, void *data) {
  if (!n) return 0;
  int over = 0;
  if (z->lim.max_out && n > z->lim.max_out - z->out) {
    n = (size_t)(z->lim.max_out - z->out);
    over = 1;
  }
  if (z->coding != KR_CODING_IDENTITY && z->lim.max_ratio) {
    uint64_t after = z->out + n;
    if (after > z->lim.ratio_after &&
        after > (uint64_t)z->lim.max_ratio * z->consumed)
      return KR_ERATIO;
  }
  if (n) {
    z->out += n;
    int err = cb(data, (const char *)p, n);
    if (err) return err;
  }
  return over ? KR_EBODY_TOO_BIG : 0;
}

/* Run zlib over p[0..n), delivering output chunk by chunk. Handles the
 * end of a gzip member (another may follow) and trailing bytes. */
static int run(kr_inflate_t *z, const unsigned char *p, size_t n,
               kr_inflate_cb cb, void *data) {
  z->zs.next_in = (unsigned char *)p;
  z->zs.avail_in = (uInt)n;
  for (;;) {
    if (z->state == ST_END) {
      if (z->zs.avail_in == 0) return 0;
      /* Another gzip member starts with the magic byte 0x1f; anything
       * else after the end is trailing garbage, ignored. */
      if (z->coding == KR_CODING_GZIP && z->zs.next_in[0] == 0x1f) {
        int err = zreset(z, 16 + MAX_WBITS);
        if (err) return err;
        z->state = ST_RUN;
      } else {
        z->ignored += z->zs.avail_in;
        z->state = ST_TRAIL;
        return 0;
      }
    }
    uInt before_in = z->zs.avail_in;
    z->zs.next_out = z->buf;
    z->zs.avail_out = (uInt)z->chunk;
    int ret = inflate(&z->zs, Z_NO_FLUSH);
    z->consumed += before_in - z->zs.avail_in;
    size_t produced = z->chunk - z->zs.avail_out;
    if (ret == Z_MEM_ERROR) return KR_ENOMEM;
    /* Bytes zlib decoded before it found an error are delivered first, so
     * how much comes out never depends on how the input was cut. */
    int err = deliver(z, z->buf, produced, cb, data);
    if (err) return err;
    if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR)
      return KR_EDECODE; /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
    if (ret == Z_STREAM_END) {
      z->state = ST_END;
      continue;
    }
    /* Z_BUF_ERROR or Z_OK with no input left and room to spare: zlib
     * needs more input. A full output buffer means more may be pending. */
    if (z->zs.avail_in == 0 && z->zs.avail_out != 0) return 0;
    if (ret == Z_BUF_ERROR && produced == 0) return 0;
  }
}

/* 1 if the two bytes start a zlib (RFC 1950) header. */
static int is_zlib_header(unsigned char b0, unsigned char b1) {
  return (b0 & 0x0f) == Z_DEFLATED && (b0 >> 4) <= 7 &&
         (((unsigned)b0 << 8) | b1) % 31 == 0;
}

static int feed(kr_inflate_t *z, const unsigned char *p, size_t n,
                kr_inflate_cb cb, void *data) {
  switch (z->state) {
  case ST_FAIL:
    return KR_EDECODE;
  case ST_TRAIL:
    z->ignored += n;
    return 0;
  case ST_START:
    if (z->coding == KR_CODING_IDENTITY) return deliver(z, p, n, cb, data);
    if (z->coding == KR_CODING_GZIP) {
      int err = zreset(z, 16 + MAX_WBITS);
      if (err) return err;
      z->state = ST_RUN;
      return run(z, p, n, cb, data);
    }
    if (n == 1) {
      z->sniff = p[0];
      z->state = ST_SNIFF;
      return 0;
    }
    {
      int err = zreset(z, is_zlib_header(p[0], p[1]) ? MAX_WBITS : -MAX_WBITS);
      if (err) return err;
    }
    z->state = ST_RUN;
    return run(z, p, n, cb, data);
  case ST_SNIFF: {
    int err = zreset(z, is_zlib_header(z->sniff, p[0]) ? MAX_WBITS : -MAX_WBITS);
    if (err) return err;
    z->state = ST_RUN;
    unsigned char first = z->sniff;
    err = run(z, &first, 1, cb, data);
    if (err) return err;
    return run(z, p, n, cb, data);
  }
  default:
    return run(z, p, n, cb, data);
  }
}

int kr_inflate_feed(kr_inflate_t *z, const void *p, size_t n, kr_inflate_cb cb,
                    void *data) {
  if (z->state == ST_FAIL) return KR_EDECODE;
  if (n == 0) return 0;
  z->in += n;
  int err = feed(z, p, n, cb, data);
  if (err) z->state = ST_FAIL;
  return err;
}

int kr_inflate_finish(kr_inflate_t *z) {
  switch (z->state) {
  case ST_START:
  case ST_END:
  case ST_TRAIL:
    return 0;
  case ST_RUN:
  case ST_SNIFF:
    if (z->coding == KR_CODING_IDENTITY) return 0;
    z->state = ST_FAIL;
    return KR_EDECODE;
  default:
    return KR_EDECODE;
  }
}

uint64_t kr_inflate_total_in(const kr_inflate_t *z) { return z->in; }
uint64_t kr_inflate_total_out(const kr_inflate_t *z) { return z->out; }
uint64_t kr_inflate_ignored(const kr_inflate_t *z) { return z->ignored; }

static int token_is(const char *p, size_t n, const char *lit) {
  size_t m = strlen(lit);
  if (n != m) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (c != lit[i]) return 0;
  }
  return 1;
}

int kr_inflate_coding(const char *value, size_t n, enum kr_coding *out) {
  enum kr_coding found = KR_CODING_IDENTITY;
  int nfound = 0;
  size_t i = 0;
  while (i <= n) {
    size_t j = i;
    while (j < n && value[j] != ',') j++;
    size_t a = i, b = j;
    while (a < b && (value[a] == ' ' || value[a] == '\t')) a++;
    while (b > a && (value[b - 1] == ' ' || value[b - 1] == '\t')) b--;
    const char *t = value + a;
    size_t tn = b - a;
    if (tn == 0 || token_is(t, tn, "identity")) {
      /* nothing to undo */
    } else if (token_is(t, tn, "gzip") || token_is(t, tn, "x-gzip")) {
      found = KR_CODING_GZIP;
      nfound++;
    } else if (token_is(t, tn, "deflate")) {
      found = KR_CODING_DEFLATE;
      nfound++;
    } else {
      return KR_EINVAL;
    }
    i = j + 1;
  }
  if (nfound > 1) return KR_EINVAL;
  *out = found;
  return 0;
}
