/*
 * Membership changes, the pure part (kria/clustermove.h): member lists as
 * text, which hosts move between two lists, and the verdict on a
 * member's epoch. Sections: lists, moves, epochs.
 */
#include "kria/clustermove.h"

#include <string.h>

#include "kria/error.h"

/* ---- lists --------------------------------------------------------------------------- */

int kr_cluster_members_parse(kr_cluster_members_t *m, const char *list) {
  static const char sep[] = ", \t";
  const char *names[KR_CLUSTER_MAX_MEMBERS];
  char buf[KR_CLUSTER_MAX_MEMBERS][KR_CLUSTER_NAME_MAX + 1];
  size_t n = 0;
  const char *p = list;
  while (*p) {
    p += strspn(p, sep);
    size_t len = strcspn(p, sep);
    if (!len) break;
    if (n == KR_CLUSTER_MAX_MEMBERS || !kr_cluster_name_is_valid(p, len)) return KR_EINVAL;
    memcpy(buf[n], p, len);
    buf[n][len] = 0;
    names[n] = buf[n];
    n++;
    p += len;
  }
  return kr_cluster_members_init(m, names, n);
}

int kr_cluster_members_format(const kr_cluster_members_t *m, char *out, size_t outlen) {
  size_t at = 0;
  if (!outlen) return KR_ETOOBIG;
  out[0] = 0;
  for (size_t i = 0; i < m->n; i++) {
    size_t len = strlen(m->v[i].name);
    if (at + (i > 0) + len + 1 > outlen) return KR_ETOOBIG;
    if (i) out[at++] = ',';
    memcpy(out + at, m->v[i].name, len + 1);
    at += len;
  }
  return (int)at;
}

int kr_cluster_members_same(const kr_cluster_members_t *a, const kr_cluster_members_t *b) {
  if (a->n != b->n) return 0;
  for (size_t i = 0; i < a->n; i++)
    if (kr_cluster_member_index(b, a->v[i].name, strlen(a->v[i].name)) < 0) return 0;
  return 1;
}

/* ---- moves --------------------------------------------------------------------------- */

kr_slice_t kr_cluster_host_of_key(kr_slice_t key) {
  if (key.n && key.p[0] == '[') { /* IPv6 literal: keep the brackets */
    const char *rb = memchr(key.p, ']', key.n);
    return rb ? kr_slice(key.p, (size_t)(rb + 1 - key.p)) : kr_slice(key.p, 0);
  }
  const char *colon = memchr(key.p, ':', key.n);
  return kr_slice(key.p, colon ? (size_t)(colon - key.p) : key.n);
}

int kr_cluster_host_moves(const kr_cluster_members_t *before, const kr_cluster_members_t *after,
                          kr_slice_t key, size_t *from, size_t *to) {
  kr_slice_t host = kr_cluster_host_of_key(key);
  if (!host.n || !before->n || !after->n) return -1;
  kr_slice_t domain = kr_cluster_domain_of_host(host);
  *from = kr_cluster_owner_of_domain(before, domain);
  *to = kr_cluster_owner_of_domain(after, domain);
  return strcmp(before->v[*from].name, after->v[*to].name) != 0;
}

/* ---- epochs -------------------------------------------------------------------------- */

kr_cluster_epoch_verdict_t kr_cluster_epoch_decide(uint64_t mine, uint64_t moving, int64_t redis) {
  /* An unfinished part of a move comes first: its rows may be half
   * exported or half imported whatever Redis says now. */
  if (moving && moving > mine) return KR_EPOCH_MOVING;
  if (redis < 0) return KR_EPOCH_CRAWL; /* Redis away: no move can finish without us */
  if ((uint64_t)redis > mine) return KR_EPOCH_BEHIND;
  if ((uint64_t)redis < mine) return KR_EPOCH_AHEAD;
  return KR_EPOCH_CRAWL;
}
