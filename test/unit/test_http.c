/*
 * Loop tests for the fetch engine (conn, tls, http) against in-process
 * scripted servers on 127.0.0.1:0 / [::1]:0, all on the test's own uv
 * loop. A server answers the n-th request it sees with the n-th step of
 * its script: bytes (optionally in pieces, one per loop turn or spaced
 * by a timer), then keep the connection, close it, stall, or reset it
 * (SO_LINGER 0); or, instead of answering, close / reset / ignore. With a
 * TLS context it speaks TLS through memory BIOs (a self-signed
 * certificate made here with OpenSSL). Every test waits on events with a
 * guard timer, and ends with every handle closed and uv_loop_close() == 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>
#include <zlib.h>

#include "clock.h"
#include "conn.h"
#include "dns.h"
#include "http.h"
#include "timer.h"
#include "kria/error.h"
#include "kria/url.h"

/* ---- scripted server ---------------------------------------------------- */

enum { T_KEEP = 0, T_CLOSE, T_STALL, T_RESET };      /* after the bytes */
enum { R_RESPOND = 0, R_CLOSE, R_RESET, R_IGNORE };  /* on the request */

typedef struct step {
  const char *data;
  size_t len;          /* 0 = strlen(data) */
  size_t piece;        /* 0 = all at once */
  unsigned delay_ms;   /* between pieces */
  int then;            /* T_* */
  int on_request;      /* R_* */
} step_t;

typedef struct srv srv_t;

typedef struct sconn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  srv_t *s;
  struct sconn *next;
  char in[16384];
  size_t inlen;
  const step_t *cur;
  size_t sent;
  int pending_writes;
  int after_writes;   /* T_CLOSE / T_RESET once writes are done */
  int closing;
  int handles;
  SSL *ssl;
  BIO *rbio, *wbio;
} sconn_t;

struct srv {
  uv_loop_t *loop;
  uv_tcp_t listener;
  int port;
  const step_t *steps;
  size_t nsteps, next_step;
  int accepts, requests, closed;
  char req[8][2048];  /* requests, by number modulo 8 */
  SSL_CTX *tls;
  int close_notify;   /* T_CLOSE over TLS sends close_notify first */
  sconn_t *conns;
  int closing;
};

static void sconn_closed(uv_handle_t *h) {
  sconn_t *c = h->data;
  if (--c->handles == 0) {
    c->s->closed++;
    sconn_t **pp = &c->s->conns;
    while (*pp != c) pp = &(*pp)->next;
    *pp = c->next;
    /* as a server that closes cleanly: OpenSSL forgets the session of
     * an SSL freed without a shutdown, and TLS 1.2 session IDs live in
     * the server's cache */
    if (c->ssl) SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    if (c->ssl) SSL_free(c->ssl);
    free(c);
  }
}

static void sconn_close(sconn_t *c, int reset) {
  if (c->closing) return;
  c->closing = 1;
  uv_close((uv_handle_t *)&c->timer, sconn_closed);
  if (reset) {
    int r = uv_tcp_close_reset(&c->tcp, sconn_closed);
    if (r) fprintf(stderr, "close_reset: %s\n", uv_strerror(r));
  } else
    uv_close((uv_handle_t *)&c->tcp, sconn_closed);
}

typedef struct swrite {
  uv_write_t req;
  sconn_t *c;
  char *copy;
} swrite_t;

static void swrite_cb(uv_write_t *req, int status) {
  swrite_t *w = (swrite_t *)req;
  sconn_t *c = w->c;
  free(w->copy);
  free(w);
  c->pending_writes--;
  if (c->pending_writes == 0 && !c->closing && c->after_writes)
    sconn_close(c, c->after_writes == T_RESET);
}

static void raw_write(sconn_t *c, const char *p, size_t n) {
  swrite_t *w = calloc(1, sizeof *w);
  w->c = c;
  w->copy = malloc(n ? n : 1);
  memcpy(w->copy, p, n);
  uv_buf_t b = uv_buf_init(w->copy, (unsigned)n);
  c->pending_writes++;
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, swrite_cb)) {
    c->pending_writes--;
    free(w->copy);
    free(w);
  }
}

static void tls_flush(sconn_t *c) {
  char buf[16384];
  int n;
  while ((n = BIO_read(c->wbio, buf, sizeof buf)) > 0) raw_write(c, buf, (size_t)n);
}

static void sconn_send(sconn_t *c, const char *p, size_t n) {
  if (c->ssl) {
    if (n) SSL_write(c->ssl, p, (int)n);
    tls_flush(c);
  } else {
    raw_write(c, p, n);
  }
}

static void step_done(sconn_t *c);
static void handle_requests(sconn_t *c);

static void send_more(sconn_t *c);
static void send_timer_cb(uv_timer_t *t) { send_more(t->data); }

static void send_more(sconn_t *c) {
  const step_t *st = c->cur;
  size_t len = st->len ? st->len : strlen(st->data);
  size_t n = len - c->sent;
  if (st->piece && n > st->piece) n = st->piece;
  sconn_send(c, st->data + c->sent, n);
  c->sent += n;
  if (c->sent < len) {
    uv_timer_start(&c->timer, send_timer_cb, st->delay_ms, 0);
    return;
  }
  step_done(c);
}

static void step_done(sconn_t *c) {
  int then = c->cur->then;
  c->cur = NULL;
  switch (then) {
  case T_KEEP:
    handle_requests(c);
    break;
  case T_CLOSE:
  case T_RESET:
    if (then == T_CLOSE && c->ssl && c->s->close_notify) {
      SSL_shutdown(c->ssl);
      tls_flush(c);
    }
    c->after_writes = then;
    if (c->pending_writes == 0) sconn_close(c, then == T_RESET);
    break;
  case T_STALL:
    c->cur = (const step_t *)1; /* never answer again */
    break;
  }
}

static void handle_requests(sconn_t *c) {
  while (!c->cur && !c->closing) {
    char *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
    if (!end) return;
    size_t n = (size_t)(end + 4 - c->in);
    srv_t *s = c->s;
    char *r = s->req[s->requests % 8];
    size_t keep = n < sizeof s->req[0] - 1 ? n : sizeof s->req[0] - 1;
    memcpy(r, c->in, keep);
    r[keep] = '\0';
    s->requests++;
    memmove(c->in, c->in + n, c->inlen - n);
    c->inlen -= n;
    if (s->next_step >= s->nsteps) {
      sconn_close(c, 0);
      return;
    }
    const step_t *st = &s->steps[s->next_step++];
    switch (st->on_request) {
    case R_CLOSE:
      sconn_close(c, 0);
      return;
    case R_RESET:
      sconn_close(c, 1);
      return;
    case R_IGNORE:
      c->cur = (const step_t *)1;
      return;
    default:
      c->cur = st;
      c->sent = 0;
      send_more(c);
    }
  }
}

static void salloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char rb[65536];
  buf->base = rb;
  buf->len = sizeof rb;
}

static void sread(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  sconn_t *c = st->data;
  if (c->closing) return;
  if (nread < 0) {
    sconn_close(c, 0);
    return;
  }
  if (c->ssl) {
    BIO_write(c->rbio, buf->base, (int)nread);
    if (!SSL_is_init_finished(c->ssl)) {
      int r = SSL_do_handshake(c->ssl);
      tls_flush(c);
      if (r != 1) {
        int e = SSL_get_error(c->ssl, r);
        if (e != SSL_ERROR_WANT_READ) {
          ERR_clear_error();
          c->after_writes = T_CLOSE;
          if (!c->pending_writes) sconn_close(c, 0);
        }
        return;
      }
    }
    int r;
    while ((r = SSL_read(c->ssl, c->in + c->inlen, (int)(sizeof c->in - c->inlen))) > 0)
      c->inlen += (size_t)r;
    tls_flush(c);
  } else {
    size_t n = (size_t)nread;
    if (n > sizeof c->in - c->inlen) n = sizeof c->in - c->inlen;
    memcpy(c->in + c->inlen, buf->base, n);
    c->inlen += n;
  }
  handle_requests(c);
}

static void on_conn(uv_stream_t *l, int status) {
  srv_t *s = l->data;
  if (status < 0) return;
  sconn_t *c = calloc(1, sizeof *c);
  c->s = s;
  uv_tcp_init(s->loop, &c->tcp);
  uv_timer_init(s->loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->handles = 2;
  c->next = s->conns;
  s->conns = c;
  if (uv_accept(l, (uv_stream_t *)&c->tcp)) {
    sconn_close(c, 0);
    return;
  }
  s->accepts++;
  if (s->tls) {
    c->ssl = SSL_new(s->tls);
    c->rbio = BIO_new(BIO_s_mem());
    c->wbio = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(c->rbio, -1);
    SSL_set_bio(c->ssl, c->rbio, c->wbio);
    SSL_set_accept_state(c->ssl);
  }
  uv_read_start((uv_stream_t *)&c->tcp, salloc, sread);
}

static void srv_start6(srv_t *s, uv_loop_t *loop, const step_t *steps, size_t n, int v6) {
  memset(s, 0, sizeof *s);
  s->loop = loop;
  s->steps = steps;
  s->nsteps = n;
  uv_tcp_init(loop, &s->listener);
  s->listener.data = s;
  struct sockaddr_storage ss;
  if (v6)
    uv_ip6_addr("::1", 0, (struct sockaddr_in6 *)&ss);
  else
    uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in *)&ss);
  assert_int_equal(uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0), 0);
  assert_int_equal(uv_listen((uv_stream_t *)&s->listener, 128, on_conn), 0);
  int len = sizeof ss;
  uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len);
  s->port = v6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
               : ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void srv_start(srv_t *s, uv_loop_t *loop, const step_t *steps, size_t n) {
  srv_start6(s, loop, steps, n, 0);
}

static void srv_stop(srv_t *s) {
  s->closing = 1;
  uv_close((uv_handle_t *)&s->listener, NULL);
  for (sconn_t *c = s->conns; c; c = c->next) sconn_close(c, 0);
}

/* ---- TLS material --------------------------------------------------------- */

static EVP_PKEY *tls_key;
static X509 *tls_cert;
static char ca_path[256];

static void make_cert(void) {
  if (tls_cert) return;
  tls_key = EVP_EC_gen("P-256");
  assert_non_null(tls_key);
  X509 *x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24);
  X509_set_pubkey(x, tls_key);
  X509_NAME *name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
                             -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
  X509_EXTENSION *ext =
      X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  assert_true(X509_sign(x, tls_key, EVP_sha256()) > 0);
  tls_cert = x;
  char dir[] = "/tmp/kria-http-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  snprintf(ca_path, sizeof ca_path, "%s/ca.pem", dir);
  FILE *f = fopen(ca_path, "w");
  PEM_write_X509(f, x);
  fclose(f);
}

static void drop_cert(void) {
  if (!tls_cert) return;
  X509_free(tls_cert);
  EVP_PKEY_free(tls_key);
  unlink(ca_path);
  char *slash = strrchr(ca_path, '/');
  *slash = '\0';
  rmdir(ca_path);
  tls_cert = NULL;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned inlen, void *arg) {
  unsigned char *sel;
  static const unsigned char mine[] = "\x08http/1.1";
  if (SSL_select_next_proto(&sel, outlen, mine, sizeof mine - 1, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = sel;
  return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *server_ctx(void) {
  make_cert();
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate(ctx, tls_cert);
  SSL_CTX_use_PrivateKey(ctx, tls_key);
  SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
  return ctx;
}

/* ---- client side ---------------------------------------------------------- */

typedef struct tf {
  kr_buf_t content, payload, raw;
  int done, err, headers_calls, body_after_abort;
  int abort_on_headers;
  int abort_on_content;
  kr_http_fetch_t *f;
  int status;
  struct tctx *t;
  int chain;          /* start another fetch from on_done while > 0 */
  int chain_done;     /* fetches finished in the chain */
} tf_t;

typedef struct tctx {
  uv_loop_t loop;
  kr_clock_t clock;
  kr_http_client_t *http;
  kr_http_opts_t opts;
  uv_timer_t guard;
  int guard_fired;
  char url[256];
  kr_url_t *u;
  kr_http_req_t req;
} tctx_t;

static int tf_headers(kr_http_fetch_t *f, const kr_http_resp_t *r) {
  tf_t *t = kr_http_fetch_data(f);
  t->headers_calls++;
  t->status = r->status;
  return t->abort_on_headers ? KR_HTTP_ABORT : KR_HTTP_CONTINUE;
}

static int tf_content(kr_http_fetch_t *f, const char *p, size_t n) {
  tf_t *t = kr_http_fetch_data(f);
  if (kr_http_fetch_resp(f)->aborted) t->body_after_abort++;
  kr_buf_append(&t->content, p, n);
  return t->abort_on_content && t->content.len >= (size_t)t->abort_on_content;
}

static int tf_payload(kr_http_fetch_t *f, const char *p, size_t n) {
  tf_t *t = kr_http_fetch_data(f);
  kr_buf_append(&t->payload, p, n);
  return 0;
}

static int tf_raw(kr_http_fetch_t *f, const char *p, size_t n) {
  tf_t *t = kr_http_fetch_data(f);
  kr_buf_append(&t->raw, p, n);
  return 0;
}

static const kr_http_cbs_t tf_cbs;

static void tf_done(kr_http_fetch_t *f, int err) {
  tf_t *t = kr_http_fetch_data(f);
  t->done++;
  t->err = err;
  if (t->chain > 0) {
    t->chain--;
    t->chain_done++;
    assert_int_equal(err, 0);
    kr_http_fetch_release(f);
    kr_buf_reset(&t->content);
    kr_buf_reset(&t->payload);
    kr_buf_reset(&t->raw);
    t->done = 0;
    assert_int_equal(kr_http_fetch_start(t->t->http, t->t->u, &t->t->req, &tf_cbs, t, &t->f), 0);
  }
}

static const kr_http_cbs_t tf_cbs = {
    .on_headers = tf_headers,
    .on_raw = tf_raw,
    .on_payload = tf_payload,
    .on_content = tf_content,
    .on_done = tf_done,
};

static void tf_init(tf_t *t, tctx_t *c) {
  memset(t, 0, sizeof *t);
  t->t = c;
  kr_buf_init(&t->content, 64u << 20);
  kr_buf_init(&t->payload, 64u << 20);
  kr_buf_init(&t->raw, 64u << 20);
}

static void tf_free(tf_t *t) {
  if (t->f) kr_http_fetch_release(t->f);
  t->f = NULL;
  kr_buf_free(&t->content);
  kr_buf_free(&t->payload);
  kr_buf_free(&t->raw);
}

static void guard_cb(uv_timer_t *t) {
  tctx_t *c = t->data;
  c->guard_fired = 1;
}

/* The test servers listen on loopback, which the address policy refuses
 * by default: every test opts in, except the policy's own. */
static void opts_default(kr_http_opts_t *o) {
  kr_http_opts_default(o);
  o->allow_private_addresses = 1;
}

static void ctx_open(tctx_t *c) {
  memset(c, 0, sizeof *c);
  assert_int_equal(uv_loop_init(&c->loop), 0);
  kr_clock_init_real(&c->clock);
  opts_default(&c->opts);
  uv_timer_init(&c->loop, &c->guard);
  c->guard.data = c;
}

static void ctx_client(tctx_t *c) {
  assert_int_equal(kr_http_client_new(&c->loop, &c->clock, NULL, &c->opts, &c->http), 0);
}

static void set_url(tctx_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->url, sizeof c->url, fmt, ap);
  va_end(ap);
  if (c->u) kr_url_free(c->u);
  assert_int_equal(kr_url_parse(c->url, strlen(c->url), NULL, &c->u), 0);
}

/* Run the loop until *flag is set, at most limit_ms. */
static void run_until(tctx_t *c, const int *flag, unsigned limit_ms) {
  c->guard_fired = 0;
  uv_timer_start(&c->guard, guard_cb, limit_ms, 0);
  while (!*flag && !c->guard_fired) uv_run(&c->loop, UV_RUN_ONCE);
  uv_timer_stop(&c->guard);
  assert_false(c->guard_fired);
}

static void start(tctx_t *c, tf_t *t) {
  assert_int_equal(kr_http_fetch_start(c->http, c->u, &c->req, &tf_cbs, t, &t->f), 0);
}

/* Close everything and check the loop is empty. */
static void ctx_close(tctx_t *c, srv_t *s) {
  if (c->http) kr_http_client_close(c->http);
  if (s) srv_stop(s);
  uv_close((uv_handle_t *)&c->guard, NULL);
  for (int i = 0; i < 100 && uv_run(&c->loop, UV_RUN_NOWAIT); i++) uv_run(&c->loop, UV_RUN_ONCE);
  if (s && s->tls) SSL_CTX_free(s->tls);
  if (c->u) kr_url_free(c->u);
  assert_int_equal(uv_loop_close(&c->loop), 0);
}

static kr_http_stats_t stats(tctx_t *c) {
  kr_http_stats_t st;
  kr_http_client_stats(c->http, &st);
  return st;
}

/* One fetch of path against a server with steps; leaves t done. */
static void fetch_once(tctx_t *c, srv_t *s, tf_t *t, const step_t *steps, size_t n) {
  srv_start(s, &c->loop, steps, n);
  if (!c->http) ctx_client(c);
  set_url(c, "http://127.0.0.1:%d/path?q=1", s->port);
  tf_init(t, c);
  start(c, t);
  run_until(c, &t->done, 5000);
}

#define BODY_OK "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"

/* ---- tests: bodies ---------------------------------------------------------- */

static void content_length_body(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK "extra:after"}};
  steps[0].len = strlen(BODY_OK); /* nothing after the body */
  fetch_once(&c, &s, &t, steps, 1);
  assert_int_equal(t.err, 0);
  const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
  assert_int_equal(r->status, 200);
  assert_int_equal(r->version_major, 1);
  assert_int_equal(r->version_minor, 1);
  assert_true(kr_slice_eq(r->reason, KR_SLICE_LIT("OK")));
  assert_int_equal(r->content_length, 5);
  assert_true(kr_slice_eq(r->content_type, KR_SLICE_LIT("text/html")));
  assert_int_equal(r->nheaders, 2);
  assert_true(kr_slice_eq(r->headers[1].name, KR_SLICE_LIT("Content-Length")));
  assert_true(kr_slice_eq(r->headers[1].value, KR_SLICE_LIT("5")));
  assert_int_equal(r->raw_head.n, strlen(BODY_OK) - 5);
  assert_memory_equal(r->raw_head.p, BODY_OK, r->raw_head.n);
  assert_int_equal(t.content.len, 5);
  assert_memory_equal(t.content.data, "hello", 5);
  assert_string_equal(t.payload.data, "hello");
  assert_string_equal(t.raw.data, BODY_OK);
  assert_int_equal(r->raw_bytes, strlen(BODY_OK));
  assert_int_equal(t.headers_calls, 1);
  assert_string_equal(r->peer_ip, "127.0.0.1");
  assert_int_equal(r->peer_port, s.port);
  assert_false(r->tls.used);
  assert_true(r->timing.total_us >= r->timing.first_byte_us);
  /* The request as written, and as the server saw it. */
  kr_slice_t rq = kr_http_fetch_request(t.f);
  assert_int_equal(rq.n, strlen(s.req[0]));
  assert_memory_equal(rq.p, s.req[0], rq.n);
  assert_non_null(strstr(s.req[0], "GET /path?q=1 HTTP/1.1\r\n"));
  char host[64];
  snprintf(host, sizeof host, "\r\nHost: 127.0.0.1:%d\r\n", s.port);
  assert_non_null(strstr(s.req[0], host));
  assert_non_null(strstr(s.req[0], "\r\nUser-Agent: " KR_HTTP_DEFAULT_UA "\r\n"));
  assert_non_null(strstr(s.req[0], "\r\nAccept-Encoding: gzip, deflate\r\n"));
  assert_null(strstr(s.req[0], "If-None-Match"));
  tf_free(&t);
  ctx_close(&c, &s);
}

#define CHUNKED                                                                \
  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Long-Header-Name: some " \
  "value here\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n"

static void chunked_body_in_pieces(void **state) {
  for (size_t piece = 1; piece <= 16; piece *= 4) {
    tctx_t c;
    srv_t s;
    tf_t t;
    ctx_open(&c);
    step_t steps[] = {{.data = CHUNKED, .piece = piece}};
    fetch_once(&c, &s, &t, steps, 1);
    assert_int_equal(t.err, 0);
    const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
    assert_int_equal(r->status, 200);
    assert_true(r->chunked);
    assert_int_equal(r->content_length, -1);
    assert_true(kr_slice_eq(kr_http_resp_header(r, "x-long-header-name"),
                            KR_SLICE_LIT("some value here")));
    assert_string_equal(t.content.data, "hello, world");
    assert_string_equal(t.payload.data, "hello, world");
    assert_string_equal(t.raw.data, CHUNKED); /* chunk framing kept */
    tf_free(&t);
    ctx_close(&c, &s);
  }
}

static char *gz(const char *in, size_t n, int wbits, size_t *outn) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  deflateInit2(&zs, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY);
  size_t cap = deflateBound(&zs, n) + 64;
  char *out = malloc(cap);
  zs.next_in = (unsigned char *)in;
  zs.avail_in = (uInt)n;
  zs.next_out = (unsigned char *)out;
  zs.avail_out = (uInt)cap;
  deflate(&zs, Z_FINISH);
  *outn = cap - zs.avail_out;
  deflateEnd(&zs);
  return out;
}

/* A response with head and a binary body, malloc'd. */
static char *response(const char *head, const char *body, size_t bn, size_t *len) {
  size_t hn = strlen(head);
  char *r = malloc(hn + bn + 1);
  memcpy(r, head, hn);
  memcpy(r + hn, body, bn);
  r[hn + bn] = '\0';
  *len = hn + bn;
  return r;
}

static void gzip_and_deflate_bodies(void **state) {
  static const struct { const char *coding; int wbits; } v[] = {
      {"gzip", 31}, {"x-gzip", 31}, {"deflate", 15}, {"deflate", -15}};
  char plain[20000];
  for (size_t i = 0; i < sizeof plain; i++) plain[i] = "abcdefghij\n"[i % 11];
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    size_t zn, rn;
    char *z = gz(plain, sizeof plain, v[k].wbits, &zn);
    char head[200];
    snprintf(head, sizeof head,
             "HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %zu\r\n\r\n",
             v[k].coding, zn);
    char *resp = response(head, z, zn, &rn);
    tctx_t c;
    srv_t s;
    tf_t t;
    ctx_open(&c);
    step_t steps[] = {{.data = resp, .len = rn, .piece = 100}};
    fetch_once(&c, &s, &t, steps, 1);
    assert_int_equal(t.err, 0);
    const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
    assert_true(r->content_decoded);
    assert_int_equal(t.content.len, sizeof plain);
    assert_memory_equal(t.content.data, plain, sizeof plain);
    assert_int_equal(t.payload.len, zn);
    assert_memory_equal(t.payload.data, z, zn);
    assert_int_equal(r->content_bytes, sizeof plain);
    assert_int_equal(r->payload_bytes, zn);
    tf_free(&t);
    ctx_close(&c, &s);
    free(resp);
    free(z);
  }
}

static void unknown_coding_passes_through(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = "HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 4\r\n\r\n\x01\x02\x03\x04"}};
  fetch_once(&c, &s, &t, steps, 1);
  assert_int_equal(t.err, 0);
  assert_false(kr_http_fetch_resp(t.f)->content_decoded);
  assert_int_equal(t.content.len, 4);
  assert_memory_equal(t.content.data, "\x01\x02\x03\x04", 4);
  tf_free(&t);
  ctx_close(&c, &s);
}

static void body_until_close(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = "HTTP/1.1 200 OK\r\n\r\nuntil the end", .piece = 5, .then = T_CLOSE}};
  fetch_once(&c, &s, &t, steps, 1);
  assert_int_equal(t.err, 0);
  assert_string_equal(t.content.data, "until the end");
  assert_int_equal(stats(&c).pooled_idle, 0);
  tf_free(&t);
  ctx_close(&c, &s);
}

static void interim_1xx_is_skipped(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" BODY_OK, .piece = 7}};
  fetch_once(&c, &s, &t, steps, 1);
  assert_int_equal(t.err, 0);
  const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
  assert_int_equal(r->status, 200);
  assert_int_equal(t.headers_calls, 1);
  assert_int_equal(r->nheaders, 2);
  assert_true(kr_slice_eq(r->raw_head, kr_slice(BODY_OK, strlen(BODY_OK) - 5)));
  assert_string_equal(t.content.data, "hello");
  tf_free(&t);
  ctx_close(&c, &s);
}

static void reset_budget(uv_check_t *h) {
  tctx_t *c = h->data;
  kr_turn_budget_reset(c->opts.read_budget);
  if (c->http) kr_http_client_turn(c->http);
}

/* A 200 response without a length (its body ends at the close) and an
 * n-byte patterned body (malloc'd; *hl = the head's length). */
static char *big_response(size_t n, size_t *hl) {
  const char head[] = "HTTP/1.1 200 OK\r\n\r\n";
  *hl = sizeof head - 1;
  char *resp = malloc(*hl + n + 1);
  assert_non_null(resp);
  memcpy(resp, head, *hl);
  for (size_t i = 0; i < n; i++) resp[*hl + i] = (char)('a' + i % 23);
  resp[*hl + n] = 0;
  return resp;
}

/* A loop turn's read budget: once spent, a ready socket is left unread
 * until a later turn; the body still arrives whole and in order, also
 * when the server closes right after sending it. */
static void read_budget_defers_reads(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  kr_turn_budget_t b;
  kr_turn_budget_init(&b, 0); /* one read per turn */
  c.opts.read_budget = &b;
  uv_check_t chk;
  uv_check_init(&c.loop, &chk);
  chk.data = &c;
  uv_check_start(&chk, reset_budget);
  size_t n = 600 * 1024, hl;
  char *resp = big_response(n, &hl);
  step_t steps[] = {{.data = resp, .len = hl + n, .then = T_CLOSE}};
  fetch_once(&c, &s, &t, steps, 1);
  assert_int_equal(t.err, 0);
  assert_int_equal(t.content.len, n);
  assert_memory_equal(t.content.data, resp + hl, n);
  assert_true(stats(&c).reads_deferred > 0);
  assert_true(b.deferred == stats(&c).reads_deferred);
  tf_free(&t);
  uv_close((uv_handle_t *)&chk, NULL);
  ctx_close(&c, &s);
  free(resp);
}

/* A socket refused a buffer stops reading until the next turn
 * (kr_http_client_turn): left registered, libuv reported it again on
 * every poll, up to 48 times a turn with 1,024 sockets ready, each a
 * refusal; at scale tens of ms a turn. Then it reads on, whole. */
static void deferred_socket_waits_for_the_turn(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  kr_turn_budget_t b;
  kr_turn_budget_init(&b, 0); /* one read, then spent until reset */
  c.opts.read_budget = &b;
  size_t n = 600 * 1024, hl;
  char *resp = big_response(n, &hl);
  step_t steps[] = {{.data = resp, .len = hl + n, .then = T_CLOSE}};
  srv_start(&s, &c.loop, steps, 1);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/path?q=1", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  for (int i = 0; i < 10000 && !stats(&c).reads_deferred; i++) uv_run(&c.loop, UV_RUN_NOWAIT);
  assert_int_equal(stats(&c).reads_deferred, 1);
  /* turns without a reset: the socket is not reported again */
  for (int i = 0; i < 50; i++) uv_run(&c.loop, UV_RUN_NOWAIT);
  assert_int_equal(stats(&c).reads_deferred, 1);
  assert_false(t.done);
  /* from now on each turn resets the budget and reads again */
  uv_check_t chk;
  uv_check_init(&c.loop, &chk);
  chk.data = &c;
  uv_check_start(&chk, reset_budget);
  kr_turn_budget_reset(&b);
  kr_http_client_turn(c.http);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  assert_int_equal(t.content.len, n);
  assert_memory_equal(t.content.data, resp + hl, n);
  tf_free(&t);
  uv_close((uv_handle_t *)&chk, NULL);
  ctx_close(&c, &s);
  free(resp);
}

/* ---- tests: keep-alive ---------------------------------------------------------- */

/* Run a chain of fetches (each started from the previous on_done). */
static void run_chain(tctx_t *c, tf_t *t) {
  for (int i = 0; i < 20 && (t->chain > 0 || !t->done); i++) run_until(c, &t->done, 5000);
}

static void keep_alive_reuses_one_connection(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK}, {.data = BODY_OK}, {.data = BODY_OK},
                    {.data = BODY_OK}, {.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 5);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  t.chain = 4;
  start(&c, &t);
  run_chain(&c, &t);
  assert_int_equal(t.chain_done, 4);
  assert_int_equal(t.err, 0);
  assert_int_equal(s.requests, 5);
  assert_int_equal(s.accepts, 1);
  kr_http_stats_t st = stats(&c);
  assert_int_equal(st.conns_opened, 1);
  assert_int_equal(st.conns_reused, 4);
  assert_true(kr_http_fetch_resp(t.f)->reused);
  assert_int_equal(st.pooled_idle, 1);
  tf_free(&t);
  ctx_close(&c, &s);
}

static void stale_pooled_connection_is_retried(void **state) {
  static const int actions[] = {R_CLOSE, R_RESET};
  for (int k = 0; k < 2; k++) {
    tctx_t c;
    srv_t s;
    tf_t t;
    ctx_open(&c);
    step_t steps[] = {{.data = BODY_OK}, {.on_request = actions[k]}, {.data = BODY_OK}};
    srv_start(&s, &c.loop, steps, 3);
    ctx_client(&c);
    set_url(&c, "http://127.0.0.1:%d/", s.port);
    tf_init(&t, &c);
    t.chain = 1;
    start(&c, &t);
    run_chain(&c, &t);
    assert_int_equal(t.err, 0);
    assert_string_equal(t.content.data, "hello");
    const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
    assert_true(r->retried);
    assert_false(r->reused);
    assert_int_equal(s.accepts, 2);
    assert_int_equal(s.requests, 3);
    assert_int_equal(stats(&c).retries, 1);
    tf_free(&t);
    ctx_close(&c, &s);
  }
}

static void no_retry_once_response_bytes_arrived(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK},
                    {.data = "HTTP/1.1 200 OK\r\nContent-Le", .then = T_CLOSE},
                    {.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 3);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  t.chain = 1;
  start(&c, &t);
  run_chain(&c, &t);
  assert_int_equal(t.err, KR_ETRUNCATED);
  assert_int_equal(s.requests, 2);
  assert_int_equal(stats(&c).retries, 0);
  tf_free(&t);
  ctx_close(&c, &s);
}

static void not_reused_after_close_or_extra_bytes(void **state) {
  static const char *const first[] = {
      "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello",
      "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",
      BODY_OK "HTTP/1.1 200 OK\r\n",
  };
  for (size_t k = 0; k < 3; k++) {
    tctx_t c;
    srv_t s;
    tf_t t;
    ctx_open(&c);
    step_t steps[] = {{.data = first[k]}, {.data = BODY_OK}};
    srv_start(&s, &c.loop, steps, 2);
    ctx_client(&c);
    set_url(&c, "http://127.0.0.1:%d/", s.port);
    tf_init(&t, &c);
    t.chain = 1;
    start(&c, &t);
    run_chain(&c, &t);
    assert_int_equal(t.err, 0);
    assert_false(kr_http_fetch_resp(t.f)->reused);
    assert_int_equal(s.accepts, 2);
    tf_free(&t);
    ctx_close(&c, &s);
  }
}

static void pool_limits_and_expiry(void **state) {
  tctx_t c;
  srv_t s;
  ctx_open(&c);
  c.opts.pool_max_idle_per_key = 1;
  c.opts.pool_idle_ms = 50;
  step_t steps[] = {{.data = BODY_OK}, {.data = BODY_OK}, {.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 3);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_t t[3];
  for (int i = 0; i < 3; i++) {
    tf_init(&t[i], &c);
    start(&c, &t[i]);
  }
  for (int i = 0; i < 3; i++) run_until(&c, &t[i].done, 5000);
  for (int i = 0; i < 3; i++) assert_int_equal(t[i].err, 0);
  assert_int_equal(s.accepts, 3);
  /* Only one of the three stays idle; the others were closed. */
  assert_int_equal(stats(&c).pooled_idle, 1);
  /* The idle one expires after 50 ms: the server sees all three close. */
  c.guard_fired = 0;
  uv_timer_start(&c.guard, guard_cb, 3000, 0);
  while (s.closed < 3 && !c.guard_fired) uv_run(&c.loop, UV_RUN_ONCE);
  uv_timer_stop(&c.guard);
  assert_int_equal(s.closed, 3);
  assert_int_equal(stats(&c).pooled_idle, 0);
  for (int i = 0; i < 3; i++) tf_free(&t[i]);
  ctx_close(&c, &s);
}

/* kr_http_req_t.opts: a fetch's own options (a host's [http] settings)
 * win over the client's: here its idle connections per key. */
static void per_fetch_options(void **state) {
  tctx_t c;
  srv_t s;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK}, {.data = BODY_OK}, {.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 3);
  ctx_client(&c); /* the client keeps up to 64 idle connections per key */
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  kr_http_opts_t fo = *kr_http_client_opts(c.http);
  fo.pool_max_idle_per_key = 1;
  c.req.opts = &fo;
  tf_t t[3];
  for (int i = 0; i < 3; i++) {
    tf_init(&t[i], &c);
    start(&c, &t[i]);
  }
  fo.pool_max_idle_per_key = 64; /* copied at start: no effect now */
  for (int i = 0; i < 3; i++) run_until(&c, &t[i].done, 5000);
  for (int i = 0; i < 3; i++) assert_int_equal(t[i].err, 0);
  assert_int_equal(s.accepts, 3);
  assert_int_equal(stats(&c).pooled_idle, 1);
  for (int i = 0; i < 3; i++) tf_free(&t[i]);
  ctx_close(&c, &s);
}

static void pool_global_cap_evicts_oldest(void **state) {
  tctx_t c;
  srv_t a, b;
  tf_t t;
  ctx_open(&c);
  c.opts.pool_max_idle = 1;
  step_t steps[] = {{.data = BODY_OK}};
  srv_start(&a, &c.loop, steps, 1);
  srv_start(&b, &c.loop, steps, 1);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", a.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  assert_int_equal(stats(&c).pooled_idle, 1);
  tf_free(&t);
  set_url(&c, "http://127.0.0.1:%d/", b.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  /* B's connection is kept; A's, the oldest idle one, was closed. */
  assert_int_equal(stats(&c).pooled_idle, 1);
  c.guard_fired = 0;
  uv_timer_start(&c.guard, guard_cb, 3000, 0);
  while (a.closed < 1 && !c.guard_fired) uv_run(&c.loop, UV_RUN_ONCE);
  uv_timer_stop(&c.guard);
  assert_int_equal(a.closed, 1);
  assert_int_equal(b.closed, 0);
  tf_free(&t);
  srv_stop(&a);
  ctx_close(&c, &b);
}

/* ---- tests: malformed input ------------------------------------------------------- */

static void expect_error(const step_t *steps, size_t n, int want, kr_http_opts_t *opts) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  if (opts) c.opts = *opts;
  fetch_once(&c, &s, &t, steps, n);
  if (t.err != want)
    print_error("got %s (%s), want %s\n", kr_err_name(t.err), kr_http_fetch_errmsg(t.f),
                kr_err_name(want));
  assert_int_equal(t.err, want);
  assert_int_equal(t.done, 1);
  assert_true(kr_http_fetch_errmsg(t.f)[0] != '\0');
  assert_int_equal(stats(&c).pooled_idle, 0);
  tf_free(&t);
  ctx_close(&c, &s);
}

static void malformed_responses(void **state) {
  static const struct { const char *data; int then; int want; } v[] = {
      {"HTTP/1.1 abc OK\r\n\r\n", T_STALL, KR_EPROTO},
      {"hello world\r\n\r\n", T_STALL, KR_EPROTO},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n", T_STALL, KR_EPROTO},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", T_STALL, KR_EPROTO},
      {"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n", T_STALL, KR_EPROTO},
      {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly some", T_CLOSE, KR_ETRUNCATED},
      {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly some", T_RESET, KR_ECONNRESET},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", T_CLOSE, KR_ETRUNCATED},
      {"HTTP/1.1 200 OK\r\nContent-Le", T_CLOSE, KR_ETRUNCATED},
      {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\nnot gzip!", T_KEEP, KR_EDECODE},
      {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", T_STALL, KR_EPROTO},
  };
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    step_t steps[] = {{.data = v[k].data, .then = v[k].then}};
    expect_error(steps, 1, v[k].want, NULL);
  }
  step_t empty[] = {{.on_request = R_CLOSE}};
  expect_error(empty, 1, KR_EEMPTY_REPLY, NULL);
  step_t reset[] = {{.on_request = R_RESET}};
  expect_error(reset, 1, KR_ECONNRESET, NULL);
}

static void gzip_truncated_inside_complete_body(void **state) {
  char plain[5000];
  memset(plain, 'x', sizeof plain);
  size_t zn, rn;
  char *z = gz(plain, sizeof plain, 31, &zn);
  char head[128];
  snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n",
           zn - 8);
  char *resp = response(head, z, zn - 8, &rn); /* gzip trailer cut off */
  step_t steps[] = {{.data = resp, .len = rn}};
  expect_error(steps, 1, KR_EDECODE, NULL);
  free(resp);
  free(z);
}

static void header_limit(void **state) {
  size_t big = 70 * 1024;
  char *r = malloc(big + 100);
  strcpy(r, "HTTP/1.1 200 OK\r\nX-Big: ");
  size_t n = strlen(r);
  memset(r + n, 'a', big);
  strcpy(r + n + big, "\r\nContent-Length: 0\r\n\r\n");
  step_t steps[] = {{.data = r, .piece = 4000}};
  expect_error(steps, 1, KR_EHEADER_TOO_BIG, NULL);
  /* Many small headers, all at once, just over a small limit. */
  kr_http_opts_t o;
  opts_default(&o);
  o.max_header_bytes = 1000;
  char *m = malloc(4000);
  strcpy(m, "HTTP/1.1 200 OK\r\n");
  while (strlen(m) < 1100) strcat(m, "X-A: b\r\n");
  strcat(m, "Content-Length: 0\r\n\r\n");
  step_t steps2[] = {{.data = m}};
  expect_error(steps2, 1, KR_EHEADER_TOO_BIG, &o);
  free(m);
  free(r);
}

static void body_limit_truncates_or_fails(void **state) {
  char body[5000];
  memset(body, 'b', sizeof body);
  size_t rn;
  char *resp = response("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", body, sizeof body, &rn);
  for (int as_error = 0; as_error < 2; as_error++) {
    tctx_t c;
    srv_t s;
    tf_t t;
    ctx_open(&c);
    c.opts.max_body_bytes = 1000;
    c.opts.body_limit_is_error = as_error;
    step_t steps[] = {{.data = resp, .len = rn, .piece = 700}};
    fetch_once(&c, &s, &t, steps, 1);
    if (as_error) {
      assert_int_equal(t.err, KR_EBODY_TOO_BIG);
    } else {
      assert_int_equal(t.err, 0);
      const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
      assert_int_equal(r->truncated, KR_HTTP_TRUNC_LENGTH);
      assert_int_equal(t.content.len, 1000);
      assert_int_equal(r->content_bytes, 1000);
      assert_int_equal(t.payload.len, 1000);
      /* The raw record ends where the payload was cut. */
      assert_int_equal(t.raw.len, rn - 4000);
    }
    assert_int_equal(stats(&c).pooled_idle, 0);
    tf_free(&t);
    ctx_close(&c, &s);
  }
  free(resp);
}

static void gzip_bomb_hits_ratio(void **state) {
  size_t n = 8u << 20, zn, rn;
  char *zeros = calloc(1, n);
  char *z = gz(zeros, n, 31, &zn);
  char head[128];
  snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n", zn);
  char *resp = response(head, z, zn, &rn);
  step_t steps[] = {{.data = resp, .len = rn}};
  expect_error(steps, 1, KR_ERATIO, NULL);
  free(resp);
  free(z);
  free(zeros);
}

/* ---- tests: timeouts --------------------------------------------------------------- */

static void first_byte_idle_total_timeouts(void **state) {
  kr_http_opts_t o;
  opts_default(&o);
  o.first_byte_timeout_ms = 150;
  o.idle_timeout_ms = 150;
  o.total_timeout_ms = 400;
  step_t ignore[] = {{.on_request = R_IGNORE}};
  expect_error(ignore, 1, KR_EFIRSTBYTE_TIMEOUT, &o);
  step_t stall[] = {{.data = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome", .then = T_STALL}};
  expect_error(stall, 1, KR_EIDLE_TIMEOUT, &o);
  step_t stall_head[] = {{.data = "HTTP/1.1 200 OK\r\nContent-", .then = T_STALL}};
  expect_error(stall_head, 1, KR_EIDLE_TIMEOUT, &o);
  /* A byte every 30 ms never idles out, but the total runs out. */
  static char trickle[2000];
  memset(trickle, 'x', sizeof trickle);
  memcpy(trickle, "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", 41);
  step_t slow[] = {{.data = trickle, .len = sizeof trickle, .piece = 1, .delay_ms = 30}};
  /* (first-byte and idle far above the total, so a starved machine that
   * leaves 150 ms between two of the bytes still meets the total first) */
  o.first_byte_timeout_ms = o.idle_timeout_ms = 10000;
  expect_error(slow, 1, KR_ETOTAL_TIMEOUT, &o);
}

/* A listener on 127.0.0.1 with a full accept queue: further SYNs are
 * dropped, so connecting hangs. fill[] keeps the queue full. */
static int blackhole(int fill[2], struct sockaddr_in *a) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  memset(a, 0, sizeof *a);
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(l, (struct sockaddr *)a, sizeof *a), 0);
  assert_int_equal(listen(l, 0), 0);
  socklen_t al = sizeof *a;
  getsockname(l, (struct sockaddr *)a, &al);
  for (int i = 0; i < 2; i++) {
    fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fill[i], (struct sockaddr *)a, sizeof *a);
  }
  return l;
}

static void connect_budget_per_address(void **state) {
  int fill[2];
  struct sockaddr_in a;
  int l = blackhole(fill, &a);
  int port = ntohs(a.sin_port);
  /* The live server on 127.0.0.2, same port. */
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK}};
  memset(&s, 0, sizeof s);
  s.loop = &c.loop;
  s.steps = steps;
  s.nsteps = 1;
  uv_tcp_init(&c.loop, &s.listener);
  s.listener.data = &s;
  struct sockaddr_in b;
  uv_ip4_addr("127.0.0.2", port, &b);
  assert_int_equal(uv_tcp_bind(&s.listener, (struct sockaddr *)&b, 0), 0);
  assert_int_equal(uv_listen((uv_stream_t *)&s.listener, 16, on_conn), 0);
  s.port = port;
  char spec[96];
  snprintf(spec, sizeof spec, "multi.test:%d:127.0.0.1,127.0.0.2", port);
  c.opts.resolve = spec;
  c.opts.connect_timeout_ms = 600;
  ctx_client(&c);
  set_url(&c, "http://multi.test:%d/", port);
  tf_init(&t, &c);
  uint64_t t0 = uv_hrtime();
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  uint64_t ms = (uv_hrtime() - t0) / 1000000;
  assert_int_equal(t.err, 0);
  assert_string_equal(kr_http_fetch_resp(t.f)->peer_ip, "127.0.0.2");
  /* The first address had half of the 600 ms. */
  assert_true(ms >= 290 && ms < 590);
  tf_free(&t);
  ctx_close(&c, &s);
  close(fill[0]);
  close(fill[1]);
  close(l);
}

static void connect_timeout(void **state) {
  int fill[2];
  struct sockaddr_in a;
  int l = blackhole(fill, &a);
  tctx_t c;
  tf_t t;
  ctx_open(&c);
  c.opts.connect_timeout_ms = 200;
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", ntohs(a.sin_port));
  tf_init(&t, &c);
  uint64_t t0 = uv_hrtime();
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  uint64_t ms = (uv_hrtime() - t0) / 1000000;
  assert_int_equal(t.err, KR_ECONNECT_TIMEOUT);
  assert_true(ms >= 190 && ms < 2000);
  tf_free(&t);
  ctx_close(&c, NULL);
  close(fill[0]);
  close(fill[1]);
  close(l);
}

typedef struct conn_probe {
  int done, status;
} conn_probe_t;

static void on_connect_probe(kr_conn_t *cn, int status) {
  conn_probe_t *p = cn->data;
  p->done = 1;
  p->status = status;
}

static void connect_refused_and_next_address(void **state) {
  /* A port nobody listens on: bind and close to find one. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bind(fd, (struct sockaddr *)&a, sizeof a);
  socklen_t al = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &al);
  close(fd);
  int dead = ntohs(a.sin_port);
  {
    tctx_t c;
    tf_t t;
    ctx_open(&c);
    ctx_client(&c);
    set_url(&c, "http://127.0.0.1:%d/", dead);
    tf_init(&t, &c);
    start(&c, &t);
    run_until(&c, &t.done, 5000);
    assert_int_equal(t.err, KR_ECONNREFUSED);
    tf_free(&t);
    ctx_close(&c, NULL);
  }
  /* Several addresses: the dead one first, then the live one. */
  tctx_t c;
  srv_t s;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 1);
  kr_conn_env_t env;
  kr_conn_env_init(&env, &c.loop, &c.clock);
  struct sockaddr_storage addrs[2];
  memset(addrs, 0, sizeof addrs);
  uv_ip4_addr("127.0.0.2", 0, (struct sockaddr_in *)&addrs[0]);
  uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in *)&addrs[1]);
  /* 127.0.0.2 has nothing on the server's port: refused, then the next. */
  conn_probe_t probe = {0, 1};
  static const kr_conn_cbs_t cbs = {.on_connect = on_connect_probe};
  kr_conn_t *conn;
  assert_int_equal(kr_conn_connect(&env, addrs, 2, s.port, &cbs, &probe, &conn), 0);
  run_until(&c, &probe.done, 5000);
  assert_int_equal(probe.status, 0);
  assert_int_equal(env.attempts, 2);
  assert_int_equal(env.opened, 1);
  char ip[64];
  int port;
  kr_conn_peer(conn, ip, sizeof ip, &port);
  assert_string_equal(ip, "127.0.0.1");
  assert_int_equal(port, s.port);
  kr_conn_close(conn);
  ctx_close(&c, &s);
  assert_int_equal(env.live, 0);
  kr_conn_env_free(&env);
}

/* ---- tests: abort, conditionals, methods, redirects -------------------------------------- */

static void abort_on_headers_closes_or_drains(void **state) {
  static char big[200000];
  memset(big, 'z', sizeof big);
  size_t bn, sn;
  char *bigresp = response("HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n", big, sizeof big, &bn);
  char *smallresp = response("HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n", big, 10000, &sn);
  struct { const char *data; size_t len; int accepts; } v[] = {
      {bigresp, bn, 2},    /* too much left: closed, next fetch reconnects */
      {smallresp, sn, 1},  /* small rest drained: the connection is reused */
  };
  for (int k = 0; k < 2; k++) {
    tctx_t c;
    srv_t s;
    tf_t t;
    ctx_open(&c);
    step_t steps[] = {{.data = v[k].data, .len = v[k].len, .piece = 3000}, {.data = BODY_OK}};
    srv_start(&s, &c.loop, steps, 2);
    ctx_client(&c);
    set_url(&c, "http://127.0.0.1:%d/", s.port);
    tf_init(&t, &c);
    t.abort_on_headers = 1;
    start(&c, &t);
    run_until(&c, &t.done, 5000);
    assert_int_equal(t.err, 0);
    const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
    assert_true(r->aborted);
    assert_int_equal(r->status, 200);
    assert_int_equal(t.content.len, 0);
    assert_int_equal(t.payload.len, 0);
    assert_int_equal(t.body_after_abort, 0);
    kr_http_fetch_release(t.f);
    t.f = NULL;
    /* A second fetch to see whether the connection was kept. */
    t.abort_on_headers = 0;
    t.done = 0;
    start(&c, &t);
    run_until(&c, &t.done, 5000);
    assert_int_equal(t.err, 0);
    assert_string_equal(t.content.data, "hello");
    assert_int_equal(s.accepts, v[k].accepts);
    tf_free(&t);
    ctx_close(&c, &s);
  }
  free(bigresp);
  free(smallresp);
}

static void abort_from_body_callback(void **state) {
  static char big[100000];
  memset(big, 'q', sizeof big);
  size_t bn;
  char *resp = response("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", big, sizeof big, &bn);
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = resp, .len = bn, .piece = 1000}};
  srv_start(&s, &c.loop, steps, 1);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  t.abort_on_content = 2500;
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  assert_true(kr_http_fetch_resp(t.f)->aborted);
  assert_true(t.content.len >= 2500 && t.content.len < 100000);
  tf_free(&t);
  ctx_close(&c, &s);
  free(resp);
}

static void conditional_request_and_304(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  c.req.if_none_match = "\"v1\"";
  c.req.if_modified_since = "Sat, 21 Nov 2026 10:00:00 GMT";
  const char *extra[] = {"X-Test: yes"};
  c.req.headers = extra;
  c.req.nheaders = 1;
  /* A 304 may state the representation's length: there is no body. */
  step_t steps[] = {{.data = "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 1234\r\n\r\n"},
                    {.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 2);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
  assert_int_equal(r->status, 304);
  assert_true(kr_slice_eq(r->etag, KR_SLICE_LIT("\"v1\"")));
  assert_int_equal(t.content.len, 0);
  assert_non_null(strstr(s.req[0], "\r\nIf-None-Match: \"v1\"\r\n"));
  assert_non_null(strstr(s.req[0], "\r\nIf-Modified-Since: Sat, 21 Nov 2026 10:00:00 GMT\r\n"));
  assert_non_null(strstr(s.req[0], "\r\nX-Test: yes\r\n"));
  /* The connection is reusable right away. */
  kr_http_fetch_release(t.f);
  t.done = 0;
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  assert_int_equal(s.accepts, 1);
  tf_free(&t);
  ctx_close(&c, &s);
}

static void head_and_204_have_no_body(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  c.req.method = KR_HTTP_HEAD;
  step_t steps[] = {{.data = "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nLast-Modified: Sat, 21 Nov 2026 10:00:00 GMT\r\n\r\n"},
                    {.data = "HTTP/1.1 204 No Content\r\n\r\n"}};
  srv_start(&s, &c.loop, steps, 2);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  t.chain = 1;
  start(&c, &t);
  run_chain(&c, &t);
  assert_int_equal(t.err, 0);
  assert_non_null(strstr(s.req[0], "HEAD / HTTP/1.1\r\n"));
  assert_int_equal(t.status, 204);
  assert_int_equal(s.accepts, 1);
  assert_int_equal(s.requests, 2);
  tf_free(&t);
  ctx_close(&c, &s);
}

/* A POST carries its body with Content-Type and Content-Length in the
 * one request write; a body type with CR/LF is refused at start. */
static void post_sends_body(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  c.req.method = KR_HTTP_POST;
  c.req.body = "hub.mode=subscribe&hub.topic=x";
  c.req.body_len = strlen(c.req.body);
  c.req.body_type = "application/x-www-form-urlencoded";
  step_t steps[] = {{.data = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"}};
  fetch_once(&c, &s, &t, steps, 1);
  assert_int_equal(t.err, 0);
  assert_int_equal(t.status, 202);
  assert_non_null(strstr(s.req[0], "POST /path?q=1 HTTP/1.1\r\n"));
  assert_non_null(strstr(s.req[0], "\r\nContent-Type: application/x-www-form-urlencoded\r\n"));
  assert_non_null(strstr(s.req[0], "\r\nContent-Length: 30\r\n"));
  kr_slice_t rq = kr_http_fetch_request(t.f);
  assert_true(rq.n > 34);
  assert_memory_equal(rq.p + rq.n - 34, "\r\n\r\nhub.mode=subscribe&hub.topic=x", 34);
  tf_free(&t);
  c.req.body_type = "text/plain\r\nX-Evil: 1";
  kr_http_fetch_t *f = NULL;
  assert_int_equal(kr_http_fetch_start(c.http, c.u, &c.req, &tf_cbs, &t, &f), KR_EINVAL);
  ctx_close(&c, &s);
}

static void redirect_is_reported_not_followed(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = "HTTP/1.1 301 Moved Permanently\r\nLocation: /new\r\nContent-Length: 3\r\n\r\nbye"}};
  fetch_once(&c, &s, &t, steps, 1);
  assert_int_equal(t.err, 0);
  const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
  assert_int_equal(r->status, 301);
  assert_true(kr_slice_eq(r->location, KR_SLICE_LIT("/new")));
  assert_int_equal(s.requests, 1);
  tf_free(&t);
  ctx_close(&c, &s);
}

static void cancel_and_bad_requests(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.on_request = R_IGNORE}};
  srv_start(&s, &c.loop, steps, 1);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  kr_http_fetch_cancel(t.f);
  assert_int_equal(t.done, 0); /* never called from inside a kria call */
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, KR_ECANCELED);
  tf_free(&t);
  /* Refused synchronously, with no callback. */
  kr_http_fetch_t *f;
  kr_url_t *u;
  assert_int_equal(kr_url_parse("ftp://127.0.0.1/", 16, NULL, &u), 0);
  assert_int_equal(kr_http_fetch_start(c.http, u, NULL, &tf_cbs, &t, &f), KR_ESCHEME);
  kr_url_free(u);
  kr_http_req_t bad = {.if_none_match = "\"x\"\r\nInjected: 1"};
  assert_int_equal(kr_http_fetch_start(c.http, c.u, &bad, &tf_cbs, &t, &f), KR_EINVAL);
  const char *badh[] = {"No colon here"};
  kr_http_req_t bad2 = {.headers = badh, .nheaders = 1};
  assert_int_equal(kr_http_fetch_start(c.http, c.u, &bad2, &tf_cbs, &t, &f), KR_EINVAL);
  ctx_close(&c, &s);
}

static void client_close_cancels_running_fetches(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t[3];
  ctx_open(&c);
  step_t steps[] = {{.on_request = R_IGNORE}, {.on_request = R_IGNORE}, {.on_request = R_IGNORE}};
  srv_start(&s, &c.loop, steps, 3);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  for (int i = 0; i < 3; i++) {
    tf_init(&t[i], &c);
    start(&c, &t[i]);
  }
  while (s.requests < 3) uv_run(&c.loop, UV_RUN_ONCE);
  kr_http_client_close(c.http);
  c.http = NULL;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(t[i].done, 1);
    assert_int_equal(t[i].err, KR_ECANCELED);
    t[i].f = NULL; /* released by the close */
    tf_free(&t[i]);
  }
  ctx_close(&c, &s);
}

static void ipv6_loopback(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK}};
  srv_start6(&s, &c.loop, steps, 1, 1);
  ctx_client(&c);
  set_url(&c, "http://[::1]:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  assert_string_equal(kr_http_fetch_resp(t.f)->peer_ip, "::1");
  char host[64];
  snprintf(host, sizeof host, "\r\nHost: [::1]:%d\r\n", s.port);
  assert_non_null(strstr(s.req[0], host));
  tf_free(&t);
  ctx_close(&c, &s);
}

/* The address policy is applied to the addresses about to be connected
 * to: a refused literal never reaches the server, a host with allowed and
 * refused addresses connects to the allowed ones only, the deny list wins
 * over allow-private, and a bad list is a configuration error. */
static void address_policy(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  kr_http_opts_default(&c.opts); /* the default: loopback refused */
  step_t steps[] = {{.data = BODY_OK}, {.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 2);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, KR_EADDR_REFUSED);
  assert_non_null(strstr(kr_http_fetch_errmsg(t.f), "loopback"));
  assert_int_equal(kr_http_fetch_resp(t.f)->status, 0);
  tf_free(&t);
  /* The same through a name whose addresses are all refused. */
  kr_http_client_close(c.http);
  c.http = NULL;
  for (int i = 0; i < 10; i++) uv_run(&c.loop, UV_RUN_NOWAIT);
  char spec[160];
  snprintf(spec, sizeof spec, "meta.test:%d:169.254.169.254,::ffff:127.0.0.2;"
           "mixed.test:%d:169.254.169.254,[fe80::1],127.0.0.1", s.port, s.port);
  c.opts.resolve = spec;
  c.opts.allow_addresses = "10.0.0.0/8, 127.0.0.1";
  ctx_client(&c);
  set_url(&c, "http://meta.test:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, KR_EADDR_REFUSED);
  assert_non_null(strstr(kr_http_fetch_errmsg(t.f), "meta.test resolves to 169.254.169.254"));
  assert_non_null(strstr(kr_http_fetch_errmsg(t.f), "link-local"));
  tf_free(&t);
  assert_int_equal(s.accepts, 0);
  assert_int_equal(stats(&c).conns_opened, 0);
  /* Allowed and refused addresses: only the allowed one is tried (the
   * link-local ones would black-hole the connect). */
  set_url(&c, "http://mixed.test:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  assert_int_equal(kr_http_fetch_resp(t.f)->status, 200);
  assert_string_equal(kr_http_fetch_resp(t.f)->peer_ip, "127.0.0.1");
  tf_free(&t);
  assert_int_equal(s.accepts, 1);
  assert_int_equal(stats(&c).addrs_refused, 2 + 2);
  ctx_close(&c, &s);

  /* allow-private with a deny list: the deny list wins. */
  ctx_open(&c);
  c.opts.deny_addresses = "127.0.0.0/8";
  srv_start(&s, &c.loop, steps, 1);
  ctx_client(&c);
  set_url(&c, "http://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, KR_EADDR_REFUSED);
  assert_non_null(strstr(kr_http_fetch_errmsg(t.f), "deny-addresses 127.0.0.0/8"));
  tf_free(&t);
  assert_int_equal(s.accepts, 0);
  ctx_close(&c, &s);

  /* Bad lists: the client is not made. */
  uv_loop_t loop;
  kr_clock_t clk;
  uv_loop_init(&loop);
  kr_clock_init_real(&clk);
  kr_http_client_t *bad;
  kr_http_opts_t o;
  kr_http_opts_default(&o);
  o.allow_addresses = "10.0.0.1/8";
  assert_int_equal(kr_http_client_new(&loop, &clk, NULL, &o, &bad), KR_ECONFIG);
  o.allow_addresses = NULL;
  o.deny_addresses = "fe80::1%eth0";
  assert_int_equal(kr_http_client_new(&loop, &clk, NULL, &o, &bad), KR_ECONFIG);
  assert_int_equal(uv_loop_close(&loop), 0);
  (void)state;
}

static void resolve_override(void **state) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 1);
  char spec[128];
  snprintf(spec, sizeof spec, "other.test:1:127.0.0.9 ;www.example.test:%d:127.0.0.1", s.port);
  c.opts.resolve = spec;
  ctx_client(&c); /* no resolver at all: the override must be used */
  set_url(&c, "http://www.example.test:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, 0);
  char host[80];
  snprintf(host, sizeof host, "\r\nHost: www.example.test:%d\r\n", s.port);
  assert_non_null(strstr(s.req[0], host));
  tf_free(&t);
  /* No override and no resolver: a DNS error for the fetch. */
  set_url(&c, "http://unknown.test:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, KR_EDNS_FAIL);
  tf_free(&t);
  ctx_close(&c, &s);
  kr_http_client_t *bad;
  kr_http_opts_t o;
  opts_default(&o);
  o.resolve = "nocolon";
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_clock_t clk;
  kr_clock_init_real(&clk);
  assert_int_equal(kr_http_client_new(&loop, &clk, NULL, &o, &bad), KR_ECONFIG);
  o.resolve = "h:80:not-an-ip";
  assert_int_equal(kr_http_client_new(&loop, &clk, NULL, &o, &bad), KR_ECONFIG);
  o.resolve = "h:80:127.0.0.1,";
  assert_int_equal(kr_http_client_new(&loop, &clk, NULL, &o, &bad), KR_ECONFIG);
  o.resolve = "h:0:127.0.0.1";
  assert_int_equal(kr_http_client_new(&loop, &clk, NULL, &o, &bad), KR_ECONFIG);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- tests: DNS through the resolver -------------------------------------------------- */

typedef struct udp_dns {
  uv_udp_t udp;
  int port;
  int nxdomain; /* 1: answer NXDOMAIN; 0: never answer */
  int queries;
} udp_dns_t;

static void dns_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
  static char buf[1500];
  b->base = buf;
  b->len = sizeof buf;
}

static void dns_sent(uv_udp_send_t *req, int status) {
  free(req->data);
  free(req);
}

static void dns_recv(uv_udp_t *u, ssize_t n, const uv_buf_t *b, const struct sockaddr *from,
                     unsigned flags) {
  udp_dns_t *d = u->data;
  if (n < 12 || !from) return;
  d->queries++;
  if (!d->nxdomain) return;
  char *ans = malloc((size_t)n);
  memcpy(ans, b->base, (size_t)n);
  ans[2] = (char)(0x80 | (ans[2] & 0x79)); /* QR=1, keep opcode and RD */
  ans[3] = (char)0x83;                     /* RA=1, RCODE=3 NXDOMAIN */
  memset(ans + 6, 0, 6);                   /* no answers */
  uv_udp_send_t *req = malloc(sizeof *req);
  req->data = ans;
  uv_buf_t out = uv_buf_init(ans, (unsigned)n);
  uv_udp_send(req, u, &out, 1, from, dns_sent);
}

static void dns_errors_reach_the_fetch(void **state) {
  for (int nx = 1; nx >= 0; nx--) {
    tctx_t c;
    tf_t t;
    ctx_open(&c);
    udp_dns_t d = {.nxdomain = nx};
    uv_udp_init(&c.loop, &d.udp);
    d.udp.data = &d;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_udp_bind(&d.udp, (struct sockaddr *)&a, 0);
    int len = sizeof a;
    uv_udp_getsockname(&d.udp, (struct sockaddr *)&a, &len);
    d.port = ntohs(a.sin_port);
    uv_udp_recv_start(&d.udp, dns_alloc, dns_recv);
    kr_dns_opts_t dopts;
    kr_dns_opts_default(&dopts);
    char servers[64];
    snprintf(servers, sizeof servers, "127.0.0.1:%d", d.port);
    dopts.servers = servers;
    dopts.use_hosts_file = 0;
    dopts.timeout_ms = 100;
    dopts.tries = 1;
    kr_dns_t *dns;
    assert_int_equal(kr_dns_new(&c.loop, &c.clock, &dopts, &dns), 0);
    assert_int_equal(kr_http_client_new(&c.loop, &c.clock, dns, &c.opts, &c.http), 0);
    set_url(&c, "http://nowhere.test/");
    tf_init(&t, &c);
    start(&c, &t);
    run_until(&c, &t.done, 5000);
    assert_int_equal(t.err, nx ? KR_EDNS_NXDOMAIN : KR_EDNS_TIMEOUT);
    assert_true(d.queries >= 1);
    tf_free(&t);
    kr_http_client_close(c.http);
    c.http = NULL;
    kr_dns_free(dns);
    uv_close((uv_handle_t *)&d.udp, NULL);
    ctx_close(&c, NULL);
  }
}

/* ---- tests: TLS ------------------------------------------------------------------------ */

static void tls_fetch(int verify, const char *ca, const char *host, int want_err,
                      long *verify_result, int chain_reconnect, int *resumed) {
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  c.opts.tls_verify = verify;
  c.opts.ca_file = ca;
  step_t steps[] = {
      {.data = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello", .piece = 10},
      {.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 2);
  s.tls = server_ctx();
  char spec[64];
  snprintf(spec, sizeof spec, "localhost:%d:127.0.0.1", s.port);
  c.opts.resolve = spec;
  ctx_client(&c);
  set_url(&c, "https://%s:%d/", host, s.port);
  tf_init(&t, &c);
  t.chain = chain_reconnect;
  start(&c, &t);
  run_chain(&c, &t);
  assert_int_equal(t.err, want_err);
  if (!want_err) {
    const kr_http_resp_t *r = kr_http_fetch_resp(t.f);
    assert_string_equal(t.content.data, "hello");
    assert_true(r->tls.used);
    assert_string_equal(r->tls.alpn, "http/1.1");
    assert_true(r->tls.version[0] == 'T');
    assert_true(r->timing.tls_us > 0 || r->tls.resumed);
    if (verify_result) *verify_result = r->tls.verify_result;
    if (resumed) *resumed = r->tls.resumed;
    assert_int_equal(r->tls.verify_checked, verify != KR_TLS_VERIFY_OFF);
  } else {
    assert_true(kr_http_fetch_errmsg(t.f)[0] != '\0');
  }
  tf_free(&t);
  ctx_close(&c, &s);
}

static void tls_verify_modes(void **state) {
  long vr = -1;
  make_cert();
  /* record: a self-signed certificate is fetched, the failure recorded. */
  tls_fetch(KR_TLS_VERIFY_RECORD, NULL, "127.0.0.1", 0, &vr, 0, NULL);
  assert_int_equal(vr, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT);
  /* require: the same certificate fails the fetch. */
  tls_fetch(KR_TLS_VERIFY_REQUIRE, NULL, "127.0.0.1", KR_ETLS_VERIFY, NULL, 0, NULL);
  /* require with the certificate trusted: fine, by IP and by name (SNI). */
  vr = -1;
  tls_fetch(KR_TLS_VERIFY_REQUIRE, ca_path, "127.0.0.1", 0, &vr, 0, NULL);
  assert_int_equal(vr, X509_V_OK);
  vr = -1;
  tls_fetch(KR_TLS_VERIFY_RECORD, ca_path, "localhost", 0, &vr, 0, NULL);
  assert_int_equal(vr, X509_V_OK);
  /* off: not checked. */
  tls_fetch(KR_TLS_VERIFY_OFF, NULL, "localhost", 0, NULL, 0, NULL);
}

static void tls_session_resumption(void **state) {
  int resumed = 0;
  /* The first response closes the connection; the second fetch makes a
   * new one and resumes the session. */
  tls_fetch(KR_TLS_VERIFY_RECORD, ca_path, "localhost", 0, NULL, 1, &resumed);
  assert_int_equal(resumed, 1);
}

/* One fetch of c->u on a connection of its own (each response closes
 * it): 1 when its handshake resumed a session, 0 when it was full, -1
 * when the fetch failed (with want_err). */
static int tls_visit(tctx_t *c, int want_err) {
  tf_t t;
  tf_init(&t, c);
  start(c, &t);
  run_until(c, &t.done, 5000);
  assert_int_equal(t.err, want_err);
  int resumed = want_err ? -1 : kr_http_fetch_resp(t.f)->tls.resumed;
  tf_free(&t);
  return resumed;
}

#define BODY_CLOSE "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello"

/* Revisits days apart resume as long as the server's lifetime says, on
 * the crawl's clock: a TLS 1.3 ticket (lifetime 1 h here) and a TLS 1.2
 * session ID (no lifetime given: a day). Counted as /metrics shows them. */
static void tls_resumption_across_revisits(void **state) {
  for (int tls12 = 0; tls12 <= 1; tls12++) {
    tctx_t c;
    srv_t s;
    ctx_open(&c);
    kr_clock_init_virtual(&c.clock, 1798500000000ull);
    c.opts.ca_file = ca_path;
    step_t steps[] = {{.data = BODY_CLOSE}, {.data = BODY_CLOSE}, {.data = BODY_CLOSE},
                      {.data = BODY_CLOSE}};
    srv_start(&s, &c.loop, steps, 4);
    s.tls = server_ctx();
    SSL_CTX_set_timeout(s.tls, 3600); /* a TLS 1.3 ticket's lifetime hint */
    if (tls12) {
      SSL_CTX_set_max_proto_version(s.tls, TLS1_2_VERSION);
      SSL_CTX_set_options(s.tls, SSL_OP_NO_TICKET); /* session IDs only */
    }
    uint64_t life_ms = tls12 ? 24 * 3600 * 1000ull : 3600 * 1000ull;
    char spec[64];
    snprintf(spec, sizeof spec, "localhost:%d:127.0.0.1", s.port);
    c.opts.resolve = spec;
    ctx_client(&c);
    set_url(&c, "https://localhost:%d/", s.port);
    assert_int_equal(tls_visit(&c, 0), 0);
    assert_int_equal(stats(&c).tls.sessions, 1);
    assert_true(stats(&c).tls.session_bytes > 0);
    print_message("kept %s session (P-256 leaf): %llu bytes\n", tls12 ? "TLS 1.2" : "TLS 1.3",
                  (unsigned long long)stats(&c).tls.session_bytes);
    kr_clock_advance(&c.clock, life_ms - 1000); /* within the lifetime */
    assert_int_equal(tls_visit(&c, 0), 1);
    kr_clock_advance(&c.clock, life_ms + 1000); /* past it: not offered */
    assert_int_equal(tls_visit(&c, 0), 0);
    assert_int_equal(stats(&c).tls.sessions_expired, 1);
    assert_int_equal(tls_visit(&c, 0), 1); /* the fresh one is */
    kr_http_stats_t st = stats(&c);
    assert_int_equal(st.tls.handshakes, 4);
    assert_int_equal(st.tls.resumed, 2);
    assert_int_equal(st.tls.offered, 2);
    assert_int_equal(st.tls.sessions, 1);
    assert_int_equal(s.accepts, 4);
    ctx_close(&c, &s);
  }
}

/* http.tls-sessions = 0: nothing kept, every connection a full handshake. */
static void tls_no_session_cache(void **state) {
  tctx_t c;
  srv_t s;
  ctx_open(&c);
  c.opts.tls_sessions = 0;
  step_t steps[] = {{.data = BODY_CLOSE}, {.data = BODY_CLOSE}};
  srv_start(&s, &c.loop, steps, 2);
  s.tls = server_ctx();
  ctx_client(&c);
  set_url(&c, "https://127.0.0.1:%d/", s.port);
  assert_int_equal(tls_visit(&c, 0), 0);
  assert_int_equal(tls_visit(&c, 0), 0);
  kr_http_stats_t st = stats(&c);
  assert_int_equal(st.tls.handshakes, 2);
  assert_int_equal(st.tls.sessions, 0);
  assert_int_equal(st.tls.offered, 0);
  ctx_close(&c, &s);
}

/* A handshake that offered a kept session and failed drops it: the next
 * connection to that host starts afresh. */
static void tls_failed_resumption_drops_session(void **state) {
  tctx_t c;
  srv_t s;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_CLOSE}};
  srv_start(&s, &c.loop, steps, 1);
  s.tls = server_ctx();
  ctx_client(&c);
  set_url(&c, "https://127.0.0.1:%d/", s.port);
  assert_int_equal(tls_visit(&c, 0), 0);
  assert_int_equal(stats(&c).tls.sessions, 1);
  /* the same address now answers the ClientHello with plain HTTP */
  SSL_CTX *tls = s.tls;
  s.tls = NULL;
  tf_t t;
  tf_init(&t, &c);
  start(&c, &t);
  while (s.accepts < 2) uv_run(&c.loop, UV_RUN_ONCE);
  for (sconn_t *sc = s.conns; sc; sc = sc->next)
    if (!sc->ssl && !sc->closing) {
      sconn_send(sc, "HTTP/1.1 400 Bad\r\n\r\n", 20);
      sc->after_writes = T_CLOSE;
    }
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, KR_ETLS);
  tf_free(&t);
  assert_int_equal(stats(&c).tls.offered, 1);
  assert_int_equal(stats(&c).tls.sessions, 0);
  s.tls = tls;
  ctx_close(&c, &s);
}

/* A resumed handshake checks no certificate: a session kept from a
 * connection whose certificate failed (recorded) is not offered to a
 * fetch that requires verification, which then fails as it should. */
static void tls_unverified_session_not_resumed_under_require(void **state) {
  tctx_t c;
  srv_t s;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_CLOSE}, {.data = BODY_CLOSE}};
  srv_start(&s, &c.loop, steps, 2);
  s.tls = server_ctx(); /* self-signed, not trusted: verification fails */
  ctx_client(&c);
  set_url(&c, "https://127.0.0.1:%d/", s.port);
  assert_int_equal(tls_visit(&c, 0), 0);
  assert_int_equal(stats(&c).tls.sessions, 1);
  kr_http_opts_t req_opts = c.opts;
  req_opts.tls_verify = KR_TLS_VERIFY_REQUIRE;
  c.req.opts = &req_opts;
  assert_int_equal(tls_visit(&c, KR_ETLS_VERIFY), -1);
  assert_int_equal(stats(&c).tls.offered, 0);
  ctx_close(&c, &s);
}

/* An idle pooled TLS connection gives back its record buffers (~17 KiB
 * each way, SSL_free_buffers) and keeps nothing a large response grew
 * (memory BIOs once grew to ~88 KiB here): with one idle connection per
 * host for thousands of HTTPS hosts (http.idle-connections) they were
 * hundreds of MiB. Measured as the heap 8 idle connections give back when
 * the pool expires them, the server's side kept: 140 KiB each with
 * neither, 35 KiB with both (OpenSSL 3.0, Debian 12). */
static void idle_tls_connection_keeps_no_buffers(void **state) {
  enum { N = 8 };
  tctx_t c;
  srv_t s;
  ctx_open(&c);
  c.opts.tls_verify = KR_TLS_VERIFY_OFF;
  /* long enough that the reuse below finds them under load (four suites
   * at once on two cores took over 100 ms), short enough to wait out */
  c.opts.pool_idle_ms = 2000;
  /* a 256 KiB body: the socket reads fill the connection's read BIO */
  enum { BODY = 256 * 1024 };
  char *resp = malloc(128 + BODY);
  assert_non_null(resp);
  int hl = snprintf(resp, 128, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", BODY);
  memset(resp + hl, 'x', BODY);
  resp[hl + BODY] = 0;
  step_t steps[N + 1];
  for (int i = 0; i <= N; i++) steps[i] = (step_t){.data = resp, .len = (size_t)hl + BODY};
  srv_start(&s, &c.loop, steps, N + 1);
  s.tls = server_ctx();
  ctx_client(&c);
  set_url(&c, "https://127.0.0.1:%d/", s.port);
  tf_t t[N];
  for (int i = 0; i < N; i++) {
    tf_init(&t[i], &c);
    start(&c, &t[i]);
  }
  for (int i = 0; i < N; i++) run_until(&c, &t[i].done, 5000);
  for (int i = 0; i < N; i++) assert_int_equal(t[i].err, 0);
  assert_int_equal(s.accepts, N);
  assert_int_equal(stats(&c).pooled_idle, N);
  /* an idle connection with its new BIOs is reused as before */
  tf_t again;
  tf_init(&again, &c);
  start(&c, &again);
  run_until(&c, &again.done, 5000);
  assert_int_equal(again.err, 0);
  assert_int_equal(again.content.len, BODY);
  assert_int_equal(s.accepts, N);
  assert_int_equal(stats(&c).conns_reused, 1);
  assert_int_equal(stats(&c).pooled_idle, N);
  tf_free(&again);
  /* the server's side (same process) must not free its own meanwhile */
  for (sconn_t *sc = s.conns; sc; sc = sc->next) uv_read_stop((uv_stream_t *)&sc->tcp);
  size_t pooled = mallinfo2().uordblks;
  c.guard_fired = 0;
  uv_timer_start(&c.guard, guard_cb, 20000, 0);
  while (stats(&c).pooled_idle > 0 && !c.guard_fired) uv_run(&c.loop, UV_RUN_ONCE);
  uv_timer_stop(&c.guard);
  assert_int_equal(stats(&c).pooled_idle, 0);
  for (int i = 0; i < 4; i++) uv_run(&c.loop, UV_RUN_NOWAIT); /* close callbacks */
  assert_int_equal(s.closed, 0);
  size_t freed = mallinfo2().uordblks;
  size_t per_conn = pooled > freed ? (pooled - freed) / N : 0;
  print_message("idle TLS connection: %zu bytes\n", per_conn);
  assert_true(per_conn < 44 * 1024);
  for (int i = 0; i < N; i++) tf_free(&t[i]);
  ctx_close(&c, &s);
  free(resp);
}

/* A body of many records, of odd sizes, arriving in socket reads that
 * split records anywhere: OpenSSL takes the ciphertext straight from the
 * read buffer, keeps partial records, and every byte comes out in order.
 * The bytes copied around the cipher are each ciphertext byte once into
 * OpenSSL's record buffer and each plaintext byte once out of it (memory
 * BIOs copied the ciphertext twice more). */
static void tls_large_body_in_many_records(void **state) {
  enum { BODY = 1 << 20 };
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  c.opts.tls_verify = KR_TLS_VERIFY_OFF;
  char *resp = malloc(128 + BODY);
  assert_non_null(resp);
  int hl = snprintf(resp, 128, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", BODY);
  for (size_t i = 0; i < BODY; i++) resp[hl + i] = (char)('a' + (i * 7 + i / 251) % 26);
  step_t steps[] = {{.data = resp, .len = (size_t)hl + BODY, .piece = 3001}};
  srv_start(&s, &c.loop, steps, 1);
  s.tls = server_ctx();
  ctx_client(&c);
  set_url(&c, "https://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 20000);
  assert_int_equal(t.err, 0);
  assert_int_equal(t.content.len, BODY);
  assert_memory_equal(t.content.data, resp + hl, BODY);
  kr_http_stats_t st = stats(&c);
  assert_int_equal(st.tls.handshakes, 1);
  /* plaintext + ciphertext (+ 22 bytes a record of 3,001, the handshake) */
  assert_true(st.tls.copied >= 2 * (uint64_t)BODY);
  assert_true(st.tls.copied < 2 * (uint64_t)BODY + BODY / 20);
  tf_free(&t);
  ctx_close(&c, &s);
  free(resp);
}

/* A body that ends with the connection, closed with close_notify or
 * without it (SSL_OP_IGNORE_UNEXPECTED_EOF: HTTP framing decides). */
static void tls_body_to_close(int close_notify) {
  enum { BODY = 100000 };
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  c.opts.tls_verify = KR_TLS_VERIFY_OFF;
  char *resp = malloc(128 + BODY);
  assert_non_null(resp);
  int hl = snprintf(resp, 128, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
  for (size_t i = 0; i < BODY; i++) resp[hl + i] = (char)('0' + i % 10);
  step_t steps[] = {{.data = resp, .len = (size_t)hl + BODY, .piece = 7000, .then = T_CLOSE}};
  srv_start(&s, &c.loop, steps, 1);
  s.tls = server_ctx();
  s.close_notify = close_notify;
  ctx_client(&c);
  set_url(&c, "https://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  run_until(&c, &t.done, 10000);
  assert_int_equal(t.err, 0);
  assert_int_equal(t.content.len, BODY);
  assert_memory_equal(t.content.data, resp + hl, BODY);
  tf_free(&t);
  ctx_close(&c, &s);
  free(resp);
}

static void tls_close_without_close_notify(void **state) { tls_body_to_close(0); }
static void tls_close_with_close_notify(void **state) { tls_body_to_close(1); }

static void tls_handshake_failure(void **state) {
  /* A plain HTTP server answering a ClientHello with an HTTP response. */
  tctx_t c;
  srv_t s;
  tf_t t;
  ctx_open(&c);
  step_t steps[] = {{.data = BODY_OK}};
  srv_start(&s, &c.loop, steps, 1);
  ctx_client(&c);
  set_url(&c, "https://127.0.0.1:%d/", s.port);
  tf_init(&t, &c);
  start(&c, &t);
  /* A ClientHello has no "\r\n\r\n", so the script never answers it:
   * once the connection is in, answer with plain HTTP and close. */
  while (s.accepts < 1) uv_run(&c.loop, UV_RUN_ONCE);
  for (sconn_t *sc = s.conns; sc; sc = sc->next) {
    sconn_send(sc, "HTTP/1.1 400 Bad\r\n\r\n", 20);
    sc->after_writes = T_CLOSE;
  }
  run_until(&c, &t.done, 5000);
  assert_int_equal(t.err, KR_ETLS);
  tf_free(&t);
  ctx_close(&c, &s);
}

static int teardown_all(void **state) {
  drop_cert();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(content_length_body),
      cmocka_unit_test(chunked_body_in_pieces),
      cmocka_unit_test(gzip_and_deflate_bodies),
      cmocka_unit_test(unknown_coding_passes_through),
      cmocka_unit_test(body_until_close),
      cmocka_unit_test(read_budget_defers_reads),
      cmocka_unit_test(deferred_socket_waits_for_the_turn),
      cmocka_unit_test(interim_1xx_is_skipped),
      cmocka_unit_test(keep_alive_reuses_one_connection),
      cmocka_unit_test(stale_pooled_connection_is_retried),
      cmocka_unit_test(no_retry_once_response_bytes_arrived),
      cmocka_unit_test(not_reused_after_close_or_extra_bytes),
      cmocka_unit_test(pool_limits_and_expiry),
      cmocka_unit_test(per_fetch_options),
      cmocka_unit_test(pool_global_cap_evicts_oldest),
      cmocka_unit_test(malformed_responses),
      cmocka_unit_test(gzip_truncated_inside_complete_body),
      cmocka_unit_test(header_limit),
      cmocka_unit_test(body_limit_truncates_or_fails),
      cmocka_unit_test(gzip_bomb_hits_ratio),
      cmocka_unit_test(first_byte_idle_total_timeouts),
      cmocka_unit_test(connect_timeout),
      cmocka_unit_test(connect_budget_per_address),
      cmocka_unit_test(connect_refused_and_next_address),
      cmocka_unit_test(abort_on_headers_closes_or_drains),
      cmocka_unit_test(abort_from_body_callback),
      cmocka_unit_test(conditional_request_and_304),
      cmocka_unit_test(head_and_204_have_no_body), cmocka_unit_test(post_sends_body),
      cmocka_unit_test(redirect_is_reported_not_followed),
      cmocka_unit_test(cancel_and_bad_requests),
      cmocka_unit_test(client_close_cancels_running_fetches),
      cmocka_unit_test(ipv6_loopback),
      cmocka_unit_test(resolve_override),
      cmocka_unit_test(address_policy),
      cmocka_unit_test(dns_errors_reach_the_fetch),
      cmocka_unit_test(tls_verify_modes),
      cmocka_unit_test(tls_session_resumption),
      cmocka_unit_test(tls_resumption_across_revisits),
      cmocka_unit_test(tls_unverified_session_not_resumed_under_require),
      cmocka_unit_test(tls_no_session_cache),
      cmocka_unit_test(tls_failed_resumption_drops_session),
      cmocka_unit_test(tls_handshake_failure),
      cmocka_unit_test(idle_tls_connection_keeps_no_buffers),
      cmocka_unit_test(tls_large_body_in_many_records),
      cmocka_unit_test(tls_close_without_close_notify),
      cmocka_unit_test(tls_close_with_close_notify),
  };
  return cmocka_run_group_tests(tests, NULL, teardown_all);
}
