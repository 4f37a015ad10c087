/*
 * kts HTTPS: OpenSSL over memory BIOs, so the socket stays libuv's and the
 * HTTP code above never knows TLS is there. Ciphertext read from the
 * socket goes into the read BIO; SSL_read yields plaintext; whatever
 * OpenSSL wants to send (handshake, records, alerts) is drained from the
 * write BIO into a buffer the caller writes out. ALPN selects http/1.1.
 *
 * Sections: the context (cert, key, ALPN), per-connection state, feed
 * (handshake and decrypt), encrypt and close_notify.
 */
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>

#include "internal.h"
#include "kts.h"

struct kts_tls {
  SSL *ssl;
  BIO *rbio, *wbio; /* owned by ssl */
};

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg) {
  static const unsigned char h11[] = "\x08http/1.1";
  (void)ssl;
  (void)arg;
  unsigned char *sel;
  if (SSL_select_next_proto(&sel, outlen, h11, sizeof h11 - 1, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = sel;
  return SSL_TLSEXT_ERR_OK;
}

int kts_tls_ctx_new(kts_server_t *s, const char *cert, const char *key) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return -1;
  if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    char err[256];
    ERR_error_string_n(ERR_get_error(), err, sizeof err);
    fprintf(stderr, "kts: cannot load %s / %s: %s\n", cert, key, err);
    SSL_CTX_free(ctx);
    return -1;
  }
  SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
  s->tls_ctx = ctx;
  return 0;
}

void kts_tls_ctx_free(kts_server_t *s) {
  if (s->tls_ctx) SSL_CTX_free(s->tls_ctx);
  s->tls_ctx = NULL;
}

kts_tls_t *kts_tls_new(kts_server_t *s) {
  kts_tls_t *t = kr_xcalloc(1, sizeof *t);
  t->ssl = SSL_new(s->tls_ctx);
  t->rbio = BIO_new(BIO_s_mem());
  t->wbio = BIO_new(BIO_s_mem());
  if (!t->ssl || !t->rbio || !t->wbio) abort();
  BIO_set_mem_eof_return(t->rbio, -1); /* empty = want more, not EOF */
  SSL_set_bio(t->ssl, t->rbio, t->wbio);
  SSL_set_accept_state(t->ssl);
  return t;
}

void kts_tls_free(kts_tls_t *t) {
  SSL_free(t->ssl);
  free(t);
}

static int drain(kts_tls_t *t, kr_buf_t *out) {
  char tmp[16384];
  int n;
  while ((n = BIO_read(t->wbio, tmp, sizeof tmp)) > 0)
    if (kr_buf_append(out, tmp, (size_t)n)) return -1;
  return 0;
}

int kts_tls_feed(kts_tls_t *t, const char *data, size_t n, kr_buf_t *plain, kr_buf_t *out) {
  ERR_clear_error();
  while (n > 0) {
    int w = BIO_write(t->rbio, data, (int)KR_MIN(n, (size_t)1 << 20));
    if (w <= 0) return -1;
    data += w;
    n -= (size_t)w;
  }
  if (!SSL_is_init_finished(t->ssl)) {
    int rc = SSL_do_handshake(t->ssl);
    if (rc != 1) {
      int e = SSL_get_error(t->ssl, rc);
      drain(t, out); /* an alert, if any */
      return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
    }
  }
  char tmp[16384];
  /* Bounded by the bytes just fed: each record read consumes input. */
  for (;;) {
    int r = SSL_read(t->ssl, tmp, sizeof tmp);
    if (r > 0) {
      if (kr_buf_append(plain, tmp, (size_t)r)) return -1;
      continue;
    }
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
    if (e == SSL_ERROR_ZERO_RETURN) break; /* close_notify: EOF follows */
    drain(t, out);
    return -1;
  }
  return drain(t, out);
}

int kts_tls_encrypt(kts_tls_t *t, const char *data, size_t n, kr_buf_t *out) {
  ERR_clear_error();
  while (n > 0) {
    int w = SSL_write(t->ssl, data, (int)KR_MIN(n, (size_t)1 << 20));
    if (w <= 0) return -1;
    data += w;
    n -= (size_t)w;
  }
  return drain(t, out);
}

void kts_tls_close_notify(kts_tls_t *t, kr_buf_t *out) {
  ERR_clear_error();
  if (SSL_is_init_finished(t->ssl)) SSL_shutdown(t->ssl);
  drain(t, out);
}
