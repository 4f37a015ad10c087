/*
 * Shared dedup across a cluster's members (cluster.shared-dedup; the
 * Redis value in kria/xdedup.h): the crawl's side. A member asks Redis
 * for a payload its local index does not know and publishes the
 * originals it writes, over the cluster's Redis connection (cluster.c).
 * Nothing here runs without shared-dedup: c->xdedup is NULL.
 */
#ifndef KRIA_CRAWL_CLUSTERDEDUP_H
#define KRIA_CRAWL_CLUSTERDEDUP_H

#include <stdint.h>

#include "chain.h"

struct kr_crawl;
typedef struct kr_crawl_xdedup kr_crawl_xdedup_t;

/* The chain row's (procs.c): with cluster.redis, cluster.shared-dedup,
 * adaptive.dedupe and WARC files, make c->xdedup and keep p; else 1:
 * leave p out. */
int kr__crawl_xdedup_setup(struct kr_crawl *c, kr_processor_t *p);
/* Free c->xdedup (after kr__crawl_xdedup_stop and the cluster's stop). */
void kr__crawl_xdedup_close(struct kr_crawl *c);
/* After the turn's commit (cluster.c): publish the originals it made
 * durable. */
void kr__crawl_xdedup_turn(struct kr_crawl *c);
/* The crawl closes, before the Redis connections go (cluster.c): visits
 * still waiting for an answer go on with the local index. */
void kr__crawl_xdedup_stop(struct kr_crawl *c);
/* The WARC writer wrote a new original (kr_archive_exchange_t.original;
 * ud the fetch): kept to be published once committed. */
void kr__crawl_xdedup_original(void *ud, const uint8_t *d, uint64_t date_ms, const char *rid);

#endif
