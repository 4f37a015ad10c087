/*
 * The crawl's side of a cluster ([cluster]; ownership in kria/cluster.h):
 * links whose host another member owns leave through the outbox and
 * that member's Redis stream; links for this member arrive from its own
 * stream. Nothing here runs without cluster.redis: c->cluster is NULL.
 */
#ifndef KRIA_CRAWL_CLUSTER_H
#define KRIA_CRAWL_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "frontier.h"
#include "kria/cluster.h"

struct kr_crawl;
typedef struct kr_crawl_cluster kr_crawl_cluster_t;

/* What /status and /metrics show of the cluster. */
typedef struct kr_crawl_cluster_state_s {
  int on;              /* cluster.redis is set */
  int redis_up;        /* both connections to Redis are up */
  int held;            /* dispatch held: the outbox is at its bound */
  uint64_t outbox;     /* links waiting in the outbox */
  uint64_t in_flight;  /* XADDs sent, not yet confirmed */
} kr_crawl_cluster_state_t;

/* With cluster.redis set: check the [cluster] keys, count the outbox,
 * start connecting (in the background: the crawl runs while Redis is
 * away). After the frontier opened, before the seeds are added. 0, or
 * KR_ECONFIG / KR_EDB with a reason in err. Without: 0, nothing done. */
int kr__crawl_cluster_open(struct kr_crawl *c, char *err, size_t errlen);
/* A link (a seed, a link of a finished fetch) for another member: kept
 * in the outbox (in the open transaction), 1; this member's, 0; KR_EDB. */
int kr__crawl_cluster_divert(struct kr_crawl *c, const kr_link_t *l);
/* Divert every foreign link of links[0..n) and compact the rest to the
 * front: their number, or KR_EDB. */
long kr__crawl_cluster_divert_links(struct kr_crawl *c, kr_link_t *links, size_t n);
/* Once per loop turn: send what waits in the outbox. */
void kr__crawl_cluster_turn(struct kr_crawl *c);
/* The crawl closes: drop the connections (what was not confirmed stays
 * in the outbox, what was not acknowledged stays pending in Redis). */
void kr__crawl_cluster_stop(struct kr_crawl *c);
void kr__crawl_cluster_free(struct kr_crawl *c);
void kr_crawl_cluster_state(const struct kr_crawl *c, kr_crawl_cluster_state_t *out);

/* For shared dedup (clusterdedup.c) and the members' view
 * (clusterview.c): the connection they send on, the link writer's; NULL
 * while it is down or closing. */
struct redisAsyncContext;
struct redisAsyncContext *kr__crawl_cluster_redis(const struct kr_crawl *c);
/* A blocking connection to cluster.redis (HOST:PORT, [V6]:PORT or a
 * socket path) for the short reads outside the loop (kria status, kria
 * cluster, the start's epoch check): connecting and each reply bounded by
 * timeout_s. NULL when the address does not parse (or no memory); else
 * the caller checks ->err and redisFree()s it. */
struct redisContext;
struct redisContext *kr_crawl_cluster_redis_blocking(const char *redis, int timeout_s);
/* The members this crawl shares its hosts with (clusterepoch.h); NULL
 * without [cluster]. */
const kr_cluster_members_t *kr__crawl_cluster_members(const struct kr_crawl *c);

#endif
