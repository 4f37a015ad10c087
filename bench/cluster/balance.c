/*
 * Load balance of cluster ownership (kria/cluster.h) for a skewed crawl:
 * D registrable domains whose page counts fall with their rank as a power
 * law (a few huge domains, a long tail: pages(r) = max(1, floor(TOP /
 * r^ALPHA))), owned by rendezvous hashing over N members. For each N,
 * per member: domains and pages, max/mean, and the bound no domain-level
 * sharding can beat (a member holds at least the biggest domain: max(mean,
 * biggest)). Also the cost of one ownership decision (psl + N SipHashes).
 *
 *   balance [DOMAINS [TOP [ALPHA]]]      (100000 2000000 1.2)
 *
 * Deterministic: domain names are "dRANK.example" with a few public
 * suffixes, no randomness.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/cluster.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  size_t ndom = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
  double top = argc > 2 ? atof(argv[2]) : 2e6;
  double alpha = argc > 3 ? atof(argv[3]) : 1.2;
  static const char *const sfx[] = {"org", "com", "is", "co.uk", "de", "gov.uk", "fr", "net"};
  char (*names)[48] = calloc(ndom, sizeof *names);
  uint64_t *pages = calloc(ndom, sizeof *pages);
  uint64_t total = 0;
  for (size_t r = 0; r < ndom; r++) {
    snprintf(names[r], sizeof names[r], "d%zu.%s", r + 1, sfx[r % 8]);
    double p = floor(top / pow((double)(r + 1), alpha));
    pages[r] = p < 1 ? 1 : (uint64_t)p;
    total += pages[r];
  }
  printf("%zu domains, %" PRIu64 " pages (biggest %" PRIu64 ", median %" PRIu64
         "), alpha %.2f\n\n", ndom, total, pages[0], pages[ndom / 2], alpha);
  printf("| members | pages max/mean | bound max(mean, biggest)/mean | pages max/bound | domains "
         "max/mean | domains min/mean | ns per owner decision |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  static const size_t ns[] = {3, 10, 30, 100};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    size_t n = ns[k];
    char (*mn)[32] = calloc(n, sizeof *mn);
    const char **mp = calloc(n, sizeof *mp);
    for (size_t i = 0; i < n; i++) {
      snprintf(mn[i], sizeof mn[i], "kria-%zu", i + 1);
      mp[i] = mn[i];
    }
    kr_cluster_members_t m;
    if (kr_cluster_members_init(&m, mp, n)) return 1;
    uint64_t *lp = calloc(n, sizeof *lp), *ld = calloc(n, sizeof *ld);
    double t0 = now_s();
    for (size_t r = 0; r < ndom; r++) {
      size_t o = kr_cluster_owner_of_domain(&m, kr_cluster_domain_of_host(kr_slice_cstr(names[r])));
      lp[o] += pages[r];
      ld[o]++;
    }
    double per = (now_s() - t0) / (double)ndom * 1e9;
    uint64_t pmax = 0, dmax = 0, dmin = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
      if (lp[i] > pmax) pmax = lp[i];
      if (ld[i] > dmax) dmax = ld[i];
      if (ld[i] < dmin) dmin = ld[i];
    }
    double pmean = (double)total / (double)n, dmean = (double)ndom / (double)n;
    double bound = pmean > (double)pages[0] ? pmean : (double)pages[0];
    printf("| %zu | %.2f | %.2f | %.2f | %.3f | %.3f | %.0f |\n", n, (double)pmax / pmean,
           bound / pmean, (double)pmax / bound, (double)dmax / dmean, (double)dmin / dmean, per);
    kr_cluster_members_free(&m);
    free(lp), free(ld), free(mn), free(mp);
  }
  free(names);
  free(pages);
  return 0;
}
