/*
 * wacz_index: page titles from responses as WARCs store them (plain,
 * gzip, deflate, chunked (one chunk larger than the scan too), chunked
 * gzip, cut short, past the scan limit,
 * comments, entities, white space, the length cap at a UTF-8 boundary,
 * codings not read); the compressed index (blocks of N lines, each one
 * gzip member whose SHA-256 and first key its index.idx line gives);
 * the digest of a byte range.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "kria/buf.h"
#include "kria/error.h"
#include "wacz.h"
#include "zipw.h"

/* The title kr__wacz_http_title finds in head + body, or NULL. */
static char *title_of(const char *head, const void *body, size_t bn) {
  static char got[4096];
  size_t hn = strlen(head);
  char *p = malloc(hn + bn + 1);
  assert_non_null(p);
  memcpy(p, head, hn);
  if (bn) memcpy(p + hn, body, bn);
  kr_buf_t out;
  kr_buf_init(&out, KR_WACZ_TITLE_MAX);
  int rc = kr__wacz_http_title(p, hn + bn, &out);
  free(p);
  assert_true(rc == 0 || rc == 1);
  if (rc == 1) {
    assert_true(out.len > 0 && out.len < sizeof got);
    memcpy(got, out.data, out.len + 1);
  }
  kr_buf_free(&out);
  return rc == 1 ? got : NULL;
}

#define TITLE_IS(got, want)       \
  do {                            \
    const char *g_ = (got);       \
    assert_non_null(g_);          \
    assert_string_equal(g_, want); \
  } while (0)

static const char *plain(const char *html) {
  return title_of("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", html, strlen(html));
}

/* gzip (wbits 31) or zlib (15) or raw deflate (-15) of s. */
static size_t squeeze(const char *s, size_t n, int wbits, unsigned char *out, size_t cap) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  zs.next_in = (Bytef *)(uintptr_t)s;
  zs.avail_in = (uInt)n;
  zs.next_out = out;
  zs.avail_out = (uInt)cap;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  size_t len = zs.total_out;
  deflateEnd(&zs);
  return len;
}

static void titles_plain(void **state) {
  (void)state;
  TITLE_IS(plain("<html><head><title>Example Domain</title></head>"), "Example Domain");
  /* as document.title: white space collapsed and trimmed, any case */
  TITLE_IS(plain("<TITLE lang=en>\n  Two\t\r\n words  </TiTlE>"), "Two words");
  /* entities: the XML five, nbsp, decimal and hex; unknown ones kept */
  TITLE_IS(plain("<title>a &amp; b &lt;c&gt; &quot;d&quot; &#39;e&apos; "
                            "caf&#233; caf&#xE9; &copy; &#0; &amp</title>"),
                      "a & b <c> \"d\" 'e' caf\xc3\xa9 caf\xc3\xa9 &copy; \xef\xbf\xbd &amp");
  TITLE_IS(plain("<title>x&nbsp;y &#x1F600;</title>"), "x\xc2\xa0y \xf0\x9f\x98\x80");
  /* white space as references collapses like the rest */
  TITLE_IS(plain("<title>&#32;a&#9;&#10; b&#x20;</title>"), "a b");
  /* UTF-8 bytes pass as they are (JSON escaping comes later) */
  TITLE_IS(plain("<title>Gr\xc3\xbc\xc3\x9f""e</title>"), "Gr\xc3\xbc\xc3\x9f""e");
  /* a title in a comment is none; <titles> is not <title> */
  TITLE_IS(plain("<!-- <title>old</title> --><titles>no</titles><title>new</title>"),
                      "new");
  /* RCDATA: markup inside is text, only </title ends it */
  TITLE_IS(plain("<title>a <b>bold</b> move</title>"), "a <b>bold</b> move");
  /* cut short: no part of a title */
  assert_null(plain("<title>Cut sho"));
  assert_null(plain("<html><head></head><body>no title</body>"));
  assert_null(plain("<title>  \n </title>"));
  assert_null(plain("<title></title>"));
  assert_null(plain("<!-- <title>only in a comment</title>"));
  /* not an HTTP response, or no end of head */
  assert_null(title_of("<title>x</title>", "", 0));
  assert_null(title_of("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n<title>x</title>", "", 0));
  /* a bare-LF head */
  TITLE_IS(title_of("HTTP/1.0 200 OK\nServer: x\n\n", "<title>lf</title>", 17), "lf");
}

static void titles_long(void **state) {
  (void)state;
  /* past the scan limit: not looked at */
  size_t n = KR_WACZ_TITLE_SCAN + 100;
  char *html = malloc(n + 1);
  assert_non_null(html);
  memset(html, ' ', n);
  memcpy(html + KR_WACZ_TITLE_SCAN - 10, "<title>late</title>", 19);
  html[n] = '\0';
  assert_null(plain(html));
  memcpy(html + KR_WACZ_TITLE_SCAN - 40, "<title>late</title>", 19);
  TITLE_IS(plain(html), "late");
  /* a long title is cut at the cap, never inside a UTF-8 sequence */
  memset(html, 0, n);
  strcpy(html, "<title>a");
  for (size_t i = 0; i < KR_WACZ_TITLE_MAX; i++) strcat(html, "\xc3\xa9");
  strcat(html, "</title>");
  const char *t = plain(html);
  assert_non_null(t);
  assert_int_equal(strlen(t), KR_WACZ_TITLE_MAX - 1);
  assert_int_equal((unsigned char)t[strlen(t) - 1], 0xa9);
  free(html);
}

static void titles_coded(void **state) {
  (void)state;
  const char *html = "<html><head><title>Coded page</title></head><body>hello</body></html>";
  unsigned char z[4096];
  size_t zn = squeeze(html, strlen(html), 31, z, sizeof z);
  TITLE_IS(title_of("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n", z, zn),
                      "Coded page");
  /* cut short inside the gzip stream, after the title */
  TITLE_IS(title_of("HTTP/1.1 200 OK\r\ncontent-encoding: GZIP\r\n\r\n", z, zn - 30),
                      "Coded page");
  zn = squeeze(html, strlen(html), 15, z, sizeof z);
  TITLE_IS(title_of("HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n", z, zn),
                      "Coded page");
  zn = squeeze(html, strlen(html), -15, z, sizeof z);
  TITLE_IS(title_of("HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n", z, zn),
                      "Coded page");
  /* without decoding, the bytes are no title */
  assert_null(title_of("HTTP/1.1 200 OK\r\n\r\n", z, zn));
  /* codings not read: brotli, stacked */
  assert_null(title_of("HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\n", html, strlen(html)));
  /* chunked: framing and extensions gone, a title split over chunks */
  const char *ch = "8\r\n<title>S\r\n9;name=v\r\nplit one<\r\n7\r\n/title>\r\n0\r\n\r\n";
  TITLE_IS(title_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", ch,
                               strlen(ch)), "Split one");
  /* one chunk larger than what is scanned: its start is read */
  size_t big = KR_WACZ_TITLE_SCAN + 1000;
  char *bc = malloc(big + 32);
  assert_non_null(bc);
  int bl = snprintf(bc, 32, "%zx\r\n", big);
  memset(bc + bl, ' ', big);
  memcpy(bc + bl, "<title>Big chunk</title>", 24);
  TITLE_IS(title_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", bc,
                               (size_t)bl + big), "Big chunk");
  free(bc);
  /* chunked and gzip: chunks of the gzip stream */
  zn = squeeze(html, strlen(html), 31, z, sizeof z);
  char body[8192];
  size_t half = zn / 2;
  int k = snprintf(body, sizeof body, "%zx\r\n", half);
  memcpy(body + k, z, half);
  k += (int)half;
  k += snprintf(body + k, sizeof body - (size_t)k, "\r\n%zx\r\n", zn - half);
  memcpy(body + k, z + half, zn - half);
  k += (int)(zn - half);
  k += snprintf(body + k, sizeof body - (size_t)k, "\r\n0\r\n\r\n");
  TITLE_IS(title_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                               "Content-Encoding: gzip\r\n\r\n", body, (size_t)k), "Coded page");
  /* garbage that claims gzip: no title, no crash */
  assert_null(title_of("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n", html, strlen(html)));
}

static int fresh(void) {
  char path[] = "/tmp/kria-test-wacz-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  return fd;
}

static void sha256_hex(const void *p, size_t n, char out[KR_WACZ_SHA256_SIZE]) {
  unsigned char md[32];
  assert_int_equal(EVP_Digest(p, n, md, NULL, EVP_sha256(), NULL), 1);
  memcpy(out, "sha256:", 7);
  for (int i = 0; i < 32; i++) snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

static void range_digest(void **state) {
  (void)state;
  int fd = fresh();
  assert_int_equal(write(fd, "xxabcyy", 7), 7);
  char d[KR_WACZ_SHA256_SIZE], buf[2];
  /* through a buffer smaller than the range */
  assert_int_equal(kr__wacz_range_sha256(fd, 2, 3, d, buf, sizeof buf), 0);
  assert_string_equal(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert_int_equal(kr__wacz_range_sha256(fd, 5, 3, d, buf, sizeof buf), KR_EIO);
  close(fd);
}

/* Lines for kr__wacz_cdx_gz into a stored zip entry, then the entry's
 * bytes and index.idx checked block by block. */
static void cdx_gz(void **state) {
  (void)state;
  enum { N = 11, PER = 4 };
  char *lines[N];
  for (int i = 0; i < N; i++) {
    lines[i] = malloc(80);
    assert_non_null(lines[i]);
    snprintf(lines[i], 80, "com,example)/%02d 2024010100000%d {\"url\": \"u%d\"}", i, i % 10, i);
  }
  int fd = fresh();
  kr_zipw_t *z = kr_zipw_new(fd, 1700000000);
  kr_buf_t idx;
  kr_buf_init(&idx, 1 << 20);
  kr_zipw_entry_t e;
  assert_int_equal(kr_zipw_begin(z, "indexes/index.cdx.gz", KR_ZIP_STORE), 0);
  assert_int_equal(kr__wacz_cdx_gz(z, lines, N, PER, &idx), 0);
  assert_int_equal(kr_zipw_end(z, &e), 0);
  assert_int_equal(kr_zipw_close(z), 0);
  kr_zipw_free(z);
  /* the entry is the first: its data after the local header */
  unsigned char hdr[30];
  assert_int_equal(pread(fd, hdr, 30, 0), 30);
  off_t data = 30 + (hdr[26] | hdr[27] << 8) + (hdr[28] | hdr[29] << 8);
  unsigned char *gz = malloc(e.size);
  assert_non_null(gz);
  assert_int_equal(pread(fd, gz, e.size, data), (ssize_t)e.size);

  const char *p = idx.data;
  const char *meta = "!meta 0 {\"format\": \"cdxj-gzip-1.0\", \"filename\": \"index.cdx.gz\"}\n";
  assert_memory_equal(p, meta, strlen(meta));
  p += strlen(meta);
  unsigned long long want_off = 0;
  for (int b = 0; b < (N + PER - 1) / PER; b++) {
    const char *nl = strchr(p, '\n');
    assert_non_null(nl);
    char key[64], digest[80];
    unsigned long long off, len;
    assert_int_equal(sscanf(p, "%63[^{]{\"offset\": %llu, \"length\": %llu, \"digest\": \"%79[^\"]\", "
                               "\"filename\": \"index.cdx.gz\"}", key, &off, &len, digest), 4);
    /* the key: the block's first line up to " {" */
    size_t kl = strlen(key);
    assert_true(kl > 1 && key[kl - 1] == ' ');
    key[kl - 1] = '\0';
    assert_int_equal(strncmp(lines[b * PER], key, strlen(key)), 0);
    assert_memory_equal(lines[b * PER] + strlen(key), " {", 2);
    assert_true(off == want_off && off + len <= e.size);
    char d[KR_WACZ_SHA256_SIZE];
    sha256_hex(gz + off, len, d);
    assert_string_equal(digest, d);
    /* one gzip member that holds exactly the block's lines */
    char out[2048];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(inflateInit2(&zs, 31), Z_OK);
    zs.next_in = gz + off;
    zs.avail_in = (uInt)len;
    zs.next_out = (Bytef *)out;
    zs.avail_out = sizeof out - 1;
    assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
    assert_int_equal(zs.avail_in, 0);
    out[zs.total_out] = '\0';
    inflateEnd(&zs);
    char want[2048] = "";
    for (int i = b * PER; i < N && i < (b + 1) * PER; i++) {
      strcat(want, lines[i]);
      strcat(want, "\n");
    }
    assert_string_equal(out, want);
    want_off = off + len;
    p = nl + 1;
  }
  assert_int_equal(*p, '\0');
  assert_true(want_off == e.size);
  free(gz);
  kr_buf_free(&idx);
  for (int i = 0; i < N; i++) free(lines[i]);
  close(fd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(titles_plain),  cmocka_unit_test(titles_long),
      cmocka_unit_test(titles_coded),  cmocka_unit_test(range_digest),
      cmocka_unit_test(cdx_gz),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
