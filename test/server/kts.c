/*
 * kts — the kria test server. One libuv loop serves HTTP/1.1 (optionally
 * HTTPS through OpenSSL memory BIOs) from a routes file, and can misbehave
 * on purpose in every way a crawler must survive. This file holds main and
 * its options, the clock, the listener, connections (reading, llhttp
 * request parsing, pipelining, keep-alive, lingering close, reset), the
 * write path and shutdown on SIGINT/SIGTERM; routes.c, body.c, respond.c
 * and tls.c hold the rest (see kts.h).
 *
 * Usage:
 *   kts -c ROUTES.ini [--port 0] [--host 127.0.0.1] [--log FILE]
 *       [--tls CERT KEY] [--tls-mode ok|garbage|stall]
 *       [--start-ms MS] [--frozen] [--clock-rate R]
 *       [--keepalive-timeout-ms MS] [--keepalive-requests N]
 *       [--max-conns N] [--max-header BYTES] [--check]
 * Once bound, kts prints one line "listening HOST:PORT" on stdout and
 * flushes it (port 0 picks a free port). SIGINT/SIGTERM close everything
 * and exit 0.
 *
 * Routes file (INI, parsed with inih; lines at most 198 bytes, a line
 * starting with whitespace continues the previous key, `;` after a space
 * starts a comment — write \x3b in values):
 *
 *   [route "/path"]        exact path (query ignored unless the route
 *                          names one); a path ending in '*' ("/img*")
 *                          matches by prefix, longest prefix wins,
 *                          exact routes first
 *   [site]                 a generated site: /p/0 .. /p/(pages-1), each
 *   [site "/blog/"]        page linking to `links` others (page i links to
 *                          (i*links+1+k) % pages, so all are reachable
 *                          from page 0); defaults pages = 10, links = 3;
 *                          every route key below applies to its pages
 *
 *   host = NAME            only for requests whose Host is NAME
 *   status = N             default 200 (302 with redirect)
 *   status-line = TEXT     replaces the status line verbatim
 *   header = Name: Value   extra header, repeatable
 *   content-type = TYPE    default text/html; charset=utf-8
 *   body = TEXT            inline body; \n \r \t \0 \\ \xHH escapes; a
 *                          repeated key adds a line; tokens {version}
 *                          {count} {clock} (fixed width) {path} {port}
 *   body-file = FILE       served verbatim (relative to the routes file)
 *   raw = BYTES / raw-file = FILE
 *                          the whole response as is, then close
 *   body-size = N|infinite generated HTML of exactly N bytes (K/M/G =
 *                          KiB/MiB/GiB) for seed = S; fill = text|zero|space
 *   links = N              N links in the body to link-prefix + 0..N-1
 *   link-prefix = P        default /p/ (the site's prefix for sites);
 *                          {port} {path} {page} {next} are replaced
 *   pages = N              make a prefix route a site (see [site])
 *   chunked = 1            chunk-size = N (default 1024)
 *   no-length = 1          no Content-Length, body ends at close
 *   gzip = 1|force         gzip when the request accepts it, or always
 *   deflate = 1|raw|force  zlib deflate (raw: RFC 1951 without header)
 *   gzip-level = 0..9
 *   etag = auto|"value"    auto follows the version; a fixed value never
 *                          changes (a lying validator with change-every)
 *   last-modified = auto|HTTP-date
 *   ignore-conditionals = 1  always 200, never 304
 *   delay-ms = N           wait before sending anything
 *   stall = response|headers|body   send nothing / the head / the head and
 *                          stall-after body bytes (default half), then
 *                          keep the connection open, silent
 *   trickle-ms = N         send the body trickle-bytes (1) per N ms;
 *                          trickle-headers = 1 trickles the head too
 *   drop-after = N         close (FIN) after N body bytes
 *   reset-after = N        RST (SO_LINGER 0) after N body bytes
 *   drop-at / reset-at = N the same, counted from the first response byte
 *   garbage = 1            garbage-bytes (512) random bytes, then close
 *   bad-chunk = 1          chunked, then an invalid chunk-size line
 *   header-bytes = N       one header of N bytes; header-count = N headers
 *   content-length-lie = N announce N, send the real body, close
 *   bad-gzip = 1           Content-Encoding: gzip, invalid deflate data
 *   redirect = URL         Location ({port} {path} {page} {next} too:
 *                          /r/{next} on a site is a redirect chain)
 *   keep-alive = 0         Connection: close
 *   change-every = N       the version moves every N requests of the path
 *   change-every-ms = N    ... and every N ms of the kts clock
 *   volatile = 1           a clock section that changes every request
 *
 * Versions show in generated bodies ("version 0000000003") and drive
 * `etag = auto` and `last-modified = auto`. If-None-Match (weak compare,
 * lists, *) or else If-Modified-Since answer 304 without a body. The kts
 * clock is --start-ms (default: now) plus elapsed time (times
 * --clock-rate), or frozen with --frozen; GET /_kts/advance?ms=N,
 * /_kts/set?ms=N and /_kts/time move and read it; /_kts/stats counts;
 * /_kts/paths lists "PATH count=N version=V" (ground truth for tests).
 * Unknown paths get 404.
 *
 * --log FILE gets one line per request, written before the response:
 *   c=CONN r=NTH METHOD TARGET HTTP/1.1 | Host: h | User-Agent: ua |
 *   Accept-Encoding: .. | If-None-Match: .. | If-Modified-Since: .. |
 *   Connection: ..     (headers only when sent)
 * With --log-times each line starts "t=MS " (CLOCK_MONOTONIC milliseconds,
 * when the request was complete), so tests can measure request spacing.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kts.h"

#define IN_MAX (2u << 20)     /* received, unparsed input */
#define IN_HIGH (1u << 20)    /* stop reading above this */
#define URL_MAX 8192
#define VALUE_MAX 8192
#define BODY_MAX (1u << 20)   /* request bodies are read and dropped */
#define LINGER_MS 2000


int64_t kts_now_ms(const kts_server_t *s) {
  int64_t t = s->start_ms + s->offset_ms;
  if (!s->frozen) t += (int64_t)((double)(uv_hrtime() - s->t0_ns) / 1e6 * s->rate);
  return t;
}

/* ---- request parsing (llhttp callbacks) ---- */

static kts_conn_t *conn_of(llhttp_t *p) { return p->data; }

static void req_reset(kts_req_t *q) {
  q->method[0] = '\0';
  kr_buf_reset(&q->target);
  kr_buf_reset(&q->field);
  kr_buf_reset(&q->value);
  for (int i = 0; i < KTS_H_N; i++) {
    kr_buf_reset(&q->h[i]);
    q->has_h[i] = 0;
  }
  q->header_bytes = q->body_bytes = 0;
  q->complete = q->too_big = 0;
  q->keep_alive = 0;
  q->http_major = 1;
  q->http_minor = 1;
}

/* c's first request has begun, or c ends before one did. */
static void unfresh(kts_conn_t *c) {
  if (!c->fresh) return;
  c->fresh = 0;
  c->srv->nfresh--;
}

static int on_message_begin(llhttp_t *p) {
  unfresh(conn_of(p));
  req_reset(&conn_of(p)->req);
  return 0;
}

static int count_header(kts_conn_t *c, size_t n) {
  c->req.header_bytes += n;
  if (c->req.header_bytes > c->srv->max_header) {
    c->req.too_big = 431;
    return -1;
  }
  return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n) {
  kts_conn_t *c = conn_of(p);
  if (count_header(c, n)) return -1;
  if (kr_buf_append(&c->req.target, at, n)) {
    c->req.too_big = 431;
    return -1;
  }
  return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  kts_conn_t *c = conn_of(p);
  if (count_header(c, n)) return -1;
  kr_buf_append(&c->req.field, at, n); /* a longer name is none of ours */
  return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  kts_conn_t *c = conn_of(p);
  if (count_header(c, n)) return -1;
  kr_buf_append(&c->req.value, at, n);
  return 0;
}

static int on_header_value_complete(llhttp_t *p) {
  static const char *const names[KTS_H_N] = {
      [KTS_H_HOST] = "host", [KTS_H_UA] = "user-agent", [KTS_H_AE] = "accept-encoding",
      [KTS_H_INM] = "if-none-match", [KTS_H_IMS] = "if-modified-since",
      [KTS_H_CONN] = "connection"};
  kts_req_t *q = &conn_of(p)->req;
  kr_slice_t f = kr_slice(q->field.data ? q->field.data : "", q->field.len);
  for (int i = 0; i < KTS_H_N; i++) {
    if (!kr_slice_case_eq(f, kr_slice_cstr(names[i]))) continue;
    if (q->has_h[i]) kr_buf_append_str(&q->h[i], ", "); /* repeated: a list */
    kr_buf_append(&q->h[i], q->value.data ? q->value.data : "", q->value.len);
    q->has_h[i] = 1;
  }
  kr_buf_reset(&q->field);
  kr_buf_reset(&q->value);
  return 0;
}

static int on_headers_complete(llhttp_t *p) {
  kts_req_t *q = &conn_of(p)->req;
  snprintf(q->method, sizeof q->method, "%s", llhttp_method_name(llhttp_get_method(p)));
  q->http_major = llhttp_get_http_major(p);
  q->http_minor = llhttp_get_http_minor(p);
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  kts_req_t *q = &conn_of(p)->req;
  (void)at;
  q->body_bytes += n;
  if (q->body_bytes > BODY_MAX) {
    q->too_big = 413;
    return -1;
  }
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  kts_req_t *q = &conn_of(p)->req;
  q->complete = 1;
  q->keep_alive = llhttp_should_keep_alive(p);
  return HPE_PAUSED; /* one request at a time: answers stay in order */
}

static llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- connections ---- */

typedef struct write_req {
  uv_write_t req;
  char *data;
  kts_conn_t *c;
  int notify;
} write_req_t;

static void on_conn_close(uv_handle_t *h) {
  kts_conn_t *c = h->data;
  if (--c->open_handles > 0) return;
  kts_server_t *s = c->srv;
  unfresh(c);
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->nconns--;
  kts_resp_free(c->resp);
  kr_buf_free(&c->in);
  kr_buf_free(&c->req.target);
  kr_buf_free(&c->req.field);
  kr_buf_free(&c->req.value);
  for (int i = 0; i < KTS_H_N; i++) kr_buf_free(&c->req.h[i]);
  if (c->tls) kts_tls_free(c->tls);
  free(c);
}

void kts_conn_close(kts_conn_t *c, int reset) {
  if (c->state == KTS_C_CLOSING) return;
  c->state = KTS_C_CLOSING;
  kts_resp_free(c->resp);
  c->resp = NULL;
  if (reset) {
    uv_os_fd_t fd;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  }
  uv_timer_stop(&c->timer);
  uv_close((uv_handle_t *)&c->timer, on_conn_close);
  uv_close((uv_handle_t *)&c->tcp, on_conn_close);
}

static void on_write(uv_write_t *req, int status) {
  write_req_t *w = container_of(req, write_req_t, req);
  kts_conn_t *c = w->c;
  int notify = w->notify;
  free(w->data);
  free(w);
  if (status < 0) {
    kts_conn_close(c, 0);
    return;
  }
  if (notify && c->state == KTS_C_RESPONDING) kts_resp_written(c);
}

static void write_raw(kts_conn_t *c, char *data, size_t n, int notify) {
  if (c->state == KTS_C_CLOSING) {
    free(data);
    return;
  }
  write_req_t *w = kr_xmalloc(sizeof *w);
  w->data = data;
  w->c = c;
  w->notify = notify;
  uv_buf_t b = uv_buf_init(data, (unsigned)n);
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) < 0) {
    free(data);
    free(w);
    kts_conn_close(c, 0);
  }
}

void kts_conn_write(kts_conn_t *c, char *data, size_t n, int notify) {
  if (c->tls) {
    kr_buf_t out;
    kr_buf_init(&out, (64u << 20) + n * 2);
    int rc = kts_tls_encrypt(c->tls, data, n, &out);
    free(data);
    if (rc < 0) {
      kr_buf_free(&out);
      kts_conn_close(c, 0);
      return;
    }
    n = out.len;
    data = out.data ? out.data : kr_xstrdup("");
  }
  write_raw(c, data, n, notify);
}

static void send_buf(kts_conn_t *c, kr_buf_t *b) {
  if (!b->len) return;
  write_raw(c, b->data, b->len, 0);
  kr_buf_init(b, b->max); /* ownership moved */
}

static void on_delay(uv_timer_t *t) { kts_resp_pump(t->data); }

void kts_conn_delay(kts_conn_t *c, uint64_t ms) {
  uv_timer_start(&c->timer, on_delay, ms, 0);
}

static void on_idle(uv_timer_t *t) {
  kts_conn_t *c = t->data;
  if (c->state == KTS_C_READING) kts_conn_close(c, 0);
}

static void on_linger_timeout(uv_timer_t *t) { kts_conn_close(t->data, 0); }

static void start_reading(kts_conn_t *c);

static void on_shutdown(uv_shutdown_t *req, int status) {
  kts_conn_t *c = req->data;
  if (status < 0) kts_conn_close(c, 0);
}

void kts_conn_linger(kts_conn_t *c) {
  if (c->state == KTS_C_CLOSING || c->state == KTS_C_LINGER) return;
  kts_resp_free(c->resp);
  c->resp = NULL;
  c->state = KTS_C_LINGER;
  if (c->peer_eof) {
    kts_conn_close(c, 0);
    return;
  }
  if (c->tls) {
    kr_buf_t out;
    kr_buf_init(&out, 1u << 16);
    kts_tls_close_notify(c->tls, &out);
    send_buf(c, &out);
    kr_buf_free(&out);
  }
  c->shutdown_req.data = c;
  if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
    kts_conn_close(c, 0);
    return;
  }
  uv_timer_start(&c->timer, on_linger_timeout, LINGER_MS, 0);
  start_reading(c);
}

void kts_conn_stall(kts_conn_t *c) {
  kts_resp_free(c->resp);
  c->resp = NULL;
  c->state = KTS_C_STALLED;
  uv_timer_stop(&c->timer);
  if (c->peer_eof) kts_conn_close(c, 0);
  else start_reading(c);
}

static void process_input(kts_conn_t *c);

void kts_conn_response_done(kts_conn_t *c, int close_after) {
  if (close_after) {
    kts_conn_linger(c);
    return;
  }
  c->state = KTS_C_READING;
  if (c->srv->keepalive_timeout_ms)
    uv_timer_start(&c->timer, on_idle, c->srv->keepalive_timeout_ms, 0);
  process_input(c);
  if (c->state == KTS_C_READING && c->peer_eof) kts_conn_close(c, 0);
}

static void compact_input(kts_conn_t *c) {
  if (!c->in_off) return;
  kr_buf_consume(&c->in, c->in_off);
  c->in_off = 0;
}

/* Parse the next request out of the buffered input and answer it. One
 * request per call: the next is parsed once its predecessor is sent. */
static void process_input(kts_conn_t *c) {
  if (c->state == KTS_C_READING && c->in.len > c->in_off) {
    const char *data = c->in.data + c->in_off;
    size_t n = c->in.len - c->in_off;
    llhttp_errno_t err = llhttp_execute(&c->parser, data, n);
    if (err == HPE_OK) {
      c->in_off = c->in.len;
    } else if (err == HPE_PAUSED && c->req.complete) {
      c->in_off += (size_t)(llhttp_get_error_pos(&c->parser) - data);
      llhttp_resume(&c->parser);
      c->nreq++;
      uv_timer_stop(&c->timer);
      compact_input(c);
      kts_respond(c);
    } else {
      c->in_off = c->in.len;
      c->nreq++;
      uv_timer_stop(&c->timer);
      c->req.keep_alive = 0;
      kts_respond_error(c, c->req.too_big ? c->req.too_big : 400);
    }
  }
  if (c->state != KTS_C_CLOSING) compact_input(c);
  if (c->state != KTS_C_CLOSING && !c->reading && c->in.len < IN_HIGH / 2) start_reading(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  kts_conn_t *c = h->data;
  (void)suggested;
  *buf = uv_buf_init(c->srv->readbuf, sizeof c->srv->readbuf);
}

static void tls_input(kts_conn_t *c, const char *data, size_t n) {
  kts_server_t *s = c->srv;
  if (s->tls_mode == KTS_TLS_STALL) return;
  if (s->tls_mode == KTS_TLS_GARBAGE) {
    if (c->state != KTS_C_READING) return;
    char *g = kr_xmalloc(512);
    uint64_t st = c->id;
    for (int i = 0; i < 512; i++) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      g[i] = (char)(st >> 56);
    }
    g[0] = (char)0xff; /* not a TLS record type */
    write_raw(c, g, 512, 0);
    kts_conn_linger(c);
    return;
  }
  kr_buf_t out;
  kr_buf_init(&out, 1u << 20);
  size_t before = c->in.len;
  int rc = kts_tls_feed(c->tls, data, n, &c->in, &out);
  send_buf(c, &out);
  kr_buf_free(&out);
  if (rc < 0) {
    c->tls_failed = 1;
    kts_conn_linger(c); /* the alert, if any, goes out first */
    return;
  }
  (void)before;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  kts_conn_t *c = st->data;
  if (nread == 0) return;
  if (nread < 0) {
    if (nread != UV_EOF || c->state == KTS_C_STALLED || c->state == KTS_C_LINGER) {
      kts_conn_close(c, 0);
      return;
    }
    c->peer_eof = 1;
    uv_read_stop(st);
    c->reading = 0;
    if (c->state == KTS_C_READING) {
      process_input(c);
      if (c->state == KTS_C_READING) kts_conn_close(c, 0);
    }
    return; /* RESPONDING: finish the answer, then close */
  }
  if (c->state == KTS_C_STALLED || c->state == KTS_C_LINGER || c->state == KTS_C_CLOSING)
    return; /* drained and dropped */
  if (c->tls) {
    tls_input(c, buf->base, (size_t)nread);
    if (c->state == KTS_C_CLOSING || c->state == KTS_C_LINGER) return;
  } else if (kr_buf_append(&c->in, buf->base, (size_t)nread)) {
    kts_conn_close(c, 0); /* cannot happen: reading stops at IN_HIGH */
    return;
  }
  if (c->in.len - c->in_off >= IN_HIGH && c->reading) {
    uv_read_stop(st);
    c->reading = 0;
  }
  if (c->state == KTS_C_READING) process_input(c);
}

static void start_reading(kts_conn_t *c) {
  if (c->reading || c->peer_eof || c->state == KTS_C_CLOSING) return;
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) c->reading = 1;
}

static void on_connection(uv_stream_t *server, int status) {
  kts_server_t *s = server->data;
  if (status < 0) return;
  kts_conn_t *c = kr_xcalloc(1, sizeof *c);
  c->srv = s;
  uv_tcp_init(s->loop, &c->tcp);
  uv_timer_init(s->loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->open_handles = 2;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  c->id = ++s->next_conn_id;
  kr_buf_init(&c->in, IN_MAX);
  kr_buf_init(&c->req.target, URL_MAX);
  kr_buf_init(&c->req.field, 256);
  kr_buf_init(&c->req.value, VALUE_MAX);
  for (int i = 0; i < KTS_H_N; i++) kr_buf_init(&c->req.h[i], VALUE_MAX);
  req_reset(&c->req);
  llhttp_init(&c->parser, HTTP_REQUEST, &settings);
  c->parser.data = c;
  c->state = KTS_C_READING;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 || s->nconns > s->max_conns ||
      s->stopping) {
    kts_conn_close(c, 0);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  c->fresh = 1;
  if (++s->nfresh > s->fresh_max) s->fresh_max = s->nfresh;
  if (s->tls_ctx) c->tls = kts_tls_new(s);
  if (s->keepalive_timeout_ms) uv_timer_start(&c->timer, on_idle, s->keepalive_timeout_ms, 0);
  start_reading(c);
}

/* ---- start-up and shutdown ---- */

static void on_handle_closed(uv_handle_t *h) { (void)h; }

static void on_signal(uv_signal_t *sig, int signum) {
  kts_server_t *s = sig->data;
  (void)signum;
  if (s->stopping) return;
  s->stopping = 1;
  uv_close((uv_handle_t *)&s->listener, on_handle_closed);
  uv_close((uv_handle_t *)&s->sigint, on_handle_closed);
  uv_close((uv_handle_t *)&s->sigterm, on_handle_closed);
  for (kts_conn_t *c = s->conns; c; c = c->next) kts_conn_close(c, 0);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: kts -c ROUTES.ini [--port N] [--host ADDR] [--log FILE] [--log-times]\n"
          "           [--tls CERT KEY] [--tls-mode ok|garbage|stall]\n"
          "           [--start-ms MS] [--frozen] [--clock-rate R]\n"
          "           [--keepalive-timeout-ms MS] [--keepalive-requests N]\n"
          "           [--max-conns N] [--max-header BYTES] [--check]\n"
          "Prints \"listening HOST:PORT\" once bound. Routes format: test/server/README.md\n");
}

static int parse_num(const char *opt, const char *v, long long lo, long long hi, long long *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) {
    fprintf(stderr, "kts: bad value for %s: %s\n", opt, v);
    return -1;
  }
  *out = x;
  return 0;
}

int main(int argc, char **argv) {
  static kts_server_t srv; /* large (read buffer); static keeps it off the stack */
  kts_server_t *s = &srv;
  const char *config = NULL, *host = "127.0.0.1", *logfile = NULL, *cert = NULL, *key = NULL;
  long long port = 0, num;
  int check = 0;
  s->rate = 1.0;
  s->max_conns = 10000;
  s->max_header = 65536;
  s->keepalive_timeout_ms = 60000;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  s->start_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;

  enum { O_PORT = 256, O_HOST, O_LOG, O_TLS, O_TLSMODE, O_START, O_FROZEN, O_RATE, O_KATO,
         O_KAREQ, O_MAXCONN, O_MAXHDR, O_CHECK, O_LOGTIMES };
  static const struct option opts[] = {
      {"config", required_argument, 0, 'c'},   {"port", required_argument, 0, O_PORT},
      {"host", required_argument, 0, O_HOST},  {"log", required_argument, 0, O_LOG},
      {"tls", required_argument, 0, O_TLS},    {"tls-mode", required_argument, 0, O_TLSMODE},
      {"start-ms", required_argument, 0, O_START}, {"frozen", no_argument, 0, O_FROZEN},
      {"clock-rate", required_argument, 0, O_RATE},
      {"keepalive-timeout-ms", required_argument, 0, O_KATO},
      {"keepalive-requests", required_argument, 0, O_KAREQ},
      {"max-conns", required_argument, 0, O_MAXCONN},
      {"max-header", required_argument, 0, O_MAXHDR},
      {"check", no_argument, 0, O_CHECK},      {"log-times", no_argument, 0, O_LOGTIMES},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
    switch (o) {
      case 'c': config = optarg; break;
      case O_PORT:
        if (parse_num("--port", optarg, 0, 65535, &port)) return 2;
        break;
      case O_HOST: host = optarg; break;
      case O_LOG: logfile = optarg; break;
      case O_LOGTIMES: s->log_times = 1; break;
      case O_TLS:
        cert = optarg;
        if (optind >= argc) {
          fprintf(stderr, "kts: --tls needs CERT and KEY\n");
          return 2;
        }
        key = argv[optind++];
        break;
      case O_TLSMODE:
        if (!strcmp(optarg, "ok")) s->tls_mode = KTS_TLS_OK;
        else if (!strcmp(optarg, "garbage")) s->tls_mode = KTS_TLS_GARBAGE;
        else if (!strcmp(optarg, "stall")) s->tls_mode = KTS_TLS_STALL;
        else {
          fprintf(stderr, "kts: --tls-mode is ok, garbage or stall\n");
          return 2;
        }
        break;
      case O_START:
        if (parse_num("--start-ms", optarg, 0, (long long)1 << 52, &num)) return 2;
        s->start_ms = num;
        break;
      case O_FROZEN: s->frozen = 1; break;
      case O_RATE: {
        char *end;
        s->rate = strtod(optarg, &end);
        if (*end || !(s->rate > 0 && s->rate < 1e9)) {
          fprintf(stderr, "kts: bad --clock-rate\n");
          return 2;
        }
        break;
      }
      case O_KATO:
        if (parse_num("--keepalive-timeout-ms", optarg, 0, 1LL << 40, &num)) return 2;
        s->keepalive_timeout_ms = (uint64_t)num;
        break;
      case O_KAREQ:
        if (parse_num("--keepalive-requests", optarg, 0, 1LL << 40, &num)) return 2;
        s->keepalive_requests = (uint64_t)num;
        break;
      case O_MAXCONN:
        if (parse_num("--max-conns", optarg, 1, 1000000, &num)) return 2;
        s->max_conns = (size_t)num;
        break;
      case O_MAXHDR:
        if (parse_num("--max-header", optarg, 256, 1 << 30, &num)) return 2;
        s->max_header = (size_t)num;
        break;
      case O_CHECK: check = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (!config || optind != argc) {
    usage(stderr);
    return 2;
  }
  if (s->tls_mode != KTS_TLS_OK && !cert) {
    fprintf(stderr, "kts: --tls-mode needs --tls CERT KEY\n");
    return 2;
  }
  if (kts_routes_load(&s->routes, config)) return 2;
  if (check) {
    printf("ok %zu routes\n", s->routes.n);
    kts_routes_free(&s->routes);
    return 0;
  }
  s->t0_ns = uv_hrtime();
  s->start_sec = s->start_ms / 1000;
  signal(SIGPIPE, SIG_IGN);

  int rc = 1;
  if (cert && kts_tls_ctx_new(s, cert, key)) goto out_routes;
  if (logfile && !(s->log = fopen(logfile, "w"))) {
    fprintf(stderr, "kts: %s: %s\n", logfile, strerror(errno));
    goto out_tls;
  }
  static uv_loop_t loop;
  s->loop = &loop;
  uv_loop_init(s->loop);
  union {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
    struct sockaddr_storage ss;
  } addr;
  int v6 = strchr(host, ':') != NULL;
  if ((v6 ? uv_ip6_addr(host, (int)port, &addr.in6) : uv_ip4_addr(host, (int)port, &addr.in4))) {
    fprintf(stderr, "kts: bad --host %s\n", host);
    goto out_loop;
  }
  uv_tcp_init(s->loop, &s->listener);
  s->listener.data = s;
  int err = uv_tcp_bind(&s->listener, &addr.sa, 0);
  if (!err) err = uv_listen((uv_stream_t *)&s->listener, 1024, on_connection);
  if (err) {
    fprintf(stderr, "kts: cannot listen on %s:%lld: %s\n", host, port, uv_strerror(err));
    uv_close((uv_handle_t *)&s->listener, NULL);
    uv_run(s->loop, UV_RUN_DEFAULT);
    goto out_loop;
  }
  int alen = sizeof addr;
  uv_tcp_getsockname(&s->listener, &addr.sa, &alen);
  s->port = ntohs(v6 ? addr.in6.sin6_port : addr.in4.sin_port);
  uv_signal_init(s->loop, &s->sigint);
  uv_signal_init(s->loop, &s->sigterm);
  s->sigint.data = s->sigterm.data = s;
  uv_signal_start(&s->sigint, on_signal, SIGINT);
  uv_signal_start(&s->sigterm, on_signal, SIGTERM);
  printf(v6 ? "listening [%s]:%d\n" : "listening %s:%d\n", host, s->port);
  fflush(stdout);

  uv_run(s->loop, UV_RUN_DEFAULT);
  rc = 0;
out_loop:
  if (uv_loop_close(s->loop) != 0) {
    fprintf(stderr, "kts: handles left open at exit\n");
    rc = 1;
  }
  if (s->log) fclose(s->log);
out_tls:
  kts_tls_ctx_free(s);
out_routes:
  kts_routes_free(&s->routes);
  return rc;
}
