/*
 * The status server (see status.h): a listener and a list of clients on
 * the caller's loop. A client walks READ -> WRITE -> LINGER -> closed:
 * READ feeds llhttp (request mode) under the size limits until the
 * message is complete (the parser is paused there, so pipelined bytes are
 * never parsed) or a limit, a parse error or the request timer ends it;
 * the response (the handler's, or an error page) is written in one
 * uv_write with Connection: close; LINGER half-closes the socket and
 * drains what the client still sends for a moment before closing, so the
 * kernel does not answer unread bytes with a reset that would destroy the
 * response in flight. Each client owns a TCP handle and a timer and is
 * freed in the second close callback; the server frees itself when its
 * listener and every client are closed. Sections: helpers (token, Host,
 * query, JSON), clients, parsing, responding, the listener.
 */
#include "status.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "log.h"

#define AUTH_MAX 1024     /* Authorization value kept; longer never matches */
#define SIG_MAX 256       /* X-Hub-Signature kept: sha512= and 128 hex digits fit */
#define HOST_MAX 512
#define FIELD_MAX 64      /* header names we care about are short */
#define DRAIN_MAX (64u << 10)
#define READ_BUF (16u << 10)
#define HEAD_SLACK 1024   /* CRLFs, colons and spaces around the counted bytes */

/* ---- helpers ------------------------------------------------------------------- */

int kr_status_token_equal(const char *want, size_t wn, const char *got, size_t gn) {
  /* Every byte of want is compared, whatever got holds; the lengths are
   * folded into the same accumulator, so the time depends on wn alone. */
  volatile unsigned char diff = (unsigned char)(wn != gn);
  for (size_t i = 0; i < wn; i++) {
    unsigned char g = gn ? (unsigned char)got[i % gn] : 0;
    diff |= (unsigned char)((unsigned char)want[i] ^ g);
  }
  return wn > 0 && diff == 0;
}

int kr_status_bearer_ok(const char *want, kr_slice_t h) {
  if (!want || !*want) return 0;
  h = kr_slice_trim(h);
  if (h.n < 7 || strncasecmp(h.p, "Bearer", 6) != 0 || (h.p[6] != ' ' && h.p[6] != '\t'))
    return 0;
  kr_slice_t tok = kr_slice_trim(kr_slice(h.p + 7, h.n - 7));
  return kr_status_token_equal(want, strlen(want), tok.p, tok.n);
}

static int is_loopback_ip(const char *s) {
  unsigned char a[16];
  if (inet_pton(AF_INET, s, a) == 1) return a[0] == 127;
  static const unsigned char lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (inet_pton(AF_INET6, s, a) == 1) return memcmp(a, lo6, 16) == 0;
  return 0;
}

static int is_port(const char *p, size_t n) {
  if (n == 0 || n > 5) return 0;
  for (size_t i = 0; i < n; i++)
    if (p[i] < '0' || p[i] > '9') return 0;
  return 1;
}

int kr_status_host_is_loopback(kr_slice_t h) {
  char name[64];
  h = kr_slice_trim(h);
  if (h.n == 0 || h.n >= sizeof name) return 0;
  const char *end = h.p + h.n;
  const char *port = NULL;
  size_t nn;
  if (h.p[0] == '[') {
    const char *rb = memchr(h.p, ']', h.n);
    if (!rb) return 0;
    nn = (size_t)(rb - h.p - 1);
    memcpy(name, h.p + 1, nn);
    if (rb + 1 < end) {
      if (rb[1] != ':') return 0;
      port = rb + 2;
    }
  } else {
    const char *colon = memchr(h.p, ':', h.n);
    nn = colon ? (size_t)(colon - h.p) : h.n;
    memcpy(name, h.p, nn);
    if (colon) port = colon + 1;
  }
  name[nn] = '\0';
  if (port && !is_port(port, (size_t)(end - port))) return 0;
  if (h.p[0] != '[' && strcasecmp(name, "localhost") == 0) return 1;
  if (h.p[0] != '[' && strchr(name, ':')) return 0; /* bare IPv6 is not a Host */
  return is_loopback_ip(name);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decode one form-urlencoded component into out. */
static int form_decode(const char *p, size_t n, kr_buf_t *out) {
  for (size_t i = 0; i < n; i++) {
    char ch = p[i];
    if (ch == '+') {
      ch = ' ';
    } else if (ch == '%') {
      if (i + 2 >= n) return KR_EINVAL;
      int a = hexval((unsigned char)p[i + 1]);
      int b = hexval((unsigned char)p[i + 2]);
      if (a < 0 || b < 0) return KR_EINVAL;
      ch = (char)(a * 16 + b);
      i += 2;
    }
    if (ch == '\0') return KR_EINVAL;
    if (kr_buf_append(out, &ch, 1)) return KR_ETOOBIG;
  }
  return 0;
}

int kr_status_query_param(kr_slice_t q, const char *name, kr_buf_t *out) {
  kr_buf_reset(out);
  size_t nl = strlen(name);
  const char *p = q.p, *end = q.p ? q.p + q.n : NULL;
  while (p && p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    const char *e = amp ? amp : end;
    const char *eq = memchr(p, '=', (size_t)(e - p));
    const char *ke = eq ? eq : e;
    if ((size_t)(ke - p) == nl && memcmp(p, name, nl) == 0) {
      if (!eq) return 1;
      int rc = form_decode(eq + 1, (size_t)(e - eq - 1), out);
      return rc ? rc : 1;
    }
    p = amp ? amp + 1 : end;
  }
  return 0;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07;
  else return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return len;
}

int kr_status_json_str(kr_buf_t *b, const char *s, size_t n) {
  int rc = kr_buf_append(b, "\"", 1);
  const unsigned char *p = (const unsigned char *)s;
  size_t run = 0; /* bytes copied as they are, flushed in one append */
  for (size_t i = 0; i < n && !rc;) {
    unsigned char c = p[i];
    const char *esc = NULL;
    char tmp[8];
    size_t len = 1;
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c < 0x20 || c == 0x7f) snprintf(tmp, sizeof tmp, "\\u%04x", c), esc = tmp;
    else if (c >= 0x80 && !(len = utf8_len(p + i, n - i))) esc = "\\ufffd", len = 1;
    if (!esc) {
      run += len;
      i += len;
      continue;
    }
    if (run) rc = kr_buf_append(b, s + i - run, run);
    run = 0;
    if (!rc) rc = kr_buf_append_str(b, esc);
    i += len;
  }
  if (run && !rc) rc = kr_buf_append(b, s + n - run, run);
  if (!rc) rc = kr_buf_append(b, "\"", 1);
  return rc;
}

/* ---- clients ---------------------------------------------------------------------- */

enum { C_READ, C_WRITE, C_LINGER, C_CLOSING };
enum { H_OTHER, H_AUTH, H_HOST, H_SIG };

typedef struct client client_t;

struct kr_status_server {
  uv_loop_t *loop;
  uv_tcp_t listener;
  kr_status_opts_t o;
  char *token;
  int loopback;               /* bound to a loopback address */
  int closing;
  unsigned handles;           /* listener + clients not yet freed */
  client_t *clients;
  char addr[64];
  char rbuf[READ_BUF];        /* every read is consumed in its callback */
  kr_status_stats_t st;
};

struct client {
  kr_status_server_t *srv;
  client_t *next, *prev;
  uv_tcp_t tcp;
  uv_timer_t timer;
  int handles;                /* of tcp and timer, still open */
  int state;
  int reserved;               /* took the slot kept for control requests */
  uint64_t accepted_ms;       /* loop time of the accept */
  llhttp_t parser;
  size_t head_bytes;          /* request line and header bytes (callbacks) */
  size_t read_bytes;          /* bytes read before the headers were complete */
  int headers_done, complete;
  int error;                  /* HTTP status decided while parsing */
  int field;                  /* H_*: the header whose value comes */
  int host_seen;
  kr_buf_t url, fname, auth, host, body, sig;
  kr_buf_t head, out;         /* the response */
  uv_write_t wr;
  uv_shutdown_t sh;
  void (*after)(void *ud);
  void *after_ud;
  size_t drained;
};

static void server_maybe_free(kr_status_server_t *s) {
  if (!s->closing || s->handles) return;
  free(s->token);
  free(s);
}

static void client_free(client_t *c) {
  kr_buf_free(&c->url);
  kr_buf_free(&c->fname);
  kr_buf_free(&c->auth);
  kr_buf_free(&c->host);
  kr_buf_free(&c->body);
  kr_buf_free(&c->sig);
  kr_buf_free(&c->head);
  kr_buf_free(&c->out);
  kr_status_server_t *s = c->srv;
  free(c);
  s->handles--;
  server_maybe_free(s);
}

static void on_client_closed(uv_handle_t *h) {
  client_t *c = h->data;
  if (--c->handles == 0) client_free(c);
}

static void client_close(client_t *c) {
  if (c->state == C_CLOSING) return;
  c->state = C_CLOSING;
  kr_status_server_t *s = c->srv;
  if (c->prev) c->prev->next = c->next;
  else s->clients = c->next;
  if (c->next) c->next->prev = c->prev;
  s->st.clients--;
  uv_close((uv_handle_t *)&c->tcp, on_client_closed);
  uv_close((uv_handle_t *)&c->timer, on_client_closed);
}

/* ---- responding ------------------------------------------------------------------- */

static const char *reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 421: return "Misdirected Request";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

static void on_linger_timer(uv_timer_t *t) { client_close(t->data); }

static void on_drain_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  client_t *c = h->data;
  (void)hint;
  *buf = uv_buf_init(c->srv->rbuf, sizeof c->srv->rbuf);
}

static void on_drain_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
  client_t *c = st->data;
  (void)buf;
  if (n < 0 || (c->drained += (size_t)KR_MAX(n, 0)) > DRAIN_MAX) client_close(c);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  client_t *c = req->data;
  if (c->state != C_LINGER) return; /* closing already */
  if (status < 0) client_close(c);
}

static void on_written(uv_write_t *req, int status) {
  client_t *c = req->data;
  kr_status_server_t *s = c->srv;
  if (c->after && !s->closing) c->after(c->after_ud);
  c->after = NULL;
  if (c->state != C_WRITE) return; /* closed meanwhile */
  if (status < 0) {
    client_close(c);
    return;
  }
  /* Half-close and drain briefly: see the top of the file. */
  c->state = C_LINGER;
  c->sh.data = c;
  if (uv_shutdown(&c->sh, (uv_stream_t *)&c->tcp, on_shutdown) < 0 ||
      uv_read_start((uv_stream_t *)&c->tcp, on_drain_alloc, on_drain_read) < 0) {
    client_close(c);
    return;
  }
  uv_timer_start(&c->timer, on_linger_timer, s->o.linger_ms, 0);
}

static void on_write_timeout(uv_timer_t *t) { client_close(t->data); }

/* Write the head for status and whatever is in c->out. */
static void send_response(client_t *c, int status, const char *ctype, const char *extra, int head_only) {
  kr_status_server_t *s = c->srv;
  uv_read_stop((uv_stream_t *)&c->tcp);
  kr_buf_reset(&c->head);
  kr_buf_printf(&c->head,
                "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                "Connection: close\r\n%s\r\n",
                status, reason(status), ctype, c->out.len, extra ? extra : "");
  uv_buf_t bufs[2] = {uv_buf_init(c->head.data, (unsigned)c->head.len),
                      uv_buf_init(c->out.data ? c->out.data : "", (unsigned)c->out.len)};
  c->state = C_WRITE;
  c->wr.data = c;
  /* A client that does not read its response is cut off like a slow
   * sender: the request timeout again. */
  uv_timer_start(&c->timer, on_write_timeout, s->o.request_timeout_ms, 0);
  if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs, head_only || !c->out.len ? 1 : 2,
               on_written) < 0) {
    if (c->after && !s->closing) c->after(c->after_ud);
    c->after = NULL;
    client_close(c);
  }
}

static void send_error(client_t *c, int status, const char *msg, const char *extra) {
  kr_buf_reset(&c->out);
  kr_buf_printf(&c->out, "{\"error\":%d,\"message\":", status);
  kr_status_json_str(&c->out, msg, strlen(msg));
  kr_buf_append_str(&c->out, "}\n");
  if (status == 401 || status == 403) c->srv->st.unauthorized++;
  else if (status == 408) c->srv->st.timeouts++;
  else c->srv->st.bad_requests++;
  send_response(c, status, "application/json", extra, 0);
}

static int is_public(const client_t *c);

static void handle(client_t *c) {
  kr_status_server_t *s = c->srv;
  if (c->error) {
    const char *m = c->error == 431   ? "request line and headers exceed the limit"
                    : c->error == 413 ? "request body exceeds the limit"
                                      : "malformed request";
    send_error(c, c->error, m, NULL);
    return;
  }
  if (c->reserved && (!s->token || !c->auth.len ||
                      !kr_status_bearer_ok(s->token, kr_slice(c->auth.data, c->auth.len)))) {
    s->st.refused++;
    send_error(c, 503, "busy: the last connection slot is kept for requests with the token",
               "Retry-After: 1\r\n");
    return;
  }
  int m = llhttp_get_method(&c->parser);
  kr_status_req_t req = {0};
  if (m == HTTP_GET) req.method = KR_STATUS_GET;
  else if (m == HTTP_HEAD) req.method = KR_STATUS_HEAD;
  else if (m == HTTP_POST) req.method = KR_STATUS_POST;
  else {
    send_error(c, 405, "only GET, HEAD and POST", "Allow: GET, HEAD, POST\r\n");
    return;
  }
  if (!c->url.len || c->url.data[0] != '/') {
    send_error(c, 400, "the request target must be a path", NULL);
    return;
  }
  if (s->loopback && c->host_seen && !kr_status_host_is_loopback(kr_slice(c->host.data, c->host.len))) {
    send_error(c, 421, "Host must name a loopback address or localhost", NULL);
    return;
  }
  if (req.method == KR_STATUS_POST && !is_public(c)) {
    if (!s->token) {
      send_error(c, 403, "control requests are disabled: set status.token", NULL);
      return;
    }
    if (!c->auth.len || !kr_status_bearer_ok(s->token, kr_slice(c->auth.data, c->auth.len))) {
      send_error(c, 401, "control requests need Authorization: Bearer TOKEN",
                 "WWW-Authenticate: Bearer realm=\"kria\"\r\n");
      return;
    }
    req.authorized = 1;
  }
  const char *q = memchr(c->url.data, '?', c->url.len);
  req.path = kr_slice(c->url.data, q ? (size_t)(q - c->url.data) : c->url.len);
  if (q) req.query = kr_slice(q + 1, c->url.len - (size_t)(q - c->url.data) - 1);
  req.body = kr_slice(c->body.data ? c->body.data : "", c->body.len);
  if (c->sig.len) req.signature = kr_slice(c->sig.data, c->sig.len);
  kr_status_resp_t resp = {.status = 200, .content_type = "application/json", .body = &c->out};
  kr_buf_reset(&c->out);
  s->st.requests++;
  uint64_t t0 = uv_hrtime();
  s->o.handler(s->o.ud, &req, &resp);
  s->st.busy_us += (uv_hrtime() - t0) / 1000;
  c->after = resp.after;
  c->after_ud = resp.after_ud;
  send_response(c, resp.status, resp.content_type ? resp.content_type : "application/json",
                resp.headers, req.method == KR_STATUS_HEAD);
}

/* ---- parsing ---------------------------------------------------------------------- */

static client_t *cl(llhttp_t *p) { return p->data; }

/* Request line and header bytes as llhttp hands them over; the byte count
 * of the read path catches padding the callbacks never see. */
static int head_add(client_t *c, size_t n) {
  c->head_bytes += n;
  if (c->head_bytes > c->srv->o.max_header_bytes) {
    c->error = 431;
    return -1;
  }
  return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n) {
  client_t *c = cl(p);
  if (head_add(c, n) || kr_buf_append(&c->url, at, n)) return c->error = 431, -1;
  return 0;
}

static int on_url_complete(llhttp_t *p) {
  return head_add(cl(p), 16); /* method, spaces, version, CRLF */
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  client_t *c = cl(p);
  if (head_add(c, n)) return -1;
  if (kr_buf_append(&c->fname, at, n)) c->fname.len = FIELD_MAX; /* a long name: none of ours */
  return 0;
}

static int on_header_field_complete(llhttp_t *p) {
  client_t *c = cl(p);
  kr_slice_t f = kr_slice(c->fname.data ? c->fname.data : "", c->fname.len);
  c->field = H_OTHER;
  if (head_add(c, 4)) return -1; /* ": " and CRLF of the line */
  if (kr_slice_case_eq(f, KR_SLICE_LIT("authorization"))) {
    if (c->auth.len) return c->error = 400, -1; /* two Authorization headers */
    c->field = H_AUTH;
  } else if (kr_slice_case_eq(f, KR_SLICE_LIT("x-hub-signature"))) {
    if (c->sig.len) return c->error = 400, -1;
    c->field = H_SIG;
  } else if (kr_slice_case_eq(f, KR_SLICE_LIT("host"))) {
    if (c->host_seen) return c->error = 400, -1;
    c->host_seen = 1;
    c->field = H_HOST;
  }
  kr_buf_reset(&c->fname);
  return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  client_t *c = cl(p);
  if (head_add(c, n)) return -1;
  kr_buf_t *b = c->field == H_AUTH   ? &c->auth
                : c->field == H_HOST ? &c->host
                : c->field == H_SIG  ? &c->sig
                                     : NULL;
  if (b && kr_buf_append(b, at, n)) return c->error = 431, -1;
  return 0;
}

/* Is the request's path under opts.public_prefix? */
static int is_public(const client_t *c) {
  const char *pre = c->srv->o.public_prefix;
  size_t n = pre ? strlen(pre) : 0;
  return n && c->url.len >= n && memcmp(c->url.data, pre, n) == 0;
}

static size_t body_max(const client_t *c) {
  return is_public(c) ? c->srv->o.public_max_body_bytes : c->srv->o.max_body_bytes;
}

static int on_headers_complete(llhttp_t *p) {
  client_t *c = cl(p);
  c->headers_done = 1;
  if ((p->flags & F_CONTENT_LENGTH) && p->content_length > body_max(c))
    return c->error = 413, -1;
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  client_t *c = cl(p);
  if (n > body_max(c) - c->body.len || kr_buf_append(&c->body, at, n))
    return c->error = 413, -1;
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  cl(p)->complete = 1;
  return HPE_PAUSED; /* nothing after this request is parsed */
}

static const llhttp_settings_t settings = {
    .on_url = on_url,
    .on_url_complete = on_url_complete,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  client_t *c = h->data;
  (void)hint;
  *buf = uv_buf_init(c->srv->rbuf, sizeof c->srv->rbuf);
}

static void on_request_timeout(uv_timer_t *t);

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
  client_t *c = st->data;
  if (n == 0) return;
  if (n < 0) { /* gone before a complete request: nobody to answer */
    client_close(c);
    return;
  }
  if (!c->read_bytes && !c->headers_done) { /* no longer silent: the whole-request bound */
    uint64_t used = uv_now(c->srv->loop) - c->accepted_ms;
    uint64_t left = c->srv->o.request_timeout_ms > used ? c->srv->o.request_timeout_ms - used : 0;
    uv_timer_start(&c->timer, on_request_timeout, left, 0);
  }
  if (!c->headers_done) c->read_bytes += (size_t)n;
  llhttp_errno_t e = llhttp_execute(&c->parser, buf->base, (size_t)n);
  if (e == HPE_PAUSED && c->complete) {
    handle(c);
    return;
  }
  if (e != HPE_OK) {
    if (!c->error) c->error = 400;
    handle(c);
    return;
  }
  /* Bytes the callbacks never see (separators, padding) count too. */
  if (!c->headers_done && c->read_bytes > c->srv->o.max_header_bytes + HEAD_SLACK) {
    c->error = 431;
    handle(c);
  }
}

static void on_request_timeout(uv_timer_t *t) {
  client_t *c = t->data;
  if (c->state != C_READ) return;
  send_error(c, 408, "the request took too long to arrive", NULL);
}

/* Connected and sent nothing within silent_timeout_ms: closed without an
 * answer (a browser's speculative connection, or a client holding a slot). */
static void on_silent_timeout(uv_timer_t *t) {
  client_t *c = t->data;
  if (c->state != C_READ || c->read_bytes) return;
  c->srv->st.silent_closed++;
  client_close(c);
}

/* The client that has sent nothing for longest, at least evict_silent_ms
 * since its accept (one that has bytes waiting is not yet read), or NULL. */
static client_t *oldest_silent(kr_status_server_t *s) {
  client_t *best = NULL;
  uint64_t now = uv_now(s->loop);
  for (client_t *c = s->clients; c; c = c->next)
    if (c->state == C_READ && !c->read_bytes && !c->headers_done &&
        now - c->accepted_ms >= s->o.evict_silent_ms &&
        (!best || c->accepted_ms <= best->accepted_ms))
      best = c;
  return best;
}

/* ---- the listener ------------------------------------------------------------------ */

static void on_connection(uv_stream_t *ls, int status) {
  kr_status_server_t *s = ls->data;
  if (status < 0 || s->closing) return;
  client_t *c = kr_xcalloc(1, sizeof *c);
  c->srv = s;
  uv_tcp_init(s->loop, &c->tcp);
  uv_timer_init(s->loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->handles = 2;
  s->handles++;
  c->next = s->clients;
  if (s->clients) s->clients->prev = c;
  s->clients = c;
  s->st.clients++;
  if (uv_accept(ls, (uv_stream_t *)&c->tcp) < 0) {
    client_close(c);
    return;
  }
  s->st.connections++;
  c->accepted_ms = uv_now(s->loop);
  /* Full: a client that has sent nothing gives its place up first; the
   * one slot past max_clients is kept for requests that carry the token
   * (handle() answers 503 to any other), so idle or slow connections
   * never lock out an authenticated POST /stop. */
  if (s->st.clients > s->o.max_clients) {
    client_t *idle = oldest_silent(s);
    if (idle && idle != c) {
      s->st.evicted++;
      client_close(idle);
    }
  }
  if (s->st.clients > s->o.max_clients) {
    int taken = 0;
    for (client_t *o = s->clients; o; o = o->next)
      taken |= o != c && o->reserved && o->state == C_READ; /* a lingering one has had its turn */
    if (!taken && s->token) c->reserved = 1;
  }
  if (s->st.clients > s->o.max_clients && !c->reserved) {
    static const char busy[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n"
        "Retry-After: 1\r\n\r\n";
    uv_buf_t b = uv_buf_init((char *)busy, sizeof busy - 1);
    (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    s->st.refused++;
    client_close(c);
    return;
  }
  kr_buf_init(&c->url, s->o.max_header_bytes);
  kr_buf_init(&c->fname, FIELD_MAX);
  kr_buf_init(&c->auth, AUTH_MAX);
  kr_buf_init(&c->host, HOST_MAX);
  kr_buf_init(&c->body, KR_MAX(s->o.max_body_bytes,
                               s->o.public_prefix ? s->o.public_max_body_bytes : 0));
  kr_buf_init(&c->sig, SIG_MAX);
  kr_buf_init(&c->head, 4096);
  kr_buf_init(&c->out, s->o.max_response_bytes);
  llhttp_init(&c->parser, HTTP_REQUEST, &settings);
  c->parser.data = c;
  c->state = C_READ;
  uv_tcp_nodelay(&c->tcp, 1);
  uv_timer_start(&c->timer, on_silent_timeout,
                 KR_MIN(s->o.silent_timeout_ms, s->o.request_timeout_ms), 0);
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) client_close(c);
}

void kr_status_opts_default(kr_status_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->listen = KR_STATUS_DEFAULT_LISTEN;
  o->max_clients = 16;
  o->request_timeout_ms = 5000;
  o->silent_timeout_ms = 1000;
  o->evict_silent_ms = 100;
  o->linger_ms = 1000;
  o->max_header_bytes = 8192;
  o->max_body_bytes = 4096;
  o->public_max_body_bytes = 1u << 20;
  o->max_response_bytes = 16u << 20;
}

/* Parse "IP:PORT" / "[IPv6]:PORT" into ss. 0 or -1. */
static int parse_listen(const char *s, struct sockaddr_storage *ss, int *loopback) {
  char host[64];
  const char *port;
  int v6 = 0;
  if (*s == '[') {
    const char *rb = strchr(s, ']');
    if (!rb || rb[1] != ':' || (size_t)(rb - s - 1) >= sizeof host) return -1;
    memcpy(host, s + 1, (size_t)(rb - s - 1));
    host[rb - s - 1] = '\0';
    port = rb + 2;
    v6 = 1;
  } else {
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host || memchr(s, ':', (size_t)(colon - s)))
      return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    port = colon + 1;
  }
  if (!is_port(port, strlen(port)) || atoi(port) > 65535) return -1;
  int rc = v6 ? uv_ip6_addr(host, atoi(port), (struct sockaddr_in6 *)ss)
              : uv_ip4_addr(host, atoi(port), (struct sockaddr_in *)ss);
  if (rc) return -1;
  *loopback = is_loopback_ip(host);
  return 0;
}

static void on_listener_closed(uv_handle_t *h) {
  kr_status_server_t *s = h->data;
  s->handles--;
  server_maybe_free(s);
}

int kr_status_set_token(kr_status_server_t *s, const char *token) {
  if ((!token || !*token) && !s->loopback) return KR_EINVAL;
  free(s->token);
  s->token = token && *token ? kr_xstrdup(token) : NULL;
  return 0;
}

int kr_status_start(uv_loop_t *loop, const kr_status_opts_t *o, kr_status_server_t **out,
                    char *err, size_t errlen) {
  *out = NULL;
  struct sockaddr_storage ss;
  int loopback = 0;
  const char *listen = o->listen && *o->listen ? o->listen : KR_STATUS_DEFAULT_LISTEN;
  if (parse_listen(listen, &ss, &loopback)) {
    snprintf(err, errlen, "status.listen %s: expected IP:PORT or [IPv6]:PORT", listen);
    return KR_EINVAL;
  }
  if (!loopback && (!o->token || !*o->token)) {
    snprintf(err, errlen,
             "status.listen %s is not a loopback address: refusing to serve control "
             "requests there without status.token",
             listen);
    return KR_EINVAL;
  }
  if (!o->handler) {
    snprintf(err, errlen, "status: no handler");
    return KR_EINVAL;
  }
  kr_status_server_t *s = kr_xcalloc(1, sizeof *s);
  s->loop = loop;
  s->o = *o;
  s->o.listen = NULL; /* not kept: the caller's string */
  s->o.token = NULL;
  s->loopback = loopback;
  s->token = o->token && *o->token ? kr_xstrdup(o->token) : NULL;
  uv_tcp_init(loop, &s->listener);
  s->listener.data = s;
  s->handles = 1;
  int rc = uv_tcp_bind(&s->listener, (const struct sockaddr *)&ss, 0);
  if (!rc) rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
  if (rc) {
    snprintf(err, errlen, "status.listen %s: cannot listen: %s", listen, uv_strerror(rc));
    s->closing = 1;
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    return KR_EIO;
  }
  struct sockaddr_storage bound;
  int blen = sizeof bound;
  char ip[INET6_ADDRSTRLEN] = "?";
  uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen);
  if (bound.ss_family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&bound;
    uv_ip6_name(a, ip, sizeof ip);
    snprintf(s->addr, sizeof s->addr, "[%s]:%u", ip, ntohs(a->sin6_port));
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&bound;
    uv_ip4_name(a, ip, sizeof ip);
    snprintf(s->addr, sizeof s->addr, "%s:%u", ip, ntohs(a->sin_port));
  }
  *out = s;
  return 0;
}

const char *kr_status_address(const kr_status_server_t *s) { return s->addr; }

const kr_status_stats_t *kr_status_stats(const kr_status_server_t *s) { return &s->st; }

void kr_status_close(kr_status_server_t *s) {
  if (!s || s->closing) return;
  s->closing = 1;
  while (s->clients) client_close(s->clients);
  uv_close((uv_handle_t *)&s->listener, on_listener_closed);
}
