/*
 * Connections and the socket filter (see conn.h). Sections: the shared
 * environment; the filter plumbing that moves events up and bytes down;
 * connecting, one address after another (a failed attempt closes its
 * uv_tcp_t and the next attempt starts from the close callback, since a
 * handle cannot be reused before it is closed); the socket's read and
 * write paths (uv_try_write first, then one uv_write at a time from a
 * bounded buffer); closing and release.
 */
#include "conn.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "log.h"
#include "timer.h"
#include "turnprof.h"

enum { H_NONE, H_OPEN, H_RETRY, H_CLOSING };

/* Bytes a connection may have queued for the socket: far more than any
 * request plus TLS records; reaching it means the peer stopped reading. */
#define OUT_MAX (4u << 20)

void kr_conn_env_init(kr_conn_env_t *env, uv_loop_t *loop, kr_clock_t *clock) {
  memset(env, 0, sizeof *env);
  env->loop = loop;
  env->clock = clock;
  env->rbuf_size = 64 * 1024;
  env->rbuf = kr_xmalloc(env->rbuf_size);
  env->tbuf_size = 32 * 1024;
  env->tbuf = kr_xmalloc(env->tbuf_size);
}

void kr_conn_env_free(kr_conn_env_t *env) {
  free(env->rbuf);
  free(env->tbuf);
  env->rbuf = env->tbuf = NULL;
}

int kr_conn_uv_err(int uverr) {
  switch (uverr) {
  case 0:
    return 0;
  case UV_ECONNREFUSED:
    return KR_ECONNREFUSED;
  case UV_ECONNRESET:
  case UV_EPIPE:
  case UV_ECONNABORTED:
    return KR_ECONNRESET;
  case UV_ENETUNREACH:
  case UV_EHOSTUNREACH:
  case UV_EADDRNOTAVAIL:
  case UV_ENETDOWN:
  case UV_EHOSTDOWN:
    return KR_EUNREACH;
  case UV_ENOMEM:
  case UV_ENOBUFS:
    return KR_ENOMEM;
  case UV_ECANCELED:
    return KR_ECANCELED;
  default:
    return KR_ENET;
  }
}

static uint64_t now_us(const kr_conn_t *c) {
  return c->env->clock ? kr_clock_mono_us(c->env->clock) : 0;
}

static void set_errmsg(kr_conn_t *c, const char *what, int uverr) {
  char ip[64];
  int port;
  const struct sockaddr_storage *a = &c->addrs[c->next_addr > 0 ? c->next_addr - 1 : 0];
  if (a->ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, ip, sizeof ip);
    port = ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
  } else {
    inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip, sizeof ip);
    port = ntohs(((const struct sockaddr_in *)a)->sin_port);
  }
  snprintf(c->errmsg, sizeof c->errmsg, "%s %s%s%s:%d: %s", what,
           a->ss_family == AF_INET6 ? "[" : "", ip, a->ss_family == AF_INET6 ? "]" : "",
           port, uv_strerror(uverr));
}

/* ---- filter plumbing ---------------------------------------------------- */

void kr__conn_push(kr_conn_t *c, kr_cf_t *cf) {
  cf->conn = c;
  cf->lower = c->top;
  cf->upper = NULL;
  c->top->upper = cf;
  c->top = cf;
}

void kr__cf_ready(kr_cf_t *cf) {
  kr_conn_t *c = cf->conn;
  if (c->closing || c->ended) return;
  if (cf->upper) {
    cf->upper->ops->start(cf->upper);
    return;
  }
  c->ready = 1;
  c->t_ready_us = now_us(c);
  c->cbs->on_connect(c, 0);
}

void kr__cf_fail(kr_cf_t *cf, int err) {
  kr_conn_t *c = cf->conn;
  if (c->closing || c->ended) return;
  c->ended = 1;
  if (c->ready)
    c->cbs->on_eof(c, err);
  else
    c->cbs->on_connect(c, err);
}

void kr__cf_deliver(kr_cf_t *cf, const char *p, size_t n) {
  kr_conn_t *c = cf->conn;
  if (c->closing || c->ended || n == 0) return;
  if (cf->upper)
    cf->upper->ops->recv(cf->upper, p, n);
  else
    c->cbs->on_read(c, p, n);
}

void kr__cf_eof(kr_cf_t *cf, int status) {
  kr_conn_t *c = cf->conn;
  if (c->closing || c->ended) return;
  if (cf->upper) {
    cf->upper->ops->eof(cf->upper, status);
    return;
  }
  c->ended = 1;
  c->cbs->on_eof(c, status);
}

int kr__cf_send_down(kr_cf_t *cf, const char *p, size_t n) {
  KR_BUG_ON(!cf->lower);
  return cf->lower->ops->send(cf->lower, p, n);
}

/* ---- connecting --------------------------------------------------------- */

static void attempt(kr_conn_t *c);
static void free_conn(kr_conn_t *c);

static void fail_connect(kr_conn_t *c) {
  c->ended = 1;
  c->cbs->on_connect(c, c->last_err ? c->last_err : KR_ENET);
}

static void retry_close_cb(uv_handle_t *h) {
  kr_conn_t *c = h->data;
  c->handle = H_NONE;
  if (c->closing) {
    free_conn(c);
    return;
  }
  if (c->next_addr < c->naddrs) {
    attempt(c);
    return;
  }
  /* The owner may close (and so free) c inside the callback. */
  c->handle = H_RETRY; /* keeps kr_conn_close from freeing under us */
  fail_connect(c);
  c->handle = H_NONE;
  if (c->closing) free_conn(c);
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf);

static void connected(uv_connect_t *req, int status);

static void connect_cb(uv_connect_t *req, int status) {
  KR_TP_ENTER(KR_TP_CONNECT);
  connected(req, status);
  KR_TP_LEAVE();
}

static void connected(uv_connect_t *req, int status) {
  kr_conn_t *c = req->handle->data;
  if (c->closing || c->handle != H_OPEN) return; /* abandoned attempt */
  if (status < 0) {
    c->last_err = status == UV_ETIMEDOUT ? KR_ECONNECT_TIMEOUT : kr_conn_uv_err(status);
    set_errmsg(c, "connecting to", status);
    if (c->next_addr < c->naddrs) {
      c->handle = H_RETRY;
      uv_close((uv_handle_t *)&c->tcp, retry_close_cb);
      return;
    }
    fail_connect(c);
    return;
  }
  c->env->opened++;
  c->tcp_up = 1;
  c->t_tcp_us = now_us(c);
  c->peer = c->addrs[c->next_addr - 1];
  int r = uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
  if (r) {
    c->last_err = kr_conn_uv_err(r);
    set_errmsg(c, "reading from", r);
    fail_connect(c);
    return;
  }
  kr__cf_ready(&c->sock);
}

static void attempt(kr_conn_t *c) {
  const struct sockaddr_storage *a = &c->addrs[c->next_addr++];
  c->env->attempts++;
  int r = uv_tcp_init(c->env->loop, &c->tcp);
  KR_BUG_ON(r != 0); /* AF_UNSPEC init creates no socket: cannot fail */
  c->tcp.data = c;
  c->handle = H_OPEN;
  uv_tcp_nodelay(&c->tcp, 1);
  r = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)a, connect_cb);
  if (r) {
    /* Synchronous failure (no socket, unreachable): go on from the close
     * callback so the owner never hears back inside kr_conn_connect. */
    c->last_err = kr_conn_uv_err(r);
    set_errmsg(c, "connecting to", r);
    c->handle = H_RETRY;
    uv_close((uv_handle_t *)&c->tcp, retry_close_cb);
  }
}

static const kr_cf_ops_t sock_ops;

int kr_conn_connect(kr_conn_env_t *env, const struct sockaddr_storage *addrs,
                    int naddrs, int port, const kr_conn_cbs_t *cbs, void *data,
                    kr_conn_t **out) {
  if (naddrs <= 0) return KR_EINVAL;
  kr_conn_t *c = kr_xcalloc(1, sizeof *c);
  c->env = env;
  c->cbs = cbs;
  c->data = data;
  c->sock.ops = &sock_ops;
  c->sock.conn = c;
  c->top = &c->sock;
  kr_buf_init(&c->out, OUT_MAX);
  kr_buf_init(&c->inflight, OUT_MAX);
  if (naddrs > (int)ARRAY_SIZE(c->addrs)) naddrs = (int)ARRAY_SIZE(c->addrs);
  for (int i = 0; i < naddrs; i++) {
    c->addrs[i] = addrs[i];
    if (addrs[i].ss_family == AF_INET6)
      ((struct sockaddr_in6 *)&c->addrs[i])->sin6_port = htons((uint16_t)port);
    else
      ((struct sockaddr_in *)&c->addrs[i])->sin_port = htons((uint16_t)port);
  }
  c->naddrs = naddrs;
  c->t_start_us = now_us(c);
  env->live++;
  attempt(c);
  *out = c;
  return 0;
}

int kr_conn_next_address(kr_conn_t *c) {
  if (c->closing || c->ended || c->tcp_up || c->handle != H_OPEN || c->next_addr >= c->naddrs)
    return 0;
  c->last_err = KR_ECONNECT_TIMEOUT;
  set_errmsg(c, "connecting to", UV_ETIMEDOUT);
  c->handle = H_RETRY;
  uv_close((uv_handle_t *)&c->tcp, retry_close_cb);
  return 1;
}

void kr_conn_set_owner(kr_conn_t *c, const kr_conn_cbs_t *cbs, void *data) {
  c->cbs = cbs;
  c->data = data;
}

/* ---- the socket filter -------------------------------------------------- */

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  kr_conn_t *c = h->data;
  kr_turn_budget_t *b = c->env->read_budget;
  if (b && !kr_turn_budget_take(b, uv_hrtime())) {
    /* no buffer: libuv calls read_cb with UV_ENOBUFS and leaves the
     * socket as it is (level-triggered: it is reported again) */
    *buf = uv_buf_init(NULL, 0);
    c->env->reads_deferred++;
    return;
  }
  buf->base = c->env->rbuf;
  buf->len = c->env->rbuf_size;
}

static void defer_unlink(kr_conn_t *c) {
  kr_conn_env_t *env = c->env;
  if (!c->deferred) return;
  if (c->deferred_prev) c->deferred_prev->deferred_next = c->deferred_next;
  else env->deferred_head = c->deferred_next;
  if (c->deferred_next) c->deferred_next->deferred_prev = c->deferred_prev;
  else env->deferred_tail = c->deferred_prev;
  c->deferred_prev = c->deferred_next = NULL;
  c->deferred = 0;
}

void kr_conn_env_turn(kr_conn_env_t *env) {
  kr_conn_t *c;
  while ((c = env->deferred_head) != NULL) {
    defer_unlink(c);
    if (!c->closing && c->handle == H_OPEN)
      uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
  }
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  kr_conn_t *c = s->data;
  if (c->closing) return;
  if (nread == UV_ENOBUFS && !buf->base) { /* the turn's reads are spent */
    if (!c->deferred) {
      uv_read_stop(s);
      c->deferred = 1;
      c->deferred_prev = c->env->deferred_tail;
      if (c->env->deferred_tail) c->env->deferred_tail->deferred_next = c;
      else c->env->deferred_head = c;
      c->env->deferred_tail = c;
    }
    return;
  }
  if (nread > 0) {
    KR_TP_ENTER(KR_TP_READ);
    kr__cf_deliver(&c->sock, buf->base, (size_t)nread);
    KR_TP_LEAVE();
  } else if (nread < 0) {
    uv_read_stop(s);
    if (nread == UV_EOF) {
      /* libuv reports POLLHUP after a partial read as EOF without reading
       * the pending socket error: a reset would pass for a clean close. */
      uv_os_fd_t fd;
      int soerr = 0;
      socklen_t len = sizeof soerr;
      if (!uv_fileno((uv_handle_t *)s, &fd) &&
          !getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) && soerr)
        nread = uv_translate_sys_error(soerr);
    }
    if (nread != UV_EOF) set_errmsg(c, "reading from", (int)nread);
    kr__cf_eof(&c->sock, nread == UV_EOF ? 0 : kr_conn_uv_err((int)nread));
  }
}

static void write_cb(uv_write_t *req, int status);

static int flush(kr_conn_t *c) {
  if (c->writing || c->out.len == 0) return 0;
  kr_buf_t t = c->inflight;
  c->inflight = c->out;
  c->out = t;
  kr_buf_reset(&c->out);
  uv_buf_t b = uv_buf_init(c->inflight.data, (unsigned)c->inflight.len);
  int r = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, write_cb);
  if (r) {
    set_errmsg(c, "writing to", r);
    return kr_conn_uv_err(r);
  }
  c->writing = 1;
  return 0;
}

static void write_cb(uv_write_t *req, int status) {
  kr_conn_t *c = req->handle->data;
  c->writing = 0;
  kr_buf_reset(&c->inflight);
  if (c->closing) return;
  int err = status < 0 ? kr_conn_uv_err(status) : flush(c);
  if (status < 0) set_errmsg(c, "writing to", status);
  if (err) kr__cf_fail(c->top, err);
}

static int sock_send(kr_cf_t *cf, const char *p, size_t n) {
  kr_conn_t *c = cf->conn;
  if (c->closing || c->ended || c->handle != H_OPEN) return KR_ENET;
  if (!c->writing && c->out.len == 0) {
    uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
    int r = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (r >= 0) {
      p += r;
      n -= (size_t)r;
      if (n == 0) return 0;
    } else if (r != UV_EAGAIN) {
      set_errmsg(c, "writing to", r);
      return kr_conn_uv_err(r);
    }
  }
  if (kr_buf_append(&c->out, p, n)) return KR_ETOOBIG;
  return flush(c);
}

static void sock_start(kr_cf_t *cf) { KR_UNUSED(cf); }
static void sock_recv(kr_cf_t *cf, const char *p, size_t n) {
  KR_UNUSED(cf), KR_UNUSED(p), KR_UNUSED(n);
}
static void sock_eof(kr_cf_t *cf, int status) { KR_UNUSED(cf), KR_UNUSED(status); }
static void sock_destroy(kr_cf_t *cf) { KR_UNUSED(cf); }

static const kr_cf_ops_t sock_ops = {
    .name = "tcp",
    .start = sock_start,
    .send = sock_send,
    .recv = sock_recv,
    .eof = sock_eof,
    .destroy = sock_destroy,
};

/* ---- writing, closing, queries ----------------------------------------- */

int kr_conn_write(kr_conn_t *c, const char *p, size_t n) {
  if (c->closing || c->ended || !c->ready) return KR_ENET;
  return c->top->ops->send(c->top, p, n);
}

int kr_conn_is_usable(const kr_conn_t *c) {
  return c->ready && !c->ended && !c->closing && c->handle == H_OPEN;
}

void kr_conn_idle(kr_conn_t *c) {
  for (kr_cf_t *cf = c->top; cf && cf != &c->sock; cf = cf->lower)
    if (cf->ops->idle) cf->ops->idle(cf);
}

static void free_conn(kr_conn_t *c) {
  defer_unlink(c);
  /* Filters above the socket, top first. */
  for (kr_cf_t *cf = c->top, *lower; cf && cf != &c->sock; cf = lower) {
    lower = cf->lower;
    cf->ops->destroy(cf);
  }
  kr_buf_free(&c->out);
  kr_buf_free(&c->inflight);
  free(c->key);
  kr_conn_env_t *env = c->env;
  free(c);
  if (--env->live == 0 && env->on_empty) env->on_empty(env);
}

static void close_cb(uv_handle_t *h) { free_conn(h->data); }

void kr_conn_close(kr_conn_t *c) {
  if (c->closing) return;
  c->closing = 1;
  defer_unlink(c);
  switch (c->handle) {
  case H_OPEN:
    c->handle = H_CLOSING;
    uv_close((uv_handle_t *)&c->tcp, close_cb);
    break;
  case H_RETRY: /* the pending close callback frees */
    break;
  case H_NONE:
    free_conn(c);
    break;
  default:
    break;
  }
}

void kr_conn_tls_info(const kr_conn_t *c, kr_tls_info_t *info) {
  memset(info, 0, sizeof *info);
  for (const kr_cf_t *cf = c->top; cf; cf = cf->lower)
    if (cf->ops->tls_info) {
      cf->ops->tls_info(cf, info);
      return;
    }
}

void kr_conn_peer(const kr_conn_t *c, char *ip, size_t ipsize, int *port) {
  const struct sockaddr_storage *a = &c->peer;
  if (a->ss_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
    inet_ntop(AF_INET6, &s6->sin6_addr, ip, (socklen_t)ipsize);
    *port = ntohs(s6->sin6_port);
  } else if (a->ss_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)a;
    inet_ntop(AF_INET, &s4->sin_addr, ip, (socklen_t)ipsize);
    *port = ntohs(s4->sin_port);
  } else {
    if (ipsize) ip[0] = '\0';
    *port = 0;
  }
}
