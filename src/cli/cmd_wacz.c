/*
 * `kria wacz OUT.wacz FILE...`: a WACZ 1.1.1 package (webrecorder's Web
 * Archive Collection Zipped, what replayweb.page opens) of WARC files, laid
 * out as py-wacz and browsertrix-crawler write it:
 *
 *   archive/NAME.warc.gz        each FILE, stored (ZIP method 0) so a
 *                               reader can range-request a record
 *   indexes/index.cdx.gz        the sorted CDXJ index of `kria cdx`
 *   indexes/index.idx           (filename = NAME in archive/), each line
 *                               with "recordDigest" (the SHA-256 of the
 *                               record as stored, as py-wacz adds it),
 *                               from 50,000 bytes of index on: in gzip
 *                               blocks of 256 lines, stored, and their
 *                               block index, deflated (wacz.h says where
 *                               each choice comes from)
 *   indexes/index.cdx           the same lines in one deflated file, for
 *                               a smaller index
 *   pages/pages.jsonl           a header line, then one line per URL with
 *                               an HTML 200 response: id, url, ts (its
 *                               first capture, RFC 3339) and title (its
 *                               <title>, when it has one), deflated
 *   datapackage.json            profile "data-package", wacz_version
 *                               "1.1.1", title, mainPageURL and
 *                               mainPageDate (--url, --ts / --date as
 *                               py-wacz takes them; by default the first
 *                               page captured), created, software, and
 *                               per file above its name, path, size and
 *                               SHA-256
 *   datapackage-digest.json     the SHA-256 of datapackage.json
 *
 * Every FILE is read through the WARC reader first: a malformed one is an
 * error naming it and nothing is written. Names must end in .warc or
 * .warc.gz (a file still ".open" is refused: repair it with a crawl
 * start or kria's warcfile repair) and be distinct. The ZIP is plain ZIP
 * (zipw.h): past 4 GiB it is refused, not written as ZIP64. The package
 * is written to a temporary file next to OUT and renamed over it only
 * when complete. Exit 0, 2 error, 64 usage.
 *
 * Sections: pages, the package, the command.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdx.h"
#include "cli.h"
#include "internal.h"
#include "kria/digest.h"
#include "kria/warc.h"
#include "wacz.h"
#include "zipw.h"

static const char usage_text[] =
    "usage: kria wacz [options] OUT.wacz FILE...\n"
    "  Package WARC files (.warc or .warc.gz) as a WACZ 1.1.1 file for\n"
    "  replayweb.page: the WARCs, a CDXJ index (index.cdx.gz + index.idx in\n"
    "  gzip blocks from 50,000 bytes on, else index.cdx), pages.jsonl (HTML\n"
    "  200 responses with their titles) and datapackage.json with SHA-256\n"
    "  fixity.\n"
    "  --title TEXT        the package's title (default: OUT's name)\n"
    "  --url URL           mainPageURL, the page replay opens first: a URL\n"
    "                      captured in FILE (default: the first page captured)\n"
    "  --ts TIMESTAMP      with --url, its capture at this 14-digit time;\n"
    "                      gives mainPageDate\n"
    "  --date DATE         mainPageDate as given\n"
    "  --gz-index-min N    bytes of index from which it is written in blocks\n"
    "                      (50000; 0: always)\n"
    "  --gz-index-lines N  index lines per block (256)\n"
    "exit status: 0 success, 2 error, 64 usage\n";

#define COPY_CHUNK (1u << 20)
#define PAGES_MAX (16u << 20)      /* distinct page URLs */
#define TEXT_MAX (1u << 30)        /* pages.jsonl, index.idx, datapackage.json */

struct opts {
  const char *title;
  const char *url;              /* --url, with py-wacz's "/" for no path */
  const char *ts;               /* --ts: 14 digits */
  const char *date;             /* --date */
  uint64_t gz_min;              /* --gz-index-min */
  size_t gz_lines;              /* --gz-index-lines */
};

/* ---- pages --------------------------------------------------------------- */

struct page {
  char *url;
  char ts[32];                  /* WARC-Date of the first capture */
  char *title;                  /* its <title>, or NULL */
  uint64_t h;
};

struct pages {
  struct page *v;               /* open addressing on h */
  size_t cap, n;
  int over;                     /* PAGES_MAX reached: later ones dropped */
};

/* What the indexer's callback needs while one FILE is indexed. */
struct scan {
  struct pages P;
  kr_cdx_lines_t *L;
  int fd;                       /* FILE, read again for digests and titles */
  const char *path;
  char *buf;                    /* COPY_CHUNK bytes */
  kr_buf_t title;
  int err;                      /* the first error; the rest is skipped */
  const struct opts *o;
  int main_found;               /* --url (and --ts) was captured */
};

static uint64_t hash_bytes(const char *p, size_t n) {
  uint64_t x = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) x = (x ^ (unsigned char)p[i]) * 1099511628211ull;
  return x ? x : 1;
}

static void pages_grow(struct pages *P) {
  size_t cap = P->cap ? P->cap * 2 : 1024;
  struct page *v = kr_xcalloc(cap, sizeof *v);
  for (size_t i = 0; i < P->cap; i++) {
    if (!P->v[i].url) continue;
    size_t j = P->v[i].h & (cap - 1);
    while (v[j].url) j = (j + 1) & (cap - 1);
    v[j] = P->v[i];
  }
  free(P->v);
  P->v = v;
  P->cap = cap;
}

static int is_html(kr_slice_t m) {
  return kr_slice_case_eq(m, KR_SLICE_LIT("text/html")) ||
         kr_slice_case_eq(m, KR_SLICE_LIT("application/xhtml+xml"));
}

/* The title of the capture r into p->title (replacing any). */
static void page_title(struct scan *S, struct page *p, const kr_cdx_rec_t *r) {
  int rc = kr__wacz_record_title(S->fd, r->offset, r->length, &S->title);
  free(p->title);
  p->title = rc == 1 ? kr_xstrndup(S->title.data, S->title.len) : NULL;
  if (rc < 0) {
    kr_cli_error(rc, "%s: record at offset %" PRIu64 ": cannot read it again", S->path,
                 r->offset);
    S->err = rc;
  }
}

/* A response record: an HTML 200 is a page; the earliest capture wins. */
static void add_page(struct scan *S, const kr_cdx_rec_t *r) {
  struct pages *P = &S->P;
  if (r->type != KR_WARC_RESPONSE || !r->url.n || !r->date.p || r->date.n >= 32) return;
  if (!kr_slice_eq(r->status, KR_SLICE_LIT("200")) || !r->mime.p || !is_html(r->mime)) return;
  if (P->n * 2 >= P->cap) {
    if (P->n >= PAGES_MAX) {
      P->over = 1;
      return;
    }
    pages_grow(P);
  }
  uint64_t h = hash_bytes(r->url.p, r->url.n);
  size_t j = h & (P->cap - 1);
  for (; P->v[j].url; j = (j + 1) & (P->cap - 1)) {
    struct page *p = &P->v[j];
    if (p->h == h && strlen(p->url) == r->url.n && !memcmp(p->url, r->url.p, r->url.n)) {
      /* W3C-ISO8601 dates in UTC compare as text: keep the earliest */
      char d[32];
      memcpy(d, r->date.p, r->date.n);
      d[r->date.n] = '\0';
      if (strcmp(d, p->ts) < 0) {
        memcpy(p->ts, d, sizeof d);
        page_title(S, p, r);
      }
      return;
    }
  }
  struct page *p = &P->v[j];
  p->url = kr_xstrndup(r->url.p, r->url.n);
  p->h = h;
  memcpy(p->ts, r->date.p, r->date.n);
  p->ts[r->date.n] = '\0';
  P->n++;
  page_title(S, p, r);
}

/* The line of r gets "recordDigest" last, where cdxj-indexer's field
 * list puts it (after "filename"). */
static void add_record_digest(struct scan *S, const kr_cdx_rec_t *r) {
  char d[KR_WACZ_SHA256_SIZE];
  int err = kr__wacz_range_sha256(S->fd, r->offset, r->length, d, S->buf, COPY_CHUNK);
  if (err) {
    kr_cli_error(err, "%s: record at offset %" PRIu64 ": cannot read it again", S->path,
                 r->offset);
    S->err = err;
    return;
  }
  char *old = S->L->v[r->line];
  size_t n = strlen(old);
  KR_BUG_ON(!n || old[n - 1] != '}');
  static const char field[] = ", \"recordDigest\": \"";
  size_t add = sizeof field - 1 + strlen(d) + 1;
  char *line = kr_xmalloc(n + add + 1);
  memcpy(line, old, n - 1);
  snprintf(line + n - 1, add + 2, "%s%s\"}", field, d);
  free(old);
  S->L->v[r->line] = line;
  S->L->bytes += add;
}

/* Every indexed record. */
static void on_rec(void *ud, const kr_cdx_rec_t *r) {
  struct scan *S = ud;
  if (S->err) return;
  add_record_digest(S, r);
  const struct opts *o = S->o;
  /* py-wacz looks for --url (and --ts) among responses, resources and
   * revisits (WACZIndexer.check_pages_and_text) */
  if (o->url && !S->err && (r->type == KR_WARC_RESPONSE || r->type == KR_WARC_RESOURCE ||
                            r->type == KR_WARC_REVISIT) &&
      kr_slice_eq(r->url, kr_slice_cstr(o->url)) && (!o->ts || !strcmp(o->ts, r->ts)))
    S->main_found = 1;
  if (!S->err) add_page(S, r);
}

static int cmp_page(const void *a, const void *b) {
  const struct page *x = a, *y = b;
  int c = strcmp(x->ts, y->ts);
  return c ? c : strcmp(x->url, y->url);
}

/* Make the table a sorted array of its k pages (by first capture time);
 * it is not searched again. */
static void pages_sort(struct pages *P) {
  size_t k = 0;
  for (size_t i = 0; i < P->cap; i++)
    if (P->v[i].url) P->v[k++] = P->v[i];
  qsort(P->v, k, sizeof *P->v, cmp_page);
  P->cap = k;
}

static void pages_free(struct pages *P) {
  for (size_t i = 0; i < P->cap; i++) {
    free(P->v[i].url);
    free(P->v[i].title);
  }
  free(P->v);
}

/* pages.jsonl of the sorted pages into b: header line, then the pages. */
static int pages_jsonl(const struct pages *P, kr_buf_t *b) {
  int err = kr_buf_append_str(b, "{\"format\": \"json-pages-1.0\", \"id\": \"pages\", "
                                 "\"title\": \"All Pages\"}\n");
  for (size_t i = 0; i < P->cap && !err; i++) {
    const struct page *p = &P->v[i];
    uint8_t d[KR_SHA1_LEN];
    char id[KR_SHA1_B32_LEN + 1];
    kr_buf_t key;
    kr_buf_init(&key, 64 << 10);
    err = kr_buf_printf(&key, "%s %s", p->ts, p->url);
    if (!err) err = kr_sha1(key.data, key.len, d);
    kr_buf_free(&key);
    if (err) break;
    kr_sha1_base32(d, id);
    id[16] = '\0';
    err = kr_buf_printf(b, "{\"id\": \"%s\", \"url\": ", id);
    if (!err) err = kr__cdx_json_str(b, p->url, strlen(p->url));
    if (!err) err = kr_buf_append_str(b, ", \"ts\": ");
    if (!err) err = kr__cdx_json_str(b, p->ts, strlen(p->ts));
    /* no title, no field: py-wacz and browsertrix-crawler leave it out */
    if (!err && p->title) err = kr_buf_append_str(b, ", \"title\": ");
    if (!err && p->title) err = kr__cdx_json_str(b, p->title, strlen(p->title));
    if (!err) err = kr_buf_append_str(b, "}\n");
  }
  return err;
}

/* ---- the package ------------------------------------------------------------ */

struct resource {
  char path[300];
  kr_zipw_entry_t e;
};

/* Add an entry from memory. */
static int add_mem(kr_zipw_t *z, const char *path, int method, const void *p, size_t n,
                   struct resource *res) {
  int rc = kr_zipw_begin(z, path, method);
  if (!rc) rc = kr_zipw_write(z, p, n);
  if (!rc) rc = kr_zipw_end(z, res ? &res->e : NULL);
  if (!rc && res) snprintf(res->path, sizeof res->path, "%s", path);
  return rc;
}

/* Copy the file at src into the entry `path`, stored. */
static int add_file(kr_zipw_t *z, const char *src, const char *path, struct resource *res,
                    char *buf) {
  int fd = open(src, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    kr_cli_error(KR_EIO, "%s: %s", src, strerror(errno));
    return KR_EIO;
  }
  int rc = kr_zipw_begin(z, path, KR_ZIP_STORE);
  /* Bounded by the file's size: each read returns bytes or ends. */
  while (!rc) {
    ssize_t n = read(fd, buf, COPY_CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      kr_cli_error(KR_EIO, "%s: %s", src, strerror(errno));
      rc = KR_EIO;
      break;
    }
    if (n == 0) break;
    rc = kr_zipw_write(z, buf, (size_t)n);
  }
  close(fd);
  if (!rc) rc = kr_zipw_end(z, &res->e);
  if (!rc) snprintf(res->path, sizeof res->path, "%s", path);
  return rc;
}

/* The index: compressed in blocks with its block index from o->gz_min
 * bytes of lines on (browsertrix-crawler's choice; py-wacz always
 * compresses), else one index.cdx: wabac.js reads both, and checks the
 * hash of .cdx and .idx files against datapackage.json (waczimporter.ts,
 * loadLeafWACZPackage), which it does not for .cdxj. The .cdx.gz is
 * stored (the WACZ spec: "already compressed files MUST NOT be compressed
 * again"), the others deflated as py-wacz does. */
static int add_index(kr_zipw_t *z, const kr_cdx_lines_t *L, const struct opts *o,
                     struct resource *res, size_t *nres, kr_buf_t *text) {
  int err = 0;
  if (L->bytes + L->n >= o->gz_min) {
    err = kr_zipw_begin(z, "indexes/index.cdx.gz", KR_ZIP_STORE);
    kr_buf_reset(text);
    if (!err) err = kr__wacz_cdx_gz(z, L->v, L->n, o->gz_lines, text);
    if (!err) err = kr_zipw_end(z, &res[*nres].e);
    if (!err) snprintf(res[(*nres)++].path, sizeof res->path, "indexes/index.cdx.gz");
    if (!err)
      err = add_mem(z, "indexes/index.idx", KR_ZIP_DEFLATE, text->data, text->len,
                    &res[(*nres)++]);
    return err;
  }
  err = kr_zipw_begin(z, "indexes/index.cdx", KR_ZIP_DEFLATE);
  for (size_t i = 0; i < L->n && !err; i++) {
    err = kr_zipw_write(z, L->v[i], strlen(L->v[i]));
    if (!err) err = kr_zipw_write(z, "\n", 1);
  }
  if (!err) err = kr_zipw_end(z, &res[*nres].e);
  if (!err) snprintf(res[(*nres)++].path, sizeof res->path, "indexes/index.cdx");
  return err;
}

struct main_page {
  const char *url;              /* NULL: none */
  const char *date;             /* NULL: none */
};

static int datapackage(kr_buf_t *b, const struct resource *res, size_t n, const char *title,
                       const struct main_page *mp, const char *created) {
  int err = kr_buf_append_str(b, "{\n  \"profile\": \"data-package\",\n"
                                 "  \"wacz_version\": \"1.1.1\",\n  \"title\": ");
  if (!err) err = kr__cdx_json_str(b, title, strlen(title));
  /* py-wacz's spelling (generate_datapackage), which the WACZ 1.1.1
   * text writes mainPageUrl */
  if (!err && mp->url) err = kr_buf_append_str(b, ",\n  \"mainPageURL\": ");
  if (!err && mp->url) err = kr__cdx_json_str(b, mp->url, strlen(mp->url));
  if (!err && mp->date) err = kr_buf_append_str(b, ",\n  \"mainPageDate\": ");
  if (!err && mp->date) err = kr__cdx_json_str(b, mp->date, strlen(mp->date));
  if (!err) err = kr_buf_printf(b, ",\n  \"created\": \"%s\",\n  \"modified\": \"%s\",\n"
                                   "  \"software\": \"kria " KRIA_VERSION "\",\n"
                                   "  \"resources\": [", created, created);
  for (size_t i = 0; i < n && !err; i++) {
    const char *base = strrchr(res[i].path, '/');
    base = base ? base + 1 : res[i].path;
    /* Frictionless wants resource names in lower case (py-wacz and
     * browsertrix-crawler lower them) */
    char name[300];
    size_t k = 0;
    for (; base[k] && k + 1 < sizeof name; k++)
      name[k] = base[k] >= 'A' && base[k] <= 'Z' ? (char)(base[k] - 'A' + 'a') : base[k];
    name[k] = '\0';
    err = kr_buf_printf(b, "%s\n    {\"name\": ", i ? "," : "");
    if (!err) err = kr__cdx_json_str(b, name, k);
    if (!err) err = kr_buf_append_str(b, ", \"path\": ");
    if (!err) err = kr__cdx_json_str(b, res[i].path, strlen(res[i].path));
    if (!err) err = kr_buf_printf(b, ", \"hash\": \"%s\", \"bytes\": %" PRIu64 "}",
                                  res[i].e.sha256, res[i].e.size);
  }
  if (!err) err = kr_buf_append_str(b, "\n  ]\n}\n");
  return err;
}

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

static int warc_name_ok(const char *name) {
  size_t n = strlen(name);
  int gz = n > 8 && !strcmp(name + n - 8, ".warc.gz");
  int plain = n > 5 && !strcmp(name + n - 5, ".warc");
  if (!(gz || plain) || n > 255 || name[0] == '.') return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f || name[i] == '\\') return 0;
  return 1;
}

/* Check the inputs; 0 or an error already printed. */
static int check_files(char **files, int nfiles) {
  struct stat sb;
  uint64_t total = 0;
  for (int i = 0; i < nfiles; i++) {
    const char *b = base_name(files[i]);
    if (!warc_name_ok(b)) {
      kr_cli_error(KR_EINVAL, "%s: a WARC file's name must end in .warc or .warc.gz "
                   "(a file still .open must be repaired first)", files[i]);
      return KR_EINVAL;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(b, base_name(files[j]))) {
        kr_cli_error(KR_EINVAL, "%s and %s: two files named %s", files[j], files[i], b);
        return KR_EINVAL;
      }
    errno = 0;
    if (stat(files[i], &sb) || !S_ISREG(sb.st_mode)) {
      kr_cli_error(KR_EIO, "%s: %s", files[i], errno ? strerror(errno) : "not a regular file");
      return KR_EIO;
    }
    total += (uint64_t)sb.st_size;
    if (total > KR_ZIP_MAX32) {
      kr_cli_error(KR_ETOOBIG, "the WARC files add up to more than 4 GiB: ZIP64 is not "
                   "written; package fewer files at a time");
      return KR_ETOOBIG;
    }
  }
  return 0;
}

/* Index every file, learning the pages and the main page. */
static int scan_files(struct scan *S, char **files, int nfiles) {
  int err = 0;
  for (int i = 0; i < nfiles && !err; i++) {
    S->fd = open(files[i], O_RDONLY | O_CLOEXEC);
    if (S->fd < 0) {
      kr_cli_error(KR_EIO, "%s: %s", files[i], strerror(errno));
      return KR_EIO;
    }
    S->path = files[i];
    err = kr__cdx_index_file(files[i], base_name(files[i]), S->L, on_rec, S);
    if (!err) err = S->err;
    close(S->fd);
    S->fd = -1;
  }
  if (!err && S->o->url && !S->main_found) {
    kr_cli_error(KR_EINVAL, "--url %s%s%s: no such capture in the WARC files", S->o->url,
                 S->o->ts ? " --ts " : "", S->o->ts ? S->o->ts : "");
    err = KR_EINVAL;
  }
  return err;
}

/* Everything after the arguments were read. */
static int make_wacz(const char *outpath, char **files, int nfiles, const struct opts *o) {
  /* 1. check the inputs, index them, find the pages */
  int err = check_files(files, nfiles);
  if (err) return err;
  kr_cdx_lines_t L = {0};
  struct scan S = {.L = &L, .fd = -1, .o = o};
  S.buf = kr_xmalloc(COPY_CHUNK);
  kr_buf_init(&S.title, KR_WACZ_TITLE_MAX);
  err = scan_files(&S, files, nfiles);
  kr_buf_t text;
  kr_buf_init(&text, TEXT_MAX);
  struct resource *res = kr_xcalloc((size_t)nfiles + 3, sizeof *res);
  char tmp[4096];
  int fd = -1;
  kr_zipw_t *z = NULL;
  if (err) goto out;
  if (S.P.over)
    fprintf(stderr, "kria: warning: more than %u pages: pages.jsonl lists the first\n",
            PAGES_MAX);
  kr__cdx_sort(&L);
  pages_sort(&S.P);
  struct main_page mp = {NULL, NULL};
  char main_date[32];
  if (o->url) {
    mp.url = o->url;
    /* py-wacz: mainPageDate from --ts (as an ISO date), or --date */
    if (o->ts) {
      snprintf(main_date, sizeof main_date, "%.4s-%.2s-%.2sT%.2s:%.2s:%.2sZ", o->ts, o->ts + 4,
               o->ts + 6, o->ts + 8, o->ts + 10, o->ts + 12);
      mp.date = main_date;
    }
  } else if (S.P.cap) {
    mp.url = S.P.v[0].url;
    mp.date = S.P.v[0].ts;
  }
  if (o->date) mp.date = o->date;

  /* 2. the archive, next to OUT */
  if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", outpath) >= (int)sizeof tmp) {
    kr_cli_error(KR_EINVAL, "%s: path too long", outpath);
    err = KR_EINVAL;
    goto out;
  }
  fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    kr_cli_error(KR_EIO, "%s: cannot create: %s", outpath, strerror(errno));
    err = KR_EIO;
    goto out;
  }
  fchmod(fd, 0644);
  time_t now = time(NULL);
  z = kr_zipw_new(fd, (int64_t)now);
  size_t nres = 0;
  for (int i = 0; i < nfiles && !err; i++) {
    char path[300];
    snprintf(path, sizeof path, "archive/%s", base_name(files[i]));
    err = add_file(z, files[i], path, &res[nres++], S.buf);
  }
  if (!err) err = add_index(z, &L, o, res, &nres, &text);
  kr_buf_reset(&text);
  if (!err) err = pages_jsonl(&S.P, &text);
  if (!err) err = add_mem(z, "pages/pages.jsonl", KR_ZIP_DEFLATE, text.data, text.len, &res[nres++]);
  char created[32];
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
  kr_buf_reset(&text);
  if (!err)
    err = datapackage(&text, res, nres, o->title ? o->title : base_name(outpath), &mp, created);
  struct resource dp;
  if (!err) err = add_mem(z, "datapackage.json", KR_ZIP_DEFLATE, text.data, text.len, &dp);
  kr_buf_reset(&text);
  if (!err) err = kr_buf_printf(&text, "{\n  \"path\": \"datapackage.json\",\n"
                                       "  \"hash\": \"%s\"\n}\n", dp.e.sha256);
  if (!err) err = add_mem(z, "datapackage-digest.json", KR_ZIP_DEFLATE, text.data, text.len, NULL);
  if (!err) err = kr_zipw_close(z);
  if (err && z && kr_zipw_errmsg(z)[0])
    kr_cli_error(err, "%s: %s", outpath, kr_zipw_errmsg(z));
  else if (err == KR_ETOOBIG)
    kr_cli_error(err, "%s: pages.jsonl, index.idx or datapackage.json too large", outpath);
  if (!err && rename(tmp, outpath)) {
    kr_cli_error(KR_EIO, "%s: %s", outpath, strerror(errno));
    err = KR_EIO;
  }
  if (!err)
    fprintf(stderr, "kria: %s: %d WARC file(s), %zu index lines, %zu pages\n", outpath, nfiles,
            L.n, S.P.cap);
out:
  if (fd >= 0) {
    close(fd);
    if (err) unlink(tmp);
  }
  kr_zipw_free(z);
  pages_free(&S.P);
  kr__cdx_lines_free(&L);
  kr_buf_free(&text);
  kr_buf_free(&S.title);
  free(res);
  free(S.buf);
  return err;
}

/* ---- the command ---------------------------------------------------------------- */

static int parse_count(const char *s, uint64_t max, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || v > max) return -1;
  *out = v;
  return 0;
}

static int is_ts14(const char *s) {
  if (strlen(s) != 14) return 0;
  for (int i = 0; i < 14; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

int kr_cmd_wacz(int argc, char **argv) {
  struct opts o = {.gz_min = KR_WACZ_GZ_MIN, .gz_lines = KR_WACZ_BLOCK_LINES};
  char *url = NULL;
  int i = 1, rc;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t n;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if (!v) {
      kr_cli_error(0, "unknown option or missing value '%s' (see 'kria wacz --help')", a);
      return 64;
    }
    if (!strcmp(a, "--title")) {
      o.title = v;
    } else if (!strcmp(a, "--url")) {
      free(url);
      /* py-wacz: "if url is missing path segment, ensure it is set to '/'" */
      const char *auth = strstr(v, "://");
      size_t l = strlen(v);
      int nopath = auth && !strpbrk(auth + 3, "/?#");
      url = kr_xmalloc(l + 2);
      snprintf(url, l + 2, "%s%s", v, nopath ? "/" : "");
      o.url = url;
    } else if (!strcmp(a, "--ts")) {
      if (!is_ts14(v)) {
        kr_cli_error(0, "--ts %s: a 14-digit timestamp (YYYYMMDDhhmmss)", v);
        free(url);
        return 64;
      }
      o.ts = v;
    } else if (!strcmp(a, "--date")) {
      o.date = v;
    } else if (!strcmp(a, "--gz-index-min") && !parse_count(v, UINT64_MAX, &n)) {
      o.gz_min = n;
    } else if (!strcmp(a, "--gz-index-lines") && !parse_count(v, 1u << 20, &n) && n > 0) {
      o.gz_lines = (size_t)n;
    } else {
      kr_cli_error(0, "unknown option or bad value '%s %s' (see 'kria wacz --help')", a, v);
      free(url);
      return 64;
    }
    i++;
  }
  if (o.ts && !o.url) {
    kr_cli_error(0, "--ts needs --url (see 'kria wacz --help')");
    rc = 64;
  } else if (argc - i < 2) {
    kr_cli_error(0, "wacz takes OUT.wacz and one or more WARC files (see 'kria wacz --help')");
    rc = 64;
  } else if (strlen(argv[i]) < 6 || strcmp(argv[i] + strlen(argv[i]) - 5, ".wacz")) {
    kr_cli_error(0, "%s: the package's name must end in .wacz", argv[i]);
    rc = 64;
  } else {
    rc = make_wacz(argv[i], argv + i + 1, argc - i - 1, &o) ? 2 : 0;
  }
  free(url);
  return rc;
}
