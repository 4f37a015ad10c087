/*
 * The state directory's free-space guard (see diskguard.h): a reserve
 * file released when free space runs low, so the commits of fetches
 * already running still land, and allocated again once space is back.
 * Only statvfs, unlink and posix_fallocate; no loop, no store.
 */
#include "diskguard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"

#define RESERVE_MAX (8u << 20)
#define LOW_MAX (4u << 20)

struct kr_diskguard {
  char *dir;
  char *path;                   /* dir/kria.reserve */
  int (*statvfs_fn)(const char *, struct statvfs *);
  kr_diskguard_stats_t st;
  uint64_t reserve_want;
  uint64_t looked_ms;           /* now_ms of the last rate-limited look */
};

/* Free bytes (for unprivileged users) and the size of dir's file system;
 * -1 when statvfs fails (the guard then assumes there is room). */
static int look(kr_diskguard_t *g, uint64_t *avail, uint64_t *size) {
  struct statvfs sv;
  if (g->statvfs_fn(g->dir, &sv)) return -1;
  *avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
  *size = (uint64_t)sv.f_blocks * (uint64_t)sv.f_frsize;
  return 0;
}

static void marks(kr_diskguard_t *g, uint64_t size) {
  g->reserve_want = size / 16 < RESERVE_MAX ? size / 16 : RESERVE_MAX;
  g->st.low_mark = size / 32 < LOW_MAX ? size / 32 : LOW_MAX;
  g->st.resume_mark = g->reserve_want + 2 * g->st.low_mark;
}

static int reserve_make(kr_diskguard_t *g) {
  if (!g->reserve_want || g->st.reserve) return 0;
  int fd = open(g->path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  int rc = posix_fallocate(fd, 0, (off_t)g->reserve_want);
  close(fd);
  if (rc) {
    unlink(g->path);
    errno = rc;
    return -1;
  }
  g->st.reserve = g->reserve_want;
  return 0;
}

static void reserve_drop(kr_diskguard_t *g) {
  unlink(g->path); /* also a leftover of an earlier run */
  g->st.reserve = 0;
}

kr_diskguard_t *kr_diskguard_new(const char *dir,
                                 int (*statvfs_fn)(const char *, struct statvfs *)) {
  kr_diskguard_t *g = kr_xcalloc(1, sizeof *g);
  g->dir = kr_xstrdup(dir);
  g->path = kr_xasprintf("%s/kria.reserve", dir);
  g->statvfs_fn = statvfs_fn ? statvfs_fn : statvfs;
  uint64_t avail = 0, size = 0;
  reserve_drop(g);
  if (look(g, &avail, &size) == 0) {
    marks(g, size);
    g->st.avail = avail;
    if (avail >= g->st.resume_mark && reserve_make(g))
      KR_LOG(KR_LOG_WARN, g->path, "cannot allocate the %" PRIu64 "-byte reserve: %s",
             g->reserve_want, strerror(errno));
  }
  return g;
}

int kr_diskguard_check(kr_diskguard_t *g, uint64_t now_ms) {
  if (g->st.low) return 1;
  if (now_ms) {
    if (now_ms == g->looked_ms) return 0;
    g->looked_ms = now_ms;
  }
  uint64_t avail, size;
  if (look(g, &avail, &size)) return 0;
  g->st.avail = avail;
  if (!g->st.low_mark) marks(g, size);
  if (avail >= g->st.low_mark) return 0;
  reserve_drop(g);
  g->st.low = 1;
  g->st.lows++;
  return 1;
}

int kr_diskguard_recover(kr_diskguard_t *g) {
  if (!g->st.low) return 1;
  uint64_t avail, size;
  if (look(g, &avail, &size)) return 0;
  g->st.avail = avail;
  marks(g, size);
  if (avail < g->st.resume_mark) return 0;
  if (reserve_make(g)) {
    KR_LOG(KR_LOG_WARN, g->path, "cannot allocate the reserve again: %s", strerror(errno));
    return 0;
  }
  g->st.low = 0;
  return 1;
}

void kr_diskguard_stats(const kr_diskguard_t *g, kr_diskguard_stats_t *out) { *out = g->st; }
const char *kr_diskguard_dir(const kr_diskguard_t *g) { return g->dir; }

void kr_diskguard_free(kr_diskguard_t *g) {
  if (!g) return;
  reserve_drop(g);
  free(g->path);
  free(g->dir);
  free(g);
}
