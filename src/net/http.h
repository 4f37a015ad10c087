/*
 * HTTP/1.1 client: the fetch engine under the `fetch`, `midfetch` and
 * `body` phases. A client (one per loop) holds the options, a keep-alive
 * pool keyed by scheme:host:port, the TLS context and recycled fetch
 * objects. A fetch is one request/response exchange: resolve (kr_dns, or
 * an IP literal, or a --resolve override), connect (each address in turn,
 * then TLS), send the request with one write, parse the response with
 * llhttp, decode the content (gzip/deflate) and stream it out. Redirects
 * are not followed: a 3xx is a response like any other, with Location.
 *
 * Callbacks of a fetch, in order, each at most once unless noted:
 *   on_raw*      bytes as received after TLS (status line, headers, body
 *                with chunk framing): what a WARC response record stores.
 *                The header block arrives before on_headers; body bytes
 *                arrive after on_payload/on_content of the same bytes,
 *                also when an error, a limit or an abort stops the fetch
 *                in them (every payload byte is among the raw bytes).
 *   on_headers   headers complete. Return KR_HTTP_ABORT to stop here: the
 *                connection is closed, or, when at most drain_max bytes of
 *                a Content-Length body remain, drained and kept for reuse.
 *   on_payload*  the entity body with the transfer coding removed, before
 *                content decoding (what WARC-Payload-Digest covers).
 *   on_content*  the body with the content coding removed.
 *   on_done      exactly once, from a later loop turn than any kria call
 *                and never from inside another callback of the fetch:
 *                err 0 when a response arrived (any status; also when
 *                truncated or aborted, see the response flags), else a
 *                negative KR_E* and kr_http_fetch_errmsg() says more.
 * on_raw/on_payload/on_content may return nonzero to abort the fetch
 * (connection closed, resp->aborted set, on_done with 0).
 *
 * The fetch object, its response, request bytes and arena stay valid
 * until kr_http_fetch_release(), which must be called once, from on_done
 * or later.
 */
#ifndef KRIA_HTTP_H
#define KRIA_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clock.h"
#include "conn.h"
#include "dns.h"
#include "kria/arena.h"
#include "kria/buf.h"
#include "kria/url.h"
#include "tls.h"

#define KR_HTTP_DEFAULT_UA "kria/0.1 (+https://github.com/kria-crawler/kria)"
#define KR_HTTP_DEFAULT_ACCEPT \
  "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

typedef struct kr_http_client kr_http_client_t;
typedef struct kr_http_fetch kr_http_fetch_t;

typedef struct kr_http_opts {
  const char *user_agent;        /* default KR_HTTP_DEFAULT_UA */
  const char *accept;            /* default KR_HTTP_DEFAULT_ACCEPT */
  size_t max_header_bytes;       /* status line + headers (64 KiB) */
  uint64_t max_body_bytes;       /* decoded content and payload (64 MiB) */
  int body_limit_is_error;       /* 1: KR_EBODY_TOO_BIG, 0: truncate (default) */
  uint32_t max_ratio;            /* decoded/encoded (100); 0 = off */
  uint64_t ratio_after_bytes;    /* ratio checked past this (1 MiB) */
  uint32_t connect_timeout_ms;   /* TCP + TLS (10 s); not counting the
                                    wait for a setup slot */
  uint32_t first_byte_timeout_ms;/* request written → first byte (30 s) */
  uint32_t idle_timeout_ms;      /* between reads while receiving (30 s) */
  uint32_t total_timeout_ms;     /* whole fetch, DNS included (5 min) */
  size_t drain_max_bytes;        /* abort drains up to this (16 KiB) */
  uint32_t pool_max_idle_per_key;/* idle connections per scheme:host:port (64) */
  uint32_t pool_max_idle;        /* idle connections in all (1024) */
  uint32_t pool_idle_ms;         /* idle connections expire (15 s) */
  int tls_verify;                /* enum kr_tls_verify (record) */
  uint32_t tls_sessions;         /* TLS sessions kept for resumption,
                                    2 KiB each at most on average
                                    (20,000); 0 = none */
  /* Connections being set up (TCP connect, then TLS handshake until the
   * first request can go) at once to one server address, IP and port;
   * more wait in the address's queue, first come first served, and
   * their connect timeout starts when their connect does (setupgate.h).
   * The total timeout runs while they wait. 0 = no bound (default 16). */
  uint32_t setups_per_address;
  /* Called when a fetch starts waiting for a setup slot (from inside the
   * client, also from kr_http_fetch_start: note it, call nothing of the
   * client): an owner bounding its fetches in flight may leave the
   * waiting ones out (kr_http_client_setups_waiting). NULL: none. */
  void (*on_setup_wait)(void *data);
  void *on_setup_wait_data;
  const char *ca_file;           /* extra trusted CAs, PEM */
  /* 1: a new HTTPS connection's server certificates are encoded into
   * its first response's tls_chain (for the archive); 0 (default): not,
   * so a crawl that archives nothing pays nothing for them */
  int tls_chain;
  /* curl-style overrides "host:port:addr[,addr...]", several separated
   * by ';' or blanks; addr an IPv4 or IPv6 literal (brackets optional):
   * no DNS for those host:port pairs. */
  const char *resolve;
  /* Address policy (kria/addrpolicy.h), applied to every address the
   * client is about to connect to (DNS answers, literals, --resolve
   * overrides), so redirects and robots.txt are covered and DNS
   * rebinding gains nothing. Loopback, private, link-local, multicast
   * and reserved addresses are refused unless allow_private_addresses is
   * set or allow_addresses lists them; deny_addresses refuses more. The
   * lists are CIDRs separated by ',' or blanks. A host with some allowed
   * addresses connects to those only; with none the fetch ends with
   * KR_EADDR_REFUSED and never touches the network. */
  int allow_private_addresses;   /* 0 by default */
  /* A loop turn's share of socket reads (kr_conn_env_t.read_budget);
   * NULL: none. Borrowed: must outlive the client. */
  struct kr_turn_budget *read_budget;
  const char *allow_addresses;   /* NULL = none */
  const char *deny_addresses;    /* NULL = none */
} kr_http_opts_t;

void kr_http_opts_default(kr_http_opts_t *o);

enum kr_http_method { KR_HTTP_GET = 0, KR_HTTP_HEAD, KR_HTTP_POST };

typedef struct kr_http_req {
  int method;                     /* enum kr_http_method */
  const char *if_none_match;      /* sent as is, NULL = none */
  const char *if_modified_since;  /* HTTP-date, NULL = none */
  const char *const *headers;     /* extra "Name: value" lines */
  size_t nheaders;
  /* POST only: the body (sent with Content-Length, in the request's one
   * write: at most a few KiB, the request buffer's cap is 64 KiB) and its
   * Content-Type (NULL: none sent). Like any request it is sent once
   * more on a stale pooled connection: for idempotent POSTs only (a
   * WebSub subscription request is). */
  const char *body;
  size_t body_len;
  const char *body_type;
  /* This fetch's options (a host's [http] overrides), copied at start;
   * NULL: the client's. Read from it: the timeouts, max_header_bytes,
   * max_body_bytes, body_limit_is_error, max_ratio, ratio_after_bytes,
   * drain_max_bytes, tls_verify and pool_max_idle_per_key (idle
   * connections kept for this fetch's scheme:host:port). The rest
   * (user agent, resolve, CA file, pool totals) is the client's. */
  const kr_http_opts_t *opts;
} kr_http_req_t;

enum { KR_HTTP_CONTINUE = 0, KR_HTTP_ABORT = 1 };

enum kr_http_trunc { KR_HTTP_TRUNC_NONE = 0, KR_HTTP_TRUNC_LENGTH };

typedef struct kr_http_header {
  kr_slice_t name, value;         /* in the fetch's arena */
} kr_http_header_t;

typedef struct kr_http_timing {
  uint64_t dns_us, connect_us, tls_us; /* 0 on a reused connection */
  uint64_t queued_us;             /* waited for a setup slot (0: none) */
  uint64_t first_byte_us;         /* start → first response byte */
  uint64_t total_us;              /* start → done */
} kr_http_timing_t;

typedef struct kr_http_resp {
  int status;                     /* 0 until the headers arrived */
  int version_major, version_minor;
  kr_slice_t reason;
  const kr_http_header_t *headers; /* as received, in order */
  size_t nheaders;
  kr_slice_t raw_head;            /* status line to the empty line */
  kr_slice_t content_type, content_encoding, etag, last_modified, location;
  int64_t content_length;         /* -1 when absent */
  int chunked;                    /* Transfer-Encoding: chunked */
  int content_decoded;            /* 0: a coding we do not decode (br...):
                                     on_content got the payload as is */
  char peer_ip[46];
  int peer_port;
  kr_tls_info_t tls;
  kr_slice_t tls_chain;           /* a new connection's server certificates
                                     (kr_tls_peer_chain_fields) when
                                     opts.tls_chain; empty on a pooled one */
  kr_http_timing_t timing;
  int truncated;                  /* enum kr_http_trunc */
  int aborted;                    /* stopped on purpose by a callback */
  int reused;                     /* connection came from the pool */
  int retried;                    /* stale pooled connection, sent again */
  uint64_t raw_bytes, payload_bytes, content_bytes;
} kr_http_resp_t;

typedef struct kr_http_cbs {
  int (*on_headers)(kr_http_fetch_t *f, const kr_http_resp_t *resp);
  int (*on_raw)(kr_http_fetch_t *f, const char *p, size_t n);
  int (*on_payload)(kr_http_fetch_t *f, const char *p, size_t n);
  int (*on_content)(kr_http_fetch_t *f, const char *p, size_t n);
  void (*on_done)(kr_http_fetch_t *f, int err);
} kr_http_cbs_t;

typedef struct kr_http_stats {
  uint64_t fetches;               /* started */
  uint64_t conns_opened;          /* TCP connections established */
  uint64_t conns_reused;          /* fetches served by a pooled connection */
  uint64_t retries;               /* stale pooled connections retried */
  uint64_t pooled_idle;           /* idle connections now */
  uint64_t conns_live;            /* connections not yet freed */
  uint64_t reads_deferred;        /* socket reads left for a later turn
                                     (opts.read_budget) */
  uint64_t addrs_refused;         /* addresses the policy refused */
  uint64_t setups_running;        /* connections being set up now, at the
                                     addresses with a bound */
  uint64_t setups_waiting;        /* fetches waiting for a setup slot now */
  uint64_t setups_waited;         /* fetches that waited for one, in all */
  kr_tls_stats_t tls;             /* handshakes, kept sessions and bytes
                                     copied around the cipher (all 0
                                     before the first https fetch) */
} kr_http_stats_t;

/* A client on loop. dns may be NULL when every host is an IP literal or
 * covered by opts->resolve. clock, dns and loop must outlive the client.
 * 0 and *out, or KR_ECONFIG (bad resolve list, CA file, address list) /
 * KR_ETLS. */
int kr_http_client_new(uv_loop_t *loop, kr_clock_t *clock, kr_dns_t *dns,
                       const kr_http_opts_t *opts, kr_http_client_t **out);
/* Cancel every fetch still running (their on_done runs with KR_ECANCELED
 * from inside this call), close pooled connections and all handles. Not
 * from inside a callback of one of the client's fetches.
 * Fetches not yet released are released. Memory is freed once the loop
 * has run the close callbacks; run the loop until it has no handles. */
void kr_http_client_close(kr_http_client_t *c);
void kr_http_client_stats(const kr_http_client_t *c, kr_http_stats_t *out);
/* Fetches waiting for a setup slot now (stats.setups_waiting), cheaply. */
uint64_t kr_http_client_setups_waiting(const kr_http_client_t *c);
/* With opts.read_budget: a new loop turn, called where the budget is
 * reset; the sockets left unread read again (kr_conn_env_turn). */
void kr_http_client_turn(kr_http_client_t *c);
const kr_http_opts_t *kr_http_client_opts(const kr_http_client_t *c);

/* Start fetching url (copied; the caller keeps its own). req may be NULL
 * (GET, no conditions). data is the caller's, see kr_http_fetch_data.
 * 0 and *out; or, with no callback ever: KR_ESCHEME (not http/https),
 * KR_EURL (no host), KR_EINVAL (CR/LF or bad syntax in a header). */
int kr_http_fetch_start(kr_http_client_t *c, const kr_url_t *url,
                        const kr_http_req_t *req, const kr_http_cbs_t *cbs,
                        void *data, kr_http_fetch_t **out);
/* Stop a running fetch: on_done follows with KR_ECANCELED (on a later
 * loop turn). No effect once on_done is queued. Safe inside callbacks. */
void kr_http_fetch_cancel(kr_http_fetch_t *f);
/* 1 while the fetch waits for a setup slot at its server's address
 * (opts.setups_per_address): nothing sent, no connection open yet. */
int kr_http_fetch_queued(const kr_http_fetch_t *f);
/* Give the fetch object back. Exactly once, after on_done began. */
void kr_http_fetch_release(kr_http_fetch_t *f);

void *kr_http_fetch_data(const kr_http_fetch_t *f);
const kr_http_resp_t *kr_http_fetch_resp(const kr_http_fetch_t *f);
/* The request exactly as written (request line + headers). */
kr_slice_t kr_http_fetch_request(const kr_http_fetch_t *f);
/* Detail of the error given to on_done ("" when none). */
const char *kr_http_fetch_errmsg(const kr_http_fetch_t *f);
/* The fetch's arena: cleared at release; callers may allocate there. */
kr_arena_t *kr_http_fetch_arena(kr_http_fetch_t *f);
/* URL being fetched (the client's copy). */
const char *kr_http_fetch_url(const kr_http_fetch_t *f);

/* First header named name (case-insensitive), or an empty slice with
 * p == NULL. */
kr_slice_t kr_http_resp_header(const kr_http_resp_t *r, const char *name);

#endif
