/*
 * The status server: a small HTTP/1.1 server on the crawl's own libuv
 * loop, parsing requests with llhttp in request mode. It knows nothing of
 * the crawl: each complete request goes to one handler callback (the
 * pages live in src/service/status_pages.c) which fills a response synchronously.
 *
 * Every client is hostile. Limits (kr_status_opts_t): request line and
 * headers <= 8 KiB (431), body <= 4 KiB (413), the whole request within
 * 5 s of the connection (slowloris: 408 and closed) and its first byte
 * within 1 s (else closed without an answer), at most max_clients
 * connections, one request per
 * connection (Connection: close; pipelined bytes are ignored), responses
 * capped. Methods other than GET/HEAD/POST get 405, a request target that
 * is not origin-form 400. When bound to loopback the Host header must
 * name a loopback address or localhost (421 otherwise), so a web page
 * cannot reach the server through DNS rebinding.
 *
 * Room: when max_clients are connected, a newcomer first takes the place
 * of the client that has sent nothing for longest (if it has been silent
 * 100 ms); failing that, one slot past max_clients is kept for a request
 * carrying the token (any other request there gets 503), so idle or slow
 * connections never lock out an authenticated POST /stop; beyond that,
 * 503 and closed at once.
 *
 * Control: a POST is passed to the handler only with the header
 * `Authorization: Bearer TOKEN` matching the configured token (compared
 * in constant time); otherwise 401 with WWW-Authenticate, or 403 when no
 * token is configured at all (control disabled). The server refuses to
 * start on a non-loopback address without a token.
 *
 * Shutdown: kr_status_close() closes the listener and every client; the
 * server frees itself in the last close callback, so the loop must run on
 * (uv_run) until then, as for any libuv handle.
 */
#ifndef KRIA_STATUS_H
#define KRIA_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kria/buf.h"

#define KR_STATUS_DEFAULT_LISTEN "127.0.0.1:7373"

typedef struct kr_status_server kr_status_server_t;

typedef enum kr_status_method {
  KR_STATUS_GET = 0,
  KR_STATUS_HEAD = 1,
  KR_STATUS_POST = 2,
} kr_status_method_t;

/* One complete request, valid during the handler call. */
typedef struct kr_status_req {
  kr_status_method_t method;
  kr_slice_t path;      /* raw, from '/' up to '?' or the end */
  kr_slice_t query;     /* raw, after '?' ({NULL,0} when absent) */
  kr_slice_t body;      /* <= max_body_bytes */
  int authorized;       /* POST: the bearer token matched (always 1, but
                           under opts.public_prefix: 0) */
  kr_slice_t signature; /* X-Hub-Signature ({NULL,0} when absent) */
} kr_status_req_t;

/* The handler's answer. body is the server's buffer (capped at
 * max_response_bytes; a handler that runs into the cap gets KR_ETOOBIG
 * from kr_buf_* and should say so in what fits). */
typedef struct kr_status_resp {
  int status;                 /* 200 unless set */
  const char *content_type;   /* "application/json" unless set; static */
  const char *headers;        /* extra header lines, each ending "\r\n"; static or NULL */
  kr_buf_t *body;
  /* Called once the response is written (or the client vanished): for
   * actions such as stopping the crawl that must not race the reply. */
  void (*after)(void *ud);
  void *after_ud;
} kr_status_resp_t;

typedef void (*kr_status_handler_fn)(void *ud, const kr_status_req_t *req,
                                     kr_status_resp_t *resp);

typedef struct kr_status_opts {
  const char *listen;             /* "IP:PORT" or "[IPv6]:PORT"; port 0 picks one */
  const char *token;              /* bearer token; NULL or "": control disabled */
  uint32_t max_clients;           /* 16 */
  uint32_t request_timeout_ms;    /* 5000: connect to complete request */
  uint32_t silent_timeout_ms;     /* 1000: connect to first byte (closed, no answer) */
  uint32_t evict_silent_ms;       /* 100: a silent client this old yields to a newcomer */
  uint32_t linger_ms;             /* 1000: draining after the response */
  size_t max_header_bytes;        /* 8192: request line and headers */
  size_t max_body_bytes;          /* 4096 */
  /* Paths under this prefix (e.g. "/websub/"; NULL none) take POSTs
   * without the bearer token: their handler checks a token of its own
   * (in the path), and their bodies may be up to public_max_body_bytes
   * (1 MiB). */
  const char *public_prefix;
  size_t public_max_body_bytes;
  size_t max_response_bytes;      /* 16 MiB */
  kr_status_handler_fn handler;
  void *ud;
} kr_status_opts_t;

void kr_status_opts_default(kr_status_opts_t *o);

typedef struct kr_status_stats {
  uint64_t connections;           /* accepted */
  uint64_t requests;              /* handed to the handler */
  uint64_t refused;               /* over max_clients (or the reserved slot without token) */
  uint64_t evicted;               /* silent clients closed for a newcomer */
  uint64_t silent_closed;         /* sent nothing within silent_timeout_ms */
  uint64_t bad_requests;          /* 400/405/413/421/431 */
  uint64_t timeouts;              /* 408: too slow to send the request */
  uint64_t unauthorized;          /* 401/403 */
  uint64_t busy_us;               /* spent in the handler (page building) */
  uint32_t clients;               /* open now */
} kr_status_stats_t;

/* Bind and listen on loop. 0 and *out, or KR_EINVAL (bad address, or a
 * non-loopback address without a token), KR_EIO (bind/listen failed)
 * with a one-line reason in err. */
int kr_status_start(uv_loop_t *loop, const kr_status_opts_t *o, kr_status_server_t **out,
                    char *err, size_t errlen);
/* The bound address as "IP:PORT" / "[IPv6]:PORT" (the real port when 0
 * was asked for). */
const char *kr_status_address(const kr_status_server_t *s);
/* Replace the token (config reload); copied. NULL or "" disables control,
 * refused (KR_EINVAL) off loopback. */
int kr_status_set_token(kr_status_server_t *s, const char *token);
const kr_status_stats_t *kr_status_stats(const kr_status_server_t *s);
/* Close the listener and every client; frees itself once libuv has
 * closed them all. NULL is a no-op. */
void kr_status_close(kr_status_server_t *s);

/* ---- helpers (pure) ----------------------------------------------------- */

/* 1 when got equals want. Runs in time that depends on want's length
 * only, never on where the first difference is or on got's length. */
int kr_status_token_equal(const char *want, size_t wn, const char *got, size_t gn);
/* 1 when an Authorization header value carries "Bearer <want>"
 * (scheme case-insensitive, spaces around the token allowed). */
int kr_status_bearer_ok(const char *want, kr_slice_t header);
/* The value of parameter name in an application/x-www-form-urlencoded
 * query, percent- and '+'-decoded into out (NUL-terminated). 1 found, 0
 * absent, KR_EINVAL (bad %XX or a NUL byte), KR_ETOOBIG (out's max). */
int kr_status_query_param(kr_slice_t query, const char *name, kr_buf_t *out);
/* Append s as a JSON string (quotes included): control characters,
 * quotes and backslashes escaped, invalid UTF-8 as U+FFFD. */
int kr_status_json_str(kr_buf_t *b, const char *s, size_t n);
/* 1 when a Host header value names a loopback address or localhost,
 * with or without a port. */
int kr_status_host_is_loopback(kr_slice_t host);

#endif
