/*
 * `kria cdx FILE...`: a CDXJ index of WARC and ARC files on standard
 * output, sorted as `LC_ALL=C sort -u` sorts (bytewise, a repeated line
 * once, as cdxj-indexer's sorted output), in the format of
 * webrecorder's cdxj-indexer that pywb and replayweb.page read:
 *
 *   SURT TIMESTAMP14 {"url": "...", "mime": "...", "status": "200",
 *                     "digest": "sha1:...", "length": "N", "offset": "N",
 *                     "filename": "..."}
 *
 * one line per response, revisit, resource and metadata record (resource
 * and metadata records of type application/warc-fields left out, as
 * cdxj-indexer does); an ARC record is a response. Fields as
 * cdxj-indexer (through python warcio) gives them:
 *  - url: WARC-Target-URI without the angle brackets WARC/1.0 writers
 *    such as wget put around it, a space as %20; the key is python
 *    surt's of it (kr_surt), or the URL itself when it has no SURT;
 *  - mime: the HTTP Content-Type of a response up to ';' or a blank,
 *    "warc/revisit" for a revisit, the record's Content-Type otherwise;
 *  - status: of responses and revisits of http(s) URIs with an HTTP head;
 *  - digest: WARC-Payload-Digest as written ("sha1:" kept; warcio.js's
 *    indexer drops it, pywb reads both), else, but for a revisit, the
 *    SHA-1 of the payload (the block after the HTTP head, the whole block
 *    without one) as cdxj-indexer computes it;
 *  - offset and length: the record's gzip member, or for plain files the
 *    record up to the end of its block.
 * Fields without a value are left out.
 *
 * Files are read leniently (kria/warc.h opts.lenient), as warcio's
 * ArchiveIterator reads real collections: ARC v1 (.arc, .arc.gz), blank
 * lines or none between records, CR CR LF line ends, a Content-Length a
 * little short (the stray line is skipped with a warning), a plain file
 * cut inside a block. A file that fails (garbage, a cut gzip member,
 * records sharing a gzip member) is reported on stderr with its name and
 * the offset; its lines up to there are kept and the other files indexed.
 * Everything is read before anything is printed. Exit 0, 2 when a file
 * failed (or the output could not be written), 64 usage.
 *
 * The indexer is shared (cdx.h): `kria wacz` builds its index with it,
 * reading strictly (a package of a damaged WARC fails), and learns the
 * pages of a collection from the same pass. format_line makes one line.
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
#include "kria/digest.h"
#include "kria/url.h"
#include "kria/warc.h"

static const char usage_text[] =
    "usage: kria cdx FILE...\n"
    "  Print a sorted CDXJ index (pywb / cdxj-indexer format) of the WARC and\n"
    "  ARC files (.warc, .warc.gz, .arc, .arc.gz) on standard output. Slips\n"
    "  that warcio reads past are warnings; a file that cannot be read on is\n"
    "  an error naming it and the offset, and its lines up to there and the\n"
    "  other files' lines are printed all the same.\n"
    "exit status: 0 success, 2 a file failed, 64 usage\n";

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

/* Python's str.isspace() on ASCII, which is what warcio's rstrip() and
 * blank-line tests do to the (decoded) lines of HTTP heads. */
static int is_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* What the indexer learns from the block of one record. */
struct block_info {
  int http;                     /* the HTTP head was parsed */
  kr_slice_t status, mime;      /* p NULL when none; into head */
  char digest[KR_SHA1_LABEL_SIZE]; /* computed payload digest, "" if not */
  size_t n;                     /* bytes of the head kept */
  char head[HTTP_HEAD_MAX];     /* its first HTTP_HEAD_MAX bytes */
};

/* One indexer over one file. */
struct indexer {
  const char *path, *base;
  kr_warc_reader_t *r;
  kr_sha1_t sha;
  int sha_ready;
  kr_buf_t line, key, url;
  struct block_info bi;
  char buf[65536];
};

/* Status and Content-Type from an HTTP head, as warcio parses it without
 * verification: the status is the word after the status line's first
 * space; a header is the text before its first ':' (blanks dropped), the
 * first Content-Type wins and the mime is its value up to ';' or a blank
 * (empty when the value is). A head with neither status text nor a
 * header is no head (warcio's StatusAndHeaders is false): no status. */
static void parse_http(struct block_info *bi) {
  const char *h = bi->head, *end = h + bi->n;
  const char *eol = memchr(h, '\n', bi->n);
  if (!eol) eol = end;
  size_t ll = (size_t)(eol - h);
  while (ll && is_space((unsigned char)h[ll - 1])) ll--;
  const char *sp = memchr(h, ' ', ll);
  kr_slice_t status = kr_slice(h, 0), mime = {NULL, 0};
  int fields = 0;
  if (sp) {
    kr_slice_t rest = kr_slice(sp + 1, (size_t)(h + ll - sp - 1));
    while (rest.n && is_space((unsigned char)rest.p[0])) rest.p++, rest.n--;
    size_t k = 0;
    while (k < rest.n && rest.p[k] != ' ') k++;
    status = kr_slice(rest.p, k);
    fields = rest.n > 0;
  }
  for (const char *line = eol + 1; line < end;) {
    const char *nl = memchr(line, '\n', (size_t)(end - line));
    const char *le = nl ? nl : end;
    ll = (size_t)(le - line);
    while (ll && is_space((unsigned char)line[ll - 1])) ll--;
    if (ll == 0) break;
    const char *colon = line[0] == ' ' || line[0] == '\t' ? NULL : memchr(line, ':', ll);
    if (colon) {
      fields++;
      size_t nn = (size_t)(colon - line);
      while (nn && (line[nn - 1] == ' ' || line[nn - 1] == '\t')) nn--;
      if (nn == 12 && !strncasecmp(line, "content-type", 12)) {
        const char *v = colon + 1, *ve = line + ll;
        while (v < ve && is_space((unsigned char)*v)) v++;
        size_t k = 0;
        while (v + k < ve && v[k] != ';' && !is_space((unsigned char)v[k])) k++;
        if (!mime.p) mime = kr_slice(v, k);
      }
    }
    if (!nl) break;
    line = nl + 1;
  }
  if (fields) {
    bi->status = status;
    bi->mime = mime;
  }
}

/* Read the block of the current record: the HTTP head up to its first
 * blank line when http (its first HTTP_HEAD_MAX bytes kept), and, when
 * hash, the SHA-1 of the payload after it (of the whole block without
 * http), which is what cdxj-indexer computes for a record without
 * WARC-Payload-Digest. The rest is left for kr_warc_reader_finish. */
static int read_block(struct indexer *ix, int http, int hash) {
  struct block_info *bi = &ix->bi;
  bi->http = http;
  bi->status = bi->mime = (kr_slice_t){NULL, 0};
  bi->digest[0] = '\0';
  bi->n = 0;
  int in_head = http, blank = 1;
  if (hash) {
    if (!ix->sha_ready && kr_sha1_init(&ix->sha)) return KR_EIO;
    ix->sha_ready = 1;
    if (kr_sha1_reset(&ix->sha)) return KR_EIO;
  }
  /* Bounded: each read returns bytes, 0 (end of block) or an error. */
  while (in_head || hash) {
    long got = kr_warc_reader_read(ix->r, ix->buf, sizeof ix->buf);
    if (got < 0) return (int)got;
    if (got == 0) break;
    size_t i = 0, n = (size_t)got;
    if (in_head) {
      for (; i < n && in_head; i++) {
        unsigned char c = (unsigned char)ix->buf[i];
        if (c == '\n') {
          if (blank) in_head = 0;
          blank = 1;
        } else if (!is_space(c)) {
          blank = 0;
        }
      }
      size_t keep = i < HTTP_HEAD_MAX - bi->n ? i : HTTP_HEAD_MAX - bi->n;
      memcpy(bi->head + bi->n, ix->buf, keep);
      bi->n += keep;
    }
    /* A head without a blank line leaves no payload, as in warcio. */
    if (hash && !in_head && i < n && kr_sha1_update(&ix->sha, ix->buf + i, n - i))
      return KR_EIO;
  }
  if (http) parse_http(bi);
  if (hash) {
    uint8_t d[KR_SHA1_LEN];
    if (kr_sha1_final(&ix->sha, d)) return KR_EIO;
    kr_sha1_label(d, bi->digest);
  }
  return 0;
}

static int add_field(kr_buf_t *b, int *first, const char *name, kr_slice_t v) {
  if (!v.p) return 0;
  int err = kr_buf_printf(b, "%s\"%s\": ", *first ? "" : ", ", name);
  *first = 0;
  return err ? err : kr__cdx_json_str(b, v.p, v.n);
}

/* What one index line says (slices p NULL when the field is left out). */
struct cdx_entry {
  kr_slice_t url, mime, status, digest;
  char ts[15];
  uint64_t length, offset;
  const char *filename;
};

/* The line of one record: SURT key (the URL itself when it has none, "-"
 * without URL), timestamp, JSON fields in cdxj-indexer's order. */
static int format_line(kr_buf_t *line, kr_buf_t *key, const struct cdx_entry *e) {
  kr_buf_reset(key);
  int err = 0;
  if (!e->url.p || kr_surt(e->url.p, e->url.n, NULL, key)) {
    kr_buf_reset(key);
    err = e->url.p && e->url.n ? kr_buf_append_slice(key, e->url) : kr_buf_append_str(key, "-");
  }
  /* The key is the line's first field: no blanks or controls in it. */
  for (size_t i = 0; i < key->len; i++)
    if ((unsigned char)key->data[i] <= ' ' || key->data[i] == 0x7f) key->data[i] = '_';
  char lenbuf[24], offbuf[24];
  snprintf(lenbuf, sizeof lenbuf, "%" PRIu64, e->length);
  snprintf(offbuf, sizeof offbuf, "%" PRIu64, e->offset);
  kr_buf_reset(line);
  int first = 1;
  if (!err) err = kr_buf_printf(line, "%s %s {", key->data, e->ts);
  if (!err) err = add_field(line, &first, "url", e->url);
  if (!err) err = add_field(line, &first, "mime", e->mime);
  if (!err) err = add_field(line, &first, "status", e->status);
  if (!err) err = add_field(line, &first, "digest", e->digest);
  if (!err) err = add_field(line, &first, "length", kr_slice_cstr(lenbuf));
  if (!err) err = add_field(line, &first, "offset", kr_slice_cstr(offbuf));
  if (!err) err = add_field(line, &first, "filename", kr_slice_cstr(e->filename));
  if (!err) err = kr_buf_append(line, "}", 1);
  return err;
}

/* WARC-Target-URI as warcio reads it: angle brackets (WARC/1.0 writers
 * such as wget) removed, spaces as %20. p NULL when there is none. */
static kr_slice_t target_uri(kr_buf_t *b, const kr_warc_header_t *h) {
  kr_slice_t url = kr_warc_header_get(h, "WARC-Target-URI");
  if (!url.p) return url;
  if (url.n >= 2 && url.p[0] == '<' && url.p[url.n - 1] == '>') url = kr_slice(url.p + 1, url.n - 2);
  if (!memchr(url.p, ' ', url.n)) return url;
  kr_buf_reset(b);
  for (size_t i = 0; i < url.n; i++)
    if (url.p[i] == ' ' ? kr_buf_append_str(b, "%20") : kr_buf_append(b, &url.p[i], 1))
      return url; /* over the buffer's limit: left as it is */
  return kr_slice(b->data, b->len);
}

static int starts_with(kr_slice_t s, const char *prefix) {
  size_t n = strlen(prefix);
  return s.n >= n && !memcmp(s.p, prefix, n);
}

/* Index the record whose header h was just read: 0 (indexed or left
 * out), or an error already reported. */
static int index_record(struct indexer *ix, const kr_warc_header_t *h, kr_cdx_lines_t *out,
                        kr_cdx_rec_fn fn, void *ud) {
  int t = h->type;
  kr_slice_t ct = kr_warc_header_get(h, "Content-Type");
  int take = t == KR_WARC_RESPONSE || t == KR_WARC_REVISIT ||
             ((t == KR_WARC_RESOURCE || t == KR_WARC_METADATA) &&
              !(ct.p && kr_slice_eq(kr_slice_trim(ct), KR_SLICE_LIT("application/warc-fields"))));
  if (!take) return 0;
  uint64_t off = h->offset;
  struct cdx_entry e = {.url = target_uri(&ix->url, h), .filename = ix->base};
  kr_slice_t date = kr_warc_header_get(h, "WARC-Date");
  if (!date.p || kr_warc_timestamp14(date, e.ts)) {
    kr_cli_error(KR_EWARC, "%s: record at offset %" PRIu64 ": bad or no WARC-Date", ix->path, off);
    return KR_EWARC;
  }
  /* warcio parses an HTTP head in responses and revisits of http(s) URIs
   * with a block; cdxj-indexer hashes the payload of every record but a
   * revisit when it has no WARC-Payload-Digest. */
  e.digest = kr_warc_header_get(h, "WARC-Payload-Digest");
  if (e.digest.p && !e.digest.n) e.digest.p = NULL;
  int http = (t == KR_WARC_RESPONSE || t == KR_WARC_REVISIT) && h->content_length > 0 &&
             e.url.p && (starts_with(e.url, "http:") || starts_with(e.url, "https:"));
  int err = read_block(ix, http, !e.digest.p && t != KR_WARC_REVISIT);
  if (err) return err;
  struct block_info *bi = &ix->bi;
  if (bi->digest[0]) e.digest = kr_slice_cstr(bi->digest);
  if (t == KR_WARC_REVISIT) {
    e.mime = KR_SLICE_LIT("warc/revisit");
  } else if (t == KR_WARC_RESPONSE) {
    if (http) e.mime = bi->mime;
  } else if (ct.p) {
    e.mime = kr_slice_trim(ct);
    size_t k = 0;
    while (k < e.mime.n && e.mime.p[k] != ';' && !is_space((unsigned char)e.mime.p[k])) k++;
    e.mime.n = k;
  }
  if (http) e.status = bi->status;
  kr_warc_extent_t ext;
  if ((err = kr_warc_reader_finish(ix->r, &ext))) return err;
  if (kr_warc_reader_warning(ix->r)[0])
    fprintf(stderr, "kria: warning: %s: %s\n", ix->path, kr_warc_reader_warning(ix->r));
  if (!ext.aligned) {
    kr_cli_error(KR_EWARC, "%s: record at offset %" PRIu64 " shares its gzip member with "
                 "another record: no offset/length to index", ix->path, off);
    return KR_EWARC;
  }
  e.length = ext.length;
  e.offset = ext.offset;
  if ((err = format_line(&ix->line, &ix->key, &e))) {
    kr_cli_error(err, "%s: record at offset %" PRIu64 ": index line too long", ix->path, off);
    return err;
  }
  if (out->bytes + ix->line.len > LINES_MAX_BYTES) {
    kr_cli_error(KR_ETOOBIG, "index larger than %llu bytes", (unsigned long long)LINES_MAX_BYTES);
    return KR_ETOOBIG;
  }
  if (out->n == out->cap)
    out->v = kr_xrealloc(out->v, (out->cap = out->cap ? out->cap * 2 : 256) * sizeof *out->v);
  out->v[out->n++] = kr_xstrndup(ix->line.data, ix->line.len);
  out->bytes += ix->line.len;
  if (fn) {
    kr_cdx_rec_t cr = {.type = t, .url = e.url, .date = date, .mime = e.mime, .status = e.status,
                       .offset = ext.offset, .length = ext.length, .line = out->n - 1};
    memcpy(cr.ts, e.ts, sizeof cr.ts);
    fn(ud, &cr);
  }
  return 0;
}

static int index_file(const char *path, const char *name, int lenient, kr_cdx_lines_t *out,
                      kr_cdx_rec_fn fn, void *ud) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    kr_cli_error(KR_EIO, "%s: %s", path, strerror(errno));
    return KR_EIO;
  }
  struct indexer *ix = kr_xcalloc(1, sizeof *ix);
  ix->path = path;
  ix->base = name;
  if (!ix->base) {
    ix->base = strrchr(path, '/');
    ix->base = ix->base ? ix->base + 1 : path;
  }
  kr_warc_reader_opts_t o = {.lenient = lenient};
  ix->r = kr_warc_reader_new(&o, kr_warc_fd_source, &fd);
  kr_buf_init(&ix->line, 1u << 20);
  kr_buf_init(&ix->key, 1u << 20);
  kr_buf_init(&ix->url, 1u << 20);
  const kr_warc_header_t *h;
  int rc, err = 0;
  while (!err && (rc = kr_warc_reader_next(ix->r, &h)) == 1) err = index_record(ix, h, out, fn, ud);
  if (!err && rc < 0) err = rc;
  /* Errors of the reader are reported here, the indexer's where found. */
  if (err && kr_warc_reader_errmsg(ix->r)[0])
    kr_cli_error(err, "%s: %s", path, kr_warc_reader_errmsg(ix->r));
  else if (err && err != KR_EWARC && err != KR_ETOOBIG)
    kr_cli_error(err, "%s: %s", path, kr_strerror(err));
  kr_buf_free(&ix->line);
  kr_buf_free(&ix->key);
  kr_buf_free(&ix->url);
  kr_warc_reader_free(ix->r);
  if (ix->sha_ready) kr_sha1_free(&ix->sha);
  free(ix);
  close(fd);
  return err;
}

int kr__cdx_index_file(const char *path, const char *name, kr_cdx_lines_t *out,
                       kr_cdx_rec_fn fn, void *ud) {
  return index_file(path, name, 0, out, fn, ud);
}

static int cmp_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void kr__cdx_sort(kr_cdx_lines_t *L) {
  if (!L->n) return;
  qsort(L->v, L->n, sizeof *L->v, cmp_lines);
  /* A line equal to the one before is dropped, as cdxj-indexer's sorted
   * output drops it (a file named twice). */
  size_t k = 1;
  for (size_t i = 1; i < L->n; i++) {
    if (strcmp(L->v[i], L->v[k - 1]) == 0) {
      L->bytes -= strlen(L->v[i]);
      free(L->v[i]);
    } else {
      L->v[k++] = L->v[i];
    }
  }
  L->n = k;
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
  /* A file that fails is reported and its lines up to the failure kept;
   * the others are indexed all the same. Only an index too big to hold
   * stops the run. */
  kr_cdx_lines_t L = {0};
  int failed = 0, werr = 0, err = 0;
  for (int i = first; i < argc && err != KR_ETOOBIG; i++) {
    err = index_file(argv[i], NULL, 1, &L, NULL, NULL);
    failed += err != 0;
  }
  if (err != KR_ETOOBIG) {
    kr__cdx_sort(&L);
    for (size_t i = 0; i < L.n; i++) {
      fputs(L.v[i], stdout);
      putchar('\n');
    }
    if (fflush(stdout) || ferror(stdout)) {
      kr_cli_error(KR_EIO, "writing the index: %s", strerror(errno));
      werr = 1;
    }
  }
  if (failed && err != KR_ETOOBIG)
    fprintf(stderr, "kria: %d of %d files not indexed to their end\n", failed, argc - first);
  kr__cdx_lines_free(&L);
  return failed || werr ? 2 : 0;
}
