/*
 * Connections: a small stack of transport filters behind one vtable, so
 * the HTTP code reads and writes plaintext without knowing whether TLS is
 * there (curl's connection filters, Redis' connection.h). The bottom
 * filter is the TCP socket (uv_tcp_t, embedded in kr_conn_t); TLS over
 * a BIO of its own (tls.h) is pushed above it for https.
 *
 * Events go up, bytes go down:
 *   owner  ── kr_conn_write ──►  top filter ──►  ...  ──►  socket
 *   owner  ◄── cbs->on_read ───  top filter ◄──  ...  ◄──  socket
 * on_connect fires once, when every filter is ready (or the first failure);
 * on_eof fires at most once, when the transport ends (0 = orderly end of
 * stream, else KR_ECONNRESET, KR_ETLS, ...). Callbacks run from libuv
 * callbacks only, never from inside a kr_conn_* call.
 *
 * kr_conn_close may be called at any time, also from inside a callback:
 * filters stop delivering at once, and memory is released in the close
 * callback of the socket (STYLE trap 1).
 */
#ifndef KRIA_CONN_H
#define KRIA_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "clock.h"
#include "kria/buf.h"

typedef struct kr_conn kr_conn_t;
typedef struct kr_cf kr_cf_t;

/* What the connections of one loop share: the read buffer libuv fills
 * (read_cb consumes it synchronously, so one is enough), a plaintext
 * buffer for TLS, the clock, and counters. */
typedef struct kr_conn_env {
  uv_loop_t *loop;
  kr_clock_t *clock;
  char *rbuf;             /* socket reads */
  size_t rbuf_size;
  char *tbuf;             /* decrypted TLS records */
  size_t tbuf_size;
  uint64_t opened;        /* TCP connections established */
  uint64_t attempts;      /* connect attempts (one per address tried) */
  uint64_t live;          /* kr_conn_t objects not yet freed */
  /* A loop turn's share of socket reads (timer.h), or NULL: read whatever
   * is ready. Once spent, a ready socket is left unread (its bytes wait
   * in the kernel, which reports it again next turn), so one turn's
   * parsing, digests and extraction stay bounded however many
   * connections are ready at once. The owner resets it each turn. */
  struct kr_turn_budget *read_budget;
  uint64_t reads_deferred; /* socket reads left for a later turn */
  /* Sockets refused a buffer stop reading until kr_conn_env_turn: left
   * registered, libuv would report them again and again (level-triggered;
   * with 1,024 or more ready it polls up to 48 times a turn), tens of ms
   * of refusals at scale. FIFO. */
  struct kr_conn *deferred_head, *deferred_tail;
  /* Called when live drops to 0 (the owner waits for it to free env). */
  void (*on_empty)(struct kr_conn_env *env);
  void *data;             /* the owner's */
} kr_conn_env_t;

void kr_conn_env_init(kr_conn_env_t *env, uv_loop_t *loop, kr_clock_t *clock);
void kr_conn_env_free(kr_conn_env_t *env);
/* A new loop turn (call it where read_budget is reset): the sockets left
 * unread last turn read again, oldest first. */
void kr_conn_env_turn(kr_conn_env_t *env);

typedef struct kr_conn_cbs {
  void (*on_connect)(kr_conn_t *c, int status);
  void (*on_read)(kr_conn_t *c, const char *p, size_t n);
  void (*on_eof)(kr_conn_t *c, int status);
} kr_conn_cbs_t;

/* TLS details of a connection, for the response. */
typedef struct kr_tls_info {
  int used;                 /* 1 over TLS */
  char version[16];         /* "TLSv1.3" */
  char cipher[64];
  char alpn[16];
  int verify_checked;       /* 0 when verification is off */
  long verify_result;       /* X509_V_OK (0) or an X509_V_ERR_* code */
  char verify_error[96];    /* human text of verify_result */
  int resumed;              /* 1 = session resumption */
} kr_tls_info_t;

/* A filter. Each op gets its filter; lower is nearer the socket. */
typedef struct kr_cf_ops {
  const char *name;
  void (*start)(kr_cf_t *cf);                         /* lower is ready */
  int (*send)(kr_cf_t *cf, const char *p, size_t n);  /* from above */
  void (*recv)(kr_cf_t *cf, const char *p, size_t n); /* from below */
  void (*eof)(kr_cf_t *cf, int status);               /* from below */
  void (*destroy)(kr_cf_t *cf);                       /* at final close */
  void (*idle)(kr_cf_t *cf); /* may be NULL: nothing in flight, give memory back */
  /* may be NULL: not a TLS filter. Fills info (kr_conn_tls_info). */
  void (*tls_info)(const kr_cf_t *cf, kr_tls_info_t *info);
} kr_cf_ops_t;

struct kr_cf {
  const kr_cf_ops_t *ops;
  kr_conn_t *conn;
  kr_cf_t *lower;   /* NULL for the socket */
  kr_cf_t *upper;   /* NULL for the top: deliver to the owner */
};

struct kr_conn {
  uv_tcp_t tcp;                /* the socket; data = this conn */
  uv_connect_t creq;
  uv_write_t wreq;
  kr_conn_env_t *env;
  kr_cf_t sock;                /* bottom filter */
  kr_cf_t *top;                /* top filter (== &sock without TLS) */
  const kr_conn_cbs_t *cbs;
  void *data;                  /* the owner's */
  struct sockaddr_storage addrs[8];
  int naddrs, next_addr;
  struct sockaddr_storage peer; /* address connected to */
  kr_buf_t out;                /* bytes waiting for the socket */
  kr_buf_t inflight;           /* bytes of the uv_write in progress */
  int handle;                  /* H_NONE, H_OPEN, H_RETRY (closing to retry) */
  int writing;                 /* a uv_write is in progress */
  int tcp_up;                  /* TCP established */
  int ready;                   /* on_connect(0) was delivered */
  int ended;                   /* on_eof or a failed on_connect was delivered */
  int closing;                 /* kr_conn_close was called */
  int last_err;                /* the last connect error, for the report */
  uint64_t t_start_us;         /* connect started */
  uint64_t t_tcp_us;           /* TCP established */
  uint64_t t_ready_us;         /* all filters ready */
  unsigned requests;           /* served, counted by the owner */
  char errmsg[160];            /* detail of the last failure */
  char *key;                   /* owner's pool key (freed with the conn) */
  /* Owned by the keep-alive pool of the owner (http.c). */
  kr_conn_t *pool_prev, *pool_next, *lru_prev, *lru_next;
  void *pool_entry;
  uint64_t idle_since_ms;
  /* reads stopped for the turn's budget (env->deferred_head list) */
  kr_conn_t *deferred_prev, *deferred_next;
  int deferred;
};

/* Start connecting to the addresses in order (each with port set by
 * this call), returning the new connection in *out. Results come through
 * cbs->on_connect. 0, or KR_EINVAL for no address. */
int kr_conn_connect(kr_conn_env_t *env, const struct sockaddr_storage *addrs,
                    int naddrs, int port, const kr_conn_cbs_t *cbs, void *data,
                    kr_conn_t **out);
/* Abandon the TCP connect in progress and try the next address, when
 * there is one and TCP is not up yet (the owner's per-address budget ran
 * out). 1 if it moved on, 0 otherwise. */
int kr_conn_next_address(kr_conn_t *c);
/* Change who receives the events (the pool and fetches hand connections
 * over). */
void kr_conn_set_owner(kr_conn_t *c, const kr_conn_cbs_t *cbs, void *data);
/* Queue bytes through the filters. 0, or a negative KR_E* when the
 * connection is not usable (the owner then closes it). */
int kr_conn_write(kr_conn_t *c, const char *p, size_t n);
/* Close and release (memory goes in the close callback). Idempotent. */
void kr_conn_close(kr_conn_t *c);
/* 1 when the transport is open, ready and not ended. */
int kr_conn_is_usable(const kr_conn_t *c);
/* c waits idle in a pool: its filters give back the buffers they grew. */
void kr_conn_idle(kr_conn_t *c);
/* Fill info from the first filter that has TLS details (zeroed when
 * none has). */
void kr_conn_tls_info(const kr_conn_t *c, kr_tls_info_t *info);
/* Numeric address of the peer ("127.0.0.1", "::1") and its port. */
void kr_conn_peer(const kr_conn_t *c, char *ip, size_t ipsize, int *port);

/* Map a libuv error to a KR_E* code. */
int kr_conn_uv_err(int uverr);

/* For filters: push cf on top of the stack (before connecting ends). */
void kr__conn_push(kr_conn_t *c, kr_cf_t *cf);
/* For filters: the layer below cf is ready / ended / delivered bytes. */
void kr__cf_ready(kr_cf_t *cf);
void kr__cf_fail(kr_cf_t *cf, int err);
void kr__cf_deliver(kr_cf_t *cf, const char *p, size_t n);
void kr__cf_eof(kr_cf_t *cf, int status);
/* For filters: send bytes to the layer below cf. */
int kr__cf_send_down(kr_cf_t *cf, const char *p, size_t n);

#endif
