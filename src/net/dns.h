/*
 * Asynchronous name resolution: c-ares driven by the libuv loop through
 * one uv_poll_t per c-ares socket (sock_state_cb) and one uv_timer_t for
 * c-ares timeouts. A and AAAA, a TTL cache clamped to [min_ttl, max_ttl],
 * a negative cache, configurable name servers, /etc/hosts lookups. Never
 * touches libuv's thread pool.
 */
#ifndef KRIA_DNS_H
#define KRIA_DNS_H

#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "clock.h"

#define KR_DNS_MAX_ADDRS 8

typedef struct kr_dns kr_dns_t;
typedef struct kr_dns_req kr_dns_req_t;

typedef struct kr_dns_opts {
  const char *servers;     /* "ip[:port],[ip6]:port,..."; NULL = resolv.conf */
  int use_hosts_file;      /* 1 = consult hosts_file first (default 1) */
  const char *hosts_file;  /* NULL = /etc/hosts */
  int family;              /* AF_UNSPEC (A and AAAA), AF_INET or AF_INET6 */
  uint32_t min_ttl_s;      /* clamp for cached answers (default 60) */
  uint32_t max_ttl_s;      /* (default 86400) */
  uint32_t negative_ttl_s; /* NXDOMAIN / no-data caching (default 300) */
  uint32_t timeout_ms;     /* per try (default 2000) */
  int tries;               /* (default 2) */
  uint32_t max_cache_entries; /* LRU cap on cached names (default 65536;
                                 0 = no cache, lookups still coalesce) */
  uint32_t max_queries;    /* names asked at once; more wait in line, first
                              come first asked (default 64; 0 = no limit) */
  /* Time for answer callbacks per loop turn (NULL = count only): a
   * callback usually connects, and a burst of cached answers would
   * otherwise connect thousands of sockets in one turn. The owner resets
   * it each turn; answers past it wait, in order, for the next. */
  struct kr_turn_budget *deliver_budget;
  /* Where kr_dns_new puts why it failed (then not logged: the caller
   * reports it, once); NULL = log it. */
  char *err;
  size_t errlen;
} kr_dns_opts_t;

/* Fill opts with the defaults above. kr_dns_new() copies what it needs;
 * the strings need not outlive the call. With use_hosts_file the file is
 * read once, by kria itself, at kr_dns_new() (c-ares 1.18 cannot be pointed
 * at another file); c-ares only ever asks the name servers. Names under
 * "localhost" that the file does not list resolve to loopback (RFC 6761). */
void kr_dns_opts_default(kr_dns_opts_t *opts);

typedef struct kr_dns_result {
  int naddrs;                                       /* >= 1 on success */
  struct sockaddr_storage addrs[KR_DNS_MAX_ADDRS];  /* port 0 */
  uint32_t ttl_s;                                   /* clamped TTL */
  int from_cache;                                   /* 1 = cache hit */
} kr_dns_result_t;

/* status 0 with res, or KR_EDNS_NXDOMAIN / KR_EDNS_NODATA / KR_EDNS_TIMEOUT
 * / KR_EDNS_FAIL / KR_ECANCELED (only from kr_dns_free) with res NULL. res
 * is valid only during the call. */
typedef void (*kr_dns_cb)(void *data, int status, const kr_dns_result_t *res);

/* Create a resolver on loop; the cache reads time from clock (which must
 * outlive it). opts NULL = defaults. Returns 0, KR_EINVAL (bad option),
 * KR_ECONFIG (bad servers string, unreadable hosts_file), KR_ETOOBIG (hosts
 * file over 4 MiB) or KR_EDNS_FAIL (c-ares would not start). */
int kr_dns_new(uv_loop_t *loop, kr_clock_t *clock, const kr_dns_opts_t *opts,
               kr_dns_t **out);
/* Start a lookup of host (a name, or an IPv4/IPv6 literal without
 * brackets). The callback is never called from inside kr_dns_resolve:
 * cache hits and literals are delivered on a later loop turn. *req (if
 * req != NULL) can be passed to kr_dns_cancel until the callback runs.
 * Names are matched case-insensitively, one trailing dot ignored.
 * Concurrent lookups of one name share one query; beyond max_queries
 * names in flight, a new name waits for a free slot (a crawl starting
 * with thousands of hosts would otherwise burst thousands of UDP queries
 * and lose most of them in full socket buffers). Returns 0 (the callback
 * will run exactly once, or never after kr_dns_cancel), KR_EINVAL for a
 * malformed name (labels of 1-63 letters, digits, '-' or '_', at most 253
 * characters) or KR_ECANCELED once kr_dns_free was called; on error the
 * callback never runs. A literal of the other family than opts.family
 * gets KR_EDNS_NODATA. Results: addresses IPv4 first, then IPv6; ttl_s is
 * the clamped TTL (remaining TTL for a cache hit; max_ttl_s for a
 * literal, min_ttl_s for a hosts-file answer). */
int kr_dns_resolve(kr_dns_t *dns, const char *host, kr_dns_cb cb, void *data,
                   kr_dns_req_t **req);
/* The callback of req will not be called. */
void kr_dns_cancel(kr_dns_req_t *req);
/* Queries in flight to the name servers (for the status page, tests). */
size_t kr_dns_queries_in_flight(const kr_dns_t *dns);
/* Names in the cache, positive and negative, expired ones not yet
 * dropped included. */
size_t kr_dns_cache_count(const kr_dns_t *dns);

/* Cancel everything pending (callbacks get KR_ECANCELED), close every
 * handle; memory is released once the loop has run the close callbacks. */
void kr_dns_free(kr_dns_t *dns);

#endif
