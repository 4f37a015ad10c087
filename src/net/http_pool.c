/*
 * The HTTP client's keep-alive pool: a hash of scheme:host:port entries,
 * each a LIFO list of idle connections, plus one LRU list over all of
 * them for the global cap and expiry (one uv_timer armed at the oldest).
 */
#include "http.h"

#include <arpa/inet.h>
#include <assert.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "internal.h"
#include "kria/addrpolicy.h"
#include "kria/inflate.h"
#include "log.h"
#include "http_int.h"

/* ---- keep-alive pool ---------------------------------------------------- */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static pool_entry_t **pool_slot(kr_http_client_t *c, const char *key, uint64_t h) {
  pool_entry_t **pp = &c->buckets[h & (c->nbuckets - 1)];
  while (*pp && ((*pp)->hash != h || strcmp((*pp)->key, key))) pp = &(*pp)->next;
  return pp;
}

static void pool_grow(kr_http_client_t *c) {
  size_t nb = c->nbuckets * 2;
  pool_entry_t **b = kr_xcalloc(nb, sizeof *b);
  for (size_t i = 0; i < c->nbuckets; i++)
    for (pool_entry_t *e = c->buckets[i], *next; e; e = next) {
      next = e->next;
      e->next = b[e->hash & (nb - 1)];
      b[e->hash & (nb - 1)] = e;
    }
  free(c->buckets);
  c->buckets = b;
  c->nbuckets = nb;
}

/* Unlink an idle connection from its entry and the LRU list. */
static void pool_unlink(kr_http_client_t *c, kr_conn_t *conn) {
  pool_entry_t *e = conn->pool_entry;
  if (conn->pool_prev)
    conn->pool_prev->pool_next = conn->pool_next;
  else
    e->head = conn->pool_next;
  if (conn->pool_next) conn->pool_next->pool_prev = conn->pool_prev;
  if (conn->lru_prev)
    conn->lru_prev->lru_next = conn->lru_next;
  else
    c->lru_head = conn->lru_next;
  if (conn->lru_next)
    conn->lru_next->lru_prev = conn->lru_prev;
  else
    c->lru_tail = conn->lru_prev;
  conn->pool_prev = conn->pool_next = conn->lru_prev = conn->lru_next = NULL;
  conn->pool_entry = NULL;
  c->nidle--;
  if (--e->n == 0) {
    pool_entry_t **pp = pool_slot(c, e->key, e->hash);
    KR_BUG_ON(*pp != e);
    *pp = e->next;
    c->nentries--;
    free(e->key);
    free(e);
  }
}

void kr__http_pool_drop(kr_http_client_t *c, kr_conn_t *conn) {
  pool_unlink(c, conn);
  kr_conn_close(conn);
}

static void pool_conn_read(kr_conn_t *conn, const char *p, size_t n) {
  /* Bytes on an idle connection: nothing was asked; it cannot be reused. */
  KR_LOG(KR_LOG_DEBUG, conn->key, "%zu unexpected bytes on an idle connection", n);
  kr__http_pool_drop(conn->data, conn);
}

static void pool_conn_eof(kr_conn_t *conn, int status) { kr__http_pool_drop(conn->data, conn); }

static void pool_conn_connect(kr_conn_t *conn, int status) {
  KR_BUG_ON(1); /* pooled connections are connected */
}

static const kr_conn_cbs_t pool_cbs = {
    .on_connect = pool_conn_connect,
    .on_read = pool_conn_read,
    .on_eof = pool_conn_eof,
};

static void pool_timer_cb(uv_timer_t *t) {
  kr_http_client_t *c = container_of(t, kr_http_client_t, pool_timer);
  uint64_t now = uv_now(c->loop);
  /* Oldest first; a bounded number per turn keeps the loop responsive. */
  for (int budget = 256; c->lru_tail && budget > 0; budget--) {
    kr_conn_t *old = c->lru_tail;
    if (old->idle_since_ms + c->opts.pool_idle_ms > now) break;
    kr__http_pool_drop(c, old);
  }
  if (c->lru_tail) {
    uint64_t due = c->lru_tail->idle_since_ms + c->opts.pool_idle_ms;
    uv_timer_start(&c->pool_timer, pool_timer_cb, due > now ? due - now : 0, 0);
  }
}

/* Keep conn for reuse under key, or close it when the pool is full
 * (per_key: the idle connections this key may keep). */
void kr__http_pool_put(kr_http_client_t *c, kr_conn_t *conn, uint32_t per_key) {
  if (c->closing || !c->opts.pool_max_idle || !per_key) {
    kr_conn_close(conn);
    return;
  }
  uint64_t h = hash_str(conn->key);
  pool_entry_t **pp = pool_slot(c, conn->key, h);
  pool_entry_t *e = *pp;
  if (e && e->n >= per_key) {
    kr_conn_close(conn);
    return;
  }
  if (c->nidle >= c->opts.pool_max_idle) {
    kr__http_pool_drop(c, c->lru_tail); /* may free an entry: look e up again */
    pp = pool_slot(c, conn->key, h);
    e = *pp;
  }
  if (!e) {
    e = kr_xcalloc(1, sizeof *e);
    e->hash = h;
    e->key = kr_xstrdup(conn->key);
    *pp = e;
    if (++c->nentries > c->nbuckets) pool_grow(c);
  }
  conn->pool_entry = e;
  conn->pool_prev = NULL;
  conn->pool_next = e->head;
  if (e->head) e->head->pool_prev = conn;
  e->head = conn;
  e->n++;
  conn->lru_prev = NULL;
  conn->lru_next = c->lru_head;
  if (c->lru_head) c->lru_head->lru_prev = conn;
  c->lru_head = conn;
  if (!c->lru_tail) c->lru_tail = conn;
  c->nidle++;
  conn->idle_since_ms = uv_now(c->loop);
  kr_conn_set_owner(conn, &pool_cbs, c);
  kr_conn_idle(conn);
  /* Idle connections do not keep the loop running; fetches do. */
  uv_unref((uv_handle_t *)&conn->tcp);
  if (!uv_is_active((uv_handle_t *)&c->pool_timer))
    uv_timer_start(&c->pool_timer, pool_timer_cb, c->opts.pool_idle_ms, 0);
}

/* The most recently idle usable connection for key, or NULL. */
kr_conn_t *kr__http_pool_take(kr_http_client_t *c, const char *key) {
  uint64_t h = hash_str(key);
  for (;;) {
    pool_entry_t *e = *pool_slot(c, key, h);
    if (!e) return NULL;
    kr_conn_t *conn = e->head;
    pool_unlink(c, conn);
    uv_ref((uv_handle_t *)&conn->tcp);
    if (kr_conn_is_usable(conn)) return conn;
    kr_conn_close(conn);
  }
}

