/*
 * The archive's insides, shared by its files (archive.c, capture.c,
 * records.c) and nobody else.
 */
#ifndef KRIA_ARCHIVE_IMPL_H
#define KRIA_ARCHIVE_IMPL_H

#include "archive.h"
#include "warcfile.h"
#include "warcsync.h"

#define CAP_MEM_MAX (4u << 20)   /* raw body kept in memory per fetch */
#define MEM_BUDGET (256u << 20)  /* ... and across fetches */
#define SLICED_MIN (1u << 20)    /* response blocks this big are written in slices */
#define DNS_SLOTS 4096           /* power of two: hosts with a dns record */

/* The raw body of one fetch. */
struct kr_archive_cap {
  struct kr_archive_cap *next;     /* pool */
  kr_buf_t mem;                 /* raw body bytes in memory */
  int fd;                       /* spill file, -1 none */
  kr_sha1_t sha;                /* block digest once spilling */
  int sha_ready;                /* sha initialised (once per object) */
  uint64_t len;                 /* raw body bytes recorded */
  uint64_t max;                 /* nothing recorded past this */
  int over;                     /* bytes past max were dropped */
  int failed;                   /* the spill file failed */
  int done;                     /* the visit's records were dealt with */
  kr_slice_t head;              /* the response head (the block's start) */
  int dechunked;                /* fed the de-chunked body; head rewritten */
  kr_buf_t headbuf;             /* ... into this */
  const char *url;              /* for log lines */
};

struct dns_slot {
  uint64_t h;                   /* hash of the host name, 0 empty */
  uint64_t until;               /* recorded until (epoch ms) */
};

/* The response record being written in slices, and the rest of its
 * visit's records once it is done. */
struct job {
  int busy;                     /* 0: the writer is free */
  kr_archive_exchange_t x;      /* its visit (a copy) */
  kr_warc_rec_t rec;
  char pdl[KR_SHA1_LABEL_SIZE]; /* payload digest label, rec.payload_digest */
  uint8_t sha[KR_SHA1_LEN];     /* block digest, rec.block_sha1 */
  uint64_t off;                 /* body bytes appended so far */
  char *buf;                    /* SLICE_BYTES, reading a spill file */
};

struct kr_archive {
  kr_archive_host_t host;
  const kr_config_t *cfg;
  kr_warcfile_t *wf;
  char *dir;
  int durability;               /* enum kr_warcfile_durability */
  int req, meta, dns, volatile_skip, dedupe;
  int dechunk;                  /* warc.chunked = dechunk */
  uint64_t retry_ms;
  uint64_t raw_max;
  kr_store_t *st;
  /* full disk */
  int we_paused;                /* dispatch held by us */
  kr_wheel_entry_t retry;
  uint64_t held_since;
  /* captures */
  struct kr_archive_cap *pool;
  size_t npool;
  size_t mem;                   /* raw bytes in memory, all fetches */
  struct dns_slot *dns_slots;
  kr_buf_t block;               /* metadata and dns blocks */
  kr_buf_t ourl;                /* the URL of the original a revisit names */
  uint64_t files_before;        /* files of writers replaced by a reload */
  /* sliced records: one at a time, in a file of their own (wf2) so that
   * the other visits' records go on into wf meanwhile; later large
   * records wait in order */
  kr_warcfile_t *wf2;           /* opened at the first large record */
  int tail;                     /* writing the job's other records: to wf2 */
  uv_idle_t idle;               /* runs the slices while there is work */
  struct job job;
  kr_archive_exchange_t *q;     /* visits waiting for the writer (a ring) */
  size_t qhead, qn, qcap;
  int cancel;                   /* shutdown: give up sliced records */
  int reopen;                   /* a reload's file settings wait for the job */
  kr_warcsync_t *sync;          /* durability against the store's commits */
  kr_archive_stats_t st_;
};

/* The file writer's options from the configuration; x must stay put
 * while x->o is used (its strings point into x and the config). */
struct kr__archive_wopts {
  kr_warcfile_opts_t o;
  char level[16], size[32];
  char host[128]; /* the file names' HOST: the machine's, and the member's in a cluster */
  kr_warc_field_t extra[7];
};

/* archive.c */
uint64_t kr__archive_now(const kr_archive_t *a);
void kr__archive_wopts(const kr_archive_t *a, struct kr__archive_wopts *x);
/* A write failed (err): count it, hold dispatch, check again later. */
void kr__archive_hold(kr_archive_t *a, int err);
/* The sliced job is done (and the reload's file settings may apply). */
void kr__archive_reopen(kr_archive_t *a);
/* capture.c */
void kr__archive_caps_free(kr_archive_t *a);
/* records.c */
void kr__archive_on_slice(uv_idle_t *h);

#endif
