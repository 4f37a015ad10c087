/*
 * The crawl's side of membership changes (kria/clustermove.h): which
 * members a crawl shares its hosts with (the cluster's list in Redis
 * once `kria cluster rebalance` changed it, else the one this state
 * directory last moved to, else cluster.nodes), whether it may start at
 * all, and stopping when the cluster moves on while it runs.
 */
#ifndef KRIA_CRAWL_CLUSTEREPOCH_H
#define KRIA_CRAWL_CLUSTEREPOCH_H

#include <stddef.h>
#include <stdint.h>

#include "kria/cluster.h"

struct kr_crawl;

/* The members for this crawl into *m and the epoch it crawls under into
 * *epoch; reads Redis once (at most a second). 0, or KR_ECONFIG with the
 * reason in err (a move unfinished here, the cluster moved on without
 * this member, Redis lost the cluster's record, a bad list). */
int kr__crawl_epoch_open(struct kr_crawl *c, kr_cluster_members_t *m, uint64_t *epoch,
                           char *err, size_t errlen);
/* The cluster's epoch as a heartbeat read it (NULL or "": never moved):
 * past mine, the crawl stops (its hosts may be moving). */
void kr__crawl_epoch_seen(struct kr_crawl *c, uint64_t mine, const char *redis_epoch);

#endif
