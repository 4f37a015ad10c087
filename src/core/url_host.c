/*
 * Host helpers of the url module (see src/core/url_internal.h): the WHATWG
 * IPv4 parser with its hex, octal and short forms and the "ends in a
 * number" check, the IPv6 parser and RFC 5952 serializer, UTF-8
 * validation, and domain to ASCII: UTS #46 through libidn2, label by
 * label, with RFC 3492 Punycode of our own for symbol labels IDNA2008
 * refuses but UTS #46 (and browsers) accept. Pure functions, no state.
 *
 * Sections: character classes; IPv4; IPv6; UTF-8; Punycode and symbol
 * labels; domain to ASCII.
 */
#include <idn2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/buf.h"
#include "kria/mem.h"
#include "url_internal.h"

static inline int is_alpha(int c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static inline int is_digit(int c) { return c >= '0' && c <= '9'; }
static inline int is_hex(int c) {
  return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}
static inline int hex_val(int c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }
static inline int to_lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* ---- IPv4 ---- */

/* IPv4 number parser: 0 and *out (saturating at UINT64_MAX / 16), or -1. */
static int ipv4_number(const char *s, size_t n, uint64_t *out) {
  if (n == 0) return -1;
  unsigned radix = 10;
  if (n >= 2 && s[0] == '0' && (s[1] | 0x20) == 'x') {
    s += 2, n -= 2, radix = 16;
  } else if (n >= 2 && s[0] == '0') {
    s += 1, n -= 1, radix = 8;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i], d;
    if (radix == 16 && is_hex(c)) d = hex_val(c);
    else if (radix == 10 && is_digit(c)) d = c - '0';
    else if (radix == 8 && c >= '0' && c <= '7') d = c - '0';
    else return -1;
    if (v < (UINT64_MAX >> 5)) v = v * radix + (unsigned)d; /* else saturated: too big anyway */
  }
  *out = v;
  return 0;
}

int kr__url_ends_in_number(const char *s, size_t n) {
  if (n && s[n - 1] == '.') n--;
  size_t start = n;
  while (start && s[start - 1] != '.') start--;
  const char *last = s + start;
  size_t ln = n - start;
  if (ln == 0) return 0;
  size_t i = 0;
  while (i < ln && is_digit((unsigned char)last[i])) i++;
  if (i == ln) return 1;
  if (ln >= 2 && last[0] == '0' && (last[1] | 0x20) == 'x') {
    for (i = 2; i < ln; i++)
      if (!is_hex((unsigned char)last[i])) return 0;
    return 1;
  }
  return 0;
}

int kr__url_ipv4_parse(const char *s, size_t n, uint32_t *out) {
  uint64_t nums[4];
  size_t count = 0;
  if (n && s[n - 1] == '.') n--; /* a trailing empty part is dropped */
  size_t i = 0;
  for (;;) {
    size_t j = i;
    while (j < n && s[j] != '.') j++;
    if (count == 4) return -1;
    if (ipv4_number(s + i, j - i, &nums[count])) return -1;
    count++;
    if (j >= n) break;
    i = j + 1;
  }
  for (size_t k = 0; k + 1 < count; k++)
    if (nums[k] > 255) return -1;
  uint64_t last = nums[count - 1];
  if (last >= (1ULL << (8 * (5 - count)))) return -1;
  uint64_t v = last;
  for (size_t k = 0; k + 1 < count; k++) v += nums[k] << (8 * (3 - k));
  *out = (uint32_t)v;
  return 0;
}

/* ---- IPv6 ---- */

int kr__url_ipv6_parse(const char *s, size_t n, uint16_t a[8]) {
  memset(a, 0, 8 * sizeof a[0]);
  size_t i = 0;
  int piece = 0, compress = -1;
#define C(k) ((k) < n ? (unsigned char)s[k] : 0x100)
  if (C(i) == ':') {
    if (C(i + 1) != ':') return -1;
    i += 2;
    compress = ++piece;
  }
  while (C(i) != 0x100) {
    if (piece == 8) return -1;
    if (C(i) == ':') {
      if (compress >= 0) return -1;
      i++;
      compress = ++piece;
      continue;
    }
    unsigned value = 0, length = 0;
    while (length < 4 && C(i) != 0x100 && is_hex((int)C(i))) {
      value = value * 16 + (unsigned)hex_val((int)C(i));
      i++, length++;
    }
    if (C(i) == '.') {
      if (length == 0) return -1;
      i -= length;
      if (piece > 6) return -1;
      int seen = 0;
      while (C(i) != 0x100) {
        int v4 = -1;
        if (seen > 0) {
          if (C(i) == '.' && seen < 4) i++;
          else return -1;
        }
        if (C(i) == 0x100 || !is_digit((int)C(i))) return -1;
        while (C(i) != 0x100 && is_digit((int)C(i))) {
          int d = (int)C(i) - '0';
          if (v4 == -1) v4 = d;
          else if (v4 == 0) return -1;
          else v4 = v4 * 10 + d;
          if (v4 > 255) return -1;
          i++;
        }
        a[piece] = (uint16_t)(a[piece] * 0x100 + v4);
        seen++;
        if (seen == 2 || seen == 4) piece++;
      }
      if (seen != 4) return -1;
      break;
    } else if (C(i) == ':') {
      i++;
      if (C(i) == 0x100) return -1;
    } else if (C(i) != 0x100) {
      return -1;
    }
    a[piece++] = (uint16_t)value;
  }
#undef C
  if (compress >= 0) {
    int swaps = piece - compress;
    piece = 7;
    while (piece != 0 && swaps > 0) {
      uint16_t t = a[piece];
      a[piece] = a[compress + swaps - 1];
      a[compress + swaps - 1] = t;
      piece--, swaps--;
    }
  } else if (piece != 8) {
    return -1;
  }
  return 0;
}

size_t kr__url_ipv6_serialize(const uint16_t a[8], char *out) {
  /* longest run of zero pieces, longer than one */
  int best = -1, best_len = 1, cur = -1, cur_len = 0;
  for (int k = 0; k < 8; k++) {
    if (a[k] == 0) {
      if (cur < 0) cur = k, cur_len = 0;
      cur_len++;
      if (cur_len > best_len) best = cur, best_len = cur_len;
    } else {
      cur = -1;
    }
  }
  char *o = out;
  for (int k = 0; k < 8; k++) {
    if (k == best) {
      *o++ = ':';
      if (k == 0) *o++ = ':';
      k += best_len - 1;
      continue;
    }
    o += sprintf(o, "%x", a[k]);
    if (k != 7) *o++ = ':';
  }
  return (size_t)(o - out);
}

/* ---- domains ---- */

/* Length of a label separator at s (UTS #46 maps U+3002, U+FF0E, U+FF61
 * to '.'), 0 if none. */
static size_t label_sep(const unsigned char *s, size_t n) {
  if (n >= 1 && s[0] == '.') return 1;
  if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x82) return 3;
  if (n >= 3 && s[0] == 0xEF && s[1] == 0xBC && s[2] == 0x8E) return 3;
  if (n >= 3 && s[0] == 0xEF && s[1] == 0xBD && s[2] == 0xA1) return 3;
  return 0;
}

int kr__utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t k;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) k = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) k = 2, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) k = 3, cp = c & 0x07;
    else return 0;
    if (n - i <= k) return 0; /* truncated sequence */
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + j] & 0x3F);
    }
    if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    i += k + 1;
  }
  return 1;
}

/* RFC 3492 Punycode of the code points cp[0..n), appended to b; 0 or -1. */
static int punycode_encode(const uint32_t *cp, size_t n, kr_buf_t *b) {
  enum { BASE = 36, TMIN = 1, TMAX = 26, SKEW = 38, DAMP = 700 };
  size_t basic = 0;
  for (size_t i = 0; i < n; i++)
    if (cp[i] < 0x80) {
      char ch = (char)cp[i];
      if (kr_buf_append(b, &ch, 1)) return -1;
      basic++;
    }
  if (basic && kr_buf_append(b, "-", 1)) return -1;
  uint32_t next = 0x80, delta = 0, bias = 72;
  size_t h = basic;
  while (h < n) {
    uint32_t m = UINT32_MAX;
    for (size_t i = 0; i < n; i++)
      if (cp[i] >= next && cp[i] < m) m = cp[i];
    if ((m - next) > (UINT32_MAX - delta) / (uint32_t)(h + 1)) return -1;
    delta += (m - next) * (uint32_t)(h + 1);
    next = m;
    for (size_t i = 0; i < n; i++) {
      if (cp[i] < next && ++delta == 0) return -1;
      if (cp[i] != next) continue;
      uint32_t q = delta;
      for (uint32_t k = BASE;; k += BASE) {
        uint32_t t = k <= bias ? TMIN : k >= bias + TMAX ? TMAX : k - bias;
        if (q < t) break;
        uint32_t d = t + (q - t) % (BASE - t);
        char ch = (char)(d < 26 ? 'a' + d : '0' + d - 26);
        if (kr_buf_append(b, &ch, 1)) return -1;
        q = (q - t) / (BASE - t);
      }
      char ch = (char)(q < 26 ? 'a' + q : '0' + q - 26);
      if (kr_buf_append(b, &ch, 1)) return -1;
      /* bias adaptation */
      uint32_t dl = h == basic ? delta / DAMP : delta / 2;
      dl += dl / (uint32_t)(h + 1);
      uint32_t k = 0;
      while (dl > ((BASE - TMIN) * TMAX) / 2) {
        dl /= BASE - TMIN;
        k += BASE;
      }
      bias = k + (BASE - TMIN + 1) * dl / (dl + SKEW);
      delta = 0;
      h++;
    }
    delta++;
    next++;
  }
  return 0;
}

/* Decode one UTF-8 code point of valid UTF-8 at s; returns its length. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp) {
  if (s[0] < 0x80) return *cp = s[0], 1;
  if (s[0] < 0xE0) return *cp = ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu), 2;
  if (s[0] < 0xF0)
    return *cp = ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu), 3;
  *cp = ((s[0] & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
  return 4;
}

/* Symbol blocks that UTS #46 keeps as they are (status "valid", no
 * mapping, all assigned) while IDNA2008, and so libidn2, disallows them:
 * arrows, technical symbols, box drawing and shapes, miscellaneous
 * symbols and dingbats, emoji. Browsers accept hosts such as "☃.net". */
static int uts46_valid_symbol(uint32_t c) {
  return (c >= 0x2190 && c <= 0x21FF) || (c >= 0x2300 && c <= 0x23FF && c != 0x2329 && c != 0x232A) ||
         (c >= 0x2500 && c <= 0x27BF) || (c >= 0x1F300 && c <= 0x1F64F) ||
         (c >= 0x1F680 && c <= 0x1F6D2) || (c >= 0x1F910 && c <= 0x1F9FF);
}

/* A label libidn2 rejected as DISALLOWED: when it holds only ASCII
 * letters, digits and '-' and such symbols, its A-label is the Punycode of
 * the label (ASCII lowercased), as UTS #46 gives. 0 or -1. */
static int symbol_label_to_ascii(const char *s, size_t n, kr_buf_t *b) {
  uint32_t small[64];
  if (n > 4 * 63) return -1;
  uint32_t *cp = small;
  size_t k = 0;
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n && k < 64;) {
    uint32_t c;
    i += utf8_next(u + i, &c);
    if (c < 0x80) {
      c = (uint32_t)to_lower((int)c);
      if (!(is_alpha((int)c) || is_digit((int)c) || c == '-')) return -1;
    } else if (c == 0xFE0F || c == 0xFE0E) {
      continue; /* variation selectors are ignored by UTS #46 */
    } else if (!uts46_valid_symbol(c)) {
      return -1;
    }
    cp[k++] = c;
  }
  if (kr_buf_append(b, "xn--", 4)) return -1;
  return punycode_encode(cp, k, b);
}

int kr__url_punycode_encode(const uint32_t *cp, size_t n, kr_buf_t *b) {
  return punycode_encode(cp, n, b);
}

/* UTS #46 ToASCII (non-transitional) through libidn2, label by label so
 * that ASCII labels pass through lowercased as the standard's
 * CheckHyphens=false / VerifyDnsLength=false ask (libidn2 always checks
 * both on the labels it converts). s is valid UTF-8 with a non-ASCII code
 * point. Appends to the buffer b; 0 or -1. */
int kr__url_domain_to_ascii(const char *s, size_t n, kr_buf_t *b) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  char small[256];
  for (;;) {
    size_t j = i, sep = 0;
    int ascii = 1;
    while (j < n && !(sep = label_sep(u + j, n - j))) {
      if (u[j] >= 0x80) ascii = 0;
      j++;
    }
    size_t ln = j - i;
    if (ascii) {
      size_t at = b->len;
      if (kr_buf_append(b, s + i, ln)) return -1;
      for (size_t k = at; k < b->len; k++) b->data[k] = (char)to_lower((unsigned char)b->data[k]);
      if (ln >= 4 && !strncmp(b->data + at, "xn--", 4)) {
        /* an A-label must decode and validate */
        char *tmp = ln < sizeof small ? small : kr_xmalloc(ln + 1);
        memcpy(tmp, b->data + at, ln);
        tmp[ln] = '\0';
        char *o = NULL;
        int rc = idn2_to_ascii_8z(tmp, &o, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
        if (tmp != small) free(tmp);
        free(o);
        if (rc != IDN2_OK) return -1;
      }
    } else {
      char *tmp = ln < sizeof small ? small : kr_xmalloc(ln + 1);
      memcpy(tmp, s + i, ln);
      tmp[ln] = '\0';
      char *o = NULL;
      int rc = idn2_to_ascii_8z(tmp, &o, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
      if (tmp != small) free(tmp);
      if (rc == IDN2_DISALLOWED) {
        free(o);
        if (symbol_label_to_ascii(s + i, ln, b)) return -1;
        goto next;
      }
      if (rc != IDN2_OK) {
        free(o);
        return -1;
      }
      rc = kr_buf_append_str(b, o);
      free(o);
      if (rc) return -1;
    }
  next:
    if (j >= n) break;
    if (kr_buf_append(b, ".", 1)) return -1;
    i = j + sep;
  }
  return 0;
}
