/*
 * URL fingerprints (see include/kria/fp.h): SipHash-2-4 written after the
 * description in the SipHash paper — compression rounds over 8-byte
 * little-endian words, the last word carrying the remaining bytes and the
 * length, two compression and four finalization SipRounds — then kria's
 * fixed-key wrapper. Sections: SipRound, SipHash-2-4, fingerprint.
 */
#include "kria/fp.h"

#include <string.h>

/* ---- SipRound ---------------------------------------------------------- */

static inline uint64_t rotl(uint64_t x, int b) {
  return (x << b) | (x >> (64 - b));
}

#define SIPROUND(v0, v1, v2, v3) \
  do {                           \
    v0 += v1;                    \
    v1 = rotl(v1, 13);           \
    v1 ^= v0;                    \
    v0 = rotl(v0, 32);           \
    v2 += v3;                    \
    v3 = rotl(v3, 16);           \
    v3 ^= v2;                    \
    v0 += v3;                    \
    v3 = rotl(v3, 21);           \
    v3 ^= v0;                    \
    v2 += v1;                    \
    v1 = rotl(v1, 17);           \
    v1 ^= v2;                    \
    v2 = rotl(v2, 32);           \
  } while (0)

/* Little-endian load whatever the host order, without alignment needs. */
static inline uint64_t load64le(const uint8_t *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
         (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
         (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* ---- SipHash-2-4 ------------------------------------------------------- */

static uint64_t siphash24(uint64_t k0, uint64_t k1, const uint8_t *in,
                          size_t len) {
  uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575);
  uint64_t v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
  uint64_t v2 = k0 ^ UINT64_C(0x6c7967656e657261);
  uint64_t v3 = k1 ^ UINT64_C(0x7465646279746573);
  size_t whole = len & ~(size_t)7;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m = load64le(in + i);
    v3 ^= m;
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    v0 ^= m;
  }
  /* Last word: the 0-7 remaining bytes, the length's low byte on top. */
  uint64_t b = (uint64_t)(len & 0xff) << 56;
  for (size_t i = 0; i < (len & 7); i++) b |= (uint64_t)in[whole + i] << (8 * i);
  v3 ^= b;
  SIPROUND(v0, v1, v2, v3);
  SIPROUND(v0, v1, v2, v3);
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND(v0, v1, v2, v3);
  SIPROUND(v0, v1, v2, v3);
  SIPROUND(v0, v1, v2, v3);
  SIPROUND(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t kr_siphash24(const uint8_t key[16], const void *data, size_t len) {
  return siphash24(load64le(key), load64le(key + 8), data, len);
}

/* ---- fingerprint ------------------------------------------------------- */

/* The key 00 01 .. 0f as the two little-endian words. Never change. */
#define FP_K0 UINT64_C(0x0706050403020100)
#define FP_K1 UINT64_C(0x0f0e0d0c0b0a0908)

uint64_t kr_fp(const void *data, size_t len) {
  uint64_t h = siphash24(FP_K0, FP_K1, len ? data : (const uint8_t *)"", len);
  return h ? h : 1;
}
