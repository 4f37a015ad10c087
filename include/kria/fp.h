/*
 * URL fingerprints: a stable 64-bit name for a canonical URL, used as the
 * key of the `uris` table and of the in-memory seen filter. Pure.
 *
 * The function is SipHash-2-4 (Aumasson & Bernstein, "SipHash: a fast
 * short-input PRF", 2012) under the fixed key 00 01 02 ... 0f (the key of
 * the paper's reference test vectors), over the bytes of the canonical
 * URL text, read as the little-endian 64-bit value the reference
 * implementation returns. The single exception: an output of 0 is
 * returned as 1, so 0 can mean "no URI" (e.g. `via` of a seed).
 *
 * Fingerprints are persisted: this function must never change, or every
 * state database becomes a set of strangers. test_fp pins the reference
 * vectors and a few kria URLs. A fixed, public key means anyone can look
 * for collisions, but finding one costs a generic ~2^32 birthday search
 * for 64-bit outputs; the effect of one is that a URL is taken as already
 * known. Among 10 million URLs the chance of any accidental collision is
 * about n^2 / 2^65, i.e. 3 in a million.
 */
#ifndef KRIA_FP_H
#define KRIA_FP_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of len bytes under the 16-byte key (k0 = bytes 0-7, k1 =
 * bytes 8-15, both little-endian), exactly as the reference. */
uint64_t kr_siphash24(const uint8_t key[16], const void *data, size_t len);

/* Fingerprint of a canonical URL (or any byte string, e.g. a host name):
 * SipHash-2-4 under the fixed key 00..0f; never 0. */
uint64_t kr_fp(const void *data, size_t len);

#endif
