/*
 * `kria simulate --seeds N`: the statistics over seeds, printed as tables
 * or JSON (simulate_seeds.c; the runs are cmd_simulate.c's).
 */
#ifndef KRIA_SIMULATE_SEEDS_H
#define KRIA_SIMULATE_SEEDS_H

#include <stdio.h>

#include "sim.h"

typedef struct kr_simulate_seeds {
  const char *source;        /* "synthetic" or "trace" */
  const char *trace;         /* its path, or NULL */
  size_t uris;               /* of seed 0's world */
  const kr_sim_opts_t *o;    /* seed 0's options: duration, window */
  uint64_t seed0;            /* seed k is seed0 + k */
  size_t nseeds, npol;
  const kr_sim_result_t *res; /* res[k * npol + i]: seed k, policy i, the
                                 policies in the same order for every seed */
  size_t ref;                /* the policy the others are compared with */
  int json;
} kr_simulate_seeds_t;

void kr_simulate_print_seeds(FILE *f, const kr_simulate_seeds_t *v);

#endif
