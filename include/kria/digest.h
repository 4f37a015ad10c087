/*
 * Streaming SHA-1 and RFC 4648 base32, the digest format of WARC and
 * Heritrix ("sha1:" followed by 32 upper-case base32 characters). Pure:
 * no loop; the only global state is the CPU feature check of
 * kr_sha1_pair. A kr_sha1_t keeps one OpenSSL digest context
 * for its whole life, so hashing many bodies costs no allocation after
 * the first kr_sha1_init.
 */
#ifndef KRIA_DIGEST_H
#define KRIA_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

#define KR_SHA1_LEN 20
/* Base32 of a SHA-1: 32 characters, no padding needed (160 bits = 32x5). */
#define KR_SHA1_B32_LEN 32
/* "sha1:" + base32 + NUL */
#define KR_SHA1_LABEL_SIZE (5 + KR_SHA1_B32_LEN + 1)

typedef struct kr_sha1 {
  void *ctx; /* EVP_MD_CTX, reused across messages */
  void *md;  /* EVP_MD fetched once */
  int open;  /* 1 between kr_sha1_reset and kr_sha1_final */
} kr_sha1_t;

/* Prepare s and start a message. 0, or KR_EIO when OpenSSL has no SHA-1. */
int kr_sha1_init(kr_sha1_t *s);
/* Start a new message, discarding any unfinished one. 0 or KR_EIO. */
int kr_sha1_reset(kr_sha1_t *s);
/* Add n bytes to the current message. 0 or KR_EIO. */
int kr_sha1_update(kr_sha1_t *s, const void *p, size_t n);
/* Finish the message into out. The context needs kr_sha1_reset before the
 * next message. 0 or KR_EIO. */
int kr_sha1_final(kr_sha1_t *s, uint8_t out[KR_SHA1_LEN]);
/* Release the context; s may be zeroed or already freed. */
void kr_sha1_free(kr_sha1_t *s);
/* One-shot helper. */
int kr_sha1(const void *p, size_t n, uint8_t out[KR_SHA1_LEN]);

/* Two messages at once, a = a[0..na) and b = b[0..nb) each a list of
 * slices, into da and db. With the CPU's SHA extensions (SHA-NI, checked
 * by CPUID once) the two compression loops run interleaved block by
 * block: one SHA-1 stream is latency-bound on the round instruction, so
 * the second costs little; the longer message is finished alone. Without
 * them, one after the other through OpenSSL, in s when given (an
 * initialised kr_sha1_t, left needing kr_sha1_reset) or a temporary
 * context. 0 or KR_EIO. */
int kr_sha1_pair(kr_sha1_t *s, const kr_slice_t *a, size_t na, const kr_slice_t *b, size_t nb,
                 uint8_t da[KR_SHA1_LEN], uint8_t db[KR_SHA1_LEN]);
/* 1 when kr_sha1_pair uses the SHA extensions. */
int kr_sha1_pair_accel(void);
/* Tests and benchmarks: on = 0 forces the OpenSSL path of kr_sha1_pair,
 * 1 goes back to the CPU's best (the one process-wide setting). */
void kr_sha1_pair_set_accel(int on);

/* RFC 4648 base32 (alphabet A-Z2-7) of n bytes with '=' padding to a
 * multiple of 8 characters, NUL-terminated. out needs
 * kr_base32_size(n) bytes. Returns the length written (without NUL). */
size_t kr_base32_encode(const uint8_t *in, size_t n, char *out);
static inline size_t kr_base32_size(size_t n) { return (n + 4) / 5 * 8 + 1; }
/* Decode base32 (upper or lower case, padding optional). Returns the
 * number of bytes written to out (at most outsize), or KR_EINVAL for a
 * character outside the alphabet, bad padding, or too small an out. */
int kr_base32_decode(const char *in, size_t n, uint8_t *out, size_t outsize);

/* The 32 base32 characters of a SHA-1, NUL-terminated. */
void kr_sha1_base32(const uint8_t d[KR_SHA1_LEN], char out[KR_SHA1_B32_LEN + 1]);
/* "sha1:" + base32, NUL-terminated, as in WARC-Payload-Digest. */
void kr_sha1_label(const uint8_t d[KR_SHA1_LEN], char out[KR_SHA1_LABEL_SIZE]);

#endif
