/*
 * The client's TLS session cache: host:port → the newest resumable
 * session, kept DER-encoded (i2d_SSL_SESSION), so a kept session costs
 * exactly its encoding (the session, its ticket or ID, and the server's
 * leaf certificate: about 0.5 KiB for an ECDSA leaf, 1.5–2 KiB for RSA)
 * plus a small entry, and never a parsed certificate. Bounded by a count
 * and by bytes, least recently used first out; each session expires when
 * the server said (the TLS 1.3 / RFC 5077 ticket lifetime hint, at most
 * the 7 days RFC 8446 allows) or, for a TLS 1.2 session ID the server gave
 * no lifetime for, after KR_TLS_SESSION_ID_MAX_AGE_S. Times are the
 * caller's (ms since the epoch, from the crawl's clock), so a test can
 * move them.
 *
 * One session a host, not a pool of tickets: connections to a host open
 * at once (host-valence > 1) offer the same ticket. A server that takes
 * a TLS 1.3 ticket once only (stateful tickets, anti-replay) answers the
 * second with a full handshake; RFC 8446's advice against reusing a
 * ticket is about linking a client's connections, which a crawler
 * announcing itself in User-Agent does not hide.
 */
#ifndef KRIA_TLSCACHE_H
#define KRIA_TLSCACHE_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

/* No server lifetime (a TLS 1.2 session ID): kept a day. A server that
 * has forgotten it answers with a full handshake; offering costs 32
 * bytes of ClientHello. */
#define KR_TLS_SESSION_ID_MAX_AGE_S (24 * 3600)
/* RFC 8446 4.6.1: a ticket lifetime is at most 7 days. */
#define KR_TLS_SESSION_MAX_AGE_S (7 * 24 * 3600)

typedef struct kr_tls_cache kr_tls_cache_t;

typedef struct kr_tls_cache_stats {
  uint64_t sessions;        /* kept now */
  uint64_t bytes;           /* their cost now (kr_tls_cache_entry_cost) */
  uint64_t stored;          /* sessions stored (a newer one replaces the host's) */
  uint64_t evicted;         /* pushed out by the count or byte bound */
  uint64_t expired;         /* dropped at their server-given lifetime */
} kr_tls_cache_stats_t;

/* A cache of at most max_sessions sessions and max_bytes bytes (both > 0). */
kr_tls_cache_t *kr_tls_cache_new(size_t max_sessions, size_t max_bytes);
void kr_tls_cache_free(kr_tls_cache_t *tc);

/* Keep sess (not taken: the caller keeps its reference) as key's
 * session, stored at now_ms, replacing key's older one. verified: the
 * certificate was checked, name included, and passed (a resumed
 * handshake checks nothing, so only such a session may be offered where
 * verification is required). 1 when kept, 0 when not (not resumable,
 * larger than the byte bound, or not encodable). */
int kr_tls_cache_put(kr_tls_cache_t *tc, const char *key, SSL_SESSION *sess, int verified,
                     uint64_t now_ms);
/* key's session, decoded afresh (the caller owns it: SSL_SESSION_free),
 * or NULL: none, expired at now_ms (then dropped), or not verified when
 * need_verified. Marks it recently used. */
SSL_SESSION *kr_tls_cache_get(kr_tls_cache_t *tc, const char *key, int need_verified,
                              uint64_t now_ms);
/* Forget key's session (a handshake that offered it failed). */
void kr_tls_cache_drop(kr_tls_cache_t *tc, const char *key);
void kr_tls_cache_stats(const kr_tls_cache_t *tc, kr_tls_cache_stats_t *out);
/* What one kept session of der_len encoded bytes under key counts
 * against the byte bound. */
size_t kr_tls_cache_entry_cost(const char *key, size_t der_len);

#endif
