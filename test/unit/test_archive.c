/* The archive service alone (src/archive/archive.h), on a temporary
 * directory with a real loop and store: exchanges for a response, an
 * identical payload under another URI (a revisit referring to the first,
 * with adaptive.dedupe), a 304 (server-not-modified), a volatile visit
 * skipped, a dns record and a large body written in slices; the files are
 * read back with the pure WARC reader: record types, headers, digests,
 * and the originals the store keeps. Then the thin WARC processor
 * (src/crawl/proc_warc.c) in a real chain with a fake fetch: its capture
 * holds the chain's raw level, and its "warc" processor turns a fetch into
 * the same records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "crawl.h"
#include "helpers.h"
#include "kria/digest.h"
#include "kria/error.h"
#include "kria/fp.h"
#include "kria/warc.h"
#include "log.h"
#include "procs.h"
#include "store.h"

static char tmpdir[256];
static char sdir[300], wdir[300];

static int setup(void **state) {
  (void)state;
  if (th_tmpdir(tmpdir, sizeof tmpdir, "test-archive")) return -1;
  snprintf(sdir, sizeof sdir, "%s/state", tmpdir);
  snprintf(wdir, sizeof wdir, "%s/warcs", tmpdir);
  if (mkdir(wdir, 0700)) return -1;
  kr_log_level = KR_LOG_ERROR;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  th_rmtree(tmpdir);
  return 0;
}

/* ---- a service on the temporary directory ---------------------------------------- */

struct env {
  uv_loop_t loop;
  kr_clock_t clock;
  kr_timers_t timers;
  kr_store_t *st;
  kr_config_t *cfg;
  kr_archive_t *a;
  int64_t host;
  int pauses;
};

static int h_pause(void *ud) {
  ((struct env *)ud)->pauses++;
  return 1;
}
static void h_resume(void *ud) { (void)ud; }
static int h_closing(void *ud) {
  (void)ud;
  return 0;
}

static void env_open(struct env *e, const char *extra) {
  memset(e, 0, sizeof *e);
  assert_int_equal(uv_loop_init(&e->loop), 0);
  kr_clock_init_virtual(&e->clock, 1700000000000ull);
  assert_int_equal(kr_timers_init(&e->timers, &e->loop, &e->clock), 0);
  char err[512];
  assert_int_equal(kr_store_open(sdir, NULL, &e->st, err, sizeof err), 0);
  assert_int_equal(kr_store_host_insert(e->st, "h", 1, &e->host), 0);
  char conf[1024];
  snprintf(conf, sizeof conf, "[crawl]\nwarc-dir = %s\n[warc]\nenabled = true\n%s", wdir,
           extra ? extra : "");
  e->cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(e->cfg, "archive.conf", conf, strlen(conf)), 0);
  assert_int_equal(kr_config_finish(e->cfg), 0);
  kr_archive_host_t h = {.loop = &e->loop, .timers = &e->timers, .clock = &e->clock,
                         .store = e->st, .ud = e, .pause = h_pause, .resume = h_resume,
                         .closing = h_closing};
  int rc = kr_archive_open(e->cfg, &h, &e->a, err, sizeof err);
  if (rc) fail_msg("open: %s", err);
  assert_non_null(e->a);
}

static void env_close(struct env *e) {
  kr_archive_close(e->a);
  kr_timers_close(&e->timers, NULL);
  uv_run(&e->loop, UV_RUN_DEFAULT); /* the handles' close callbacks first */
  kr_archive_free(e->a);
  assert_int_equal(uv_loop_close(&e->loop), 0);
  assert_int_equal(kr_store_close(e->st), 0);
  kr_config_free(e->cfg);
}

/* A uris row for url (the store keeps originals in it). */
static uint64_t uri(struct env *e, const char *url) {
  kr_uri_row_t r;
  memset(&r, 0, sizeof r);
  r.url = url;
  r.url_len = strlen(url);
  r.fp = kr_fp(url, r.url_len);
  r.host_id = e->host;
  r.next_at = 1;
  r.first_seen = 1000;
  r.hop_path = "L";
  r.hop_len = 1;
  assert_true(kr_store_uri_insert(e->st, &r) >= 0);
  return r.fp;
}

static const char HEAD[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
static const char HEAD304[] = "HTTP/1.1 304 Not Modified\r\n\r\n";
static const char REQ[] = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";

static int meta_cb(void *ud, kr_buf_t *out) {
  (void)ud;
  kr_warc_meta_t m = {.via = kr_slice("", 0), .hops_from_seed = kr_slice("L", 1),
                      .fetch_time_ms = 7};
  return kr_warc_metadata_block(out, &m);
}

static int done_calls, done_rc;
static void done_cb(void *ud, int rc) {
  (void)ud;
  done_calls++;
  done_rc = rc;
}

/* An exchange for a 200 with body, its capture fed. */
static void exchange(struct env *e, kr_archive_exchange_t *x, const char *url, const char *body,
                     size_t n) {
  memset(x, 0, sizeof *x);
  x->url = kr_slice_cstr(url);
  x->fp = kr_fp(url, strlen(url));
  x->ip = "127.0.0.1";
  x->date_ms = kr_clock_now_ms(&e->clock);
  x->head = kr_slice_cstr(HEAD);
  x->cap = kr_archive_capture_begin(e->a, x->head, url, 1);
  kr_archive_capture_feed(e->a, x->cap, body, n);
  x->complete = 1;
  x->has_payload_digest = 1;
  kr_sha1(body, n, x->payload_digest);
  x->request = kr_slice_cstr(REQ);
  x->metadata = meta_cb;
  x->done = done_cb;
  x->ud = x;
}

/* ---- reading the files back -------------------------------------------------------- */

#define MAXREC 32
struct rec {
  int type;
  char target[128], id[64], refers_to[64], refers_uri[128], profile[128];
  char pd[64], bd[64], concurrent[64], truncated[32], etag[64], lm[64], ctype[64];
  char rdate[40], date[40];
  char block[8192];
  size_t block_len;
};
static struct rec recs[MAXREC];
static size_t nrecs;

static void field(const kr_warc_header_t *h, const char *name, char *out, size_t len) {
  out[0] = '\0';
  for (size_t i = 0; i < h->nfields; i++)
    if (strcasecmp(h->fields[i].name, name) == 0)
      snprintf(out, len, "%.*s", (int)h->fields[i].value.n, h->fields[i].value.p);
}

static void read_file(const char *path) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  kr_warc_reader_t *r = kr_warc_reader_new(NULL, kr_warc_fd_source, &fd);
  const kr_warc_header_t *h;
  int rc;
  while ((rc = kr_warc_reader_next(r, &h)) == 1) {
    assert_true(nrecs < MAXREC);
    struct rec *x = &recs[nrecs++];
    memset(x, 0, sizeof *x);
    x->type = h->type;
    field(h, "WARC-Target-URI", x->target, sizeof x->target);
    field(h, "WARC-Record-ID", x->id, sizeof x->id);
    field(h, "WARC-Refers-To", x->refers_to, sizeof x->refers_to);
    field(h, "WARC-Refers-To-Target-URI", x->refers_uri, sizeof x->refers_uri);
    field(h, "WARC-Refers-To-Date", x->rdate, sizeof x->rdate);
    field(h, "WARC-Date", x->date, sizeof x->date);
    field(h, "WARC-Profile", x->profile, sizeof x->profile);
    field(h, "WARC-Payload-Digest", x->pd, sizeof x->pd);
    field(h, "WARC-Block-Digest", x->bd, sizeof x->bd);
    field(h, "WARC-Concurrent-To", x->concurrent, sizeof x->concurrent);
    field(h, "WARC-Truncated", x->truncated, sizeof x->truncated);
    field(h, "WARC-Etag", x->etag, sizeof x->etag);
    field(h, "WARC-Last-Modified", x->lm, sizeof x->lm);
    field(h, "Content-Type", x->ctype, sizeof x->ctype);
    long got;
    char tmp[65536];
    while ((got = kr_warc_reader_read(r, tmp, sizeof tmp)) > 0) {
      size_t room = sizeof x->block - x->block_len;
      size_t take = (size_t)got < room ? (size_t)got : room;
      memcpy(x->block + x->block_len, tmp, take);
      x->block_len += take;
    }
    assert_int_equal(got, 0);
  }
  if (rc) fail_msg("%s: %s", path, kr_warc_reader_errmsg(r));
  kr_warc_reader_free(r);
  close(fd);
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every record of the closed files in the directory, file by file in name
 * order; returns the number of files. */
static int read_all(void) {
  nrecs = 0;
  struct dirent **names;
  int n = scandir(wdir, &names, NULL, by_name);
  assert_true(n >= 0);
  int files = 0;
  for (int i = 0; i < n; i++) {
    const char *d = names[i]->d_name;
    size_t l = strlen(d);
    if (l > 8 && (strcmp(d + l - 8, ".warc.gz") == 0 || strcmp(d + l - 5, ".warc") == 0)) {
      char p[600];
      snprintf(p, sizeof p, "%s/%s", wdir, d);
      read_file(p);
      files++;
    }
    free(names[i]);
  }
  free(names);
  return files;
}

static const struct rec *find(int type, const char *target, int nth) {
  for (size_t i = 0; i < nrecs; i++)
    if (recs[i].type == type && strcmp(recs[i].target, target) == 0 && nth-- == 0) return &recs[i];
  return NULL;
}

/* find's record, which must be there. */
static const struct rec *get(int type, const char *target) {
  static struct rec none;
  const struct rec *r = find(type, target, 0);
  if (!r) fail_msg("no record of type %d for %s", type, target);
  return r ? r : &none;
}

static void label(const void *p, size_t n, char out[KR_SHA1_LABEL_SIZE]) {
  uint8_t d[KR_SHA1_LEN];
  kr_sha1(p, n, d);
  kr_sha1_label(d, out);
}

/* A fresh state directory and an empty WARC directory. */
static void clear_dir(void) {
  th_rmtree(sdir);
  th_rmtree(wdir);
  assert_int_equal(mkdir(wdir, 0700), 0);
}

/* ---- the service ------------------------------------------------------------------- */

static void test_records(void **state) {
  (void)state;
  clear_dir();
  struct env e;
  env_open(&e, "write-volatile = skip\n[adaptive]\ndedupe = true\n");
  const char *ua = "http://h/a", *ub = "http://h/b", *uc = "http://h/c";
  uint64_t fa = uri(&e, ua), fb = uri(&e, ub);
  uri(&e, uc);
  kr_archive_exchange_t x;

  /* a response: the content, then request and metadata */
  exchange(&e, &x, ua, "hello", 5);
  kr_slice_t m;
  assert_true(kr_archive_capture_held(e.a, x.cap, 0, 5, &m));
  assert_int_equal(m.n, 5);
  assert_memory_equal(m.p, "hello", 5);
  assert_true(kr_archive_capture_held(e.a, x.cap, 5, 105, NULL)); /* more would stay */
  assert_false(kr_archive_capture_held(e.a, x.cap, 4, 105, NULL));
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);

  /* the same payload under another URI: a revisit referring to it */
  exchange(&e, &x, ub, "hello", 5);
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);

  /* a 304 for the first: server-not-modified */
  memset(&x, 0, sizeof x);
  x.url = kr_slice_cstr(ua);
  x.fp = fa;
  x.date_ms = kr_clock_now_ms(&e.clock);
  x.head = kr_slice_cstr(HEAD304);
  x.not_modified = 1;
  x.etag = kr_slice_cstr("\"v1\"");
  x.last_modified = kr_slice_cstr("bad\r\nvalue"); /* not a field value: left out */
  assert_int_equal(kr_archive_submit(e.a, &x), 0);

  /* a mid-fetch abort of the first (a 200, its validators unchanged):
   * server-not-modified too, its head the block */
  memset(&x, 0, sizeof x);
  x.url = kr_slice_cstr(ua);
  x.fp = fa;
  x.date_ms = kr_clock_now_ms(&e.clock);
  x.head = kr_slice_cstr(HEAD);
  x.midfetch = 1;
  x.last_modified = kr_slice_cstr("Sun, 29 Nov 2026 05:00:00 GMT");
  assert_int_equal(kr_archive_submit(e.a, &x), 0);

  /* unchanged by the change digest, another payload: skipped */
  exchange(&e, &x, uc, "other", 5);
  x.visited = x.unchanged = 1;
  assert_int_equal(kr_archive_submit(e.a, &x), KR_ARCHIVE_SKIPPED);
  kr_archive_capture_end(e.a, x.cap);

  /* a dns record, once per TTL */
  assert_true(kr_archive_dns_due(e.a, kr_slice_cstr("h"), 1000));
  const char *addrs[] = {"127.0.0.1"};
  assert_int_equal(kr_archive_dns(e.a, kr_slice_cstr("h"), "h", 1000, addrs, 1, 60), 0);
  assert_false(kr_archive_dns_due(e.a, kr_slice_cstr("h"), 2000));
  assert_true(kr_archive_dns_due(e.a, kr_slice_cstr("h"), 61001));

  kr_archive_stats_t s;
  kr_archive_stats(e.a, &s);
  assert_int_equal(s.responses, 1);
  assert_int_equal(s.revisits_identical, 1);
  assert_int_equal(s.revisits_not_modified, 1);
  assert_int_equal(s.revisits_midfetch, 1);
  assert_int_equal(s.volatile_skipped, 1);
  assert_int_equal(s.requests, 2);
  assert_int_equal(s.metadata, 2);
  assert_int_equal(s.dns, 1);
  assert_int_equal(s.deferred, 0);
  assert_int_equal(s.records, 3 + 3 + 1 + 1 + 1); /* the warcinfo is the file's own */

  /* the originals: b's is a's record */
  kr_original_t o;
  assert_int_equal(kr_store_original_get(e.st, fa, &o), 1);
  char rid_a[64];
  snprintf(rid_a, sizeof rid_a, "%.*s", (int)o.rid_len, o.rid);
  assert_int_equal(kr_store_original_get(e.st, fb, &o), 1);
  assert_int_equal(o.ofp, fa);
  assert_int_equal(o.rid_len, strlen(rid_a));
  assert_memory_equal(o.rid, rid_a, o.rid_len);
  env_close(&e);

  assert_int_equal(read_all(), 1);
  char pd[KR_SHA1_LABEL_SIZE], bd[KR_SHA1_LABEL_SIZE], block[128];
  label("hello", 5, pd);
  snprintf(block, sizeof block, "%shello", HEAD);
  label(block, strlen(block), bd);
  const struct rec *ra = get(KR_WARC_RESPONSE, ua);
  assert_string_equal(ra->id, rid_a);
  assert_string_equal(ra->pd, pd);
  assert_string_equal(ra->bd, bd);
  assert_int_equal(ra->block_len, strlen(block));
  assert_memory_equal(ra->block, block, ra->block_len);
  const struct rec *q = get(KR_WARC_REQUEST, ua);
  assert_string_equal(q->concurrent, ra->id);
  assert_int_equal(q->block_len, strlen(REQ));
  const struct rec *md = get(KR_WARC_METADATA, ua);
  assert_string_equal(md->concurrent, ra->id);
  assert_non_null(strstr(md->block, "hopsFromSeed: L"));

  const struct rec *rb = get(KR_WARC_REVISIT, ub);
  assert_non_null(strstr(rb->profile, "identical-payload-digest"));
  assert_string_equal(rb->refers_to, ra->id);
  assert_string_equal(rb->refers_uri, ua);
  assert_string_equal(rb->pd, pd);
  assert_int_equal(rb->block_len, strlen(HEAD));
  assert_null(find(KR_WARC_RESPONSE, ub, 0));

  /* the 304: no block (its head would replay as an empty 304), the
   * original named, the validators in Heritrix's fields */
  const struct rec *rc = get(KR_WARC_REVISIT, ua);
  assert_non_null(strstr(rc->profile, "server-not-modified"));
  assert_string_equal(rc->refers_to, ra->id);
  assert_string_equal(rc->refers_uri, ua);
  assert_string_equal(rc->pd, pd);
  assert_int_equal(rc->block_len, 0);
  assert_string_equal(rc->etag, "\"v1\"");
  assert_string_equal(rc->lm, "");
  /* the mid-fetch abort: the 200's head as received */
  const struct rec *rm = find(KR_WARC_REVISIT, ua, 1);
  if (!rm) {
    fail_msg("no mid-fetch revisit");
    return;
  }
  assert_non_null(strstr(rm->profile, "server-not-modified"));
  assert_string_equal(rm->refers_to, ra->id);
  assert_string_equal(rm->pd, pd);
  assert_int_equal(rm->block_len, strlen(HEAD));
  assert_memory_equal(rm->block, HEAD, rm->block_len);
  assert_string_equal(rm->lm, "Sun, 29 Nov 2026 05:00:00 GMT");
  assert_string_equal(rm->etag, "");
  assert_null(find(KR_WARC_REQUEST, ua, 1)); /* the 304 had no request here */

  assert_null(find(KR_WARC_RESPONSE, uc, 0)); /* skipped */
  const struct rec *dns = get(KR_WARC_RESPONSE, "dns:h");
  assert_non_null(strstr(dns->block, "127.0.0.1"));
}

/* A new TLS connection's certificate facts: a metadata record of their
 * own, application/warc-fields, WARC-Concurrent-To the response, even
 * with warc.write-metadata off; a visit without them has none. */
static void test_tls_facts(void **state) {
  (void)state;
  clear_dir();
  struct env e;
  env_open(&e, "write-metadata = false\n");
  const char *ua = "https://h/a", *ub = "https://h/b";
  uri(&e, ua);
  uri(&e, ub);
  static const char facts[] = "tlsVersion: TLSv1.3\r\ntlsResumed: false\r\n"
                              "tlsVerifyResult: ok\r\npeerCertificate: TUlJQg==\r\n";
  kr_archive_exchange_t x;
  exchange(&e, &x, ua, "hello", 5);
  x.tls_facts = kr_slice_cstr(facts);
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);
  exchange(&e, &x, ub, "other", 5); /* the same connection: none */
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);
  kr_archive_stats_t s;
  kr_archive_stats(e.a, &s);
  assert_int_equal(s.metadata, 1);
  env_close(&e);

  assert_int_equal(read_all(), 1);
  const struct rec *ra = get(KR_WARC_RESPONSE, ua);
  const struct rec *md = get(KR_WARC_METADATA, ua);
  assert_string_equal(md->concurrent, ra->id);
  assert_string_equal(md->ctype, "application/warc-fields");
  assert_int_equal(md->block_len, strlen(facts));
  assert_memory_equal(md->block, facts, md->block_len);
  assert_null(find(KR_WARC_METADATA, ua, 1));
  assert_null(find(KR_WARC_METADATA, ub, 0));
}

/* A body of 1 MiB or more is written in slices from the loop into a file
 * of its own: submit answers ASYNC, done follows, the record is whole. */
static void test_sliced(void **state) {
  (void)state;
  clear_dir();
  struct env e;
  env_open(&e, NULL);
  const char *ua = "http://h/big";
  uri(&e, ua);
  size_t n = 3u << 20;
  char *body = malloc(n);
  for (size_t i = 0; i < n; i++) body[i] = (char)('a' + i % 26);
  kr_archive_exchange_t x;
  exchange(&e, &x, ua, body, n);
  done_calls = 0;
  done_rc = -1;
  assert_int_equal(kr_archive_submit(e.a, &x), KR_ARCHIVE_ASYNC);
  memset(&x.payload_digest, 0, sizeof x.payload_digest); /* kept by the service */
  while (!done_calls) uv_run(&e.loop, UV_RUN_ONCE);
  assert_int_equal(done_rc, 0);
  kr_archive_capture_end(e.a, x.cap);
  kr_archive_stats_t s;
  kr_archive_stats(e.a, &s);
  assert_int_equal(s.responses, 1);
  assert_int_equal(s.files, 1); /* the file of large records; the first got none */
  env_close(&e);

  assert_int_equal(read_all(), 1);
  const struct rec *r = get(KR_WARC_RESPONSE, ua);
  char pd[KR_SHA1_LABEL_SIZE];
  label(body, n, pd);
  assert_string_equal(r->pd, pd);
  assert_non_null(find(KR_WARC_REQUEST, ua, 0));
  assert_non_null(find(KR_WARC_METADATA, ua, 0));
  free(body);
}

/* warc.chunked = dechunk: a chunked response's capture takes the
 * de-chunked body under a head whose Transfer-Encoding (and a stray
 * Content-Length) is renamed X-Orig-..., so the payload digest is that of
 * the bytes after the head; other transfer codings, other responses and
 * warc.chunked = keep leave the head alone. The warcinfo record says which
 * and states the digest rule. Also a large one, spilled and written in
 * slices: the block digest covers the rewritten head. */
static void test_dechunk(void **state) {
  (void)state;
  static const char CH[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                           "content-length: 9\r\nContent-Type: text/plain\r\n\r\n";
  static const char WANT[] = "HTTP/1.1 200 OK\r\nX-Orig-Transfer-Encoding: chunked\r\n"
                             "X-Orig-content-length: 9\r\nContent-Type: text/plain\r\n\r\n";
  static const char GZ[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
  for (int mode = 0; mode < 2; mode++) {
    clear_dir();
    struct env e;
    env_open(&e, mode ? "chunked = dechunk\n" : NULL);
    kr_archive_cap_t *k = kr_archive_capture_begin(e.a, kr_slice_cstr(CH), "u", 1);
    assert_int_equal(kr_archive_capture_dechunk(e.a, k), mode);
    kr_slice_t h = kr_archive_capture_head(k);
    const char *want = mode ? WANT : CH;
    assert_int_equal(h.n, strlen(want));
    assert_memory_equal(h.p, want, h.n);
    kr_archive_capture_end(e.a, k);
    /* gzip and chunked: kept; not chunked: kept */
    k = kr_archive_capture_begin(e.a, kr_slice_cstr(GZ), "u", 1);
    assert_int_equal(kr_archive_capture_dechunk(e.a, k), 0);
    assert_ptr_equal(kr_archive_capture_head(k).p, GZ);
    kr_archive_capture_end(e.a, k);
    k = kr_archive_capture_begin(e.a, kr_slice_cstr(HEAD), "u", 1);
    assert_int_equal(kr_archive_capture_dechunk(e.a, k), 0);
    kr_archive_capture_end(e.a, k);
    if (!mode) {
      env_close(&e);
      continue;
    }
    /* a visit: small, then large (spilled past 4 MiB, written in slices) */
    const char *url[2] = {"http://h/ch", "http://h/chbig"};
    size_t len[2] = {5, 5u << 20};
    char *body = malloc(len[1]);
    for (size_t i = 0; i < len[1]; i++) body[i] = (char)('a' + i % 26);
    for (int i = 0; i < 2; i++) {
      uri(&e, url[i]);
      kr_archive_exchange_t x;
      memset(&x, 0, sizeof x);
      x.url = kr_slice_cstr(url[i]);
      x.fp = kr_fp(url[i], strlen(url[i]));
      x.date_ms = kr_clock_now_ms(&e.clock);
      x.cap = kr_archive_capture_begin(e.a, kr_slice_cstr(CH), url[i], 1);
      assert_int_equal(kr_archive_capture_dechunk(e.a, x.cap), 1);
      x.head = kr_archive_capture_head(x.cap);
      for (size_t off = 0, step; off < len[i]; off += step) {
        step = len[i] - off < 65536 ? len[i] - off : 65536;
        kr_archive_capture_feed(e.a, x.cap, body + off, step);
      }
      x.complete = x.has_payload_digest = 1;
      kr_sha1(body, len[i], x.payload_digest);
      x.done = done_cb;
      done_calls = 0;
      int rc = kr_archive_submit(e.a, &x);
      if (rc == KR_ARCHIVE_ASYNC) {
        while (!done_calls) uv_run(&e.loop, UV_RUN_ONCE);
        rc = done_rc;
      }
      assert_int_equal(rc, 0);
      kr_archive_capture_end(e.a, x.cap);
    }
    env_close(&e);
    read_all();
    assert_int_equal(recs[0].type, KR_WARC_WARCINFO);
    assert_non_null(memmem(recs[0].block, recs[0].block_len, "kria-warc-chunked: dechunk\r\n", 28));
    assert_non_null(memmem(recs[0].block, recs[0].block_len, "kria-payload-digest: SHA-1 of", 29));
    for (int i = 0; i < 2; i++) {
      const struct rec *r = get(KR_WARC_RESPONSE, url[i]);
      char pd[KR_SHA1_LABEL_SIZE], bd[KR_SHA1_LABEL_SIZE];
      label(body, len[i], pd);
      assert_string_equal(r->pd, pd); /* the bytes after the head */
      assert_memory_equal(r->block, WANT, strlen(WANT));
      if (i == 0) {
        assert_int_equal(r->block_len, strlen(WANT) + len[0]);
        char blk[256];
        memcpy(blk, WANT, strlen(WANT));
        memcpy(blk + strlen(WANT), body, len[0]);
        label(blk, r->block_len, bd);
        assert_string_equal(r->bd, bd);
      }
    }
    free(body);
  }
}

/* Shutdown past its grace: the record being written in slices is cut
 * away and its visit given back (done with an error, counted). */
static void test_cancel(void **state) {
  (void)state;
  clear_dir();
  struct env e;
  env_open(&e, NULL);
  const char *ua = "http://h/cut";
  uri(&e, ua);
  size_t n = 2u << 20;
  char *body = calloc(1, n);
  kr_archive_exchange_t x;
  exchange(&e, &x, ua, body, n);
  done_calls = 0;
  done_rc = 0;
  assert_int_equal(kr_archive_submit(e.a, &x), KR_ARCHIVE_ASYNC);
  kr_archive_cancel(e.a);
  while (!done_calls) uv_run(&e.loop, UV_RUN_ONCE);
  assert_true(done_rc < 0);
  kr_archive_capture_end(e.a, x.cap);
  kr_archive_stats_t s;
  kr_archive_stats(e.a, &s);
  assert_int_equal(s.responses, 0);
  assert_int_equal(s.deferred, 1);
  assert_int_equal(e.pauses, 0); /* not a write error: dispatch not held */
  env_close(&e);
  read_all();
  for (size_t i = 0; i < nrecs; i++) assert_int_not_equal(recs[i].type, KR_WARC_RESPONSE);
  free(body);
}

/* A reload applies the record keys from the next record: without
 * warc.write-request no request record follows. */
static void test_reload(void **state) {
  (void)state;
  clear_dir();
  struct env e;
  env_open(&e, NULL);
  const char *ua = "http://h/r1", *ub = "http://h/r2";
  uri(&e, ua);
  uri(&e, ub);
  assert_true(kr_archive_key_is_live(KR_CFG_WARC_WRITE_REQUEST));
  assert_false(kr_archive_key_is_live(KR_CFG_WARC_ENABLED));
  kr_archive_exchange_t x;
  exchange(&e, &x, ua, "one", 3);
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);
  kr_config_t *n = kr_config_new();
  char conf[512];
  snprintf(conf, sizeof conf, "[crawl]\nwarc-dir = %s\n[warc]\nenabled = true\n"
           "write-request = false\n", wdir);
  assert_int_equal(kr_config_load_string(n, "reload.conf", conf, strlen(conf)), 0);
  assert_int_equal(kr_config_finish(n), 0);
  char err[256];
  assert_int_equal(kr_archive_reload_check(n, err, sizeof err), 0);
  kr_archive_reload(e.a, n, e.cfg);
  kr_config_free(e.cfg);
  e.cfg = n;
  exchange(&e, &x, ub, "two", 3);
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);
  kr_archive_stats_t s;
  kr_archive_stats(e.a, &s);
  assert_int_equal(s.reloads, 1);
  assert_int_equal(s.requests, 1);
  env_close(&e);
  read_all();
  get(KR_WARC_REQUEST, ua);
  assert_null(find(KR_WARC_REQUEST, ub, 0));
  get(KR_WARC_RESPONSE, ub);
}

/* ---- the thin WARC processor with a fake fetch -------------------------------------- */

/* A stand-in for the http processor: the walk waits in the fetch phase
 * while the test hands the chain the headers and the raw bytes. */
static int fetch_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  (void)cf;
  (void)self;
  return KR_PROC_ASYNC;
}

static int finalized;
static void on_final(kr_chain_fetch_t *cf, void *ud) {
  (void)cf;
  (void)ud;
  finalized++;
}

static void fake_visit(kr_crawl_t *c, kr_chain_t *ch, kr_fetch_t *f, kr_curi_t *u,
                       kr_http_resp_t *r, const char *url, const char *body) {
  void *ctx = f->cf.ctx; /* the processors' contexts (kr_chain_fetch_setup) */
  memset(f, 0, sizeof *f);
  memset(u, 0, sizeof *u);
  memset(r, 0, sizeof *r);
  f->cf.ctx = ctx;
  f->cf.chain = ch;
  kr_chain_fetch_init(ch, &f->cf, url, strlen(url), kr_slice_cstr("h"));
  f->crawl = c;
  u->url = url;
  u->url_len = strlen(url);
  u->fp = kr_fp(url, u->url_len);
  u->hop_path = "L";
  u->hop_len = 1;
  f->curi = u;
  f->fetch_start_ms = 1700000000000ull;
  r->status = 200;
  r->raw_head = kr_slice_cstr(HEAD);
  r->payload_bytes = strlen(body);
  snprintf(r->peer_ip, sizeof r->peer_ip, "127.0.0.1");
  f->ad.has_payload_digest = 1;
  kr_sha1(body, strlen(body), f->ad.payload_digest);
}

/* The "warc" processor in a real chain: it holds the raw level (the
 * chain answers kr_chain_held from its capture), writes the visit in the
 * write phase, "warc-late" leaves it alone, and the second URI with the
 * same payload becomes a revisit of the first. */
static void test_processor(void **state) {
  (void)state;
  clear_dir();
  struct env e;
  env_open(&e, "[adaptive]\ndedupe = true\n");
  uri(&e, "http://h/p");
  uri(&e, "http://h/q");
  kr_crawl_t *c = calloc(1, sizeof *c);
  c->warc = e.a;
  kr_chain_t ch;
  kr_chain_init(&ch, on_final, NULL);
  kr_processor_t http = {.name = "http", .phase = KR_PHASE_FETCH, .run = fetch_run};
  kr_processor_t w = kr_proc_warc, late = kr_proc_warc_late;
  w.phase = KR_PHASE_WRITE;
  w.data = e.a;
  late.phase = KR_PHASE_POST;
  late.data = e.a;
  assert_int_equal(kr_chain_add(&ch, &http), 0);
  assert_int_equal(kr_chain_add(&ch, &w), 0);
  assert_int_equal(kr_chain_add(&ch, &late), 0);
  assert_int_equal(kr_chain_build(&ch), 0);

  kr_fetch_t *f = calloc(1, sizeof *f);
  kr_chain_fetch_setup(&ch, &f->cf);
  kr_archive_cap_t **cap = kr_chain_ctx(&f->cf, &w); /* the warc context's capture */
  assert_ptr_equal(cap, kr_chain_ctx(&f->cf, &late)); /* shared with warc-late */
  kr_curi_t u;
  kr_http_resp_t r;
  const char *urls[] = {"http://h/p", "http://h/q"};
  finalized = 0;
  for (int i = 0; i < 2; i++) {
    fake_visit(c, &ch, f, &u, &r, urls[i], "hello");
    kr_chain_start(&f->cf); /* waits in "http" */
    f->resp = &r;
    kr_chain_headers(&f->cf);
    assert_non_null(*cap);
    assert_true(kr_chain_wants(&f->cf, KR_STREAM_RAW));
    assert_true(kr_chain_held(&f->cf, KR_STREAM_RAW, 0, 3, NULL));
    kr_chain_body(&f->cf, KR_STREAM_RAW, "hel", 3);
    kr_chain_body(&f->cf, KR_STREAM_RAW, "lo", 2);
    kr_slice_t m;
    assert_true(kr_chain_held(&f->cf, KR_STREAM_RAW, 0, 5, &m));
    assert_int_equal(m.n, 5);
    assert_memory_equal(m.p, "hello", 5);
    assert_true(kr_chain_held(&f->cf, KR_STREAM_RAW, 2, 5, &m));
    assert_int_equal(m.n, 3);
    assert_false(kr_chain_held(&f->cf, KR_STREAM_PAYLOAD, 0, 5, NULL));
    kr_chain_resume(&f->cf, 0); /* write, post, finalize */
    assert_int_equal(finalized, i + 1);
    assert_int_equal(f->disp, KR_DISP_FINISH);
    assert_null(*cap); /* its cleanup ran */
    kr_chain_fetch_recycle(&f->cf);
  }
  kr_archive_stats_t s;
  kr_archive_stats(c->warc, &s);
  assert_int_equal(s.responses, 1);
  assert_int_equal(s.revisits_identical, 1);
  assert_int_equal(s.metadata, 2);
  kr_chain_fetch_teardown(&f->cf);
  free(f);
  kr_chain_free(&ch);
  free(c);
  env_close(&e);

  read_all();
  const struct rec *rp = get(KR_WARC_RESPONSE, "http://h/p");
  const struct rec *rq = get(KR_WARC_REVISIT, "http://h/q");
  assert_string_equal(rq->refers_to, rp->id);
  assert_null(find(KR_WARC_RESPONSE, "http://h/p", 1)); /* warc-late wrote nothing more */
  assert_null(find(KR_WARC_REQUEST, "http://h/p", 0)); /* no HTTP exchange: none */
}

/* ---- an original in another archive ------------------------------------------------ */

static int orig_calls;
static char orig_rid[KR_WARC_ID_SIZE];
static uint64_t orig_date;
static uint8_t orig_digest[KR_SHA1_LEN];

static void original_cb(void *ud, const uint8_t *d, uint64_t date_ms, const char *rid) {
  orig_calls++;
  snprintf(orig_rid, sizeof orig_rid, "%s", rid);
  orig_date = date_ms;
  memcpy(orig_digest, d, KR_SHA1_LEN);
}

/* A cluster member's original, named through Redis (x->far_*): referred
 * to when no original here holds the payload, and not kept as the URI's
 * original (this state database does not know its URI); an original
 * here comes first; a new response is announced with its record id and
 * date (x->original), a revisit is not. */
static void test_far_original(void **state) {
  (void)state;
  clear_dir();
  struct env e;
  env_open(&e, "[adaptive]\ndedupe = true\n");
  const char *ua = "http://h/a", *ub = "http://h/b", *far = "http://other.test/x";
  const char *far_rid = "<urn:uuid:6d1b2c84-8f7e-4f3a-9a55-0c8e2b9f4d11>";
  uri(&e, ua);
  uri(&e, ub);
  kr_archive_exchange_t x;
  orig_calls = 0;

  exchange(&e, &x, ua, "hello", 5); /* the far one: a revisit of it */
  x.far_url = kr_slice_cstr(far);
  x.far_rid = far_rid;
  x.far_date_ms = 1690000000000ull;
  x.original = original_cb;
  kr_archive_wrote_t w = {0};
  x.wrote = &w;
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);
  assert_int_equal(w.revisit, KR_ARCHIVE_IDENTICAL);
  assert_true(w.far);
  assert_int_equal(orig_calls, 0);

  exchange(&e, &x, ub, "hello", 5); /* no original here: a response, announced */
  x.original = original_cb;
  uint64_t bdate = x.date_ms;
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);
  assert_int_equal(orig_calls, 1);
  assert_true(orig_date == bdate);
  assert_memory_equal(orig_digest, x.payload_digest, KR_SHA1_LEN);

  kr_clock_advance(&e.clock, 1000);
  exchange(&e, &x, ua, "hello", 5); /* b's original here comes first */
  x.visited = 1;
  x.far_url = kr_slice_cstr(far);
  x.far_rid = far_rid;
  x.far_date_ms = 1690000000000ull;
  x.original = original_cb;
  memset(&w, 0, sizeof w);
  x.wrote = &w;
  assert_int_equal(kr_archive_submit(e.a, &x), 0);
  kr_archive_capture_end(e.a, x.cap);
  assert_false(w.far);
  assert_int_equal(orig_calls, 1);
  kr_archive_stats_t s;
  kr_archive_stats(e.a, &s);
  assert_int_equal(s.responses, 1);
  assert_int_equal(s.revisits_identical, 2);
  env_close(&e);

  read_all();
  const struct rec *r1 = get(KR_WARC_REVISIT, ua), *rb = get(KR_WARC_RESPONSE, ub);
  const struct rec *r2 = find(KR_WARC_REVISIT, ua, 1);
  assert_string_equal(r1->refers_to, far_rid);
  assert_string_equal(r1->refers_uri, far);
  assert_string_equal(r1->rdate, "2023-07-22T04:26:40.000Z");
  assert_non_null(strstr(r1->profile, "identical-payload-digest"));
  assert_string_equal(rb->id, orig_rid);
  assert_non_null(r2);
  assert_string_equal(r2->refers_to, rb->id);
  assert_string_equal(r2->refers_uri, ub);
  assert_string_equal(r2->rdate, rb->date);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_records),
      cmocka_unit_test(test_tls_facts),
      cmocka_unit_test(test_sliced),
      cmocka_unit_test(test_dechunk),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_reload),
      cmocka_unit_test(test_processor),
      cmocka_unit_test(test_far_original),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
