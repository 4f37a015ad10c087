/* Unit tests for the TLS session cache: the newest session of a host
 * replaces the older, the count and byte bounds push out the least
 * recently used, a session without a server lifetime expires after a day,
 * unresumable or oversized sessions are not kept, and what a kept session
 * costs. Sessions are made by hand (a TLS 1.2 session ID, no peer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>
#include <stdio.h>
#include <string.h>

#include "tlscache.h"

#define T0 1798500000000ull /* ms */

/* A cipher for the sessions: OpenSSL encodes none without one. */
static const SSL_CIPHER *cipher(void) {
  static const SSL_CIPHER *c;
  if (!c) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(ctx);
    static const unsigned char ecdhe_ecdsa_aes128_gcm[2] = {0xc0, 0x2b};
    c = SSL_CIPHER_find(ssl, ecdhe_ecdsa_aes128_gcm); /* a static table entry */
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
  assert_non_null(c);
  return c;
}

/* A resumable TLS 1.2 session whose ID starts with tag; pad bytes of
 * SNI host name make it larger. */
static SSL_SESSION *session(unsigned char tag, size_t pad) {
  SSL_SESSION *s = SSL_SESSION_new();
  assert_non_null(s);
  unsigned char id[32], key[48];
  memset(id, tag, sizeof id);
  memset(key, 0x5a, sizeof key);
  assert_int_equal(SSL_SESSION_set1_id(s, id, sizeof id), 1);
  assert_int_equal(SSL_SESSION_set1_master_key(s, key, sizeof key), 1);
  assert_int_equal(SSL_SESSION_set_protocol_version(s, TLS1_2_VERSION), 1);
  assert_int_equal(SSL_SESSION_set_cipher(s, cipher()), 1);
  if (pad) {
    char host[2048];
    assert_true(pad < sizeof host);
    memset(host, 'h', pad);
    host[pad] = '\0';
    assert_int_equal(SSL_SESSION_set1_hostname(s, host), 1);
  }
  return s;
}

/* The first byte of the ID of key's session, or -1 for none. */
static int tag_of(kr_tls_cache_t *c, const char *key, uint64_t now) {
  SSL_SESSION *s = kr_tls_cache_get(c, key, 0, now);
  if (!s) return -1;
  unsigned len = 0;
  const unsigned char *id = SSL_SESSION_get_id(s, &len);
  int tag = len ? id[0] : -1;
  SSL_SESSION_free(s);
  return tag;
}

static int put(kr_tls_cache_t *c, const char *key, unsigned char tag, size_t pad, uint64_t now) {
  SSL_SESSION *s = session(tag, pad);
  int kept = kr_tls_cache_put(c, key, s, 1, now);
  SSL_SESSION_free(s);
  return kept;
}

static kr_tls_cache_stats_t stats(kr_tls_cache_t *c) {
  kr_tls_cache_stats_t st;
  kr_tls_cache_stats(c, &st);
  return st;
}

static void newest_replaces_older(void **state) {
  kr_tls_cache_t *c = kr_tls_cache_new(8, 1 << 20);
  assert_int_equal(tag_of(c, "a.test:443", T0), -1);
  assert_int_equal(put(c, "a.test:443", 1, 0, T0), 1);
  assert_int_equal(put(c, "a.test:443", 2, 0, T0), 1);
  assert_int_equal(tag_of(c, "a.test:443", T0), 2);
  assert_int_equal(tag_of(c, "a.test:8443", T0), -1);
  assert_int_equal(stats(c).sessions, 1);
  assert_int_equal(stats(c).stored, 2);
  kr_tls_cache_drop(c, "a.test:443");
  assert_int_equal(tag_of(c, "a.test:443", T0), -1);
  assert_int_equal(stats(c).sessions, 0);
  assert_int_equal(stats(c).bytes, 0);
  kr_tls_cache_free(c);
}

static void count_bound_is_lru(void **state) {
  kr_tls_cache_t *c = kr_tls_cache_new(3, 1 << 20);
  put(c, "a:443", 'a', 0, T0);
  put(c, "b:443", 'b', 0, T0);
  put(c, "c:443", 'c', 0, T0);
  assert_int_equal(tag_of(c, "a:443", T0), 'a'); /* a is now the newest used */
  put(c, "d:443", 'd', 0, T0);                   /* b, least recently used, goes */
  assert_int_equal(tag_of(c, "b:443", T0), -1);
  assert_int_equal(tag_of(c, "a:443", T0), 'a');
  assert_int_equal(tag_of(c, "c:443", T0), 'c');
  assert_int_equal(tag_of(c, "d:443", T0), 'd');
  assert_int_equal(stats(c).sessions, 3);
  assert_int_equal(stats(c).evicted, 1);
  /* many more hosts than room: never above the bound */
  char key[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(key, sizeof key, "h%d.test:443", i);
    put(c, key, (unsigned char)i, 0, T0);
    assert_true(stats(c).sessions <= 3);
  }
  assert_int_equal(tag_of(c, "h999.test:443", T0), 999 & 0xff);
  assert_int_equal(tag_of(c, "h996.test:443", T0), -1);
  kr_tls_cache_free(c);
}

static void byte_bound(void **state) {
  SSL_SESSION *s = session(1, 300);
  int der = i2d_SSL_SESSION(s, NULL);
  SSL_SESSION_free(s);
  size_t one = kr_tls_cache_entry_cost("x0:443", (size_t)der);
  /* room for two and a half sessions of this size */
  kr_tls_cache_t *c = kr_tls_cache_new(100, one * 5 / 2);
  char key[16];
  for (int i = 0; i < 10; i++) {
    snprintf(key, sizeof key, "x%d:443", i);
    assert_int_equal(put(c, key, (unsigned char)i, 300, T0), 1);
    assert_true(stats(c).bytes <= one * 5 / 2);
  }
  assert_int_equal(stats(c).sessions, 2);
  assert_int_equal(stats(c).bytes, 2 * one);
  assert_int_equal(tag_of(c, "x9:443", T0), 9);
  assert_int_equal(tag_of(c, "x8:443", T0), 8);
  assert_int_equal(tag_of(c, "x7:443", T0), -1);
  /* one larger than the whole bound is not kept, and pushes none out */
  assert_int_equal(put(c, "big:443", 1, 1500, T0), 0);
  assert_int_equal(stats(c).sessions, 2);
  kr_tls_cache_free(c);
}

static void session_id_expires_after_a_day(void **state) {
  kr_tls_cache_t *c = kr_tls_cache_new(8, 1 << 20);
  put(c, "a:443", 7, 0, T0);
  uint64_t day = KR_TLS_SESSION_ID_MAX_AGE_S * 1000ull;
  assert_int_equal(tag_of(c, "a:443", T0 + day - 1), 7);
  assert_int_equal(tag_of(c, "a:443", T0 + day), -1);
  assert_int_equal(stats(c).expired, 1);
  assert_int_equal(stats(c).sessions, 0);
  kr_tls_cache_free(c);
}

static void unverified_not_offered_where_required(void **state) {
  kr_tls_cache_t *c = kr_tls_cache_new(8, 1 << 20);
  SSL_SESSION *s = session(3, 0);
  assert_int_equal(kr_tls_cache_put(c, "a:443", s, 0, T0), 1);
  SSL_SESSION_free(s);
  assert_null(kr_tls_cache_get(c, "a:443", 1, T0));
  assert_int_equal(tag_of(c, "a:443", T0), 3); /* kept for record/off */
  kr_tls_cache_free(c);
}

static void unresumable_not_kept(void **state) {
  kr_tls_cache_t *c = kr_tls_cache_new(8, 1 << 20);
  SSL_SESSION *s = SSL_SESSION_new(); /* no ID, no ticket */
  assert_int_equal(kr_tls_cache_put(c, "a:443", s, 1, T0), 0);
  SSL_SESSION_free(s);
  assert_int_equal(stats(c).sessions, 0);
  kr_tls_cache_free(c);
}

/* What a kept session costs is one allocation: the entry, the key and
 * the encoded session. Here a session ID without a certificate; a real
 * session adds the server's leaf certificate (DER) to it. */
static void cost_per_session(void **state) {
  SSL_SESSION *s = session(1, 0);
  int der = i2d_SSL_SESSION(s, NULL);
  SSL_SESSION_free(s);
  size_t cost = kr_tls_cache_entry_cost("h1234.example.org:443", (size_t)der);
  print_message("kept session: %d bytes encoded, %zu counted\n", der, cost);
  assert_true(cost > (size_t)der && cost < (size_t)der + 160);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(newest_replaces_older),
      cmocka_unit_test(count_bound_is_lru),
      cmocka_unit_test(byte_bound),
      cmocka_unit_test(session_id_expires_after_a_day),
      cmocka_unit_test(unverified_not_offered_where_required),
      cmocka_unit_test(unresumable_not_kept),
      cmocka_unit_test(cost_per_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
