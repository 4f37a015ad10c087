/*
 * The state directory's free-space guard (diskguard.c): keeps SQLite from
 * meeting a full disk in the middle of a COMMIT.
 *
 * SQLite answers ENOSPC during COMMIT (the WAL must grow) with
 * SQLITE_FULL and rolls the whole transaction back, while the frontier's
 * memory already counts those writes as done: the crawl could only stop.
 * So the guard keeps a reserve file (kria.reserve, a few MiB allocated
 * with posix_fallocate) in the state directory and looks at the free
 * space (statvfs, 1-2 µs) right before each commit and at most once a
 * millisecond while a transaction is open. Below the low mark
 * it deletes the reserve, which gives the commits of the fetches still
 * running room to land, and says "low": the crawl then issues nothing
 * new until kr_diskguard_recover sees the resume mark free again and
 * allocates the reserve anew.
 *
 * Marks scale down on small file systems (tests use a tmpfs of a few
 * MiB): reserve = min(8 MiB, size/16), low = min(4 MiB, size/32),
 * resume = reserve + 2 * low.
 */
#ifndef KRIA_DISKGUARD_H
#define KRIA_DISKGUARD_H

#include <stdint.h>
#include <sys/statvfs.h>

typedef struct kr_diskguard kr_diskguard_t;

typedef struct kr_diskguard_stats {
  uint64_t avail;       /* free bytes at the last look */
  uint64_t reserve;     /* bytes held by kria.reserve now (0 when released) */
  uint64_t low_mark, resume_mark;
  uint64_t lows;        /* times the guard went low */
  int low;              /* low now */
} kr_diskguard_stats_t;

/* Guard dir (which must exist): allocate dir/kria.reserve. A reserve that
 * cannot be allocated (already too little space, a file system without
 * fallocate) is logged and left out; the guard still watches. statvfs_fn
 * may be NULL (statvfs(3)); tests pass a stand-in. Never fails. */
kr_diskguard_t *kr_diskguard_new(const char *dir,
                                 int (*statvfs_fn)(const char *, struct statvfs *));
/* Look at the free space: always when now_ms is 0, else at most once
 * per distinct now_ms (a loop turn's clock). 0 fine, 1 low (went low now
 * or earlier: the reserve is released, the caller holds new work). */
int kr_diskguard_check(kr_diskguard_t *g, uint64_t now_ms);
/* While low: 1 when the resume mark is free again (the reserve is
 * allocated again and the guard is fine), 0 still low. */
int kr_diskguard_recover(kr_diskguard_t *g);
void kr_diskguard_stats(const kr_diskguard_t *g, kr_diskguard_stats_t *out);
const char *kr_diskguard_dir(const kr_diskguard_t *g);
/* Remove the reserve file and free g (NULL is fine). */
void kr_diskguard_free(kr_diskguard_t *g);

#endif
