/*
 * WARC/1.1 record writer and reader (see include/kria/warc.h). Sections,
 * in order: type names and dates; record ids (a xoshiro256** stream seeded
 * from getrandom); checking a record and formatting its header; the three
 * ways bytes leave the writer (plain, zlib streaming with one deflate
 * state reset per record, libdeflate on the whole record gathered in a
 * staging buffer); kr_warc_write and the begin/append/end stream; the
 * warc-fields blocks of warcinfo, metadata and DNS records; the reader.
 *
 * The reader keeps two fixed 64 KiB buffers (input, inflated output) and
 * the current header (bounded by max_header), so a hostile file costs no
 * more memory than a good one. For gzip input it inflates one member at a
 * time and never lets bytes of two members share its output window, which
 * is how it knows whether a record is exactly one member (its extent for
 * CDX and for repair).
 */
#include "kria/warc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <isa-l/igzip_lib.h>
#include <stdarg.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "kria/arc.h"
#include "kria/error.h"
#include "kria/mem.h"

#define ZOUT_SIZE 65536
#define RD_IN_SIZE 65536
#define RD_OUT_SIZE 65536

/* ---- names and dates ------------------------------------------------- */

static const char *const type_names[] = {
    [KR_WARC_WARCINFO] = "warcinfo",   [KR_WARC_RESPONSE] = "response",
    [KR_WARC_RESOURCE] = "resource",   [KR_WARC_REQUEST] = "request",
    [KR_WARC_METADATA] = "metadata",   [KR_WARC_REVISIT] = "revisit",
    [KR_WARC_CONVERSION] = "conversion", [KR_WARC_CONTINUATION] = "continuation",
};

const char *kr_warc_type_name(int type) {
  if (type < 0 || type >= KR_WARC_UNKNOWN) return "unknown";
  return type_names[type];
}

int kr_warc_type_parse(kr_slice_t s) {
  for (int t = 0; t < KR_WARC_UNKNOWN; t++)
    if (kr_slice_case_eq(s, kr_slice_cstr(type_names[t]))) return t;
  return KR_WARC_UNKNOWN;
}

/* n decimal digits of v (v >= 0) at p. */
static char *put_num(char *p, unsigned v, int n) {
  for (int i = n - 1; i >= 0; i--, v /= 10) p[i] = (char)('0' + v % 10);
  return p + n;
}

void kr_warc_date(uint64_t ms, char out[KR_WARC_DATE_SIZE]) {
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&secs, &tm) || tm.tm_year + 1900 > 9999) {
    memcpy(out, "9999-12-31T23:59:59.999Z", KR_WARC_DATE_SIZE);
    return;
  }
  char *p = put_num(out, (unsigned)tm.tm_year + 1900, 4);
  *p++ = '-';
  p = put_num(p, (unsigned)tm.tm_mon + 1, 2);
  *p++ = '-';
  p = put_num(p, (unsigned)tm.tm_mday, 2);
  *p++ = 'T';
  p = put_num(p, (unsigned)tm.tm_hour, 2);
  *p++ = ':';
  p = put_num(p, (unsigned)tm.tm_min, 2);
  *p++ = ':';
  p = put_num(p, (unsigned)tm.tm_sec, 2);
  *p++ = '.';
  p = put_num(p, (unsigned)(ms % 1000), 3);
  *p++ = 'Z';
  *p = '\0';
}

struct date_parts {
  int f[6];       /* year month day hour minute second */
  unsigned msec;  /* fraction, truncated to ms */
};

static int digits(const char *p, size_t n, size_t at, size_t len, int *out) {
  if (at + len > n) return -1;
  int v = 0;
  for (size_t i = at; i < at + len; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    v = v * 10 + (p[i] - '0');
  }
  *out = v;
  return 0;
}

/* W3C-ISO8601 at the precisions WARC allows, always ending in 'Z' when a
 * time is present. */
static int parse_date(kr_slice_t s, struct date_parts *d) {
  static const char seps[] = {'-', '-', 'T', ':', ':'};
  static const int mins[] = {0, 1, 1, 0, 0, 0}, maxs[] = {9999, 12, 31, 23, 59, 60};
  const char *p = s.p;
  size_t n = s.n, at = 0;
  memset(d, 0, sizeof *d);
  d->f[1] = d->f[2] = 1;
  int k = 0;
  for (; k < 6; k++) {
    if (k > 0) {
      if (at >= n || p[at] != seps[k - 1]) break;
      at++;
    }
    if (digits(p, n, at, k == 0 ? 4 : 2, &d->f[k])) return KR_EINVAL;
    if (d->f[k] < mins[k] || d->f[k] > maxs[k]) return KR_EINVAL;
    at += k == 0 ? 4 : 2;
  }
  if (k == 4) return KR_EINVAL; /* hh without mm */
  if (k == 6 && at < n && p[at] == '.') {
    size_t fd = 0;
    at++;
    while (at < n && p[at] >= '0' && p[at] <= '9') {
      if (fd < 3) d->msec = d->msec * 10 + (unsigned)(p[at] - '0');
      fd++, at++;
    }
    if (fd == 0 || fd > 9) return KR_EINVAL;
    for (; fd < 3; fd++) d->msec *= 10;
  }
  if (k >= 4) {
    if (at >= n || p[at] != 'Z') return KR_EINVAL;
    at++;
  }
  return at == n ? 0 : KR_EINVAL;
}

int kr_warc_date_parse(kr_slice_t s, uint64_t *ms) {
  struct date_parts d;
  if (parse_date(s, &d)) return KR_EINVAL;
  struct tm tm = {.tm_year = d.f[0] - 1900, .tm_mon = d.f[1] - 1, .tm_mday = d.f[2],
                  .tm_hour = d.f[3], .tm_min = d.f[4], .tm_sec = d.f[5]};
  time_t t = timegm(&tm);
  if (t < 0) return KR_EINVAL;
  *ms = (uint64_t)t * 1000 + d.msec;
  return 0;
}

int kr_warc_timestamp14(kr_slice_t date, char out[15]) {
  struct date_parts d;
  if (parse_date(date, &d)) return KR_EINVAL;
  char *p = put_num(out, (unsigned)d.f[0], 4);
  for (int k = 1; k < 6; k++) p = put_num(p, (unsigned)(k == 5 && d.f[5] > 59 ? 59 : d.f[k]), 2);
  *p = '\0';
  return 0;
}

/* ---- record ids ------------------------------------------------------- */

struct rng {
  uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(struct rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3];
  s[2] ^= t, s[3] = rotl(s[3], 45);
  return out;
}

static void rng_seed(struct rng *r, uint64_t seed) {
  if (seed == 0) {
    ssize_t got = getrandom(r->s, sizeof r->s, 0);
    if (got == (ssize_t)sizeof r->s && (r->s[0] | r->s[1] | r->s[2] | r->s[3])) return;
    /* No getrandom: /dev/urandom, then time and pid (ids stay unique per
     * process, which is all WARC asks). */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      got = read(fd, r->s, sizeof r->s);
      close(fd);
      if (got == (ssize_t)sizeof r->s && (r->s[0] | r->s[1] | r->s[2] | r->s[3])) return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ((uint64_t)getpid() << 40);
  }
  for (int i = 0; i < 4; i++) r->s[i] = splitmix(&seed);
}

static void make_id(struct rng *r, char out[KR_WARC_ID_SIZE]) {
  uint8_t b[16];
  uint64_t a = rng_next(r), c = rng_next(r);
  memcpy(b, &a, 8);
  memcpy(b + 8, &c, 8);
  b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
  b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  static const char hx[] = "0123456789abcdef";
  char *o = out;
  memcpy(o, "<urn:uuid:", 10);
  o += 10;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
    *o++ = hx[b[i] >> 4];
    *o++ = hx[b[i] & 15];
  }
  *o++ = '>';
  *o = '\0';
}

/* ---- the writer ------------------------------------------------------- */

struct kr_warc_writer {
  kr_warc_writer_opts_t o;
  kr_warc_sink_fn sink;
  void *ctx;
  struct rng rng;
  kr_sha1_t bsha, psha;          /* block and payload digests, reused */
  kr_buf_t hdr;                  /* the record header being written */
  z_stream z;                    /* zlib, set up on first use */
  int z_ready;
  unsigned char *zout;           /* ZOUT_SIZE */
  struct libdeflate_compressor *ld;
  struct isal_zstream *igz;      /* igzip's state, and its level's buffer */
  unsigned char *igz_buf;
  uint32_t igz_buf_size;
  unsigned char *stage, *ldout;  /* libdeflate or igzip input and output */
  size_t stage_cap, ldout_cap;
  /* streaming record */
  int streaming;
  uint64_t left;                 /* block bytes still to come */
  uint8_t want_sha1[KR_SHA1_LEN];
  kr_warc_written_t cur;
};

void kr_warc_writer_opts_default(kr_warc_writer_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->gzip = 1;
  o->level = KR_WARC_DEFAULT_LEVEL;
  o->engine = KR_WARC_ENGINE_AUTO;
  o->whole_max = KR_WARC_DEFAULT_WHOLE_MAX;
  o->max_header = 1u << 20;
}

int kr_warc_writer_new(const kr_warc_writer_opts_t *opts, kr_warc_sink_fn sink,
                       void *ctx, kr_warc_writer_t **out) {
  kr_warc_writer_opts_t o;
  if (opts)
    o = *opts;
  else
    kr_warc_writer_opts_default(&o);
  if (!sink || o.level < 1 || o.level > 9 || o.engine < KR_WARC_ENGINE_AUTO ||
      o.engine > KR_WARC_ENGINE_IGZIP)
    return KR_EINVAL;
  /* level 1 asks for speed: igzip is the fastest there (bench/RESULTS.md:
   * 12 % less CPU per crawled page than libdeflate's level 1, 2.5 %
   * larger); above, libdeflate compresses better */
  if (o.engine == KR_WARC_ENGINE_AUTO)
    o.engine = o.level == 1 ? KR_WARC_ENGINE_IGZIP : KR_WARC_ENGINE_LIBDEFLATE;
  if (o.whole_max == 0) o.whole_max = KR_WARC_DEFAULT_WHOLE_MAX;
  if (o.max_header < 4096) o.max_header = 4096;
  kr_warc_writer_t *w = kr_xcalloc(1, sizeof *w);
  w->o = o;
  w->sink = sink;
  w->ctx = ctx;
  rng_seed(&w->rng, o.seed);
  kr_buf_init(&w->hdr, o.max_header);
  if (kr_sha1_init(&w->bsha) || kr_sha1_init(&w->psha)) {
    kr_warc_writer_free(w);
    return KR_EIO;
  }
  if (o.gzip && o.engine == KR_WARC_ENGINE_IGZIP) {
    static const uint32_t buf_size[] = {ISAL_DEF_LVL1_DEFAULT, ISAL_DEF_LVL2_DEFAULT,
                                        ISAL_DEF_LVL3_DEFAULT};
    int lvl = o.level == 1 ? 1 : o.level <= 3 ? 2 : 3;
    /* zeroed: igzip may read hash-table entries of its level buffer
     * before it writes them (valgrind reported it on the first record) */
    w->igz = kr_xcalloc(1, sizeof *w->igz);
    isal_deflate_stateless_init(w->igz);
    w->igz->level = (uint32_t)lvl;
    w->igz_buf_size = buf_size[lvl - 1];
    w->igz_buf = kr_xcalloc(1, w->igz_buf_size);
  } else if (o.gzip && o.engine != KR_WARC_ENGINE_ZLIB) {
    w->ld = libdeflate_alloc_compressor(o.level);
    if (!w->ld) {
      kr_warc_writer_free(w);
      return KR_EIO;
    }
  }
  *out = w;
  return 0;
}

void kr_warc_writer_free(kr_warc_writer_t *w) {
  if (!w) return;
  kr_sha1_free(&w->bsha);
  kr_sha1_free(&w->psha);
  kr_buf_free(&w->hdr);
  if (w->z_ready) deflateEnd(&w->z);
  free(w->zout);
  if (w->ld) libdeflate_free_compressor(w->ld);
  free(w->igz);
  free(w->igz_buf);
  free(w->stage);
  free(w->ldout);
  free(w);
}

const kr_warc_writer_opts_t *kr_warc_writer_opts(const kr_warc_writer_t *w) { return &w->o; }

void kr_warc_new_id(kr_warc_writer_t *w, char out[KR_WARC_ID_SIZE]) {
  make_id(&w->rng, out);
}

/* Header values: no controls (CR/LF would inject fields); uris and ids
 * also no spaces. */
static int bad_text(const char *p, size_t n, int no_space) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c < 0x20 || c == 0x7f || (no_space && c == ' ')) return 1;
  }
  return 0;
}
static int bad_str(const char *s, int no_space) {
  return s && bad_text(s, strlen(s), no_space);
}
static int bad_id(const char *s) {
  if (!s || !*s) return 0;
  size_t n = strlen(s);
  return n < 3 || n >= 256 || s[0] != '<' || s[n - 1] != '>' || bad_text(s, n, 1);
}
static int is_token(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          strchr("!#$%&'*+-.^_`|~", *s)))
      return 0;
  return 1;
}

static int check_rec(const kr_warc_rec_t *r, uint64_t block_len) {
  if (r->type < 0 || r->type >= KR_WARC_UNKNOWN || r->date_ms == 0) return KR_EINVAL;
  if (r->id[0] && (memchr(r->id, 0, sizeof r->id) == NULL || bad_id(r->id)))
    return KR_EINVAL;
  if (bad_text(r->target_uri.p, r->target_uri.n, 1) ||
      bad_text(r->refers_to_uri.p, r->refers_to_uri.n, 1) || bad_str(r->ip, 1) ||
      bad_str(r->content_type, 0) || bad_id(r->concurrent_to) || bad_id(r->warcinfo_id) ||
      bad_id(r->refers_to) || bad_str(r->profile, 1) || bad_str(r->truncated, 1) ||
      bad_str(r->filename, 0))
    return KR_EINVAL;
  for (size_t i = 0; i < r->nextra; i++)
    if (!is_token(r->extra[i].name) ||
        bad_text(r->extra[i].value.p, r->extra[i].value.n, 0))
      return KR_EINVAL;
  switch (r->payload) {
  case KR_WARC_PAYLOAD_NONE:
    break;
  case KR_WARC_PAYLOAD_DIGEST:
    if (!r->payload_digest || bad_str(r->payload_digest, 1) ||
        !strchr(r->payload_digest, ':'))
      return KR_EINVAL;
    break;
  case KR_WARC_PAYLOAD_FROM:
    if (r->payload_from > block_len) return KR_EINVAL;
    break;
  default:
    return KR_EINVAL;
  }
  if (r->type == KR_WARC_REVISIT &&
      (!r->profile || !*r->profile || r->payload != KR_WARC_PAYLOAD_DIGEST ||
       !r->refers_to_uri.n || !r->refers_to_date_ms))
    return KR_EINVAL;
  return 0;
}

static const char *default_content_type(int type, uint64_t block_len) {
  switch (type) {
  case KR_WARC_WARCINFO:
  case KR_WARC_METADATA:
    return "application/warc-fields";
  case KR_WARC_REQUEST:
    return "application/http;msgtype=request";
  case KR_WARC_RESPONSE:
    return "application/http;msgtype=response";
  case KR_WARC_REVISIT:
    return block_len ? "application/http;msgtype=response" : NULL;
  default:
    return block_len ? "application/octet-stream" : NULL;
  }
}

/* "name: value\r\n", as "%s: %.*s\r\n" would write it (the value ends at
 * a NUL), without printf: a crawled page's three records and its outlinks
 * made ~90 vfprintf calls, several per cent of a crawl's CPU. */
static int put_line(kr_buf_t *b, const char *name, const char *v, size_t vn) {
  const char *z = vn ? memchr(v, '\0', vn) : NULL;
  if (z) vn = (size_t)(z - v);
  size_t nn = strlen(name);
  int rc = kr_buf_reserve(b, nn + vn + 4);
  if (rc) return rc;
  char *o = b->data + b->len;
  memcpy(o, name, nn);
  o += nn;
  *o++ = ':';
  *o++ = ' ';
  if (vn) memcpy(o, v, vn);
  o += vn;
  *o++ = '\r';
  *o++ = '\n';
  b->len = (size_t)(o - b->data);
  b->data[b->len] = '\0';
  return 0;
}

/* "name: <decimal>\r\n". */
static int put_num_line(kr_buf_t *b, const char *name, uint64_t u) {
  char tmp[KR_U64_DEC_MAX];
  return put_line(b, name, tmp, kr_u64_dec(tmp, u));
}

static void field_str(kr_buf_t *b, int *err, const char *name, const char *v) {
  if (!v || !*v || *err) return;
  *err = put_line(b, name, v, strlen(v));
}
static void field_slice(kr_buf_t *b, int *err, const char *name, kr_slice_t v) {
  if (!v.n || *err) return;
  *err = put_line(b, name, v.p, v.n);
}

/* The header of rec with block_len bytes and the digests in w->cur. */
static int format_header(kr_warc_writer_t *w, const kr_warc_rec_t *r, uint64_t block_len) {
  kr_buf_t *b = &w->hdr;
  char date[KR_WARC_DATE_SIZE], rdate[KR_WARC_DATE_SIZE];
  int err = 0;
  kr_buf_reset(b);
  kr_warc_date(r->date_ms, date);
  err = kr_buf_append(b, "WARC/1.1\r\n", 10);
  const char *type = kr_warc_type_name(r->type);
  if (!err) err = put_line(b, "WARC-Type", type, strlen(type));
  if (!err) err = put_line(b, "WARC-Record-ID", r->id, strlen(r->id));
  if (!err) err = put_line(b, "WARC-Date", date, strlen(date));
  field_slice(b, &err, "WARC-Target-URI", r->target_uri);
  field_str(b, &err, "WARC-IP-Address", r->ip);
  field_str(b, &err, "WARC-Concurrent-To", r->concurrent_to);
  field_str(b, &err, "WARC-Warcinfo-ID", r->warcinfo_id);
  field_str(b, &err, "WARC-Refers-To", r->refers_to);
  field_slice(b, &err, "WARC-Refers-To-Target-URI", r->refers_to_uri);
  if (r->refers_to_date_ms) {
    kr_warc_date(r->refers_to_date_ms, rdate);
    field_str(b, &err, "WARC-Refers-To-Date", rdate);
  }
  field_str(b, &err, "WARC-Profile", r->profile);
  field_str(b, &err, "WARC-Truncated", r->truncated);
  field_str(b, &err, "WARC-Filename", r->filename);
  for (size_t i = 0; i < r->nextra; i++)
    field_slice(b, &err, r->extra[i].name, r->extra[i].value);
  field_str(b, &err, "Content-Type",
            r->content_type ? r->content_type : default_content_type(r->type, block_len));
  field_str(b, &err, "WARC-Payload-Digest", w->cur.payload_digest);
  field_str(b, &err, "WARC-Block-Digest", w->cur.block_digest);
  if (!err) err = put_num_line(b, "Content-Length", block_len);
  if (!err) err = kr_buf_append(b, "\r\n", 2);
  return err;
}

static int sink1(kr_warc_writer_t *w, const void *p, size_t n) {
  kr_slice_t v = {p, n};
  w->cur.bytes += n;
  return w->sink(w->ctx, &v, 1);
}

static int z_setup(kr_warc_writer_t *w) {
  if (!w->z_ready) {
    memset(&w->z, 0, sizeof w->z);
    if (deflateInit2(&w->z, w->o.level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return KR_EIO;
    w->z_ready = 1;
    if (!w->zout) w->zout = kr_xmalloc(ZOUT_SIZE);
  } else if (deflateReset(&w->z) != Z_OK) {
    return KR_EIO;
  }
  w->z.next_out = w->zout;
  w->z.avail_out = ZOUT_SIZE;
  return 0;
}

/* Feed n bytes (finish: end the member); full output chunks go to the
 * sink. */
static int z_feed(kr_warc_writer_t *w, const void *p, size_t n, int finish) {
  const unsigned char *in = p;
  for (;;) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
    w->z.next_in = (unsigned char *)in;
    w->z.avail_in = chunk;
    int zr = deflate(&w->z, finish && chunk == n ? Z_FINISH : Z_NO_FLUSH);
    if (zr == Z_STREAM_ERROR) return KR_EIO;
    size_t used = chunk - w->z.avail_in;
    in += used, n -= used;
    if (w->z.avail_out == 0 || (zr == Z_STREAM_END && w->z.avail_out < ZOUT_SIZE)) {
      int err = sink1(w, w->zout, ZOUT_SIZE - w->z.avail_out);
      w->z.next_out = w->zout;
      w->z.avail_out = ZOUT_SIZE;
      if (err) return err;
    }
    if (zr == Z_STREAM_END) return 0;
    if (n == 0 && !finish && w->z.avail_out > 0) return 0;
  }
}

static const char trailer[4] = {'\r', '\n', '\r', '\n'};

/* Hash the block (and payload) unless given, fill w->cur's digests. */
static int digest_block(kr_warc_writer_t *w, const kr_warc_rec_t *r, const kr_slice_t *v,
                        size_t n) {
  uint8_t d[KR_SHA1_LEN];
  int hash_block = !r->block_sha1, hash_payload = r->payload == KR_WARC_PAYLOAD_FROM;
  if (hash_block && kr_sha1_reset(&w->bsha)) return KR_EIO;
  if (hash_payload && kr_sha1_reset(&w->psha)) return KR_EIO;
  uint64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (hash_block && kr_sha1_update(&w->bsha, v[i].p, v[i].n)) return KR_EIO;
    if (hash_payload && at + v[i].n > r->payload_from) {
      size_t skip = at >= r->payload_from ? 0 : (size_t)(r->payload_from - at);
      if (kr_sha1_update(&w->psha, v[i].p + skip, v[i].n - skip)) return KR_EIO;
    }
    at += v[i].n;
  }
  if (hash_block) {
    if (kr_sha1_final(&w->bsha, d)) return KR_EIO;
    kr_sha1_label(d, w->cur.block_digest);
  } else {
    kr_sha1_label(r->block_sha1, w->cur.block_digest);
  }
  if (hash_payload) {
    if (kr_sha1_final(&w->psha, d)) return KR_EIO;
    kr_sha1_label(d, w->cur.payload_digest);
  } else if (r->payload == KR_WARC_PAYLOAD_DIGEST) {
    snprintf(w->cur.payload_digest, sizeof w->cur.payload_digest, "%s", r->payload_digest);
  }
  return 0;
}

static void grow(unsigned char **p, size_t *cap, size_t need) {
  if (*cap >= need) return;
  size_t c = *cap ? *cap : 16384;
  while (c < need) c *= 2;
  free(*p);
  *p = kr_xmalloc(c);
  *cap = c;
}

/* The staged record (len bytes, at most whole_max and a header) as one
 * gzip member by igzip, in one stateless call, into w->ldout: its size,
 * or 0 when it did not fit there (igzip publishes no bound; the room
 * given holds the input stored, so that is for incompressible input at
 * worst) and the caller compresses otherwise. */
static size_t igz_compress(kr_warc_writer_t *w, size_t len) {
  grow(&w->ldout, &w->ldout_cap, len + len / 16 + 1024 + ISAL_DEF_MAX_HDR_SIZE);
  struct isal_zstream *z = w->igz;
  uint32_t level = z->level;
  isal_deflate_stateless_init(z);
  z->level = level;
  z->level_buf = w->igz_buf;
  z->level_buf_size = w->igz_buf_size;
  z->gzip_flag = IGZIP_GZIP;
  z->end_of_stream = 1;
  z->flush = NO_FLUSH;
  z->next_in = w->stage;
  z->avail_in = (uint32_t)len;
  z->next_out = w->ldout;
  z->avail_out = w->ldout_cap > UINT32_MAX ? UINT32_MAX : (uint32_t)w->ldout_cap;
  return isal_deflate_stateless(z) == COMP_OK ? z->total_out : 0;
}

static int emit_whole(kr_warc_writer_t *w, const kr_slice_t *v, size_t n, uint64_t rec_len) {
  if (!w->o.gzip) {
    kr_slice_t iov[KR_WARC_MAX_SLICES + 2];
    size_t k = 0;
    iov[k++] = (kr_slice_t){w->hdr.data, w->hdr.len};
    for (size_t i = 0; i < n; i++)
      if (v[i].n) iov[k++] = v[i];
    iov[k++] = (kr_slice_t){trailer, 4};
    w->cur.bytes += rec_len;
    return w->sink(w->ctx, iov, k);
  }
  if ((w->ld || w->igz) && rec_len <= w->o.whole_max + w->hdr.len) {
    grow(&w->stage, &w->stage_cap, rec_len);
    unsigned char *s = w->stage;
    memcpy(s, w->hdr.data, w->hdr.len);
    s += w->hdr.len;
    for (size_t i = 0; i < n; i++) {
      if (v[i].n) memcpy(s, v[i].p, v[i].n);
      s += v[i].n;
    }
    memcpy(s, trailer, 4);
    if (w->igz) {
      size_t z = igz_compress(w, rec_len);
      if (z) return sink1(w, w->ldout, z);
      /* not in the room given: zlib below */
    } else {
      grow(&w->ldout, &w->ldout_cap, libdeflate_gzip_compress_bound(w->ld, rec_len));
      size_t z = libdeflate_gzip_compress(w->ld, w->stage, rec_len, w->ldout, w->ldout_cap);
      if (z == 0) return KR_EIO;
      return sink1(w, w->ldout, z);
    }
  }
  int err = z_setup(w);
  if (!err) err = z_feed(w, w->hdr.data, w->hdr.len, 0);
  for (size_t i = 0; i < n && !err; i++) err = z_feed(w, v[i].p, v[i].n, 0);
  if (!err) err = z_feed(w, trailer, 4, 1);
  return err;
}

static int start_record(kr_warc_writer_t *w, kr_warc_rec_t *rec, uint64_t block_len) {
  int err = check_rec(rec, block_len);
  if (err) return err;
  memset(&w->cur, 0, sizeof w->cur);
  if (!rec->id[0]) make_id(&w->rng, rec->id);
  return 0;
}

int kr_warc_write(kr_warc_writer_t *w, kr_warc_rec_t *rec, const kr_slice_t *block, size_t n,
                  kr_warc_written_t *out) {
  if (w->streaming || n > KR_WARC_MAX_SLICES || (n && !block)) return KR_EINVAL;
  uint64_t len = 0;
  for (size_t i = 0; i < n; i++) {
    if (block[i].n && !block[i].p) return KR_EINVAL;
    len += block[i].n;
  }
  int err = start_record(w, rec, len);
  if (!err) err = digest_block(w, rec, block, n);
  if (!err) err = format_header(w, rec, len);
  if (err) return err;
  w->cur.record_bytes = w->hdr.len + len + 4;
  err = emit_whole(w, block, n, w->cur.record_bytes);
  if (err) return err;
  if (out) *out = w->cur;
  return 0;
}

int kr_warc_begin(kr_warc_writer_t *w, kr_warc_rec_t *rec, uint64_t block_len) {
  if (w->streaming || !rec->block_sha1 || rec->payload == KR_WARC_PAYLOAD_FROM)
    return KR_EINVAL;
  int err = start_record(w, rec, block_len);
  if (!err) err = digest_block(w, rec, NULL, 0);
  if (!err) err = format_header(w, rec, block_len);
  if (!err) err = kr_sha1_reset(&w->bsha) ? KR_EIO : 0;
  if (err) return err;
  memcpy(w->want_sha1, rec->block_sha1, KR_SHA1_LEN);
  w->cur.record_bytes = w->hdr.len + block_len + 4;
  w->left = block_len;
  w->streaming = 1;
  if (w->o.gzip) {
    err = z_setup(w);
    if (!err) err = z_feed(w, w->hdr.data, w->hdr.len, 0);
  } else {
    err = sink1(w, w->hdr.data, w->hdr.len);
  }
  if (err) w->streaming = 0;
  return err;
}

int kr_warc_append(kr_warc_writer_t *w, const void *p, size_t n) {
  if (!w->streaming) return KR_EINVAL;
  if (n > w->left) {
    w->streaming = 0;
    return KR_EINVAL;
  }
  if (n == 0) return 0;
  int err = kr_sha1_update(&w->bsha, p, n) ? KR_EIO : 0;
  if (!err) err = w->o.gzip ? z_feed(w, p, n, 0) : sink1(w, p, n);
  if (err) {
    w->streaming = 0;
    return err;
  }
  w->left -= n;
  return 0;
}

int kr_warc_end(kr_warc_writer_t *w, kr_warc_written_t *out) {
  if (!w->streaming) return KR_EINVAL;
  w->streaming = 0;
  uint8_t d[KR_SHA1_LEN];
  if (w->left) return KR_EINVAL;
  if (kr_sha1_final(&w->bsha, d)) return KR_EIO;
  if (memcmp(d, w->want_sha1, KR_SHA1_LEN)) return KR_EINVAL;
  int err = w->o.gzip ? z_feed(w, trailer, 4, 1) : sink1(w, trailer, 4);
  if (err) return err;
  if (out) *out = w->cur;
  return 0;
}

void kr_warc_abandon(kr_warc_writer_t *w) { w->streaming = 0; }

/* ---- warc-fields blocks ------------------------------------------------ */

static int wf(kr_buf_t *b, const char *name, kr_slice_t v) {
  if (!v.n) return 0;
  if (!is_token(name) || bad_text(v.p, v.n, 0)) return KR_EINVAL;
  return put_line(b, name, v.p, v.n);
}

int kr_warc_info_block(kr_buf_t *out, const kr_warc_info_t *in) {
  const struct {
    const char *name, *v;
  } f[] = {
      {"software", in->software},
      {"format", KR_WARC_FORMAT},
      {"conformsTo", KR_WARC_CONFORMS_TO},
      {"hostname", in->hostname},
      {"ip", in->ip},
      {"operator", in->operator_name},
      {"isPartOf", in->is_part_of},
      {"description", in->description},
      {"robots", in->robots},
      {"http-header-user-agent", in->user_agent},
      {"http-header-from", in->from},
  };
  size_t mark = out->len;
  int err = 0;
  for (size_t i = 0; i < sizeof f / sizeof f[0] && !err; i++)
    err = wf(out, f[i].name, kr_slice_cstr(f[i].v));
  for (size_t i = 0; i < in->nextra && !err; i++)
    err = wf(out, in->extra[i].name, in->extra[i].value);
  if (err) out->len = mark;
  return err;
}

int kr_warc_metadata_block(kr_buf_t *out, const kr_warc_meta_t *m) {
  size_t mark = out->len;
  int err = wf(out, "via", m->via);
  if (!err) err = wf(out, "hopsFromSeed", m->hops_from_seed);
  if (!err && m->fetch_time_ms >= 0)
    err = put_num_line(out, "fetchTimeMs", (uint64_t)m->fetch_time_ms);
  for (size_t i = 0; i < m->noutlinks && !err; i++) {
    const kr_warc_outlink_t *l = &m->outlinks[i];
    if (!l->url.n || bad_text(l->url.p, l->url.n, 1) || (unsigned char)l->hop <= ' ' ||
        (unsigned char)l->hop >= 0x7f || bad_text(l->context.p, l->context.n, 1)) {
      err = KR_EINVAL;
      break;
    }
    /* "outlink: URL HOP[ CONTEXT]\r\n"; bad_text refused any NUL */
    size_t need = 9 + l->url.n + 2 + (l->context.n ? 1 + l->context.n : 0) + 2;
    if ((err = kr_buf_reserve(out, need))) break;
    char *o = out->data + out->len;
    memcpy(o, "outlink: ", 9);
    o += 9;
    memcpy(o, l->url.p, l->url.n);
    o += l->url.n;
    *o++ = ' ';
    *o++ = l->hop;
    if (l->context.n) {
      *o++ = ' ';
      memcpy(o, l->context.p, l->context.n);
      o += l->context.n;
    }
    *o++ = '\r';
    *o++ = '\n';
    out->len = (size_t)(o - out->data);
    out->data[out->len] = '\0';
  }
  for (size_t i = 0; i < m->nannotations && !err; i++)
    err = wf(out, m->annotations[i].name, m->annotations[i].value);
  if (err) out->len = mark;
  return err;
}

int kr_warc_dns_block(kr_buf_t *out, uint64_t date_ms, const char *host,
                      const char *const *addrs, size_t naddrs, uint32_t ttl) {
  char date[KR_WARC_DATE_SIZE], ts[15];
  if (!host || !*host || bad_str(host, 1)) return KR_EINVAL;
  kr_warc_date(date_ms, date);
  if (kr_warc_timestamp14(kr_slice_cstr(date), ts)) return KR_EINVAL;
  size_t mark = out->len, hl = strlen(host);
  int err = kr_buf_printf(out, "%s\n", ts);
  for (size_t i = 0; i < naddrs && !err; i++) {
    if (!addrs[i] || !*addrs[i] || bad_str(addrs[i], 1)) {
      err = KR_EINVAL;
      break;
    }
    err = kr_buf_printf(out, "%s%s\t%" PRIu32 "\tIN\t%s\t%s\n", host,
                        host[hl - 1] == '.' ? "" : ".", ttl,
                        strchr(addrs[i], ':') ? "AAAA" : "A", addrs[i]);
  }
  if (err) out->len = mark;
  return err;
}

/* ---- reader ------------------------------------------------------------ */

struct kr_warc_reader {
  kr_warc_reader_opts_t o;
  kr_warc_source_fn src;
  void *ctx;
  int gz;                        /* -1 until the first bytes are seen */
  int failed;                    /* sticky error */
  unsigned char *in;             /* raw input window */
  size_t in_len, in_pos;
  uint64_t in_base;              /* input offset of in[0] */
  int in_eof;
  z_stream z;
  int z_ready;
  int member_open;               /* inside a gzip member */
  uint64_t member_start, member_end;
  uint64_t member_used;          /* inflated bytes of this member consumed */
  unsigned char *out;            /* inflated window (one member's bytes) */
  size_t out_len, out_pos;
  /* current record */
  int in_record;
  uint64_t block_left;
  uint64_t rec_offset;
  int rec_aligned;               /* started at a member's first byte */
  kr_warc_header_t h;
  kr_buf_t hb;
  kr_warc_field_t *fields;
  size_t fields_cap;
  char err[200];
  /* lenient */
  int format;                    /* FORMAT_*: fixed by the first record */
  int has_magic;                 /* the next record's "WARC/" was read */
  uint64_t magic_at;             /* ... at this offset of plain input */
  char warn[200];
  kr_warc_field_t arc_fields[6]; /* an ARC record's header as WARC fields */
  char arc_date[KR_ARC_DATE_SIZE], arc_len[24];
};

enum { FORMAT_UNKNOWN = 0, FORMAT_WARC, FORMAT_ARC };

long kr_warc_fd_source(void *ctx, void *buf, size_t n) {
  int fd = *(int *)ctx;
  for (;;) {
    ssize_t got = read(fd, buf, n);
    if (got >= 0) return (long)got;
    if (errno != EINTR) return KR_EIO;
  }
}

kr_warc_reader_t *kr_warc_reader_new(const kr_warc_reader_opts_t *opts,
                                     kr_warc_source_fn src, void *ctx) {
  kr_warc_reader_t *r = kr_xcalloc(1, sizeof *r);
  r->o.max_header = opts && opts->max_header ? opts->max_header : 256u << 10;
  r->o.max_fields = opts && opts->max_fields ? opts->max_fields : 1024;
  r->src = src;
  r->ctx = ctx;
  r->gz = -1;
  r->in_base = opts ? opts->base : 0;
  r->o.lenient = opts && opts->lenient;
  r->in = kr_xmalloc(RD_IN_SIZE);
  kr_buf_init(&r->hb, r->o.max_header);
  return r;
}

void kr_warc_reader_free(kr_warc_reader_t *r) {
  if (!r) return;
  if (r->z_ready) inflateEnd(&r->z);
  free(r->in);
  free(r->out);
  free(r->fields);
  kr_buf_free(&r->hb);
  free(r);
}

int kr_warc_reader_is_gzip(const kr_warc_reader_t *r) { return r->gz == 1; }
const char *kr_warc_reader_errmsg(const kr_warc_reader_t *r) { return r->err; }
const char *kr_warc_reader_warning(const kr_warc_reader_t *r) { return r->warn; }

__attribute__((format(printf, 3, 4))) static int fail(kr_warc_reader_t *r, int err,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err, sizeof r->err, fmt, ap);
  va_end(ap);
  r->failed = err;
  return err;
}

/* Replace the consumed input with fresh bytes: count, 0 at EOF, or error. */
static int refill(kr_warc_reader_t *r) {
  if (r->in_eof) return 0;
  r->in_base += r->in_len;
  r->in_len = r->in_pos = 0;
  long got = r->src(r->ctx, r->in, RD_IN_SIZE);
  if (got < 0)
    return fail(r, (int)got, "reading at offset %" PRIu64 ": %s", r->in_base,
                kr_strerror((int)got));
  if (got == 0) r->in_eof = 1;
  r->in_len = (size_t)got;
  return (int)(got > 0);
}

static int detect(kr_warc_reader_t *r) {
  while (r->in_len < 2 && !r->in_eof) {
    long got = r->src(r->ctx, r->in + r->in_len, RD_IN_SIZE - r->in_len);
    if (got < 0) return fail(r, (int)got, "reading: %s", kr_strerror((int)got));
    if (got == 0) r->in_eof = 1;
    r->in_len += (size_t)got;
  }
  r->gz = r->in_len >= 2 && r->in[0] == 0x1f && r->in[1] == 0x8b;
  if (r->gz) {
    memset(&r->z, 0, sizeof r->z);
    if (inflateInit2(&r->z, 15 + 16) != Z_OK) return fail(r, KR_EIO, "inflateInit failed");
    r->z_ready = 1;
    r->out = kr_xmalloc(RD_OUT_SIZE);
  }
  return 0;
}

/* Make at least one byte readable at *p (n bytes). 1; 0 at the end of the
 * input (gzip: at a member boundary) or, with same_member, at the end of
 * the current member; or an error. */
static int window(kr_warc_reader_t *r, const unsigned char **p, size_t *n, int same_member) {
  if (!r->gz) {
    if (r->in_pos == r->in_len) {
      int rc = refill(r);
      if (rc <= 0) return rc;
    }
    *p = r->in + r->in_pos;
    *n = r->in_len - r->in_pos;
    return 1;
  }
  /* Bounded: every turn consumes input, produces output, reads input or
   * returns. */
  for (;;) {
    if (r->out_pos < r->out_len) {
      *p = r->out + r->out_pos;
      *n = r->out_len - r->out_pos;
      return 1;
    }
    if (!r->member_open) {
      if (same_member) return 0;
      if (r->in_pos == r->in_len) {
        int rc = refill(r);
        if (rc <= 0) return rc;
      }
      r->member_start = r->in_base + r->in_pos;
      r->member_used = 0;
      r->member_open = 1;
      if (inflateReset(&r->z) != Z_OK) return fail(r, KR_EIO, "inflateReset failed");
    }
    if (r->in_pos == r->in_len) {
      int rc = refill(r);
      if (rc < 0) return rc;
      if (rc == 0)
        return fail(r, KR_EWARC, "gzip member at offset %" PRIu64 " is truncated",
                    r->member_start);
    }
    r->z.next_in = r->in + r->in_pos;
    r->z.avail_in = (uInt)(r->in_len - r->in_pos);
    r->z.next_out = r->out;
    r->z.avail_out = RD_OUT_SIZE;
    int zr = inflate(&r->z, Z_NO_FLUSH);
    r->in_pos = r->in_len - r->z.avail_in;
    r->out_pos = 0;
    r->out_len = RD_OUT_SIZE - r->z.avail_out;
    if (zr == Z_STREAM_END) {
      r->member_open = 0;
      r->member_end = r->in_base + r->in_pos;
    } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
      return fail(r, KR_EWARC, "bad gzip data in the member at offset %" PRIu64 ": %s",
                  r->member_start, r->z.msg ? r->z.msg : "error");
    }
  }
}

static void eat(kr_warc_reader_t *r, size_t n) {
  if (r->gz) {
    r->out_pos += n;
    r->member_used += n;
  } else {
    r->in_pos += n;
  }
}

static uint64_t plain_pos(const kr_warc_reader_t *r) { return r->in_base + r->in_pos; }

/* Python's str.isspace() on ASCII, which is what warcio's rstrip() and
 * blank-line tests do to the (decoded) lines of a header. */
static int is_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static int tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Parse r->hb in place into version and fields (values with continuation
 * lines joined by one space; names NUL-terminated). */
static int parse_header(kr_warc_reader_t *r) {
  char *b = r->hb.data;
  size_t len = r->hb.len, rd = 0, wr = 0, nf = 0;
  kr_warc_header_t *h = &r->h;
  memset(h, 0, sizeof *h);
  h->offset = r->rec_offset;
  int first = 1;
  while (rd < len) {
    char *nl = memchr(b + rd, '\n', len - rd);
    size_t ll = (size_t)(nl - (b + rd)), next = rd + ll + 1;
    if (r->o.lenient) {
      /* warcio strips every trailing blank: CR CR LF ends a line too. */
      while (ll && is_space((unsigned char)b[rd + ll - 1])) ll--;
    } else if (ll && b[rd + ll - 1] == '\r') {
      ll--;
    }
    if (ll == 0) break; /* the empty line ending the header */
    const char *line = b + rd;
    if (first) {
      if (ll < 8 || memcmp(line, "WARC/", 5) || bad_text(line, ll, 1))
        return fail(r, KR_EWARC, "record at offset %" PRIu64 ": bad version line",
                    r->rec_offset);
      memmove(b + wr, line, ll);
      h->version = kr_slice(b + wr, ll);
      wr += ll;
      b[wr++] = '\0';
      first = 0;
    } else if (line[0] == ' ' || line[0] == '\t') {
      if (nf == 0)
        return fail(r, KR_EWARC, "record at offset %" PRIu64 ": continuation line first",
                    r->rec_offset);
      kr_slice_t t = kr_slice_trim(kr_slice(line, ll));
      if (t.n) {
        kr_warc_field_t *f = &r->fields[nf - 1];
        if (f->value.n) b[wr++] = ' ';
        memmove(b + wr, t.p, t.n);
        wr += t.n;
        f->value.n = (size_t)(b + wr - f->value.p);
      }
    } else {
      size_t nl2 = 0, vat;
      if (r->o.lenient) {
        /* warcio: the name is what comes before the first ':' (blanks
         * before the colon dropped); a line without one is ignored. */
        const char *colon = memchr(line, ':', ll);
        if (!colon) {
          rd = next;
          continue;
        }
        vat = (size_t)(colon - line) + 1;
        nl2 = vat - 1;
        while (nl2 && (line[nl2 - 1] == ' ' || line[nl2 - 1] == '\t')) nl2--;
      } else {
        while (nl2 < ll && tchar((unsigned char)line[nl2])) nl2++;
        if (nl2 == 0 || nl2 == ll || line[nl2] != ':')
          return fail(r, KR_EWARC, "record at offset %" PRIu64 ": malformed field line",
                      r->rec_offset);
        vat = nl2 + 1;
      }
      if (nf == r->o.max_fields)
        return fail(r, KR_ETOOBIG, "record at offset %" PRIu64 ": more than %zu fields",
                    r->rec_offset, r->o.max_fields);
      if (nf == r->fields_cap) {
        r->fields_cap = r->fields_cap ? r->fields_cap * 2 : 32;
        if (r->fields_cap > r->o.max_fields) r->fields_cap = r->o.max_fields;
        r->fields = kr_xrealloc(r->fields, r->fields_cap * sizeof *r->fields);
      }
      kr_slice_t v = kr_slice_trim(kr_slice(line + vat, ll - vat));
      memmove(b + wr, line, nl2);
      r->fields[nf].name = b + wr;
      wr += nl2;
      b[wr++] = '\0';
      memmove(b + wr, v.p, v.n);
      r->fields[nf].value = kr_slice(b + wr, v.n);
      wr += v.n;
      nf++;
    }
    rd = next;
  }
  h->fields = r->fields;
  h->nfields = nf;
  kr_slice_t t = kr_warc_header_get(h, "WARC-Type");
  if (!t.p)
    return fail(r, KR_EWARC, "record at offset %" PRIu64 ": no WARC-Type", r->rec_offset);
  h->type_name = t;
  h->type = kr_warc_type_parse(t);
  int have_len = 0;
  for (size_t i = 0; i < nf; i++) {
    if (strcasecmp(r->fields[i].name, "Content-Length")) continue;
    kr_slice_t v = r->fields[i].value;
    uint64_t n = 0;
    int okv = v.n > 0 && v.n <= 18;
    for (size_t k = 0; k < v.n && okv; k++) {
      if (v.p[k] < '0' || v.p[k] > '9') okv = 0;
      n = n * 10 + (uint64_t)(v.p[k] - '0');
    }
    if (r->o.lenient) {
      /* warcio reads the first one; a bad value is an empty block. */
      h->content_length = okv ? n : 0;
      have_len = 1;
      break;
    }
    if (!okv || (have_len && n != h->content_length))
      return fail(r, KR_EWARC, "record at offset %" PRIu64 ": bad Content-Length",
                  r->rec_offset);
    h->content_length = n;
    have_len = 1;
  }
  if (!have_len)
    return fail(r, KR_EWARC, "record at offset %" PRIu64 ": no Content-Length",
                r->rec_offset);
  return 0;
}

/* ---- lenient reading (opts.lenient) ---- */

/* Skip blanks before a record. 1 when a byte follows, 0 at the end. */
static int skip_blanks(kr_warc_reader_t *r) {
  const unsigned char *p;
  size_t n;
  for (;;) {
    int rc = window(r, &p, &n, 0);
    if (rc <= 0) return rc;
    size_t k = 0;
    while (k < n && is_space(p[k])) k++;
    eat(r, k);
    if (k < n) return 1;
  }
}

/* Append one line (through its LF, or to the end of the input) to r->hb:
 * 1, 0 when the input had ended, KR_ETOOBIG past max_header, or the
 * input's error (not recorded as the reader's failure). */
static int append_line(kr_warc_reader_t *r) {
  size_t mark = r->hb.len;
  for (;;) {
    const unsigned char *p;
    size_t n;
    int rc = window(r, &p, &n, 0);
    if (rc < 0) return rc;
    if (rc == 0) return r->hb.len > mark;
    const unsigned char *nl = memchr(p, '\n', n);
    size_t take = nl ? (size_t)(nl - p) + 1 : n;
    if (kr_buf_append(&r->hb, p, take)) return KR_ETOOBIG;
    eat(r, take);
    if (nl) return 1;
  }
}

static int is_blank_line(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_space((unsigned char)p[i])) return 0;
  return 1;
}

static int header_over(kr_warc_reader_t *r, int rc) {
  if (rc == KR_ETOOBIG)
    return fail(r, KR_ETOOBIG, "record at offset %" PRIu64 ": header over %zu bytes",
                r->rec_offset, r->o.max_header);
  return r->failed ? rc : fail(r, rc, "record at offset %" PRIu64 ": %s", r->rec_offset,
                               kr_strerror(rc));
}

/* An ARC v1 record as a WARC header (what warcio's arc2warc makes of it):
 * the first line is in r->hb; a filedesc's two more lines are read here
 * and count as header. */
static int arc_header(kr_warc_reader_t *r) {
  size_t first = r->hb.len;
  int filedesc = first >= 11 && !memcmp(r->hb.data, "filedesc://", 11);
  for (int i = 0; filedesc && i < 2; i++) {
    int rc = append_line(r);
    if (rc < 0) return header_over(r, rc);
  }
  kr_arc_header_t a;
  if (kr_arc_parse_line(r->hb.data, first, &a))
    return fail(r, KR_EWARC, "no WARC or ARC record at offset %" PRIu64, r->rec_offset);
  uint64_t more = r->hb.len - first;
  uint64_t len = a.length >= more ? a.length - more : 0;
  char ts[15];
  kr_arc_timestamp14(a.date, ts);
  kr_arc_iso_date(ts, r->arc_date);
  snprintf(r->arc_len, sizeof r->arc_len, "%" PRIu64, len);
  kr_warc_field_t *f = r->arc_fields;
  size_t nf = 0;
  if (a.filedesc) {
    f[nf++] = (kr_warc_field_t){"WARC-Type", KR_SLICE_LIT("warcinfo")};
    f[nf++] = (kr_warc_field_t){"WARC-Filename", kr_slice(a.url.p + 11, a.url.n - 11)};
  } else {
    f[nf++] = (kr_warc_field_t){"WARC-Type", KR_SLICE_LIT("response")};
    f[nf++] = (kr_warc_field_t){"WARC-Target-URI", a.url};
  }
  f[nf++] = (kr_warc_field_t){"WARC-IP-Address", a.ip};
  f[nf++] = (kr_warc_field_t){"WARC-Date", kr_slice_cstr(r->arc_date)};
  f[nf++] = (kr_warc_field_t){"Content-Type", a.filedesc ? a.mime :
                              KR_SLICE_LIT("application/http;msgtype=response")};
  f[nf++] = (kr_warc_field_t){"Content-Length", kr_slice_cstr(r->arc_len)};
  kr_warc_header_t *h = &r->h;
  memset(h, 0, sizeof *h);
  h->version = KR_SLICE_LIT("ARC/1.0");
  h->type = a.filedesc ? KR_WARC_WARCINFO : KR_WARC_RESPONSE;
  h->type_name = f[0].value;
  h->fields = f;
  h->nfields = nf;
  h->content_length = len;
  h->offset = r->rec_offset;
  return 0;
}

/* The header of a record whose first byte is at hand: WARC up to its
 * first blank line, or an ARC line. */
static int read_header_lenient(kr_warc_reader_t *r) {
  kr_buf_reset(&r->hb);
  if (r->has_magic) {
    r->has_magic = 0;
    if (kr_buf_append(&r->hb, "WARC/", 5)) return header_over(r, KR_ETOOBIG);
  }
  int rc = append_line(r);
  if (rc == KR_ETOOBIG)
    return fail(r, KR_EWARC, "no WARC or ARC record at offset %" PRIu64, r->rec_offset);
  if (rc < 0) return header_over(r, rc);
  int warc = r->hb.len >= 5 && !memcmp(r->hb.data, "WARC/", 5);
  if (r->format == FORMAT_WARC && !warc)
    return fail(r, KR_EWARC, "no WARC record at offset %" PRIu64, r->rec_offset);
  if (r->format == FORMAT_ARC && warc)
    return fail(r, KR_EWARC, "a WARC record at offset %" PRIu64 " in an ARC file",
                r->rec_offset);
  if (!warc) {
    if ((rc = arc_header(r)) < 0) return rc;
    r->format = FORMAT_ARC;
    return 0;
  }
  /* Bounded by max_header: every line grows hb. */
  for (;;) {
    size_t mark = r->hb.len;
    rc = append_line(r);
    if (rc < 0) return header_over(r, rc);
    if (rc == 0 || r->hb.data[r->hb.len - 1] != '\n')
      return fail(r, KR_EWARC, "record at offset %" PRIu64 ": header cut short",
                  r->rec_offset);
    if (is_blank_line(r->hb.data + mark, r->hb.len - mark)) break;
  }
  if ((rc = parse_header(r)) < 0) return rc;
  r->format = FORMAT_WARC;
  return 0;
}

/* After a block: blank lines (any number, CR or not), and a first line
 * that is not blank skipped with a warning, as warcio does; for gzip
 * within the member only. A block followed at once by "WARC/" is
 * followed by the next record (warcio would skip that line and fail on
 * the next): the magic is consumed and r->magic_at says where it was. */
static int skip_after_block(kr_warc_reader_t *r) {
  int first_line = 1, junk = 0;
  size_t pos = 0, matched = 0; /* bytes of the first line consumed, of them "WARC/" */
  uint64_t block_end = plain_pos(r);
  const unsigned char *p;
  size_t n;
  /* Bounded: every turn consumes a byte or returns. */
  for (;;) {
    int rc = window(r, &p, &n, r->gz == 1);
    if (rc < 0) return rc;
    if (rc == 0) break;
    unsigned char c = p[0];
    if (first_line && !junk && pos == matched && c == (unsigned char)"WARC/"[matched]) {
      eat(r, 1);
      pos++;
      if (++matched == 5) {
        r->magic_at = block_end;
        r->has_magic = 1;
        snprintf(r->warn, sizeof r->warn, "record at offset %" PRIu64 ": no blank line "
                 "between its block and the next record", r->rec_offset);
        break;
      }
      continue;
    }
    if (first_line && !junk && (matched > 0 || !is_space(c))) {
      junk = 1;
      snprintf(r->warn, sizeof r->warn, "record at offset %" PRIu64 ": block not followed "
               "by a blank line (wrong Content-Length?): a line skipped", r->rec_offset);
    }
    if (junk || is_space(c)) {
      eat(r, 1);
      pos++;
      if (c == '\n') first_line = junk = 0;
      continue;
    }
    break; /* the next record */
  }
  return 0;
}

int kr_warc_reader_next(kr_warc_reader_t *r, const kr_warc_header_t **hp) {
  if (r->failed) return r->failed;
  int rc;
  if (r->in_record && (rc = kr_warc_reader_finish(r, NULL)) < 0) return rc;
  if (r->gz < 0 && (rc = detect(r)) < 0) return rc;
  r->warn[0] = '\0';
  const unsigned char *p;
  size_t n;
  rc = r->has_magic ? 1 : r->o.lenient ? skip_blanks(r) : window(r, &p, &n, 0);
  if (rc <= 0) return rc;
  if (r->gz) {
    r->rec_offset = r->member_start;
    r->rec_aligned = r->member_used == 0 && !r->has_magic;
  } else {
    r->rec_offset = r->has_magic ? r->magic_at : plain_pos(r);
    r->rec_aligned = 1;
  }
  if (r->o.lenient) {
    if ((rc = read_header_lenient(r)) < 0) return rc;
    r->in_record = 1;
    r->block_left = r->h.content_length;
    *hp = &r->h;
    return 1;
  }
  kr_buf_reset(&r->hb);
  int ended = 0;
  while (!ended) {
    rc = window(r, &p, &n, 0);
    if (rc < 0) return rc;
    if (rc == 0)
      return fail(r, KR_EWARC, "record at offset %" PRIu64 ": header cut short",
                  r->rec_offset);
    const unsigned char *nl = memchr(p, '\n', n);
    size_t take = nl ? (size_t)(nl - p) + 1 : n;
    /* The magic first, so garbage is "no WARC record" however the
     * input is cut, not a header over the limit. */
    for (size_t i = r->hb.len; i < 5 && i - r->hb.len < take; i++)
      if (p[i - r->hb.len] != (unsigned char)"WARC/"[i])
        return fail(r, KR_EWARC, "no WARC record at offset %" PRIu64, r->rec_offset);
    if (kr_buf_append(&r->hb, p, take))
      return fail(r, KR_ETOOBIG, "record at offset %" PRIu64 ": header over %zu bytes",
                  r->rec_offset, r->o.max_header);
    eat(r, take);
    if (nl) {
      const char *e = r->hb.data + r->hb.len;
      size_t L = r->hb.len;
      if (L == 1 || (L == 2 && e[-2] == '\r'))
        return fail(r, KR_EWARC, "no WARC record at offset %" PRIu64, r->rec_offset);
      ended = (L >= 2 && e[-2] == '\n') || (L >= 3 && e[-2] == '\r' && e[-3] == '\n');
    }
  }
  if ((rc = parse_header(r)) < 0) return rc;
  r->in_record = 1;
  r->block_left = r->h.content_length;
  *hp = &r->h;
  return 1;
}

/* The input ended inside a block. Lenient reading of plain input ends the
 * block there, as warcio does (0), with a warning; otherwise an error. */
static int cut_short(kr_warc_reader_t *r) {
  if (!r->o.lenient || r->gz)
    return fail(r, KR_EWARC, "record at offset %" PRIu64 ": block cut short (%" PRIu64
                " bytes missing)", r->rec_offset, r->block_left);
  snprintf(r->warn, sizeof r->warn, "record at offset %" PRIu64 ": block cut short by the "
           "end of the file (%" PRIu64 " bytes missing): indexed as it is", r->rec_offset,
           r->block_left);
  r->block_left = 0;
  return 0;
}

long kr_warc_reader_read(kr_warc_reader_t *r, void *buf, size_t n) {
  if (r->failed) return r->failed;
  if (!r->in_record || r->block_left == 0 || n == 0) return 0;
  const unsigned char *p;
  size_t avail;
  int rc = window(r, &p, &avail, 0);
  if (rc < 0) return rc;
  if (rc == 0) return cut_short(r);
  size_t k = avail < n ? avail : n;
  if (k > r->block_left) k = (size_t)r->block_left;
  memcpy(buf, p, k);
  eat(r, k);
  r->block_left -= k;
  return (long)k;
}

int kr_warc_reader_finish(kr_warc_reader_t *r, kr_warc_extent_t *ext) {
  if (r->failed) return r->failed;
  if (!r->in_record) return KR_EINVAL;
  const unsigned char *p;
  size_t n;
  int rc;
  while (r->block_left) {
    rc = window(r, &p, &n, 0);
    if (rc < 0) return rc;
    if (rc == 0) {
      if ((rc = cut_short(r)) < 0) return rc;
      break;
    }
    size_t k = n < r->block_left ? n : (size_t)r->block_left;
    eat(r, k);
    r->block_left -= k;
  }
  uint64_t block_end = r->gz ? 0 : plain_pos(r);
  if (r->o.lenient) {
    if ((rc = skip_after_block(r)) < 0) return rc;
  } else {
    for (int i = 0; i < 4; i++) {
      rc = window(r, &p, &n, 0);
      if (rc < 0) return rc;
      if (rc == 0 || p[0] != trailer[i])
        return fail(r, KR_EWARC, "record at offset %" PRIu64 ": block not followed by "
                    "CRLF CRLF (wrong Content-Length or cut short)", r->rec_offset);
      eat(r, 1);
    }
    if (!r->gz) block_end = plain_pos(r) - 4;
  }
  r->in_record = 0;
  kr_warc_extent_t e = {.offset = r->rec_offset, .aligned = 1};
  if (r->gz) {
    rc = window(r, &p, &n, 1);
    if (rc < 0) return rc;
    e.aligned = rc == 0 && r->rec_aligned;
    if (e.aligned) {
      e.end = r->member_end;
      e.length = e.end - r->rec_offset;
    }
  } else {
    e.end = r->has_magic ? r->magic_at : plain_pos(r);
    e.length = block_end - r->rec_offset;
  }
  if (ext) *ext = e;
  return 0;
}

kr_slice_t kr_warc_header_get(const kr_warc_header_t *h, const char *name) {
  for (size_t i = 0; i < h->nfields; i++)
    if (!strcasecmp(h->fields[i].name, name)) return h->fields[i].value;
  return (kr_slice_t){NULL, 0};
}
