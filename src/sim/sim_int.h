/*
 * Private to the simulator (sim.c runs, sim_world.c worlds): the world's
 * layout and the random numbers both draw from. Not for other modules.
 */
#ifndef KRIA_SIM_INT_H
#define KRIA_SIM_INT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "sim.h"

#define KR__SIM_YEAR_MS (365 * INT64_C(86400000))

typedef struct wuri {
  uint64_t url_off;    /* into pool, NUL-terminated */
  uint32_t url_len;
  uint32_t ctype;      /* index into types */
  uint8_t change;      /* kr_sim_change_t */
  uint8_t validators;  /* kr_sim_validators_t */
  uint8_t is_volatile;
  double rate;         /* POISSON_RATE (before shift_at) */
  double rate2;        /* POISSON_RATE from shift_at on */
  int64_t shift_at;    /* offset; KR__SIM_NEVER: no shift */
  int64_t period_ms;   /* EVERY */
  uint64_t at_off;     /* AT: into at[] */
  uint32_t at_n;
  uint64_t size;
  uint64_t fp;
  uint64_t imp_q;      /* importance x KR_SIM_IMP_ONE_Q (exact sums) */
} wuri_t;

/* A URI's long-crawl events (sim.h "Events"): offsets from the start
 * (ms); KR__SIM_NEVER for none. */
#define KR__SIM_NEVER INT64_MAX
typedef struct wev {
  int64_t born;           /* 0: there at the start; else linked by its hub from then */
  int64_t busy_from, busy_until; /* answers busy_status within [from, until) */
  int64_t dead_at;        /* answers dead_status from then */
  int64_t unlinked_at;    /* its hub stops listing it then */
  int64_t disallow_until; /* robots.txt disallows it until then; 0 never */
  int64_t ra_ms;          /* Retry-After of a busy answer (ra_kind) */
  uint32_t hub;           /* index + 1 of the page that lists it; 0 none */
  uint16_t busy_status, dead_status;
  uint8_t ra_kind;        /* 0 none, 1 delay-seconds, 2 an HTTP-date ra_ms ahead */
  uint8_t is_hub;
} wev_t;

/* A host's event: outage (every connection refused) or robots-down
 * (robots.txt answers 503) within [from, until); robots (its robots.txt
 * is modelled: a robots event names it) and hub (it has a hub) mark the
 * host, with hub the hub's index + 1. */
enum { KR__SIM_H_OUTAGE = 0, KR__SIM_H_ROBOTS_DOWN = 1, KR__SIM_H_ROBOTS = 2, KR__SIM_H_HUB = 3 };
typedef struct whev {
  char *host;             /* queue key, host[:port] */
  int kind;
  int64_t from, until;    /* offsets */
  uint32_t hub;
} whev_t;

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
  wev_t *ev;            /* per URI, NULL: no event names a URI */
  whev_t *hev;          /* host events */
  size_t nhev;
  uint32_t ngrow;       /* grow events so far: page names /g<N>/<K> */
  /* daily and weekly cycles of the Poisson URIs (sim.h) */
  int cyc_on;
  double cyc_a, cyc_b;     /* amplitudes */
  double cyc_pd, cyc_pw;   /* phases at the start (radians) */
  kr_sim_mix_t mix;        /* a synthetic world's rates (n = 0: a trace) */
};

/* The frontier's queue key of a URL by host: host[:port] (sim_shard.c). */
kr_slice_t kr__sim_host_key(const char *url, size_t len);
/* Keys equal, ASCII case aside. */
int kr__sim_key_eq(kr_slice_t x, kr_slice_t y);

/* ---- change processes (sim_world.c) ---------------------------------------
 * Times are epoch ms, t0 the start of the run. A Poisson URI's stream rng
 * gives its changes one after the other whatever the moments it is
 * looked at: kr__sim_poisson_start draws the birth of the version live
 * at the start and the first change, kr__sim_next_change the change
 * after from (shift and cycles applied). */
void kr__sim_poisson_start(const kr_sim_world_t *w, const wuri_t *u, uint64_t *rng, int64_t t0,
                           int64_t *last, int64_t *next);
int64_t kr__sim_next_change(const kr_sim_world_t *w, const wuri_t *u, uint64_t *rng, int64_t t0,
                            int64_t from);
/* The URI's stream at the start of a run. */
uint64_t kr__sim_stream(const kr_sim_world_t *w, const wuri_t *u);
/* The true rate (changes/s) in force at offset at, times the mean cycle
 * factor over the run; a list of change times counts as its mean rate. */
double kr__sim_true_rate(const kr_sim_world_t *w, const wuri_t *u, int64_t duration_ms, int64_t at);

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

/* Exponential with mean 1/rate (changes/s), in whole ms >= 1, bounded. */
static inline int64_t kr__sim_exp_ms(uint64_t *s, double rate) {
  double ms = -log(kr__sim_unif(s)) / rate * 1000.0;
  if (!(ms < 1e15)) return INT64_C(1000000000000000);
  return ms < 1 ? 1 : (int64_t)ceil(ms);
}

#endif
