/*
 * The crawl's side of membership changes (clusterepoch.h): at the start,
 * the member list and the epoch's verdict (kr_cluster_epoch_decide); while
 * it runs, the heartbeat's reading of the cluster's epoch. The moves
 * themselves are `kria cluster rebalance`'s (src/cli/cmd_cluster.c),
 * which runs while no crawl does.
 */
#include "clusterepoch.h"
#include "cluster.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "crawl.h"
#include "internal.h"
#include "kria/clustermove.h"
#include "log.h"
#include "store.h"

#define LIST_MAX 20000

/* The cluster's record (PREFIX:members): *epoch -1 when Redis was not
 * reached, 0 when it has none; nodes its list ("" when none). */
static void read_record(const char *redis, const char *prefix, int64_t *epoch, char *nodes,
                        size_t nodeslen) {
  *epoch = -1;
  nodes[0] = 0;
  redisContext *r = kr_crawl_cluster_redis_blocking(redis, 1);
  if (r && !r->err) {
    redisReply *rep = redisCommand(r, "HMGET %s:members epoch nodes", prefix);
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2) {
      *epoch = rep->element[0]->type == REDIS_REPLY_STRING
                   ? (int64_t)strtoull(rep->element[0]->str, NULL, 10) : 0;
      if (rep->element[1]->type == REDIS_REPLY_STRING)
        snprintf(nodes, nodeslen, "%s", rep->element[1]->str);
    }
    if (rep) freeReplyObject(rep);
  }
  if (r) redisFree(r);
}

static uint64_t meta_u64(kr_store_t *st, const char *key) {
  char buf[32];
  return kr_store_meta_get(st, key, buf, sizeof buf) == 1 ? strtoull(buf, NULL, 10) : 0;
}

int kr__crawl_epoch_open(kr_crawl_t *c, kr_cluster_members_t *m, uint64_t *epoch, char *err,
                           size_t errlen) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  kr_store_t *st = kr_frontier_store(c->frontier);
  uint64_t mine = meta_u64(st, "cluster.epoch"), moving = meta_u64(st, "cluster.moving");
  char *nodes = kr_xmalloc(LIST_MAX), *config = kr_xmalloc(LIST_MAX);
  int64_t redis;
  read_record(kr_config_str(g, KR_CFG_CLUSTER_REDIS), kr_config_str(g, KR_CFG_CLUSTER_PREFIX),
              &redis, nodes, LIST_MAX);
  int rc = KR_ECONFIG;
  switch (kr_cluster_epoch_decide(mine, moving, redis)) {
  case KR_EPOCH_MOVING:
    snprintf(err, errlen, "cluster: this member's part in the move to epoch %" PRIu64
             " is unfinished: run `kria cluster rebalance` again", moving);
    goto out;
  case KR_EPOCH_BEHIND:
    snprintf(err, errlen, "cluster: the members changed (epoch %" PRId64 ": %s) since this "
             "state directory last crawled (epoch %" PRIu64 "): run `kria cluster rebalance` "
             "with those --nodes first", redis, nodes, mine);
    goto out;
  case KR_EPOCH_AHEAD:
    snprintf(err, errlen, "cluster: this state directory crawled under epoch %" PRIu64
             " but Redis knows %" PRId64 ": Redis lost the cluster's record (run it with "
             "appendonly yes) and no member may guess the members", mine, redis);
    goto out;
  case KR_EPOCH_CRAWL: break;
  }
  /* the list: Redis's, else the one last moved to, else the config's */
  if (redis <= 0 || !nodes[0]) {
    if (mine == 0 || kr_store_meta_get(st, "cluster.nodes", nodes, LIST_MAX) != 1) nodes[0] = 0;
  }
  size_t at = 0;
  config[0] = 0;
  for (size_t i = 0; i < kr_config_list_len(g, KR_CFG_CLUSTER_NODES) && at + 70 < LIST_MAX; i++)
    at += (size_t)snprintf(config + at, LIST_MAX - at, "%s%s", i ? "," : "",
                           kr_config_list_item(g, KR_CFG_CLUSTER_NODES, i));
  if (kr_cluster_members_parse(m, nodes[0] ? nodes : config)) {
    if (nodes[0]) snprintf(err, errlen, "cluster: the cluster's member list %s is not valid", nodes);
    else snprintf(err, errlen, "cluster: cluster.nodes names a member twice (or too many: 256)");
    goto out;
  }
  if (nodes[0]) {
    kr_cluster_members_t cm;
    if (kr_cluster_members_parse(&cm, config) == 0) {
      if (!kr_cluster_members_same(&cm, m))
        KR_LOG(KR_LOG_WARN, NULL, "cluster: cluster.nodes (%s) is not the cluster's list since "
               "its epoch %" PRIu64 " (%s): crawling with the cluster's", config, mine, nodes);
      kr_cluster_members_free(&cm);
    }
  }
  *epoch = mine;
  rc = 0;
out:
  free(nodes);
  free(config);
  return rc;
}

void kr__crawl_epoch_seen(kr_crawl_t *c, uint64_t mine, const char *redis_epoch) {
  uint64_t e = redis_epoch && redis_epoch[0] ? strtoull(redis_epoch, NULL, 10) : 0;
  if (e <= mine || c->fatal) return;
  KR_LOG(KR_LOG_ERROR, NULL, "cluster: the members change (epoch %" PRIu64 ", this crawl runs "
         "under %" PRIu64 "): stopping so that `kria cluster rebalance` can move the hosts",
         e, mine);
  kr__crawl_fail(c, KR_ECONFIG);
}
