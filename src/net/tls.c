/*
 * TLS over the connection's own BIO (see tls.h). Sections: the client
 * context and its session cache (tlscache.h: host:port → the newest
 * session, filled from OpenSSL's new-session callback, which also sees
 * the TLS 1.3 tickets that arrive after the handshake, and on a resumed
 * connection the fresh ones that replace the ticket used); the BIO; the
 * filter: handshake, reading application data into the loop-wide
 * plaintext buffer, writing; info for responses; certificates for the
 * archive.
 *
 * The BIO is the filter's view of the socket without touching it: reads
 * take the ciphertext of the socket read being handled straight from the
 * loop's read buffer, writes go straight down to the socket filter. A pair
 * of memory BIOs cost two more copies of every byte, a buffer that grows
 * with each burst of records, and the calls to move bytes between them.
 * Alerts, key updates and handshake messages OpenSSL writes at any SSL
 * call go down at once; a failure to send is kept and reported by the
 * call that caused it.
 */
#include "tls.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "tlscache.h"

struct kr_tls_ctx {
  SSL_CTX *ssl_ctx;
  int verify;
  kr_tls_cache_t *cache;
  kr_clock_t *clock;     /* NULL: the wall clock */
  kr_tls_stats_t stats;
};

typedef struct tls_cf {
  kr_cf_t cf;            /* first: the conn sees a kr_cf_t */
  kr_tls_ctx_t *ctx;
  int verify;            /* enum kr_tls_verify of this connection */
  SSL *ssl;
  const char *in;        /* ciphertext of the socket read being handled */
  size_t in_len;         /* of it not yet taken by OpenSSL */
  int send_err;          /* the first failure to send down, or 0 */
  char *key;             /* "host:port" for the session cache */
  int handshaking;
  int failed;            /* a TLS error: the session must not be resumed */
  int offered;           /* the handshake offered a kept session */
  kr_tls_info_t info;    /* filled when the handshake ends */
} tls_cf_t;

static int ex_index = -1; /* SSL ex_data slot for the filter; set once */

/* ---- context and session cache ----------------------------------------- */

static uint64_t now_ms(const kr_tls_ctx_t *t) {
  return t->clock ? kr_clock_now_ms(t->clock) : (uint64_t)time(NULL) * 1000u;
}

/* A session (TLS 1.2: at the handshake's end; TLS 1.3: each ticket, after
 * it) replaces the host's older one. Returning 0 leaves OpenSSL's
 * reference with OpenSSL: the cache keeps an encoded copy. */
static int new_session_cb(SSL *ssl, SSL_SESSION *sess) {
  tls_cf_t *tc = SSL_get_ex_data(ssl, ex_index);
  if (!tc || !tc->ctx->cache) return 0;
  int verified = tc->verify != KR_TLS_VERIFY_OFF && SSL_get_verify_result(ssl) == X509_V_OK;
  if (kr_tls_cache_put(tc->ctx->cache, tc->key, sess, verified, now_ms(tc->ctx)))
    tc->ctx->stats.sessions_cached++;
  return 0;
}

/* 1 when dir holds a CA certificate under its subject hash ("5ad8a5d6.0",
 * as c_rehash and update-ca-certificates name them). */
static int hashed_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d)) != NULL) {
    const char *n = e->d_name;
    size_t i = 0;
    while (i < 8 && strchr("0123456789abcdef", n[i]) && n[i]) i++;
    found = i == 8 && n[8] == '.' && n[9] >= '0' && n[9] <= '9';
  }
  closedir(d);
  return found;
}

/* The system's trusted CAs. OpenSSL's default parses the whole bundle
 * file (about 140 certificates, ~19 ms) in every process that makes an
 * HTTPS connection, also `kria fetch` of one URL. Where the default
 * directory is hashed (Debian's update-ca-certificates keeps it and the
 * bundle from the same certificates) it alone is used: a certificate is
 * read from it when a verification asks for its subject. SSL_CERT_FILE,
 * when set, is loaded as OpenSSL would; elsewhere the default paths. */
static void load_system_cas(SSL_CTX *sc) {
  const char *dir = getenv(X509_get_default_cert_dir_env());
  if (!dir) dir = X509_get_default_cert_dir();
  const char *file = getenv(X509_get_default_cert_file_env());
  if (!strchr(dir, ':') && hashed_dir(dir) && SSL_CTX_load_verify_locations(sc, NULL, dir)) {
    if (file) SSL_CTX_load_verify_locations(sc, file, NULL);
    ERR_clear_error();
    return;
  }
  SSL_CTX_set_default_verify_paths(sc);
  ERR_clear_error();
}

int kr_tls_ctx_new(const kr_tls_opts_t *opts, kr_tls_ctx_t **out) {
  kr_tls_opts_t def = {0};
  if (!opts) opts = &def;
  if (ex_index < 0) ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
  SSL_CTX *sc = SSL_CTX_new(TLS_client_method());
  if (!sc) return KR_ETLS;
  load_system_cas(sc);
  if (opts->ca_file && !SSL_CTX_load_verify_locations(sc, opts->ca_file, NULL)) {
    ERR_clear_error();
    SSL_CTX_free(sc);
    return KR_ECONFIG;
  }
  /* A peer closing TCP without close_notify ends the stream; HTTP framing
   * decides whether the body was complete. */
  SSL_CTX_set_options(sc, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
  /* No SSL_MODE_RELEASE_BUFFERS: it frees and allocates a record buffer
   * for every record read and every write; an idle connection gives its
   * buffers back instead (tls_idle). */
  SSL_CTX_set_verify(sc, opts->verify == KR_TLS_VERIFY_REQUIRE ? SSL_VERIFY_PEER
                                                               : SSL_VERIFY_NONE,
                     NULL);
  static const unsigned char alpn[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(sc, alpn, sizeof alpn - 1);
  SSL_CTX_set_session_cache_mode(sc, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(sc, new_session_cb);
  kr_tls_ctx_t *t = kr_xcalloc(1, sizeof *t);
  t->ssl_ctx = sc;
  t->verify = opts->verify;
  t->clock = opts->clock;
  if (opts->session_max)
    t->cache = kr_tls_cache_new(opts->session_max, opts->session_max_bytes
                                                       ? opts->session_max_bytes
                                                       : opts->session_max * 2048);
  *out = t;
  return 0;
}

void kr_tls_ctx_free(kr_tls_ctx_t *t) {
  if (!t) return;
  kr_tls_cache_free(t->cache);
  SSL_CTX_free(t->ssl_ctx);
  free(t);
}

void kr_tls_ctx_stats(const kr_tls_ctx_t *t, kr_tls_stats_t *out) {
  *out = t->stats;
  if (!t->cache) return;
  kr_tls_cache_stats_t cs;
  kr_tls_cache_stats(t->cache, &cs);
  out->sessions = cs.sessions;
  out->session_bytes = cs.bytes;
  out->sessions_evicted = cs.evicted;
  out->sessions_expired = cs.expired;
}

int kr_tls_verify_parse(const char *s) {
  if (!strcmp(s, "record")) return KR_TLS_VERIFY_RECORD;
  if (!strcmp(s, "require")) return KR_TLS_VERIFY_REQUIRE;
  if (!strcmp(s, "off")) return KR_TLS_VERIFY_OFF;
  return KR_EINVAL;
}

const char *kr_tls_verify_name(int mode) {
  switch (mode) {
  case KR_TLS_VERIFY_RECORD:
    return "record";
  case KR_TLS_VERIFY_REQUIRE:
    return "require";
  case KR_TLS_VERIFY_OFF:
    return "off";
  default:
    return "?";
  }
}

/* ---- the BIO ------------------------------------------------------------- */

static BIO_METHOD *conn_bio_method; /* made once, kept for the process */

static int conn_bio_read(BIO *b, char *out, int len) {
  tls_cf_t *tc = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (!tc->in_len) { /* all taken: more comes with the next socket read */
    BIO_set_retry_read(b);
    return -1;
  }
  size_t n = KR_MIN((size_t)len, tc->in_len);
  memcpy(out, tc->in, n);
  tc->in += n;
  tc->in_len -= n;
  tc->ctx->stats.copied += n;
  return (int)n;
}

static int conn_bio_write(BIO *b, const char *p, int len) {
  tls_cf_t *tc = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (!tc->send_err) tc->send_err = kr__cf_send_down(&tc->cf, p, (size_t)len);
  return tc->send_err ? -1 : len;
}

static long conn_bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
  KR_UNUSED(num), KR_UNUSED(ptr);
  switch (cmd) {
  case BIO_CTRL_FLUSH: /* every write went down already */
    return 1;
  case BIO_CTRL_PENDING:
    return (long)((tls_cf_t *)BIO_get_data(b))->in_len;
  default:
    return 0;
  }
}

static BIO *conn_bio_new(tls_cf_t *tc) {
  if (!conn_bio_method) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kria conn");
    KR_BUG_ON(!m); /* only fails out of memory */
    BIO_meth_set_read(m, conn_bio_read);
    BIO_meth_set_write(m, conn_bio_write);
    BIO_meth_set_ctrl(m, conn_bio_ctrl);
    conn_bio_method = m;
  }
  BIO *b = BIO_new(conn_bio_method);
  KR_BUG_ON(!b);
  BIO_set_data(b, tc);
  BIO_set_init(b, 1);
  return b;
}

/* ---- the filter --------------------------------------------------------- */

/* Describe the OpenSSL error queue in the connection's errmsg. */
static void ssl_errmsg(tls_cf_t *tc, const char *what) {
  char detail[120] = "";
  unsigned long e = ERR_get_error();
  if (e) ERR_error_string_n(e, detail, sizeof detail);
  ERR_clear_error();
  snprintf(tc->cf.conn->errmsg, sizeof tc->cf.conn->errmsg, "%s%s%s", what,
           detail[0] ? ": " : "", detail);
}

static void fill_info(tls_cf_t *tc) {
  kr_tls_info_t *i = &tc->info;
  i->used = 1;
  snprintf(i->version, sizeof i->version, "%s", SSL_get_version(tc->ssl));
  const char *cipher = SSL_get_cipher_name(tc->ssl);
  snprintf(i->cipher, sizeof i->cipher, "%s", cipher ? cipher : "");
  const unsigned char *alpn = NULL;
  unsigned alpn_len = 0;
  SSL_get0_alpn_selected(tc->ssl, &alpn, &alpn_len);
  if (alpn_len >= sizeof i->alpn) alpn_len = sizeof i->alpn - 1;
  if (alpn_len) memcpy(i->alpn, alpn, alpn_len);
  i->alpn[alpn_len] = '\0';
  i->verify_checked = tc->verify != KR_TLS_VERIFY_OFF;
  i->verify_result = i->verify_checked ? SSL_get_verify_result(tc->ssl) : X509_V_OK;
  snprintf(i->verify_error, sizeof i->verify_error, "%s",
           i->verify_checked ? X509_verify_cert_error_string(i->verify_result)
                             : "not checked");
  i->resumed = SSL_session_reused(tc->ssl);
}

static void read_app(tls_cf_t *tc);

static void handshake(tls_cf_t *tc) {
  kr_conn_t *c = tc->cf.conn;
  int r = SSL_do_handshake(tc->ssl);
  int err = tc->send_err;
  if (r == 1) {
    tc->handshaking = 0;
    fill_info(tc);
    tc->ctx->stats.handshakes++;
    if (tc->info.resumed) tc->ctx->stats.resumed++;
    if (err) {
      kr__cf_fail(&tc->cf, err);
      return;
    }
    kr__cf_ready(&tc->cf);
    /* Application data may have come with the last handshake flight. */
    if (!c->closing && !c->ended) read_app(tc);
    return;
  }
  int e = SSL_get_error(tc->ssl, r);
  if (e == SSL_ERROR_WANT_READ && !err) return;
  if (err) {
    kr__cf_fail(&tc->cf, err);
    return;
  }
  long vr = SSL_get_verify_result(tc->ssl);
  if (tc->verify == KR_TLS_VERIFY_REQUIRE && vr != X509_V_OK) {
    ERR_clear_error();
    snprintf(c->errmsg, sizeof c->errmsg, "certificate verify failed: %s",
             X509_verify_cert_error_string(vr));
    kr__cf_fail(&tc->cf, KR_ETLS_VERIFY);
    return;
  }
  ssl_errmsg(tc, "TLS handshake failed");
  tc->failed = 1;
  /* a server that broke off when offered this session gets a fresh
   * handshake next time */
  if (tc->offered && tc->ctx->cache) kr_tls_cache_drop(tc->ctx->cache, tc->key);
  kr__cf_fail(&tc->cf, KR_ETLS);
}

static void read_app(tls_cf_t *tc) {
  kr_conn_t *c = tc->cf.conn;
  kr_conn_env_t *env = c->env;
  while (!c->closing && !c->ended) {
    int r = SSL_read(tc->ssl, env->tbuf, (int)env->tbuf_size);
    if (r > 0) {
      tc->ctx->stats.copied += (uint64_t)r;
      kr__cf_deliver(&tc->cf, env->tbuf, (size_t)r);
      continue;
    }
    int e = SSL_get_error(tc->ssl, r);
    if (e == SSL_ERROR_WANT_READ) break;
    if (e == SSL_ERROR_ZERO_RETURN) {
      kr__cf_eof(&tc->cf, 0);
    } else {
      ssl_errmsg(tc, "TLS read failed");
      tc->failed = 1;
      kr__cf_eof(&tc->cf, KR_ETLS);
    }
    return;
  }
  if (c->closing || c->ended) return;
  if (tc->send_err) kr__cf_fail(&tc->cf, tc->send_err);
}

static void tls_start(kr_cf_t *cf) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  kr_tls_cache_t *cache = tc->ctx->cache;
  SSL_SESSION *s = cache ? kr_tls_cache_get(cache, tc->key, tc->verify == KR_TLS_VERIFY_REQUIRE,
                                            now_ms(tc->ctx))
                         : NULL;
  if (s) {
    tc->offered = SSL_set_session(tc->ssl, s);
    tc->ctx->stats.offered += (uint64_t)tc->offered;
    SSL_SESSION_free(s); /* the SSL holds its own reference */
  }
  SSL_set_connect_state(tc->ssl);
  tc->handshaking = 1;
  handshake(tc);
}

/* OpenSSL takes the bytes straight from p (conn_bio_read) and keeps a
 * partial record in its own buffer, so they are all taken before it asks
 * for more: handshake and read_app return only then, or once the
 * connection ended. */
static void tls_recv(kr_cf_t *cf, const char *p, size_t n) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  kr_conn_t *c = cf->conn;
  tc->in = p;
  tc->in_len = n;
  if (tc->handshaking)
    handshake(tc);
  else
    read_app(tc);
  size_t left = tc->in_len;
  tc->in = NULL;
  tc->in_len = 0;
  if (left && !c->closing && !c->ended) { /* would lose stream bytes: never expected */
    snprintf(c->errmsg, sizeof c->errmsg, "TLS left %zu received bytes unread", left);
    tc->failed = 1;
    kr__cf_fail(cf, KR_ETLS);
  }
}

static void tls_eof(kr_cf_t *cf, int status) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  if (tc->handshaking) {
    if (!status)
      snprintf(cf->conn->errmsg, sizeof cf->conn->errmsg,
               "connection closed during the TLS handshake");
    kr__cf_fail(cf, status ? status : KR_ETLS);
    return;
  }
  kr__cf_eof(cf, status);
}

static int tls_send(kr_cf_t *cf, const char *p, size_t n) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  if (tc->handshaking) return KR_ETLS;
  while (n > 0) {
    int chunk = n > (1u << 30) ? (1 << 30) : (int)n;
    int r = SSL_write(tc->ssl, p, chunk);
    if (tc->send_err) return tc->send_err;
    if (r <= 0) {
      ssl_errmsg(tc, "TLS write failed");
      return KR_ETLS;
    }
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static void tls_destroy(kr_cf_t *cf) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  /* Freeing an SSL that was not shut down makes its session unusable for
   * resumption; a healthy connection we close ourselves is not a reason
   * to lose it (the socket is already gone, so no close_notify). */
  if (!tc->failed && !tc->handshaking)
    SSL_set_shutdown(tc->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_free(tc->ssl);
  free(tc->key);
  free(tc);
}

/* An idle connection gives its record buffers (~34 KiB) back: the pool
 * keeps one per host, for seconds. OpenSSL keeps a buffer that still
 * holds bytes (a record read ahead), and allocates them again on use. */
static void tls_idle(kr_cf_t *cf) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  if (tc->failed || tc->handshaking) return;
  if (!SSL_free_buffers(tc->ssl)) ERR_clear_error();
}

static void tls_info(const kr_cf_t *cf, kr_tls_info_t *info) {
  *info = ((const tls_cf_t *)cf)->info;
}

static const kr_cf_ops_t tls_cf_ops = {
    .name = "tls",
    .start = tls_start,
    .send = tls_send,
    .recv = tls_recv,
    .eof = tls_eof,
    .destroy = tls_destroy,
    .idle = tls_idle,
    .tls_info = tls_info,
};

/* ---- certificates for the archive ------------------------------------------- */

static const char chain_field[] = "peerCertificate: ";

/* Append x's field line at *p (room checked by the caller). */
static char *cert_line(char *p, X509 *x) {
  unsigned char *der = NULL;
  int len = i2d_X509(x, &der);
  if (len <= 0) return p;
  memcpy(p, chain_field, sizeof chain_field - 1);
  p += sizeof chain_field - 1;
  p += EVP_EncodeBlock((unsigned char *)p, der, len);
  *p++ = '\r';
  *p++ = '\n';
  OPENSSL_free(der);
  return p;
}

kr_slice_t kr_tls_peer_chain_fields(const kr_conn_t *c, kr_arena_t *a) {
  const kr_cf_t *cf = c->top;
  while (cf && cf->ops != &tls_cf_ops) cf = cf->lower;
  if (!cf) return kr_slice("", 0);
  const tls_cf_t *tc = (const tls_cf_t *)cf;
  if (tc->verify == KR_TLS_VERIFY_OFF || tc->handshaking) return kr_slice("", 0);
  STACK_OF(X509) *chain = SSL_get_peer_cert_chain(tc->ssl); /* the client's includes the leaf */
  X509 *leaf = SSL_get0_peer_certificate(tc->ssl);
  int n = chain ? sk_X509_num(chain) : 0;
  size_t room = 0;
  for (int i = 0; i < (n ? n : leaf != NULL); i++) {
    int len = i2d_X509(n ? sk_X509_value(chain, i) : leaf, NULL);
    if (len > 0) room += sizeof chain_field + 4 * (((size_t)len + 2) / 3) + 2;
  }
  char *out = room ? kr_arena_alloc(a, room + 1) : NULL;
  if (!out) return kr_slice("", 0);
  char *p = out;
  for (int i = 0; i < n; i++) p = cert_line(p, sk_X509_value(chain, i));
  if (!n && leaf) p = cert_line(p, leaf);
  return kr_slice(out, (size_t)(p - out));
}

void kr_tls_push(kr_conn_t *c, kr_tls_ctx_t *t, const char *host, int port, int verify) {
  tls_cf_t *tc = kr_xcalloc(1, sizeof *tc);
  tc->cf.ops = &tls_cf_ops;
  tc->ctx = t;
  tc->verify = verify < 0 ? t->verify : verify;
  tc->key = kr_xasprintf("%s:%d", host, port);
  tc->ssl = SSL_new(t->ssl_ctx);
  KR_BUG_ON(!tc->ssl); /* only fails out of memory */
  BIO *b = conn_bio_new(tc);
  SSL_set_bio(tc->ssl, b, b); /* one BIO both ways: ssl takes the one reference */
  SSL_set_ex_data(tc->ssl, ex_index, tc);
  unsigned char bin[16];
  int is_ip = inet_pton(AF_INET, host, bin) == 1 || inet_pton(AF_INET6, host, bin) == 1;
  if (!is_ip) SSL_set_tlsext_host_name(tc->ssl, host);
  if (tc->verify != t->verify)
    SSL_set_verify(tc->ssl, tc->verify == KR_TLS_VERIFY_REQUIRE ? SSL_VERIFY_PEER : SSL_VERIFY_NONE,
                   NULL);
  if (tc->verify != KR_TLS_VERIFY_OFF) {
    if (is_ip)
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(tc->ssl), host);
    else
      SSL_set1_host(tc->ssl, host);
  }
  kr__conn_push(c, &tc->cf);
}
