/*
 * SHA-1 through OpenSSL's EVP interface and RFC 4648 base32 (see
 * include/kria/digest.h). The EVP_MD is fetched once per kr_sha1_t and
 * the context re-initialised with EVP_DigestInit_ex2(ctx, NULL, ...),
 * which keeps the fetched algorithm: no provider lookup and no
 * allocation per message. Sections: SHA-1, two messages at once
 * (kr_sha1_pair, SHA-NI), base32.
 */
#include "kria/digest.h"

#include <openssl/evp.h>
#include <string.h>

#include "kria/error.h"

#if defined(__x86_64__) || defined(__i386__)
#define SHA1_NI 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define SHA1_NI 0
#endif

/* ---- SHA-1 ---------------------------------------------------------------------- */

int kr_sha1_init(kr_sha1_t *s) {
  s->ctx = NULL;
  s->md = NULL;
  s->open = 0;
  EVP_MD *md = EVP_MD_fetch(NULL, "SHA1", NULL);
  if (!md) return KR_EIO;
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx) {
    EVP_MD_free(md);
    return KR_EIO;
  }
  if (!EVP_DigestInit_ex2(ctx, md, NULL)) {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
    return KR_EIO;
  }
  s->ctx = ctx;
  s->md = md;
  s->open = 1;
  return 0;
}

int kr_sha1_reset(kr_sha1_t *s) {
  if (!s->ctx) return KR_EIO;
  /* NULL type: keep the digest already set, as documented for reuse. */
  if (!EVP_DigestInit_ex2(s->ctx, NULL, NULL)) return KR_EIO;
  s->open = 1;
  return 0;
}

int kr_sha1_update(kr_sha1_t *s, const void *p, size_t n) {
  if (!s->open) return KR_EIO;
  if (n && !EVP_DigestUpdate(s->ctx, p, n)) return KR_EIO;
  return 0;
}

int kr_sha1_final(kr_sha1_t *s, uint8_t out[KR_SHA1_LEN]) {
  unsigned int len = 0;
  if (!s->open) return KR_EIO;
  s->open = 0;
  if (!EVP_DigestFinal_ex(s->ctx, out, &len) || len != KR_SHA1_LEN) return KR_EIO;
  return 0;
}

void kr_sha1_free(kr_sha1_t *s) {
  if (s->ctx) EVP_MD_CTX_free(s->ctx);
  if (s->md) EVP_MD_free(s->md);
  s->ctx = NULL;
  s->md = NULL;
  s->open = 0;
}

int kr_sha1(const void *p, size_t n, uint8_t out[KR_SHA1_LEN]) {
  kr_sha1_t s;
  int err = kr_sha1_init(&s);
  if (!err) err = kr_sha1_update(&s, p, n);
  if (!err) err = kr_sha1_final(&s, out);
  kr_sha1_free(&s);
  return err;
}

/* ---- two messages at once -------------------------------------------------------- */

static int one_ssl(kr_sha1_t *s, const kr_slice_t *v, size_t n, uint8_t d[KR_SHA1_LEN]) {
  if (kr_sha1_reset(s)) return KR_EIO;
  for (size_t i = 0; i < n; i++)
    if (kr_sha1_update(s, v[i].p, v[i].n)) return KR_EIO;
  return kr_sha1_final(s, d);
}

static int pair_ssl(kr_sha1_t *s, const kr_slice_t *a, size_t na, const kr_slice_t *b,
                    size_t nb, uint8_t da[KR_SHA1_LEN], uint8_t db[KR_SHA1_LEN]) {
  kr_sha1_t tmp;
  if (!s) {
    if (kr_sha1_init(&tmp)) return KR_EIO;
  }
  kr_sha1_t *u = s ? s : &tmp;
  int err = one_ssl(u, a, na, da);
  if (!err) err = one_ssl(u, b, nb, db);
  if (!s) kr_sha1_free(&tmp);
  return err;
}

#if SHA1_NI

#define BLOCK 64

/* One message as a stream of 64-byte blocks: runs of whole blocks straight
 * from its slices; a block that straddles slices, and the padded end (one
 * or two blocks, FIPS 180-4 5.1.1), copied into buf. */
typedef struct lane {
  uint32_t h[5];
  const kr_slice_t *v;
  size_t nv, i, off;      /* next byte: slice i, offset off */
  uint64_t len;           /* message bytes */
  const uint8_t *run;     /* blocks ready to compress ... */
  size_t nrun;            /* ... this many */
  int ended;              /* the padding was handed out */
  uint8_t buf[2 * BLOCK];
} lane_t;

static void lane_init(lane_t *l, const kr_slice_t *v, size_t nv) {
  static const uint32_t h0[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u,
                                 0xC3D2E1F0u};
  memcpy(l->h, h0, sizeof h0);
  l->v = v;
  l->nv = nv;
  l->i = l->off = 0;
  l->len = 0;
  for (size_t k = 0; k < nv; k++) l->len += v[k].n;
  l->run = NULL;
  l->nrun = 0;
  l->ended = 0;
}

/* Blocks ready: their count, 0 once the message is done; *p the first. */
static size_t lane_peek(lane_t *l, const uint8_t **p) {
  if (!l->nrun && !l->ended) {
    while (l->i < l->nv && l->off == l->v[l->i].n) {
      l->i++;
      l->off = 0;
    }
    size_t rem = l->i < l->nv ? l->v[l->i].n - l->off : 0;
    if (rem >= BLOCK) {
      l->run = (const uint8_t *)l->v[l->i].p + l->off;
      l->nrun = rem / BLOCK;
      l->off += l->nrun * BLOCK;
    } else {
      size_t got = 0;
      while (got < BLOCK && l->i < l->nv) {
        size_t take = l->v[l->i].n - l->off;
        if (take > BLOCK - got) take = BLOCK - got;
        if (take) memcpy(l->buf + got, l->v[l->i].p + l->off, take);
        got += take;
        l->off += take;
        if (l->off == l->v[l->i].n) {
          l->i++;
          l->off = 0;
        }
      }
      l->run = l->buf;
      l->nrun = 1;
      if (got < BLOCK) { /* the end: 0x80, zeros, the length in bits */
        size_t end = got < BLOCK - 8 ? BLOCK : 2 * BLOCK;
        uint64_t bits = l->len * 8;
        l->buf[got] = 0x80;
        memset(l->buf + got + 1, 0, end - 8 - got - 1);
        for (int k = 0; k < 8; k++) l->buf[end - 1 - k] = (uint8_t)(bits >> (8 * k));
        l->nrun = end / BLOCK;
        l->ended = 1;
      }
    }
  }
  *p = l->run;
  return l->nrun;
}

static void lane_take(lane_t *l, size_t k) {
  l->run += k * BLOCK;
  l->nrun -= k;
}

static void lane_digest(const lane_t *l, uint8_t d[KR_SHA1_LEN]) {
  for (int k = 0; k < 5; k++) {
    d[4 * k] = (uint8_t)(l->h[k] >> 24);
    d[4 * k + 1] = (uint8_t)(l->h[k] >> 16);
    d[4 * k + 2] = (uint8_t)(l->h[k] >> 8);
    d[4 * k + 3] = (uint8_t)l->h[k];
  }
}

/* The compression function with the SHA extensions (Intel SDM, SHA1RNDS4
 * and friends). ABCD lives in one register with A in the top dword, E in
 * the top dword of another; the message words go four at a time, W[i] in
 * the top dword. SHA1RNDS4 does four rounds (its immediate picks f and K
 * of rounds 0-19, 20-39, 40-59, 60-79); the E of the next four rounds is
 * A of four rounds before, rotated by 30, which SHA1NEXTE adds to the next
 * message words; SHA1MSG1 / SHA1MSG2 compute the schedule
 * W[i] = rol1(W[i-3] ^ W[i-8] ^ W[i-14] ^ W[i-16]) four words at a time. */
#define NI __attribute__((target("sha,sse4.1,ssse3")))

typedef struct ni {
  __m128i abcd, abcd0, e, prev, w[4]; /* w[g & 3]: words 4g..4g+3 */
  const uint8_t *p;
} ni_t;

/* Group g (0..19) of block S.p: its four message words, four rounds. */
#define NI_STEP(S, g)                                                                    \
  do {                                                                                   \
    __m128i w_;                                                                          \
    if ((g) < 4)                                                                         \
      w_ = (S).w[(g)&3] =                                                                \
          _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)((S).p + 16 * (g))), bswap); \
    else                                                                                 \
      w_ = (S).w[(g)&3] = _mm_sha1msg2_epu32(                                            \
          _mm_xor_si128(_mm_sha1msg1_epu32((S).w[(g)&3], (S).w[((g) + 1) & 3]),          \
                        (S).w[((g) + 2) & 3]),                                           \
          (S).w[((g) + 3) & 3]);                                                         \
    __m128i ew_ = (g) == 0 ? _mm_add_epi32((S).e, w_) : _mm_sha1nexte_epu32((S).prev, w_); \
    (S).prev = (S).abcd;                                                                 \
    (S).abcd = _mm_sha1rnds4_epu32((S).abcd, ew_, (g) / 5);                              \
  } while (0)

#define NI_BEGIN(S) ((S).abcd0 = (S).abcd)
#define NI_END(S)                                      \
  do {                                                 \
    (S).e = _mm_sha1nexte_epu32((S).prev, (S).e);      \
    (S).abcd = _mm_add_epi32((S).abcd, (S).abcd0);     \
    (S).p += BLOCK;                                    \
  } while (0)

#define NI_GROUPS(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) \
  X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19)

NI static inline void ni_load(ni_t *s, const uint32_t h[5], const uint8_t *p) {
  s->abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0x1B); /* A on top */
  s->e = _mm_set_epi32((int)h[4], 0, 0, 0);
  s->p = p;
}

NI static inline void ni_store(const ni_t *s, uint32_t h[5]) {
  _mm_storeu_si128((__m128i *)h, _mm_shuffle_epi32(s->abcd, 0x1B));
  h[4] = (uint32_t)_mm_extract_epi32(s->e, 3);
}

/* n blocks of one message. */
NI static void ni_blocks1(uint32_t h[5], const uint8_t *p, size_t n) {
  const __m128i bswap = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  ni_t a;
  ni_load(&a, h, p);
  while (n--) {
    NI_BEGIN(a);
#define X(g) NI_STEP(a, g);
    NI_GROUPS(X)
#undef X
    NI_END(a);
  }
  ni_store(&a, h);
}

/* n blocks of each of two messages, the two round chains interleaved. */
NI static void ni_blocks2(uint32_t ha[5], const uint8_t *pa, uint32_t hb[5], const uint8_t *pb,
                          size_t n) {
  const __m128i bswap = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  ni_t a, b;
  ni_load(&a, ha, pa);
  ni_load(&b, hb, pb);
  while (n--) {
    NI_BEGIN(a);
    NI_BEGIN(b);
#define X(g) NI_STEP(a, g); NI_STEP(b, g);
    NI_GROUPS(X)
#undef X
    NI_END(a);
    NI_END(b);
  }
  ni_store(&a, ha);
  ni_store(&b, hb);
}

static void pair_ni(const kr_slice_t *a, size_t na, const kr_slice_t *b, size_t nb,
                    uint8_t da[KR_SHA1_LEN], uint8_t db[KR_SHA1_LEN]) {
  lane_t la, lb;
  const uint8_t *pa, *pb;
  size_t ka, kb;
  lane_init(&la, a, na);
  lane_init(&lb, b, nb);
  while ((ka = lane_peek(&la, &pa)) && (kb = lane_peek(&lb, &pb))) {
    size_t k = ka < kb ? ka : kb;
    ni_blocks2(la.h, pa, lb.h, pb, k);
    lane_take(&la, k);
    lane_take(&lb, k);
  }
  for (lane_t *l = &la; l; l = l == &la ? &lb : NULL) { /* the longer one alone */
    while ((ka = lane_peek(l, &pa))) {
      ni_blocks1(l->h, pa, ka);
      lane_take(l, ka);
    }
  }
  lane_digest(&la, da);
  lane_digest(&lb, db);
}

static int cpu_has_sha(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1)) return 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  return (b >> 29) & 1; /* CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29] */
}
#endif

/* -1 until checked; then 1 when kr_sha1_pair uses SHA-NI. */
static int accel = -1;

void kr_sha1_pair_set_accel(int on) {
#if SHA1_NI
  accel = on ? cpu_has_sha() : 0;
#else
  (void)on;
  accel = 0;
#endif
}

int kr_sha1_pair_accel(void) {
  if (accel < 0) kr_sha1_pair_set_accel(1);
  return accel;
}

int kr_sha1_pair(kr_sha1_t *s, const kr_slice_t *a, size_t na, const kr_slice_t *b, size_t nb,
                 uint8_t da[KR_SHA1_LEN], uint8_t db[KR_SHA1_LEN]) {
#if SHA1_NI
  if (kr_sha1_pair_accel()) {
    pair_ni(a, na, b, nb, da, db);
    return 0;
  }
#endif
  return pair_ssl(s, a, na, b, nb, da, db);
}

/* ---- base32 --------------------------------------------------------------------- */

static const char b32_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

size_t kr_base32_encode(const uint8_t *in, size_t n, char *out) {
  size_t o = 0;
  uint32_t acc = 0; /* at most 12 pending bits */
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    acc = (acc << 8) | in[i];
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out[o++] = b32_alphabet[(acc >> bits) & 31];
    }
    acc &= (1u << bits) - 1;
  }
  if (bits > 0) out[o++] = b32_alphabet[(acc << (5 - bits)) & 31];
  while (o % 8) out[o++] = '=';
  out[o] = '\0';
  return o;
}

static int b32_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= '2' && c <= '7') return c - '2' + 26;
  return -1;
}

int kr_base32_decode(const char *in, size_t n, uint8_t *out, size_t outsize) {
  size_t end = n;
  while (end > 0 && in[end - 1] == '=') end--;
  if (n - end > 6) return KR_EINVAL;
  /* Valid unpadded lengths mod 8 are 0, 2, 4, 5, 7 (RFC 4648 section 6). */
  size_t rem = end % 8;
  if (rem == 1 || rem == 3 || rem == 6) return KR_EINVAL;
  if (n != end && n % 8) return KR_EINVAL;
  uint32_t acc = 0;
  int bits = 0;
  size_t o = 0;
  for (size_t i = 0; i < end; i++) {
    int v = b32_value(in[i]);
    if (v < 0) return KR_EINVAL;
    acc = (acc << 5) | (uint32_t)v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      if (o >= outsize) return KR_EINVAL;
      out[o++] = (uint8_t)(acc >> bits);
    }
    acc &= (1u << bits) - 1;
  }
  if (acc) return KR_EINVAL; /* non-zero leftover bits: not canonical */
  return (int)o;
}

void kr_sha1_base32(const uint8_t d[KR_SHA1_LEN], char out[KR_SHA1_B32_LEN + 1]) {
  kr_base32_encode(d, KR_SHA1_LEN, out);
}

void kr_sha1_label(const uint8_t d[KR_SHA1_LEN], char out[KR_SHA1_LABEL_SIZE]) {
  memcpy(out, "sha1:", 5);
  kr_base32_encode(d, KR_SHA1_LEN, out + 5);
}
