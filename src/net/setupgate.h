/*
 * Connections being set up at once per server address (IP and port): the
 * HTTP client's bound on TCP connects plus TLS handshakes in progress to
 * one address. Thousands of hosts on one shared-hosting address (or one
 * test server) would otherwise all be connected to in the same second,
 * and the server, busy with full handshakes, lets most of them run into
 * the connect timeout. Past the bound a new connection waits its turn in
 * the address's queue, first come first served, and its connect (and its
 * connect timeout) starts when a setup at that address ends.
 *
 * Pure bookkeeping, no loop: the caller embeds a kr_setup_waiter_t in
 * whatever waits (a fetch), enters it before connecting, and leaves once
 * the connection is usable, has failed, or the wait is abandoned. A
 * leave that frees a slot hands it to the oldest waiter of the address,
 * which the caller then starts. An address's entry exists only while a
 * setup runs or waits there.
 */
#ifndef KRIA_SETUPGATE_H
#define KRIA_SETUPGATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct kr_setup_gate kr_setup_gate_t;
struct kr_setup_addr;

typedef struct kr_setup_waiter {
  struct kr_setup_waiter *prev, *next; /* the address's queue */
  struct kr_setup_addr *addr;     /* NULL: holds and waits for nothing */
  int holding;                    /* 1: holds a slot; 0: waits for one */
} kr_setup_waiter_t;

typedef struct kr_setup_gate_stats {
  uint64_t setting_up;            /* slots held now */
  uint64_t waiting;               /* waiters queued now */
  uint64_t waited;                /* entries that had to wait, in all */
  uint64_t addrs;                 /* addresses with a setup running or waiting */
} kr_setup_gate_stats_t;

/* At most limit setups at once per address; limit 0: no bound (every
 * enter holds at once and nothing is kept). */
kr_setup_gate_t *kr_setup_gate_new(uint32_t limit);
/* Every waiter must have left. */
void kr_setup_gate_free(kr_setup_gate_t *g);
/* w (not holding or waiting) asks for a slot at addr:port (addr's own
 * port is ignored). 1: w holds one now; 0: w waits in the address's queue. */
int kr_setup_gate_enter(kr_setup_gate_t *g, const struct sockaddr_storage *addr, int port,
                        kr_setup_waiter_t *w);
/* w gives its slot back or leaves the queue (nothing when it holds and
 * waits for nothing). Returns the waiter the freed slot went to (now
 * holding; the caller starts its setup), or NULL. */
kr_setup_waiter_t *kr_setup_gate_leave(kr_setup_gate_t *g, kr_setup_waiter_t *w);
void kr_setup_gate_stats(const kr_setup_gate_t *g, kr_setup_gate_stats_t *out);

#endif
