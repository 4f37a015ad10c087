/*
 * Streaming content decoding for HTTP bodies: gzip (also multi-member),
 * deflate (zlib-wrapped or raw: servers send both for "deflate") and
 * identity. Input arrives in pieces of any size (one byte is fine);
 * output leaves through a callback in chunks of at most the buffer size,
 * all from one buffer the decoder keeps, so no body is ever held whole.
 *
 * Two hard limits protect the caller: a cap on decompressed bytes
 * (exactly max_out bytes are delivered, then KR_EBODY_TOO_BIG) and a cap
 * on the decompressed/compressed ratio once more than ratio_after bytes
 * came out (gzip bombs: KR_ERATIO). Invalid data gives KR_EDECODE. After
 * any error the decoder stays failed until the next kr_inflate_start.
 * Bytes after the end of the last gzip member or deflate stream are
 * ignored and counted, as browsers and curl do. Pure: no loop, no global
 * state.
 */
#ifndef KRIA_INFLATE_H
#define KRIA_INFLATE_H

#include <stddef.h>
#include <stdint.h>

enum kr_coding {
  KR_CODING_IDENTITY = 0,
  KR_CODING_GZIP,    /* gzip, x-gzip */
  KR_CODING_DEFLATE, /* deflate: zlib format or raw, sniffed */
};

typedef struct kr_inflate kr_inflate_t;

/* Receives decoded bytes; return 0 to go on or a negative KR_E* to stop
 * (kr_inflate_feed then returns that value). */
typedef int (*kr_inflate_cb)(void *data, const char *p, size_t n);

typedef struct kr_inflate_limits {
  uint64_t max_out;     /* decoded bytes; 0 = no limit */
  uint32_t max_ratio;   /* decoded/encoded; 0 = no limit */
  uint64_t ratio_after; /* ratio checked only past this many decoded bytes */
} kr_inflate_limits_t;

/* A decoder with an output buffer of chunk bytes (0 = 16 KiB). Never NULL
 * (allocation failure aborts). */
kr_inflate_t *kr_inflate_new(size_t chunk);
void kr_inflate_free(kr_inflate_t *z);

/* Begin a new body with the given coding and limits (lim may be NULL: no
 * limits), reusing the zlib state. 0, or KR_EINVAL for an unknown coding. */
int kr_inflate_start(kr_inflate_t *z, enum kr_coding coding,
                     const kr_inflate_limits_t *lim);
/* Decode n more input bytes, calling cb for each output chunk. 0, the
 * callback's error, KR_EDECODE, KR_ERATIO or KR_EBODY_TOO_BIG. */
int kr_inflate_feed(kr_inflate_t *z, const void *p, size_t n, kr_inflate_cb cb,
                    void *data);
/* The input has ended: 0 if the compressed stream was complete (or no
 * byte was ever fed), else KR_EDECODE. */
int kr_inflate_finish(kr_inflate_t *z);

uint64_t kr_inflate_total_in(const kr_inflate_t *z);  /* input bytes fed */
uint64_t kr_inflate_total_out(const kr_inflate_t *z); /* bytes delivered */
uint64_t kr_inflate_ignored(const kr_inflate_t *z);   /* trailing bytes */
/* Map a Content-Encoding value to a coding: 0 and *out, or KR_EINVAL for
 * an unsupported or stacked coding ("br", "gzip, gzip"). An empty value
 * or "identity" is KR_CODING_IDENTITY. Case-insensitive. */
int kr_inflate_coding(const char *value, size_t n, enum kr_coding *out);

#endif
