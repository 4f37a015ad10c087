/*
 * kts — kria's scriptable test server: types shared by its four parts.
 *
 *   kts.c     main, options, the loop, connections, request parsing, log
 *   routes.c  the routes file (INI) and route lookup, per-path state
 *   body.c    body generation, content coding (zlib) and framing, pulled
 *             in pieces so a 1 GB or endless body never sits in memory
 *   respond.c turning one request into a response plan and pumping it
 *             out (delay, trickle, stall, drop, reset)
 *   tls.c     HTTPS through OpenSSL memory BIOs
 *
 * The routes format is documented at the top of kts.c and in README.md.
 */
#ifndef KTS_H
#define KTS_H

#include <stdint.h>
#include <stdio.h>
#include <uv.h>
#include <zlib.h>

#include "llhttp.h"
#include "kria/buf.h"

#define KTS_INFINITE UINT64_MAX

/* ---- routes ------------------------------------------------------------ */

enum kts_stall { KTS_STALL_NONE, KTS_STALL_RESPONSE, KTS_STALL_HEADERS, KTS_STALL_BODY };
enum kts_coding { KTS_CODING_IDENTITY, KTS_CODING_GZIP, KTS_CODING_DEFLATE, KTS_CODING_RAW };
enum kts_fill { KTS_FILL_TEXT, KTS_FILL_ZERO, KTS_FILL_SPACE };
/* gzip / deflate keys: off, when the request accepts it, always */
enum kts_when { KTS_WHEN_OFF, KTS_WHEN_ACCEPTED, KTS_WHEN_FORCE };

typedef struct kts_route {
  char *path;            /* request path (or prefix, without the '*') */
  size_t path_len;
  int prefix;            /* path ended in '*': prefix match */
  char *host;            /* only for requests with this Host, or NULL */
  int line;              /* line of the section in the routes file */
  int status;            /* 0: 200, or 302 with redirect */
  char *status_line;     /* replaces the whole status line, or NULL */
  kr_buf_t headers;      /* extra "Name: Value\r\n" lines */
  int has_ctype;         /* headers or content-type set Content-Type */
  kr_buf_t body;         /* inline body after escapes ({tokens} kept) */
  int has_body;
  char *file_data;       /* body-file contents */
  size_t file_len;
  int has_file;
  kr_buf_t raw;          /* raw = / raw-file: whole response, verbatim */
  int has_raw;
  uint64_t body_size;    /* generated size; 0 unset; KTS_INFINITE endless */
  uint64_t seed;
  enum kts_fill fill;
  uint64_t links;        /* links in the body (per page for sites) */
  char *link_prefix;     /* href prefix of generated links, {port} ok */
  uint64_t pages;        /* site: /prefix/0 .. /prefix/pages-1 */
  int chunked;
  size_t chunk_size;
  int no_length;         /* close-delimited body */
  enum kts_when gzip, deflate;
  int deflate_raw;       /* deflate = raw: RFC 1951 without zlib header */
  int gzip_level;
  char *etag;            /* fixed ETag (verbatim), or NULL */
  int etag_auto;         /* ETag derived from path and version */
  int64_t last_modified; /* fixed, seconds; with lm_set */
  int lm_set, lm_auto;
  int ignore_conditionals;
  uint64_t delay_ms;
  enum kts_stall stall;
  uint64_t stall_after;  /* body bytes before a body stall */
  int stall_after_set;
  uint64_t trickle_ms, trickle_bytes;
  int trickle_headers;
  uint64_t drop_after, reset_after; /* KTS_INFINITE: unset */
  uint64_t drop_at, reset_at;       /* same, counted from the first byte */
  int garbage;
  size_t garbage_bytes;
  int bad_chunk;
  size_t header_bytes, header_count;
  uint64_t cl_lie;       /* KTS_INFINITE: unset */
  int bad_gzip;
  char *redirect;        /* Location, {port} ok */
  int keep_alive;        /* 0: Connection: close */
  uint64_t change_every, change_every_ms;
  int is_volatile;       /* a clock section that changes every request */
} kts_route_t;

/* What one path has seen: request count and version history. */
typedef struct kts_pathstate {
  char *key;             /* route line + path */
  uint64_t count;        /* requests so far, this one included */
  uint64_t version;      /* last version seen (change-every) */
  int64_t lm_sec;        /* Last-Modified of that version */
  uint64_t last_version; /* version served to the latest request */
} kts_pathstate_t;

typedef struct kts_routes {
  kts_route_t **v;
  size_t n;
  kts_pathstate_t *states; /* open addressing */
  size_t nstates, cap;
  kts_pathstate_t overflow; /* shared once the table is full */
} kts_routes_t;

/* Parse a routes file; on error prints "FILE:LINE: why" and returns
 * nonzero. */
int kts_routes_load(kts_routes_t *rs, const char *file);
void kts_routes_free(kts_routes_t *rs);
/* The route for host (may be NULL) and path (the request target without
 * the query unless a route names a query); NULL if none. */
const kts_route_t *kts_routes_match(const kts_routes_t *rs, const char *host,
                                    const char *target);
/* State of one path of a route; never NULL. */
kts_pathstate_t *kts_routes_state(kts_routes_t *rs, const kts_route_t *r,
                                  const char *path);

/* ---- server and connections ---------------------------------------------- */

typedef struct kts_conn kts_conn_t;
typedef struct kts_tls kts_tls_t;
typedef struct ssl_ctx_st kts_ssl_ctx_t;

enum kts_tls_mode { KTS_TLS_OK, KTS_TLS_GARBAGE, KTS_TLS_STALL };

typedef struct kts_server {
  uv_loop_t *loop;
  uv_tcp_t listener;
  uv_signal_t sigint, sigterm;
  kts_routes_t routes;
  FILE *log;
  int log_times;             /* --log-times: lines start "t=MS " (monotonic) */
  kts_ssl_ctx_t *tls_ctx;    /* NULL: plain HTTP */
  enum kts_tls_mode tls_mode;
  kts_conn_t *conns;         /* all open connections */
  size_t nconns, max_conns;
  uint64_t next_conn_id;
  /* connections open before their first request byte (TCP connect, TLS
   * handshake): now and the most at once, for a client's setup bound */
  size_t nfresh, fresh_max;
  uint64_t requests;         /* requests answered or being answered */
  int port;
  int stopping;
  /* clock: now = start_ms + offset_ms [+ elapsed real time * rate] */
  int64_t start_ms, offset_ms;
  uint64_t t0_ns;
  int frozen;
  double rate;
  int64_t start_sec;         /* clock at start-up, for Last-Modified */
  uint64_t keepalive_timeout_ms, keepalive_requests;
  size_t max_header;         /* request header bytes */
  char readbuf[65536];
} kts_server_t;

int64_t kts_now_ms(const kts_server_t *s);

/* Request fields the server looks at; each bounded. */
enum { KTS_H_HOST, KTS_H_UA, KTS_H_AE, KTS_H_INM, KTS_H_IMS, KTS_H_CONN, KTS_H_N };

typedef struct kts_req {
  char method[16];
  kr_buf_t target;               /* request target as sent */
  kr_buf_t field, value;         /* header being parsed */
  kr_buf_t h[KTS_H_N];           /* interesting headers */
  int has_h[KTS_H_N];
  size_t header_bytes, body_bytes;
  int http_minor, http_major;
  int keep_alive;                /* llhttp_should_keep_alive */
  int complete;
  int too_big;                   /* 431 / 413 */
} kts_req_t;

enum kts_conn_state {
  KTS_C_READING,    /* waiting for (or parsing) a request */
  KTS_C_RESPONDING, /* a response is being sent */
  KTS_C_STALLED,    /* sent what it will send; input discarded */
  KTS_C_LINGER,     /* write side shut, draining input until EOF */
  KTS_C_CLOSING,
};

typedef struct kts_resp kts_resp_t;

struct kts_conn {
  uv_tcp_t tcp;
  uv_timer_t timer;          /* delay, trickle, keep-alive idle, linger */
  uv_shutdown_t shutdown_req;
  int open_handles;          /* freed when the last close callback ran */
  kts_server_t *srv;
  kts_conn_t *prev, *next;
  uint64_t id, nreq;
  enum kts_conn_state state;
  llhttp_t parser;
  kr_buf_t in;               /* received plaintext not parsed yet */
  size_t in_off;
  kts_req_t req;
  kts_resp_t *resp;
  kts_tls_t *tls;
  int reading, peer_eof;
  int tls_failed;
  int fresh;                 /* counted in srv->nfresh */
};

/* Send bytes (takes ownership of data, a kr_xmalloc'd block). When notify
 * is set the response pump is resumed once they are written. */
void kts_conn_write(kts_conn_t *c, char *data, size_t n, int notify);
/* Stop answering: shut the write side, drain input, then close. */
void kts_conn_linger(kts_conn_t *c);
/* Close at once; with reset an RST (SO_LINGER 0) instead of a FIN. */
void kts_conn_close(kts_conn_t *c, int reset);
/* The response finished normally: next request or close. */
void kts_conn_response_done(kts_conn_t *c, int close_after);
/* Call kts_resp_pump after ms (delay-ms, trickle-ms). */
void kts_conn_delay(kts_conn_t *c, uint64_t ms);
/* Nothing more will be sent; keep the connection open until the peer
 * goes away. */
void kts_conn_stall(kts_conn_t *c);

/* ---- body pipeline (body.c) ------------------------------------------- */

/* Raw content: pre | file | links | filler | suffix, produced on demand. */
typedef struct kts_gen {
  kr_buf_t pre;              /* owned */
  const char *file;          /* borrowed from the route */
  size_t file_len;
  uint64_t nlinks;
  char *link_prefix;         /* owned */
  uint64_t link_base, link_step, link_mod; /* link k -> (base+k)%mod, mod 0: k */
  int link_list;             /* wrap links in <ul>/<li> */
  uint64_t filler_len;       /* KTS_INFINITE: endless */
  enum kts_fill fill;
  uint64_t seed;
  const char *suffix;
  size_t suffix_len;
  uint64_t total;            /* KTS_INFINITE when endless */
  /* cursor */
  int seg;
  uint64_t seg_off;
  char line[256];
  size_t line_len, line_off;
  uint64_t link_i;
  char block[4096];
  uint64_t block_idx;        /* KTS_INFINITE: none cached */
} kts_gen_t;

void kts_gen_init(kts_gen_t *g);
void kts_gen_free(kts_gen_t *g);
/* Call after filling in the segments: the filler makes the body
 * body_size bytes (0: no filler, KTS_INFINITE: endless); computes total
 * and rewinds. */
void kts_gen_finish(kts_gen_t *g, uint64_t body_size);
size_t kts_gen_read(kts_gen_t *g, char *out, size_t max);

enum kts_framing { KTS_FRAME_LENGTH, KTS_FRAME_CHUNKED, KTS_FRAME_CLOSE };

typedef struct kts_body {
  kts_gen_t gen;
  enum kts_coding coding;
  int bad_gzip;
  z_stream z;
  int zinit, zdone, src_eof;
  char zin[16384];
  uint64_t enc_off;          /* encoded bytes produced */
  kr_buf_t mat;              /* encoded body held in memory, if made */
  int materialized;
  size_t mat_off;
  enum kts_framing framing;
  size_t chunk_size;
  int bad_chunk, nchunks, frame_done;
  kr_buf_t frame;            /* framed bytes waiting to be copied out */
  size_t frame_off;
} kts_body_t;

/* Set up coding and framing over b->gen (already finished). If framing
 * is LENGTH and the coding is not identity the encoded body is made in
 * memory first (capped; larger bodies fall back to chunked). Returns the
 * Content-Length to announce, or KTS_INFINITE for none. */
uint64_t kts_body_start(kts_body_t *b, enum kts_coding coding, int bad_gzip,
                        int level, enum kts_framing *framing, size_t chunk_size,
                        int bad_chunk);
/* Wire bytes of the body; 0 at the end. */
size_t kts_body_read(kts_body_t *b, char *out, size_t max);
void kts_body_free(kts_body_t *b);

/* Deterministic 64-bit hash (FNV-1a). */
uint64_t kts_hash(uint64_t h, const void *p, size_t n);

/* ---- responses (respond.c) -------------------------------------------- */

/* Answer the complete request in c->req (logs it first). */
void kts_respond(kts_conn_t *c);
/* Answer a request that could not be parsed (400/413/431), then close. */
void kts_respond_error(kts_conn_t *c, int status);
/* Continue sending the current response (write done or timer fired). */
void kts_resp_pump(kts_conn_t *c);
/* A notifying write finished: pump now or after the trickle pause. */
void kts_resp_written(kts_conn_t *c);
void kts_resp_free(kts_resp_t *r);
void kts_log_request(kts_conn_t *c);
/* "Sun, 06 Nov 1994 08:49:37 GMT"; returns -1 if unparsable. */
int64_t kts_parse_http_date(const char *s);
void kts_format_http_date(int64_t sec, char out[32]);

/* ---- TLS (tls.c) -------------------------------------------------------- */

/* Load cert and key; prints why and returns nonzero on failure. */
int kts_tls_ctx_new(kts_server_t *s, const char *cert, const char *key);
void kts_tls_ctx_free(kts_server_t *s);
kts_tls_t *kts_tls_new(kts_server_t *s);
void kts_tls_free(kts_tls_t *t);
/* Feed ciphertext; decrypted bytes are appended to plain, handshake and
 * alert bytes to send are appended to out. <0 on a fatal TLS error. */
int kts_tls_feed(kts_tls_t *t, const char *data, size_t n, kr_buf_t *plain,
                 kr_buf_t *out);
/* Encrypt plaintext into out. <0 on error. */
int kts_tls_encrypt(kts_tls_t *t, const char *data, size_t n, kr_buf_t *out);
/* A close_notify alert into out. */
void kts_tls_close_notify(kts_tls_t *t, kr_buf_t *out);

#endif
