/* WARC writer, reader and files: dates and ids; every record type written
 * (plain, zlib, libdeflate, streamed, past whole_max) and read back with
 * block and payload digests recomputed; each gzip member inflated alone;
 * invalid records refused before any byte leaves; hostile input to the
 * reader (garbage, every truncation, wrong Content-Length, huge headers,
 * empty members, LF line ends); warcfile names, rotation, warcinfo links,
 * locations, durability; repair of files cut at every byte of their last
 * record; ENOSPC and sync failures injected through the write and sync
 * hooks, with the partial record cut away; prefixes that could escape the
 * directory refused.
 *
 * With KRIA_WARC_SAMPLES=DIR set, sample_files also leaves its WARC files
 * in DIR for test/integration/warc_check.sh to validate with warcio.js. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "kria/buf.h"
#include "kria/digest.h"
#include "kria/error.h"
#include "kria/warc.h"
#include "log.h"
#include "warcfile.h"
#include "helpers.h"

#define T0 1763785200123ull /* 2025-11-22T04:20:00.123Z */

/* ---- helpers ------------------------------------------------------------ */

struct mem {
  kr_buf_t b;
  int fail_after;  /* sink calls before failing; -1 never */
  int calls;
};

static int mem_sink(void *ctx, const kr_slice_t *v, size_t n) {
  struct mem *m = ctx;
  if (m->fail_after >= 0 && m->calls++ >= m->fail_after) return KR_EIO;
  for (size_t i = 0; i < n; i++)
    if (kr_buf_append(&m->b, v[i].p, v[i].n)) return KR_ETOOBIG;
  return 0;
}

static void mem_init(struct mem *m) {
  memset(m, 0, sizeof *m);
  kr_buf_init(&m->b, 256u << 20);
  m->fail_after = -1;
}

struct src {
  const unsigned char *p;
  size_t n, at, step; /* step: bytes per read (0 = all) */
};

static long mem_source(void *ctx, void *buf, size_t n) {
  struct src *s = ctx;
  size_t k = s->n - s->at;
  if (k > n) k = n;
  if (s->step && k > s->step) k = s->step;
  memcpy(buf, s->p + s->at, k);
  s->at += k;
  return (long)k;
}

struct rrec {
  int type;
  char id[64], target[512], refers_uri[512], refers_date[64], profile[128];
  char payload_digest[64], block_digest[64], date[64], concurrent[64], warcinfo[64];
  char truncated[32], content_type[128];
  kr_buf_t block;
  kr_warc_extent_t ext;
};

static void field(const kr_warc_header_t *h, const char *name, char *out, size_t n) {
  kr_slice_t v = kr_warc_header_get(h, name);
  snprintf(out, n, "%.*s", v.p ? (int)v.n : 0, v.p ? v.p : "");
}

/* Read every record; returns the count, or the reader's error. */
static int read_all(const void *data, size_t n, struct rrec *out, int max, size_t step) {
  struct src s = {data, n, 0, step};
  kr_warc_reader_t *r = kr_warc_reader_new(NULL, mem_source, &s);
  const kr_warc_header_t *h;
  int count = 0, rc;
  while ((rc = kr_warc_reader_next(r, &h)) == 1) {
    assert_true(count < max);
    struct rrec *x = &out[count];
    memset(x, 0, sizeof *x);
    x->type = h->type;
    field(h, "WARC-Record-ID", x->id, sizeof x->id);
    field(h, "WARC-Target-URI", x->target, sizeof x->target);
    field(h, "WARC-Refers-To-Target-URI", x->refers_uri, sizeof x->refers_uri);
    field(h, "WARC-Refers-To-Date", x->refers_date, sizeof x->refers_date);
    field(h, "WARC-Profile", x->profile, sizeof x->profile);
    field(h, "WARC-Payload-Digest", x->payload_digest, sizeof x->payload_digest);
    field(h, "WARC-Block-Digest", x->block_digest, sizeof x->block_digest);
    field(h, "WARC-Date", x->date, sizeof x->date);
    field(h, "WARC-Concurrent-To", x->concurrent, sizeof x->concurrent);
    field(h, "WARC-Warcinfo-ID", x->warcinfo, sizeof x->warcinfo);
    field(h, "WARC-Truncated", x->truncated, sizeof x->truncated);
    field(h, "Content-Type", x->content_type, sizeof x->content_type);
    kr_buf_init(&x->block, 64u << 20);
    char buf[777]; /* odd size: reads cross window edges */
    long got;
    while ((got = kr_warc_reader_read(r, buf, sizeof buf)) > 0)
      assert_int_equal(kr_buf_append(&x->block, buf, (size_t)got), 0);
    if (got < 0) {
      kr_buf_free(&x->block);
      rc = (int)got;
      break;
    }
    assert_int_equal(x->block.len, h->content_length);
    rc = kr_warc_reader_finish(r, &x->ext);
    if (rc) {
      kr_buf_free(&x->block);
      break;
    }
    count++;
  }
  kr_warc_reader_free(r);
  if (rc < 0) {
    for (int i = 0; i < count; i++) kr_buf_free(&out[i].block);
    return rc;
  }
  return count;
}

static void free_recs(struct rrec *r, int n) {
  for (int i = 0; i < n; i++) kr_buf_free(&r[i].block);
}

static void label_of(const void *p, size_t n, char out[KR_SHA1_LABEL_SIZE]) {
  uint8_t d[KR_SHA1_LEN];
  assert_int_equal(kr_sha1(p, n, d), 0);
  kr_sha1_label(d, out);
}

/* The entity of an HTTP message block: after the head, de-chunked when
 * Transfer-Encoding: chunked. */
static size_t http_payload(const char *b, size_t n, char *out) {
  const char *e = memmem(b, n, "\r\n\r\n", 4);
  assert_non_null(e);
  size_t head = (size_t)(e - b) + 4;
  int chunked = memmem(b, head, "Transfer-Encoding: chunked", 26) != NULL;
  if (!chunked) {
    memcpy(out, b + head, n - head);
    return n - head;
  }
  size_t at = head, w = 0;
  for (;;) {
    size_t sz = strtoul(b + at, NULL, 16);
    const char *nl = memmem(b + at, n - at, "\r\n", 2);
    assert_non_null(nl);
    at = (size_t)(nl - b) + 2;
    if (sz == 0) break;
    memcpy(out + w, b + at, sz);
    w += sz;
    at += sz + 2;
  }
  return w;
}

/* ---- sample records ------------------------------------------------------ */

static char page[10240];
static char chunked_resp[8192];
static size_t chunked_len;
static char gz_body[4096];
static size_t gz_len;

static void make_samples(void) {
  static int done;
  if (done) return;
  done = 1;
  static const char *const words[] = {"tern ", "arctic ", "revisit ", "archive ", "the ",
                                      "<a href=\"/p/7\">seven</a>\n", "of ", "web "};
  uint32_t s = 7;
  size_t n = 0;
  while (n < sizeof page) {
    s = s * 1103515245u + 12345u;
    const char *w = words[(s >> 16) % 8];
    size_t l = strlen(w);
    if (n + l > sizeof page) l = sizeof page - n;
    memcpy(page + n, w, l);
    n += l;
  }
  /* gzip-encoded, chunked body */
  z_stream z = {0};
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = (unsigned char *)page;
  z.avail_in = 3000;
  z.next_out = (unsigned char *)gz_body;
  z.avail_out = sizeof gz_body;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  gz_len = sizeof gz_body - z.avail_out;
  deflateEnd(&z);
  int k = snprintf(chunked_resp, sizeof chunked_resp,
                   "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                   "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n");
  size_t at = 0;
  while (at < gz_len) {
    size_t c = gz_len - at < 300 ? gz_len - at : 300;
    k += snprintf(chunked_resp + k, sizeof chunked_resp - (size_t)k, "%zx\r\n", c);
    memcpy(chunked_resp + k, gz_body + at, c);
    k += (int)c;
    k += snprintf(chunked_resp + k, sizeof chunked_resp - (size_t)k, "\r\n");
    at += c;
  }
  k += snprintf(chunked_resp + k, sizeof chunked_resp - (size_t)k, "0\r\n\r\n");
  chunked_len = (size_t)k;
}

static const char resp_head[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 10240\r\n"
    "ETag: \"v1\"\r\n\r\n";
static const char req_bytes[] =
    "GET /p/1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: kria/0.1\r\n"
    "Accept-Encoding: gzip\r\n\r\n";

/* A writer-agnostic "crawl" of every record type: returns the records
 * written, via the callback (kr_warc_write or kr_warcfile_write). */
typedef int (*write_fn)(void *ctx, kr_warc_rec_t *rec, const kr_slice_t *b, size_t n,
                        kr_warc_written_t *out);

static int write_every_type(write_fn wr, void *ctx, const char *base_url) {
  make_samples();
  char url1[256], url2[256], url3[256];
  snprintf(url1, sizeof url1, "%s/p/1", base_url);
  snprintf(url2, sizeof url2, "%s/p/2", base_url);
  snprintf(url3, sizeof url3, "%s/big", base_url);
  kr_warc_written_t w;
  int n = 0;
  /* warcinfo */
  kr_buf_t info;
  kr_buf_init(&info, 1 << 16);
  kr_warc_field_t cfg[] = {{"kria-config", KR_SLICE_LIT("warc.gzip-level=1")}};
  kr_warc_info_t in = {.software = "kria/0.1.0", .hostname = "test.host", .ip = "127.0.0.1",
                       .operator_name = "Tests", .is_part_of = "unit", .robots = "obey",
                       .user_agent = "kria/0.1", .extra = cfg, .nextra = 1};
  assert_int_equal(kr_warc_info_block(&info, &in), 0);
  kr_warc_rec_t ri = {.type = KR_WARC_WARCINFO, .date_ms = T0, .filename = "x.warc.gz"};
  kr_slice_t bi = {info.data, info.len};
  if (wr(ctx, &ri, &bi, 1, &w)) return -1;
  n++;
  kr_buf_free(&info);
  /* response (head and body as two slices; payload from the head's end) */
  kr_warc_rec_t resp = {.type = KR_WARC_RESPONSE, .date_ms = T0 + 1, .ip = "127.0.0.1",
                        .target_uri = kr_slice_cstr(url1), .payload = KR_WARC_PAYLOAD_FROM,
                        .payload_from = sizeof resp_head - 1};
  kr_slice_t rb[2] = {KR_SLICE_LIT(resp_head), {page, sizeof page}};
  if (wr(ctx, &resp, rb, 2, &w)) return -1;
  n++;
  char resp_payload[KR_SHA1_LABEL_SIZE];
  memcpy(resp_payload, w.payload_digest, sizeof resp_payload);
  /* its request */
  kr_warc_rec_t req = {.type = KR_WARC_REQUEST, .date_ms = T0 + 1, .ip = "127.0.0.1",
                       .target_uri = kr_slice_cstr(url1), .concurrent_to = resp.id};
  kr_slice_t qb = KR_SLICE_LIT(req_bytes);
  if (wr(ctx, &req, &qb, 1, &w)) return -1;
  n++;
  /* metadata */
  kr_buf_t mb;
  kr_buf_init(&mb, 1 << 16);
  kr_warc_outlink_t links[] = {{KR_SLICE_LIT("http://127.0.0.1/p/7"), 'L', KR_SLICE_LIT("a/@href")},
                               {KR_SLICE_LIT("http://127.0.0.1/img.png"), 'E', {NULL, 0}}};
  kr_warc_field_t ann[] = {{"contentState", KR_SLICE_LIT("changed")},
                           {"waitInterval", KR_SLICE_LIT("86400000")}};
  kr_warc_meta_t meta = {.via = KR_SLICE_LIT("http://127.0.0.1/"),
                         .hops_from_seed = KR_SLICE_LIT("L"),
                         .fetch_time_ms = 12,
                         .outlinks = links,
                         .noutlinks = 2,
                         .annotations = ann,
                         .nannotations = 2};
  assert_int_equal(kr_warc_metadata_block(&mb, &meta), 0);
  kr_warc_rec_t md = {.type = KR_WARC_METADATA, .date_ms = T0 + 1,
                      .target_uri = kr_slice_cstr(url1), .concurrent_to = resp.id};
  kr_slice_t mbs = {mb.data, mb.len};
  if (wr(ctx, &md, &mbs, 1, &w)) return -1;
  n++;
  kr_buf_free(&mb);
  /* revisit, identical payload digest */
  kr_warc_rec_t rv = {.type = KR_WARC_REVISIT, .date_ms = T0 + 86400000, .ip = "127.0.0.1",
                      .target_uri = kr_slice_cstr(url1), .profile = KR_WARC_PROFILE_IDENTICAL,
                      .payload = KR_WARC_PAYLOAD_DIGEST, .payload_digest = resp_payload,
                      .refers_to = resp.id, .refers_to_uri = kr_slice_cstr(url1),
                      .refers_to_date_ms = T0 + 1};
  kr_slice_t rvb = KR_SLICE_LIT(resp_head);
  if (wr(ctx, &rv, &rvb, 1, &w)) return -1;
  n++;
  /* revisit, server not modified: a 304 as the archive writes it, no
   * block, the validator in Heritrix's WARC-Etag */
  kr_warc_rec_t nm = rv;
  nm.id[0] = '\0';
  nm.date_ms = T0 + 2 * 86400000ull;
  nm.profile = KR_WARC_PROFILE_NOT_MODIFIED;
  kr_warc_field_t nmv = {"WARC-Etag", KR_SLICE_LIT("\"v1\"")};
  nm.extra = &nmv;
  nm.nextra = 1;
  kr_slice_t nmb = {"", 0};
  if (wr(ctx, &nm, &nmb, 1, &w)) return -1;
  n++;
  /* chunked, gzip-encoded response: payload digest from the caller */
  char pd[KR_SHA1_LABEL_SIZE];
  label_of(gz_body, gz_len, pd);
  kr_warc_rec_t cr = {.type = KR_WARC_RESPONSE, .date_ms = T0 + 5, .ip = "127.0.0.1",
                      .target_uri = kr_slice_cstr(url2), .payload = KR_WARC_PAYLOAD_DIGEST,
                      .payload_digest = pd};
  kr_slice_t crb = {chunked_resp, chunked_len};
  if (wr(ctx, &cr, &crb, 1, &w)) return -1;
  n++;
  /* truncated response */
  char th[128];
  snprintf(th, sizeof th,
           "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 99999\r\n\r\n");
  kr_warc_rec_t tr = {.type = KR_WARC_RESPONSE, .date_ms = T0 + 6, .ip = "127.0.0.1",
                      .target_uri = kr_slice_cstr(url3), .payload = KR_WARC_PAYLOAD_FROM,
                      .payload_from = strlen(th), .truncated = "length"};
  kr_slice_t trb[2] = {kr_slice_cstr(th), {page, 5000}};
  if (wr(ctx, &tr, trb, 2, &w)) return -1;
  n++;
  /* DNS resource */
  kr_buf_t db;
  kr_buf_init(&db, 4096);
  const char *addrs[] = {"127.0.0.1", "::1"};
  assert_int_equal(kr_warc_dns_block(&db, T0, "localhost", addrs, 2, 300), 0);
  kr_warc_rec_t dr = {.type = KR_WARC_RESOURCE, .date_ms = T0, .ip = "127.0.0.53",
                      .target_uri = KR_SLICE_LIT("dns:localhost"), .content_type = "text/dns",
                      .payload = KR_WARC_PAYLOAD_FROM};
  kr_slice_t dbs = {db.data, db.len};
  if (wr(ctx, &dr, &dbs, 1, &w)) return -1;
  n++;
  kr_buf_free(&db);
  return n;
}

/* Checks every record of a sample set the way warccheck.mjs does. */
static void check_sample_records(struct rrec *r, int n) {
  char l[KR_SHA1_LABEL_SIZE];
  static char pay[1 << 16];
  for (int i = 0; i < n; i++) {
    label_of(r[i].block.data, r[i].block.len, l);
    assert_string_equal(l, r[i].block_digest);
    assert_true(strncmp(r[i].id, "<urn:uuid:", 10) == 0);
    if (r[i].type == KR_WARC_RESPONSE && r[i].payload_digest[0]) {
      size_t pn = http_payload(r[i].block.data, r[i].block.len, pay);
      label_of(pay, pn, l);
      assert_string_equal(l, r[i].payload_digest);
    }
    if (r[i].type == KR_WARC_RESOURCE) {
      label_of(r[i].block.data, r[i].block.len, l);
      assert_string_equal(l, r[i].payload_digest);
    }
    if (r[i].type == KR_WARC_REVISIT) {
      int found = 0;
      for (int j = 0; j < n; j++)
        if (r[j].type == KR_WARC_RESPONSE && !strcmp(r[j].target, r[i].refers_uri) &&
            !strcmp(r[j].date, r[i].refers_date) &&
            !strcmp(r[j].payload_digest, r[i].payload_digest))
          found = 1;
      assert_true(found);
    }
  }
}

static int mem_write(void *ctx, kr_warc_rec_t *rec, const kr_slice_t *b, size_t n,
                     kr_warc_written_t *out) {
  return kr_warc_write(ctx, rec, b, n, out);
}

/* ---- dates and ids -------------------------------------------------------- */

static void dates(void **state) {
  (void)state;
  char d[KR_WARC_DATE_SIZE], ts[15];
  kr_warc_date(T0, d);
  assert_string_equal(d, "2025-11-22T04:20:00.123Z");
  uint64_t ms;
  assert_int_equal(kr_warc_date_parse(kr_slice_cstr(d), &ms), 0);
  assert_true(ms == T0);
  assert_int_equal(kr_warc_date_parse(KR_SLICE_LIT("2025-11-22T04:20:00Z"), &ms), 0);
  assert_true(ms == T0 - 123);
  assert_int_equal(kr_warc_date_parse(KR_SLICE_LIT("2025-11-22T04:20:00.1234567Z"), &ms), 0);
  assert_true(ms == T0 - 123 + 123);
  assert_int_equal(kr_warc_timestamp14(KR_SLICE_LIT("2017-03-06T04:02:06Z"), ts), 0);
  assert_string_equal(ts, "20170306040206");
  assert_int_equal(kr_warc_timestamp14(KR_SLICE_LIT("2017-03"), ts), 0);
  assert_string_equal(ts, "20170301000000");
  assert_int_equal(kr_warc_timestamp14(KR_SLICE_LIT("2017-03-06T04:02Z"), ts), 0);
  assert_string_equal(ts, "20170306040200");
  static const char *const bad[] = {"", "2017-13-01", "2017-03-06T04:02:06", "2017-03-06T04Z",
                                    "2017-03-06 04:02:06Z", "2017-03-06T04:02:06.Z",
                                    "2017-03-06T04:02:06ZZ", "17-03-06", "2017-03-32"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(kr_warc_timestamp14(kr_slice_cstr(bad[i]), ts), KR_EINVAL);
  assert_string_equal(kr_warc_type_name(KR_WARC_REVISIT), "revisit");
  assert_string_equal(kr_warc_type_name(99), "unknown");
  assert_int_equal(kr_warc_type_parse(KR_SLICE_LIT("Response")), KR_WARC_RESPONSE);
  assert_int_equal(kr_warc_type_parse(KR_SLICE_LIT("responsex")), KR_WARC_UNKNOWN);
}

static void ids_are_uuid4_and_distinct(void **state) {
  (void)state;
  struct mem m;
  mem_init(&m);
  kr_warc_writer_t *w;
  assert_int_equal(kr_warc_writer_new(NULL, mem_sink, &m, &w), 0);
  regex_t re;
  assert_int_equal(regcomp(&re, "^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                "[0-9a-f]{12}>$", REG_EXTENDED | REG_NOSUB), 0);
  static char ids[2000][KR_WARC_ID_SIZE];
  for (int i = 0; i < 2000; i++) {
    kr_warc_new_id(w, ids[i]);
    assert_int_equal(regexec(&re, ids[i], 0, NULL, 0), 0);
  }
  qsort(ids, 2000, KR_WARC_ID_SIZE, (int (*)(const void *, const void *))strcmp);
  for (int i = 1; i < 2000; i++) assert_true(strcmp(ids[i - 1], ids[i]) != 0);
  /* Two writers seeded from getrandom differ. */
  kr_warc_writer_t *w2;
  assert_int_equal(kr_warc_writer_new(NULL, mem_sink, &m, &w2), 0);
  char a[KR_WARC_ID_SIZE], b[KR_WARC_ID_SIZE];
  kr_warc_new_id(w, a);
  kr_warc_new_id(w2, b);
  assert_string_not_equal(a, b);
  regfree(&re);
  kr_warc_writer_free(w);
  kr_warc_writer_free(w2);
  kr_buf_free(&m.b);
}

/* ---- round trips ----------------------------------------------------------- */

static void round_trip_with(int gzip, int engine, size_t whole_max, size_t step) {
  struct mem m;
  mem_init(&m);
  kr_warc_writer_opts_t o;
  kr_warc_writer_opts_default(&o);
  o.gzip = gzip;
  o.engine = engine;
  if (whole_max) o.whole_max = whole_max;
  kr_warc_writer_t *w;
  assert_int_equal(kr_warc_writer_new(&o, mem_sink, &m, &w), 0);
  int n = write_every_type(mem_write, w, "http://127.0.0.1:8080");
  assert_int_equal(n, 9);
  if (gzip) assert_true(m.b.len > 2 && (unsigned char)m.b.data[0] == 0x1f);
  else assert_memory_equal(m.b.data, "WARC/1.1\r\n", 10);
  struct rrec r[16];
  int got = read_all(m.b.data, m.b.len, r, 16, step);
  assert_int_equal(got, n);
  int types[] = {KR_WARC_WARCINFO, KR_WARC_RESPONSE, KR_WARC_REQUEST, KR_WARC_METADATA,
                 KR_WARC_REVISIT, KR_WARC_REVISIT, KR_WARC_RESPONSE, KR_WARC_RESPONSE,
                 KR_WARC_RESOURCE};
  for (int i = 0; i < n; i++) assert_int_equal(r[i].type, types[i]);
  check_sample_records(r, n);
  /* Fields as written. */
  assert_string_equal(r[1].date, "2025-11-22T04:20:00.124Z");
  assert_string_equal(r[1].content_type, "application/http;msgtype=response");
  assert_string_equal(r[2].concurrent, r[1].id);
  assert_string_equal(r[2].content_type, "application/http;msgtype=request");
  assert_string_equal(r[3].content_type, "application/warc-fields");
  assert_non_null(memmem(r[3].block.data, r[3].block.len,
                         "outlink: http://127.0.0.1/p/7 L a/@href\r\n", 40));
  assert_non_null(memmem(r[3].block.data, r[3].block.len, "contentState: changed\r\n", 23));
  assert_string_equal(r[4].profile, KR_WARC_PROFILE_IDENTICAL);
  assert_string_equal(r[5].profile, KR_WARC_PROFILE_NOT_MODIFIED);
  assert_string_equal(r[5].payload_digest, r[1].payload_digest);
  assert_string_equal(r[7].truncated, "length");
  assert_non_null(memmem(r[0].block.data, r[0].block.len, "format: WARC File Format 1.1\r\n", 30));
  assert_non_null(
      memmem(r[0].block.data, r[0].block.len, "kria-config: warc.gzip-level=1\r\n", 32));
  assert_non_null(memmem(r[8].block.data, r[8].block.len, "localhost.\t300\tIN\tAAAA\t::1\n", 27));
  /* Extents tile the stream; each gzip member inflates alone to exactly
   * its record. */
  uint64_t at = 0;
  for (int i = 0; i < n; i++) {
    assert_true(r[i].ext.aligned);
    assert_true(r[i].ext.offset == at);
    assert_true(r[i].ext.end == r[i].ext.offset + r[i].ext.length + (gzip ? 0 : 4));
    at = r[i].ext.end;
    if (gzip) {
      struct rrec one[2];
      assert_int_equal(read_all(m.b.data + r[i].ext.offset, r[i].ext.length, one, 2, 0), 1);
      assert_string_equal(one[0].id, r[i].id);
      free_recs(one, 1);
      /* A plain gzip decoder sees one member. */
      z_stream z = {0};
      assert_int_equal(inflateInit2(&z, 31), Z_OK);
      static unsigned char outb[1 << 16];
      z.next_in = (unsigned char *)m.b.data + r[i].ext.offset;
      z.avail_in = (uInt)r[i].ext.length;
      z.next_out = outb;
      z.avail_out = sizeof outb;
      assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
      assert_int_equal(z.avail_in, 0);
      assert_memory_equal(outb, "WARC/1.1\r\n", 10);
      assert_memory_equal(outb + z.total_out - 4, "\r\n\r\n", 4);
      inflateEnd(&z);
    }
  }
  assert_true(at == m.b.len);
  free_recs(r, n);
  kr_warc_writer_free(w);
  kr_buf_free(&m.b);
}

static void round_trip_plain(void **s) { (void)s; round_trip_with(0, 0, 0, 0); }
static void round_trip_libdeflate(void **s) {
  (void)s;
  round_trip_with(1, KR_WARC_ENGINE_LIBDEFLATE, 0, 0);
}
static void round_trip_igzip(void **s) {
  (void)s;
  round_trip_with(1, KR_WARC_ENGINE_IGZIP, 0, 0);
  round_trip_with(1, KR_WARC_ENGINE_AUTO, 0, 0); /* igzip at level 1 */
}
static void round_trip_zlib(void **s) { (void)s; round_trip_with(1, KR_WARC_ENGINE_ZLIB, 0, 0); }
/* Records over whole_max stream through zlib; 1-byte and 333-byte reads. */
static void round_trip_past_whole_max(void **s) {
  (void)s;
  round_trip_with(1, KR_WARC_ENGINE_AUTO, 2000, 333);
  round_trip_with(1, KR_WARC_ENGINE_AUTO, 0, 1);
  round_trip_with(0, 0, 0, 1);
}

/* The sample page as one record with that engine and level (the same
 * record id each time, so sizes compare): its compressed size, after
 * checking that it reads back. */
static size_t page_record_size(int engine, int lvl) {
  struct mem m;
  mem_init(&m);
  kr_warc_writer_opts_t o;
  kr_warc_writer_opts_default(&o);
  o.level = lvl;
  o.engine = engine;
  o.seed = 42;
  kr_warc_writer_t *w;
  assert_int_equal(kr_warc_writer_new(&o, mem_sink, &m, &w), 0);
  kr_warc_rec_t rec = {
      .type = KR_WARC_RESOURCE, .date_ms = T0, .target_uri = KR_SLICE_LIT("urn:x")};
  kr_slice_t b = {page, sizeof page};
  kr_warc_written_t out;
  assert_int_equal(kr_warc_write(w, &rec, &b, 1, &out), 0);
  assert_true(out.bytes == m.b.len);
  assert_true(out.bytes < out.record_bytes / 2);
  struct rrec r[1];
  assert_int_equal(read_all(m.b.data, m.b.len, r, 1, 0), 1);
  assert_memory_equal(r[0].block.data, page, sizeof page);
  free_recs(r, 1);
  size_t n = m.b.len;
  kr_warc_writer_free(w);
  kr_buf_free(&m.b);
  return n;
}

static void levels_and_engines(void **state) {
  (void)state;
  make_samples();
  static const int engines[3] = {KR_WARC_ENGINE_LIBDEFLATE, KR_WARC_ENGINE_ZLIB,
                                 KR_WARC_ENGINE_IGZIP};
  size_t sizes[3][10];
  for (int e = 0; e < 3; e++)
    for (int lvl = 1; lvl <= 9; lvl++) sizes[e][lvl] = page_record_size(engines[e], lvl);
  /* Level 9 compresses at least as well as level 1 with libdeflate and
   * zlib; igzip's levels differ by a byte or two on a record this small. */
  assert_true(sizes[0][9] <= sizes[0][1] && sizes[1][9] <= sizes[1][1] &&
              sizes[2][9] <= sizes[2][1] + 16);
  /* The default engine is igzip at level 1, libdeflate above. */
  assert_true(page_record_size(KR_WARC_ENGINE_AUTO, 1) == sizes[2][1]);
  assert_true(page_record_size(KR_WARC_ENGINE_AUTO, 2) == sizes[0][2]);
  kr_warc_writer_opts_t o;
  kr_warc_writer_opts_default(&o);
  kr_warc_writer_t *w;
  struct mem m;
  mem_init(&m);
  o.level = 0;
  assert_int_equal(kr_warc_writer_new(&o, mem_sink, &m, &w), KR_EINVAL);
  o.level = 10;
  assert_int_equal(kr_warc_writer_new(&o, mem_sink, &m, &w), KR_EINVAL);
  o.level = 1;
  o.engine = 7;
  assert_int_equal(kr_warc_writer_new(&o, mem_sink, &m, &w), KR_EINVAL);
  assert_int_equal(kr_warc_writer_new(&o, NULL, &m, &w), KR_EINVAL);
  kr_buf_free(&m.b);
}

static void streaming(void **state) {
  (void)state;
  make_samples();
  for (int gz = 0; gz < 2; gz++) {
    struct mem m;
    mem_init(&m);
    kr_warc_writer_opts_t o;
    kr_warc_writer_opts_default(&o);
    o.gzip = gz;
    kr_warc_writer_t *w;
    assert_int_equal(kr_warc_writer_new(&o, mem_sink, &m, &w), 0);
    uint8_t d[KR_SHA1_LEN];
    size_t blen = sizeof resp_head - 1 + sizeof page;
    char *whole = malloc(blen);
    memcpy(whole, resp_head, sizeof resp_head - 1);
    memcpy(whole + sizeof resp_head - 1, page, sizeof page);
    assert_int_equal(kr_sha1(whole, blen, d), 0);
    char pd[KR_SHA1_LABEL_SIZE];
    label_of(page, sizeof page, pd);
    kr_warc_rec_t rec = {.type = KR_WARC_RESPONSE, .date_ms = T0,
                         .target_uri = KR_SLICE_LIT("http://a.test/"), .block_sha1 = d,
                         .payload = KR_WARC_PAYLOAD_DIGEST, .payload_digest = pd};
    assert_int_equal(kr_warc_begin(w, &rec, blen), 0);
    /* No whole write while a stream is open. */
    kr_warc_rec_t other = rec;
    assert_int_equal(kr_warc_write(w, &other, NULL, 0, NULL), KR_EINVAL);
    for (size_t at = 0; at < blen; at += 1000)
      assert_int_equal(kr_warc_append(w, whole + at, blen - at < 1000 ? blen - at : 1000), 0);
    kr_warc_written_t out;
    assert_int_equal(kr_warc_end(w, &out), 0);
    assert_true(out.bytes == m.b.len);
    struct rrec r[1];
    assert_int_equal(read_all(m.b.data, m.b.len, r, 1, 0), 1);
    check_sample_records(r, 1);
    assert_memory_equal(r[0].block.data, whole, blen);
    free_recs(r, 1);
    /* Too many bytes, too few, or other bytes: refused. */
    kr_warc_rec_t r2 = rec;
    r2.id[0] = '\0';
    assert_int_equal(kr_warc_begin(w, &r2, blen), 0);
    assert_int_equal(kr_warc_append(w, whole, blen), 0);
    assert_int_equal(kr_warc_append(w, "x", 1), KR_EINVAL);
    assert_int_equal(kr_warc_end(w, NULL), KR_EINVAL);
    r2.id[0] = '\0';
    assert_int_equal(kr_warc_begin(w, &r2, blen), 0);
    assert_int_equal(kr_warc_append(w, whole, blen - 1), 0);
    assert_int_equal(kr_warc_end(w, NULL), KR_EINVAL);
    r2.id[0] = '\0';
    assert_int_equal(kr_warc_begin(w, &r2, blen), 0);
    whole[100] ^= 1;
    assert_int_equal(kr_warc_append(w, whole, blen), 0);
    assert_int_equal(kr_warc_end(w, NULL), KR_EINVAL);
    /* Streaming needs the block digest and cannot hash a payload. */
    r2.block_sha1 = NULL;
    assert_int_equal(kr_warc_begin(w, &r2, blen), KR_EINVAL);
    r2.block_sha1 = d;
    r2.payload = KR_WARC_PAYLOAD_FROM;
    assert_int_equal(kr_warc_begin(w, &r2, blen), KR_EINVAL);
    /* Abandon resets. */
    r2.payload = KR_WARC_PAYLOAD_NONE;
    assert_int_equal(kr_warc_begin(w, &r2, blen), 0);
    kr_warc_abandon(w);
    assert_int_equal(kr_warc_append(w, "x", 1), KR_EINVAL);
    free(whole);
    kr_warc_writer_free(w);
    kr_buf_free(&m.b);
  }
}

/* Headers and warc-fields blocks byte for byte (they are written without
 * printf: every field, its order, the number formats). */
static void headers_byte_exact(void **state) {
  (void)state;
  struct mem m;
  mem_init(&m);
  kr_warc_writer_opts_t o;
  kr_warc_writer_opts_default(&o);
  o.gzip = 0;
  kr_warc_writer_t *w;
  assert_int_equal(kr_warc_writer_new(&o, mem_sink, &m, &w), 0);
  kr_warc_field_t ex = {"X-Kria-Test", KR_SLICE_LIT("v 1")};
  kr_warc_rec_t r = {.type = KR_WARC_REQUEST, .date_ms = T0, .ip = "127.0.0.1",
                     .target_uri = KR_SLICE_LIT("http://a.test:8080/p?q=1"),
                     .concurrent_to = "<urn:uuid:00000000-0000-4000-8000-000000000001>",
                     .extra = &ex, .nextra = 1};
  strcpy(r.id, "<urn:uuid:6b0b3e2c-1d4a-4c2e-9d6a-0c1f2e3d4b5a>");
  kr_slice_t b = KR_SLICE_LIT("GET /p?q=1 HTTP/1.1\r\nHost: a.test:8080\r\n\r\n");
  assert_int_equal(kr_warc_write(w, &r, &b, 1, NULL), 0);
  const char *want_head =
      "WARC/1.1\r\n"
      "WARC-Type: request\r\n"
      "WARC-Record-ID: <urn:uuid:6b0b3e2c-1d4a-4c2e-9d6a-0c1f2e3d4b5a>\r\n"
      "WARC-Date: 2025-11-22T04:20:00.123Z\r\n"
      "WARC-Target-URI: http://a.test:8080/p?q=1\r\n"
      "WARC-IP-Address: 127.0.0.1\r\n"
      "WARC-Concurrent-To: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
      "X-Kria-Test: v 1\r\n"
      "Content-Type: application/http;msgtype=request\r\n"
      "WARC-Block-Digest: sha1:";
  size_t hn = strlen(want_head);
  assert_true(m.b.len > hn);
  assert_memory_equal(m.b.data, want_head, hn);
  const char *rest = m.b.data + hn; /* 32 base32 digits, then the length */
  for (int i = 0; i < 32; i++) assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", rest[i]));
  const char *tail = "\r\nContent-Length: 42\r\n\r\nGET /p?q=1";
  assert_memory_equal(rest + 32, tail, strlen(tail));
  kr_warc_writer_free(w);
  kr_buf_free(&m.b);

  kr_buf_t mb;
  kr_buf_init(&mb, 1 << 16);
  kr_warc_outlink_t links[] = {{KR_SLICE_LIT("http://a.test/p/7"), 'L', KR_SLICE_LIT("a/@href")},
                               {KR_SLICE_LIT("http://a.test/i.png"), 'E', {NULL, 0}}};
  kr_warc_field_t ann[] = {{"contentState", KR_SLICE_LIT("changed")}};
  kr_warc_meta_t meta = {.via = KR_SLICE_LIT("http://a.test/"),
                         .hops_from_seed = KR_SLICE_LIT("LL"),
                         .fetch_time_ms = 1234567890123,
                         .outlinks = links,
                         .noutlinks = 2,
                         .annotations = ann,
                         .nannotations = 1};
  assert_int_equal(kr_warc_metadata_block(&mb, &meta), 0);
  assert_string_equal(mb.data, "via: http://a.test/\r\n"
                               "hopsFromSeed: LL\r\n"
                               "fetchTimeMs: 1234567890123\r\n"
                               "outlink: http://a.test/p/7 L a/@href\r\n"
                               "outlink: http://a.test/i.png E\r\n"
                               "contentState: changed\r\n");
  kr_buf_reset(&mb);
  meta.fetch_time_ms = 0;
  meta.noutlinks = 0;
  assert_int_equal(kr_warc_metadata_block(&mb, &meta), 0);
  assert_string_equal(mb.data, "via: http://a.test/\r\nhopsFromSeed: LL\r\nfetchTimeMs: 0\r\n"
                               "contentState: changed\r\n");
  kr_buf_free(&mb);
}

static void invalid_records_write_nothing(void **state) {
  (void)state;
  struct mem m;
  mem_init(&m);
  kr_warc_writer_t *w;
  assert_int_equal(kr_warc_writer_new(NULL, mem_sink, &m, &w), 0);
  kr_slice_t b = KR_SLICE_LIT("x");
  const kr_warc_rec_t good = {.type = KR_WARC_RESOURCE, .date_ms = T0,
                              .target_uri = KR_SLICE_LIT("urn:a")};
  kr_warc_rec_t r;
#define BAD(stmt)                                                   \
  do {                                                              \
    r = good;                                                       \
    stmt;                                                           \
    assert_int_equal(kr_warc_write(w, &r, &b, 1, NULL), KR_EINVAL); \
    assert_int_equal(m.b.len, 0);                                   \
  } while (0)
  BAD(r.date_ms = 0);
  BAD(r.type = KR_WARC_UNKNOWN);
  BAD(r.type = -1);
  BAD(r.target_uri = KR_SLICE_LIT("http://a/\r\nWARC-Type: evil"));
  BAD(r.target_uri = KR_SLICE_LIT("http://a/ b"));
  BAD(r.ip = "1.2.3.4\n");
  BAD(r.content_type = "text/html\r\nX: y");
  BAD(r.concurrent_to = "urn:uuid:no-brackets");
  BAD(r.warcinfo_id = "<a b>");
  BAD(strcpy(r.id, "plain"));
  BAD(r.payload = KR_WARC_PAYLOAD_FROM; r.payload_from = 2);
  BAD(r.payload = KR_WARC_PAYLOAD_DIGEST; r.payload_digest = NULL);
  BAD(r.payload = KR_WARC_PAYLOAD_DIGEST; r.payload_digest = "nocolon");
  BAD(r.payload = 9);
  kr_warc_field_t ex1 = {"Bad Name", KR_SLICE_LIT("v")}, ex2 = {"X-Ok", KR_SLICE_LIT("a\rb")};
  BAD(r.extra = &ex1; r.nextra = 1);
  BAD(r.extra = &ex2; r.nextra = 1);
  /* A revisit needs a profile, a payload digest and the original. */
  BAD(r.type = KR_WARC_REVISIT);
  BAD(r.type = KR_WARC_REVISIT; r.profile = KR_WARC_PROFILE_IDENTICAL;
      r.payload = KR_WARC_PAYLOAD_DIGEST; r.payload_digest = "sha1:X";
      r.refers_to_uri = KR_SLICE_LIT("http://a/"));
  BAD(r.type = KR_WARC_REVISIT; r.profile = KR_WARC_PROFILE_IDENTICAL;
      r.payload = KR_WARC_PAYLOAD_DIGEST; r.payload_digest = "sha1:X";
      r.refers_to_date_ms = T0);
  /* Too many slices, NULL slices. */
  r = good;
  kr_slice_t many[KR_WARC_MAX_SLICES + 1];
  for (int i = 0; i <= KR_WARC_MAX_SLICES; i++) many[i] = b;
  assert_int_equal(kr_warc_write(w, &r, many, KR_WARC_MAX_SLICES + 1, NULL), KR_EINVAL);
  kr_slice_t nul = {NULL, 3};
  assert_int_equal(kr_warc_write(w, &r, &nul, 1, NULL), KR_EINVAL);
  assert_int_equal(m.b.len, 0);
  /* An empty block and n = 0 are fine. */
  assert_int_equal(kr_warc_write(w, &r, NULL, 0, NULL), 0);
  /* Blocks refuse controls too. */
  kr_buf_t fb;
  kr_buf_init(&fb, 1024);
  kr_warc_info_t in = {.operator_name = "a\nb"};
  assert_int_equal(kr_warc_info_block(&fb, &in), KR_EINVAL);
  assert_int_equal(fb.len, 0);
  kr_warc_outlink_t l = {KR_SLICE_LIT("http://a/ b"), 'L', {NULL, 0}};
  kr_warc_meta_t me = {.fetch_time_ms = -1, .outlinks = &l, .noutlinks = 1};
  assert_int_equal(kr_warc_metadata_block(&fb, &me), KR_EINVAL);
  const char *bad_addr[] = {"1.2.3.4\n"};
  assert_int_equal(kr_warc_dns_block(&fb, T0, "a.test", bad_addr, 1, 1), KR_EINVAL);
  assert_int_equal(fb.len, 0);
  kr_buf_free(&fb);
  kr_warc_writer_free(w);
  kr_buf_free(&m.b);
#undef BAD
}

static void sink_errors_propagate(void **state) {
  (void)state;
  make_samples();
  for (int e = 0; e < 4; e++) {
    struct mem m;
    mem_init(&m);
    kr_warc_writer_opts_t o;
    kr_warc_writer_opts_default(&o);
    o.gzip = e > 0;
    o.engine = e == 3 ? KR_WARC_ENGINE_LIBDEFLATE : e == 2 ? KR_WARC_ENGINE_ZLIB : KR_WARC_ENGINE_AUTO;
    kr_warc_writer_t *w;
    assert_int_equal(kr_warc_writer_new(&o, mem_sink, &m, &w), 0);
    m.fail_after = 0;
    kr_warc_rec_t r = {
        .type = KR_WARC_RESOURCE, .date_ms = T0, .target_uri = KR_SLICE_LIT("urn:a")};
    kr_slice_t b = {page, sizeof page};
    assert_int_equal(kr_warc_write(w, &r, &b, 1, NULL), KR_EIO);
    /* The next record is whole again. */
    m.fail_after = -1;
    r.id[0] = '\0';
    assert_int_equal(kr_warc_write(w, &r, &b, 1, NULL), 0);
    struct rrec rr[2];
    assert_int_equal(read_all(m.b.data, m.b.len, rr, 2, 0), 1);
    free_recs(rr, 1);
    kr_warc_writer_free(w);
    kr_buf_free(&m.b);
  }
}

/* ---- hostile input ---------------------------------------------------------- */

static int count_records(const void *p, size_t n, int *err) {
  struct rrec r[64];
  int c = read_all(p, n, r, 64, 0);
  if (c < 0) {
    *err = c;
    return -1;
  }
  free_recs(r, c);
  *err = 0;
  return c;
}

static void write_sample(struct mem *m, int gzip) {
  mem_init(m);
  kr_warc_writer_opts_t o;
  kr_warc_writer_opts_default(&o);
  o.gzip = gzip;
  kr_warc_writer_t *w;
  assert_int_equal(kr_warc_writer_new(&o, mem_sink, m, &w), 0);
  assert_int_equal(write_every_type(mem_write, w, "http://h.test"), 9);
  kr_warc_writer_free(w);
}

/* Cut at every offset: never a crash; the count of whole records before
 * the cut is what a repair would keep. */
static void truncated_everywhere(void **state) {
  (void)state;
  for (int gz = 0; gz < 2; gz++) {
    struct mem m;
    write_sample(&m, gz);
    struct rrec r[16];
    assert_int_equal(read_all(m.b.data, m.b.len, r, 16, 0), 9);
    for (size_t cut = 0; cut < m.b.len; cut += gz ? 1 : 3) {
      int err, c = count_records(m.b.data, cut, &err);
      int complete = 0;
      for (int i = 0; i < 9; i++)
        if (r[i].ext.end <= cut) complete = i + 1;
      int boundary = cut == 0;
      for (int i = 0; i < 9; i++)
        if (r[i].ext.end == cut) boundary = 1;
      if (boundary) {
        assert_int_equal(c, complete);
      } else {
        assert_int_equal(c, -1);
        assert_true(err == KR_EWARC);
      }
    }
    free_recs(r, 9);
    kr_buf_free(&m.b);
  }
}

static void hostile_headers(void **state) {
  (void)state;
  int err;
  static const char *const bad[] = {
      "garbage garbage\r\n\r\n",
      "\r\n\r\n",
      "\n",
      "WARC/1.1\r\nWARC-Type: resource\r\n\r\nxx\r\n\r\n",             /* no length */
      "WARC/1.1\r\nContent-Length: 2\r\n\r\nxx\r\n\r\n",              /* no type */
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: -2\r\n\r\n",
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 99999999999999999999\r\n\r\n",
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nxx\r\n\r\n",
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 1\r\n\r\nxx\r\n\r\n", /* too small */
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\nxx\r\n\r\n", /* too big */
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 99\r\n\r\nxx\r\n\r\n",
      "WARC/1.1\r\n no field\r\nContent-Length: 0\r\n\r\n\r\n\r\n",
      "WARC/1.1\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n\r\n\r\n",
      "WARC/1.1\r\nNoColon\r\nContent-Length: 0\r\n\r\n\r\n\r\n",
      "WARC/\r\nWARC-Type: resource\r\nContent-Length: 0\r\n\r\n\r\n\r\n",
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 0\r\n\r\n\r\n\r\nxyz",
      "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 0\r\n",
      "\x1f\x8b\x08\x00garbage-not-deflate",
      "\x1f\x8b",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(count_records(bad[i], strlen(bad[i]), &err), -1);
    assert_int_equal(err, KR_EWARC);
  }
  /* Fine: empty input, LF line ends, continuation lines, unknown types. */
  assert_int_equal(count_records("", 0, &err), 0);
  const char *lf =
      "WARC/1.0\nWARC-Type: future\nX-Long: a\n  b\n\tc\nContent-Length: 2\n\nxx\r\n\r\n";
  struct rrec r[2];
  assert_int_equal(read_all(lf, strlen(lf), r, 2, 0), 1);
  assert_int_equal(r[0].type, KR_WARC_UNKNOWN);
  free_recs(r, 1);
  struct src s = {(const unsigned char *)lf, strlen(lf), 0, 0};
  kr_warc_reader_t *rd = kr_warc_reader_new(NULL, mem_source, &s);
  const kr_warc_header_t *h;
  assert_int_equal(kr_warc_reader_next(rd, &h), 1);
  kr_slice_t v = kr_warc_header_get(h, "x-long");
  assert_int_equal(v.n, 5);
  assert_memory_equal(v.p, "a b c", 5);
  assert_string_equal(h->fields[0].name, "WARC-Type");
  assert_int_equal(h->version.n, 8);
  assert_int_equal(kr_warc_reader_next(rd, &h), 0);
  assert_int_equal(kr_warc_reader_finish(rd, NULL), KR_EINVAL);
  kr_warc_reader_free(rd);
  /* A huge header is KR_ETOOBIG after max_header bytes, not a huge buffer. */
  size_t big = 8u << 20;
  char *hb = malloc(big);
  memcpy(hb, "WARC/1.1\r\nX: ", 13);
  memset(hb + 13, 'a', big - 13);
  kr_warc_reader_opts_t ro = {.max_header = 4096};
  struct src s2 = {(unsigned char *)hb, big, 0, 0};
  rd = kr_warc_reader_new(&ro, mem_source, &s2);
  assert_int_equal(kr_warc_reader_next(rd, &h), KR_ETOOBIG);
  assert_true(s2.at <= 4096 + 65536);
  assert_non_null(strstr(kr_warc_reader_errmsg(rd), "header over"));
  /* Sticky. */
  assert_int_equal(kr_warc_reader_next(rd, &h), KR_ETOOBIG);
  kr_warc_reader_free(rd);
  /* Garbage without any newline: found at the fifth byte. */
  memset(hb, 'z', big);
  struct src s3 = {(unsigned char *)hb, big, 0, 0};
  rd = kr_warc_reader_new(NULL, mem_source, &s3);
  assert_int_equal(kr_warc_reader_next(rd, &h), KR_EWARC);
  assert_true(s3.at <= 65536);
  kr_warc_reader_free(rd);
  /* Garbage that starts like a record is refused by its magic, whether
   * the source gives it byte by byte or whole, before the header limit. */
  memcpy(hb, "WARC\xff", 5);
  for (size_t step = 1; step <= 1u << 20; step <<= 10) {
    struct src s5 = {(unsigned char *)hb, 5000, 0, step};
    kr_warc_reader_opts_t ro3 = {.max_header = 300};
    rd = kr_warc_reader_new(&ro3, mem_source, &s5);
    assert_int_equal(kr_warc_reader_next(rd, &h), KR_EWARC);
    kr_warc_reader_free(rd);
  }
  /* Too many fields. */
  size_t k = (size_t)sprintf(hb, "WARC/1.1\r\n");
  for (int i = 0; i < 100; i++) k += (size_t)sprintf(hb + k, "F%d: v\r\n", i);
  k += (size_t)sprintf(hb + k, "WARC-Type: resource\r\nContent-Length: 0\r\n\r\n\r\n\r\n");
  kr_warc_reader_opts_t ro2 = {.max_fields = 50};
  struct src s4 = {(unsigned char *)hb, k, 0, 0};
  rd = kr_warc_reader_new(&ro2, mem_source, &s4);
  assert_int_equal(kr_warc_reader_next(rd, &h), KR_ETOOBIG);
  kr_warc_reader_free(rd);
  assert_int_equal(count_records(hb, k, &err), 1);
  free(hb);
}

/* Empty gzip members between records are skipped and offsets stay right;
 * a record split over two members is one record spanning both; two
 * records in one member are read but not aligned. */
static void gzip_member_layouts(void **state) {
  (void)state;
  static const unsigned char empty_member[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3,
                                               3,    0,    0, 0, 0, 0, 0, 0, 0, 0};
  struct mem m;
  write_sample(&m, 1);
  struct rrec r[16];
  assert_int_equal(read_all(m.b.data, m.b.len, r, 16, 0), 9);
  kr_buf_t b;
  kr_buf_init(&b, 1u << 24);
  kr_buf_append(&b, empty_member, sizeof empty_member);
  kr_buf_append(&b, m.b.data, r[1].ext.offset + r[1].ext.length);
  kr_buf_append(&b, empty_member, sizeof empty_member);
  kr_buf_append(&b, empty_member, sizeof empty_member);
  kr_buf_append(&b, m.b.data + r[2].ext.offset, r[2].ext.length);
  struct rrec x[8];
  assert_int_equal(read_all(b.data, b.len, x, 8, 0), 3);
  assert_true(x[0].ext.offset == sizeof empty_member);
  assert_true(x[2].ext.offset == sizeof empty_member * 3 + r[1].ext.offset + r[1].ext.length);
  assert_true(x[2].ext.length == r[2].ext.length);
  free_recs(x, 3);
  kr_buf_reset(&b);
  /* Trailing empty member and then garbage. */
  kr_buf_append(&b, m.b.data, r[0].ext.length);
  kr_buf_append(&b, empty_member, sizeof empty_member);
  int err;
  assert_int_equal(count_records(b.data, b.len, &err), 1);
  kr_buf_append(&b, "junk", 4);
  assert_int_equal(count_records(b.data, b.len, &err), -1);
  assert_int_equal(err, KR_EWARC);
  /* Two records compressed into one member. */
  struct mem pm;
  write_sample(&pm, 0);
  struct rrec pr[16];
  assert_int_equal(read_all(pm.b.data, pm.b.len, pr, 16, 0), 9);
  static unsigned char zb[1 << 17];
  uLongf zn = sizeof zb;
  z_stream z = {0};
  assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = (unsigned char *)pm.b.data;
  z.avail_in = (uInt)pr[2].ext.end;
  z.next_out = zb;
  z.avail_out = (uInt)zn;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  zn = z.total_out;
  deflateEnd(&z);
  assert_int_equal(read_all(zb, zn, x, 8, 0), 3);
  assert_false(x[0].ext.aligned);
  assert_false(x[1].ext.aligned);
  assert_false(x[2].ext.aligned); /* started inside the member */
  free_recs(x, 3);
  free_recs(pr, 9);
  free_recs(r, 9);
  kr_buf_free(&b);
  kr_buf_free(&m.b);
  kr_buf_free(&pm.b);
}

/* ---- files -------------------------------------------------------------------- */

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  kr_log_level = KR_LOG_ERROR;
  return th_tmpdir(tmpdir, sizeof tmpdir, "warc");
}

static int teardown(void **state) {
  (void)state;
  return th_rmtree(tmpdir);
}

static void sub(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", tmpdir, name);
  mkdir(out, 0755);
}

static int list_dir(const char *dir, char names[][256], int max) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      assert_true(n < max);
      snprintf(names[n++], 256, "%s", e->d_name);
    }
  closedir(d);
  qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
  return n;
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)sz + 1);
  assert_int_equal(fread(p, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  *n = (size_t)sz;
  return p;
}

static void spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  fclose(f);
}

static int file_write(void *ctx, kr_warc_rec_t *rec, const kr_slice_t *b, size_t n,
                      kr_warc_written_t *out) {
  kr_warcfile_loc_t loc;
  int err = kr_warcfile_write(ctx, rec, b, n, &loc);
  if (!err && out) *out = loc.w;
  return err;
}

static void prefix_rules(void **state) {
  (void)state;
  static const char *const bad[] = {
      "",
      "..",
      "../x",
      "a/b",
      "/abs",
      ".hidden",
      "a..b",
      "a b",
      "a\nb",
      "x\\y",
      "0123456789012345678901234567890123456789012345678901234567890123456789"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_false(kr_warcfile_prefix_ok(bad[i]));
  assert_false(kr_warcfile_prefix_ok(NULL));
  assert_true(kr_warcfile_prefix_ok("kria"));
  assert_true(kr_warcfile_prefix_ok("my-crawl_2.x"));
  char dir[300];
  sub(dir, sizeof dir, "prefix");
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = dir;
  kr_warcfile_t *wf;
  char err[256];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    o.prefix = bad[i];
    assert_int_equal(kr_warcfile_open(&o, &wf, err, sizeof err), KR_EINVAL);
    assert_non_null(strstr(err, "prefix"));
  }
  o.prefix = "ok";
  o.dir = "";
  assert_int_equal(kr_warcfile_open(&o, &wf, err, sizeof err), KR_EINVAL);
  o.dir = "/proc/no/such/dir/for/kria";
  assert_int_equal(kr_warcfile_open(&o, &wf, err, sizeof err), KR_EIO);
  assert_non_null(strstr(err, "/proc/no/such"));
  o.dir = dir;
  o.durability = 7;
  assert_int_equal(kr_warcfile_open(&o, &wf, err, sizeof err), KR_EINVAL);
  /* A host name with a slash cannot escape either. */
  o.durability = KR_WARC_SYNC_NONE;
  o.host = "../../etc/x";
  assert_int_equal(kr_warcfile_open(&o, &wf, err, sizeof err), 0);
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:x")};
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0);
  assert_null(strchr(kr_warcfile_current(wf), '/'));
  assert_int_equal(kr_warcfile_close(wf), 0);
  char names[4][256];
  assert_int_equal(list_dir(dir, names, 4), 1);
}

static void names_rotation_and_locations(void **state) {
  (void)state;
  make_samples();
  char dir[300];
  sub(dir, sizeof dir, "rotate");
  kr_clock_t clk;
  kr_clock_init_virtual(&clk, T0);
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = dir;
  o.prefix = "crawl-x";
  o.host = "host.test";
  o.max_size = 30000;
  o.clock = &clk;
  o.info.operator_name = "Unit tests";
  o.info.is_part_of = "crawl-x";
  kr_warcfile_t *wf;
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  assert_null(kr_warcfile_current(wf));
  kr_warcfile_loc_t locs[40];
  char ids[40][KR_WARC_ID_SIZE];
  for (int i = 0; i < 40; i++) {
    kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:x"),
                       .payload = KR_WARC_PAYLOAD_FROM};
    /* distinct, poorly compressible blocks: ~5 KB each on disk */
    char blk[6000];
    uint64_t x = 88172645463325252ull + (uint64_t)i;
    for (size_t k = 0; k < sizeof blk; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      blk[k] = (char)(x >> 56);
    }
    kr_slice_t b = {blk, sizeof blk};
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, &locs[i]), 0);
    assert_true(r.date_ms == T0 + (uint64_t)i * 1000); /* filled from the clock */
    memcpy(ids[i], r.id, sizeof ids[i]);
    assert_non_null(kr_warcfile_current(wf));
    assert_non_null(strstr(kr_warcfile_current(wf), ".warc.gz.open"));
    kr_clock_advance(&clk, 1000);
  }
  assert_int_equal(kr_warcfile_close(wf), 0);
  char names[16][256];
  int nf = list_dir(dir, names, 16);
  assert_true(nf >= 5);
  regex_t re;
  assert_int_equal(regcomp(&re, "^crawl-x-[0-9]{17}-[0-9]{5}-host\\.test\\.warc\\.gz$",
                           REG_EXTENDED | REG_NOSUB), 0);
  for (int i = 0; i < nf; i++) assert_int_equal(regexec(&re, names[i], 0, NULL, 0), 0);
  regfree(&re);
  assert_memory_equal(names[0], "crawl-x-20251122042000123-00000-host.test.warc.gz", 50);
  /* Each file: warcinfo first, size within bounds, every record names it,
   * locations point at the records. */
  int seen = 0;
  for (int i = 0; i < nf; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%.300s/%.255s", dir, names[i]);
    size_t n;
    unsigned char *p = slurp(path, &n);
    struct rrec r[64];
    int c = read_all(p, n, r, 64, 0);
    assert_true(c >= 2);
    assert_int_equal(r[0].type, KR_WARC_WARCINFO);
    assert_non_null(memmem(r[0].block.data, r[0].block.len, "operator: Unit tests\r\n", 22));
    assert_non_null(memmem(r[0].block.data, r[0].block.len, "software: kria/", 15));
    if (i < nf - 1) assert_true(n >= o.max_size && n < o.max_size + 8000);
    for (int k = 1; k < c; k++) {
      assert_string_equal(r[k].warcinfo, r[0].id);
      assert_string_equal(ids[seen], r[k].id);
      assert_string_equal(locs[seen].file, names[i]);
      assert_true(locs[seen].offset == r[k].ext.offset);
      assert_true(locs[seen].length == r[k].ext.length);
      seen++;
    }
    char serial[16];
    snprintf(serial, sizeof serial, "-%05d-", i);
    assert_non_null(strstr(names[i], serial));
    free_recs(r, c);
    free(p);
  }
  assert_int_equal(seen, 40);
  /* A new writer continues the serials. */
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:x")};
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0);
  char serial[16];
  snprintf(serial, sizeof serial, "-%05d-", nf);
  assert_non_null(strstr(kr_warcfile_current(wf), serial));
  /* An invalid record writes nothing. */
  uint64_t size = kr_warcfile_size(wf);
  r.type = -1;
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), KR_EINVAL);
  assert_true(kr_warcfile_size(wf) == size);
  assert_int_equal(kr_warcfile_rotate(wf), 0);
  assert_null(kr_warcfile_current(wf));
  assert_int_equal(kr_warcfile_rotate(wf), 0);
  assert_int_equal(kr_warcfile_close(wf), 0);
}

/* A held file is not rotated: the rest of a visit stays with its first
 * record (kr_warcfile_hold), whole or streamed; the next visit rotates. */
static void hold_keeps_a_visit_in_one_file(void **state) {
  (void)state;
  char dir[300];
  sub(dir, sizeof dir, "hold");
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = dir;
  o.writer.gzip = 0;
  o.max_size = 1000;
  kr_warcfile_t *wf;
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  char blk[2000];
  memset(blk, 'x', sizeof blk);
  kr_slice_t b = {blk, sizeof blk};
  kr_warcfile_loc_t l1, l2, l3, l4;
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:x"),
                     .payload = KR_WARC_PAYLOAD_FROM};
  assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, &l1), 0); /* the file is full */
  kr_warcfile_hold(wf, 1);
  kr_warc_rec_t m = {.type = KR_WARC_METADATA, .target_uri = KR_SLICE_LIT("urn:x"),
                     .payload = KR_WARC_PAYLOAD_FROM};
  assert_int_equal(kr_warcfile_write(wf, &m, &b, 1, &l2), 0);
  uint8_t d[KR_SHA1_LEN];
  assert_int_equal(kr_sha1("0123456789", 10, d), 0);
  kr_warc_rec_t s = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:y"),
                     .block_sha1 = d};
  assert_int_equal(kr_warcfile_begin(wf, &s, 10), 0);
  assert_int_equal(kr_warcfile_append(wf, "0123456789", 10), 0);
  assert_int_equal(kr_warcfile_end(wf, &l3), 0);
  assert_string_equal(l2.file, l1.file);
  assert_string_equal(l3.file, l1.file);
  kr_warcfile_hold(wf, 0);
  kr_warc_rec_t n = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:z"),
                     .payload = KR_WARC_PAYLOAD_FROM};
  assert_int_equal(kr_warcfile_write(wf, &n, &b, 1, &l4), 0);
  assert_string_not_equal(l4.file, l1.file);
  /* kr_warcfile_rotate closes a held file all the same */
  kr_warcfile_hold(wf, 1);
  assert_int_equal(kr_warcfile_rotate(wf), 0);
  assert_null(kr_warcfile_current(wf));
  assert_int_equal(kr_warcfile_close(wf), 0);
  char names[4][256];
  assert_int_equal(list_dir(dir, names, 4), 2);
}

static void streaming_to_file(void **state) {
  (void)state;
  make_samples();
  char dir[300];
  sub(dir, sizeof dir, "stream");
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = dir;
  o.writer.gzip = 0;
  kr_warcfile_t *wf;
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  uint8_t d[KR_SHA1_LEN];
  assert_int_equal(kr_sha1(page, sizeof page, d), 0);
  /* An id given in advance is kept. */
  char pre[KR_WARC_ID_SIZE];
  kr_warcfile_new_id(wf, pre);
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:s"),
                     .block_sha1 = d};
  memcpy(r.id, pre, sizeof r.id);
  kr_warcfile_loc_t loc;
  assert_int_equal(kr_warcfile_begin(wf, &r, sizeof page), 0);
  assert_int_equal(kr_warcfile_append(wf, page, 5000), 0);
  assert_int_equal(kr_warcfile_append(wf, page + 5000, sizeof page - 5000), 0);
  assert_int_equal(kr_warcfile_end(wf, &loc), 0);
  assert_string_equal(r.id, pre);
  uint64_t size = kr_warcfile_size(wf);
  assert_true(loc.offset + loc.length + 4 == size); /* plain: CDX length */
  /* A stream that goes wrong is cut away. */
  r.id[0] = '\0';
  assert_int_equal(kr_warcfile_begin(wf, &r, sizeof page), 0);
  assert_int_equal(kr_warcfile_append(wf, page, 100), 0);
  assert_true(kr_warcfile_size(wf) > size);
  assert_int_equal(kr_warcfile_end(wf, NULL), KR_EINVAL);
  assert_true(kr_warcfile_size(wf) == size);
  r.id[0] = '\0';
  assert_int_equal(kr_warcfile_begin(wf, &r, 10), 0);
  assert_int_equal(kr_warcfile_append(wf, page, 11), KR_EINVAL);
  assert_true(kr_warcfile_size(wf) == size);
  assert_int_equal(kr_warcfile_append(wf, page, 1), KR_EINVAL);
  /* Rotation in the middle of a stream drops the partial record. */
  r.id[0] = '\0';
  assert_int_equal(kr_warcfile_begin(wf, &r, sizeof page), 0);
  assert_int_equal(kr_warcfile_append(wf, page, 10), 0);
  char cur[300];
  snprintf(cur, sizeof cur, "%s", kr_warcfile_current(wf));
  assert_int_equal(kr_warcfile_close(wf), 0);
  char names[4][256];
  assert_int_equal(list_dir(dir, names, 4), 1);
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", dir, names[0]);
  size_t n;
  unsigned char *p = slurp(path, &n);
  assert_true(n == size);
  struct rrec rr[4];
  assert_int_equal(read_all(p, n, rr, 4, 0), 2);
  assert_memory_equal(rr[1].block.data, page, sizeof page);
  free_recs(rr, 2);
  free(p);
}

/* ---- failures injected ------------------------------------------------------- */

static long space_left; /* bytes the fake disk still takes; < 0: unlimited */
static int sync_fails;
static int syncs;

static ssize_t fake_pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  size_t want = 0;
  for (int i = 0; i < n; i++) want += iov[i].iov_len;
  if (space_left >= 0 && want > (size_t)space_left) want = (size_t)space_left;
  if (want == 0) {
    errno = ENOSPC;
    return -1;
  }
  /* Write only the part the fake disk takes: a partial write. */
  struct iovec v[32];
  int k = 0;
  size_t left = want;
  for (int i = 0; i < n && left; i++, k++) {
    v[k] = iov[i];
    if (v[k].iov_len > left) v[k].iov_len = left;
    left -= v[k].iov_len;
  }
  ssize_t got = pwritev(fd, v, k, off);
  if (got > 0 && space_left >= 0) space_left -= got;
  return got;
}

static int fake_sync(int fd) {
  (void)fd;
  syncs++;
  if (sync_fails) {
    errno = EIO;
    return -1;
  }
  return 0;
}

/* Options for a writer into dir on the fake disk (unlimited until a
 * test sets space_left), gzip or not, with a write buffer of buffer bytes
 * (0: none). */
static void fake_disk_opts(kr_warcfile_opts_t *o, const char *dir, int gz, size_t buffer) {
  kr_warcfile_opts_default(o);
  o->dir = dir;
  o->writer.gzip = gz;
  o->buffer = buffer;
  o->pwritev_fn = fake_pwritev;
  space_left = -1;
}

static void full_disk_cuts_back(void **state) {
  (void)state;
  make_samples();
  for (int gz = 0; gz < 2; gz++) {
    char dir[300];
    sub(dir, sizeof dir, gz ? "enospc-gz" : "enospc");
    kr_warcfile_opts_t o;
    fake_disk_opts(&o, dir, gz, 0); /* each record written at once (buffered: see below) */
    kr_warcfile_t *wf;
    assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
    /* No space at all: the first file cannot even get its warcinfo. */
    space_left = 10;
    kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:a"),
                       .payload = KR_WARC_PAYLOAD_FROM};
    kr_slice_t b = {page, sizeof page};
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), KR_ENOSPC);
    assert_null(kr_warcfile_current(wf));
    assert_non_null(strstr(kr_warcfile_errmsg(wf), "No space left"));
    char names[8][256];
    assert_int_equal(list_dir(dir, names, 8), 0);
    /* Space for two records, then it runs out in the middle of the third
     * (and at every offset of it). */
    space_left = -1;
    r.id[0] = '\0';
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    r.id[0] = '\0';
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    uint64_t good = kr_warcfile_size(wf);
    size_t step = gz ? 97 : 1001;
    for (long room = 0; room < (long)(gz ? 4000 : 12000); room += (long)step) {
      space_left = room;
      r.id[0] = '\0';
      int err = kr_warcfile_write(wf, &r, &b, 1, NULL);
      if (err == 0) break; /* it fitted */
      assert_int_equal(err, KR_ENOSPC);
      assert_true(kr_warcfile_size(wf) == good);
      char path[1200];
      snprintf(path, sizeof path, "%s/%s", dir, kr_warcfile_current(wf));
      struct stat sb;
      assert_int_equal(stat(path, &sb), 0);
      assert_true((uint64_t)sb.st_size == good);
    }
    /* Space returns: writing goes on in the same file. */
    space_left = -1;
    r.id[0] = '\0';
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    assert_int_equal(kr_warcfile_close(wf), 0);
    assert_int_equal(list_dir(dir, names, 8), 1);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, names[0]);
    size_t n;
    unsigned char *p = slurp(path, &n);
    struct rrec rr[8];
    int c = read_all(p, n, rr, 8, 0);
    assert_true(c == 4 || c == 5);
    free_recs(rr, c);
    free(p);
  }
}

/* ---- the write buffer ------------------------------------------------------- */

static int pwritev_calls;

static ssize_t counting_pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  pwritev_calls++;
  return fake_pwritev(fd, iov, n, off);
}

/* Random bytes: more than the tests' 16 KiB buffer even compressed. */
static char noise[20000];

static void make_noise(void) {
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof noise; i++) noise[i] = (char)((x = x * 1103515245u + 12345u) >> 24);
}

static uint64_t on_disk(const char *dir, kr_warcfile_t *wf) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", dir, kr_warcfile_current(wf));
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  return (uint64_t)sb.st_size;
}

/* The file's records, read back after its close; *n their count. */
static struct rrec *read_dir_file(const char *dir, int *n) {
  char names[8][256];
  assert_int_equal(list_dir(dir, names, 8), 1);
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", dir, names[0]);
  size_t len;
  unsigned char *p = slurp(path, &len);
  struct rrec *rr = calloc(64, sizeof *rr);
  *n = read_all(p, len, rr, 64, 0);
  free(p);
  return rr;
}

/* Records gather in the buffer and reach the file in a few large writes:
 * at a flush, a sync (also one begun for another thread) and the close;
 * a record larger than the buffer goes straight through. */
static void write_buffer_gathers_records(void **state) {
  (void)state;
  static char blk[1000];
  for (int gz = 0; gz < 2; gz++) {
    char dir[300];
    sub(dir, sizeof dir, gz ? "wbuf-gz" : "wbuf");
    kr_warcfile_opts_t o;
    kr_warcfile_opts_default(&o);
    assert_true(o.buffer == KR_WARCFILE_BUFFER);
    fake_disk_opts(&o, dir, gz, 16384);
    o.pwritev_fn = counting_pwritev;
    o.durability = KR_WARC_SYNC_BATCH;
    o.sync_fn = fake_sync;
    sync_fails = 0;
    kr_warcfile_t *wf;
    assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
    pwritev_calls = 0;
    for (int i = 0; i < 40; i++) {
      memset(blk, 'a' + i % 26, sizeof blk);
      kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:a")};
      kr_slice_t b = {blk, sizeof blk};
      assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    }
    /* ~44 KB (plain) in 16 KiB writes, not 41 writes */
    assert_true(pwritev_calls >= (gz ? 0 : 2) && pwritev_calls <= 3);
    assert_true(on_disk(dir, wf) < kr_warcfile_size(wf));
    assert_int_equal(kr_warcfile_flush(wf), 0);
    assert_true(on_disk(dir, wf) == kr_warcfile_size(wf));
    assert_int_equal(kr_warcfile_flush(wf), 0); /* nothing left: no write */
    int calls = pwritev_calls;
    kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:b")};
    kr_slice_t b = {blk, sizeof blk};
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    assert_int_equal(pwritev_calls, calls);
    kr_warcfile_syncjob_t j;
    assert_int_equal(kr_warcfile_sync_begin(wf, &j), 1);
    assert_true(on_disk(dir, wf) == kr_warcfile_size(wf));
    kr_warcfile_sync_run(&j);
    assert_int_equal(kr_warcfile_sync_end(wf, &j), 0);
    r.id[0] = '\0';
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    assert_int_equal(kr_warcfile_sync(wf), 0);
    assert_true(on_disk(dir, wf) == kr_warcfile_size(wf));
    /* larger than the buffer: written as it comes */
    make_noise();
    kr_slice_t big = {noise, sizeof noise};
    for (int k = 0; k < 3; k++) {
      r.id[0] = '\0';
      assert_int_equal(kr_warcfile_write(wf, &r, &big, 1, NULL), 0);
    }
    assert_true(on_disk(dir, wf) == kr_warcfile_size(wf));
    r.id[0] = '\0';
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    assert_int_equal(kr_warcfile_close(wf), 0);
    int n;
    struct rrec *rr = read_dir_file(dir, &n);
    assert_int_equal(n, 1 + 40 + 2 + 3 + 1);
    for (int i = 0; i < 40; i++) {
      assert_int_equal(rr[1 + i].block.len, sizeof blk);
      assert_int_equal(rr[1 + i].block.data[999], 'a' + i % 26);
    }
    assert_memory_equal(rr[43].block.data, noise, sizeof noise);
    free_recs(rr, n);
    free(rr);
  }
}

/* A write that fails (ENOSPC) while older records wait in the buffer
 * cuts away only the record being written: the older ones stay buffered
 * (also the rest of a flush that got only part way) and reach the file
 * when there is room again. */
static void buffered_records_outlive_a_failed_write(void **state) {
  (void)state;
  static char blk[1000];
  memset(blk, 'q', sizeof blk);
  for (int gz = 0; gz < 2; gz++) {
    char dir[300];
    sub(dir, sizeof dir, gz ? "wbuf-full-gz" : "wbuf-full");
    kr_warcfile_opts_t o;
    fake_disk_opts(&o, dir, gz, 16384);
    kr_warcfile_t *wf;
    assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
    kr_slice_t b = {blk, sizeof blk};
    for (int i = 0; i < 5; i++) {
      kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:a")};
      assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    }
    uint64_t good = kr_warcfile_size(wf);
    assert_true(on_disk(dir, wf) == 0); /* all buffered, the warcinfo too */
    make_noise();
    /* larger than the buffer even compressed: a flush first */
    static const long rooms[] = {0, 700, 0, 1500};
    uint64_t disk = 0;
    for (size_t k = 0; k < sizeof rooms / sizeof rooms[0]; k++) {
      space_left = rooms[k];
      kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:big")};
      kr_slice_t big = {noise, sizeof noise};
      assert_int_equal(kr_warcfile_write(wf, &r, &big, 1, NULL), KR_ENOSPC);
      assert_true(kr_warcfile_size(wf) == good);
      /* the room went to the buffered bytes; what was left of it to the
       * big record, which was then cut away again */
      disk += (uint64_t)rooms[k];
      if (disk > good) disk = good;
      assert_true(on_disk(dir, wf) == disk);
      assert_non_null(strstr(kr_warcfile_errmsg(wf), "No space left"));
    }
    /* still no room (for what is left, if anything) */
    assert_int_equal(kr_warcfile_flush(wf), disk < good ? KR_ENOSPC : 0);
    space_left = -1;
    assert_int_equal(kr_warcfile_flush(wf), 0);
    assert_true(on_disk(dir, wf) == kr_warcfile_size(wf));
    kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:z")};
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
    assert_int_equal(kr_warcfile_close(wf), 0);
    int n;
    struct rrec *rr = read_dir_file(dir, &n);
    assert_int_equal(n, 7); /* warcinfo, the five, the last */
    for (int i = 1; i <= 5; i++) assert_memory_equal(rr[i].block.data, blk, sizeof blk);
    assert_string_equal(rr[6].target, "urn:z");
    free_recs(rr, n);
    free(rr);
  }
}

static void durability(void **state) {
  (void)state;
  char dir[300];
  sub(dir, sizeof dir, "sync");
  kr_clock_t clk;
  kr_clock_init_virtual(&clk, T0);
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = dir;
  o.clock = &clk;
  o.sync_fn = fake_sync;
  o.durability = KR_WARC_SYNC_RECORD;
  kr_warcfile_t *wf;
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:a")};
  syncs = 0;
  sync_fails = 0;
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0);
  assert_int_equal(syncs, 2); /* warcinfo and the record */
  assert_int_equal(kr_warcfile_sync_due(wf, T0 + 999999), 0);
  uint64_t size = kr_warcfile_size(wf);
  sync_fails = 1;
  r.id[0] = '\0';
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), KR_EIO);
  assert_true(kr_warcfile_size(wf) == size);
  assert_non_null(strstr(kr_warcfile_errmsg(wf), "syncing"));
  sync_fails = 0;
  assert_int_equal(kr_warcfile_close(wf), 0);
  /* Batch: due after batch_records or batch_ms; sync clears it. */
  o.durability = KR_WARC_SYNC_BATCH;
  o.batch_records = 3;
  o.batch_ms = 500;
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  syncs = 0;
  assert_int_equal(kr_warcfile_sync_due(wf, T0), 0);
  r.id[0] = '\0';
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0); /* + warcinfo = 2 */
  assert_int_equal(syncs, 0);
  assert_int_equal(kr_warcfile_sync_due(wf, T0), 0);
  assert_int_equal(kr_warcfile_sync_due(wf, T0 + 500), 1);
  r.id[0] = '\0';
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0);
  assert_int_equal(kr_warcfile_sync_due(wf, T0), 1);
  assert_int_equal(kr_warcfile_sync(wf), 0);
  assert_int_equal(syncs, 1);
  assert_int_equal(kr_warcfile_sync_due(wf, T0 + 10000), 0);
  assert_int_equal(kr_warcfile_sync(wf), 0);
  assert_int_equal(syncs, 1); /* nothing new: no sync */
  r.id[0] = '\0';
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0);
  sync_fails = 1;
  assert_int_equal(kr_warcfile_sync(wf), KR_EIO);
  sync_fails = 0;
  /* Closing syncs (batch) before the rename. */
  syncs = 0;
  assert_int_equal(kr_warcfile_close(wf), 0);
  assert_int_equal(syncs, 1);
}

/* ---- repair -------------------------------------------------------------------- */

static void repair_every_cut(void **state) {
  (void)state;
  for (int gz = 0; gz < 2; gz++) {
    struct mem m;
    write_sample(&m, gz);
    struct rrec r[16];
    assert_int_equal(read_all(m.b.data, m.b.len, r, 16, 0), 9);
    char dir[300];
    sub(dir, sizeof dir, gz ? "repair-gz" : "repair");
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dirfd >= 0);
    const char *name = gz ? "x-1.warc.gz.open" : "x-1.warc.open";
    char path[1200], fin[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(fin, sizeof fin, "%s/%.*s", dir, (int)strlen(name) - 5, name);
    uint64_t last = r[8].ext.offset;
    /* every byte of the last record, and the whole file */
    for (uint64_t cut = last; cut <= m.b.len; cut++) {
      spit(path, m.b.data, cut);
      kr_warcfile_repair_stats_t st = {0};
      char err[256];
      assert_int_equal(kr_warcfile_repair(dirfd, name, &st, err, sizeof err), 0);
      assert_int_equal(access(path, F_OK), -1);
      size_t n;
      unsigned char *p = slurp(fin, &n);
      uint64_t want = cut == m.b.len ? m.b.len : last;
      assert_true(n == want);
      assert_memory_equal(p, m.b.data, n);
      assert_true(st.records == (cut == m.b.len ? 9u : 8u));
      assert_true(st.bytes_cut == cut - want);
      free(p);
      unlink(fin);
    }
    /* Cuts inside the first record remove the file. */
    for (uint64_t cut = 1; cut < r[0].ext.length; cut += 37) {
      spit(path, m.b.data, cut);
      kr_warcfile_repair_stats_t st = {0};
      assert_int_equal(kr_warcfile_repair(dirfd, name, &st, NULL, 0), 0);
      assert_int_equal(st.removed, 1);
      assert_int_equal(access(path, F_OK), -1);
      assert_int_equal(access(fin, F_OK), -1);
    }
    /* Garbage appended after good records, and a flipped byte in the
     * middle (gzip: the CRC catches it). */
    kr_buf_t b;
    kr_buf_init(&b, 1u << 24);
    kr_buf_append(&b, m.b.data, m.b.len);
    kr_buf_append(&b, "\0\0\0garbage", 10);
    spit(path, b.data, b.len);
    kr_warcfile_repair_stats_t st = {0};
    assert_int_equal(kr_warcfile_repair(dirfd, name, &st, NULL, 0), 0);
    assert_true(st.records == 9 && st.bytes_cut == 10);
    unlink(fin);
    /* (plain: in the version line; a flip inside a plain block is not
     * visible without digests, and repair is for torn tails) */
    b.data[r[4].ext.offset + (gz ? r[4].ext.length / 2 : 2)] ^= 0x55;
    spit(path, b.data, m.b.len);
    memset(&st, 0, sizeof st);
    assert_int_equal(kr_warcfile_repair(dirfd, name, &st, NULL, 0), 0);
    size_t n;
    unsigned char *p = slurp(fin, &n);
    assert_true(n == r[4].ext.offset);
    free(p);
    unlink(fin);
    /* Refusals: wrong names, an existing final name. */
    assert_int_equal(kr_warcfile_repair(dirfd, "x.warc", NULL, NULL, 0), KR_EINVAL);
    assert_int_equal(kr_warcfile_repair(dirfd, "../x.warc.open", NULL, NULL, 0), KR_EINVAL);
    assert_int_equal(kr_warcfile_repair(dirfd, "missing.warc.open", NULL, NULL, 0), KR_EIO);
    spit(path, m.b.data, m.b.len);
    spit(fin, "keep", 4);
    char err[256];
    assert_int_equal(kr_warcfile_repair(dirfd, name, NULL, err, sizeof err), KR_EIO);
    assert_non_null(strstr(err, "exists"));
    unlink(fin);
    unlink(path);
    kr_buf_free(&b);
    free_recs(r, 9);
    close(dirfd);
    kr_buf_free(&m.b);
  }
}

/* A ".open" file of a GiB is repaired in bounded memory: the reader goes
 * through fixed windows (64 KiB in, 64 KiB inflated), never the whole
 * file or the whole record. Plain: a sparse file whose last record has a
 * 1 GiB block (a hole), once complete and once without its CRLF CRLF;
 * gzip: a member inflating to 256 MiB, cut short. Peak RSS may grow by
 * far less than either. */
static long peak_rss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static const char big_head[] =
    "WARC/1.1\r\nWARC-Type: resource\r\n"
    "WARC-Record-ID: <urn:uuid:6b0b3e2c-1d4a-4c2e-9d6a-0c1f2e3d4b5a>\r\n"
    "WARC-Date: 2026-11-22T00:00:00Z\r\nWARC-Target-URI: http://big.test/\r\n"
    "Content-Type: application/octet-stream\r\nContent-Length: %llu\r\n\r\n";

static void repair_streams_large_files(void **state) {
  (void)state;
  const uint64_t GIB = 1ull << 30, ZBLOCK = 256ull << 20;
  char dir[300];
  sub(dir, sizeof dir, "repair-big");
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
  assert_true(dirfd >= 0);
  long rss0 = peak_rss_kib();
  char head[512], path[1200], fin[1200];
  int hn = snprintf(head, sizeof head, big_head, (unsigned long long)GIB);
  struct mem m;
  write_sample(&m, 0);
  snprintf(path, sizeof path, "%s/big.warc.open", dir);
  snprintf(fin, sizeof fin, "%s/big.warc", dir);
  for (int complete = 1; complete >= 0; complete--) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_true(write(fd, m.b.data, m.b.len) == (ssize_t)m.b.len);
    assert_true(write(fd, head, (size_t)hn) == hn);
    uint64_t end = m.b.len + (uint64_t)hn + GIB;
    if (complete)
      assert_true(pwrite(fd, "\r\n\r\n", 4, (off_t)end) == 4);
    else
      assert_int_equal(ftruncate(fd, (off_t)end), 0); /* the block, no trailer */
    close(fd);
    kr_warcfile_repair_stats_t st = {0};
    char err[256];
    assert_int_equal(kr_warcfile_repair(dirfd, "big.warc.open", &st, err, sizeof err), 0);
    struct stat sb;
    assert_int_equal(stat(fin, &sb), 0);
    assert_true((uint64_t)sb.st_size == (complete ? end + 4 : m.b.len));
    assert_true(st.records == (complete ? 10u : 9u));
    assert_true(st.bytes_cut == (complete ? 0 : (uint64_t)hn + GIB));
    unlink(fin);
  }
  /* gzip: one member for the sample, then one whose block inflates to
   * 256 MiB of zeros, deflated in pieces and cut before its end. */
  kr_buf_free(&m.b);
  write_sample(&m, 1);
  snprintf(path, sizeof path, "%s/big.warc.gz.open", dir);
  snprintf(fin, sizeof fin, "%s/big.warc.gz", dir);
  hn = snprintf(head, sizeof head, big_head, (unsigned long long)ZBLOCK);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_true(write(fd, m.b.data, m.b.len) == (ssize_t)m.b.len);
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  static unsigned char zin[1u << 16], zout[1u << 16];
  memset(zin, 0, sizeof zin);
  uint64_t left = ZBLOCK;
  int first = 1;
  for (;;) {
    int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    if (first) {
      z.next_in = (unsigned char *)head;
      z.avail_in = (uInt)hn;
      first = 0;
    } else if (left) {
      uInt k = left < sizeof zin ? (uInt)left : (uInt)sizeof zin;
      z.next_in = zin;
      z.avail_in = k;
      left -= k;
    }
    do {
      z.next_out = zout;
      z.avail_out = sizeof zout;
      int zr = deflate(&z, flush);
      assert_true(zr == Z_OK || zr == Z_STREAM_END || zr == Z_BUF_ERROR);
      size_t got = sizeof zout - z.avail_out;
      assert_true(write(fd, zout, got) == (ssize_t)got);
    } while (z.avail_out == 0);
    if (flush == Z_FINISH) break;
  }
  deflateEnd(&z);
  struct stat sb;
  assert_int_equal(fstat(fd, &sb), 0);
  /* cut inside the member: no trailer, no gzip end */
  assert_int_equal(ftruncate(fd, sb.st_size - 100), 0);
  close(fd);
  kr_warcfile_repair_stats_t st = {0};
  char err[256];
  assert_int_equal(kr_warcfile_repair(dirfd, "big.warc.gz.open", &st, err, sizeof err), 0);
  assert_int_equal(stat(fin, &sb), 0);
  assert_true((uint64_t)sb.st_size == m.b.len);
  assert_true(st.records == 9u);
  unlink(fin);
  long grew = peak_rss_kib() - rss0;
  if (grew > 64 * 1024) fail_msg("peak RSS grew by %ld KiB repairing 1 GiB files", grew);
  kr_buf_free(&m.b);
  close(dirfd);
}

static void repair_dir_at_start_up(void **state) {
  (void)state;
  char dir[300];
  sub(dir, sizeof dir, "startup");
  /* A writer "killed" mid-file: its .open file stays. */
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = dir;
  kr_warcfile_t *wf;
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  for (int i = 0; i < 3; i++) {
    kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:a")};
    assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0);
  }
  assert_int_equal(kr_warcfile_flush(wf), 0); /* what a commit would do */
  char open_path[700];
  snprintf(open_path, sizeof open_path, "%s/%s", dir, kr_warcfile_current(wf));
  size_t n;
  unsigned char *p = slurp(open_path, &n);
  spit(open_path, p, n - 7); /* the last record torn */
  free(p);
  /* (the writer itself is abandoned as a crash would: leak-free close
   * renames, so copy the torn file under another .open name first) */
  char torn[700];
  snprintf(torn, sizeof torn, "%s/kria-torn.warc.gz.open", dir);
  assert_int_equal(rename(open_path, torn), 0);
  assert_int_equal(kr_warcfile_close(wf), KR_EIO); /* its file is gone */
  spit(open_path, "", 0); /* an empty leftover */
  char other[700];
  snprintf(other, sizeof other, "%s/unrelated.txt", dir);
  spit(other, "x", 1);
  kr_warcfile_repair_stats_t st = {0};
  char err[256];
  assert_int_equal(kr_warcfile_repair_dir(dir, NULL, 0, &st, err, sizeof err), 0);
  assert_int_equal(st.files, 2);
  assert_int_equal(st.removed, 1);
  assert_true(st.records == 3); /* warcinfo + 2 */
  char names[8][256];
  assert_int_equal(list_dir(dir, names, 8), 2);
  assert_string_equal(names[0], "kria-torn.warc.gz");
  assert_string_equal(names[1], "unrelated.txt");
  assert_int_equal(kr_warcfile_repair_dir("/nonexistent/kria/dir", NULL, 0, &st, NULL, 0), 0);
}

/* ---- repair from the synced offset ------------------------------------------------ */

/* A crawl's file as a kill -9 leaves it, under name in dir: warcinfo and
 * 3 records, synced (the offset in *synced), 2 more records, the last one
 * torn by cut bytes. *kept is where the complete records end. Written in
 * a directory of its own, then copied: the writer is closed normally. */
static void killed_file(const char *dir, const char *name, int gz, size_t cut, uint64_t *synced,
                        uint64_t *kept) {
  char wdir[300];
  sub(wdir, sizeof wdir, gz ? "synced-w-gz" : "synced-w");
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = wdir;
  o.writer.gzip = gz;
  o.durability = KR_WARC_SYNC_BATCH;
  o.sync_fn = fake_sync;
  kr_warcfile_t *wf;
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  const char *nm;
  uint64_t off;
  kr_slice_t b = KR_SLICE_LIT("a block of some length, for a record of some size\n");
  for (int i = 0; i < 5; i++) {
    if (i == 3) {
      assert_int_equal(kr_warcfile_synced(wf, &nm, &off), 0); /* nothing synced yet */
      assert_int_equal(kr_warcfile_sync(wf), 0);
      assert_int_equal(kr_warcfile_synced(wf, &nm, &off), 1);
      assert_true(off == kr_warcfile_size(wf));
      assert_string_equal(nm, kr_warcfile_current(wf));
      *synced = off;
    }
    if (i == 4) *kept = kr_warcfile_size(wf);
    kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:a")};
    assert_int_equal(kr_warcfile_write(wf, &r, &b, 1, NULL), 0);
  }
  assert_int_equal(kr_warcfile_flush(wf), 0); /* in the kernel when killed */
  char path[700];
  snprintf(path, sizeof path, "%s/%s", wdir, kr_warcfile_current(wf));
  size_t n;
  unsigned char *p = slurp(path, &n);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  spit(path, p, n - cut);
  free(p);
  assert_int_equal(kr_warcfile_close(wf), 0);
}

static uint64_t file_size(const char *dir, const char *name) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  return (uint64_t)sb.st_size;
}

static void repair_from_synced_offset(void **state) {
  (void)state;
  char dir[300];
  sub(dir, sizeof dir, "synced");
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
  assert_true(dirfd >= 0);
  for (int gz = 0; gz < 2; gz++) {
    const char *name = gz ? "k.warc.gz.open" : "k.warc.open";
    const char *fin = gz ? "k.warc.gz" : "k.warc";
    char path[700], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    uint64_t off, kept;

    /* The tail cut: only the records past the offset are read. A byte
     * spoilt before it shows that: a whole read would cut there. */
    killed_file(dir, name, gz, 7, &off, &kept);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_true(pwrite(fd, "\xff", 1, (off_t)(off - 20)) == 1);
    close(fd);
    kr_warcfile_repair_stats_t st = {0};
    assert_int_equal(kr_warcfile_repair_from(dirfd, name, off, &st, err, sizeof err), 0);
    assert_int_equal(st.files, 1);
    assert_int_equal(st.resumed, 1);
    assert_true(st.records == 1); /* the one complete record after the offset */
    assert_true(file_size(dir, fin) == kept);
    unlinkat(dirfd, fin, 0);

    /* The file ends at the offset: nothing to read, nothing cut. */
    uint64_t full;
    killed_file(dir, name, gz, 0, &off, &full);
    assert_int_equal(truncate(path, (off_t)off), 0);
    memset(&st, 0, sizeof st);
    assert_int_equal(kr_warcfile_repair_from(dirfd, name, off, &st, err, sizeof err), 0);
    assert_int_equal(st.resumed, 1);
    assert_true(st.records == 0 && st.bytes_cut == 0);
    assert_true(file_size(dir, fin) == off);
    unlinkat(dirfd, fin, 0);

    /* The offset past the file's end (the file lost its synced part):
     * the whole file is read. */
    killed_file(dir, name, gz, 0, &off, &full);
    assert_int_equal(truncate(path, (off_t)(off - 10)), 0);
    memset(&st, 0, sizeof st);
    assert_int_equal(kr_warcfile_repair_from(dirfd, name, off, &st, err, sizeof err), 0);
    assert_int_equal(st.resumed, 0);
    assert_true(st.records == 3); /* warcinfo + 2: the third is torn */
    unlinkat(dirfd, fin, 0);

    /* No record at the offset (inside one): the whole file is read. */
    killed_file(dir, name, gz, 7, &off, &kept);
    memset(&st, 0, sizeof st);
    assert_int_equal(kr_warcfile_repair_from(dirfd, name, off + 1, &st, err, sizeof err), 0);
    assert_int_equal(st.resumed, 0);
    assert_true(st.records == 5);
    assert_true(file_size(dir, fin) == kept);
    unlinkat(dirfd, fin, 0);
    /* ... garbage there */
    killed_file(dir, name, gz, 0, &off, &full);
    fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_true(pwrite(fd, "\x1f\x8b\x08junk", 7, (off_t)off) == 7);
    close(fd);
    memset(&st, 0, sizeof st);
    assert_int_equal(kr_warcfile_repair_from(dirfd, name, off, &st, err, sizeof err), 0);
    assert_int_equal(st.resumed, 0);
    assert_true(st.records == 4);
    assert_true(file_size(dir, fin) == off);
    unlinkat(dirfd, fin, 0);

    /* The directory's repair takes the mark of the file it names only. */
    kr_warcfile_mark_t m = {.offset = 0};
    snprintf(m.name, sizeof m.name, "other%s", name);
    killed_file(dir, name, gz, 7, &off, &kept);
    m.offset = off;
    memset(&st, 0, sizeof st);
    assert_int_equal(kr_warcfile_repair_dir(dir, &m, 1, &st, err, sizeof err), 0);
    assert_int_equal(st.files, 1);
    assert_int_equal(st.resumed, 0);
    assert_true(st.records == 5);
    assert_true(file_size(dir, fin) == kept);
    unlinkat(dirfd, fin, 0);
    snprintf(m.name, sizeof m.name, "%s", name);
    killed_file(dir, name, gz, 7, &off, &kept);
    m.offset = off;
    memset(&st, 0, sizeof st);
    assert_int_equal(kr_warcfile_repair_dir(dir, &m, 1, &st, err, sizeof err), 0);
    assert_int_equal(st.resumed, 1);
    assert_true(st.records == 1);
    assert_true(file_size(dir, fin) == kept);
    unlinkat(dirfd, fin, 0);
  }
  /* A gzip name over plain records: the kind at the offset differs, the
   * whole file is read. */
  uint64_t off, kept;
  killed_file(dir, "p.warc.gz.open", 0, 7, &off, &kept);
  kr_warcfile_repair_stats_t st = {0};
  assert_int_equal(kr_warcfile_repair_from(dirfd, "p.warc.gz.open", off, &st, NULL, 0), 0);
  assert_int_equal(st.resumed, 0);
  assert_true(st.records == 5);
  unlinkat(dirfd, "p.warc.gz", 0);
  close(dirfd);
}

/* A record being streamed is not part of the synced offset: the sync
 * reaches its start, a record boundary. */
static void synced_offset_while_streaming(void **state) {
  (void)state;
  char dir[300];
  sub(dir, sizeof dir, "synced-stream");
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = dir;
  o.writer.gzip = 0;
  o.durability = KR_WARC_SYNC_BATCH;
  o.sync_fn = fake_sync;
  kr_warcfile_t *wf;
  assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:a")};
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0);
  uint64_t start = kr_warcfile_size(wf);
  uint8_t d[KR_SHA1_LEN];
  assert_int_equal(kr_sha1("0123456789", 10, d), 0);
  kr_warc_rec_t r2 = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("urn:b"),
                      .block_sha1 = d};
  assert_int_equal(kr_warcfile_begin(wf, &r2, 10), 0);
  assert_int_equal(kr_warcfile_append(wf, "01234", 5), 0);
  assert_int_equal(kr_warcfile_sync(wf), 0);
  const char *nm;
  uint64_t off;
  assert_int_equal(kr_warcfile_synced(wf, &nm, &off), 1);
  assert_true(off == start);
  assert_true(kr_warcfile_size(wf) > start);
  assert_int_equal(kr_warcfile_append(wf, "56789", 5), 0);
  assert_int_equal(kr_warcfile_end(wf, NULL), 0);
  assert_int_equal(kr_warcfile_sync(wf), 0);
  assert_int_equal(kr_warcfile_synced(wf, &nm, &off), 1);
  assert_true(off == kr_warcfile_size(wf));
  /* a new file after a rotation: nothing of it synced yet */
  assert_int_equal(kr_warcfile_rotate(wf), 0);
  r.id[0] = '\0';
  assert_int_equal(kr_warcfile_write(wf, &r, NULL, 0, NULL), 0);
  assert_int_equal(kr_warcfile_synced(wf, &nm, &off), 0);
  assert_int_equal(kr_warcfile_close(wf), 0);
}

static void marks_parse(void **state) {
  (void)state;
  char v[300];
  kr_warcfile_mark_t m;
  kr_warcfile_mark_format(v, sizeof v, "kria-1-00001-h.warc.gz.open", 123456789012ull);
  assert_string_equal(v, "123456789012 kria-1-00001-h.warc.gz.open");
  assert_int_equal(kr_warcfile_mark_parse(v, &m), 0);
  assert_string_equal(m.name, "kria-1-00001-h.warc.gz.open");
  assert_true(m.offset == 123456789012ull);
  assert_int_equal(kr_warcfile_mark_parse("18446744073709551615 a.warc.open", &m), 0);
  assert_true(m.offset == UINT64_MAX);
  static const char *const bad[] = {
      "", "12", "12 ", " 12 a.warc.open", "-1 a.warc.open", "x a.warc.open", "1 a.warc",
      "1 a.warc.gz", "1 ../a.warc.open", "1 d/a.warc.open", "1\ta.warc.open",
      "18446744073709551616 a.warc.open", "99999999999999999999 a.warc.open",
      "1 .warc.open",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (kr_warcfile_mark_parse(bad[i], &m) == 0) fail_msg("accepted mark '%s'", bad[i]);
  char longname[400];
  memset(longname, 'a', sizeof longname);
  snprintf(longname + 300, 100, ".warc.open");
  char lv[500];
  snprintf(lv, sizeof lv, "1 %s", longname);
  assert_int_equal(kr_warcfile_mark_parse(lv, &m), -1);
}

/* ---- samples for warcio.js ------------------------------------------------------ */

static void sample_files(void **state) {
  (void)state;
  const char *env = getenv("KRIA_WARC_SAMPLES");
  char dir[300];
  if (env && *env) {
    snprintf(dir, sizeof dir, "%s", env);
    mkdir(dir, 0755);
  } else {
    sub(dir, sizeof dir, "samples");
  }
  const struct {
    const char *prefix;
    int gzip, engine;
    uint64_t max;
  } kinds[] = {{"kria-libdeflate", 1, KR_WARC_ENGINE_LIBDEFLATE, 0},
               {"kria-igzip", 1, KR_WARC_ENGINE_IGZIP, 0},
               {"kria-zlib", 1, KR_WARC_ENGINE_ZLIB, 0},
               {"kria-plain", 0, 0, 0},
               {"kria-rotated", 1, KR_WARC_ENGINE_AUTO, 20000}};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    kr_warcfile_opts_t o;
    kr_warcfile_opts_default(&o);
    o.dir = dir;
    o.prefix = kinds[k].prefix;
    o.host = "unit.test";
    o.writer.gzip = kinds[k].gzip;
    o.writer.engine = kinds[k].engine;
    o.max_size = kinds[k].max;
    o.info.operator_name = "kria unit tests";
    o.info.is_part_of = "samples";
    o.info.description = "every record type kria writes";
    kr_warcfile_t *wf;
    assert_int_equal(kr_warcfile_open(&o, &wf, NULL, 0), 0);
    for (int rep = 0; rep < (kinds[k].max ? 3 : 1); rep++) {
      char base[64];
      snprintf(base, sizeof base, "http://%s.test:%d", kinds[k].prefix + 5, 8080 + rep);
      assert_int_equal(write_every_type(file_write, wf, base), 9);
    }
    assert_int_equal(kr_warcfile_close(wf), 0);
  }
  char names[32][256];
  int nf = list_dir(dir, names, 32);
  assert_true(nf >= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dates),
      cmocka_unit_test(ids_are_uuid4_and_distinct),
      cmocka_unit_test(round_trip_plain),
      cmocka_unit_test(round_trip_libdeflate),
      cmocka_unit_test(round_trip_igzip),
      cmocka_unit_test(round_trip_zlib),
      cmocka_unit_test(round_trip_past_whole_max),
      cmocka_unit_test(levels_and_engines),
      cmocka_unit_test(streaming),
      cmocka_unit_test(headers_byte_exact),
      cmocka_unit_test(invalid_records_write_nothing),
      cmocka_unit_test(sink_errors_propagate),
      cmocka_unit_test(truncated_everywhere),
      cmocka_unit_test(hostile_headers),
      cmocka_unit_test(gzip_member_layouts),
      cmocka_unit_test(prefix_rules),
      cmocka_unit_test(names_rotation_and_locations),
      cmocka_unit_test(hold_keeps_a_visit_in_one_file),
      cmocka_unit_test(streaming_to_file),
      cmocka_unit_test(full_disk_cuts_back),
      cmocka_unit_test(write_buffer_gathers_records),
      cmocka_unit_test(buffered_records_outlive_a_failed_write),
      cmocka_unit_test(durability),
      cmocka_unit_test(repair_every_cut),
      cmocka_unit_test(repair_streams_large_files),
      cmocka_unit_test(repair_dir_at_start_up),
      cmocka_unit_test(repair_from_synced_offset),
      cmocka_unit_test(synced_offset_while_streaming),
      cmocka_unit_test(marks_parse),
      cmocka_unit_test(sample_files),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
