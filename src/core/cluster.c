/*
 * Cluster membership arithmetic (kria/cluster.h): member names and their
 * keys, rendezvous hashing of registrable domains, the host of a URL, the
 * cluster.redis address. Sections: members, ownership, addresses.
 */
#include "kria/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/fp.h"
#include "kria/mem.h"
#include "kria/url.h"

/* ---- members ------------------------------------------------------------ */

int kr_cluster_name_is_valid(const char *name, size_t len) {
  if (len == 0 || len > KR_CLUSTER_NAME_MAX) return 0;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

/* A member's key: the two halves are fingerprints of its name under two
 * domain-separation prefixes, so members named alike score unrelated. */
static void member_key(const char *name, uint8_t key[16]) {
  char buf[KR_CLUSTER_NAME_MAX + 8];
  for (int half = 0; half < 2; half++) {
    int n = snprintf(buf, sizeof buf, "kria%c%s", half ? '1' : '0', name);
    uint64_t h = kr_fp(buf, (size_t)n);
    for (int i = 0; i < 8; i++) key[half * 8 + i] = (uint8_t)(h >> (8 * i));
  }
}

int kr_cluster_members_init(kr_cluster_members_t *m, const char *const *names, size_t n) {
  memset(m, 0, sizeof *m);
  if (n == 0 || n > KR_CLUSTER_MAX_MEMBERS) return KR_EINVAL;
  for (size_t i = 0; i < n; i++) {
    if (!names[i] || !kr_cluster_name_is_valid(names[i], strlen(names[i]))) return KR_EINVAL;
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0) return KR_EINVAL;
  }
  m->v = kr_xcalloc(n, sizeof *m->v);
  m->n = n;
  for (size_t i = 0; i < n; i++) {
    snprintf(m->v[i].name, sizeof m->v[i].name, "%s", names[i]);
    member_key(m->v[i].name, m->v[i].key);
  }
  return 0;
}

void kr_cluster_members_free(kr_cluster_members_t *m) {
  free(m->v);
  memset(m, 0, sizeof *m);
}

int kr_cluster_member_index(const kr_cluster_members_t *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->n; i++)
    if (strlen(m->v[i].name) == len && memcmp(m->v[i].name, name, len) == 0) return (int)i;
  return -1;
}

/* ---- ownership ------------------------------------------------------------ */

uint64_t kr_cluster_weight(const kr_cluster_member_t *member, kr_slice_t domain) {
  return kr_siphash24(member->key, domain.p, domain.n);
}

size_t kr_cluster_owner_of_domain(const kr_cluster_members_t *m, kr_slice_t domain) {
  size_t best = 0;
  uint64_t best_w = 0;
  for (size_t i = 0; i < m->n; i++) {
    uint64_t w = kr_cluster_weight(&m->v[i], domain);
    if (i == 0 || w > best_w || (w == best_w && strcmp(m->v[i].name, m->v[best].name) < 0)) {
      best = i;
      best_w = w;
    }
  }
  return best;
}

kr_slice_t kr_cluster_domain_of_host(kr_slice_t host) {
  kr_slice_t d;
  if (kr_url_registrable_domain(host, &d) == 0 && d.n) return d;
  return host;
}

kr_slice_t kr_cluster_host_of_url(const char *url, size_t len) {
  const char *end = url + len;
  const char *p = memmem(url, len, "://", 3);
  if (!p) return kr_slice(url, 0);
  p += 3;
  const char *q = p;
  while (q < end && *q != '/' && *q != '?' && *q != '#') q++;
  /* userinfo ends at the authority's last '@' */
  for (const char *a = q; a > p; a--)
    if (a[-1] == '@') {
      p = a;
      break;
    }
  if (p < q && *p == '[') { /* IPv6 literal: keep the brackets, drop the port */
    const char *rb = memchr(p, ']', (size_t)(q - p));
    return rb ? kr_slice(p, (size_t)(rb + 1 - p)) : kr_slice(p, 0);
  }
  const char *colon = memchr(p, ':', (size_t)(q - p));
  return kr_slice(p, (size_t)((colon ? colon : q) - p));
}

int kr_cluster_owner_of_url(const kr_cluster_members_t *m, const char *url, size_t len) {
  kr_slice_t host = kr_cluster_host_of_url(url, len);
  if (!host.n || !m->n) return -1;
  return (int)kr_cluster_owner_of_domain(m, kr_cluster_domain_of_host(host));
}

/* ---- addresses ---------------------------------------------------------------- */

int kr_cluster_parse_redis(const char *s, char *host, size_t hostlen, int *port) {
  size_t n = strlen(s);
  if (n == 0 || n >= hostlen) return KR_EINVAL;
  if (s[0] == '/') { /* a unix socket */
    memcpy(host, s, n + 1);
    *port = 0;
    return 0;
  }
  const char *colon;
  const char *h = s;
  size_t hn;
  if (s[0] == '[') {
    const char *rb = strchr(s, ']');
    if (!rb || rb[1] != ':') return KR_EINVAL;
    h = s + 1;
    hn = (size_t)(rb - h);
    colon = rb + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon || memchr(s, ':', (size_t)(colon - s))) return KR_EINVAL;
    hn = (size_t)(colon - s);
  }
  const char *ps = colon + 1;
  size_t pn = strlen(ps);
  if (hn == 0 || pn == 0 || pn > 5 || strspn(ps, "0123456789") != pn) return KR_EINVAL;
  int p = atoi(ps);
  if (p < 1 || p > 65535) return KR_EINVAL;
  for (size_t i = 0; i < hn; i++)
    if ((unsigned char)h[i] <= ' ' || (unsigned char)h[i] > '~') return KR_EINVAL;
  memcpy(host, h, hn);
  host[hn] = 0;
  *port = p;
  return 0;
}
