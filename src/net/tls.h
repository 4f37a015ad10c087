/*
 * TLS client filter for connections (conn.h): OpenSSL driven through a
 * BIO of the filter's own (ciphertext straight from the loop's socket
 * reads, writes straight down to the socket filter), so OpenSSL never
 * touches a socket and the loop owns all I/O. SNI, ALPN "http/1.1",
 * client session resumption (TLS 1.3 tickets, TLS 1.2 session IDs and
 * tickets) from a bounded cache keyed by host:port (tlscache.h), and
 * certificate verification in one of three
 * modes: record (verify, report the result, never fail — the default,
 * since an archive wants the page even when the certificate is wrong),
 * require (fail with KR_ETLS_VERIFY) or off.
 */
#ifndef KRIA_TLS_H
#define KRIA_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "conn.h"
#include "kria/arena.h"

enum kr_tls_verify {
  KR_TLS_VERIFY_RECORD = 0,
  KR_TLS_VERIFY_REQUIRE,
  KR_TLS_VERIFY_OFF,
};

typedef struct kr_tls_opts {
  int verify;              /* enum kr_tls_verify */
  const char *ca_file;     /* extra trusted CAs (PEM), NULL = none */
  size_t session_max;      /* sessions kept, one a host:port; 0: none kept */
  size_t session_max_bytes; /* and their bytes (0: 2 KiB a session) */
  kr_clock_t *clock;       /* session lifetimes run on it; NULL: the wall clock */
} kr_tls_opts_t;

typedef struct kr_tls_ctx kr_tls_ctx_t;

/* A client context: CA store from the system default paths (plus
 * ca_file). 0 and *out, or KR_ECONFIG (unreadable ca_file) / KR_ETLS. */
int kr_tls_ctx_new(const kr_tls_opts_t *opts, kr_tls_ctx_t **out);
/* Free the context; connections using it must be gone. */
void kr_tls_ctx_free(kr_tls_ctx_t *t);
/* "record" | "require" | "off" → mode, or KR_EINVAL. */
int kr_tls_verify_parse(const char *s);
const char *kr_tls_verify_name(int mode);

/* Push a TLS filter onto c, which is still connecting; the handshake
 * starts when the socket is connected, and c's on_connect fires when it
 * ends. host is the URL's host (IPv6 without brackets); SNI is sent for
 * names, not for IP literals. verify is this connection's mode (enum
 * kr_tls_verify: a host's own tls-verify), or -1 for the context's. */
void kr_tls_push(kr_conn_t *c, kr_tls_ctx_t *t, const char *host, int port, int verify);

/* The certificates the server of c showed, as the warc-fields lines
 * "peerCertificate: BASE64(DER)\r\n", leaf first, in a's memory; empty
 * when c has no TLS, or its verification is off. On a resumed session
 * only the leaf is known (a session keeps no chain). For the archive. */
kr_slice_t kr_tls_peer_chain_fields(const kr_conn_t *c, kr_arena_t *a);

/* Counters for tests and /metrics. */
typedef struct kr_tls_stats {
  uint64_t handshakes;      /* completed */
  uint64_t resumed;         /* of which resumed a session */
  uint64_t offered;         /* handshakes begun offering a kept session */
  uint64_t sessions_cached; /* sessions stored in the cache */
  uint64_t sessions;        /* kept now */
  uint64_t session_bytes;   /* their bytes now (tlscache.h) */
  uint64_t sessions_evicted; /* pushed out by the cache's bounds */
  uint64_t sessions_expired; /* dropped at the lifetime the server gave */
  /* Bytes copied on the data path besides the cipher itself: into and
   * out of BIOs (each ciphertext byte read or written), and decrypted
   * bytes out of OpenSSL's record buffer. What the bench divides by pages
   * to see the cost of the plumbing around the cipher. */
  uint64_t copied;
} kr_tls_stats_t;
void kr_tls_ctx_stats(const kr_tls_ctx_t *t, kr_tls_stats_t *out);

#endif
