/*
 * The WARC writer of a crawl (proc_warc.c): the write-phase processors
 * and the hooks the crawl loop and the http processor call. See the
 * paragraph at the top of proc_warc.c for what is written when.
 */
#ifndef KRIA_PROC_WARC_H
#define KRIA_PROC_WARC_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/config.h"

typedef struct kr_crawl kr_crawl_t;
typedef struct kr_fetch kr_fetch_t;

/* What the writer did so far (kr__warc_stats). */
typedef struct kr_warc_stats {
  uint64_t records;             /* records written, all types */
  uint64_t bytes;               /* bytes written to WARC files */
  uint64_t responses;           /* response records (content stored) */
  uint64_t revisits_identical;  /* identical-payload-digest revisits */
  uint64_t revisits_not_modified; /* server-not-modified revisits */
  uint64_t requests, metadata, dns;
  uint64_t volatile_full;       /* unchanged by the change digest, payload
                                   differs: stored in full */
  uint64_t volatile_skipped;    /* ... not stored (write-volatile = skip) */
  uint64_t truncated;           /* records with WARC-Truncated */
  uint64_t spilled;             /* bodies kept in a temporary file */
  uint64_t deferred;            /* fetches given back: a write failed */
  uint64_t write_errors;        /* failed writes and syncs */
  uint64_t holds;               /* times dispatch was held (full disk) */
  uint64_t syncs;               /* batch syncs before store commits */
  uint64_t repaired_files;      /* ".open" files repaired at start-up */
  uint64_t files;               /* WARC files begun by this process */
  uint64_t reloads;             /* [warc] changes applied by SIGHUP */
  int held;                     /* dispatch held now */
  const char *current;          /* file being written (".open" name), NULL
                                   when none; valid until the next write */
  uint64_t current_size;        /* its size so far */
} kr_warc_stats_t;

/* At kr_crawl_new, once the frontier is open: repair leftover ".open"
 * files in the WARC directory and open the writer. A no-op with
 * warc.enabled = false. 0, or KR_ECONFIG / KR_EIO with a one-line reason
 * in err. */
int kr__warc_open(kr_crawl_t *c, char *err, size_t errlen);
/* At shutdown, every fetch done, before the frontier's last commit: close
 * (sync, rename without ".open") the current file. */
void kr__warc_close(kr_crawl_t *c);
/* When the crawl is torn down without kr__warc_close (an error at start
 * or a fatal one): close the writer's loop handle, cut away a record
 * still being written. kr__warc_close does this itself. */
void kr__warc_detach(kr_crawl_t *c);
/* Shutdown past its grace, running fetches cancelled: a record being
 * written in slices is cut away and its fetch given back. */
void kr__warc_cancel(kr_crawl_t *c);
/* Right before each store COMMIT (the crawl's presync hook, see
 * kr_store_set_presync): durability batch syncs the files, so every
 * record of a committed visit is on disk; with may_wait in the
 * background (KR_STORE_PRESYNC_WAIT), else inline. 0 or
 * KR_STORE_PRESYNC_WAIT. */
int kr__warc_presync(kr_crawl_t *c, int may_wait);
/* Free everything (kr_crawl_free); closes first if still open. */
void kr__warc_free(kr_crawl_t *c);
/* SIGHUP. 1 when [warc] key k is applied by a reload (see
 * kr__warc_reload); other [warc] keys take a restart. */
int kr__warc_key_is_live(kr_cfg_key_t k);
/* Before a reload is applied: 0, or KR_ECONFIG with why in err (the
 * reload is then refused). */
int kr__warc_reload_check(const kr_config_t *n, char *err, size_t errlen);
/* After c->cfg became the new configuration (old is the previous one):
 * apply the changed [warc] keys, log what changed. File settings (prefix,
 * compress, level, max-size, durability, operator) close the current file
 * and apply from the next one; the others apply from the next record. */
void kr__warc_reload(kr_crawl_t *c, const kr_config_t *old);
/* Counters; zero when the writer is off. */
void kr__warc_stats(const kr_crawl_t *c, kr_warc_stats_t *out);

#endif
