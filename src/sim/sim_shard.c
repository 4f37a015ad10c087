/*
 * A policy's simulation split by host (sim.h, "shards"): which URIs each
 * shard runs, and how the shards' results add up to the whole run's.
 * Nothing couples hosts in the model: politeness, valence, validator
 * trust and the poisson allocator's budget are per host queue; changes
 * and fetch durations are drawn from one stream per URI; the frontier's
 * connection cap is set out of reach by the run; and the metrics are
 * exact integer sums. So the merged numbers are the whole run's, bit for
 * bit, however the hosts are split. Two bounds could still couple hosts,
 * neither reached by the worlds measured: sim.c's pull() issues at most
 * 1,000,000 URIs per call (a world with more hosts than that, all due at
 * once, would issue the rest at the next event), and a store whose WAL
 * passed its cap would hold fetches until the next turn (the simulator's
 * checkpoints run inline, so the WAL does not grow past it).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kria/fp.h"
#include "sim.h"
#include "sim_int.h"

/* The frontier's queue key by host: host[:port], lower case (the run's
 * frontier options keep the default queue-assign, by host). */
kr_slice_t kr__sim_host_key(const char *url, size_t len) {
  const char *p = memchr(url, ':', len);
  size_t a = p && (size_t)(p - url) + 3 <= len && !memcmp(p, "://", 3) ? (size_t)(p - url) + 3 : 0;
  size_t e = a;
  while (e < len && url[e] != '/' && url[e] != '?' && url[e] != '#') e++;
  for (size_t k = e; k > a; k--)
    if (url[k - 1] == '@') {
      a = k;
      break;
    }
  return kr_slice(url + a, e - a);
}

int kr__sim_key_eq(kr_slice_t x, kr_slice_t y) {
  if (x.n != y.n) return 0;
  for (size_t i = 0; i < x.n; i++) {
    unsigned char c = (unsigned char)x.p[i], d = (unsigned char)y.p[i];
    if (c != d && (c | 0x20) != (d | 0x20)) return 0;
  }
  return 1;
}

static uint64_t key_hash(kr_slice_t k) {
  char buf[256];
  size_t n = KR_MIN(k.n, sizeof buf);
  for (size_t i = 0; i < n; i++) {
    char c = k.p[i];
    buf[i] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
  }
  return kr_fp(buf, n) ^ k.n;
}

typedef struct hload {
  uint64_t uris;
  uint32_t idx;  /* first appearance */
} hload_t;

static int cmp_load(const void *a, const void *b) {
  const hload_t *x = a, *y = b;
  if (x->uris != y->uris) return x->uris > y->uris ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

uint32_t kr_sim_shard_plan(const kr_sim_world_t *w, uint32_t nshards, uint32_t *shard_of) {
  if (nshards < 1) nshards = 1;
  size_t n = w->n;
  /* host of each URI: open addressing over the first URI of each host */
  size_t cap = 64;
  while (cap < n * 2) cap *= 2;
  uint32_t *slot = kr_xcalloc(cap, sizeof *slot);   /* host + 1 */
  size_t *first = kr_xcalloc(n ? n : 1, sizeof *first); /* host -> its first URI */
  uint32_t *host = kr_xcalloc(n ? n : 1, sizeof *host);
  hload_t *load = kr_xcalloc(n ? n : 1, sizeof *load);
  uint32_t nhosts = 0;
  for (size_t i = 0; i < n; i++) {
    kr_slice_t k = kr__sim_host_key(kr__sim_url(w, &w->u[i]), w->u[i].url_len);
    size_t j = (size_t)key_hash(k) & (cap - 1);
    for (; slot[j]; j = (j + 1) & (cap - 1)) {
      const wuri_t *f = &w->u[first[slot[j] - 1]];
      if (kr__sim_key_eq(kr__sim_host_key(kr__sim_url(w, f), f->url_len), k)) break;
    }
    if (!slot[j]) {
      first[nhosts] = i;
      load[nhosts].idx = nhosts;
      slot[j] = ++nhosts;
    }
    host[i] = slot[j] - 1;
    load[host[i]].uris++;
  }
  /* whole hosts, the largest first, onto the least loaded shard */
  uint32_t used = KR_MIN(nshards, nhosts ? nhosts : 1);
  qsort(load, nhosts, sizeof *load, cmp_load);
  uint64_t *total = kr_xcalloc(used, sizeof *total);
  uint32_t *shard_of_host = kr_xcalloc(nhosts ? nhosts : 1, sizeof *shard_of_host);
  for (uint32_t h = 0; h < nhosts; h++) {
    uint32_t best = 0;
    for (uint32_t s = 1; s < used; s++)
      if (total[s] < total[best]) best = s;
    total[best] += load[h].uris;
    shard_of_host[load[h].idx] = best;
  }
  for (size_t i = 0; i < n; i++) shard_of[i] = shard_of_host[host[i]];
  free(shard_of_host);
  free(total);
  free(load);
  free(host);
  free(first);
  free(slot);
  return used;
}

static void metrics_add(kr_sim_metrics_t *a, const kr_sim_metrics_t *b) {
  a->versions += b->versions;
  a->captured += b->captured;
  a->fetches += b->fetches;
  a->body_bytes += b->body_bytes;
  a->not_modified += b->not_modified;
  a->aborted += b->aborted;
  a->unchanged_visits += b->unchanged_visits;
  a->unchanged_full_bytes += b->unchanged_full_bytes;
  a->unchanged_body_bytes += b->unchanged_body_bytes;
  a->lost_by_validators += b->lost_by_validators;
  a->fresh_ms += b->fresh_ms;
  a->observed_ms += b->observed_ms;
  a->age_ms2 += b->age_ms2;
  a->wversions += b->wversions;
  a->wcaptured += b->wcaptured;
  a->wfresh_ms += b->wfresh_ms;
  a->wobserved_ms += b->wobserved_ms;
  a->harmonic += b->harmonic;
}

/* The events' figures: sums, and the worst of each shard's worst. */
static void events_add(kr_sim_events_t *o, const kr_sim_events_t *p, int first) {
  o->tracked |= p->tracked;
  o->refused += p->refused;
  o->busy += p->busy;
  o->dead += p->dead;
  o->robots_fetches += p->robots_fetches;
  o->robots_5xx += p->robots_5xx;
  o->robots_retry += p->robots_retry;
  o->robots_failed += p->robots_failed;
  o->disallowed += p->disallowed;
  o->relax_uris += p->relax_uris;
  o->relax_visited += p->relax_visited;
  o->born += p->born;
  o->born_visited += p->born_visited;
  o->born_unknown += p->born_unknown;
  o->links += p->links;
  o->end_disregarded += p->end_disregarded;
  o->end_failed += p->end_failed;
  o->end_retry += p->end_retry;
  if (p->bound_ms > o->bound_ms) o->bound_ms = p->bound_ms;
  if (p->live_checked && (!o->live_checked || p->live_worst_ms > o->live_worst_ms)) {
    o->live_worst_ms = p->live_worst_ms;
    memcpy(o->live_worst_url, p->live_worst_url, sizeof o->live_worst_url);
  }
  o->live_checked += p->live_checked;
  o->live_late += p->live_late;
  if (p->rec_checked && (!o->rec_checked || p->rec_worst_ms > o->rec_worst_ms))
    o->rec_worst_ms = p->rec_worst_ms;
  o->rec_checked += p->rec_checked;
  o->rec_late += p->rec_late;
  if (p->host_uris_max > o->host_uris_max) o->host_uris_max = p->host_uris_max;
  if (p->host_uris_cap > o->host_uris_cap) o->host_uris_cap = p->host_uris_cap;
  o->hosts_over_cap += p->hosts_over_cap;
  if (p->hosts_checked && (first || !o->worst_host[0] || p->worst_growth_s > o->worst_growth_s)) {
    o->worst_growth_s = p->worst_growth_s;
    memcpy(o->worst_host, p->worst_host, sizeof o->worst_host);
  }
  o->hosts_checked += p->hosts_checked;
  o->hosts_growing += p->hosts_growing;
}

void kr_sim_result_merge(kr_sim_result_t *out, const kr_sim_result_t *parts, size_t n) {
  memset(out, 0, sizeof *out);
  out->politeness_min_gap_ms = -1;
  if (!n) return;
  out->policy = parts[0].policy;
  out->fixed_interval_ms = parts[0].fixed_interval_ms;
  int gap_seen = 0; /* a gap may be negative: a violation */
  for (size_t i = 0; i < n; i++) {
    const kr_sim_result_t *p = &parts[i];
    metrics_add(&out->all, &p->all);
    metrics_add(&out->early, &p->early);
    out->uris_visited += p->uris_visited;
    out->first_visit_ms += p->first_visit_ms;
    out->hosts += p->hosts;
    out->hosts_distrusted += p->hosts_distrusted;
    out->politeness_checked += p->politeness_checked;
    out->politeness_violations += p->politeness_violations;
    if (p->politeness_checked &&
        (!gap_seen || p->politeness_min_gap_ms < out->politeness_min_gap_ms)) {
      out->politeness_min_gap_ms = p->politeness_min_gap_ms;
      gap_seen = 1;
    }
    if (p->max_in_flight_host > out->max_in_flight_host)
      out->max_in_flight_host = p->max_in_flight_host;
    out->at_min_wait += p->at_min_wait;
    out->at_max_wait += p->at_max_wait;
    if (p->overdue_max_ms > out->overdue_max_ms) out->overdue_max_ms = p->overdue_max_ms;
    for (int q = 0; q < 2; q++) {
      out->overdue_n[q] += p->overdue_n[q];
      out->overdue_sum_ms[q] += p->overdue_sum_ms[q];
    }
    out->waits_capped += p->waits_capped;
    events_add(&out->ev, &p->ev, i == 0);
    const uint64_t *sa = (const uint64_t *)&p->sig;
    uint64_t *so = (uint64_t *)&out->sig;
    for (size_t k = 0; k < sizeof p->sig / sizeof *sa; k++) so[k] += sa[k];
    if (p->wall_s > out->wall_s) out->wall_s = p->wall_s;
    out->cpu_s += p->cpu_s;
  }
  if (out->uris_visited)
    out->mean_first_visit_s = (double)out->first_visit_ms / 1000.0 / (double)out->uris_visited;
}
