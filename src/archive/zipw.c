/*
 * The ZIP writer of zipw.h. An entry is a 30-byte local header written
 * with zero CRC and sizes, the data (stored, or raw deflate through one
 * zlib stream reset per entry), then the header's CRC and sizes written
 * in place with pwrite; the central directory is kept in memory (46 bytes
 * plus the name per entry, at most 65,535 entries) and written at close.
 * All numbers are little-endian, as APPNOTE.TXT (PKWARE) defines them;
 * nothing here needs ZIP64, and what would is refused. Sections: bytes
 * out, entries, close.
 */
#include "zipw.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "internal.h"
#include "kria/buf.h"
#include "kria/error.h"
#include "kria/mem.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define FLAG_UTF8 0x0800u
#define MAX_ENTRIES 65535u
#define NAME_MAX_LEN 1024u
#define OUT_CHUNK (256u << 10)

struct kr_zipw {
  int fd;
  uint64_t off;                 /* bytes written so far */
  uint16_t dos_time, dos_date;
  int err;                      /* first error, sticky */
  char errmsg[256];
  kr_buf_t central;             /* central directory records */
  uint32_t entries;
  /* the entry being written */
  int open;
  int method;
  uint64_t hdr_off;             /* its local header */
  uint64_t size, csize;
  uint32_t crc;
  EVP_MD_CTX *sha;
  z_stream zs;
  int zs_ready;
  unsigned char *zbuf;          /* deflate output, OUT_CHUNK bytes */
  char name[NAME_MAX_LEN + 1];
};

/* ---- bytes out ------------------------------------------------------------------ */

static int fail(kr_zipw_t *z, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(kr_zipw_t *z, int err, const char *fmt, ...) {
  if (!z->err) {
    z->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(z->errmsg, sizeof z->errmsg, fmt, ap);
    va_end(ap);
  }
  return z->err;
}

static void le16(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}
static void le32(unsigned char *p, uint32_t v) {
  le16(p, v & 0xffff);
  le16(p + 2, v >> 16);
}

static int out(kr_zipw_t *z, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = write(z->fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return fail(z, errno == ENOSPC ? KR_ENOSPC : KR_EIO, "writing: %s",
                            k < 0 ? strerror(errno) : "short write");
    c += k;
    n -= (size_t)k;
    z->off += (uint64_t)k;
  }
  return 0;
}

kr_zipw_t *kr_zipw_new(int fd, int64_t mtime) {
  kr_zipw_t *z = kr_xcalloc(1, sizeof *z);
  z->fd = fd;
  kr_buf_init(&z->central, (size_t)MAX_ENTRIES * (46 + NAME_MAX_LEN));
  time_t t = (time_t)mtime;
  struct tm tm;
  if (!gmtime_r(&t, &tm) || tm.tm_year < 80) {
    memset(&tm, 0, sizeof tm);
    tm.tm_year = 80;
    tm.tm_mday = 1;
  }
  if (tm.tm_year > 207) tm.tm_year = 207; /* DOS dates end in 2107 */
  z->dos_time = (uint16_t)(tm.tm_hour << 11 | tm.tm_min << 5 | tm.tm_sec / 2);
  z->dos_date = (uint16_t)((tm.tm_year - 80) << 9 | (tm.tm_mon + 1) << 5 | tm.tm_mday);
  z->sha = EVP_MD_CTX_new();
  z->zbuf = kr_xmalloc(OUT_CHUNK);
  if (!z->sha) fail(z, KR_EIO, "no SHA-256 context");
  return z;
}

void kr_zipw_free(kr_zipw_t *z) {
  if (!z) return;
  if (z->zs_ready) deflateEnd(&z->zs);
  EVP_MD_CTX_free(z->sha);
  kr_buf_free(&z->central);
  free(z->zbuf);
  free(z);
}

const char *kr_zipw_errmsg(const kr_zipw_t *z) { return z->errmsg; }

/* ---- entries ------------------------------------------------------------------- */

static int name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > NAME_MAX_LEN || s[0] == '/' || strstr(s, "..")) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\') return 0;
  return 1;
}

int kr_zipw_begin(kr_zipw_t *z, const char *name, int method) {
  if (z->err) return z->err;
  if (z->open || !name_ok(name) || (method != KR_ZIP_STORE && method != KR_ZIP_DEFLATE))
    return fail(z, KR_EINVAL, "bad entry name or method: %s", name);
  if (z->entries >= MAX_ENTRIES)
    return fail(z, KR_ETOOBIG, "more than %u entries need ZIP64", MAX_ENTRIES);
  if (z->off + 30 + strlen(name) > KR_ZIP_MAX32)
    return fail(z, KR_ETOOBIG, "the archive passes 4 GiB (ZIP64 is not written)");
  if (method == KR_ZIP_DEFLATE) {
    int zr = z->zs_ready ? deflateReset(&z->zs)
                         : deflateInit2(&z->zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    if (zr != Z_OK) return fail(z, KR_EIO, "zlib: cannot set up deflate");
    z->zs_ready = 1;
  }
  if (EVP_DigestInit_ex(z->sha, EVP_sha256(), NULL) != 1)
    return fail(z, KR_EIO, "SHA-256 unavailable");
  snprintf(z->name, sizeof z->name, "%s", name);
  z->method = method;
  z->hdr_off = z->off;
  z->size = z->csize = 0;
  z->crc = (uint32_t)crc32(0L, Z_NULL, 0);
  z->open = 1;
  size_t nl = strlen(name);
  unsigned char h[30];
  le32(h, SIG_LOCAL);
  le16(h + 4, method == KR_ZIP_DEFLATE ? 20 : 10); /* version needed */
  le16(h + 6, FLAG_UTF8);
  le16(h + 8, (uint32_t)method);
  le16(h + 10, z->dos_time);
  le16(h + 12, z->dos_date);
  memset(h + 14, 0, 12);                           /* crc, sizes: later */
  le16(h + 26, (uint32_t)nl);
  le16(h + 28, 0);
  if (out(z, h, sizeof h)) return z->err;
  return out(z, name, nl);
}

static int deflate_out(kr_zipw_t *z, const void *p, size_t n, int flush) {
  z->zs.next_in = (Bytef *)(uintptr_t)p;
  z->zs.avail_in = (uInt)n;
  /* Bounded: each round either consumes input or produces output, and
   * finishing stops at Z_STREAM_END. */
  for (;;) {
    z->zs.next_out = z->zbuf;
    z->zs.avail_out = OUT_CHUNK;
    int r = deflate(&z->zs, flush);
    if (r == Z_STREAM_ERROR) return fail(z, KR_EIO, "zlib: deflate failed");
    size_t have = OUT_CHUNK - z->zs.avail_out;
    z->csize += have;
    if (have && out(z, z->zbuf, have)) return z->err;
    if (flush == Z_FINISH ? r == Z_STREAM_END : z->zs.avail_out != 0) break;
  }
  return 0;
}

int kr_zipw_write(kr_zipw_t *z, const void *p, size_t n) {
  if (z->err) return z->err;
  if (!z->open) return fail(z, KR_EINVAL, "no entry begun");
  /* zlib counts in uInt: feed at most 1 GiB per call */
  const char *c = p;
  while (n) {
    size_t k = n < (1u << 30) ? n : (1u << 30);
    if (z->size + k > KR_ZIP_MAX32)
      return fail(z, KR_ETOOBIG, "%s is larger than 4 GiB (ZIP64 is not written)", z->name);
    z->crc = (uint32_t)crc32(z->crc, (const Bytef *)c, (uInt)k);
    if (EVP_DigestUpdate(z->sha, c, k) != 1) return fail(z, KR_EIO, "SHA-256 failed");
    z->size += k;
    if (z->method == KR_ZIP_DEFLATE) {
      if (deflate_out(z, c, k, Z_NO_FLUSH)) return z->err;
    } else {
      z->csize += k;
      if (out(z, c, k)) return z->err;
    }
    c += k;
    n -= k;
  }
  return 0;
}

int kr_zipw_end(kr_zipw_t *z, kr_zipw_entry_t *e) {
  if (z->err) return z->err;
  if (!z->open) return fail(z, KR_EINVAL, "no entry begun");
  z->open = 0;
  if (z->method == KR_ZIP_DEFLATE && deflate_out(z, "", 0, Z_FINISH)) return z->err;
  if (z->csize > KR_ZIP_MAX32 || z->off > KR_ZIP_MAX32)
    return fail(z, KR_ETOOBIG, "the archive passes 4 GiB (ZIP64 is not written)");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_DigestFinal_ex(z->sha, md, &mdlen) != 1 || mdlen != 32)
    return fail(z, KR_EIO, "SHA-256 failed");
  /* CRC and sizes into the local header. */
  unsigned char f[12];
  le32(f, z->crc);
  le32(f + 4, (uint32_t)z->csize);
  le32(f + 8, (uint32_t)z->size);
  ssize_t k = pwrite(z->fd, f, sizeof f, (off_t)(z->hdr_off + 14));
  if (k != (ssize_t)sizeof f)
    return fail(z, KR_EIO, "patching a local header: %s", k < 0 ? strerror(errno) : "short");
  /* Its central directory record. */
  size_t nl = strlen(z->name);
  unsigned char c[46];
  le32(c, SIG_CENTRAL);
  le16(c + 4, 3u << 8 | 20);                      /* made by: Unix, 2.0 */
  le16(c + 6, z->method == KR_ZIP_DEFLATE ? 20 : 10);
  le16(c + 8, FLAG_UTF8);
  le16(c + 10, (uint32_t)z->method);
  le16(c + 12, z->dos_time);
  le16(c + 14, z->dos_date);
  le32(c + 16, z->crc);
  le32(c + 20, (uint32_t)z->csize);
  le32(c + 24, (uint32_t)z->size);
  le16(c + 28, (uint32_t)nl);
  le16(c + 30, 0);                                /* extra */
  le16(c + 32, 0);                                /* comment */
  le16(c + 34, 0);                                /* disk */
  le16(c + 36, 0);                                /* internal attributes */
  le32(c + 38, 0100644u << 16);                   /* external: -rw-r--r-- */
  le32(c + 42, (uint32_t)z->hdr_off);
  if (kr_buf_append(&z->central, c, sizeof c) || kr_buf_append(&z->central, z->name, nl))
    return fail(z, KR_ETOOBIG, "central directory too large");
  z->entries++;
  if (e) {
    e->size = z->size;
    e->csize = z->csize;
    e->crc = z->crc;
    memcpy(e->sha256, "sha256:", 7);
    for (unsigned i = 0; i < 32; i++) snprintf(e->sha256 + 7 + 2 * i, 3, "%02x", md[i]);
  }
  return 0;
}

/* ---- close ------------------------------------------------------------------- */

int kr_zipw_close(kr_zipw_t *z) {
  if (z->err) return z->err;
  if (z->open) return fail(z, KR_EINVAL, "an entry was left open");
  uint64_t cd_off = z->off;
  if (cd_off + z->central.len + 22 > KR_ZIP_MAX32)
    return fail(z, KR_ETOOBIG, "the archive passes 4 GiB (ZIP64 is not written)");
  if (z->central.len && out(z, z->central.data, z->central.len)) return z->err;
  unsigned char e[22];
  le32(e, SIG_END);
  le16(e + 4, 0);
  le16(e + 6, 0);
  le16(e + 8, z->entries);
  le16(e + 10, z->entries);
  le32(e + 12, (uint32_t)z->central.len);
  le32(e + 16, (uint32_t)cd_off);
  le16(e + 20, 0);
  if (out(z, e, sizeof e)) return z->err;
  if (fdatasync(z->fd) && errno != EINVAL && errno != EROFS)
    return fail(z, KR_EIO, "syncing: %s", strerror(errno));
  return 0;
}
