/*
 * Shared dedup across the members of a cluster: the Redis value that
 * names the original capture of a payload, and when a visit asks Redis
 * for one. Pure: no loop, no Redis (the crawl's side is
 * src/crawl/clusterdedup.c).
 *
 * Key   PREFIX:dd:sha1:BASE32   the payload digest as WARC writes it
 * Value "1 DATE RID NODE URI"   version 1, space separated:
 *   DATE  the original's WARC-Date, epoch ms (decimal)
 *   RID   its WARC-Record-ID, "<urn:uuid:...>"
 *   NODE  the member whose WARC files hold it (kria/cluster.h's names)
 *   URI   its WARC-Target-URI (the rest of the value)
 * A revisit refers to it with WARC-Refers-To-Target-URI = URI,
 * WARC-Refers-To-Date = DATE and WARC-Refers-To = RID: what replay tools
 * resolve across the collection of every member's WARC files.
 */
#ifndef KRIA_XDEDUP_H
#define KRIA_XDEDUP_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/digest.h"

/* The longest value written or read (a longer URI is not shared). */
#define KR_XDEDUP_VALUE_MAX 4096

typedef struct kr_xdedup_orig {
  uint64_t date_ms;
  kr_slice_t rid;   /* "<...>", < KR_WARC_ID_SIZE (48) bytes */
  kr_slice_t node;
  kr_slice_t url;
} kr_xdedup_orig_t;

/* The key of payload digest d under prefix, NUL-terminated, into out
 * (cap bytes). Its length, or 0 when it does not fit. */
size_t kr_xdedup_key(char *out, size_t cap, const char *prefix,
                     const uint8_t d[KR_SHA1_LEN]);
/* o's value into out (cap bytes, NUL-terminated). Its length, or 0 when
 * o is not one to share (a field empty or holding a space or a control
 * byte where it may not, or over cap / KR_XDEDUP_VALUE_MAX). */
size_t kr_xdedup_encode(char *out, size_t cap, const kr_xdedup_orig_t *o);
/* Read a value (n bytes at p) into *o, pointing into p. 1, or 0 when it
 * is no version-1 value (another version, malformed, a field out of its
 * bounds): the visit then keeps the local index's answer. */
int kr_xdedup_decode(const char *p, size_t n, kr_xdedup_orig_t *o);

/* What a visit knows when its WARC records are about to be written. */
typedef struct kr_xdedup_visit {
  int on;           /* cluster.shared-dedup, adaptive.dedupe, WARC files */
  int status;       /* HTTP status */
  int complete;     /* the whole payload came and was digested */
  int not_modified; /* a 304 or a mid-fetch abort: its own original */
  int robots;       /* a robots.txt */
  int local;        /* the local originals hold this payload (any URI) */
  int redis_up;     /* the connection to Redis is up */
} kr_xdedup_visit_t;

typedef enum kr_xdedup_step {
  KR_XDEDUP_SKIP = 0, /* nothing to ask: local answer or nothing to share */
  KR_XDEDUP_ASK,      /* ask Redis, the walk waits for the answer */
  KR_XDEDUP_AWAY,     /* Redis would be asked but is away: local only */
} kr_xdedup_step_t;

/* Ask Redis only for a complete 2xx payload the local index does not
 * know: the local index stays the fast path. */
kr_xdedup_step_t kr_xdedup_decide(const kr_xdedup_visit_t *v);

#endif
