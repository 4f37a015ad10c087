/*
 * What `kria wacz` writes beside the package itself (wacz.h): the CDXJ
 * index as gzip blocks with their block index, the "recordDigest" of a
 * record, and the title of a page. The formats are the ones webrecorder's
 * tools write and read, each noted where it is made: py-wacz with
 * cdxj-indexer (CompressedWriter in cdxj_indexer/main.py,
 * digest_block in cdxj_indexer/bufferiter.py), browsertrix-crawler
 * (mergeCDXJ in src/util/wacz.ts), and wabac.js, ReplayWeb.page's engine
 * (loadIDX and doCDXLoad in src/wacz/multiwacz.ts).
 *
 * Sections: the compressed index, record digests, page titles.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "internal.h"
#include "kria/inflate.h"
#include "kria/warc.h"
#include "wacz.h"

static void sha256_label(const unsigned char md[32], char out[KR_WACZ_SHA256_SIZE]) {
  static const char hex[] = "0123456789abcdef";
  memcpy(out, "sha256:", 7);
  for (unsigned i = 0; i < 32; i++) {
    out[7 + 2 * i] = hex[md[i] >> 4];
    out[8 + 2 * i] = hex[md[i] & 15];
  }
  out[71] = '\0';
}

/* ---- the compressed index ------------------------------------------------- */

/* One block: its lines as one gzip member (zlib's default level, as
 * Python's zlib.compressobj and Node's zlib.gzip use) into gz. */
static int gzip_block(z_stream *zs, char *const *lines, size_t n, kr_buf_t *gz) {
  if (deflateReset(zs) != Z_OK) return KR_EIO;
  kr_buf_reset(gz);
  unsigned char out[16384];
  for (size_t i = 0; i <= n; i++) {
    /* each line, then its '\n'; the last round only finishes */
    for (int nl = 0; nl < 2; nl++) {
      int last = i == n;
      if (last && nl) break;
      zs->next_in = (Bytef *)(last ? "" : nl ? "\n" : lines[i]);
      zs->avail_in = last ? 0 : nl ? 1 : (uInt)strlen(lines[i]);
      int rc;
      /* Bounded: every round consumes input or emits output until done. */
      do {
        zs->next_out = out;
        zs->avail_out = sizeof out;
        rc = deflate(zs, last ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_ERROR) return KR_EIO;
        int err = kr_buf_append(gz, out, sizeof out - zs->avail_out);
        if (err) return err;
      } while (last ? rc != Z_STREAM_END : zs->avail_in > 0 || zs->avail_out == 0);
    }
  }
  return 0;
}

int kr__wacz_cdx_gz(kr_zipw_t *z, char *const *lines, size_t n, size_t per, kr_buf_t *idx) {
  /* The header line: cdxj-indexer's write_header (json.dumps spacing,
   * as our index lines have it); wabac.js takes "filename" from it for
   * block lines without one, and warns on another "format". */
  int err = kr_buf_append_str(idx, "!meta 0 {\"format\": \"cdxj-gzip-1.0\", "
                                   "\"filename\": \"index.cdx.gz\"}\n");
  z_stream zs = {0};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return KR_EIO;
  kr_buf_t gz;
  kr_buf_init(&gz, (size_t)1 << 31);
  uint64_t offset = 0;
  for (size_t i = 0; i < n && !err; i += per) {
    size_t k = n - i < per ? n - i : per;
    err = gzip_block(&zs, lines + i, k, &gz);
    if (!err) err = kr_zipw_write(z, gz.data, gz.len);
    if (err) break;
    unsigned char md[32];
    char digest[KR_WACZ_SHA256_SIZE];
    if (!EVP_Digest(gz.data, gz.len, md, NULL, EVP_sha256(), NULL)) {
      err = KR_EIO;
      break;
    }
    sha256_label(md, digest);
    /* The key is the line up to " {" (browsertrix-crawler; cdxj-indexer
     * cuts at "{" and strips: the same for our lines). "digest" is the
     * SHA-256 of the member as stored, which wabac.js checks when
     * present; "filename" per line as browsertrix-crawler writes it. */
    const char *l = lines[i], *brace = strstr(l, " {");
    size_t kl = brace ? (size_t)(brace - l) : strlen(l);
    err = kr_buf_append(idx, l, kl);
    if (!err)
      err = kr_buf_printf(idx, " {\"offset\": %" PRIu64 ", \"length\": %zu, \"digest\": \"%s\", "
                               "\"filename\": \"index.cdx.gz\"}\n", offset, gz.len, digest);
    offset += gz.len;
  }
  deflateEnd(&zs);
  kr_buf_free(&gz);
  return err;
}

/* ---- record digests ------------------------------------------------------- */

/* The bytes cdxj-indexer's digest_block hashes for "recordDigest" (py-wacz
 * turns it on with digest_records=True): the record's offset..length in
 * its file, i.e. the gzip member as stored. wabac.js compares it with
 * the hash of the range it fetched. */
int kr__wacz_range_sha256(int fd, uint64_t off, uint64_t len, char out[KR_WACZ_SHA256_SIZE],
                          char *buf, size_t bufsize) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  int err = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) ? 0 : KR_EIO;
  /* Bounded: each round reads bytes or ends with an error. */
  while (!err && len > 0) {
    size_t want = len < bufsize ? (size_t)len : bufsize;
    ssize_t got = pread(fd, buf, want, (off_t)off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || !EVP_DigestUpdate(c, buf, (size_t)got)) {
      err = KR_EIO;
      break;
    }
    off += (uint64_t)got;
    len -= (uint64_t)got;
  }
  unsigned char md[32];
  if (!err && !EVP_DigestFinal_ex(c, md, NULL)) err = KR_EIO;
  if (!err) sha256_label(md, out);
  EVP_MD_CTX_free(c);
  return err;
}

/* ---- page titles ---------------------------------------------------------- */

/* A transfer-coded body, chunked, decoded into out as far as p[0..n)
 * goes (a body cut short gives its start). */
static void dechunk(const char *p, size_t n, kr_buf_t *out) {
  size_t i = 0;
  /* Bounded: every chunk moves i forward. */
  while (i < n && out->len < KR_WACZ_TITLE_SCAN) {
    uint64_t size = 0;
    size_t d = i;
    while (d < n && d - i < 16) {
      char c = p[d];
      int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (v < 0) break;
      size = size << 4 | (uint64_t)v;
      d++;
    }
    if (d == i) return;
    const char *nl = memchr(p + d, '\n', n - d); /* past any chunk extension */
    if (!nl || size == 0) return;
    i = (size_t)(nl - p) + 1;
    size_t take = size < n - i ? (size_t)size : n - i;
    if (take > KR_WACZ_TITLE_SCAN - out->len) take = KR_WACZ_TITLE_SCAN - out->len;
    if (kr_buf_append(out, p + i, take)) return;
    i += take;
    if (i < n && p[i] == '\r') i++;
    if (i < n && p[i] == '\n') i++;
  }
}

static int inflate_out(void *data, const char *p, size_t n) {
  return kr_buf_append(data, p, n);
}

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* p[0..n) starting at "&": the character reference's UTF-8 into out and
 * its length, or 0 when it is none we decode (it is then kept as is). */
static size_t entity(const char *p, size_t n, char out[4], size_t *outn) {
  static const struct { const char *name; const char *utf8; } named[] = {
      {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"},
      {"&nbsp;", "\xc2\xa0"},
  };
  for (size_t k = 0; k < ARRAY_SIZE(named); k++) {
    size_t l = strlen(named[k].name);
    if (n >= l && !strncasecmp(p, named[k].name, l)) {
      *outn = strlen(named[k].utf8);
      memcpy(out, named[k].utf8, *outn);
      return l;
    }
  }
  if (n < 4 || p[1] != '#') return 0;
  size_t i = 2;
  int hex = p[i] == 'x' || p[i] == 'X';
  if (hex) i++;
  uint32_t cp = 0;
  size_t start = i;
  while (i < n && i - start < 8) {
    char c = p[i];
    int v = c >= '0' && c <= '9' ? c - '0'
          : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
          : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) break;
    cp = cp * (hex ? 16 : 10) + (uint32_t)v;
    i++;
  }
  if (i == start || i >= n || p[i] != ';') return 0;
  if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) cp = 0xfffd;
  if (cp < 0x80) {
    out[0] = (char)cp;
    *outn = 1;
  } else if (cp < 0x800) {
    out[0] = (char)(0xc0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3f));
    *outn = 2;
  } else if (cp < 0x10000) {
    out[0] = (char)(0xe0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    *outn = 3;
  } else {
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    *outn = 4;
  }
  return i + 1;
}

/* The title element's text in html[0..n) into out. */
static int find_title(const char *h, size_t n, kr_buf_t *out) {
  size_t i = 0, a = 0, b = 0;
  int found = 0;
  /* Bounded: i only grows. */
  while (i < n && !found) {
    const char *lt = memchr(h + i, '<', n - i);
    if (!lt) return 0;
    i = (size_t)(lt - h);
    if (n - i >= 4 && !memcmp(h + i, "<!--", 4)) {
      const char *e = memmem(h + i + 4, n - i - 4, "-->", 3);
      if (!e) return 0;
      i = (size_t)(e - h) + 3;
    } else if (n - i >= 7 && !strncasecmp(h + i, "<title", 6) &&
               (h[i + 6] == '>' || is_space(h[i + 6]) || h[i + 6] == '/')) {
      const char *gt = memchr(h + i + 6, '>', n - i - 6);
      if (!gt) return 0;
      a = (size_t)(gt - h) + 1;
      /* the text runs to </title (RCDATA: no other tag ends it); one
       * cut off by the end of what is looked at is none, rather than a
       * part of it */
      for (b = a; b < n; b++)
        if (h[b] == '<' && n - b >= 7 && !strncasecmp(h + b, "</title", 7)) break;
      if (b == n) return 0;
      found = 1;
    } else {
      i++;
    }
  }
  if (!found) return 0;
  kr_buf_reset(out);
  int space = 0;
  for (size_t k = a; k < b && out->len < KR_WACZ_TITLE_MAX; k++) {
    if (is_space(h[k])) {
      space = 1;
      continue;
    }
    char u[4];
    size_t un = 1, used = h[k] == '&' ? entity(h + k, b - k, u, &un) : 0;
    if (!used) u[0] = h[k];
    if (used) k += used - 1;
    /* white space written as a reference (&#9;) collapses too, as the
     * text is decoded before document.title collapses it */
    if (un == 1 && is_space(u[0])) {
      space = 1;
      continue;
    }
    if (space && out->len && kr_buf_append(out, " ", 1)) break;
    space = 0;
    if (out->len + un > KR_WACZ_TITLE_MAX || kr_buf_append(out, u, un)) break;
  }
  /* A UTF-8 sequence cut by the cap (or never complete) goes, and any
   * blank before it. Bounded: every round shortens the title or ends. */
  for (;;) {
    size_t e = out->len, s = e;
    while (s > 0 && ((unsigned char)out->data[s - 1] & 0xc0) == 0x80) s--;
    if (s > 0 && (unsigned char)out->data[s - 1] >= 0xc0) {
      unsigned char c = (unsigned char)out->data[s - 1];
      size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
      if (e - (s - 1) < want) {
        out->len = s - 1;
        continue;
      }
    }
    if (!out->len || out->data[out->len - 1] != ' ') break;
    out->len--;
  }
  if (out->data) out->data[out->len] = '\0';
  return out->len > 0;
}

/* The value of header `name` in the head h[0..n) (lines after the status
 * line), trimmed; p NULL when absent. */
static kr_slice_t head_get(const char *h, size_t n, const char *name) {
  size_t nl = strlen(name);
  const char *line = memchr(h, '\n', n);
  /* Bounded: each round moves to the next line. */
  while (line && (size_t)(line - h) + 1 < n) {
    line++;
    const char *end = memchr(line, '\n', n - (size_t)(line - h));
    size_t ll = end ? (size_t)(end - line) : n - (size_t)(line - h);
    if (ll > nl && line[nl] == ':' && !strncasecmp(line, name, nl)) {
      kr_slice_t v = kr_slice(line + nl + 1, ll - nl - 1);
      if (v.n && v.p[v.n - 1] == '\r') v.n--;
      return kr_slice_trim(v);
    }
    line = end;
  }
  return (kr_slice_t){NULL, 0};
}

int kr__wacz_http_title(const char *p, size_t n, kr_buf_t *out) {
  if (out->data) kr_buf_reset(out);
  if (n < 5 || memcmp(p, "HTTP/", 5)) return 0;
  const char *e = memmem(p, n, "\r\n\r\n", 4);
  size_t hl = e ? (size_t)(e - p) + 4 : 0;
  if (!e && (e = memmem(p, n, "\n\n", 2))) hl = (size_t)(e - p) + 2;
  if (!hl) return 0;
  kr_slice_t te = head_get(p, hl, "Transfer-Encoding");
  kr_slice_t ce = head_get(p, hl, "Content-Encoding");
  enum kr_coding coding = KR_CODING_IDENTITY;
  if (ce.p && kr_inflate_coding(ce.p, ce.n, &coding)) return 0; /* br, stacked: not read */
  const char *body = p + hl;
  size_t bn = n - hl;
  kr_buf_t dechunked, decoded;
  kr_buf_init(&dechunked, KR_WACZ_TITLE_SCAN);
  kr_buf_init(&decoded, KR_WACZ_TITLE_SCAN);
  if (te.p && te.n >= 7 && !strncasecmp(te.p + te.n - 7, "chunked", 7)) {
    dechunk(body, bn, &dechunked);
    body = dechunked.data ? dechunked.data : "";
    bn = dechunked.len;
  }
  if (coding != KR_CODING_IDENTITY) {
    kr_inflate_t *z = kr_inflate_new(0);
    kr_inflate_limits_t lim = {.max_out = KR_WACZ_TITLE_SCAN};
    /* what decodes before an error or the cap is all we look at */
    if (!kr_inflate_start(z, coding, &lim)) (void)kr_inflate_feed(z, body, bn, inflate_out, &decoded);
    kr_inflate_free(z);
    body = decoded.data ? decoded.data : "";
    bn = decoded.len;
  }
  if (bn > KR_WACZ_TITLE_SCAN) bn = KR_WACZ_TITLE_SCAN;
  int found = find_title(body, bn, out);
  kr_buf_free(&dechunked);
  kr_buf_free(&decoded);
  return found;
}

struct range {
  int fd;
  uint64_t pos, end;
};

static long range_source(void *ctx, void *buf, size_t n) {
  struct range *r = ctx;
  if (r->pos >= r->end) return 0;
  if (n > r->end - r->pos) n = (size_t)(r->end - r->pos);
  ssize_t got;
  do got = pread(r->fd, buf, n, (off_t)r->pos);
  while (got < 0 && errno == EINTR);
  if (got < 0) return KR_EIO;
  r->pos += (uint64_t)got;
  return (long)got;
}

int kr__wacz_record_title(int fd, uint64_t off, uint64_t len, kr_buf_t *out) {
  struct range src = {fd, off, off + len};
  kr_warc_reader_opts_t o = {.base = off};
  kr_warc_reader_t *r = kr_warc_reader_new(&o, range_source, &src);
  const kr_warc_header_t *h;
  /* the HTTP head (kept to 64 KiB) and the start of the body */
  size_t cap = (64u << 10) + KR_WACZ_TITLE_SCAN, n = 0;
  char *buf = kr_xmalloc(cap);
  int rc = kr_warc_reader_next(r, &h);
  if (rc == 1) {
    /* Bounded by cap: each read returns bytes, 0 at the block's end, or
     * an error. */
    while (n < cap) {
      long got = kr_warc_reader_read(r, buf + n, cap - n);
      if (got < 0) rc = (int)got;
      if (got <= 0) break;
      n += (size_t)got;
    }
  }
  if (rc == 1) rc = kr__wacz_http_title(buf, n, out);
  else if (rc == 0) rc = KR_EWARC;
  free(buf);
  kr_warc_reader_free(r);
  return rc;
}
