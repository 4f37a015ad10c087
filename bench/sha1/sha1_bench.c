/*
 * bench/sha1/sha1_bench.c — SHA-1 throughput of what a response record
 * needs (its payload and block digests), side by side in one run:
 *
 *   openssl-1      one message through a reused kr_sha1_t (OpenSSL EVP)
 *   openssl-2      two messages, one after the other, the same way
 *   pair           kr_sha1_pair of two messages (SHA-NI when the CPU has it)
 *   pair-fallback  kr_sha1_pair with the OpenSSL path forced
 *
 * for 10 KB and 1 MB messages. GB/s = message bytes hashed (both messages
 * for the two-message rows) / process CPU time; each figure is the median
 * of R rounds (the rows interleaved round by round, ~0.2 s each), so other
 * work on the machine mostly shows as spread, not as a bias.
 *
 * Build and run: make bench-sha1 && build/bench/sha1_bench [--rounds R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/digest.h"

#define ROUND_NS 200000000.0 /* CPU time per measurement */
#define MAX_ROUNDS 15

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

enum { ONE, TWO, PAIR, PAIR_SSL, NKIND };
static const char *kind_name[NKIND] = {"openssl-1", "openssl-2", "pair", "pair-fallback"};

static volatile uint8_t sink;

/* One message hashing of kind k over a and b (n bytes each); bytes hashed. */
static size_t once(int k, kr_sha1_t *s, const char *a, const char *b, size_t n) {
  uint8_t d1[KR_SHA1_LEN], d2[KR_SHA1_LEN] = {0};
  kr_slice_t va = kr_slice(a, n), vb = kr_slice(b, n);
  size_t bytes = 2 * n;
  switch (k) {
  case ONE:
    bytes = n;
    /* fallthrough */
  case TWO:
    if (kr_sha1_reset(s) || kr_sha1_update(s, a, n) || kr_sha1_final(s, d1)) exit(1);
    if (k == TWO && (kr_sha1_reset(s) || kr_sha1_update(s, b, n) || kr_sha1_final(s, d2)))
      exit(1);
    break;
  default:
    if (kr_sha1_pair(s, &va, 1, &vb, 1, d1, d2)) exit(1);
  }
  sink ^= d1[0] ^ d2[0];
  return bytes;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
  int rounds = 5;
  if (argc == 3 && strcmp(argv[1], "--rounds") == 0) rounds = atoi(argv[2]);
  if (rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "usage: sha1_bench [--rounds 1..%d]\n", MAX_ROUNDS);
    return 2;
  }
  static const size_t sizes[] = {10 * 1024, 1024 * 1024};
  char *a = malloc(sizes[1]), *b = malloc(sizes[1]);
  kr_sha1_t s;
  if (!a || !b || kr_sha1_init(&s)) return 1;
  for (size_t i = 0; i < sizes[1]; i++) {
    a[i] = (char)(i * 131 + 7);
    b[i] = (char)(i * 31 + 3);
  }
  kr_sha1_pair_set_accel(1);
  printf("kr_sha1_pair path on this CPU: %s; %d rounds, median GB/s (min-max)\n\n",
         kr_sha1_pair_accel() ? "SHA-NI" : "OpenSSL (no SHA extensions)", rounds);
  printf("%-14s %26s %26s\n", "", "10 KB", "1 MB");
  double gbs[2][NKIND][MAX_ROUNDS];
  for (int r = 0; r < rounds; r++)
    for (int z = 0; z < 2; z++)
      for (int k = 0; k < NKIND; k++) {
        size_t bytes = 0;
        kr_sha1_pair_set_accel(k != PAIR_SSL); /* CPUID: slow in a VM, not per call */
        double t0 = cpu_ns(), t;
        do {
          for (int i = 0; i < 16; i++) bytes += once(k, &s, a, b, sizes[z]);
        } while ((t = cpu_ns() - t0) < ROUND_NS);
        gbs[z][k][r] = bytes / t;
      }
  double med[2][NKIND];
  for (int k = 0; k < NKIND; k++) {
    printf("%-14s", kind_name[k]);
    for (int z = 0; z < 2; z++) {
      double *v = gbs[z][k];
      qsort(v, (size_t)rounds, sizeof *v, cmp_double);
      med[z][k] = v[rounds / 2];
      char cell[64];
      snprintf(cell, sizeof cell, "%.2f (%.2f-%.2f)", med[z][k], v[0], v[rounds - 1]);
      printf(" %26s", cell);
    }
    printf("\n");
  }
  printf("\npair / openssl-2 (same work, two digests): 10 KB %.2fx, 1 MB %.2fx\n",
         med[0][PAIR] / med[0][TWO], med[1][PAIR] / med[1][TWO]);
  printf("CPU per two 10 KB digests: openssl-2 %.2f us, pair %.2f us\n",
         2 * 10240 / med[0][TWO] / 1e3, 2 * 10240 / med[0][PAIR] / 1e3);
  kr_sha1_free(&s);
  free(a);
  free(b);
  return 0;
}
