/*
 * Connections being set up at once per server address (see setupgate.h).
 * A hash table of the addresses with a setup running or waiting; each
 * entry counts its held slots and keeps its waiters in a FIFO (doubly
 * linked, so a waiter abandoned in the middle leaves in O(1)). The table
 * doubles when it holds as many entries as buckets.
 */
#include "setupgate.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "kria/mem.h"

/* An address as a key: family, the IP's bytes, the port. */
typedef struct addr_key {
  uint8_t bytes[20];
  uint8_t len;
} addr_key_t;

struct kr_setup_addr {
  struct kr_setup_addr *hnext;
  uint64_t hash;
  addr_key_t key;
  uint32_t holding;
  kr_setup_waiter_t *head, *tail;
};

struct kr_setup_gate {
  uint32_t limit;
  struct kr_setup_addr **buckets;
  size_t nbuckets;            /* a power of two */
  kr_setup_gate_stats_t st;
};

static void make_key(const struct sockaddr_storage *a, int port, addr_key_t *k) {
  memset(k, 0, sizeof *k);
  k->bytes[0] = (uint8_t)a->ss_family;
  k->bytes[1] = (uint8_t)(port >> 8);
  k->bytes[2] = (uint8_t)port;
  if (a->ss_family == AF_INET6) {
    memcpy(k->bytes + 3, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
    k->len = 19;
  } else {
    memcpy(k->bytes + 3, &((const struct sockaddr_in *)a)->sin_addr, 4);
    k->len = 7;
  }
}

static uint64_t hash_key(const addr_key_t *k) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < k->len; i++) h = (h ^ k->bytes[i]) * 1099511628211ull;
  return h;
}

static struct kr_setup_addr **slot_of(kr_setup_gate_t *g, const addr_key_t *k, uint64_t h) {
  struct kr_setup_addr **p = &g->buckets[h & (g->nbuckets - 1)];
  while (*p && ((*p)->hash != h || (*p)->key.len != k->len ||
                memcmp((*p)->key.bytes, k->bytes, k->len)))
    p = &(*p)->hnext;
  return p;
}

static void grow(kr_setup_gate_t *g) {
  size_t n = g->nbuckets * 2;
  struct kr_setup_addr **b = kr_xcalloc(n, sizeof *b);
  for (size_t i = 0; i < g->nbuckets; i++)
    while (g->buckets[i]) {
      struct kr_setup_addr *e = g->buckets[i];
      g->buckets[i] = e->hnext;
      e->hnext = b[e->hash & (n - 1)];
      b[e->hash & (n - 1)] = e;
    }
  free(g->buckets);
  g->buckets = b;
  g->nbuckets = n;
}

kr_setup_gate_t *kr_setup_gate_new(uint32_t limit) {
  kr_setup_gate_t *g = kr_xcalloc(1, sizeof *g);
  g->limit = limit;
  g->nbuckets = 64;
  g->buckets = kr_xcalloc(g->nbuckets, sizeof *g->buckets);
  return g;
}

void kr_setup_gate_free(kr_setup_gate_t *g) {
  if (!g) return;
  for (size_t i = 0; i < g->nbuckets; i++)
    while (g->buckets[i]) {
      struct kr_setup_addr *e = g->buckets[i];
      g->buckets[i] = e->hnext;
      free(e);
    }
  free(g->buckets);
  free(g);
}

int kr_setup_gate_enter(kr_setup_gate_t *g, const struct sockaddr_storage *addr, int port,
                        kr_setup_waiter_t *w) {
  w->prev = w->next = NULL;
  w->addr = NULL;
  w->holding = 1;
  if (!g->limit) return 1;
  addr_key_t k;
  make_key(addr, port, &k);
  uint64_t h = hash_key(&k);
  struct kr_setup_addr **p = slot_of(g, &k, h);
  if (!*p) {
    struct kr_setup_addr *e = kr_xcalloc(1, sizeof *e);
    e->hash = h;
    e->key = k;
    *p = e;
    if (++g->st.addrs > g->nbuckets) grow(g);
  }
  struct kr_setup_addr *e = *slot_of(g, &k, h);
  w->addr = e;
  if (e->holding < g->limit) {
    e->holding++;
    g->st.setting_up++;
    return 1;
  }
  w->holding = 0;
  w->prev = e->tail;
  if (e->tail) e->tail->next = w; else e->head = w;
  e->tail = w;
  g->st.waiting++;
  g->st.waited++;
  return 0;
}

static void forget_if_unused(kr_setup_gate_t *g, struct kr_setup_addr *e) {
  if (e->holding || e->head) return;
  struct kr_setup_addr **p = slot_of(g, &e->key, e->hash);
  *p = e->hnext;
  free(e);
  g->st.addrs--;
}

kr_setup_waiter_t *kr_setup_gate_leave(kr_setup_gate_t *g, kr_setup_waiter_t *w) {
  struct kr_setup_addr *e = w->addr;
  if (!e) return NULL;
  w->addr = NULL;
  kr_setup_waiter_t *next = NULL;
  if (!w->holding) {
    if (w->prev) w->prev->next = w->next; else e->head = w->next;
    if (w->next) w->next->prev = w->prev; else e->tail = w->prev;
    g->st.waiting--;
  } else if ((next = e->head) != NULL) {
    /* the slot goes straight to the oldest waiter */
    e->head = next->next;
    if (e->head) e->head->prev = NULL; else e->tail = NULL;
    next->prev = next->next = NULL;
    next->holding = 1;
    g->st.waiting--;
  } else {
    e->holding--;
    g->st.setting_up--;
  }
  w->prev = w->next = NULL;
  w->holding = 0;
  forget_if_unused(g, e);
  return next;
}

void kr_setup_gate_stats(const kr_setup_gate_t *g, kr_setup_gate_stats_t *out) { *out = g->st; }
