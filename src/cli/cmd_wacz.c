/*
 * `kria wacz OUT.wacz FILE...`: a WACZ 1.1.1 package (webrecorder's Web
 * Archive Collection Zipped, what replayweb.page opens) of WARC files:
 *
 *   archive/NAME.warc.gz        each FILE, stored (ZIP method 0) so a
 *                               reader can range-request a record
 *   indexes/index.cdx           the sorted CDXJ index of `kria cdx`
 *                               (filename = NAME in archive/), deflated
 *   pages/pages.jsonl           a header line, then one line per URL with
 *                               an HTML 200 response: id, url, ts (its
 *                               first capture, RFC 3339), deflated
 *   datapackage.json            profile "data-package", wacz_version
 *                               "1.1.1", title, created, software, and
 *                               per file above its path, size and SHA-256
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
#include "zipw.h"

static const char usage_text[] =
    "usage: kria wacz [--title TEXT] OUT.wacz FILE...\n"
    "  Package WARC files (.warc or .warc.gz) as a WACZ 1.1.1 file for\n"
    "  replayweb.page: the WARCs, a CDXJ index, pages.jsonl (HTML 200\n"
    "  responses) and datapackage.json with SHA-256 fixity.\n"
    "exit status: 0 success, 2 error, 64 usage\n";

#define COPY_CHUNK (1u << 20)
#define PAGES_MAX (16u << 20)      /* distinct page URLs */
#define TEXT_MAX (1u << 30)        /* pages.jsonl, datapackage.json */

/* ---- pages --------------------------------------------------------------- */

struct page {
  char *url;
  char ts[32];                  /* WARC-Date of the first capture */
  uint64_t h;
};

struct pages {
  struct page *v;               /* open addressing on h */
  size_t cap, n;
  int over;                     /* PAGES_MAX reached: later ones dropped */
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

/* A response record: an HTML 200 is a page; the earliest capture wins. */
static void on_rec(void *ud, const kr_cdx_rec_t *r) {
  struct pages *P = ud;
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
      if (strcmp(d, p->ts) < 0) memcpy(p->ts, d, sizeof d);
      return;
    }
  }
  P->v[j].url = kr_xstrndup(r->url.p, r->url.n);
  P->v[j].h = h;
  memcpy(P->v[j].ts, r->date.p, r->date.n);
  P->v[j].ts[r->date.n] = '\0';
  P->n++;
}

static int cmp_page(const void *a, const void *b) {
  const struct page *x = a, *y = b;
  int c = strcmp(x->ts, y->ts);
  return c ? c : strcmp(x->url, y->url);
}

/* pages.jsonl into b: header line, then pages by first capture time. */
static int pages_jsonl(struct pages *P, kr_buf_t *b) {
  size_t k = 0;
  for (size_t i = 0; i < P->cap; i++)
    if (P->v[i].url) P->v[k++] = P->v[i];
  /* the table is now a sorted array; it is not searched again */
  qsort(P->v, k, sizeof *P->v, cmp_page);
  int err = kr_buf_append_str(b, "{\"format\": \"json-pages-1.0\", \"id\": \"pages\", "
                                 "\"title\": \"All Pages\"}\n");
  for (size_t i = 0; i < k && !err; i++) {
    uint8_t d[KR_SHA1_LEN];
    char id[KR_SHA1_B32_LEN + 1];
    kr_buf_t key;
    kr_buf_init(&key, 64 << 10);
    err = kr_buf_printf(&key, "%s %s", P->v[i].ts, P->v[i].url);
    if (!err) err = kr_sha1(key.data, key.len, d);
    kr_buf_free(&key);
    if (err) break;
    kr_sha1_base32(d, id);
    id[16] = '\0';
    err = kr_buf_printf(b, "{\"id\": \"%s\", \"url\": ", id);
    if (!err) err = kr__cdx_json_str(b, P->v[i].url, strlen(P->v[i].url));
    if (!err) err = kr_buf_append_str(b, ", \"ts\": ");
    if (!err) err = kr__cdx_json_str(b, P->v[i].ts, strlen(P->v[i].ts));
    if (!err) err = kr_buf_append_str(b, "}\n");
  }
  for (size_t i = 0; i < k; i++) free(P->v[i].url);
  P->cap = 0;
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

static int datapackage(kr_buf_t *b, const struct resource *res, size_t n, const char *title,
                       const char *created) {
  int err = kr_buf_append_str(b, "{\n  \"profile\": \"data-package\",\n"
                                 "  \"wacz_version\": \"1.1.1\",\n  \"title\": ");
  if (!err) err = kr__cdx_json_str(b, title, strlen(title));
  if (!err) err = kr_buf_printf(b, ",\n  \"created\": \"%s\",\n  \"modified\": \"%s\",\n"
                                   "  \"software\": \"kria " KRIA_VERSION "\",\n"
                                   "  \"resources\": [", created, created);
  for (size_t i = 0; i < n && !err; i++) {
    const char *base = strrchr(res[i].path, '/');
    base = base ? base + 1 : res[i].path;
    err = kr_buf_printf(b, "%s\n    {\"name\": ", i ? "," : "");
    if (!err) err = kr__cdx_json_str(b, base, strlen(base));
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

/* Everything after the arguments were read. */
static int make_wacz(const char *outpath, char **files, int nfiles, const char *title) {
  /* 1. check the inputs, index them, find the pages */
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
  kr_cdx_lines_t L = {0};
  struct pages P = {0};
  int err = 0;
  for (int i = 0; i < nfiles && !err; i++)
    err = kr__cdx_index_file(files[i], base_name(files[i]), &L, on_rec, &P);
  kr_buf_t text;
  kr_buf_init(&text, TEXT_MAX);
  struct resource *res = kr_xcalloc((size_t)nfiles + 2, sizeof *res);
  char *buf = kr_xmalloc(COPY_CHUNK);
  char tmp[4096];
  int fd = -1;
  kr_zipw_t *z = NULL;
  if (err) goto out;
  if (P.over) fprintf(stderr, "kria: warning: more than %u pages: pages.jsonl lists the first\n",
                      PAGES_MAX);
  kr__cdx_sort(&L);

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
    err = add_file(z, files[i], path, &res[nres++], buf);
  }
  for (size_t i = 0; i < L.n && !err; i++) {
    if (i == 0) err = kr_zipw_begin(z, "indexes/index.cdx", KR_ZIP_DEFLATE);
    if (!err) err = kr_zipw_write(z, L.v[i], strlen(L.v[i]));
    if (!err) err = kr_zipw_write(z, "\n", 1);
  }
  if (!err && !L.n) err = kr_zipw_begin(z, "indexes/index.cdx", KR_ZIP_DEFLATE);
  if (!err) err = kr_zipw_end(z, &res[nres].e);
  if (!err) snprintf(res[nres++].path, sizeof res->path, "indexes/index.cdx");
  if (!err) err = pages_jsonl(&P, &text);
  if (!err) err = add_mem(z, "pages/pages.jsonl", KR_ZIP_DEFLATE, text.data, text.len, &res[nres++]);
  char created[32];
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
  kr_buf_reset(&text);
  if (!err) err = datapackage(&text, res, nres, title ? title : base_name(outpath), created);
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
    kr_cli_error(err, "%s: pages.jsonl or datapackage.json too large", outpath);
  if (!err && rename(tmp, outpath)) {
    kr_cli_error(KR_EIO, "%s: %s", outpath, strerror(errno));
    err = KR_EIO;
  }
  if (!err)
    fprintf(stderr, "kria: %s: %d WARC file(s), %zu index lines, %zu pages\n", outpath, nfiles,
            L.n, P.n);
out:
  if (fd >= 0) {
    close(fd);
    if (err) unlink(tmp);
  }
  kr_zipw_free(z);
  for (size_t i = 0; i < P.cap; i++) free(P.v[i].url);
  free(P.v);
  kr__cdx_lines_free(&L);
  kr_buf_free(&text);
  free(res);
  free(buf);
  return err;
}

/* ---- the command ---------------------------------------------------------------- */

int kr_cmd_wacz(int argc, char **argv) {
  const char *title = NULL;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (!strcmp(argv[i], "--title") && i + 1 < argc) {
      title = argv[++i];
      continue;
    }
    kr_cli_error(0, "unknown option '%s' (see 'kria wacz --help')", argv[i]);
    return 64;
  }
  if (argc - i < 2) {
    kr_cli_error(0, "wacz takes OUT.wacz and one or more WARC files (see 'kria wacz --help')");
    return 64;
  }
  size_t ol = strlen(argv[i]);
  if (ol < 6 || strcmp(argv[i] + ol - 5, ".wacz")) {
    kr_cli_error(0, "%s: the package's name must end in .wacz", argv[i]);
    return 64;
  }
  return make_wacz(argv[i], argv + i + 1, argc - i - 1, title) ? 2 : 0;
}
