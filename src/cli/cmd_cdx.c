/*
 * `kria cdx FILE...`: a CDXJ index of WARC files on standard output,
 * sorted as `LC_ALL=C sort` sorts (bytewise), in the format of webrecorder's
 * cdxj-indexer that pywb and replayweb.page read:
 *
 *   SURT TIMESTAMP14 {"url": "...", "mime": "...", "status": "200",
 *                     "digest": "sha1:...", "length": "N", "offset": "N",
 *                     "filename": "..."}
 *
 * one line per response, revisit, resource and metadata record (resource
 * and metadata records of type application/warc-fields left out, as
 * cdxj-indexer does). mime is the HTTP Content-Type of a response (up to
 * ';' or a space), "warc/revisit" for a revisit, the record's Content-Type
 * otherwise; status is the HTTP status of responses and revisits that
 * carry HTTP headers; digest is WARC-Payload-Digest as written; fields
 * without a value are left out; a WARC-Target-URI in angle brackets
 * (WARC/1.0 writers such as wget) loses them. offset and length are the
 * record's bytes in the file: its gzip member, or for plain WARC the
 * record without the CRLF CRLF after it (as warcio and cdxj-indexer).
 * The key is python surt's (kr_surt), or the URL itself when it has no
 * SURT, as cdxj-indexer falls back. The digest keeps its "sha1:" prefix
 * as cdxj-indexer writes it (warcio.js's indexer drops it; pywb reads
 * both).
 *
 * Every file is read whole before anything is printed; a malformed file
 * is an error (exit 2) naming the file and offset, and nothing is
 * printed. Exit 0, 2 error, 64 usage.
 *
 * The indexer is shared (cdx.h): `kria wacz` builds its index with it and
 * learns the pages of a collection from the same pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cdx.h"
#include "cli.h"
#include "internal.h"
#include "kria/url.h"
#include "kria/warc.h"

static const char usage_text[] =
    "usage: kria cdx FILE...\n"
    "  Print a sorted CDXJ index (pywb / cdxj-indexer format) of the WARC\n"
    "  files (.warc or .warc.gz) on standard output.\n"
    "exit status: 0 success, 2 error, 64 usage\n";

#define HTTP_HEAD_MAX 65536
#define LINES_MAX_BYTES (4ull << 30)

/* Python's json.dumps (ensure_ascii) of n bytes of UTF-8; bytes that are
 * not UTF-8 are taken as Latin-1. */
int kr__cdx_json_str(kr_buf_t *b, const char *s, size_t n) {
  int err = kr_buf_append(b, "\"", 1);
  for (size_t i = 0; i < n && !err; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      err = kr_buf_printf(b, "\\%c", c);
    } else if (c == '\n') {
      err = kr_buf_append_str(b, "\\n");
    } else if (c == '\r') {
      err = kr_buf_append_str(b, "\\r");
    } else if (c == '\t') {
      err = kr_buf_append_str(b, "\\t");
    } else if (c == '\b') {
      err = kr_buf_append_str(b, "\\b");
    } else if (c == '\f') {
      err = kr_buf_append_str(b, "\\f");
    } else if (c < 0x20 || c == 0x7f) {
      err = kr_buf_printf(b, "\\u%04x", c);
    } else if (c < 0x80) {
      err = kr_buf_append(b, &s[i], 1);
    } else {
      /* Decode one UTF-8 sequence. */
      uint32_t cp = 0;
      size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      if (len && i + len <= n) {
        cp = c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
          unsigned char d = (unsigned char)s[i + k];
          if ((d & 0xc0) != 0x80) {
            len = 0;
            break;
          }
          cp = cp << 6 | (d & 0x3f);
        }
        if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) len = 0;
        if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) len = 0;
      } else {
        len = 0;
      }
      if (!len) {
        err = kr_buf_printf(b, "\\u%04x", c);
      } else if (cp >= 0x10000) {
        cp -= 0x10000;
        err = kr_buf_printf(b, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
        i += len - 1;
      } else {
        err = kr_buf_printf(b, "\\u%04x", cp);
        i += len - 1;
      }
    }
  }
  if (!err) err = kr_buf_append(b, "\"", 1);
  return err;
}

struct http_info {
  kr_slice_t status, mime;
  char head[HTTP_HEAD_MAX];
};

/* From the start of a response/revisit block: status code and the
 * Content-Type up to ';' or blank. */
static int read_http(kr_warc_reader_t *r, uint64_t block_len, struct http_info *hi) {
  size_t n = 0, want = block_len < HTTP_HEAD_MAX ? (size_t)block_len : HTTP_HEAD_MAX;
  hi->status = hi->mime = (kr_slice_t){NULL, 0};
  /* Bounded: each read returns bytes, 0 (end of block) or an error. */
  while (n < want) {
    long got = kr_warc_reader_read(r, hi->head + n, want - n);
    if (got < 0) return (int)got;
    if (got == 0) break;
    n += (size_t)got;
    if (memmem(hi->head, n, "\r\n\r\n", 4) || memmem(hi->head, n, "\n\n", 2)) break;
  }
  const char *h = hi->head;
  if (n < 12 || memcmp(h, "HTTP/", 5)) return 0;
  const char *eol = memchr(h, '\n', n);
  if (!eol) return 0;
  const char *sp = memchr(h, ' ', (size_t)(eol - h));
  if (sp) {
    const char *p = sp + 1;
    while (p < eol && *p == ' ') p++;
    const char *q = p;
    while (q < eol && *q >= '0' && *q <= '9') q++;
    if (q > p && q - p <= 3) hi->status = kr_slice(p, (size_t)(q - p));
  }
  const char *end = hi->head + n;
  for (const char *line = eol + 1; line < end;) {
    const char *nl = memchr(line, '\n', (size_t)(end - line));
    if (!nl) break;
    size_t ll = (size_t)(nl - line);
    if (ll && line[ll - 1] == '\r') ll--;
    if (ll == 0) break;
    if (ll > 13 && !strncasecmp(line, "content-type:", 13)) {
      kr_slice_t v = kr_slice_trim(kr_slice(line + 13, ll - 13));
      size_t k = 0;
      while (k < v.n && v.p[k] != ';' && v.p[k] != ' ' && v.p[k] != '\t') k++;
      hi->mime = kr_slice(v.p, k);
      break;
    }
    line = nl + 1;
  }
  return 0;
}

static int add_field(kr_buf_t *b, int *first, const char *name, kr_slice_t v) {
  if (!v.p) return 0;
  int err = kr_buf_printf(b, "%s\"%s\": ", *first ? "" : ", ", name);
  *first = 0;
  return err ? err : kr__cdx_json_str(b, v.p, v.n);
}

int kr__cdx_index_file(const char *path, const char *name, kr_cdx_lines_t *out,
                       kr_cdx_rec_fn fn, void *ud) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    kr_cli_error(KR_EIO, "%s: %s", path, strerror(errno));
    return KR_EIO;
  }
  const char *base = name;
  if (!base) {
    base = strrchr(path, '/');
    base = base ? base + 1 : path;
  }
  struct http_info *hi = kr_xmalloc(sizeof *hi);
  kr_warc_reader_t *r = kr_warc_reader_new(NULL, kr_warc_fd_source, &fd);
  kr_buf_t line, key;
  kr_buf_init(&line, 1u << 20);
  kr_buf_init(&key, 1u << 20);
  const kr_warc_header_t *h;
  int rc, err = 0;
  while (!err && (rc = kr_warc_reader_next(r, &h)) == 1) {
    int t = h->type;
    kr_slice_t ct = kr_warc_header_get(h, "Content-Type");
    int take = t == KR_WARC_RESPONSE || t == KR_WARC_REVISIT ||
               ((t == KR_WARC_RESOURCE || t == KR_WARC_METADATA) &&
                !(ct.p && kr_slice_eq(kr_slice_trim(ct), KR_SLICE_LIT("application/warc-fields"))));
    if (!take) continue;
    kr_slice_t url = kr_warc_header_get(h, "WARC-Target-URI");
    /* WARC/1.0 writers (wget) put the URI in angle brackets. */
    if (url.p && url.n >= 2 && url.p[0] == '<' && url.p[url.n - 1] == '>')
      url = kr_slice(url.p + 1, url.n - 2);
    kr_slice_t date = kr_warc_header_get(h, "WARC-Date");
    kr_slice_t digest = kr_warc_header_get(h, "WARC-Payload-Digest");
    char ts[15];
    uint64_t off = h->offset;
    if (!date.p || kr_warc_timestamp14(date, ts)) {
      kr_cli_error(KR_EWARC, "%s: record at offset %" PRIu64 ": bad or no WARC-Date", path, off);
      err = KR_EWARC;
      break;
    }
    struct http_info *hp = NULL;
    if ((t == KR_WARC_RESPONSE || t == KR_WARC_REVISIT) && h->content_length > 0) {
      if ((err = read_http(r, h->content_length, hi))) break;
      hp = hi;
    }
    kr_slice_t mime = {NULL, 0};
    if (t == KR_WARC_REVISIT) {
      mime = KR_SLICE_LIT("warc/revisit");
    } else if (t == KR_WARC_RESPONSE) {
      if (hp) mime = hp->mime;
    } else if (ct.p) {
      mime = kr_slice_trim(ct);
      size_t k = 0;
      while (k < mime.n && mime.p[k] != ';' && mime.p[k] != ' ' && mime.p[k] != '\t') k++;
      mime.n = k;
    }
    kr_warc_extent_t ext;
    if ((err = kr_warc_reader_finish(r, &ext))) break;
    if (!ext.aligned) {
      kr_cli_error(KR_EWARC, "%s: record at offset %" PRIu64 " shares its gzip member with "
                   "another record: no offset/length to index", path, off);
      err = KR_EWARC;
      break;
    }
    kr_buf_reset(&key);
    if (!url.p || kr_surt(url.p, url.n, NULL, &key)) {
      kr_buf_reset(&key);
      if (url.p && url.n) err = kr_buf_append_slice(&key, url);
      else err = kr_buf_append_str(&key, "-");
    }
    /* The key is the line's first field: no blanks or controls in it. */
    for (size_t i = 0; i < key.len; i++)
      if ((unsigned char)key.data[i] <= ' ' || key.data[i] == 0x7f) key.data[i] = '_';
    char lenbuf[24], offbuf[24];
    snprintf(lenbuf, sizeof lenbuf, "%" PRIu64, ext.length);
    snprintf(offbuf, sizeof offbuf, "%" PRIu64, ext.offset);
    kr_slice_t dg = digest;
    kr_buf_reset(&line);
    int first = 1;
    if (!err) err = kr_buf_printf(&line, "%s %s {", key.data, ts);
    if (!err) err = add_field(&line, &first, "url", url);
    if (!err) err = add_field(&line, &first, "mime", mime);
    if (!err && hp) err = add_field(&line, &first, "status", hp->status);
    if (!err) err = add_field(&line, &first, "digest", dg);
    if (!err) err = add_field(&line, &first, "length", kr_slice_cstr(lenbuf));
    if (!err) err = add_field(&line, &first, "offset", kr_slice_cstr(offbuf));
    if (!err) err = add_field(&line, &first, "filename", kr_slice_cstr(base));
    if (!err) err = kr_buf_append(&line, "}", 1);
    if (err) {
      kr_cli_error(err, "%s: record at offset %" PRIu64 ": index line too long", path, off);
      break;
    }
    if (out->bytes + line.len > LINES_MAX_BYTES) {
      kr_cli_error(KR_ETOOBIG, "index larger than %llu bytes", (unsigned long long)LINES_MAX_BYTES);
      err = KR_ETOOBIG;
      break;
    }
    if (out->n == out->cap)
      out->v = kr_xrealloc(out->v, (out->cap = out->cap ? out->cap * 2 : 256) * sizeof *out->v);
    out->v[out->n++] = kr_xstrndup(line.data, line.len);
    out->bytes += line.len;
    if (fn) {
      kr_cdx_rec_t cr = {.type = t, .url = url, .date = date, .mime = mime,
                         .status = hp ? hp->status : (kr_slice_t){NULL, 0},
                         .offset = ext.offset, .length = ext.length, .line = out->n - 1};
      memcpy(cr.ts, ts, sizeof cr.ts);
      fn(ud, &cr);
    }
  }
  if (!err && rc < 0) err = rc;
  if (err && r && kr_warc_reader_errmsg(r)[0])
    kr_cli_error(err, "%s: %s", path, kr_warc_reader_errmsg(r));
  else if (err && err != KR_EWARC && err != KR_ETOOBIG)
    kr_cli_error(err, "%s: %s", path, kr_strerror(err));
  kr_buf_free(&line);
  kr_buf_free(&key);
  kr_warc_reader_free(r);
  free(hi);
  close(fd);
  return err;
}

static int cmp_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void kr__cdx_sort(kr_cdx_lines_t *L) {
  if (L->n) qsort(L->v, L->n, sizeof *L->v, cmp_lines);
}

void kr__cdx_lines_free(kr_cdx_lines_t *L) {
  for (size_t i = 0; i < L->n; i++) free(L->v[i]);
  free(L->v);
  memset(L, 0, sizeof *L);
}

int kr_cmd_cdx(int argc, char **argv) {
  if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    fputs(usage_text, stdout);
    return 0;
  }
  int first = 1;
  if (argc > 1 && !strcmp(argv[1], "--")) first = 2;
  if (argc <= first) {
    kr_cli_error(0, "cdx takes one or more WARC files (see 'kria cdx --help')");
    return 64;
  }
  for (int i = first; i < argc; i++)
    if (argv[i][0] == '-' && first == 1) {
      kr_cli_error(0, "unknown option '%s' (see 'kria cdx --help')", argv[i]);
      return 64;
    }
  kr_cdx_lines_t L = {0};
  int err = 0;
  for (int i = first; i < argc && !err; i++) err = kr__cdx_index_file(argv[i], NULL, &L, NULL, NULL);
  if (!err) {
    kr__cdx_sort(&L);
    for (size_t i = 0; i < L.n; i++) {
      fputs(L.v[i], stdout);
      putchar('\n');
    }
    if (fflush(stdout) || ferror(stdout)) {
      kr_cli_error(KR_EIO, "writing the index: %s", strerror(errno));
      err = KR_EIO;
    }
  }
  kr__cdx_lines_free(&L);
  return err ? 2 : 0;
}
