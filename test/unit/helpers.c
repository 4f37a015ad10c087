/*
 * Helpers shared by the unit tests (see helpers.h).
 */
#include "helpers.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

int th_tmpdir(char *dir, size_t n, const char *name) {
  const char *t = getenv("TMPDIR");
  int len = snprintf(dir, n, "%s/kria-%s-XXXXXX", t && *t ? t : "/tmp", name);
  if (len < 0 || (size_t)len >= n) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return mkdtemp(dir) ? 0 : -1;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

int th_rmtree(const char *dir) { return nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

double th_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t th_splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}
