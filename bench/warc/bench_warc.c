/*
 * bench_warc — what writing one ≈10 KB page as a WARC response record
 * costs, per gzip level and compressor. Pages come from a sitegen site
 * (realistic HTML); each becomes "HTTP head + page", the block of a
 * response record.
 *
 * Measured, each as the median over R repetitions of N records, in CPU
 * time of this thread (CLOCK_THREAD_CPUTIME_ID):
 *   raw     the compressor alone on the whole record (WARC header + block
 *           + CRLF CRLF already in one buffer): zlib with one deflate
 *           state reset per record (deflateReset), zlib with
 *           deflateInit2/deflateEnd per record, libdeflate_gzip_compress
 *           with one compressor; levels 1..9;
 *   writer  kr_warc_write end to end into a counting sink: SHA-1 of block
 *           and payload, header, staging copy, compression; plain (no
 *           gzip), engine libdeflate and engine zlib at levels 1..9;
 *   parts   SHA-1 of a record, memcpy of a record (libdeflate's staging);
 *   page    what one crawled page costs: response + request + metadata
 *           (33 outlinks), three records (size relative to the response);
 *   file    kr_warcfile_write to a real file (durability none) at the
 *           default level: the above plus pwritev.
 * Output: one markdown table on stdout (µs/record, MB/s of uncompressed
 * record bytes, compressed size as % of the record), TSV with -t FILE.
 *
 * Usage: bench_warc -d SITE_DIR [-n N] [-r R] [-t TSV] [-w TMPDIR]
 * A benchmark tool, not part of kria.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "kria/digest.h"
#include "kria/error.h"
#include "kria/warc.h"
#include "warcfile.h"

struct page {
  char *head;
  size_t head_len;
  char *body;
  size_t body_len;
  char *rec; /* WARC header + head + body + CRLF CRLF, for the raw runs */
  size_t rec_len;
};

static struct page *pages;
static int npages;
static unsigned char *outbuf;
static size_t outcap;

static double cpu_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void die(const char *m) {
  fprintf(stderr, "bench_warc: %s\n", m);
  exit(1);
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *p = malloc(cap);
  size_t got;
  while ((got = fread(p + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) p = realloc(p, cap *= 2);
  }
  fclose(f);
  *n = len;
  return p;
}

static void load(const char *dir, int max) {
  char path[4096];
  snprintf(path, sizeof path, "%s/paths.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) die("no paths.txt in the site directory (run sitegen)");
  pages = calloc((size_t)max, sizeof *pages);
  char line[2048];
  while (npages < max && fgets(line, sizeof line, f)) {
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = '\0';
    tab[strcspn(tab + 1, "\n") + 1] = '\0';
    snprintf(path, sizeof path, "%s/%s%s", dir, line, tab + 1);
    struct page *p = &pages[npages];
    p->body = slurp(path, &p->body_len);
    if (!p->body) continue;
    char h[512];
    int hn = snprintf(h, sizeof h,
                      "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n"
                      "Date: Sun, 22 Nov 2026 05:00:00 GMT\r\n"
                      "Content-Type: text/html\r\nContent-Length: %zu\r\n"
                      "Last-Modified: Sun, 22 Nov 2026 04:00:00 GMT\r\nConnection: keep-alive\r\n"
                      "ETag: \"6567a0c0-%zx\"\r\nAccept-Ranges: bytes\r\n\r\n",
                      p->body_len, p->body_len);
    p->head = strdup(h);
    p->head_len = (size_t)hn;
    /* A realistic WARC header in front, for the raw compressor runs. */
    char w[1024];
    int wn = snprintf(w, sizeof w,
                      "WARC/1.1\r\nWARC-Type: response\r\n"
                      "WARC-Record-ID: <urn:uuid:3a7a2f1e-7d5c-4b0e-9a51-1f0e5c9b2d%02x>\r\n"
                      "WARC-Date: 2026-11-22T05:00:00.123Z\r\n"
                      "WARC-Target-URI: http://%s%s\r\nWARC-IP-Address: 127.0.0.1\r\n"
                      "WARC-Concurrent-To: <urn:uuid:3a7a2f1e-7d5c-4b0e-9a51-1f0e5c9b2e00>\r\n"
                      "WARC-Warcinfo-ID: <urn:uuid:3a7a2f1e-7d5c-4b0e-9a51-1f0e5c9b2f00>\r\n"
                      "Content-Type: application/http;msgtype=response\r\n"
                      "WARC-Payload-Digest: sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n"
                      "WARC-Block-Digest: sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      npages & 0xff, line, tab + 1, p->head_len + p->body_len);
    p->rec_len = (size_t)wn + p->head_len + p->body_len + 4;
    p->rec = malloc(p->rec_len);
    memcpy(p->rec, w, (size_t)wn);
    memcpy(p->rec + wn, p->head, p->head_len);
    memcpy(p->rec + wn + p->head_len, p->body, p->body_len);
    memcpy(p->rec + p->rec_len - 4, "\r\n\r\n", 4);
    if (p->rec_len * 2 + 1024 > outcap) {
      outcap = p->rec_len * 2 + 1024;
      outbuf = realloc(outbuf, outcap);
    }
    npages++;
  }
  fclose(f);
  if (npages == 0) die("no pages loaded");
}

struct result {
  char name[64];
  int level;
  double us;        /* per record, median */
  double mbps;      /* uncompressed record MB/s */
  double pct;       /* compressed / uncompressed, % */
};

static struct result results[128];
static int nresults;
static int reps = 5;
static size_t total_rec_bytes;

/* Run fn over all pages reps times; record the median. */
typedef size_t (*run_fn)(void *ctx, struct page *p);

static void measure(const char *name, int level, run_fn fn, void *ctx) {
  double *t = calloc((size_t)reps, sizeof *t);
  size_t out = 0;
  for (int r = 0; r < reps; r++) {
    size_t o = 0;
    double t0 = cpu_us();
    for (int i = 0; i < npages; i++) o += fn(ctx, &pages[i]);
    t[r] = cpu_us() - t0;
    out = o;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_d);
  struct result *res = &results[nresults++];
  snprintf(res->name, sizeof res->name, "%s", name);
  res->level = level;
  res->us = t[reps / 2] / npages;
  res->mbps = total_rec_bytes / t[reps / 2];
  res->pct = out ? 100.0 * out / total_rec_bytes : 0;
  fprintf(stderr, "  %-22s L%d %8.1f µs/record %7.1f MB/s %5.1f %%\n", name, level, res->us,
          res->mbps, res->pct);
  free(t);
}

/* ---- raw compressors ---- */

static size_t run_zlib_reset(void *ctx, struct page *p) {
  z_stream *z = ctx;
  deflateReset(z);
  z->next_in = (unsigned char *)p->rec;
  z->avail_in = (uInt)p->rec_len;
  z->next_out = outbuf;
  z->avail_out = (uInt)outcap;
  if (deflate(z, Z_FINISH) != Z_STREAM_END) die("deflate");
  return outcap - z->avail_out;
}

static size_t run_zlib_init(void *ctx, struct page *p) {
  int level = *(int *)ctx;
  z_stream z;
  memset(&z, 0, sizeof z);
  deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  z.next_in = (unsigned char *)p->rec;
  z.avail_in = (uInt)p->rec_len;
  z.next_out = outbuf;
  z.avail_out = (uInt)outcap;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) die("deflate");
  size_t n = outcap - z.avail_out;
  deflateEnd(&z);
  return n;
}

static size_t run_libdeflate(void *ctx, struct page *p) {
  size_t n = libdeflate_gzip_compress(ctx, p->rec, p->rec_len, outbuf, outcap);
  if (!n) die("libdeflate");
  return n;
}

static size_t run_sha1(void *ctx, struct page *p) {
  uint8_t d[KR_SHA1_LEN];
  kr_sha1_t *s = ctx;
  kr_sha1_reset(s);
  kr_sha1_update(s, p->head, p->head_len);
  kr_sha1_update(s, p->body, p->body_len);
  kr_sha1_final(s, d);
  return 0;
}

static size_t run_memcpy(void *ctx, struct page *p) {
  (void)ctx;
  memcpy(outbuf, p->rec, p->rec_len);
  __asm__ volatile("" ::"r"(outbuf) : "memory");
  return 0;
}

/* ---- the writer ---- */

struct wctx {
  kr_warc_writer_t *w;
  size_t bytes;
  kr_warcfile_t *wf;
};

static int count_sink(void *ctx, const kr_slice_t *v, size_t n) {
  struct wctx *c = ctx;
  for (size_t i = 0; i < n; i++) c->bytes += v[i].n;
  return 0;
}

static size_t run_writer(void *ctx, struct page *p) {
  struct wctx *c = ctx;
  kr_warc_rec_t rec = {.type = KR_WARC_RESPONSE, .date_ms = 1795323600123ull,
                       .target_uri = KR_SLICE_LIT("http://h0.test/p/1.html"), .ip = "127.0.0.1",
                       .warcinfo_id = "<urn:uuid:3a7a2f1e-7d5c-4b0e-9a51-1f0e5c9b2f00>",
                       .concurrent_to = "<urn:uuid:3a7a2f1e-7d5c-4b0e-9a51-1f0e5c9b2e00>",
                       .payload = KR_WARC_PAYLOAD_FROM, .payload_from = p->head_len};
  kr_slice_t b[2] = {{p->head, p->head_len}, {p->body, p->body_len}};
  size_t before = c->bytes;
  if (kr_warc_write(c->w, &rec, b, 2, NULL)) die("kr_warc_write");
  return c->bytes - before;
}

/* What a crawled page costs: response, request and metadata records (33
 * outlinks), three gzip members. */
static size_t run_page(void *ctx, struct page *p) {
  struct wctx *c = ctx;
  static const char req[] =
      "GET /p/1.html HTTP/1.1\r\nHost: h0.test\r\nUser-Agent: Mozilla/5.0 (compatible; "
      "kria/0.1.0 +https://example.org/bot)\r\nAccept: text/html,application/xhtml+xml,"
      "application/xml;q=0.9,*/*;q=0.8\r\nAccept-Encoding: gzip, deflate\r\n\r\n";
  static char meta[4096];
  static size_t meta_len;
  if (!meta_len) {
    kr_buf_t b;
    kr_buf_init(&b, sizeof meta - 1);
    kr_warc_outlink_t links[33];
    char urls[33][64];
    for (int i = 0; i < 33; i++) {
      snprintf(urls[i], sizeof urls[i], "http://h0.test/p/%d.html", 100 + i * 37);
      links[i] = (kr_warc_outlink_t){kr_slice_cstr(urls[i]), i < 30 ? 'L' : 'E',
                                     KR_SLICE_LIT("a/@href")};
    }
    kr_warc_field_t ann[] = {{"contentState", KR_SLICE_LIT("changed")},
                             {"waitInterval", KR_SLICE_LIT("43200000")}};
    kr_warc_meta_t m = {.via = KR_SLICE_LIT("http://h0.test/p/0.html"),
                        .hops_from_seed = KR_SLICE_LIT("LL"), .fetch_time_ms = 3,
                        .outlinks = links, .noutlinks = 33, .annotations = ann,
                        .nannotations = 2};
    if (kr_warc_metadata_block(&b, &m)) die("metadata block");
    memcpy(meta, b.data, b.len);
    meta_len = b.len;
    kr_buf_free(&b);
  }
  size_t before = c->bytes;
  run_writer(ctx, p);
  kr_warc_rec_t rq = {.type = KR_WARC_REQUEST, .date_ms = 1795323600123ull,
                      .target_uri = KR_SLICE_LIT("http://h0.test/p/1.html"), .ip = "127.0.0.1",
                      .warcinfo_id = "<urn:uuid:3a7a2f1e-7d5c-4b0e-9a51-1f0e5c9b2f00>",
                      .concurrent_to = "<urn:uuid:3a7a2f1e-7d5c-4b0e-9a51-1f0e5c9b2e00>"};
  kr_slice_t qb = {req, sizeof req - 1};
  if (kr_warc_write(c->w, &rq, &qb, 1, NULL)) die("request");
  kr_warc_rec_t md = rq;
  md.id[0] = '\0';
  md.type = KR_WARC_METADATA;
  kr_slice_t mb = {meta, meta_len};
  if (kr_warc_write(c->w, &md, &mb, 1, NULL)) die("metadata");
  return c->bytes - before;
}

static size_t run_file(void *ctx, struct page *p) {
  struct wctx *c = ctx;
  kr_warc_rec_t rec = {.type = KR_WARC_RESPONSE, .date_ms = 1795323600123ull,
                       .target_uri = KR_SLICE_LIT("http://h0.test/p/1.html"), .ip = "127.0.0.1",
                       .payload = KR_WARC_PAYLOAD_FROM, .payload_from = p->head_len};
  kr_slice_t b[2] = {{p->head, p->head_len}, {p->body, p->body_len}};
  kr_warcfile_loc_t loc;
  if (kr_warcfile_write(c->wf, &rec, b, 2, &loc)) die(kr_warcfile_errmsg(c->wf));
  return loc.length;
}

static void writer_run(const char *name, int gzip, int engine, int level) {
  struct wctx c = {0};
  kr_warc_writer_opts_t o;
  kr_warc_writer_opts_default(&o);
  o.gzip = gzip;
  o.engine = engine;
  o.level = level;
  if (kr_warc_writer_new(&o, count_sink, &c, &c.w)) die("writer");
  measure(name, gzip ? level : 0, strncmp(name, "page", 4) ? run_writer : run_page, &c);
  kr_warc_writer_free(c.w);
}

int main(int argc, char **argv) {
  const char *dir = NULL, *tsv = NULL, *tmp = NULL;
  int n = 1000, opt;
  while ((opt = getopt(argc, argv, "d:n:r:t:w:")) != -1) {
    switch (opt) {
    case 'd': dir = optarg; break;
    case 'n': n = atoi(optarg); break;
    case 'r': reps = atoi(optarg); break;
    case 't': tsv = optarg; break;
    case 'w': tmp = optarg; break;
    default: die("usage: bench_warc -d SITE_DIR [-n N] [-r R] [-t TSV] [-w TMPDIR]");
    }
  }
  if (!dir || n < 1 || n > 100000 || reps < 1 || reps > 99) die("bad options");
  load(dir, n);
  size_t body = 0;
  for (int i = 0; i < npages; i++) total_rec_bytes += pages[i].rec_len, body += pages[i].body_len;
  fprintf(stderr, "bench_warc: %d pages, %.0f bytes of body and %.0f of record on average\n",
          npages, (double)body / npages, (double)total_rec_bytes / npages);

  /* warm up caches and the CPU */
  for (int i = 0; i < 3; i++) run_memcpy(NULL, &pages[i % npages]);
  kr_sha1_t s;
  kr_sha1_init(&s);
  measure("part: SHA-1 of block", 0, run_sha1, &s);
  kr_sha1_free(&s);
  measure("part: memcpy of record", 0, run_memcpy, NULL);
  static const int levels[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (size_t k = 0; k < sizeof levels / sizeof *levels; k++) {
    int lvl = levels[k];
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, lvl, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
    measure("raw: zlib deflateReset", lvl, run_zlib_reset, &z);
    deflateEnd(&z);
    if (lvl == 1 || lvl == 6) measure("raw: zlib init/end", lvl, run_zlib_init, &lvl);
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(lvl);
    measure("raw: libdeflate", lvl, run_libdeflate, c);
    libdeflate_free_compressor(c);
  }
  writer_run("writer: plain", 0, 0, 1);
  for (size_t k = 0; k < sizeof levels / sizeof *levels; k++) {
    writer_run("writer: libdeflate", 1, KR_WARC_ENGINE_LIBDEFLATE, levels[k]);
    writer_run("writer: zlib", 1, KR_WARC_ENGINE_ZLIB, levels[k]);
    writer_run("writer: igzip", 1, KR_WARC_ENGINE_IGZIP, levels[k]);
  }
  writer_run("page: 3 records, plain", 0, 0, 1);
  writer_run("page: 3 records, igzip", 1, KR_WARC_ENGINE_IGZIP, 1);
  writer_run("page: 3 records, libdeflate", 1, KR_WARC_ENGINE_LIBDEFLATE, 1);
  writer_run("page: 3 records, libdeflate", 1, KR_WARC_ENGINE_LIBDEFLATE, 6);
  writer_run("page: 3 records, zlib", 1, KR_WARC_ENGINE_ZLIB, 1);
  writer_run("page: 3 records, zlib", 1, KR_WARC_ENGINE_ZLIB, 6);
  if (tmp) {
    for (int gz = 0; gz < 2; gz++) {
      kr_warcfile_opts_t o;
      kr_warcfile_opts_default(&o);
      o.dir = tmp;
      o.prefix = "bench";
      o.writer.gzip = gz;
      o.max_size = 256u << 20;
      struct wctx c = {0};
      char err[256];
      if (kr_warcfile_open(&o, &c.wf, err, sizeof err)) die(err);
      measure(gz ? "file: warcfile gzip" : "file: warcfile plain", gz ? o.writer.level : 0,
              run_file, &c);
      if (kr_warcfile_close(c.wf)) die("close");
    }
  }

  printf("| what | level | µs/record | MB/s | size |\n|---|---:|---:|---:|---:|\n");
  for (int i = 0; i < nresults; i++) {
    struct result *r = &results[i];
    char lv[8] = "–", sz[16] = "–";
    if (r->level) snprintf(lv, sizeof lv, "%d", r->level);
    if (r->pct > 0) snprintf(sz, sizeof sz, "%.1f %%", r->pct);
    printf("| %s | %s | %.1f | %.0f | %s |\n", r->name, lv, r->us, r->mbps, sz);
  }
  if (tsv) {
    FILE *f = fopen(tsv, "w");
    if (!f) die("cannot write the TSV");
    fprintf(f, "what\tlevel\tus_per_record\tmb_per_s\tsize_pct\n");
    for (int i = 0; i < nresults; i++)
      fprintf(f, "%s\t%d\t%.2f\t%.1f\t%.2f\n", results[i].name, results[i].level, results[i].us,
              results[i].mbps, results[i].pct);
    fclose(f);
  }
  for (int i = 0; i < npages; i++) {
    free(pages[i].head);
    free(pages[i].body);
    free(pages[i].rec);
  }
  free(pages);
  free(outbuf);
  return 0;
}
