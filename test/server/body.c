/*
 * kts bodies: a pull pipeline of three stages so that a body of any size,
 * endless ones included, is produced piece by piece as the socket drains.
 *
 *   gen     raw content: an in-memory prefix (inline body or generated
 *           HTML head), a body-file, generated links, deterministic filler
 *           text, a suffix. Filler block b depends only on (seed, b), so
 *           the same route always gives the same bytes.
 *   encode  identity, or gzip / zlib deflate / raw deflate through zlib;
 *           bad-gzip corrupts the first deflate block header (BTYPE=11).
 *           With Content-Length the encoded body is made in memory first
 *           (up to MAT_MAX, else the caller falls back to chunked).
 *   frame   Content-Length (as is), chunked (with an invalid size line
 *           for bad-chunk), or close-delimited.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kts.h"

#define MAT_MAX (32u << 20)

enum { SEG_PRE, SEG_FILE, SEG_LINKS, SEG_FILLER, SEG_SUFFIX, SEG_END };

uint64_t kts_hash(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  if (!h) h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
  return h;
}

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- gen ---- */

void kts_gen_init(kts_gen_t *g) {
  memset(g, 0, sizeof *g);
  kr_buf_init(&g->pre, 256u << 20);
  g->block_idx = KTS_INFINITE;
}

void kts_gen_free(kts_gen_t *g) {
  kr_buf_free(&g->pre);
  free(g->link_prefix);
  g->link_prefix = NULL;
}

static unsigned digits(uint64_t v) {
  unsigned d = 1;
  while (v >= 10) v /= 10, d++;
  return d;
}

static uint64_t link_target(const kts_gen_t *g, uint64_t k) {
  uint64_t j = g->link_base + k;
  return g->link_mod ? j % g->link_mod : j;
}

#define LINK_FMT "<a href=\"%s%llu\">page %llu</a><br>\n"
#define LINK_FIXED (sizeof("<a href=\"\">page </a><br>\n") - 1)

void kts_gen_finish(kts_gen_t *g, uint64_t body_size) {
  size_t plen = g->link_prefix ? strlen(g->link_prefix) : 0;
  if (plen > 100) plen = 100, g->link_prefix[100] = '\0'; /* line[] bound */
  uint64_t links_len = 0;
  for (uint64_t k = 0; k < g->nlinks; k++)
    links_len += LINK_FIXED + plen + 2 * digits(link_target(g, k));
  uint64_t fixed = g->pre.len + g->file_len + links_len + g->suffix_len;
  if (body_size == KTS_INFINITE) {
    g->filler_len = KTS_INFINITE;
    g->total = KTS_INFINITE;
  } else {
    g->filler_len = body_size > fixed ? body_size - fixed : 0;
    g->total = fixed + g->filler_len;
  }
  g->seg = SEG_PRE;
  g->seg_off = 0;
  g->line_len = g->line_off = 0;
  g->link_i = 0;
}

static const char *const words[] = {
    "tern", "arctic", "revisit", "archive", "frontier", "crawl", "harvest", "page",
    "change", "version", "wait", "host", "queue", "politeness", "digest", "record",
    "the", "of", "and", "a", "to", "in", "is", "it", "that", "for", "on", "with",
    "north", "south", "migration", "season", "return", "colony", "shore", "wing",
};

static void make_block(kts_gen_t *g, uint64_t idx) {
  g->block_idx = idx;
  if (g->fill != KTS_FILL_TEXT) {
    memset(g->block, g->fill == KTS_FILL_ZERO ? 0 : ' ', sizeof g->block);
    return;
  }
  uint64_t st = kts_hash(g->seed * 0x100000001b3ull + 7, &idx, sizeof idx);
  size_t n = 0, col = 0;
  while (n < sizeof g->block) {
    uint64_t r = splitmix(&st);
    const char *w;
    if ((r & 63) == 0) w = "</p>\n<p>";
    else w = words[(r >> 8) % ARRAY_SIZE(words)];
    size_t wl = strlen(w);
    for (size_t i = 0; i < wl && n < sizeof g->block; i++) g->block[n++] = w[i];
    col += wl + 1;
    if (n < sizeof g->block) g->block[n++] = col > 72 ? '\n' : ' ';
    if (col > 72) col = 0;
  }
}

size_t kts_gen_read(kts_gen_t *g, char *out, size_t max) {
  size_t n = 0;
  while (n < max && g->seg != SEG_END) {
    const char *src = NULL;
    uint64_t avail = 0;
    switch (g->seg) {
      case SEG_PRE:
        src = g->pre.data + g->seg_off;
        avail = g->pre.len - g->seg_off;
        break;
      case SEG_FILE:
        src = g->file + g->seg_off;
        avail = g->file_len - g->seg_off;
        break;
      case SEG_LINKS:
        if (g->line_off == g->line_len && g->link_i < g->nlinks) {
          uint64_t j = link_target(g, g->link_i++);
          int w = snprintf(g->line, sizeof g->line, LINK_FMT,
                           g->link_prefix ? g->link_prefix : "", (unsigned long long)j,
                           (unsigned long long)j);
          g->line_len = w > 0 ? KR_MIN((size_t)w, sizeof g->line - 1) : 0;
          g->line_off = 0;
        }
        src = g->line + g->line_off;
        avail = g->line_len - g->line_off;
        break;
      case SEG_FILLER: {
        if (g->filler_len != KTS_INFINITE && g->seg_off >= g->filler_len) break;
        uint64_t idx = g->seg_off / sizeof g->block;
        if (idx != g->block_idx) make_block(g, idx);
        size_t boff = (size_t)(g->seg_off % sizeof g->block);
        src = g->block + boff;
        avail = sizeof g->block - boff;
        if (g->filler_len != KTS_INFINITE && avail > g->filler_len - g->seg_off)
          avail = g->filler_len - g->seg_off;
        break;
      }
      case SEG_SUFFIX:
        src = g->suffix + g->seg_off;
        avail = g->suffix_len - g->seg_off;
        break;
    }
    if (avail == 0) {
      g->seg++;
      g->seg_off = 0;
      continue;
    }
    size_t take = (size_t)KR_MIN(avail, (uint64_t)(max - n));
    memcpy(out + n, src, take);
    n += take;
    if (g->seg == SEG_LINKS) g->line_off += take;
    else g->seg_off += take;
  }
  return n;
}

/* ---- encode ---- */

static size_t enc_read(kts_body_t *b, char *out, size_t max) {
  if (b->materialized) {
    size_t take = KR_MIN(max, b->mat.len - b->mat_off);
    memcpy(out, b->mat.data + b->mat_off, take);
    b->mat_off += take;
    return take;
  }
  if (b->coding == KTS_CODING_IDENTITY) return kts_gen_read(&b->gen, out, max);
  if (b->zdone || max == 0) return 0;
  z_stream *z = &b->z;
  z->next_out = (unsigned char *)out;
  z->avail_out = (unsigned)KR_MIN(max, (size_t)1 << 30);
  unsigned out_cap = z->avail_out;
  uLong in0 = z->total_in;
  /* Bounded: each turn either consumes input or produces output. A body
   * that compresses ~1000:1 (a gzip bomb) would need 64 MiB of input to
   * fill a 64 KiB buffer, a second before the first byte: what there is
   * goes out after 4 MiB of input. */
  while (z->avail_out > 0 && !(z->avail_out < out_cap && z->total_in - in0 >= (4u << 20))) {
    if (z->avail_in == 0 && !b->src_eof) {
      size_t n = kts_gen_read(&b->gen, b->zin, sizeof b->zin);
      if (n == 0) b->src_eof = 1;
      z->next_in = (unsigned char *)b->zin;
      z->avail_in = (unsigned)n;
    }
    int rc = deflate(z, b->src_eof ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      b->zdone = 1;
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      b->zdone = 1;
      break;
    }
  }
  size_t n = max - z->avail_out;
  if (b->bad_gzip) {
    uint64_t at = b->coding == KTS_CODING_GZIP ? 10 : b->coding == KTS_CODING_DEFLATE ? 2 : 0;
    if (at >= b->enc_off && at < b->enc_off + n) out[at - b->enc_off] = (char)0xff;
  }
  b->enc_off += n;
  return n;
}

uint64_t kts_body_start(kts_body_t *b, enum kts_coding coding, int bad_gzip, int level,
                        enum kts_framing *framing, size_t chunk_size, int bad_chunk) {
  b->coding = coding;
  b->bad_gzip = bad_gzip;
  b->chunk_size = chunk_size ? chunk_size : 1024;
  b->bad_chunk = bad_chunk;
  kr_buf_init(&b->mat, MAT_MAX * 2);
  kr_buf_init(&b->frame, b->chunk_size + 64);
  if (coding != KTS_CODING_IDENTITY) {
    int wbits = coding == KTS_CODING_GZIP ? 31 : coding == KTS_CODING_DEFLATE ? 15 : -15;
    memset(&b->z, 0, sizeof b->z);
    if (deflateInit2(&b->z, level, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    b->zinit = 1;
  }
  uint64_t length = KTS_INFINITE;
  if (*framing == KTS_FRAME_LENGTH) {
    if (coding == KTS_CODING_IDENTITY && b->gen.total != KTS_INFINITE) {
      length = b->gen.total;
    } else if (b->gen.total != KTS_INFINITE && b->gen.total <= MAT_MAX) {
      char tmp[65536];
      size_t n;
      while ((n = enc_read(b, tmp, sizeof tmp)) > 0)
        if (kr_buf_append(&b->mat, tmp, n)) break; /* cannot happen: ratio < 2 */
      b->materialized = 1;
      length = b->mat.len;
    } else {
      *framing = KTS_FRAME_CHUNKED;
    }
  }
  b->framing = *framing;
  return length;
}

void kts_body_free(kts_body_t *b) {
  if (b->zinit) deflateEnd(&b->z);
  b->zinit = 0;
  kr_buf_free(&b->mat);
  kr_buf_free(&b->frame);
  kts_gen_free(&b->gen);
}

/* ---- frame ---- */

static void next_chunk(kts_body_t *b) {
  kr_buf_reset(&b->frame);
  b->frame_off = 0;
  char *tmp = kr_xmalloc(b->chunk_size);
  size_t n = 0, got;
  while (n < b->chunk_size && (got = enc_read(b, tmp + n, b->chunk_size - n)) > 0) n += got;
  if (b->bad_chunk && (n == 0 || b->nchunks >= 1)) {
    /* not a hex number: every HTTP parser must reject it */
    kr_buf_append_str(&b->frame, "zz\r\n");
    b->frame_done = 1;
  } else if (n > 0) {
    kr_buf_printf(&b->frame, "%zx\r\n", n);
    kr_buf_append(&b->frame, tmp, n);
    kr_buf_append_str(&b->frame, "\r\n");
    b->nchunks++;
  } else {
    kr_buf_append_str(&b->frame, "0\r\n\r\n");
    b->frame_done = 1;
  }
  free(tmp);
}

size_t kts_body_read(kts_body_t *b, char *out, size_t max) {
  if (b->framing != KTS_FRAME_CHUNKED) return enc_read(b, out, max);
  size_t n = 0;
  uLong in0 = b->zinit ? b->z.total_in : 0;
  while (n < max) {
    /* as in enc_read: a gzip bomb's chunks go out as they are made */
    if (n && b->zinit && b->z.total_in - in0 >= (4u << 20)) break;
    if (b->frame_off < b->frame.len) {
      size_t take = KR_MIN(max - n, b->frame.len - b->frame_off);
      memcpy(out + n, b->frame.data + b->frame_off, take);
      b->frame_off += take;
      n += take;
      continue;
    }
    if (b->frame_done) break;
    next_chunk(b);
  }
  return n;
}
