/*
 * Private to the HTTP client (http.c runs the fetches, http_pool.c keeps
 * idle connections, http_client.c holds the options, address overrides
 * and the client itself): the fetch and client structs and the calls
 * between the pieces. Not for other modules.
 */
#ifndef KRIA_HTTP_INT_H
#define KRIA_HTTP_INT_H

#include <llhttp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "kria/addrpolicy.h"
#include "kria/inflate.h"
#include "setupgate.h"

typedef struct override {
  char *host;                 /* without brackets */
  int port;
  int naddrs;
  struct sockaddr_storage addrs[KR_DNS_MAX_ADDRS];
} override_t;

enum fstate {
  FS_FREE,     /* on the free list */
  FS_RESOLVE,  /* waiting for DNS */
  FS_QUEUED,   /* waiting for a setup slot at its address (setupgate.h) */
  FS_CONNECT,  /* TCP (+TLS) */
  FS_WAIT,     /* request written, no response byte yet */
  FS_HEAD,     /* receiving the status line and headers */
  FS_BODY,     /* receiving the body */
  FS_DRAIN,    /* aborted; reading the small rest to keep the connection */
  FS_DONE,     /* finished; on_done queued or delivered */
};

enum phase { PH_NONE, PH_CONNECT, PH_FIRSTBYTE, PH_IDLE };

/* Pending outcome recorded inside llhttp callbacks (> 0) or an error (< 0). */
enum { P_NONE = 0, P_TRUNCATE = 1, P_ABORT = 2 };

typedef struct hdr_off {
  uint32_t noff, nlen, voff, vlen; /* offsets in the head buffer */
} hdr_off_t;

typedef struct pool_entry {
  struct pool_entry *next;   /* bucket chain */
  uint64_t hash;
  char *key;
  kr_conn_t *head;           /* most recently idle first */
  uint32_t n;
} pool_entry_t;

struct kr_http_fetch {
  kr_http_client_t *client;
  kr_http_fetch_t *prev, *next;  /* client's in-use list, or free list */
  kr_http_fetch_t *done_next;    /* completion queue */
  int state;                     /* enum fstate */
  int done_called;               /* on_done has begun */
  const kr_http_cbs_t *cbs;
  void *data;
  kr_http_opts_t o;              /* this fetch's options (kr_http_req_t.opts) */
  /* target */
  char *href, *host, *key;       /* in the arena; host without brackets */
  int port, https, head_method;
  /* transport */
  kr_conn_t *conn;
  kr_dns_req_t *dns_req;
  uv_timer_t timer;
  int phase;                     /* enum phase */
  uint64_t t0_ms, phase_due_ms, last_read_ms, armed_ms;
  uint64_t attempt_due_ms;       /* this address's share of the connect */
  uint32_t attempt_ms;
  uint64_t t0_us;
  /* the setup bound: f's slot or place in its address's queue, and
   * while queued the addresses to connect to (in the arena) */
  kr_setup_waiter_t gate;
  struct sockaddr_storage *queued_addrs;
  int queued_naddrs;
  uint64_t queued_us;            /* entered the queue */
  /* parsing */
  llhttp_t parser;
  kr_arena_t arena;
  kr_buf_t req;                  /* request bytes */
  kr_buf_t head;                 /* raw head, while receiving it */
  size_t msg_start;              /* offset of this (non-1xx) message in head */
  const char *seg_p;             /* current segment given to llhttp */
  size_t seg_off;                /* its offset in head */
  hdr_off_t *hs;
  size_t nhs, caphs;
  int hstate;                    /* 0 none, 1 in field, 2 in value */
  uint32_t reason_off, reason_len;
  int status, vmaj, vmin;
  uint16_t pflags;               /* llhttp flags at headers complete */
  uint64_t cl;                   /* content length at headers complete */
  const char *trunc_end;         /* raw bytes up to here on truncation */
  kr_inflate_t *inflate;
  kr_http_resp_t resp;
  /* flags */
  unsigned got_bytes : 1, headers_done : 1, notified : 1, msg_complete : 1,
      interim : 1, no_body : 1, keep_alive : 1, reusable : 1, draining : 1,
      reused : 1, retried : 1, cancel_req : 1, in_parser : 1;
  int in_cb;                     /* depth of user callbacks running */
  int pending;                   /* P_* or a KR_E* from a parser callback */
  int err;
  char errmsg[256];
};

struct kr_http_client {
  uv_loop_t *loop;
  kr_clock_t *clock;
  kr_dns_t *dns;
  kr_http_opts_t opts;           /* strings point to the copies below */
  char *ua, *accept, *ca_file, *resolve;
  override_t *ov;
  size_t nov;
  kr_addrpolicy_t *policy;
  kr_conn_env_t env;
  kr_tls_ctx_t *tls;
  kr_setup_gate_t *gate;         /* opts.setups_per_address */
  /* fetch objects */
  kr_http_fetch_t *inuse;        /* started and not yet released */
  kr_http_fetch_t *free_list;
  size_t nfree;
  kr_http_fetch_t *done_head, *done_tail;
  uv_idle_t idle;                /* delivers on_done */
  /* pool */
  pool_entry_t **buckets;
  size_t nbuckets, nentries;
  kr_conn_t *lru_head, *lru_tail; /* newest first */
  size_t nidle;
  uv_timer_t pool_timer;
  /* lifecycle */
  int handles;                   /* open uv handles */
  int closing;
  kr_http_stats_t stats;
};

/* http_client.c: options and address overrides, the client. */
int kr__http_parse_ip(const char *s, size_t n, struct sockaddr_storage *out);
void kr__http_maybe_free_client(kr_http_client_t *c);

/* http_pool.c: the keep-alive pool. */
void kr__http_pool_put(kr_http_client_t *c, kr_conn_t *conn, uint32_t per_key);
kr_conn_t *kr__http_pool_take(kr_http_client_t *c, const char *key);
void kr__http_pool_drop(kr_http_client_t *c, kr_conn_t *conn);

/* http.c: fetch objects, completion, requests. */
void kr__http_finish(kr_http_fetch_t *f, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kr__http_fetch_timer_closed(uv_handle_t *h);
void kr__http_list_unlink(kr_http_fetch_t **head, kr_http_fetch_t *f);
void kr__http_fetch_recycle(kr_http_fetch_t *f);
void kr__http_idle_cb(uv_idle_t *h);
int kr__http_header_safe(const char *s);

#endif
