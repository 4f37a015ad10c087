/* ARC v1 and the lenient WARC reader: ARC header lines (spaces in the
 * URL, filedesc, lengths warcio takes as 0, too few fields), ARC dates
 * padded and clamped as warcio's timestamp_to_datetime (its own doctest
 * cases), and kr_warc_reader with opts.lenient on plain and gzip ARC
 * (extents as cdxj-indexer gives them), on WARC slips (CR CR LF, a line
 * without ':', no blank line after a block, a stray line there, a block
 * cut short by the end of the file, a bad Content-Length), each of which
 * the strict reader still refuses, and a WARC record in an ARC file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kria/arc.h"
#include "kria/error.h"
#include "kria/warc.h"

#define SL(s) kr_slice((s), strlen(s))

static int slice_is(kr_slice_t s, const char *want) {
  return s.p && s.n == strlen(want) && !memcmp(s.p, want, s.n);
}

static void parse_line(void **state) {
  (void)state;
  kr_arc_header_t a;
  const char *l = "http://example.com/ 93.184.216.119 20140216050221 text/html 1591\r\n";
  assert_int_equal(kr_arc_parse_line(l, strlen(l), &a), 0);
  assert_true(slice_is(a.url, "http://example.com/"));
  assert_true(slice_is(a.ip, "93.184.216.119"));
  assert_true(slice_is(a.date, "20140216050221"));
  assert_true(slice_is(a.mime, "text/html"));
  assert_int_equal(a.length, 1591);
  assert_false(a.filedesc);
  /* The URL keeps its spaces: the line splits at its last four. */
  l = "http://e.com/a?t=Examples From The Web 1.2.3.4 20140216050221 text/html 7";
  assert_int_equal(kr_arc_parse_line(l, strlen(l), &a), 0);
  assert_true(slice_is(a.url, "http://e.com/a?t=Examples From The Web"));
  assert_int_equal(a.length, 7);
  l = "filedesc://live-web-example.arc.gz 127.0.0.1 20140216050221 text/plain 75";
  assert_int_equal(kr_arc_parse_line(l, strlen(l), &a), 0);
  assert_true(a.filedesc);
  /* Lengths Python's int() refuses, or negative: an empty record. */
  static const struct {
    const char *len;
    uint64_t want;
  } lens[] = {{"-1", 0}, {"abc", 0}, {"+5", 5}, {"0", 0}, {"12x", 0}, {"9999999999999999999", 0}};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    char line[200];
    snprintf(line, sizeof line, "http://a/ 1.2.3.4 20140101000000 text/html %s", lens[i].len);
    assert_int_equal(kr_arc_parse_line(line, strlen(line), &a), 0);
    assert_int_equal(a.length, lens[i].want);
  }
  /* Two spaces in a row: an empty field, kept as warcio keeps it. */
  l = "http://a/  20140101000000 text/html 3";
  assert_int_equal(kr_arc_parse_line(l, strlen(l), &a), 0);
  assert_int_equal(a.ip.n, 0);
  static const char *bad[] = {"", "\r\n", "a b c d", "http://a/ 1.2.3.4 20140101000000 text/html ",
                              "<html><body>"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(kr_arc_parse_line(bad[i], strlen(bad[i]), &a), KR_EINVAL);
}

static void dates(void **state) {
  (void)state;
  /* warcio's timeutils doctests for timestamp_to_datetime. */
  static const char *t[][2] = {
      {"2014122609501011", "20141226095010"}, {"20141226095010", "20141226095010"},
      {"2014122609501", "20141226095059"},    {"201412260950", "20141226095059"},
      {"20141226095", "20141226095959"},      {"2014122609", "20141226095959"},
      {"201412260", "20141226235959"},        {"20141226", "20141226235959"},
      {"2014122", "20141231235959"},          {"201410", "20141031235959"},
      {"20141", "20141231235959"},            {"2014", "20141231235959"},
      {"201", "20191231235959"},              {"20", "20991231235959"},
      {"2", "29991231235959"},                {"3", "29991231235959"},
      {"", "29991231235959"},                 {"20131709005601", "20131209005601"},
      {"40001965252477", "29991231232459"},   {"2010abc", "20101231235959"},
      {"201402", "20140228235959"},           {"201602", "20160229235959"},
      {"190002", "19000228235959"},           {"00000101000000", "19000101000000"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char ts[15];
    kr_arc_timestamp14(SL(t[i][0]), ts);
    assert_string_equal(ts, t[i][1]);
  }
  char iso[KR_ARC_DATE_SIZE], back[15];
  kr_arc_iso_date("20140216050221", iso);
  assert_string_equal(iso, "2014-02-16T05:02:21Z");
  assert_int_equal(kr_warc_timestamp14(SL(iso), back), 0);
  assert_string_equal(back, "20140216050221");
}

/* ---- the reader on memory ---- */

typedef struct mem {
  const char *p;
  size_t n, at;
} mem_t;

static long mem_read(void *ctx, void *buf, size_t n) {
  mem_t *m = ctx;
  size_t k = m->n - m->at < n ? m->n - m->at : n;
  if (k > 5) k = 5; /* small reads: lines and blanks span them */
  memcpy(buf, m->p + m->at, k);
  m->at += k;
  return (long)k;
}

typedef struct seen {
  int type;
  char uri[200], date[40], ctype[80], warn[200];
  uint64_t clen, got;
  kr_warc_extent_t e;
} seen_t;

/* Read input (lenient or not) into out[]: the number of records, or the
 * error (its message in err). */
static int read_all(const char *p, size_t n, int lenient, seen_t *out, size_t max, char *err) {
  mem_t m = {p, n, 0};
  kr_warc_reader_opts_t o = {.lenient = lenient};
  kr_warc_reader_t *r = kr_warc_reader_new(&o, mem_read, &m);
  const kr_warc_header_t *h;
  int rc, count = 0;
  err[0] = '\0';
  while ((rc = kr_warc_reader_next(r, &h)) == 1) {
    assert_true((size_t)count < max);
    seen_t *s = &out[count];
    memset(s, 0, sizeof *s);
    s->type = h->type;
    s->clen = h->content_length;
    kr_slice_t v = kr_warc_header_get(h, "WARC-Target-URI");
    snprintf(s->uri, sizeof s->uri, "%.*s", (int)v.n, v.p ? v.p : "");
    v = kr_warc_header_get(h, "WARC-Date");
    snprintf(s->date, sizeof s->date, "%.*s", (int)v.n, v.p ? v.p : "");
    v = kr_warc_header_get(h, "Content-Type");
    snprintf(s->ctype, sizeof s->ctype, "%.*s", (int)v.n, v.p ? v.p : "");
    char buf[64];
    long k;
    while ((k = kr_warc_reader_read(r, buf, sizeof buf)) > 0) s->got += (uint64_t)k;
    if (k < 0) {
      rc = (int)k;
      break;
    }
    if ((rc = kr_warc_reader_finish(r, &s->e)) < 0) break;
    snprintf(s->warn, sizeof s->warn, "%s", kr_warc_reader_warning(r));
    count++;
  }
  if (rc < 0) strcpy(err, kr_warc_reader_errmsg(r));
  kr_warc_reader_free(r);
  return rc < 0 ? rc : count;
}

#define VERSION_LINES "1 0 kria test\nURL IP-address Archive-date Content-type Archive-length\n"
#define BODY "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hi</p>"

static const char arc_file[] =
    "filedesc://t.arc 127.0.0.1 20140301000000 text/plain 70\n" VERSION_LINES "\n"
    "http://a.test/x y 10.0.0.1 20140216050221 text/html 53\n" BODY "\n"
    "http://a.test/ 10.0.0.1 201404010000000000 text/html -1\n\n\n"
    "http://a.test/z 10.0.0.1 2014 text/html abc\n";

static void arc_plain(void **state) {
  (void)state;
  assert_int_equal(strlen(VERSION_LINES), 70);
  assert_int_equal(strlen(BODY), 53);
  seen_t s[8];
  char err[200];
  assert_int_equal(read_all(arc_file, strlen(arc_file), 1, s, 8, err), 4);
  assert_int_equal(s[0].type, KR_WARC_WARCINFO);
  assert_int_equal(s[0].clen, 0); /* the version lines are its header */
  assert_int_equal(s[1].type, KR_WARC_RESPONSE);
  assert_string_equal(s[1].uri, "http://a.test/x y");
  assert_string_equal(s[1].date, "2014-02-16T05:02:21Z");
  assert_string_equal(s[1].ctype, "application/http;msgtype=response");
  assert_int_equal(s[1].clen, 53);
  assert_int_equal(s[1].got, 53);
  /* Offsets and lengths as cdxj-indexer's (its bad.arc test): the header
   * line and the block, the blank lines after it left out. */
  size_t at1 = strlen("filedesc://t.arc 127.0.0.1 20140301000000 text/plain 70\n" VERSION_LINES "\n");
  size_t l1 = strlen("http://a.test/x y 10.0.0.1 20140216050221 text/html 53\n") + 53;
  assert_int_equal(s[1].e.offset, at1);
  assert_int_equal(s[1].e.length, l1);
  assert_int_equal(s[1].e.end, at1 + l1 + 1);
  assert_true(s[1].e.aligned);
  assert_string_equal(s[2].date, "2014-04-01T00:00:00Z");
  assert_int_equal(s[2].clen, 0);
  assert_int_equal(s[2].e.offset, at1 + l1 + 1);
  assert_int_equal(s[2].e.length, strlen("http://a.test/ 10.0.0.1 201404010000000000 text/html -1\n"));
  assert_string_equal(s[3].date, "2014-12-31T23:59:59Z");
  assert_int_equal(s[3].clen, 0);
  assert_string_equal(s[3].warn, "");
  /* The strict reader: not a WARC file. */
  assert_int_equal(read_all(arc_file, strlen(arc_file), 0, s, 8, err), KR_EWARC);
  assert_non_null(strstr(err, "no WARC record at offset 0"));
}

/* Each piece of the input as its own gzip member. */
static size_t gzip_pieces(const char *const *piece, size_t n, char *out, size_t cap, size_t *starts) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)piece[i];
    z.avail_in = (uInt)strlen(piece[i]);
    z.next_out = (Bytef *)out + w;
    z.avail_out = (uInt)(cap - w);
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    starts[i] = w;
    w += z.total_out;
    deflateEnd(&z);
  }
  starts[n] = w;
  return w;
}

static void arc_gzip(void **state) {
  (void)state;
  const char *piece[] = {"filedesc://t.arc 127.0.0.1 20140301000000 text/plain 70\n" VERSION_LINES "\n",
                         "http://a.test/ 10.0.0.1 20140216050221 text/html 53\n" BODY "\n",
                         "http://a.test/ 10.0.0.1 20140216050222 text/html 53\n" BODY "\n"};
  char gz[4096];
  size_t starts[4];
  size_t n = gzip_pieces(piece, 3, gz, sizeof gz, starts);
  seen_t s[4];
  char err[200];
  assert_int_equal(read_all(gz, n, 1, s, 4, err), 3);
  for (int i = 0; i < 3; i++) {
    assert_true(s[i].e.aligned);
    assert_int_equal(s[i].e.offset, starts[i]);
    assert_int_equal(s[i].e.length, starts[i + 1] - starts[i]);
  }
  assert_string_equal(s[2].date, "2014-02-16T05:02:22Z");
}

#define WHDR(type, len) "WARC/1.0\r\nWARC-Type: " type "\r\nContent-Length: " len "\r\n\r\n"

static void warc_slips(void **state) {
  (void)state;
  seen_t s[8];
  char err[200];
  static const struct {
    const char *name, *input;
    int records;           /* lenient */
    const char *warn;      /* in the first record's warning */
    const char *strict;    /* in the strict reader's error */
  } t[] = {
      {"CR CR LF line ends",
       "WARC/1.0\r\r\nWARC-Type: resource\r\r\nContent-Length: 3\r\r\n\r\r\nabc\r\n\r\n", 1, "",
       "bad version line"},
      {"a line without ':'", "WARC/1.0\r\nWARC-Type: resource\r\nno colon\r\nContent-Length: 3\r\n\r\n"
       "abc\r\n\r\n", 1, "", "malformed field line"},
      {"no blank line between a block and the next record (warcio fails here)",
       WHDR("resource", "3") "abc" WHDR("resource", "2") "de", 2, "no blank line between its block",
       "not followed by CRLF CRLF"},
      {"the end of the file right after a block", WHDR("resource", "3") "abc", 1, "",
       "not followed by CRLF CRLF"},
      {"LF LF after a block", WHDR("resource", "3") "abc\n\n" WHDR("resource", "2") "de\n\n", 2, "",
       "not followed by CRLF CRLF"},
      {"a stray line after a block (Content-Length short)",
       WHDR("resource", "3") "abcdef\r\n\r\n" WHDR("resource", "2") "de\r\n\r\n", 2,
       "block not followed by a blank line", "not followed by CRLF CRLF"},
      {"a block cut short by the end of the file", WHDR("resource", "30") "abc", 1,
       "block cut short by the end of the file (27 bytes missing)", "block cut short"},
      {"a bad Content-Length", "WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: 1x\r\n\r\n"
       "\r\n\r\n", 1, "", "bad Content-Length"},
      {"blank lines before a record", "\r\n\n  \r\n" WHDR("resource", "1") "a\r\n\r\n", 1, "",
       "no WARC record"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    int got = read_all(t[i].input, strlen(t[i].input), 1, s, 8, err);
    if (got != t[i].records) fail_msg("%s: %d records (%s)", t[i].name, got, err);
    if (!strstr(s[0].warn, t[i].warn)) fail_msg("%s: warning '%s'", t[i].name, s[0].warn);
    if (!t[i].warn[0] && s[0].warn[0]) fail_msg("%s: warning '%s'", t[i].name, s[0].warn);
    got = read_all(t[i].input, strlen(t[i].input), 0, s, 8, err);
    if (got >= 0 || !strstr(err, t[i].strict))
      fail_msg("%s: strict reader: %d, '%s'", t[i].name, got, err);
  }
  /* Plain extents leave out whatever follows the block. */
  const char *in = WHDR("resource", "3") "abcdef\r\n\r\n" WHDR("resource", "2") "de";
  assert_int_equal(read_all(in, strlen(in), 1, s, 8, err), 2);
  assert_int_equal(s[0].e.length, strlen(WHDR("resource", "3")) + 3);
  assert_int_equal(s[1].e.offset, strlen(WHDR("resource", "3") "abcdef\r\n\r\n"));
  assert_int_equal(s[1].e.length, strlen(WHDR("resource", "2")) + 2);
  in = WHDR("resource", "3") "abc" WHDR("resource", "2") "de";
  assert_int_equal(read_all(in, strlen(in), 1, s, 8, err), 2);
  assert_int_equal(s[0].e.length, strlen(WHDR("resource", "3")) + 3);
  assert_int_equal(s[0].e.end, s[0].e.length);
  assert_int_equal(s[1].e.offset, s[0].e.length);
  assert_int_equal(s[1].got, 2);
  /* A file is WARC or ARC by its first record. */
  in = WHDR("resource", "1") "a\r\n\r\nhttp://a/ 1.2.3.4 20140101000000 text/html 0\n";
  assert_int_equal(read_all(in, strlen(in), 1, s, 8, err), KR_EWARC);
  assert_non_null(strstr(err, "no WARC record at offset"));
  in = "http://a/ 1.2.3.4 20140101000000 text/html 0\n\n" WHDR("resource", "1") "a\r\n\r\n";
  assert_int_equal(read_all(in, strlen(in), 1, s, 8, err), KR_EWARC);
  assert_non_null(strstr(err, "a WARC record at offset 46 in an ARC file"));
  /* Garbage stays an error. */
  in = "<html><body>hello</body></html>\n";
  assert_int_equal(read_all(in, strlen(in), 1, s, 8, err), KR_EWARC);
  assert_non_null(strstr(err, "no WARC or ARC record at offset 0"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parse_line), cmocka_unit_test(dates),     cmocka_unit_test(arc_plain),
      cmocka_unit_test(arc_gzip),   cmocka_unit_test(warc_slips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
