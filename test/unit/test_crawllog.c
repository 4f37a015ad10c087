/*
 * Unit tests for crawl.log: lines byte-exact against Heritrix's own
 * examples (the heritrix3 wiki "Logs" page) and hand-written lines for
 * failures, seeds, MIME truncation and wide values; revisit lines as
 * Heritrix 3 writes them, read the way third-party parsers read them
 * (the British Library's CrawlLogLine, the DeDuplicator's
 * CrawlLogIterator); escaping so no URL
 * can add a column or a line; the status-code maps; and the writer with a
 * temp state dir: nothing written before a flush is due, flush by line
 * count, by age (tick) and by buffer size, far fewer write(2) calls than
 * lines, over-long lines, reopen after rotation (call and signal flag),
 * and write errors (/dev/full) dropping and counting lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crawllog.h"
#include "kria/error.h"
#include "helpers.h"

/* Epoch ms of a UTC time. */
static uint64_t ms_of(int y, int mo, int d, int h, int mi, int s, int ms) {
  struct tm tm = {0};
  tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
  tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = s;
  return (uint64_t)timegm(&tm) * 1000 + (uint64_t)ms;
}

static const char *fmt(const kr_crawllog_entry_t *e) {
  static char out[4096];
  kr_buf_t b;
  kr_buf_init(&b, sizeof out - 1);
  assert_int_equal(kr_crawllog_format(e, &b), 0);
  memcpy(out, b.data, b.len + 1);
  kr_buf_free(&b);
  return out;
}

#define S(x) kr_slice_cstr(x)

static void heritrix_wiki_examples(void **state) {
  (void)state;
  /* Both lines of the heritrix3 wiki's crawl.log extract. */
  kr_crawllog_entry_t e = {0};
  e.log_ms = ms_of(2011, 6, 23, 17, 12, 8, 802);
  e.status = 200;
  e.size = 1299;
  e.uri = S("http://content-5.powells.com/robots.txt");
  e.hops = S("LREP");
  e.via = S("http://content-5.powells.com/cgi-bin/imageDB.cgi?isbn=9780385518635");
  e.mime = S("text/plain");
  e.worker = 14;
  e.fetch_ms = ms_of(2011, 6, 23, 17, 12, 8, 574);
  e.duration_ms = 225;
  e.digest = S("sha1:YIUOKDGOLGI5JYHDTXRFFQ5FF4N2EJRV");
  assert_string_equal(fmt(&e),
                      "2011-06-23T17:12:08.802Z   200       1299 "
                      "http://content-5.powells.com/robots.txt LREP "
                      "http://content-5.powells.com/cgi-bin/imageDB.cgi?isbn=9780385518635 "
                      "text/plain #014 20110623171208574+225 "
                      "sha1:YIUOKDGOLGI5JYHDTXRFFQ5FF4N2EJRV - -\n");

  kr_crawllog_entry_t f = {0};
  f.log_ms = ms_of(2011, 6, 23, 17, 12, 9, 591);
  f.status = 200;
  f.size = 15829;
  f.uri = S("http://www.identitytheory.com/etexts/poetics.html");
  f.hops = S("L");
  f.via = S("http://www.identitytheory.com/");
  f.mime = S("text/html; charset=iso-8859-1");
  f.worker = 25;
  f.fetch_ms = ms_of(2011, 6, 23, 17, 12, 8, 546);
  f.duration_ms = 922;
  f.digest = S("sha1:7AJUMSDTOMT4FN7MBFGGNJU3Z56MLCMW");
  assert_string_equal(fmt(&f),
                      "2011-06-23T17:12:09.591Z   200      15829 "
                      "http://www.identitytheory.com/etexts/poetics.html L "
                      "http://www.identitytheory.com/ text/html #025 20110623171208546+922 "
                      "sha1:7AJUMSDTOMT4FN7MBFGGNJU3Z56MLCMW - -\n");
}

static void seeds_failures_and_wide_values(void **state) {
  (void)state;
  /* A seed: no hop path, no via; annotations. */
  kr_crawllog_entry_t e = {0};
  e.log_ms = ms_of(2026, 11, 22, 10, 11, 12, 345);
  e.status = 301;
  e.size = 0;
  e.uri = S("http://example.org/");
  e.mime = S("text/html");
  e.worker = 3;
  e.fetch_ms = ms_of(2026, 11, 22, 10, 11, 12, 293);
  e.duration_ms = 52;
  e.digest = S("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
  kr_slice_t ann[] = {S("3t"), S(""), S("duplicate:digest")};
  e.annotations = ann;
  e.n_annotations = 3;
  assert_string_equal(fmt(&e), "2026-11-22T10:11:12.345Z   301          0 http://example.org/ - - "
                               "text/html #003 20261122101112293+52 "
                               "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ - 3t,duplicate:digest\n");

  /* A connect failure: no size, no response, no fetch time. */
  kr_crawllog_entry_t f = {0};
  f.log_ms = ms_of(2026, 1, 2, 3, 4, 5, 6);
  f.status = kr_crawllog_status_of_error(KR_ECONNREFUSED);
  f.size = -1;
  f.uri = S("http://down.example/a");
  f.hops = S("LL");
  f.via = S("http://example.org/");
  f.worker = 1234;
  kr_slice_t fa[] = {S("err:conn-refused")};
  f.annotations = fa;
  f.n_annotations = 1;
  assert_string_equal(fmt(&f), "2026-01-02T03:04:05.006Z    -2          - http://down.example/a LL "
                               "http://example.org/ unknown #1234 - - - err:conn-refused\n");

  /* Robots and scope codes fill the status column; a wide size is not
   * cut; a Content-Type that starts with ';' has no type. */
  f.status = KR_S_ROBOTS_PRECLUDED;
  f.size = 12345678901LL;
  f.mime = S(";charset=utf-8");
  f.n_annotations = 0;
  f.source = S("tag1");
  assert_string_equal(fmt(&f), "2026-01-02T03:04:05.006Z -9998 12345678901 http://down.example/a LL "
                               "http://example.org/ no-type #1234 - - tag1 -\n");
  f.status = kr_crawllog_status_of_scope(KR_SCOPE_R_HOPS, 0);
  f.mime = S("");
  f.size = -1;
  f.source = S("");
  assert_string_equal(fmt(&f), "2026-01-02T03:04:05.006Z -4001          - http://down.example/a LL "
                               "http://example.org/ no-type #1234 - - - -\n");
  /* Leap day, end of year, the epoch. */
  f.log_ms = ms_of(2024, 2, 29, 23, 59, 59, 999);
  f.fetch_ms = ms_of(2023, 12, 31, 23, 59, 59, 1);
  f.duration_ms = 86400000;
  f.status = 200;
  f.mime = S("image/png");
  const char *l = fmt(&f);
  assert_memory_equal(l, "2024-02-29T23:59:59.999Z   200", 30);
  assert_non_null(strstr(l, " image/png #1234 20231231235959001+86400000 - - -\n"));
  f.log_ms = 0;
  assert_memory_equal(fmt(&f), "1970-01-01T00:00:00.000Z", 24);
}

/* Whitespace-separated fields, as awk or a CDX tool would split. */
static int count_fields(const char *line) {
  int n = 0, in = 0;
  for (const char *p = line; *p; p++) {
    int sp = *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r';
    if (!sp && !in) n++;
    in = !sp;
  }
  return n;
}

static void escaping_keeps_columns(void **state) {
  (void)state;
  kr_crawllog_entry_t e = {0};
  e.log_ms = ms_of(2026, 11, 22, 10, 11, 12, 345);
  e.status = 200;
  e.size = 5;
  e.uri = kr_slice("http://x.org/a b\tc\nd\re\x01\x7f\xc3\xa9", 26);
  e.hops = S("L");
  e.via = S("http://x.org/with space");
  e.mime = S("text/html\x01x");
  kr_slice_t ann[] = {S("a,b c"), S("ok")};
  e.annotations = ann;
  e.n_annotations = 2;
  e.source = S("s p");
  const char *l = fmt(&e);
  assert_string_equal(l, "2026-11-22T10:11:12.345Z   200          5 "
                         "http://x.org/a%20b%09c%0Ad%0De%01%7F%C3%A9 L http://x.org/with%20space "
                         "text/html #000 - - s%20p a%2Cb%20c,ok\n");
  assert_int_equal(count_fields(l), 12);
  assert_int_equal(strchr(l, '\n') - l, (long)strlen(l) - 1);
}

/* line split as Python's re.split(" +", line.strip(), maxsplit=11): at
 * most 12 fields, the last one the rest of the line. */
static int split12(const char *line, char f[12][512]) {
  int n = 0;
  const char *p = line;
  while (*p == ' ') p++;
  while (*p && *p != '\n' && n < 12) {
    const char *q = p;
    if (n < 11)
      while (*q && *q != ' ' && *q != '\n') q++;
    else
      while (*q && *q != '\n') q++;
    size_t len = (size_t)(q - p) < 511 ? (size_t)(q - p) : 511;
    memcpy(f[n], p, len);
    f[n++][len] = '\0';
    p = q;
    while (*p == ' ') p++;
  }
  return n;
}

/* Revisit lines as Heritrix 3 writes them and as third-party crawl.log
 * readers take them apart. Where each expectation comes from:
 *  [H] Heritrix 3, engine/.../crawler/io/UriProcessingFormatter.java (the
 *      columns, their padding, ',' between annotations) with
 *      modules/.../recrawl/FetchHistoryProcessor.java (a 304 after a
 *      capture with a digest: "duplicate:server-not-modified"; the same
 *      digest as the last fetch: "duplicate:digest") and CrawlURI.java
 *      (content type "unknown" until a response sets one; a response
 *      without Content-Type sets null, which is "unknown" again);
 *  [U] the British Library's Python CrawlLogLine (ukwa, "Parsers Heritrix3
 *      format log files"): re.split(" +", line, maxsplit=11) into
 *      timestamp, status_code, content_length, url, hop_path, via, mime,
 *      thread, start_time_plus_duration, hash, source, annotations; the
 *      annotations split on ','; "-" as content length is None; the hop
 *      is the path's last letter; "Nt" annotations are tries;
 *  [D] the DeDuplicator's CrawlLogIterator (Landsbokasafn/deduplicator,
 *      which indexes a crawl.log for Heritrix's deduplication): a line
 *      longer than 42 characters split on whitespace into at most 13
 *      parts, at least 10; status Integer.parseInt(parts[1]), lines with
 *      status <= 0 skipped; parts[8] up to '+' parsed as a 17-digit date;
 *      parts[9] the digest; parts[11] matched against a revisit marker
 *      regex; parts[12], when present, JSON extra info. */
static void revisit_lines_as_parsers_read_them(void **state) {
  (void)state;
  /* a 304 to a conditional request: no body, no Content-Type */
  kr_crawllog_entry_t e = {0};
  e.log_ms = ms_of(2026, 11, 22, 10, 11, 12, 345);
  e.status = 304;
  e.size = 0;                       /* [H] getContentLength(): no body */
  e.uri = S("http://example.org/a");
  e.hops = S("LL");
  e.via = S("http://example.org/");
  e.mime = kr_slice(NULL, 0);       /* [H] no Content-Type: "unknown" */
  e.worker = 7;
  e.fetch_ms = ms_of(2026, 11, 22, 10, 11, 12, 293);
  e.duration_ms = 52;
  e.digest = S("sha1:7AJUMSDTOMT4FN7MBFGGNJU3Z56MLCMW");
  kr_slice_t ann[] = {S("duplicate:server-not-modified"), S("notModified"), S("3t"),
                      S("wt:20s0ms")};
  e.annotations = ann;
  e.n_annotations = 4;
  const char *l = fmt(&e);
  assert_string_equal(l, "2026-11-22T10:11:12.345Z   304          0 http://example.org/a LL "
                         "http://example.org/ unknown #007 20261122101112293+52 "
                         "sha1:7AJUMSDTOMT4FN7MBFGGNJU3Z56MLCMW - "
                         "duplicate:server-not-modified,notModified,3t,wt:20s0ms\n");
  char f[12][512];
  /* [U] twelve fields, each the column it names */
  assert_int_equal(split12(l, f), 12);
  assert_string_equal(f[0], "2026-11-22T10:11:12.345Z");
  assert_string_equal(f[1], "304");
  assert_string_equal(f[2], "0");   /* a number, not None */
  assert_string_equal(f[3], "http://example.org/a");
  assert_int_equal(f[4][strlen(f[4]) - 1], 'L'); /* the hop: the last letter */
  assert_string_equal(f[5], "http://example.org/");
  assert_string_equal(f[6], "unknown");
  assert_string_equal(f[7], "#007");
  assert_string_equal(f[8], "20261122101112293+52");
  assert_string_equal(f[9], "sha1:7AJUMSDTOMT4FN7MBFGGNJU3Z56MLCMW");
  assert_string_equal(f[10], "-");
  /* [U] annotations split on ',': the revisit first, the tries counted */
  assert_memory_equal(f[11], "duplicate:server-not-modified,", 30);
  assert_non_null(strstr(f[11], ",3t,"));
  /* [D] over 42 characters; status > 0 so indexed; the fetch began at
   * the 17 digits before '+'; the digest with its "sha1:" scheme; no
   * 13th part (no JSON extra info) */
  assert_true(strlen(l) > 42);
  assert_true(atoi(f[1]) > 0);
  assert_int_equal(strchr(f[8], '+') - f[8], 17);
  assert_int_equal(count_fields(l), 12);

  /* the same payload as the last capture: [H] "duplicate:digest" */
  e.status = 200;
  e.size = 4096;
  e.mime = S("text/html; charset=utf-8");
  kr_slice_t dig[] = {S("duplicate:digest"), S("unchanged")};
  e.annotations = dig;
  e.n_annotations = 2;
  l = fmt(&e);
  assert_int_equal(split12(l, f), 12);
  assert_string_equal(f[2], "4096");
  assert_string_equal(f[6], "text/html");
  assert_string_equal(f[11], "duplicate:digest,unchanged");

  /* no response: [U] "-" as the size is None; [D] status <= 0 skipped */
  kr_crawllog_entry_t g = {0};
  g.log_ms = e.log_ms;
  g.status = KR_S_CONNECT_FAILED;
  g.size = -1;
  g.uri = S("http://down.example/");
  l = fmt(&g);
  assert_int_equal(split12(l, f), 12);
  assert_string_equal(f[1], "-2");
  assert_string_equal(f[2], "-");
  assert_string_equal(f[6], "unknown");
  assert_string_equal(f[8], "-");
  assert_true(atoi(f[1]) <= 0);
}

/* The numeric columns are written without printf: over edge and random
 * values they must read as printf's "%5d", "%10s", "#%03u", "%03u+%llu"
 * would write them. */
static void numbers_as_printf_writes_them(void **state) {
  (void)state;
  static const int statuses[] = {0, 1, 200, 304, -1, -2, -404, -5005, -9998, 99999, 100000,
                                 -99999, 2147483647, -2147483647 - 1};
  static const int64_t sizes[] = {-1, -7, 0, 9, 999999999, 1000000000, 12345678901,
                                  INT64_MAX};
  static const unsigned workers[] = {0, 7, 99, 999, 1000, 4294967295u};
  static const uint64_t durs[] = {0, 1, 999, 1000, 18446744073709551615ull};
  uint64_t base = ms_of(2026, 11, 22, 10, 11, 12, 0);
  unsigned seed = 12345;
  int n = 0;
  for (int i = 0; i < 4000; i++) {
    seed = seed * 1103515245u + 12345u;
    kr_crawllog_entry_t e = {0};
    e.log_ms = base + seed % 5000;
    e.status = i < 14 ? statuses[i % 14] : (int)(seed >> 4) % 20000 - 10000;
    e.size = sizes[i % 8] == INT64_MAX && i > 8 ? (int64_t)(seed % 100000) : sizes[i % 8];
    e.uri = S("http://a.test/");
    e.worker = i < 6 ? workers[i] : seed % 2000;
    e.fetch_ms = i % 3 ? e.log_ms - seed % 1500 : 0;
    e.duration_ms = i < 5 ? durs[i] : seed % 3000;
    char size[24], want[512];
    if (e.size >= 0)
      snprintf(size, sizeof size, "%lld", (long long)e.size);
    else
      strcpy(size, "-");
    time_t t = (time_t)(e.log_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char iso[32];
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
    int k = snprintf(want, sizeof want, "%s.%03uZ %5d %10s http://a.test/ - - unknown #%03u ", iso,
                     (unsigned)(e.log_ms % 1000), e.status, size, e.worker);
    if (e.fetch_ms) {
      time_t ft = (time_t)(e.fetch_ms / 1000);
      gmtime_r(&ft, &tm);
      char d14[20];
      strftime(d14, sizeof d14, "%Y%m%d%H%M%S", &tm);
      k += snprintf(want + k, sizeof want - (size_t)k, "%s%03u+%llu ", d14,
                    (unsigned)(e.fetch_ms % 1000), (unsigned long long)e.duration_ms);
    } else {
      k += snprintf(want + k, sizeof want - (size_t)k, "- ");
    }
    snprintf(want + k, sizeof want - (size_t)k, "- - -\n");
    assert_string_equal(fmt(&e), want);
    n++;
  }
  printf("# %d lines as printf writes them\n", n);
}

static void status_maps(void **state) {
  (void)state;
  static const struct { int err, status; } v[] = {
      {0, 0},
      {KR_EDNS_NXDOMAIN, -1}, {KR_EDNS_NODATA, -1}, {KR_EDNS_TIMEOUT, -1}, {KR_EDNS_FAIL, -1},
      {KR_ECONNREFUSED, -2}, {KR_EUNREACH, -2}, {KR_ECONNECT_TIMEOUT, -2}, {KR_ETLS, -2},
      {KR_ETLS_VERIFY, -2},
      {KR_ECONNRESET, -3}, {KR_ENET, -3}, {KR_ETRUNCATED, -3}, {KR_EEMPTY_REPLY, -3},
      {KR_EFIRSTBYTE_TIMEOUT, -4}, {KR_EIDLE_TIMEOUT, -4}, {KR_ETOTAL_TIMEOUT, -4},
      {KR_EPROTO, -5}, {KR_EHEADER_TOO_BIG, -5}, {KR_ENOMEM, -5},
      {KR_EURL, -7}, {KR_ESCHEME, -7},
      {KR_EROBOTS, -61},
      {KR_EADDR_REFUSED, -5005},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    assert_int_equal(kr_crawllog_status_of_error(v[i].err), v[i].status);
  assert_int_equal(kr_crawllog_status_of_scope(KR_SCOPE_R_HOPS, 0), -4001);
  assert_int_equal(kr_crawllog_status_of_scope(KR_SCOPE_R_TRANS_HOPS, 0), -4002);
  assert_int_equal(kr_crawllog_status_of_scope(KR_SCOPE_R_TRAP, 0), -4000);
  assert_int_equal(kr_crawllog_status_of_scope(KR_SCOPE_R_OUT_OF_SCOPE, 0), -5000);
  assert_int_equal(kr_crawllog_status_of_scope(KR_SCOPE_R_EXCLUDE, 0), -5000);
  assert_int_equal(kr_crawllog_status_of_scope(KR_SCOPE_R_IN_SCOPE, 1), 0);
}

/* ---- writer ---- */

static char dir[64];

static int setup_dir(void **state) {
  (void)state;
  return th_tmpdir(dir, sizeof dir, "crawllog");
}

static int teardown_dir(void **state) {
  (void)state;
  return th_rmtree(dir) == 0 ? 0 : -1;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char buf[1 << 22];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static kr_crawllog_entry_t entry(uint64_t log_ms, unsigned i, char *uri, size_t urisz) {
  kr_crawllog_entry_t e = {0};
  snprintf(uri, urisz, "http://example.org/page/%u", i);
  e.log_ms = log_ms;
  e.status = 200;
  e.size = 1000 + i;
  e.uri = kr_slice_cstr(uri);
  e.hops = S("L");
  e.via = S("http://example.org/");
  e.mime = S("text/html");
  e.worker = i % 8;
  e.fetch_ms = log_ms - 10;
  e.duration_ms = 10;
  e.digest = S("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
  return e;
}

static void flush_by_lines_and_age(void **state) {
  (void)state;
  kr_crawllog_opts_t o;
  kr_crawllog_opts_init(&o);
  o.flush_lines = 100;
  o.flush_ms = 1000;
  kr_crawllog_t *l;
  assert_int_equal(kr_crawllog_open(dir, &o, &l), 0);
  char path[256];
  snprintf(path, sizeof path, "%s", kr_crawllog_path(l));
  unlink(path); /* start empty */
  assert_int_equal(kr_crawllog_reopen(l), 0);
  char want[256];
  snprintf(want, sizeof want, "%s/logs/crawl.log", dir);
  assert_string_equal(path, want);
  assert_int_equal(file_size(path), 0);

  uint64_t t = ms_of(2026, 11, 22, 10, 0, 0, 0);
  char uri[64];
  kr_buf_t expect;
  kr_buf_init(&expect, 1 << 20);
  for (unsigned i = 0; i < 10; i++) {
    kr_crawllog_entry_t e = entry(t + i, i, uri, sizeof uri);
    assert_int_equal(kr_crawllog_write(l, &e), 0);
    assert_int_equal(kr_crawllog_format(&e, &expect), 0);
  }
  assert_int_equal(file_size(path), 0); /* buffered */
  assert_int_equal(kr_crawllog_tick(l, t + 999), 0);
  assert_int_equal(file_size(path), 0); /* the oldest is 999 ms old */
  assert_int_equal(kr_crawllog_tick(l, t + 1000), 0);
  assert_string_equal(slurp(path), expect.data);
  kr_crawllog_stats_t st;
  kr_crawllog_get_stats(l, &st);
  assert_int_equal(st.writes, 1);
  assert_int_equal(st.lines, 10);

  /* The 100th waiting line writes them all. */
  for (unsigned i = 10; i < 109; i++) {
    kr_crawllog_entry_t e = entry(t + 2000, i, uri, sizeof uri);
    assert_int_equal(kr_crawllog_write(l, &e), 0);
    assert_int_equal(kr_crawllog_format(&e, &expect), 0);
  }
  assert_int_equal(file_size(path), (long)expect.len - (long)(expect.len - strlen(slurp(path))));
  kr_crawllog_get_stats(l, &st);
  assert_int_equal(st.writes, 1);
  kr_crawllog_entry_t e = entry(t + 2000, 109, uri, sizeof uri);
  assert_int_equal(kr_crawllog_write(l, &e), 0);
  assert_int_equal(kr_crawllog_format(&e, &expect), 0);
  kr_crawllog_get_stats(l, &st);
  assert_int_equal(st.writes, 2);
  assert_string_equal(slurp(path), expect.data);
  assert_int_equal(st.bytes, expect.len);
  assert_int_equal(kr_crawllog_close(l), 0);
  kr_buf_free(&expect);
  unlink(path);
}

static void flush_by_buffer_size(void **state) {
  (void)state;
  kr_crawllog_opts_t o;
  kr_crawllog_opts_init(&o); /* 64 KiB, 1000 lines */
  kr_crawllog_t *l;
  assert_int_equal(kr_crawllog_open(dir, &o, &l), 0);
  char path[256];
  snprintf(path, sizeof path, "%s", kr_crawllog_path(l));
  unlink(path); /* start empty */
  assert_int_equal(kr_crawllog_reopen(l), 0);
  uint64_t t = ms_of(2026, 11, 22, 10, 0, 0, 0);
  char uri[64];
  kr_buf_t expect;
  kr_buf_init(&expect, 8 << 20);
  const unsigned n = 20000;
  for (unsigned i = 0; i < n; i++) {
    kr_crawllog_entry_t e = entry(t + i / 10, i, uri, sizeof uri);
    assert_int_equal(kr_crawllog_write(l, &e), 0);
    assert_int_equal(kr_crawllog_format(&e, &expect), 0);
    /* Only whole lines ever reach the file, never more than 64 KiB late. */
    long sz = file_size(path);
    assert_true(sz == 0 || ((const char *)expect.data)[sz - 1] == '\n');
    assert_true((long)expect.len - sz <= 64 * 1024);
  }
  assert_int_equal(kr_crawllog_flush(l), 0);
  kr_crawllog_stats_t st;
  kr_crawllog_get_stats(l, &st);
  printf("# %u lines, %llu bytes in %llu write(2) calls\n", n, (unsigned long long)st.bytes,
         (unsigned long long)st.writes);
  assert_true(st.writes <= n / 200);
  assert_string_equal(slurp(path), expect.data);

  /* A line longer than the buffer goes out on its own, after the lines
   * before it. */
  kr_crawllog_close(l);
  unlink(path);
  o.buffer_size = 512;
  assert_int_equal(kr_crawllog_open(dir, &o, &l), 0);
  kr_buf_reset(&expect);
  kr_crawllog_entry_t e = entry(t, 1, uri, sizeof uri);
  assert_int_equal(kr_crawllog_write(l, &e), 0);
  assert_int_equal(kr_crawllog_format(&e, &expect), 0);
  char big[3000];
  memset(big, 'a', sizeof big);
  memcpy(big, "http://example.org/", 19);
  kr_crawllog_entry_t b = e;
  b.uri = kr_slice(big, sizeof big);
  assert_int_equal(kr_crawllog_write(l, &b), 0);
  assert_int_equal(kr_crawllog_format(&b, &expect), 0);
  assert_string_equal(slurp(path), expect.data);
  /* Over 1 MiB: dropped and counted. */
  size_t hn = 1 << 20;
  char *huge = malloc(hn);
  memset(huge, 'h', hn);
  b.uri = kr_slice(huge, hn);
  assert_int_equal(kr_crawllog_write(l, &b), KR_ETOOBIG);
  kr_crawllog_get_stats(l, &st);
  assert_int_equal(st.dropped, 1);
  free(huge);
  assert_int_equal(kr_crawllog_close(l), 0);
  assert_string_equal(slurp(path), expect.data);
  kr_buf_free(&expect);
  unlink(path);
}

static void reopen_after_rotation(void **state) {
  (void)state;
  kr_crawllog_t *l;
  assert_int_equal(kr_crawllog_open(dir, NULL, &l), 0);
  char path[256];
  snprintf(path, sizeof path, "%s", kr_crawllog_path(l));
  unlink(path); /* start empty */
  assert_int_equal(kr_crawllog_reopen(l), 0);
  char rotated[300];
  snprintf(rotated, sizeof rotated, "%s.1", path);
  uint64_t t = ms_of(2026, 11, 22, 10, 0, 0, 0);
  char uri[64];
  kr_crawllog_entry_t e = entry(t, 1, uri, sizeof uri);
  assert_int_equal(kr_crawllog_write(l, &e), 0);
  assert_int_equal(rename(path, rotated), 0); /* logrotate moves it */
  e = entry(t, 2, uri, sizeof uri);
  assert_int_equal(kr_crawllog_write(l, &e), 0);
  assert_int_equal(kr_crawllog_reopen(l), 0); /* flushes 1 and 2 into the old file */
  e = entry(t, 3, uri, sizeof uri);
  assert_int_equal(kr_crawllog_write(l, &e), 0);
  assert_int_equal(kr_crawllog_flush(l), 0);
  assert_non_null(strstr(slurp(rotated), "/page/1 "));
  assert_non_null(strstr(slurp(rotated), "/page/2 "));
  assert_null(strstr(slurp(rotated), "/page/3 "));
  assert_non_null(strstr(slurp(path), "/page/3 "));
  assert_null(strstr(slurp(path), "/page/2 "));

  /* The signal-handler way: a flag applied at the next tick. */
  assert_int_equal(rename(path, rotated), 0);
  e = entry(t, 4, uri, sizeof uri);
  assert_int_equal(kr_crawllog_write(l, &e), 0);
  kr_crawllog_request_reopen(l);
  assert_int_equal(kr_crawllog_tick(l, t), 0); /* too young to flush, but reopens */
  e = entry(t, 5, uri, sizeof uri);
  assert_int_equal(kr_crawllog_write(l, &e), 0);
  assert_int_equal(kr_crawllog_close(l), 0);
  assert_non_null(strstr(slurp(rotated), "/page/4 "));
  assert_non_null(strstr(slurp(path), "/page/5 "));
  assert_null(strstr(slurp(path), "/page/4 "));
  unlink(path);
  unlink(rotated);
}

static void write_errors_drop_and_count(void **state) {
  (void)state;
  char logs[128], path[160];
  snprintf(logs, sizeof logs, "%s/logs", dir);
  mkdir(logs, 0755);
  snprintf(path, sizeof path, "%s/crawl.log", logs);
  unlink(path);
  if (symlink("/dev/full", path) != 0) skip();
  kr_crawllog_opts_t o;
  kr_crawllog_opts_init(&o);
  o.flush_lines = 5;
  kr_crawllog_t *l;
  if (kr_crawllog_open(dir, &o, &l) != 0) {
    unlink(path);
    skip();
  }
  uint64_t t = ms_of(2026, 11, 22, 10, 0, 0, 0);
  char uri[64];
  int errors = 0;
  for (unsigned i = 0; i < 12; i++) {
    kr_crawllog_entry_t e = entry(t, i, uri, sizeof uri);
    int rc = kr_crawllog_write(l, &e);
    assert_true(rc == 0 || rc == KR_EIO);
    errors += rc == KR_EIO;
  }
  assert_int_equal(errors, 2);
  kr_crawllog_stats_t st;
  kr_crawllog_get_stats(l, &st);
  assert_int_equal(st.dropped, 10);
  assert_int_equal(st.last_errno, ENOSPC);
  assert_int_equal(kr_crawllog_close(l), KR_EIO); /* the last 2 */
  unlink(path);

  /* A state dir that cannot hold logs/. */
  char bad[160];
  snprintf(bad, sizeof bad, "%s/no/such/dir", dir);
  assert_int_equal(kr_crawllog_open(bad, NULL, &l), KR_EIO);
  assert_null(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(heritrix_wiki_examples),
      cmocka_unit_test(seeds_failures_and_wide_values),
      cmocka_unit_test(escaping_keeps_columns),
      cmocka_unit_test(revisit_lines_as_parsers_read_them),
      cmocka_unit_test(numbers_as_printf_writes_them),
      cmocka_unit_test(status_maps),
      cmocka_unit_test(flush_by_lines_and_age),
      cmocka_unit_test(flush_by_buffer_size),
      cmocka_unit_test(reopen_after_rotation),
      cmocka_unit_test(write_errors_drop_and_count),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
