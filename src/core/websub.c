/*
 * WebSub discovery from Link headers, notification signatures and the
 * timing of subscription requests (see include/kria/websub.h).
 */
#include "kria/websub.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>
#include <strings.h>

static int is_ows(char c) { return c == ' ' || c == '\t'; }

/* Is tok (tn bytes) one of the blank-separated tokens of the list l? */
static int list_has(const char *l, size_t n, const char *tok) {
  size_t tn = strlen(tok);
  for (size_t i = 0; i < n;) {
    while (i < n && (is_ows(l[i]) || l[i] == '\n' || l[i] == '\r')) i++;
    size_t j = i;
    while (j < n && !is_ows(l[j]) && l[j] != '\n' && l[j] != '\r') j++;
    if (j - i == tn && strncasecmp(l + i, tok, tn) == 0) return 1;
    i = j;
  }
  return 0;
}

/* From v[i] (just after a link's '>'), read its parameters up to the ','
 * that ends the link (outside quotes) or the end; returns the index after
 * it, and *match when a rel parameter names rel. */
static size_t link_params(const char *v, size_t n, size_t i, const char *rel, int *match) {
  *match = 0;
  while (i < n && v[i] != ',') {
    if (v[i] != ';') { /* junk between parameters: skip to the next one */
      i++;
      continue;
    }
    i++;
    while (i < n && is_ows(v[i])) i++;
    size_t name = i;
    while (i < n && v[i] != '=' && v[i] != ';' && v[i] != ',' && !is_ows(v[i])) i++;
    size_t name_n = i - name;
    while (i < n && is_ows(v[i])) i++;
    if (i >= n || v[i] != '=') continue;
    i++;
    while (i < n && is_ows(v[i])) i++;
    size_t val, val_n;
    if (i < n && v[i] == '"') {
      val = ++i;
      while (i < n && v[i] != '"') i += v[i] == '\\' && i + 1 < n ? 2 : 1;
      val_n = (i < n ? i : n) - val;
      if (i < n) i++;
    } else {
      val = i;
      while (i < n && v[i] != ';' && v[i] != ',' && !is_ows(v[i])) i++;
      val_n = i - val;
    }
    if (name_n == 3 && strncasecmp(v + name, "rel", 3) == 0 && list_has(v + val, val_n, rel))
      *match = 1;
  }
  return i < n ? i + 1 : n;
}

int kr_link_header_rel(const char *v, size_t n, const char *rel, kr_slice_t *uri) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (is_ows(v[i]) || v[i] == ',')) i++;
    if (i >= n) break;
    if (v[i] != '<') { /* not a link: skip it */
      int m;
      i = link_params(v, n, i, rel, &m);
      continue;
    }
    const char *gt = memchr(v + i + 1, '>', n - i - 1);
    if (!gt) return 0;
    kr_slice_t u = {v + i + 1, (size_t)(gt - (v + i + 1))};
    int m;
    i = link_params(v, n, (size_t)(gt - v) + 1, rel, &m);
    if (m) {
      *uri = u;
      return 1;
    }
  }
  return 0;
}

static const EVP_MD *sig_md(const char *m, size_t n) {
  static const struct {
    const char *name;
    const EVP_MD *(*md)(void);
  } mds[] = {{"sha1", EVP_sha1}, {"sha256", EVP_sha256}, {"sha384", EVP_sha384},
             {"sha512", EVP_sha512}};
  for (size_t i = 0; i < sizeof mds / sizeof mds[0]; i++)
    if (strlen(mds[i].name) == n && strncasecmp(m, mds[i].name, n) == 0) return mds[i].md();
  return NULL;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int kr_websub_sig_ok(const char *sig, size_t n, const char *secret, size_t secret_n,
                     const void *body, size_t body_n) {
  if (!sig) return 0;
  while (n && is_ows(*sig)) sig++, n--;
  while (n && is_ows(sig[n - 1])) n--;
  const char *eq = memchr(sig, '=', n);
  if (!eq) return 0;
  const EVP_MD *md = sig_md(sig, (size_t)(eq - sig));
  if (!md) return 0;
  const char *hex = eq + 1;
  size_t hex_n = n - (size_t)(hex - sig);
  unsigned char want[EVP_MAX_MD_SIZE], got[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if ((size_t)EVP_MD_get_size(md) * 2 != hex_n) return 0;
  for (size_t i = 0; i < hex_n / 2; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return 0;
    got[i] = (unsigned char)(hi << 4 | lo);
  }
  if (!HMAC(md, secret, (int)secret_n, body, body_n, want, &len) || len * 2 != hex_n) return 0;
  return CRYPTO_memcmp(want, got, len) == 0;
}

uint64_t kr_websub_retry_ms(uint64_t base_ms, unsigned attempt, uint64_t cap_ms) {
  uint64_t w = base_ms;
  for (unsigned k = 1; k < attempt && w < cap_ms; k++) w = w > UINT64_MAX / 2 ? UINT64_MAX : w * 2;
  return w < cap_ms ? w : cap_ms;
}

uint64_t kr_websub_renew_at(uint64_t now, uint64_t until, uint64_t lease_ms, uint64_t min_ms) {
  uint64_t early = lease_ms / 10 > min_ms ? lease_ms / 10 : min_ms;
  return until > now && until - now > early ? until - early : now;
}
