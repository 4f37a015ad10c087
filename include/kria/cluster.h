/*
 * Cluster membership arithmetic: which member of a crawl shared by
 * several kria instances owns a host. Pure: no loop, no Redis, no state
 * beyond the members given.
 *
 * Ownership is rendezvous (highest-random-weight) hashing (Thaler &
 * Ravishankar, 1998) of the host's registrable domain (libpsl; the host
 * itself for an IP address or a name the list does not know) over the
 * member names: each member scores the domain with a keyed SipHash-2-4
 * under a key derived from the member's name, and the highest score
 * owns it. So every host of a site has one owner (its politeness is
 * decided in one place), every member computes the same owner from the
 * same list of names whatever their order, and adding or removing a
 * member moves only the domains that member gains or owned (about 1/N of
 * them), never one between two members that stay.
 *
 * The scores are persisted in effect (they decide where URIs live):
 * kr_cluster_weight must never change.
 */
#ifndef KRIA_CLUSTER_H
#define KRIA_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

#define KR_CLUSTER_MAX_MEMBERS 256
#define KR_CLUSTER_NAME_MAX 64

typedef struct kr_cluster_member {
  char name[KR_CLUSTER_NAME_MAX + 1]; /* NUL-terminated */
  uint8_t key[16];                    /* SipHash key derived from the name */
} kr_cluster_member_t;

typedef struct kr_cluster_members {
  kr_cluster_member_t *v;  /* n members, in the order given */
  size_t n;
} kr_cluster_members_t;

/* A member name: 1 to 64 letters, digits, '.', '_' or '-'. 1 or 0. */
int kr_cluster_name_is_valid(const char *name, size_t len);
/* Set up members from n names (copied). 0 or KR_EINVAL (a bad name, n = 0
 * or over KR_CLUSTER_MAX_MEMBERS, a name twice). */
int kr_cluster_members_init(kr_cluster_members_t *m, const char *const *names, size_t n);
void kr_cluster_members_free(kr_cluster_members_t *m);
/* Index of name among the members, -1 when absent. */
int kr_cluster_member_index(const kr_cluster_members_t *m, const char *name, size_t len);

/* The score of domain for member (higher wins). */
uint64_t kr_cluster_weight(const kr_cluster_member_t *member, kr_slice_t domain);
/* Index of the member that owns domain (an ASCII lowercase registrable
 * domain, or a host). Ties (never seen in practice) go to the smaller
 * name, so the answer does not depend on the members' order. */
size_t kr_cluster_owner_of_domain(const kr_cluster_members_t *m, kr_slice_t domain);
/* The owner's key of a host: its registrable domain, or the host itself. */
kr_slice_t kr_cluster_domain_of_host(kr_slice_t host);
/* The host of an absolute URL as kria writes them (scheme://[user@]host
 * [:port]/...): a slice into url; n = 0 when there is none. */
kr_slice_t kr_cluster_host_of_url(const char *url, size_t len);
/* Index of the member that owns url's host; -1 for a URL without one. */
int kr_cluster_owner_of_url(const kr_cluster_members_t *m, const char *url, size_t len);

/* cluster.redis: "HOST:PORT", "[IPv6]:PORT" or an absolute unix socket
 * path. 0 and host (NUL-terminated, no brackets) + *port, or *port = 0
 * and host = the path; KR_EINVAL. */
int kr_cluster_parse_redis(const char *s, char *host, size_t hostlen, int *port);

#endif
