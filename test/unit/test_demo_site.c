/*
 * Tests for the demo site of `kria demo`. The pure part: paths map to
 * classes and pages (and nothing else does), versions move with each
 * class's period and never for the static ones, equal inputs give equal
 * bytes, honest validators follow the version and answer 304 to
 * If-None-Match (lists, weak tags, *) and If-Modified-Since, pages without
 * validators never 304, images ignore conditionals, the clock section is
 * the only difference between two requests of a clock page, the liar's
 * validators never move while its content does (and it 304s anyway), the
 * liar lives on Host localhost only, robots.txt allows everything. The
 * server on a real loop, talked to through plain sockets: keep-alive and
 * pipelined requests answered in order, HEAD without a body, 405, 413, a
 * head past 8 KiB 431, and closing with a client connected leaves no
 * handle behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "demo_site.h"
#include "kria/digest.h"
#include "kria/error.h"
#include "kria/validators.h"

/* ---- the pure part ------------------------------------------------------------ */

static const kr_demo_params_t P = {.seed = 7, .start_epoch_s = 1700000000, .port = 4242};

typedef struct answer {
  kr_demo_resp_t r;
  kr_buf_t body;
} answer_t;

/* Render one request into a (freed by done()). */
static void render(answer_t *a, const char *host, const char *path, uint64_t elapsed,
                   const char *inm, const char *ims, uint64_t reqno) {
  kr_demo_req_t rq = {
      .path = kr_slice_cstr(path),
      .host = host ? kr_slice_cstr(host) : kr_slice(NULL, 0),
      .if_none_match = inm ? kr_slice_cstr(inm) : kr_slice(NULL, 0),
      .if_modified_since = ims ? kr_slice_cstr(ims) : kr_slice(NULL, 0),
      .elapsed_ms = elapsed,
      .now_ms = (int64_t)P.start_epoch_s * 1000 + (int64_t)elapsed,
      .request_no = reqno,
  };
  kr_buf_init(&a->body, 65536);
  assert_int_equal(kr_demo_render(&P, &rq, &a->r, &a->body), 0);
}

static void done(answer_t *a) { kr_buf_free(&a->body); }

static int same_body(const answer_t *a, const answer_t *b) {
  return a->body.len == b->body.len && !memcmp(a->body.data, b->body.data, a->body.len);
}

static void classify(void **state) {
  (void)state;
  static const struct {
    const char *path;
    int cls;
    unsigned page;
  } t[] = {
      {"/", KR_DEMO_HOME, 0},           {"/?x=1", KR_DEMO_HOME, 0},
      {"/news/0", KR_DEMO_NEWS, 0},     {"/news/3", KR_DEMO_NEWS, 3},
      {"/news/3?a", KR_DEMO_NEWS, 3},   {"/news/4", -1, 0},
      {"/news/01", -1, 0},              {"/news/", -1, 0},
      {"/news/1x", -1, 0},              {"/news/99999999999999", -1, 0},
      {"/section/2", KR_DEMO_SECTION, 2}, {"/archive/3", KR_DEMO_ARCHIVE, 3},
      {"/clock/1", KR_DEMO_CLOCK, 1},   {"/clock/2", -1, 0},
      {"/img/2.gif", KR_DEMO_IMAGE, 2}, {"/img/2", -1, 0},
      {"/img/.gif", -1, 0},             {"/img/9.gif", -1, 0},
      {"/liar/2", KR_DEMO_LIAR, 2},     {"/robots.txt", -1, 0},
      {"", -1, 0},                      {"news/0", -1, 0},
      {"//", -1, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    unsigned page = 99;
    int c = kr_demo_classify(NULL, t[i].path, strlen(t[i].path), &page);
    if (c != t[i].cls) fail_msg("%s: class %d, wanted %d", t[i].path, c, t[i].cls);
    if (c >= 0 && page != t[i].page) fail_msg("%s: page %u", t[i].path, page);
  }
  for (int k = 0; k < KR_DEMO_NCLASS; k++) {
    assert_non_null(kr_demo_class((kr_demo_class_t)k)->name);
    /* every class but the grown site's articles is in the default site */
    assert_true((kr_demo_layout_default()->pages[k] > 0) == (k != KR_DEMO_ARTICLE));
  }
  unsigned p;
  assert_int_equal(kr_demo_classify(NULL, "/article/0", 10, &p), -1);
}

static void versions(void **state) {
  (void)state;
  /* Each page's version moves once per period, whatever its phase. */
  for (unsigned p = 0; p < 4; p++) {
    uint64_t v0 = kr_demo_version(NULL, P.seed, KR_DEMO_NEWS, p, 0);
    assert_true(v0 <= 1);
    assert_int_equal(kr_demo_version(NULL, P.seed, KR_DEMO_NEWS, p, 3000), v0 + 1);
    assert_int_equal(kr_demo_version(NULL, P.seed, KR_DEMO_NEWS, p, 30000), v0 + 10);
    assert_int_equal(kr_demo_version(NULL, P.seed, KR_DEMO_SECTION, p % 3, 150000) -
                         kr_demo_version(NULL, P.seed, KR_DEMO_SECTION, p % 3, 0),
                     10);
    assert_int_equal(kr_demo_version(NULL, P.seed, KR_DEMO_ARCHIVE, p, 1000000), 0);
    assert_int_equal(kr_demo_version(NULL, P.seed, KR_DEMO_IMAGE, p, 1000000), 0);
  }
  /* The phases differ, so a class does not change all at once. */
  int differ = 0;
  for (unsigned p = 1; p < 4; p++)
    for (uint64_t t = 0; t < 3000; t += 100)
      differ |= kr_demo_version(NULL, P.seed, KR_DEMO_NEWS, p, t) !=
                kr_demo_version(NULL, P.seed, KR_DEMO_NEWS, 0, t);
  assert_true(differ);
}

static void honest_validators(void **state) {
  (void)state;
  answer_t a, b, c;
  render(&a, "127.0.0.1:1", "/news/1", 0, NULL, NULL, 1);
  assert_int_equal(a.r.status, 200);
  assert_int_equal(a.r.cls, KR_DEMO_NEWS);
  assert_string_equal(a.r.content_type, "text/html; charset=utf-8");
  assert_true(a.r.etag[0] == '"');
  assert_true(a.r.last_modified[0]);
  assert_non_null(memmem(a.body.data, a.body.len, "href=\"/news/2\"", 14));
  /* Same version: same bytes and validators. */
  render(&b, "127.0.0.1:1", "/news/1", 10, NULL, NULL, 2);
  uint64_t v0 = kr_demo_version(NULL, P.seed, KR_DEMO_NEWS, 1, 0);
  if (kr_demo_version(NULL, P.seed, KR_DEMO_NEWS, 1, 10) == v0) {
    assert_true(same_body(&a, &b));
    assert_string_equal(a.r.etag, b.r.etag);
  }
  done(&b);
  /* A new version: new bytes, new ETag, a later Last-Modified. */
  render(&c, "127.0.0.1:1", "/news/1", 3000, NULL, NULL, 3);
  assert_false(same_body(&a, &c));
  assert_string_not_equal(a.r.etag, c.r.etag);
  assert_string_not_equal(a.r.last_modified, c.r.last_modified);

  /* If-None-Match: current tag (alone, in a list, weak, *) -> 304. */
  char list[128];
  snprintf(list, sizeof list, "\"x\", W/%s , \"y\"", c.r.etag);
  const char *yes[] = {c.r.etag, list, "*"};
  for (size_t i = 0; i < 3; i++) {
    render(&b, "127.0.0.1:1", "/news/1", 3000, yes[i], NULL, 4);
    if (b.r.status != 304) fail_msg("If-None-Match %s: %d", yes[i], b.r.status);
    assert_int_equal(b.body.len, 0);
    assert_string_equal(b.r.etag, c.r.etag);
    done(&b);
  }
  /* The old tag -> 200; If-None-Match decides even when IMS would 304. */
  render(&b, "127.0.0.1:1", "/news/1", 3000, a.r.etag, "Fri, 01 Jan 2100 00:00:00 GMT", 5);
  assert_int_equal(b.r.status, 200);
  done(&b);
  /* If-Modified-Since alone: at or after Last-Modified -> 304, before -> 200,
   * unreadable -> 200. */
  render(&b, "127.0.0.1:1", "/news/1", 3000, NULL, c.r.last_modified, 6);
  assert_int_equal(b.r.status, 304);
  done(&b);
  render(&b, "127.0.0.1:1", "/news/1", 3000, NULL, a.r.last_modified, 7);
  assert_int_equal(b.r.status, 200);
  done(&b);
  render(&b, "127.0.0.1:1", "/news/1", 3000, NULL, "yesterday", 8);
  assert_int_equal(b.r.status, 200);
  done(&b);
  /* Archive pages never change. */
  render(&b, NULL, "/archive/2", 0, NULL, NULL, 9);
  done(&a);
  render(&a, NULL, "/archive/2", 600000, b.r.etag, NULL, 10);
  assert_int_equal(a.r.status, 304);
  done(&a);
  render(&a, NULL, "/archive/2", 600000, NULL, NULL, 11);
  assert_true(same_body(&a, &b));
  done(&a);
  done(&b);
  done(&c);
}

static void no_validators(void **state) {
  (void)state;
  answer_t a, b;
  render(&a, NULL, "/section/0", 0, "*", "Fri, 01 Jan 2100 00:00:00 GMT", 1);
  assert_int_equal(a.r.status, 200);
  assert_string_equal(a.r.etag, "");
  assert_string_equal(a.r.last_modified, "");
  render(&b, NULL, "/section/0", 15000, NULL, NULL, 2);
  assert_false(same_body(&a, &b));
  done(&a);
  done(&b);
}

/* The body without its clock section. */
static void unclock(const answer_t *a, char *out, size_t cap) {
  const char *s = memmem(a->body.data, a->body.len, "<div class=\"clock\">", 19);
  assert_non_null(s);
  const char *e = memmem(s, a->body.len - (size_t)(s - a->body.data), "</div>", 6);
  assert_non_null(e);
  size_t head = (size_t)(s - a->body.data), tail = a->body.len - (size_t)(e + 6 - a->body.data);
  assert_true(head + tail < cap);
  memcpy(out, a->body.data, head);
  memcpy(out + head, e + 6, tail);
  out[head + tail] = '\0';
  assert_null(memchr(s + 19, '<', (size_t)(e - s - 19))); /* the strip rule's [^<]* fits */
}

static void clock_section(void **state) {
  (void)state;
  answer_t a, b;
  render(&a, NULL, "/clock/0", 100, NULL, NULL, 1);
  render(&b, NULL, "/clock/0", 60000, NULL, NULL, 2);
  assert_int_equal(a.r.status, 200);
  assert_string_equal(a.r.etag, "");
  assert_false(same_body(&a, &b));
  static char x[65536], y[65536];
  unclock(&a, x, sizeof x);
  unclock(&b, y, sizeof y);
  assert_string_equal(x, y);
  done(&a);
  done(&b);
}

static void images(void **state) {
  (void)state;
  answer_t a, b;
  render(&a, NULL, "/img/1.gif", 0, NULL, NULL, 1);
  assert_int_equal(a.r.status, 200);
  assert_string_equal(a.r.content_type, "image/gif");
  assert_true(a.body.len > 1000);
  assert_memory_equal(a.body.data, "GIF89a", 6);
  assert_int_equal((unsigned char)a.body.data[a.body.len - 1], 0x3b);
  /* Conditionals are ignored: the same image again. */
  render(&b, NULL, "/img/1.gif", 500000, a.r.etag, a.r.last_modified, 2);
  assert_int_equal(b.r.status, 200);
  assert_string_equal(a.r.etag, b.r.etag);
  assert_true(same_body(&a, &b));
  done(&a);
  done(&b);
}

static void liar(void **state) {
  (void)state;
  answer_t a, b, c;
  render(&a, "localhost:4242", "/liar/0", 0, NULL, NULL, 1);
  render(&b, "LOCALHOST", "/liar/0", 5000, NULL, NULL, 2);
  assert_int_equal(a.r.status, 200);
  assert_int_equal(a.r.cls, KR_DEMO_LIAR);
  assert_false(same_body(&a, &b));                    /* the content moved */
  assert_string_equal(a.r.etag, b.r.etag);            /* its validators did not */
  assert_string_equal(a.r.last_modified, b.r.last_modified);
  render(&c, "localhost:4242", "/liar/0", 5000, a.r.etag, NULL, 3);
  assert_int_equal(c.r.status, 304);                  /* and it says so */
  done(&c);
  /* The liar is on its own host; the main pages are not there. */
  render(&c, "127.0.0.1:4242", "/liar/0", 0, NULL, NULL, 4);
  assert_int_equal(c.r.status, 404);
  done(&c);
  render(&c, "localhost:4242", "/news/0", 0, NULL, NULL, 5);
  assert_int_equal(c.r.status, 404);
  done(&c);
  /* The home page links the liar pages with the port. */
  render(&c, "127.0.0.1:4242", "/", 0, NULL, NULL, 6);
  assert_non_null(memmem(c.body.data, c.body.len, "http://localhost:4242/liar/2", 28));
  assert_non_null(memmem(c.body.data, c.body.len, "/img/3.gif", 10));
  done(&c);
  done(&a);
  done(&b);
}

static void robots_and_missing(void **state) {
  (void)state;
  answer_t a;
  const char *hosts[] = {"127.0.0.1:4242", "localhost:4242"};
  for (size_t i = 0; i < 2; i++) {
    render(&a, hosts[i], "/robots.txt", 0, NULL, NULL, 1);
    assert_int_equal(a.r.status, 200);
    assert_int_equal(a.r.cls, -1);
    assert_non_null(memmem(a.body.data, a.body.len, "Disallow:\n", 10));
    done(&a);
  }
  const char *bad[] = {"/nope", "/news/7", "", "/img/1.gif.gif", "/%2e%2e/etc/passwd"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    render(&a, NULL, bad[i], 0, NULL, NULL, 1);
    assert_int_equal(a.r.status, 404);
    done(&a);
  }
  /* A huge If-None-Match list is read to its end without matching. */
  static char big[60000];
  memset(big, ',', sizeof big - 1);
  big[0] = '"';
  render(&a, NULL, "/news/0", 0, big, NULL, 1);
  assert_int_equal(a.r.status, 200);
  done(&a);
  /* A body buffer too small is an error, not an overflow. */
  kr_buf_t small;
  kr_buf_init(&small, 100);
  kr_demo_req_t rq = {.path = KR_SLICE_LIT("/archive/0")};
  kr_demo_resp_t r;
  assert_int_equal(kr_demo_render(&P, &rq, &r, &small), KR_ETOOBIG);
  kr_buf_free(&small);
}

/* ---- the server ---------------------------------------------------------------- */

typedef struct fx {
  uv_loop_t loop;
  kr_demo_site_t *site;
  uint16_t port;
} fx_t;

static void fx_start_opts(fx_t *fx, const kr_demo_site_opts_t *o) {
  memset(fx, 0, sizeof *fx);
  assert_int_equal(uv_loop_init(&fx->loop), 0);
  int fd;
  assert_int_equal(kr_demo_site_bind(&fd, &fx->port), 0);
  assert_true(fx->port > 0);
  assert_int_equal(kr_demo_site_start(&fx->loop, fd, o, &fx->site), 0);
}

static void fx_start(fx_t *fx) {
  kr_demo_site_opts_t o = {.seed = 7};
  fx_start_opts(fx, &o);
}

static void fx_stop(fx_t *fx) {
  kr_demo_site_close(fx->site);
  assert_int_equal(uv_run(&fx->loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&fx->loop), 0);
}

static int tc_connect(fx_t *fx) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(fx->port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

static void tc_send(fx_t *fx, int fd, const char *data, size_t n) {
  size_t off = 0;
  for (int turns = 0; off < n && turns < 100000; turns++) {
    ssize_t w = send(fd, data + off, n - off, MSG_NOSIGNAL);
    if (w > 0) off += (size_t)w;
    else if (w < 0 && errno == EAGAIN) uv_run(&fx->loop, UV_RUN_NOWAIT);
    else return; /* closed by the server: what it answered is what we test */
  }
}

/* Turn the loop until the server closes fd's connection; what came back. */
static const char *tc_response(fx_t *fx, int fd, size_t *len) {
  static char buf[1 << 17];
  size_t n = 0;
  for (int turns = 0; turns < 10000; turns++) {
    ssize_t r;
    while ((r = recv(fd, buf + n, sizeof buf - 1 - n, 0)) > 0) n += (size_t)r;
    if (r == 0 || (r < 0 && errno != EAGAIN) || n == sizeof buf - 1) break;
    uv_run(&fx->loop, UV_RUN_ONCE);
  }
  buf[n] = '\0';
  close(fd);
  if (len) *len = n;
  return buf;
}

static const char *exchange(fx_t *fx, const char *req, size_t n) {
  int fd = tc_connect(fx);
  tc_send(fx, fd, req, n);
  return tc_response(fx, fd, NULL);
}
#define EXCHANGE(fx, lit) exchange((fx), (lit), sizeof(lit) - 1)

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p++) n++;
  return n;
}

static void server_pipelined(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx);
  const char *r = EXCHANGE(&fx, "GET /archive/0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                                "HEAD /img/0.gif HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                                "GET /robots.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Connection: close\r\n\r\n"
                                "GET /news/0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  /* Three answers in order, the last says close, nothing after it. */
  assert_int_equal(count(r, "HTTP/1.1 200 OK\r\n"), 3);
  const char *a = strstr(r, "<title>kria demo: archive 0</title>");
  const char *b = strstr(r, "Content-Type: image/gif");
  const char *c = strstr(r, "User-agent: *");
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_true(a < b && b < c);
  assert_null(strstr(r, "GIF89a"));      /* HEAD: no body */
  assert_null(strstr(r, "news 0"));      /* after Connection: close */
  assert_int_equal(count(r, "Connection: keep-alive\r\n"), 2);
  assert_int_equal(count(r, "Connection: close\r\n"), 1);

  /* A conditional request gets a 304 with the validators, no body. */
  char etag[64] = "";
  const char *e = strstr(r, "ETag: ");
  assert_non_null(e);
  sscanf(e + 6, "%63[^\r]", etag);
  char req[512];
  int n = snprintf(req, sizeof req,
                   "GET /archive/0 HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: %s\r\n"
                   "Connection: close\r\n\r\n",
                   etag);
  r = exchange(&fx, req, (size_t)n);
  assert_non_null(strstr(r, "HTTP/1.1 304 Not Modified\r\n"));
  assert_non_null(strstr(r, etag));
  assert_null(strstr(r, "Content-Length"));
  assert_null(strstr(r, "<html>"));

  kr_demo_site_stats_t st;
  kr_demo_site_get_stats(fx.site, &st);
  assert_int_equal(st.requests, 4);
  assert_int_equal(st.not_modified, 1);
  assert_int_equal(st.by_class[KR_DEMO_ARCHIVE], 2);
  assert_int_equal(st.by_class_304[KR_DEMO_ARCHIVE], 1);
  assert_int_equal(st.by_class[KR_DEMO_IMAGE], 1);
  fx_stop(&fx);
}

static void server_refusals(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx);
  const char *r = EXCHANGE(&fx, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  assert_non_null(strstr(r, "HTTP/1.1 405 "));
  assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
  r = EXCHANGE(&fx, "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  assert_non_null(strstr(r, "HTTP/1.1 413 "));
  r = EXCHANGE(&fx, "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  assert_non_null(strstr(r, "HTTP/1.1 413 "));
  r = EXCHANGE(&fx, "GARBAGE\r\n\r\n");
  assert_non_null(strstr(r, "HTTP/1.1 400 "));
  r = EXCHANGE(&fx, "GET http://x/ HTTP/1.1\r\n\r\n");
  assert_non_null(strstr(r, "HTTP/1.1 400 "));
  r = EXCHANGE(&fx, "GET /nope HTTP/1.0\r\n\r\n");
  assert_non_null(strstr(r, "HTTP/1.1 404 "));
  assert_non_null(strstr(r, "Connection: close"));

  /* Heads past 8 KiB: one big header, many small ones. */
  static char big[20000];
  int n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nX-Big: ");
  memset(big + n, 'a', 9000);
  n += 9000;
  n += snprintf(big + n, sizeof big - (size_t)n, "\r\n\r\n");
  r = exchange(&fx, big, (size_t)n);
  assert_non_null(strstr(r, "HTTP/1.1 431 "));
  n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\n");
  for (int i = 0; i < 1000; i++) n += snprintf(big + n, sizeof big - (size_t)n, "X-%d: y\r\n", i);
  n += snprintf(big + n, sizeof big - (size_t)n, "\r\n");
  r = exchange(&fx, big, (size_t)n);
  assert_non_null(strstr(r, "HTTP/1.1 431 "));

  /* Closing with a client connected (mid-request) leaves nothing behind. */
  int fd = tc_connect(&fx);
  tc_send(&fx, fd, "GET / HTTP/1.1\r\n", 16);
  for (int i = 0; i < 5; i++) uv_run(&fx.loop, UV_RUN_NOWAIT);
  fx_stop(&fx);
  close(fd);
}

/* ---- the grown site and its ground truth ------------------------------------------ */

static void grown_layout(void **state) {
  (void)state;
  kr_demo_layout_t l;
  assert_int_equal(kr_demo_layout_grown(&l, 19), KR_EINVAL);
  assert_int_equal(kr_demo_layout_grown(&l, KR_DEMO_MAX_PAGES + 1), KR_EINVAL);
  for (unsigned n = 20; n <= KR_DEMO_MAX_PAGES; n += 7) {
    assert_int_equal(kr_demo_layout_grown(&l, n), 0);
    unsigned sum = 0;
    for (int k = 0; k < KR_DEMO_NCLASS; k++) {
      if (l.pages[k] == 0) fail_msg("%u pages: class %d empty", n, k);
      sum += l.pages[k];
    }
    assert_int_equal(sum, n);
    assert_int_equal(l.total, n);
    assert_int_equal(l.pages[KR_DEMO_HOME], 1);
  }
  assert_int_equal(kr_demo_layout_grown(&l, 300), 0);
  assert_true(l.poisson);
  assert_int_equal(l.pages[KR_DEMO_LIAR], 30); /* bench/adaptive/realcrawl.sh counts on it */
  assert_int_equal(l.pages[KR_DEMO_ARTICLE], 80);
  unsigned p;
  assert_int_equal(kr_demo_classify(&l, "/article/79", 11, &p), KR_DEMO_ARTICLE);
  assert_int_equal(p, 79);
  assert_int_equal(kr_demo_classify(&l, "/article/80", 11, &p), -1);
  assert_int_equal(kr_demo_classify(&l, "/news/9", 7, &p), KR_DEMO_NEWS);
  assert_int_equal(kr_demo_classify(&l, "/news/10", 8, &p), -1);
  char about[160];
  kr_demo_about(&l, KR_DEMO_ARTICLE, about, sizeof about);
  assert_non_null(strstr(about, "every 2 min on average"));
  kr_demo_about(NULL, KR_DEMO_NEWS, about, sizeof about);
  assert_string_equal(about, "a new version every 3 s; ETag, Last-Modified, 304s");
}

static void poisson_versions(void **state) {
  (void)state;
  kr_demo_layout_t l;
  assert_int_equal(kr_demo_layout_grown(&l, 300), 0);
  /* A version starts exactly when it is born, from the seed alone. */
  for (unsigned p = 0; p < 5; p++)
    for (uint64_t v = 1; v < 30; v++) {
      uint64_t b = kr_demo_born_ms(&l, 3, KR_DEMO_NEWS, p, v);
      assert_true(b > kr_demo_born_ms(&l, 3, KR_DEMO_NEWS, p, v - 1));
      assert_int_equal(kr_demo_version(&l, 3, KR_DEMO_NEWS, p, b), v);
      assert_int_equal(kr_demo_version(&l, 3, KR_DEMO_NEWS, p, b - 1), v - 1);
    }
  /* The rate is the class's: 10 news pages over 1,000 mean gaps each. */
  uint64_t n = 0;
  for (unsigned p = 0; p < 10; p++) n += kr_demo_version(&l, 3, KR_DEMO_NEWS, p, 5000000);
  assert_in_range(n, 9000, 11000);
  /* Never-changing classes stay at version 0; other seeds, other times. */
  assert_int_equal(kr_demo_version(&l, 3, KR_DEMO_ARCHIVE, 1, 1000000), 0);
  assert_int_equal(kr_demo_version(&l, 3, KR_DEMO_CLOCK, 1, 1000000), 0);
  assert_int_equal(kr_demo_born_ms(&l, 3, KR_DEMO_IMAGE, 1, 1), UINT64_MAX);
  assert_true(kr_demo_born_ms(&l, 3, KR_DEMO_SECTION, 0, 1) !=
              kr_demo_born_ms(&l, 4, KR_DEMO_SECTION, 0, 1));
}

/* The epoch seconds of a rendered Last-Modified. */
static int64_t lm_of(const answer_t *a) {
  int64_t t = 0;
  assert_int_equal(kr_validators_date_parse(a->r.last_modified, strlen(a->r.last_modified), &t), 0);
  return t;
}

/* A changing page's first version is as old as its changes make it, not
 * a day (a live page changing every few seconds never shows a day-old
 * date); what never changes and the liar keep a day-old one. */
static void first_version_dates(void **state) {
  (void)state;
  answer_t a;
  /* periodic (the default site): version 0 appeared one phase before the start */
  for (unsigned p = 0; p < 4; p++) {
    char path[32];
    snprintf(path, sizeof path, "/news/%u", p);
    render(&a, NULL, path, 0, NULL, NULL, 1);
    uint64_t age = kr_demo_age0_ms(NULL, P.seed, KR_DEMO_NEWS, p);
    assert_true(age < 3000);
    if (kr_demo_version(NULL, P.seed, KR_DEMO_NEWS, p, 0) == 0)
      assert_int_equal(lm_of(&a), P.start_epoch_s - (int64_t)((age + 999) / 1000));
    done(&a);
  }
  /* what never changes: a day to a year back, not one date for all */
  int64_t first = 0;
  int differ = 0;
  for (unsigned p = 0; p < 4; p++) {
    char path[32];
    snprintf(path, sizeof path, "/archive/%u", p);
    render(&a, NULL, path, 0, NULL, NULL, 2);
    int64_t t = lm_of(&a);
    assert_true(t <= P.start_epoch_s - 86400 && t >= P.start_epoch_s - 366 * 86400);
    assert_int_equal(t, P.start_epoch_s - (int64_t)((kr_demo_age0_ms(NULL, P.seed,
                                                                       KR_DEMO_ARCHIVE, p) +
                                                      999) / 1000));
    differ |= p && t != first;
    first = t;
    done(&a);
  }
  assert_true(differ);
  /* the liar: one date, a day back, for every page and version */
  render(&a, "localhost:4242", "/liar/1", 0, NULL, NULL, 3);
  assert_int_equal(lm_of(&a), P.start_epoch_s - 86400);
  done(&a);
  render(&a, "localhost:4242", "/liar/2", 60000, NULL, NULL, 3);
  assert_int_equal(lm_of(&a), P.start_epoch_s - 86400);
  done(&a);
  /* Poisson (the grown site): an exponential age with the class's mean,
   * over many pages about that mean */
  kr_demo_layout_t l;
  assert_int_equal(kr_demo_layout_grown(&l, 1000), 0);
  double sum = 0;
  for (unsigned p = 0; p < l.pages[KR_DEMO_ARTICLE]; p++)
    sum += (double)kr_demo_age0_ms(&l, P.seed, KR_DEMO_ARTICLE, p);
  double mean = sum / l.pages[KR_DEMO_ARTICLE];
  assert_true(mean > 0.8 * 120000 && mean < 1.2 * 120000);
  kr_demo_params_t q = P;
  q.layout = &l;
  kr_demo_req_t rq = {.path = kr_slice_cstr("/article/3"), .elapsed_ms = 0,
                      .now_ms = (int64_t)P.start_epoch_s * 1000, .request_no = 4};
  kr_buf_init(&a.body, 65536);
  assert_int_equal(kr_demo_render(&q, &rq, &a.r, &a.body), 0);
  assert_int_equal(lm_of(&a), P.start_epoch_s - (int64_t)((kr_demo_age0_ms(&l, P.seed,
                                                                             KR_DEMO_ARTICLE, 3) +
                                                            999) / 1000));
  assert_true(lm_of(&a) > P.start_epoch_s - 3600);
  done(&a);
}

/* GET path (Host host, If-None-Match inm or none) through the server;
 * the status, and the body's "sha1:" label into label (200s). */
static int get_digest(fx_t *fx, const char *host, const char *path, const char *inm,
                      char label[KR_SHA1_LABEL_SIZE], char *etag, size_t etag_cap) {
  char req[512];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\n%s%s%sConnection: close\r\n\r\n",
                   path, host, inm ? "If-None-Match: " : "", inm ? inm : "", inm ? "\r\n" : "");
  size_t len;
  int fd = tc_connect(fx);
  tc_send(fx, fd, req, (size_t)n);
  const char *r = tc_response(fx, fd, &len);
  int status = 0;
  sscanf(r, "HTTP/1.1 %d", &status);
  const char *e = strstr(r, "ETag: ");
  if (etag && e) sscanf(e + 6, "%63[^\r]", etag);
  const char *body = strstr(r, "\r\n\r\n");
  assert_non_null(body);
  body += 4;
  uint8_t d[KR_SHA1_LEN];
  assert_int_equal(kr_sha1(body, len - (size_t)(body - r), d), 0);
  kr_sha1_label(d, label);
  (void)etag_cap;
  return status;
}

/* The truth line of url's version v: its digest, served and 304 counts;
 * 0 when there is such a line. Also counts url's lines into *versions. */
static uint64_t last_born; /* truth_line's find: its born_ms */

static int truth_line(const char *truth, const char *url, uint64_t v, char *sha,
                      unsigned *served, unsigned *n304, unsigned *versions) {
  int found = -1;
  *versions = 0;
  size_t ul = strlen(url);
  for (const char *l = truth; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    if (*l == '#' || strncmp(l, url, ul) || l[ul] != '\t') continue;
    (*versions)++;
    char cls[32];
    unsigned page, mean;
    uint64_t ver, born;
    char s[64];
    unsigned a, b;
    if (sscanf(l + ul, "\t%31s\t%u\t%u\t%" SCNu64 "\t%" SCNu64 "\t%63s\t%u\t%u", cls, &page,
               &mean, &ver, &born, s, &a, &b) != 8)
      fail_msg("bad truth line for %s", url);
    if (ver != v) continue;
    strcpy(sha, s);
    last_born = born;
    *served = a;
    *n304 = b;
    found = 0;
  }
  return found;
}

static void truth_account(void **state) {
  (void)state;
  kr_demo_layout_t l;
  assert_int_equal(kr_demo_layout_grown(&l, 40), 0);
  kr_clock_t clk;
  kr_clock_init_virtual(&clk, 1700000000000ull);
  kr_demo_site_opts_t o = {.seed = 9, .layout = &l, .truth = 1, .clock = &clk};
  fx_t fx;
  fx_start_opts(&fx, &o);
  char host[64], lhost[64], url[128], lurl[128];
  snprintf(host, sizeof host, "127.0.0.1:%u", fx.port);
  snprintf(lhost, sizeof lhost, "localhost:%u", fx.port);
  snprintf(url, sizeof url, "http://127.0.0.1:%u/news/0", fx.port);
  snprintf(lurl, sizeof lurl, "http://localhost:%u/liar/0", fx.port);
  uint64_t n1 = kr_demo_born_ms(&l, 9, KR_DEMO_NEWS, 0, 1);
  uint64_t l1 = kr_demo_born_ms(&l, 9, KR_DEMO_LIAR, 0, 1);
  assert_true(n1 < UINT64_MAX && l1 < UINT64_MAX);

  /* Version 0 of news/0 and liar/0 in full; then, past a change of
   * both, news/0 asked with the old ETag: its live version in full, asked
   * with the new one: a 304; liar/0, whose ETag has not moved, asked with
   * it: a 304 although a new version is live, which comes in full only
   * when asked without. */
  uint64_t now = n1 > l1 ? n1 : l1;
  uint64_t nv = kr_demo_version(&l, 9, KR_DEMO_NEWS, 0, now);
  uint64_t lv = kr_demo_version(&l, 9, KR_DEMO_LIAR, 0, now);
  char d0[KR_SHA1_LABEL_SIZE], d1[KR_SHA1_LABEL_SIZE], dx[KR_SHA1_LABEL_SIZE];
  char l0[KR_SHA1_LABEL_SIZE], lv1[KR_SHA1_LABEL_SIZE];
  char e0[64] = "", e1[64] = "", ex[64], le[64] = "", le1[64] = "";
  assert_int_equal(get_digest(&fx, host, "/news/0", NULL, d0, e0, sizeof e0), 200);
  assert_int_equal(get_digest(&fx, lhost, "/liar/0", NULL, l0, le, sizeof le), 200);
  kr_clock_set(&clk, 1700000000000ull + now);
  assert_int_equal(get_digest(&fx, host, "/news/0", e0, d1, e1, sizeof e1), 200);
  assert_int_equal(get_digest(&fx, host, "/news/0", e1, dx, ex, sizeof ex), 304);
  assert_string_not_equal(d0, d1);
  assert_int_equal(get_digest(&fx, lhost, "/liar/0", le, dx, le1, sizeof le1), 304);
  assert_string_equal(le, le1);
  assert_int_equal(get_digest(&fx, lhost, "/liar/0", NULL, lv1, NULL, 0), 200);
  assert_string_not_equal(l0, lv1);
  /* A HEAD is no body served. */
  char req[256];
  snprintf(req, sizeof req, "HEAD /news/0 HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host);
  assert_non_null(strstr(exchange(&fx, req, strlen(req)), "200 OK"));

  /* The account, as of now. */
  char *buf = NULL;
  size_t blen = 0;
  FILE *f = open_memstream(&buf, &blen);
  assert_non_null(f);
  assert_int_equal(kr_demo_site_truth_write(fx.site, f), 0);
  fclose(f);
  char sha[64];
  unsigned served, n304, nver;
  /* Every version that existed, one line each, with the digest of what
   * was served; full bodies and 304s counted against the live version. */
  assert_int_equal(truth_line(buf, url, 0, sha, &served, &n304, &nver), 0);
  assert_int_equal(nver, nv + 1);
  assert_string_equal(sha, d0);
  assert_int_equal(served, 1);
  assert_int_equal(n304, 0);
  assert_int_equal(truth_line(buf, url, nv, sha, &served, &n304, &nver), 0);
  assert_string_equal(sha, d1);
  assert_int_equal(served, 1);
  assert_int_equal(n304, 1);
  for (uint64_t v = 1; v < nv; v++) { /* versions nobody asked for */
    assert_int_equal(truth_line(buf, url, v, sha, &served, &n304, &nver), 0);
    assert_int_equal(served + n304, 0);
    assert_int_equal(last_born, kr_demo_born_ms(&l, 9, KR_DEMO_NEWS, 0, v));
  }
  assert_int_equal(truth_line(buf, lurl, 0, sha, &served, &n304, &nver), 0);
  assert_int_equal(nver, lv + 1);
  assert_string_equal(sha, l0);
  assert_int_equal(served, 1);
  assert_int_equal(n304, 0);
  assert_int_equal(truth_line(buf, lurl, lv, sha, &served, &n304, &nver), 0);
  assert_int_equal(last_born, kr_demo_born_ms(&l, 9, KR_DEMO_LIAR, 0, lv));
  assert_string_equal(sha, lv1);
  assert_int_equal(served, 1);
  assert_int_equal(n304, 1);
  /* Pages never asked for are listed, unserved; a never-changing page has
   * one version; the clock pages no digest. */
  char other[128];
  snprintf(other, sizeof other, "http://127.0.0.1:%u/archive/0", fx.port);
  assert_int_equal(truth_line(buf, other, 0, sha, &served, &n304, &nver), 0);
  assert_int_equal(nver, 1);
  assert_int_equal(served, 0);
  assert_true(strncmp(sha, "sha1:", 5) == 0);
  snprintf(other, sizeof other, "http://127.0.0.1:%u/clock/0", fx.port);
  assert_int_equal(truth_line(buf, other, 0, sha, &served, &n304, &nver), 0);
  assert_string_equal(sha, "-");
  snprintf(other, sizeof other, "http://127.0.0.1:%u/img/0.gif", fx.port);
  assert_int_equal(truth_line(buf, other, 0, sha, &served, &n304, &nver), 0);
  free(buf);

  /* No account kept: refused. */
  fx_stop(&fx);
  fx_start(&fx);
  f = open_memstream(&buf, &blen);
  assert_int_equal(kr_demo_site_truth_write(fx.site, f), KR_EINVAL);
  fclose(f);
  free(buf);
  fx_stop(&fx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(classify),          cmocka_unit_test(versions),
      cmocka_unit_test(honest_validators), cmocka_unit_test(no_validators),
      cmocka_unit_test(clock_section),     cmocka_unit_test(images),
      cmocka_unit_test(liar),              cmocka_unit_test(robots_and_missing),
      cmocka_unit_test(server_pipelined),  cmocka_unit_test(server_refusals),
      cmocka_unit_test(grown_layout),      cmocka_unit_test(poisson_versions),
      cmocka_unit_test(first_version_dates),
      cmocka_unit_test(truth_account),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
