/*
 * TLS over memory BIOs (see tls.h). Sections: the client context and its
 * session cache (a direct-mapped table of host:port → SSL_SESSION, filled
 * from OpenSSL's new-session callback, which also sees TLS 1.3 tickets
 * that arrive after the handshake); the filter: handshake, reading
 * application data into the loop-wide plaintext buffer, writing, and
 * moving ciphertext from the write BIO to the socket; info for responses.
 * Every SSL call is followed by a flush of the write BIO, since alerts,
 * key updates and handshake messages may appear at any of them.
 */
#include "tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct session_slot {
  char *key;             /* "host:port" */
  SSL_SESSION *sess;
} session_slot_t;

struct kr_tls_ctx {
  SSL_CTX *ssl_ctx;
  int verify;
  session_slot_t *slots;
  size_t nslots;
  kr_tls_stats_t stats;
};

typedef struct tls_cf {
  kr_cf_t cf;            /* first: the conn sees a kr_cf_t */
  kr_tls_ctx_t *ctx;
  int verify;            /* enum kr_tls_verify of this connection */
  SSL *ssl;
  BIO *rbio, *wbio;      /* owned by ssl */
  char *key;             /* "host:port" for the session cache */
  int handshaking;
  int failed;            /* a TLS error: the session must not be resumed */
  kr_tls_info_t info;    /* filled when the handshake ends */
} tls_cf_t;

static int ex_index = -1; /* SSL ex_data slot for the filter; set once */

/* ---- context and session cache ----------------------------------------- */

static uint64_t hash_key(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int new_session_cb(SSL *ssl, SSL_SESSION *sess) {
  tls_cf_t *tc = SSL_get_ex_data(ssl, ex_index);
  if (!tc || !tc->ctx->nslots) return 0;
  session_slot_t *s = &tc->ctx->slots[hash_key(tc->key) % tc->ctx->nslots];
  if (s->sess) SSL_SESSION_free(s->sess);
  if (!s->key || strcmp(s->key, tc->key)) {
    free(s->key);
    s->key = kr_xstrdup(tc->key);
  }
  s->sess = sess; /* returning 1 keeps OpenSSL's reference for us */
  tc->ctx->stats.sessions_cached++;
  return 1;
}

static SSL_SESSION *cached_session(kr_tls_ctx_t *t, const char *key) {
  if (!t->nslots) return NULL;
  session_slot_t *s = &t->slots[hash_key(key) % t->nslots];
  if (!s->sess || strcmp(s->key, key)) return NULL;
  if (!SSL_SESSION_is_resumable(s->sess)) return NULL;
  return s->sess;
}

int kr_tls_ctx_new(const kr_tls_opts_t *opts, kr_tls_ctx_t **out) {
  kr_tls_opts_t def = {0};
  if (!opts) opts = &def;
  if (ex_index < 0) ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
  SSL_CTX *sc = SSL_CTX_new(TLS_client_method());
  if (!sc) return KR_ETLS;
  SSL_CTX_set_default_verify_paths(sc);
  if (opts->ca_file && !SSL_CTX_load_verify_locations(sc, opts->ca_file, NULL)) {
    ERR_clear_error();
    SSL_CTX_free(sc);
    return KR_ECONFIG;
  }
  /* A peer closing TCP without close_notify ends the stream; HTTP framing
   * decides whether the body was complete. */
  SSL_CTX_set_options(sc, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
  /* A connection with nothing to read or write gives its record buffers
   * (~34 KiB) back: the pool keeps one idle connection per host. */
  SSL_CTX_set_mode(sc, SSL_MODE_RELEASE_BUFFERS);
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
  t->nslots = opts->session_slots ? opts->session_slots : 1024;
  t->slots = kr_xcalloc(t->nslots, sizeof *t->slots);
  *out = t;
  return 0;
}

void kr_tls_ctx_free(kr_tls_ctx_t *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nslots; i++) {
    if (t->slots[i].sess) SSL_SESSION_free(t->slots[i].sess);
    free(t->slots[i].key);
  }
  free(t->slots);
  SSL_CTX_free(t->ssl_ctx);
  free(t);
}

void kr_tls_ctx_stats(const kr_tls_ctx_t *t, kr_tls_stats_t *out) { *out = t->stats; }

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

/* ---- the filter --------------------------------------------------------- */

/* Move everything OpenSSL wrote into the write BIO down to the socket. */
static int flush_out(tls_cf_t *tc) {
  char buf[16384];
  while (BIO_ctrl_pending(tc->wbio) > 0) {
    int n = BIO_read(tc->wbio, buf, sizeof buf);
    if (n <= 0) break;
    tc->ctx->stats.copied += 2 * (uint64_t)n; /* into the BIO, out of it */
    int err = kr__cf_send_down(&tc->cf, buf, (size_t)n);
    if (err) return err;
  }
  return 0;
}

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
  int err = flush_out(tc);
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
    int ferr = flush_out(tc);
    KR_UNUSED(ferr);
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
  int err = flush_out(tc);
  if (err) kr__cf_fail(&tc->cf, err);
}

static void tls_start(kr_cf_t *cf) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  SSL_SESSION *s = cached_session(tc->ctx, tc->key);
  if (s) SSL_set_session(tc->ssl, s);
  SSL_set_connect_state(tc->ssl);
  tc->handshaking = 1;
  handshake(tc);
}

static void tls_recv(kr_cf_t *cf, const char *p, size_t n) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  if (BIO_write(tc->rbio, p, (int)n) != (int)n) {
    snprintf(cf->conn->errmsg, sizeof cf->conn->errmsg, "TLS buffer write failed");
    kr__cf_fail(cf, KR_ETLS);
    return;
  }
  tc->ctx->stats.copied += 2 * (uint64_t)n; /* into the BIO, out into OpenSSL's buffer */
  if (tc->handshaking)
    handshake(tc);
  else
    read_app(tc);
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
    if (r <= 0) {
      ssl_errmsg(tc, "TLS write failed");
      return KR_ETLS;
    }
    p += r;
    n -= (size_t)r;
  }
  return flush_out(tc);
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

/* Memory BIOs keep the capacity the largest burst of records grew them
 * to: an idle connection swaps its empty ones for new ones. */
static void tls_idle(kr_cf_t *cf) {
  tls_cf_t *tc = (tls_cf_t *)cf;
  if (tc->failed || tc->handshaking || BIO_ctrl_pending(tc->rbio) || BIO_ctrl_pending(tc->wbio))
    return;
  BIO *r = BIO_new(BIO_s_mem()), *w = BIO_new(BIO_s_mem());
  if (!r || !w) { /* out of memory: keep the old ones */
    BIO_free(r);
    BIO_free(w);
    return;
  }
  BIO_set_mem_eof_return(r, -1);
  SSL_set_bio(tc->ssl, r, w); /* frees the old pair */
  tc->rbio = r;
  tc->wbio = w;
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

void kr_tls_push(kr_conn_t *c, kr_tls_ctx_t *t, const char *host, int port, int verify) {
  tls_cf_t *tc = kr_xcalloc(1, sizeof *tc);
  tc->cf.ops = &tls_cf_ops;
  tc->ctx = t;
  tc->verify = verify < 0 ? t->verify : verify;
  tc->key = kr_xasprintf("%s:%d", host, port);
  tc->ssl = SSL_new(t->ssl_ctx);
  KR_BUG_ON(!tc->ssl); /* only fails out of memory */
  tc->rbio = BIO_new(BIO_s_mem());
  tc->wbio = BIO_new(BIO_s_mem());
  KR_BUG_ON(!tc->rbio || !tc->wbio);
  /* An empty read BIO means "try again", not end of file. */
  BIO_set_mem_eof_return(tc->rbio, -1);
  SSL_set_bio(tc->ssl, tc->rbio, tc->wbio);
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
