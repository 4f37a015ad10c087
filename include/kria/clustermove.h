/*
 * Membership changes of a cluster (kria/cluster.h), the pure part: the
 * member lists an epoch names, which hosts move when the list changes,
 * and what a member may do given its own epoch and the cluster's.
 *
 * The members of a running cluster live in Redis (PREFIX:members: epoch,
 * nodes, prev) once `kria cluster rebalance` changed them; the config's
 * cluster.nodes is epoch 0's list. A move from epoch E to E+1 is done by
 * every member of both lists while it does not crawl: each exports the
 * rows of the hosts it loses, then imports those it gains, then drops
 * what it exported (src/cli/cmd_cluster.c). A member records in its
 * state database the epoch it crawls under and the one it is moving to,
 * and a crawl refuses to start while the two disagree with Redis.
 */
#ifndef KRIA_CLUSTERMOVE_H
#define KRIA_CLUSTERMOVE_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/cluster.h"

/* Members from a list of names separated by commas and/or blanks. 0 or
 * KR_EINVAL (see kr_cluster_members_init). */
int kr_cluster_members_parse(kr_cluster_members_t *m, const char *list);
/* "a,b,c" in the members' order into out (NUL-terminated). The length,
 * or KR_ETOOBIG when it does not fit. */
int kr_cluster_members_format(const kr_cluster_members_t *m, char *out, size_t outlen);
/* 1 when a and b hold the same names, in any order; else 0. */
int kr_cluster_members_same(const kr_cluster_members_t *a, const kr_cluster_members_t *b);

/* The host of a host queue's key ("host", "host:port", "[v6]:port"). */
kr_slice_t kr_cluster_host_of_key(kr_slice_t key);
/* Where the host of queue key goes from the members before to the
 * members after: *from (index in before) and *to (index in after). 1
 * when it changes owner (by name), 0 when it stays, -1 for an empty key. */
int kr_cluster_host_moves(const kr_cluster_members_t *before, const kr_cluster_members_t *after,
                          kr_slice_t key, size_t *from, size_t *to);

/* What a member may do, from the epoch its state database crawls under
 * (mine), the epoch it is moving to (moving; 0: none) and the cluster's
 * epoch in Redis (redis; -1: Redis not reached). */
typedef enum kr_cluster_epoch_verdict {
  KR_EPOCH_CRAWL = 0,   /* crawl under mine */
  KR_EPOCH_MOVING = 1,  /* its part of a move is unfinished: rebalance again */
  KR_EPOCH_BEHIND = 2,  /* the cluster moved on without it: rebalance first */
  KR_EPOCH_AHEAD = 3,   /* Redis knows an older epoch: it lost its data */
} kr_cluster_epoch_verdict_t;
kr_cluster_epoch_verdict_t kr_cluster_epoch_decide(uint64_t mine, uint64_t moving, int64_t redis);

#endif
