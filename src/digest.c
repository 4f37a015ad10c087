/*
 * SHA-1 through OpenSSL's EVP interface and RFC 4648 base32 (see
 * include/kria/digest.h). The EVP_MD is fetched once per kr_sha1_t and
 * the context re-initialised with EVP_DigestInit_ex2(ctx, NULL, ...),
 * which keeps the fetched algorithm: no provider lookup and no
 * allocation per message. First the SHA-1 functions, then base32.
 */
#include "kria/digest.h"

#include <openssl/evp.h>
#include <string.h>

#include "kria/error.h"

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
