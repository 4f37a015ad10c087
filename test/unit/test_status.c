/*
 * Unit and loop tests for the status server. Helpers: the constant-time
 * token compare (equal, one byte off anywhere, prefixes, longer, empty),
 * Bearer parsing, the Host check, query decoding, JSON string escaping.
 * The server on a real loop, bound to 127.0.0.1:0, talked to through
 * plain sockets while the test turns the loop: a GET reaches the handler
 * with path and query, HEAD has no body, other methods get 405, absolute
 * targets 400, headers past 8 KiB (one big, many small, whitespace
 * padding) 431, bodies past 4 KiB (Content-Length and chunked) 413, a
 * slowloris client 408 and is closed, clients over the cap 503 while the
 * others are served, POST without a token configured 403, without or
 * with a wrong token 401, with the token the handler; Host names that are
 * not loopback 421; pipelined requests answered once; the after-callback
 * runs once the response is out; refusing a non-loopback address without
 * a token and a port in use; closing with clients connected leaves no
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
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "kria/error.h"
#include "status.h"

/* ---- helpers ------------------------------------------------------------ */

static void token_compare(void **state) {
  (void)state;
  const char *t = "0123456789abcdef";
  assert_true(kr_status_token_equal(t, 16, "0123456789abcdef", 16));
  assert_false(kr_status_token_equal(t, 16, "0123456789abcdeF", 16));
  assert_false(kr_status_token_equal(t, 16, "x123456789abcdef", 16));
  assert_false(kr_status_token_equal(t, 16, "0123456789abcde", 15));
  assert_false(kr_status_token_equal(t, 16, "0123456789abcdef0", 17));
  /* got repeats want's prefix: still different lengths */
  assert_false(kr_status_token_equal(t, 16, "01234567", 8));
  assert_false(kr_status_token_equal(t, 16, "", 0));
  assert_false(kr_status_token_equal("", 0, "", 0)); /* no token never matches */
}

static void bearer(void **state) {
  (void)state;
  const char *t = "s3cret-token-0123";
  assert_true(kr_status_bearer_ok(t, KR_SLICE_LIT("Bearer s3cret-token-0123")));
  assert_true(kr_status_bearer_ok(t, KR_SLICE_LIT("bearer   s3cret-token-0123  ")));
  assert_false(kr_status_bearer_ok(t, KR_SLICE_LIT("Basic s3cret-token-0123")));
  assert_false(kr_status_bearer_ok(t, KR_SLICE_LIT("Bearers3cret-token-0123")));
  assert_false(kr_status_bearer_ok(t, KR_SLICE_LIT("Bearer s3cret-token-012")));
  assert_false(kr_status_bearer_ok(t, KR_SLICE_LIT("Bearer")));
  assert_false(kr_status_bearer_ok(t, KR_SLICE_LIT("")));
  assert_false(kr_status_bearer_ok("", KR_SLICE_LIT("Bearer ")));
  assert_false(kr_status_bearer_ok(NULL, KR_SLICE_LIT("Bearer x")));
}

static void host_check(void **state) {
  (void)state;
  static const char *const yes[] = {"127.0.0.1", "127.0.0.1:7373", "127.9.8.7:1", "localhost",
                                    "LOCALHOST:80", "[::1]", "[::1]:7373", " localhost "};
  static const char *const no[] = {"evil.example",  "evil.example:7373", "localhost.evil.example",
                                   "10.0.0.1:7373", "[::2]:1",           "::1",
                                   "127.0.0.1:x",   "127.0.0.1:123456",  "[::1]x",
                                   "",              "0.0.0.0:7373",      "[::1"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    assert_true(kr_status_host_is_loopback(kr_slice_cstr(yes[i])));
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
    if (kr_status_host_is_loopback(kr_slice_cstr(no[i]))) fail_msg("accepted Host '%s'", no[i]);
  }
}

static void query_params(void **state) {
  (void)state;
  kr_buf_t b;
  kr_buf_init(&b, 64);
  kr_slice_t q = KR_SLICE_LIT("a=1&url=http%3A%2F%2Fx.test%2Fp%3Fq%3D1&b=a+b&urlx=no&e");
  assert_int_equal(kr_status_query_param(q, "url", &b), 1);
  assert_string_equal(b.data, "http://x.test/p?q=1");
  assert_int_equal(kr_status_query_param(q, "b", &b), 1);
  assert_string_equal(b.data, "a b");
  assert_int_equal(kr_status_query_param(q, "e", &b), 1);
  assert_int_equal(b.len, 0);
  assert_int_equal(kr_status_query_param(q, "u", &b), 0);
  assert_int_equal(kr_status_query_param(q, "zzz", &b), 0);
  assert_int_equal(kr_status_query_param((kr_slice_t){NULL, 0}, "url", &b), 0);
  assert_int_equal(kr_status_query_param(KR_SLICE_LIT("url=%4"), "url", &b), KR_EINVAL);
  assert_int_equal(kr_status_query_param(KR_SLICE_LIT("url=%zz"), "url", &b), KR_EINVAL);
  assert_int_equal(kr_status_query_param(KR_SLICE_LIT("url=a%00b"), "url", &b), KR_EINVAL);
  char big[200];
  memset(big, 'x', sizeof big);
  memcpy(big, "url=", 4);
  assert_int_equal(kr_status_query_param(kr_slice(big, sizeof big), "url", &b), KR_ETOOBIG);
  kr_buf_free(&b);
}

static void json_strings(void **state) {
  (void)state;
  kr_buf_t b;
  kr_buf_init(&b, 1024);
  assert_int_equal(kr_status_json_str(&b, "a\"b\\c\n\x01\x7f", 8), 0);
  assert_string_equal(b.data, "\"a\\\"b\\\\c\\n\\u0001\\u007f\"");
  kr_buf_reset(&b);
  /* valid UTF-8 kept, invalid bytes, overlongs and surrogates replaced */
  const char s[] = "\xc3\xa9|\xff|\xc0\xaf|\xed\xa0\x80|\xf0\x9f\x98\x80|\xe2\x82";
  assert_int_equal(kr_status_json_str(&b, s, sizeof s - 1), 0);
  assert_string_equal(b.data,
                      "\"\xc3\xa9|\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\xf0\x9f\x98\x80|"
                      "\\ufffd\\ufffd\"");
  kr_buf_reset(&b);
  assert_int_equal(kr_status_json_str(&b, "", 0), 0);
  assert_string_equal(b.data, "\"\"");
  kr_buf_free(&b);
}

/* ---- the server on a loop ------------------------------------------------- */

typedef struct {
  uv_loop_t loop;
  kr_status_server_t *srv;
  int port;
  int calls;           /* handler calls */
  int after_calls;
  int last_method;
  int last_authorized;
  char last_path[256];
  char last_query[256];
  char last_body[8192];
  size_t last_body_len;
  char last_sig[256];
  size_t fill;         /* handler writes this many bytes */
} fx_t;

static void after_cb(void *ud) { ((fx_t *)ud)->after_calls++; }

static void handler(void *ud, const kr_status_req_t *req, kr_status_resp_t *resp) {
  fx_t *fx = ud;
  fx->calls++;
  fx->last_method = req->method;
  fx->last_authorized = req->authorized;
  snprintf(fx->last_path, sizeof fx->last_path, "%.*s", (int)req->path.n, req->path.p);
  snprintf(fx->last_query, sizeof fx->last_query, "%.*s", (int)req->query.n,
           req->query.p ? req->query.p : "");
  snprintf(fx->last_body, sizeof fx->last_body, "%.*s", (int)req->body.n, req->body.p);
  fx->last_body_len = req->body.n;
  snprintf(fx->last_sig, sizeof fx->last_sig, "%.*s", (int)req->signature.n,
           req->signature.p ? req->signature.p : "");
  resp->content_type = "text/plain";
  if (fx->fill) {
    for (size_t i = 0; i < fx->fill; i++)
      if (kr_buf_append(resp->body, "x", 1)) break;
  } else {
    kr_buf_append_str(resp->body, "hello\n");
  }
  if (req->method == KR_STATUS_POST) {
    resp->after = after_cb;
    resp->after_ud = fx;
  }
}

/* Set before fx_start: paths under it take POSTs without the token. */
static const char *fx_public;

/* evict_ms: how long a silent client holds its place against a newcomer
 * (fx_start: never, within a test). */
static void fx_start_evict(fx_t *fx, const char *token, uint32_t max_clients, uint32_t evict_ms) {
  memset(fx, 0, sizeof *fx);
  assert_int_equal(uv_loop_init(&fx->loop), 0);
  kr_status_opts_t o;
  kr_status_opts_default(&o);
  o.listen = "127.0.0.1:0";
  o.token = token;
  o.request_timeout_ms = 300;
  o.silent_timeout_ms = 300;
  o.evict_silent_ms = evict_ms;
  o.linger_ms = 200;
  o.max_clients = max_clients;
  o.max_response_bytes = 100000;
  o.public_prefix = fx_public;
  o.public_max_body_bytes = 16384;
  o.handler = handler;
  o.ud = fx;
  char err[256];
  assert_int_equal(kr_status_start(&fx->loop, &o, &fx->srv, err, sizeof err), 0);
  const char *a = kr_status_address(fx->srv);
  assert_non_null(strstr(a, "127.0.0.1:"));
  fx->port = atoi(strrchr(a, ':') + 1);
  assert_true(fx->port > 0);
}

static void fx_start(fx_t *fx, const char *token, uint32_t max_clients) {
  fx_start_evict(fx, token, max_clients, UINT32_MAX);
}

static void fx_stop(fx_t *fx) {
  kr_status_close(fx->srv);
  assert_int_equal(uv_run(&fx->loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&fx->loop), 0);
}

static int tc_connect(fx_t *fx) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)fx->port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

static void tc_send(int fd, const char *data, size_t n) {
  size_t off = 0;
  int spins = 0;
  while (off < n) {
    ssize_t w = send(fd, data + off, n - off, MSG_NOSIGNAL);
    if (w > 0) {
      off += (size_t)w;
    } else if (w < 0 && errno == EAGAIN && ++spins < 1000000) {
      continue;
    } else {
      return; /* closed by the server: what it answered is what we test */
    }
  }
}

/* Turn the loop until the server closes fd's connection; the response
 * (up to 64 KiB) in a static buffer. Bounded in loop turns. */
static const char *tc_response(fx_t *fx, int fd) {
  static char buf[65536];
  size_t n = 0;
  for (int turns = 0; turns < 10000; turns++) {
    ssize_t r;
    while ((r = recv(fd, buf + n, sizeof buf - 1 - n, 0)) > 0) n += (size_t)r;
    if (r == 0 || (r < 0 && errno != EAGAIN) || n == sizeof buf - 1) break;
    uv_run(&fx->loop, UV_RUN_ONCE);
  }
  buf[n] = '\0';
  close(fd);
  return buf;
}

static const char *exchange(fx_t *fx, const char *req, size_t n) {
  int fd = tc_connect(fx);
  tc_send(fd, req, n);
  return tc_response(fx, fd);
}
#define EXCHANGE(fx, lit) exchange((fx), (lit), sizeof(lit) - 1)

static int status_of(const char *resp) {
  int st = 0;
  if (sscanf(resp, "HTTP/1.1 %d ", &st) != 1) return -1;
  return st;
}

static void get_and_head(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 16);
  const char *r = EXCHANGE(&fx, "GET /status?x=1&y=%20 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  assert_int_equal(status_of(r), 200);
  assert_non_null(strstr(r, "Content-Length: 6\r\n"));
  assert_non_null(strstr(r, "Connection: close\r\n"));
  assert_non_null(strstr(r, "Cache-Control: no-store\r\n"));
  assert_non_null(strstr(r, "\r\n\r\nhello\n"));
  assert_string_equal(fx.last_path, "/status");
  assert_string_equal(fx.last_query, "x=1&y=%20");
  assert_int_equal(fx.last_method, KR_STATUS_GET);
  r = EXCHANGE(&fx, "HEAD / HTTP/1.1\r\nHost: localhost:7373\r\n\r\n");
  assert_int_equal(status_of(r), 200);
  assert_non_null(strstr(r, "Content-Length: 6\r\n"));
  assert_null(strstr(r, "hello"));
  /* HTTP/1.0 without Host */
  r = EXCHANGE(&fx, "GET /a HTTP/1.0\r\n\r\n");
  assert_int_equal(status_of(r), 200);
  assert_int_equal(fx.calls, 3);
  fx_stop(&fx);
}

static void bad_requests(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 16);
  assert_int_equal(status_of(EXCHANGE(&fx, "PUT / HTTP/1.1\r\nHost: localhost\r\n\r\n")), 405);
  assert_int_equal(status_of(EXCHANGE(&fx, "OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n")), 405);
  assert_int_equal(status_of(EXCHANGE(&fx, "GET http://x/ HTTP/1.1\r\nHost: localhost\r\n\r\n")),
                   400);
  assert_int_equal(status_of(EXCHANGE(&fx, "GARBAGE\r\n\r\n")), 400);
  assert_int_equal(status_of(EXCHANGE(&fx, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")), 400);
  assert_int_equal(status_of(EXCHANGE(&fx, "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n")), 421);
  assert_int_equal(
      status_of(EXCHANGE(&fx, "GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
      400);
  assert_int_equal(fx.calls, 0);
  assert_true(kr_status_stats(fx.srv)->bad_requests >= 7);
  fx_stop(&fx);
}

static void header_limits(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 16);
  char *req = malloc(64 << 10);
  /* one header of 9,000 bytes */
  int n = snprintf(req, 64 << 10, "GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: %09000d\r\n\r\n", 0);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 431);
  /* 1,000 small headers */
  n = snprintf(req, 64 << 10, "GET / HTTP/1.1\r\nHost: localhost\r\n");
  for (int i = 0; i < 1000; i++) n += snprintf(req + n, (64 << 10) - (size_t)n, "X-%d: v\r\n", i);
  n += snprintf(req + n, (64 << 10) - (size_t)n, "\r\n");
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 431);
  /* a header value padded with 20,000 spaces llhttp never reports */
  n = snprintf(req, 64 << 10, "GET / HTTP/1.1\r\nHost: localhost\r\nX-Pad:");
  memset(req + n, ' ', 20000);
  n += 20000;
  n += snprintf(req + n, (64 << 10) - (size_t)n, "v\r\n\r\n");
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 431);
  /* a 9,000-byte URL */
  n = snprintf(req, 64 << 10, "GET /%09000d HTTP/1.1\r\nHost: localhost\r\n\r\n", 0);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 431);
  /* an Authorization value past its own cap */
  n = snprintf(req, 64 << 10, "GET / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %02000d\r\n\r\n", 0);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 431);
  /* just under the limit is fine */
  n = snprintf(req, 64 << 10, "GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: %07000d\r\n\r\n", 0);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 200);
  free(req);
  assert_int_equal(fx.calls, 1);
  fx_stop(&fx);
}

static const char token[] = "test-token-0123456789";

static void body_limits(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, token, 16);
  char *req = malloc(64 << 10);
  int n = snprintf(req, 64 << 10,
                   "POST /pause HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: 5000\r\n\r\n",
                   token);
  memset(req + n, 'b', 5000);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n + 5000)), 413);
  n = snprintf(req, 64 << 10,
               "POST /pause HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n"
               "Transfer-Encoding: chunked\r\n\r\n",
               token);
  for (int i = 0; i < 5; i++) {
    n += snprintf(req + n, (64 << 10) - (size_t)n, "400\r\n");
    memset(req + n, 'c', 1024);
    n += 1024;
    n += snprintf(req + n, (64 << 10) - (size_t)n, "\r\n");
  }
  n += snprintf(req + n, (64 << 10) - (size_t)n, "0\r\n\r\n");
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 413);
  assert_int_equal(fx.calls, 0);
  /* a small body arrives */
  n = snprintf(req, 64 << 10,
               "POST /x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: 4\r\n\r\nabcd",
               token);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 200);
  assert_string_equal(fx.last_body, "abcd");
  free(req);
  fx_stop(&fx);
}

static void slowloris(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 16);
  uint64_t t0 = uv_hrtime();
  int fd = tc_connect(&fx);
  tc_send(fd, "GET / HTTP/1.1\r\nHo", 18);
  const char *r = tc_response(&fx, fd);
  uint64_t ms = (uv_hrtime() - t0) / 1000000;
  assert_int_equal(status_of(r), 408);
  assert_true(ms >= 250 && ms < 3000);
  assert_int_equal(kr_status_stats(fx.srv)->timeouts, 1);
  /* connected, silent: closed without an answer */
  fd = tc_connect(&fx);
  assert_string_equal(tc_response(&fx, fd), "");
  assert_int_equal(kr_status_stats(fx.srv)->silent_closed, 1);
  assert_int_equal(kr_status_stats(fx.srv)->timeouts, 1);
  assert_int_equal(fx.calls, 0);
  fx_stop(&fx);
}

static void on_guard(uv_timer_t *t) { (void)t; }

/* Turn the loop until n clients are connected: bounded in turns, and a
 * guard timer keeps a turn from waiting for ever when none comes. */
static void wait_clients(fx_t *fx, uint32_t n) {
  uv_timer_t guard;
  uv_timer_init(&fx->loop, &guard);
  uv_timer_start(&guard, on_guard, 50, 50);
  for (int i = 0; i < 200 && kr_status_stats(fx->srv)->clients != n; i++)
    uv_run(&fx->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&guard, NULL);
  uv_run(&fx->loop, UV_RUN_NOWAIT);
  assert_int_equal(kr_status_stats(fx->srv)->clients, n);
}

/* A full server: the client that has sent nothing for longest gives its
 * place to a newcomer; clients that have sent bytes keep theirs. */
static void silent_evicted(void **state) {
  (void)state;
  fx_t fx;
  fx_start_evict(&fx, NULL, 2, 0);
  static const char req[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  int a = tc_connect(&fx);
  wait_clients(&fx, 1);
  int b = tc_connect(&fx);
  wait_clients(&fx, 2);
  tc_send(b, "G", 1); /* b is no longer silent */
  for (int i = 0; i < 100 && !kr_status_stats(fx.srv)->evicted; i++) {
    int c = tc_connect(&fx);
    tc_send(c, req, sizeof req - 1);
    assert_int_equal(status_of(tc_response(&fx, c)), 200);
  }
  assert_int_equal(kr_status_stats(fx.srv)->evicted, 1);
  assert_int_equal(kr_status_stats(fx.srv)->refused, 0);
  assert_string_equal(tc_response(&fx, a), ""); /* closed, nothing said */
  tc_send(b, req + 1, sizeof req - 2);
  assert_int_equal(status_of(tc_response(&fx, b)), 200);
  fx_stop(&fx);
}

/* Clients that hold every place by sending slowly never lock out a
 * request with the token: one slot past max_clients is kept for it, and
 * any other request there is answered 503. */
static void room_for_control(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, token, 2);
  int a = tc_connect(&fx), b = tc_connect(&fx);
  wait_clients(&fx, 2);
  tc_send(a, "G", 1);
  tc_send(b, "G", 1);
  int c = tc_connect(&fx);
  wait_clients(&fx, 3);
  static const char get[] = "GET /status HTTP/1.1\r\nHost: localhost\r\n\r\n";
  tc_send(c, get, sizeof get - 1);
  const char *r = tc_response(&fx, c);
  assert_int_equal(status_of(r), 503);
  assert_non_null(strstr(r, "kept for requests with the token"));
  assert_int_equal(fx.calls, 0);
  static const char stop[] = "POST /stop HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
                             "test-token-0123456789\r\nContent-Length: 0\r\n\r\n";
  int d = tc_connect(&fx);
  tc_send(d, stop, sizeof stop - 1);
  assert_int_equal(status_of(tc_response(&fx, d)), 200);
  assert_int_equal(fx.calls, 1);
  assert_string_equal(fx.last_path, "/stop");
  /* the kept slot held by a slow client without the token: refused at once */
  int e = tc_connect(&fx);
  tc_send(e, "P", 1);
  for (int i = 0; i < 100 && kr_status_stats(fx.srv)->clients < 3; i++)
    uv_run(&fx.loop, UV_RUN_ONCE);
  int f = tc_connect(&fx);
  assert_int_equal(status_of(tc_response(&fx, f)), 503);
  close(a);
  close(b);
  close(e);
  fx_stop(&fx);
}

static void client_cap(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 2);
  int a = tc_connect(&fx), b = tc_connect(&fx);
  for (int i = 0; i < 100 && kr_status_stats(fx.srv)->clients < 2; i++)
    uv_run(&fx.loop, UV_RUN_ONCE);
  assert_int_equal(kr_status_stats(fx.srv)->clients, 2);
  int c = tc_connect(&fx);
  assert_int_equal(status_of(tc_response(&fx, c)), 503);
  assert_int_equal(kr_status_stats(fx.srv)->refused, 1);
  /* the two earlier clients are still served */
  static const char req[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  tc_send(a, req, sizeof req - 1);
  assert_int_equal(status_of(tc_response(&fx, a)), 200);
  tc_send(b, req, sizeof req - 1);
  assert_int_equal(status_of(tc_response(&fx, b)), 200);
  fx_stop(&fx);
}

static void control_without_token(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 16);
  const char *r = EXCHANGE(&fx, "POST /stop HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
                                "anything-at-all-123\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 403);
  assert_int_equal(fx.calls, 0);
  assert_int_equal(kr_status_stats(fx.srv)->unauthorized, 1);
  fx_stop(&fx);
}

static void control_with_token(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, token, 16);
  const char *r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 401);
  assert_non_null(strstr(r, "WWW-Authenticate: Bearer"));
  r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
                    "test-token-012345678\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 401);
  r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
                    "test-token-0123456789x\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 401);
  r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic "
                    "test-token-0123456789\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 401);
  r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer x\r\n"
                    "Authorization: Bearer test-token-0123456789\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 400);
  assert_int_equal(fx.calls, 0);
  r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: 127.0.0.1\r\nauthorization: bearer "
                    "test-token-0123456789\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 200);
  assert_int_equal(fx.calls, 1);
  assert_int_equal(fx.last_method, KR_STATUS_POST);
  assert_true(fx.last_authorized);
  assert_int_equal(fx.after_calls, 1);
  /* GETs need no token */
  r = EXCHANGE(&fx, "GET /status HTTP/1.1\r\nHost: localhost\r\n\r\n");
  assert_int_equal(status_of(r), 200);
  /* a token replaced at reload */
  assert_int_equal(kr_status_set_token(fx.srv, "another-token-0123456"), 0);
  r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                    "test-token-0123456789\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 401);
  r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                    "another-token-0123456\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 200);
  fx_stop(&fx);
}

/* Paths under the public prefix (WebSub callbacks) take POSTs without the
 * token, unauthorized, with X-Hub-Signature passed on and bodies up to
 * their own cap; every other POST still needs the token and the small
 * cap. */
static void public_prefix(void **state) {
  (void)state;
  fx_t fx;
  fx_public = "/websub/";
  fx_start(&fx, token, 16);
  fx_public = NULL;
  const char *r = EXCHANGE(&fx, "POST /websub/abc HTTP/1.1\r\nHost: localhost\r\n"
                                "X-Hub-Signature: sha256=ff00\r\nContent-Length: 4\r\n\r\nbody");
  assert_int_equal(status_of(r), 200);
  assert_int_equal(fx.calls, 1);
  assert_false(fx.last_authorized);
  assert_string_equal(fx.last_path, "/websub/abc");
  assert_string_equal(fx.last_sig, "sha256=ff00");
  assert_string_equal(fx.last_body, "body");
  r = EXCHANGE(&fx, "POST /websub/abc HTTP/1.1\r\nHost: localhost\r\nX-Hub-Signature: a\r\n"
                    "X-Hub-Signature: b\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 400);
  r = EXCHANGE(&fx, "POST /websubx HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 401);
  r = EXCHANGE(&fx, "POST /pause HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n");
  assert_int_equal(status_of(r), 401);
  assert_int_equal(fx.calls, 1);
  char *req = malloc(64 << 10);
  /* 10000 bytes: over max_body_bytes, under the public cap */
  int n = snprintf(req, 64 << 10,
                   "POST /websub/abc HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000\r\n\r\n");
  memset(req + n, 'b', 10000);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n + 10000)), 200);
  assert_int_equal(fx.last_body_len, 10000);
  assert_string_equal(fx.last_sig, "");
  n = snprintf(req, 64 << 10,
               "POST /websub/abc HTTP/1.1\r\nHost: localhost\r\nContent-Length: 20000\r\n\r\n");
  memset(req + n, 'b', 20000);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n + 20000)), 413);
  /* chunked past the public cap */
  n = snprintf(req, 64 << 10,
               "POST /websub/abc HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 20; i++) {
    n += snprintf(req + n, (64 << 10) - (size_t)n, "400\r\n");
    memset(req + n, 'c', 1024);
    n += 1024;
    n += snprintf(req + n, (64 << 10) - (size_t)n, "\r\n");
  }
  n += snprintf(req + n, (64 << 10) - (size_t)n, "0\r\n\r\n");
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n)), 413);
  /* the token's routes keep the small cap */
  n = snprintf(req, 64 << 10,
               "POST /pause HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: 5000\r\n\r\n",
               token);
  memset(req + n, 'b', 5000);
  assert_int_equal(status_of(exchange(&fx, req, (size_t)n + 5000)), 413);
  assert_int_equal(fx.calls, 2);
  free(req);
  fx_stop(&fx);
}

static void pipelined_once(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 16);
  const char *r = EXCHANGE(&fx, "GET /one HTTP/1.1\r\nHost: localhost\r\n\r\n"
                                "GET /two HTTP/1.1\r\nHost: localhost\r\n\r\n");
  assert_int_equal(status_of(r), 200);
  assert_null(strstr(r + 10, "HTTP/1.1"));
  assert_int_equal(fx.calls, 1);
  assert_string_equal(fx.last_path, "/one");
  fx_stop(&fx);
}

static void response_cap(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 16);
  fx.fill = 200000; /* over max_response_bytes (100,000) */
  const char *r = EXCHANGE(&fx, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
  assert_int_equal(status_of(r), 200);
  assert_non_null(strstr(r, "Content-Length: 100000\r\n"));
  fx_stop(&fx);
}

static void close_with_clients(void **state) {
  (void)state;
  fx_t fx;
  fx_start(&fx, NULL, 16);
  int a = tc_connect(&fx), b = tc_connect(&fx);
  tc_send(b, "GET / HTTP/1.1\r\n", 16);
  for (int i = 0; i < 100 && kr_status_stats(fx.srv)->clients < 2; i++)
    uv_run(&fx.loop, UV_RUN_ONCE);
  assert_int_equal(kr_status_stats(fx.srv)->clients, 2);
  fx_stop(&fx); /* every handle closed: uv_loop_close() == 0 */
  close(a);
  close(b);
}

static void start_refusals(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_status_opts_t o;
  kr_status_opts_default(&o);
  o.handler = handler;
  kr_status_server_t *s;
  char err[256];
  o.listen = "0.0.0.0:0";
  assert_int_equal(kr_status_start(&loop, &o, &s, err, sizeof err), KR_EINVAL);
  assert_non_null(strstr(err, "status.token"));
  o.listen = "[::]:0";
  assert_int_equal(kr_status_start(&loop, &o, &s, err, sizeof err), KR_EINVAL);
  static const char *const bad[] = {"127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "host:80",
                                    "[::1]",     "::1:80",     "[::1]80",         "1.2.3.4.5:1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    o.listen = bad[i];
    if (kr_status_start(&loop, &o, &s, err, sizeof err) != KR_EINVAL) fail_msg("accepted %s", bad[i]);
  }
  /* the port in use */
  fx_t fx;
  fx_start(&fx, NULL, 1);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", fx.port);
  o.listen = addr;
  assert_int_equal(kr_status_start(&loop, &o, &s, err, sizeof err), KR_EIO);
  assert_non_null(strstr(err, "cannot listen"));
  fx_stop(&fx);
  /* IPv6 loopback, when the host has it */
  o.listen = "[::1]:0";
  if (kr_status_start(&loop, &o, &s, err, sizeof err) == 0) {
    assert_non_null(strstr(kr_status_address(s), "[::1]:"));
    kr_status_close(s);
  }
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(token_compare),       cmocka_unit_test(bearer),
      cmocka_unit_test(host_check),          cmocka_unit_test(query_params),
      cmocka_unit_test(json_strings),        cmocka_unit_test(get_and_head),
      cmocka_unit_test(bad_requests),        cmocka_unit_test(header_limits),
      cmocka_unit_test(body_limits),         cmocka_unit_test(slowloris),
      cmocka_unit_test(client_cap),          cmocka_unit_test(silent_evicted),
      cmocka_unit_test(room_for_control),    cmocka_unit_test(control_without_token),
      cmocka_unit_test(control_with_token),  cmocka_unit_test(pipelined_once),
      cmocka_unit_test(public_prefix),
      cmocka_unit_test(response_cap),        cmocka_unit_test(close_with_clients),
      cmocka_unit_test(start_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
