/*
 * Private to the simulator (sim.c runs, sim_world.c worlds): the world's
 * layout and the random numbers both draw from. Not for other modules.
 */
#ifndef KRIA_SIM_INT_H
#define KRIA_SIM_INT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "sim.h"

#define KR__SIM_YEAR_MS (365 * INT64_C(86400000))

typedef struct wuri {
  uint64_t url_off;    /* into pool, NUL-terminated */
  uint32_t url_len;
  uint32_t ctype;      /* index into types */
  uint8_t change;      /* kr_sim_change_t */
  uint8_t validators;  /* kr_sim_validators_t */
  uint8_t is_volatile;
  double rate;         /* POISSON_RATE */
  int64_t period_ms;   /* EVERY */
  uint64_t at_off;     /* AT: into at[] */
  uint32_t at_n;
  uint64_t size;
  uint64_t fp;
} wuri_t;

struct kr_sim_world {
  wuri_t *u;
  size_t n, cap;
  char *pool;
  size_t pool_len, pool_cap;
  char **types;
  size_t ntypes;
  int64_t *at;          /* change offsets from the start (ms) */
  size_t nat, at_cap;
  uint64_t seed;
  uint32_t *map;        /* fp -> index + 1, open addressing */
  size_t map_cap;
};

/* The URI with fingerprint fp, or -1. */
int64_t kr__sim_world_find(const kr_sim_world_t *w, uint64_t fp);
/* Its URL (NUL-terminated, owned by the world). */
static inline const char *kr__sim_url(const kr_sim_world_t *w, const wuri_t *u) {
  return w->pool + u->url_off;
}

/* Write a message into err (may be NULL) and return rc. */
int kr__sim_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- random numbers ----------------------------------------------------------
 * splitmix64: small state, good enough for simulation, and a URI's stream
 * depends only on (seed, URI). */
static inline uint64_t kr__sim_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}
static inline uint64_t kr__sim_rnd(uint64_t *s) {
  return kr__sim_mix64(*s += UINT64_C(0x9e3779b97f4a7c15));
}
/* Uniform in (0, 1). */
static inline double kr__sim_unif(uint64_t *s) {
  return ((double)(kr__sim_rnd(s) >> 11) + 0.5) * 0x1p-53;
}
/* Standard normal (Box-Muller). */
static inline double kr__sim_gauss(uint64_t *s) {
  double u = kr__sim_unif(s);
  return sqrt(-2.0 * log(u)) * cos(2 * M_PI * kr__sim_unif(s));
}

#endif
