/*
 * WARC files of a crawl: names, rotation, the ".open" suffix, durability
 * and start-up repair, on top of the pure record writer (kria/warc.h).
 *
 * Files are named PREFIX-YYYYMMDDhhmmssSSS-SERIAL-HOST.warc.gz (".warc"
 * uncompressed) in one directory, with ".open" appended while written;
 * each starts with a warcinfo record that every later record names in
 * WARC-Warcinfo-ID. A file is closed (synced unless durability is none,
 * renamed without ".open") when it reaches max_size (before the next
 * record, unless the caller holds it for the rest of a visit:
 * kr_warcfile_hold) or at kr_warcfile_rotate/close. Records are gathered in a write buffer
 * (o.buffer bytes, 64 KiB) and reach the kernel in one pwritev when it
 * is full, at kr_warcfile_flush, before every sync and at the file's
 * close: a record in the buffer is lost if kria dies, one in the kernel
 * only if the machine does. So the caller flushes (or syncs) before it
 * commits to the store the visits whose records it wrote. Durability
 * says when records are on disk:
 *   none    the OS decides (after kr_warcfile_flush);
 *   batch   the caller calls kr_warcfile_sync when kr_warcfile_sync_due
 *           says so, and always before committing to the store the
 *           visits whose records were written since the last sync;
 *   record  fdatasync after every record (slow; for tests and paranoia).
 * A record that cannot be written completely (ENOSPC, EIO, a failing
 * sync) is cut away again, so a file always ends at a record boundary;
 * the caller gets KR_ENOSPC or KR_EIO and may retry later. Earlier
 * records still buffered when a write fails stay buffered, for the next
 * flush.
 *
 * Not thread-safe; one kr_warcfile_t per crawl, used from one thread.
 */
#ifndef KRIA_WARCFILE_H
#define KRIA_WARCFILE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "clock.h"
#include "kria/warc.h"

/* The write buffer's default size. Larger writes cost ext4 less per
 * byte alone, but in a crawl, where the buffer and the fresh page-cache
 * folios compete with everything else for the caches, 64 KiB measured
 * best of 32 KiB to 1 MiB (bench/RESULTS.md). */
#define KR_WARCFILE_BUFFER (64u << 10)

enum kr_warcfile_durability {
  KR_WARC_SYNC_NONE = 0,
  KR_WARC_SYNC_BATCH,
  KR_WARC_SYNC_RECORD,
};

typedef struct kr_warcfile_opts {
  const char *dir;               /* created (one level) when missing */
  const char *prefix;            /* see kr_warcfile_prefix_ok */
  const char *host;              /* in file names; NULL = gethostname() */
  kr_warc_writer_opts_t writer;  /* gzip, level, engine */
  uint64_t max_size;             /* rotate at this size (1 GiB); 0 never */
  int durability;                /* enum kr_warcfile_durability */
  uint32_t batch_ms;             /* batch: sync due after this long (1000) */
  uint32_t batch_records;        /* ... or this many records (1000) */
  kr_warc_info_t info;           /* warcinfo fields (borrowed during
                                    kr_warcfile_open only); software and
                                    hostname default to kria's */
  const kr_clock_t *clock;       /* file names and default dates; NULL =
                                    the real clock */
  size_t buffer;                 /* write buffer bytes (KR_WARCFILE_BUFFER);
                                    0: each record reaches the kernel as
                                    it is written */
  /* For tests: stand-ins for pwritev(2) and fdatasync(2). */
  ssize_t (*pwritev_fn)(int fd, const struct iovec *iov, int n, off_t off);
  int (*sync_fn)(int fd);
} kr_warcfile_opts_t;

/* Where a record went. */
typedef struct kr_warcfile_loc {
  char file[256];                /* final name in dir (without ".open") */
  uint64_t offset, length;       /* the record's gzip member; for plain
                                    WARC the record without the CRLF CRLF
                                    after it (CDX convention) */
  kr_warc_written_t w;           /* digests and sizes */
} kr_warcfile_loc_t;

typedef struct kr_warcfile kr_warcfile_t;

/* gzip at the default level, 1 GiB, durability none, batch 1 s/1000,
 * a 64 KiB write buffer. */
void kr_warcfile_opts_default(kr_warcfile_opts_t *o);

/* 1 when prefix may name WARC files: 1..64 of [A-Za-z0-9._-], not
 * starting with '.', no "..": it can never leave the directory. */
int kr_warcfile_prefix_ok(const char *prefix);

/* Prepare to write into opts->dir. No file is created before the first
 * record. 0 and *out; KR_EINVAL (bad prefix or options), KR_EIO (the
 * directory cannot be created or opened); errbuf (may be NULL) says why. */
int kr_warcfile_open(const kr_warcfile_opts_t *opts, kr_warcfile_t **out,
                     char *errbuf, size_t errlen);

/* Write one record (see kr_warc_write; block as n slices). A zero
 * rec->date_ms is set to now, a NULL rec->warcinfo_id to the file's
 * warcinfo record. Rotates first when the file is full. 0 and *loc (may
 * be NULL); KR_EINVAL (bad record: nothing written), KR_ENOSPC or KR_EIO
 * (the partial record was cut away; errmsg says more). */
int kr_warcfile_write(kr_warcfile_t *wf, kr_warc_rec_t *rec, const kr_slice_t *block,
                      size_t n, kr_warcfile_loc_t *loc);

/* A fresh record id, e.g. to name a record before the one that points
 * at it with WARC-Concurrent-To is written. */
void kr_warcfile_new_id(kr_warcfile_t *wf, char out[KR_WARC_ID_SIZE]);

/* Streaming (see kr_warc_begin): a record whose block arrives in pieces.
 * On any error the partial record is cut away and the stream ends. */
int kr_warcfile_begin(kr_warcfile_t *wf, kr_warc_rec_t *rec, uint64_t block_len);
int kr_warcfile_append(kr_warcfile_t *wf, const void *p, size_t n);
int kr_warcfile_end(kr_warcfile_t *wf, kr_warcfile_loc_t *loc);
/* Give up the record being streamed (shutdown): it is cut away, the file
 * ends at the record before. A no-op when nothing is being streamed. */
void kr_warcfile_abort(kr_warcfile_t *wf);

/* The buffered records to the kernel (they then survive a crash of
 * kria). 0, KR_EIO or KR_ENOSPC: what was not written stays buffered. */
int kr_warcfile_flush(kr_warcfile_t *wf);
/* Flush, then fdatasync the open file when records were written since
 * the last sync. 0, KR_EIO or KR_ENOSPC. */
int kr_warcfile_sync(kr_warcfile_t *wf);
/* Syncing on another thread (batch durability without blocking the
 * writer's thread). kr_warcfile_sync_begin notes what a sync started now
 * covers: the records written so far (up to the file's end, or the start
 * of a record being streamed) in the file open now, and takes a duplicate
 * of its descriptor, so a rotation meanwhile cannot close it under the
 * sync. kr_warcfile_sync_run, the fdatasync, touches only the job: it may
 * run on any thread while the writer goes on. kr_warcfile_sync_end, back
 * on the writer's thread, counts the covered records as synced (records
 * written since stay unsynced) and releases the job. */
typedef struct kr_warcfile_syncjob {
  int fd;                        /* duplicate; -1: nothing to sync */
  int (*sync_fn)(int fd);
  uint64_t file;                 /* which file (kr_warcfile_files at begin) */
  uint64_t boundary;             /* synced up to here once it ran */
  uint64_t records;              /* the file's records it covers */
  int err;                       /* errno of a failed sync, 0 */
  char name[264];                /* the file (".open"), for messages */
} kr_warcfile_syncjob_t;
/* Flushes first. 1 (a job to run), 0 (nothing unsynced: *j needs no run
 * nor end), or KR_EIO / KR_ENOSPC (the flush failed, or no descriptor
 * left). */
int kr_warcfile_sync_begin(kr_warcfile_t *wf, kr_warcfile_syncjob_t *j);
void kr_warcfile_sync_run(kr_warcfile_syncjob_t *j);
/* wf may be NULL (the writer was closed meanwhile: its close synced).
 * 0, KR_EIO or KR_ENOSPC (the sync failed; the records stay unsynced). */
int kr_warcfile_sync_end(kr_warcfile_t *wf, kr_warcfile_syncjob_t *j);
/* Batch durability: 1 when unsynced records reached batch_records or the
 * oldest is batch_ms old at now_ms. Always 0 for none and record. */
int kr_warcfile_sync_due(const kr_warcfile_t *wf, uint64_t now_ms);
/* The records of one visit stay in one file (their WARC-Concurrent-To
 * then never points into another): after kr_warcfile_hold(wf, 1) a full
 * file is not rotated before a record, until kr_warcfile_hold(wf, 0).
 * The caller holds after the visit's first record, which rotated as
 * ever, for the few records after it; kr_warcfile_rotate still closes
 * the file at once. */
void kr_warcfile_hold(kr_warcfile_t *wf, int on);
/* Close the current file now (next record opens a new one). 0 or KR_EIO. */
int kr_warcfile_rotate(kr_warcfile_t *wf);
/* Rotate and free. Returns kr_warcfile_rotate's result. */
int kr_warcfile_close(kr_warcfile_t *wf);

/* Name of the file being written (with ".open"), or NULL. */
const char *kr_warcfile_current(const kr_warcfile_t *wf);
/* Size of the file being written (0 when none). */
uint64_t kr_warcfile_size(const kr_warcfile_t *wf);
/* Files opened (begun with their warcinfo record) since kr_warcfile_open. */
uint64_t kr_warcfile_files(const kr_warcfile_t *wf);
/* Detail of the last error ("" when none). */
const char *kr_warcfile_errmsg(const kr_warcfile_t *wf);
/* The known durable part of the file being written: its ".open" name and
 * the offset, a record boundary, up to which its last successful sync
 * reached. 1 and *name (valid until the next call) and *offset; 0 when no
 * file is open or nothing of it was synced yet. Saved where it commits
 * with the visits (the store), it lets the start-up repair check only
 * the bytes after it. */
int kr_warcfile_synced(const kr_warcfile_t *wf, const char **name, uint64_t *offset);

/* A synced offset as kept between runs: "OFFSET NAME". */
typedef struct kr_warcfile_mark {
  char name[264];                /* the ".open" file name */
  uint64_t offset;               /* synced up to here */
} kr_warcfile_mark_t;
/* Format "OFFSET NAME" into out (>= 300 bytes is always enough). */
void kr_warcfile_mark_format(char *out, size_t outlen, const char *name, uint64_t offset);
/* Parse text written by kr_warcfile_mark_format. 0 and *m; -1 for
 * anything else (the text comes from a file: hostile). */
int kr_warcfile_mark_parse(const char *s, kr_warcfile_mark_t *m);

typedef struct kr_warcfile_repair_stats {
  unsigned files;                /* ".open" files found */
  unsigned resumed;              /* of them, checked only past their synced
                                    offset */
  unsigned removed;              /* of them, without one complete record */
  uint64_t records;              /* complete records kept */
  uint64_t bytes_cut;            /* bytes cut off the ends */
} kr_warcfile_repair_stats_t;

/* Repair one leftover file: cut it after its last complete record (gzip:
 * the last whole member ending a record) and rename it without ".open";
 * remove it when no record is complete. name is relative to dirfd.
 * 0 (and adds to *st, may be NULL), KR_EINVAL (name does not end in
 * ".warc.open" or ".warc.gz.open"), KR_EIO (errbuf says why). */
int kr_warcfile_repair(int dirfd, const char *name, kr_warcfile_repair_stats_t *st,
                       char *errbuf, size_t errlen);
/* The same, knowing that the file was synced up to offset synced (see
 * kr_warcfile_synced): only the records from there on are read, so a
 * GiB file takes milliseconds, not seconds. The whole file is read as by
 * kr_warcfile_repair when synced is 0 or past the file's end, or when no
 * record of the file's kind starts there. */
int kr_warcfile_repair_from(int dirfd, const char *name, uint64_t synced,
                            kr_warcfile_repair_stats_t *st, char *errbuf, size_t errlen);
/* Repair every *.warc.open and *.warc.gz.open in dir (at start-up, before
 * kr_warcfile_open); a file named by one of the n marks (may be NULL when
 * n is 0) from its offset. A missing dir is fine. 0 or the first error. */
int kr_warcfile_repair_dir(const char *dir, const kr_warcfile_mark_t *marks, size_t n,
                           kr_warcfile_repair_stats_t *st, char *errbuf, size_t errlen);

#endif
