/*
 * The cluster seen from one place: every member's heartbeat
 * (PREFIX:member:NODE, written by cluster.c every 2 s, gone 10 s after
 * the last) and its stream (PREFIX:links:NODE: entries not yet taken,
 * entries delivered and not acknowledged), read from Redis.
 *
 * One snapshot type, filled the same way by two readers: `kria status
 * --cluster` (blocking hiredis, one pipeline) and the running crawl
 * (asynchronously on its loop, kr_crawl_cluster_view). The formatting of
 * a snapshot (text, JSON, the console's page) is the service's
 * (clusterpage.h).
 */
#ifndef KRIA_CRAWL_CLUSTERVIEW_H
#define KRIA_CRAWL_CLUSTERVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "kria/cluster.h"
#include "kria/config.h"

struct kr_crawl;
struct redisReply;

/* A heartbeat's figures, as cluster.c's beat() names them, in the order
 * of the text table: X(field, text width). */
#define KR_CLUSTERVIEW_BEAT_FIELDS(X) \
  X(fetched, 9) X(hosts, 6) X(uris, 9) X(queued, 9) X(sent, 8) X(received, 8) X(acked, 8) \
  X(outbox, 7) X(held, 4)

enum {
#define KR__BEAT_ENUM(f, w) KR_BEAT_##f,
  KR_CLUSTERVIEW_BEAT_FIELDS(KR__BEAT_ENUM)
#undef KR__BEAT_ENUM
  KR_BEAT__COUNT
};
extern const char *const kr_clusterview_beat_names[KR_BEAT__COUNT];
extern const int kr_clusterview_beat_widths[KR_BEAT__COUNT];

/* Commands asked per member: its heartbeat, its stream's length, the
 * group's pending entries on it. */
#define KR_CLUSTERVIEW_CMDS 3

typedef struct kr_clusterview_member {
  char name[KR_CLUSTER_NAME_MAX + 1];
  int64_t at;                    /* heartbeat's time (ms), -1: none (not seen in 10 s) */
  int64_t beat[KR_BEAT__COUNT];  /* -1: absent */
  int64_t stream;                /* XLEN, -1: unknown */
  int64_t pending;               /* delivered, not acknowledged; -1: no group yet */
} kr_clusterview_member_t;

typedef struct kr_clusterview {
  char *prefix;                  /* cluster.prefix */
  char *redis;                   /* cluster.redis, as configured */
  char *self;                    /* cluster.node ("" when read from outside) */
  size_t n;                      /* the members of cluster.nodes, in its order */
  kr_clusterview_member_t *m;
  uint64_t taken;                /* when it was read (ms), 0: never */
  int redis_down;                /* the crawl's: Redis unreachable now (the figures are older) */
} kr_clusterview_t;

/* The members of cfg's [cluster], nothing read yet. 0, or KR_EINVAL when
 * cfg has no cluster.redis. */
int kr_clusterview_init(kr_clusterview_t *v, const kr_config_t *cfg);
void kr_clusterview_free(kr_clusterview_t *v);
/* The members since the last `kria cluster rebalance` (Redis's
 * PREFIX:members, or the crawl's list) in place of cluster.nodes;
 * nothing read yet. */
void kr_clusterview_set_members(kr_clusterview_t *v, const kr_cluster_members_t *ms);
/* Forget member i's figures (before reading them again). */
void kr_clusterview_clear(kr_clusterview_member_t *m);
/* Command k (0 .. KR_CLUSTERVIEW_CMDS) for member i: argv[0..argc),
 * pointing into bufs (one read's storage) and v. argc. */
typedef char kr_clusterview_bufs_t[2][256];
int kr_clusterview_cmd(const kr_clusterview_t *v, size_t i, int k, const char *argv[4],
                        kr_clusterview_bufs_t bufs);
/* Command k's reply (NULL: none) into member m. */
void kr_clusterview_take(kr_clusterview_member_t *m, int k, const struct redisReply *r);
/* Members with a heartbeat. */
size_t kr_clusterview_seen(const kr_clusterview_t *v);

/* The running crawl's latest snapshot of its cluster, NULL without
 * [cluster]. Asking starts a new reading when the last is older than a
 * heartbeat period and Redis is up: the answer is the previous one (its
 * `taken` says when; 0 before the first reading completed). */
const kr_clusterview_t *kr_crawl_cluster_view(struct kr_crawl *c);
/* kr_crawl_free: after the cluster's connections are gone. */
void kr__crawl_cluster_view_free(struct kr_crawl *c);

#endif
