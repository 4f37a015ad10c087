/*
 * SURT keys and the Internet Archive URL canonicalizers, reproducing
 * python `surt` 0.3.1 (itself a port of webarchive-commons'
 * WaybackURLKeyMaker) byte for byte, so keys match the CDX indexes that
 * pywb and the Wayback Machine build. No code is shared with upstream;
 * behaviour is taken from its tests and documentation.
 *
 * A URL goes through: the lenient "handyurl" parse (strip, default
 * scheme, RFC 2396 regex split, python urlsplit's host/port rules); a
 * canonicalizer (Google's: unescape repeatedly, IDNA, dotted IPv4 of odd
 * numeric hosts, dot segments, minimal escaping; then IA's: lowercase,
 * strip www\d*., default port, session ids, trailing slash, sorted query);
 * then the SURT serialization with the host labels reversed.
 *
 * Components live in one pool buffer as (offset, length) pairs, so a
 * transformation appends its result to the pool and repoints the
 * component; the pool and a scratch buffer are the only allocations.
 *
 * Sections: small string tools; unescape/escape; host helpers (IPv4
 * forms, IDNA 2003 approximation, hostToSURT); session ids; handyurl
 * parse and serialization; the canonicalizers; entry points.
 */
#include <idn2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"
#include "kria/url.h"
#include "url_internal.h"

/* Longest string kr_surt takes. */
#define SURT_MAX_INPUT (4 * KR_URL_MAX_LEN)

static inline int is_digit(int c) { return c >= '0' && c <= '9'; }
static inline int is_alpha(int c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static inline int is_hex(int c) {
  return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}
static inline int hex_val(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }
static inline int to_lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

static const char HEX_UP[] = "0123456789ABCDEF";

static int starts_with(const char *s, size_t n, const char *pfx) {
  size_t k = strlen(pfx);
  return n >= k && !memcmp(s, pfx, k);
}

static int ci_starts_with(const char *s, size_t n, const char *pfx) {
  size_t k = strlen(pfx);
  if (n < k) return 0;
  for (size_t i = 0; i < k; i++)
    if (to_lower((unsigned char)s[i]) != to_lower((unsigned char)pfx[i])) return 0;
  return 1;
}

/* ---- unescape / escape ---- */

/* Characters the query keeps escaped with query_keep_escaped_delims. */
static int is_query_delim(int c) { return c == '&' || c == '=' || c == '+' || c == '#' || c == '%'; }

/* Decode %XX until nothing changes. Decoding is a string rewrite whose
 * redexes cannot overlap, so its normal form is unique: decoding as soon
 * as the output ends in "%XX" (a stack) gives what python's repeated
 * whole-string passes give, in one linear pass. With keep_delims, %XX of
 * a query delimiter is emitted upper-cased and never decoded. */
static int unescape_rep(const char *s, size_t n, kr_buf_t *out, int keep_delims) {
  int rc = kr_buf_reserve(out, n);
  if (rc) return rc;
  char *o = out->data + out->len;
  size_t k = 0;   /* bytes written at o */
  size_t frozen = 0; /* o[0..frozen) may not take part in a decode */
  for (size_t i = 0; i < n; i++) {
    o[k++] = s[i];
    while (k >= frozen + 3 && o[k - 3] == '%' && is_hex((unsigned char)o[k - 2]) &&
           is_hex((unsigned char)o[k - 1])) {
      int v = hex_val((unsigned char)o[k - 2]) * 16 + hex_val((unsigned char)o[k - 1]);
      if (keep_delims && is_query_delim(v)) {
        o[k - 2] = HEX_UP[v >> 4];
        o[k - 1] = HEX_UP[v & 15];
        frozen = k;
        break;
      }
      k -= 2;
      o[k - 1] = (char)v;
    }
  }
  out->len += k;
  out->data[out->len] = '\0';
  return 0;
}

int kr__surt_unescape_repeatedly(const char *s, size_t n, kr_buf_t *out) {
  return unescape_rep(s, n, out, 0);
}

/* python quote_from_bytes with surt's safe set: escape controls, space,
 * '#', '%', DEL and non-ASCII. With keep_delims, a "%XX" of a query
 * delimiter is copied as it is. */
static int escape_once(const char *s, size_t n, kr_buf_t *out, int keep_delims) {
  int rc = kr_buf_reserve(out, 3 * n);
  if (rc) return rc;
  char *o = out->data + out->len;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (keep_delims && c == '%' && i + 2 < n && is_hex((unsigned char)s[i + 1]) &&
        is_hex((unsigned char)s[i + 2]) &&
        is_query_delim(hex_val((unsigned char)s[i + 1]) * 16 + hex_val((unsigned char)s[i + 2]))) {
      *o++ = '%';
      *o++ = s[++i];
      *o++ = s[++i];
    } else if (c <= 0x20 || c == '#' || c == '%' || c >= 0x7F) {
      *o++ = '%';
      *o++ = HEX_UP[c >> 4];
      *o++ = HEX_UP[c & 15];
    } else {
      *o++ = (char)c;
    }
  }
  out->len = (size_t)(o - out->data);
  out->data[out->len] = '\0';
  return 0;
}

/* ---- the handyurl ---- */

struct comp {
  uint32_t off, len;
  uint8_t set;      /* 0 = None */
};

struct hurl {
  kr_buf_t pool;    /* component bytes */
  kr_buf_t t;       /* scratch for one transformation */
  struct comp scheme, host, path, query, hash;
  long port;        /* -1 = None */
  int last_q;       /* last_delimiter is '?' */
};

#define CP(h, c) ((h)->pool.data + (h)->c.off)

static void hurl_init(struct hurl *h, size_t max) {
  memset(h, 0, sizeof *h);
  kr_buf_init(&h->pool, max);
  kr_buf_init(&h->t, max);
  h->port = -1;
}

static void hurl_free(struct hurl *h) {
  kr_buf_free(&h->pool);
  kr_buf_free(&h->t);
}

static int comp_set(struct hurl *h, struct comp *c, const char *s, size_t n) {
  c->off = (uint32_t)h->pool.len;
  c->len = (uint32_t)n;
  c->set = 1;
  return kr_buf_append(&h->pool, s, n);
}

/* Component c becomes the scratch buffer's content. */
static int comp_from_t(struct hurl *h, struct comp *c) {
  return comp_set(h, c, h->t.data ? h->t.data : "", h->t.len);
}

static int truthy(const struct comp *c) { return c->set && c->len > 0; }

/* handyurl.parse(). */
static int hurl_parse(struct hurl *h, const char *s, size_t n) {
  /* bytes.strip(), then drop \n \r \t */
  while (n && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r'))) s++, n--;
  while (n && (s[n - 1] == ' ' || (s[n - 1] >= '\t' && s[n - 1] <= '\r'))) n--;
  kr_buf_t *t = &h->t;
  kr_buf_reset(t);
  int rc = 0;
  /* default scheme unless it starts with "scheme:" */
  size_t k = 0;
  if (n && is_alpha((unsigned char)s[0])) {
    k = 1;
    while (k < n && (is_alpha((unsigned char)s[k]) || is_digit((unsigned char)s[k]) || s[k] == '+' ||
                     s[k] == '-' || s[k] == '.'))
      k++;
  }
  if (n == 0) return KR_EURL;
  if (!(k && k < n && s[k] == ':')) rc = kr_buf_append(t, "http://", 7);
  if (!rc) rc = kr_buf_reserve(t, n);
  if (rc) return rc;
  for (size_t i = 0; i < n; i++)
    if (s[i] != '\n' && s[i] != '\r' && s[i] != '\t') t->data[t->len++] = s[i];
  t->data[t->len] = '\0';
  /* "http://https://x" -> "https://x": the last of repeated protocols */
  const char *u = t->data;
  size_t un = t->len, last = SIZE_MAX, at = 0;
  for (;;) {
    size_t pl = starts_with(u + at, un - at, "http://") ? 7 : starts_with(u + at, un - at, "https://") ? 8 : 0;
    if (!pl) break;
    last = at;
    at += pl;
  }
  if (last != SIZE_MAX) u += last, un -= last;
  /* keep the cleaned string in the pool: components point into it */
  uint32_t base = (uint32_t)h->pool.len;
  rc = kr_buf_append(&h->pool, u, un);
  if (rc) return rc;
  u = h->pool.data + base;
  /* RFC 2396 regex split */
  size_t i = 0;
  while (i < un && u[i] != ':') i++; /* a scheme is always there now */
  if (i == un) return KR_EURL;
  h->scheme = (struct comp){base, (uint32_t)i, 1};
  i++;
  size_t ns = 0, ne = 0;
  int has_netloc = 0;
  if (un - i >= 2 && u[i] == '/' && u[i + 1] == '/') {
    has_netloc = 1;
    ns = i + 2;
    ne = ns;
    while (ne < un && u[ne] != '/' && u[ne] != '?' && u[ne] != '#') ne++;
    i = ne;
  }
  size_t ps = i;
  while (i < un && u[i] != '?' && u[i] != '#') i++;
  size_t pe = i;
  size_t qs = 0, qe = 0;
  int has_q = 0;
  if (i < un && u[i] == '?') {
    has_q = 1;
    qs = ++i;
    while (i < un && u[i] != '#') i++;
    qe = i;
  }
  size_t fs = 0;
  int has_f = 0;
  if (i < un && u[i] == '#') {
    has_f = 1;
    fs = i + 1;
  }
  const int ends_q = un && u[un - 1] == '?';
  /* host and port, python urlsplit style (pool appends below move u) */
  if (has_netloc) {
    while (ne > ns && u[ne - 1] == ':') ne--; /* "host:" without a port */
    size_t hs = ns;
    for (size_t j = ns; j < ne; j++)
      if (u[j] == '@') hs = j + 1;
    size_t he, port_s = 0, port_e = 0;
    const char *br = memchr(u + hs, '[', ne - hs);
    if (br) {
      size_t bs = (size_t)(br - u) + 1;
      const char *cl = memchr(u + bs, ']', ne - bs);
      he = cl ? (size_t)(cl - u) : ne;
      hs = bs;
      if (cl) {
        const char *colon = memchr(cl, ':', (size_t)(u + ne - cl));
        if (colon) port_s = (size_t)(colon - u) + 1, port_e = ne;
      }
    } else {
      const char *colon = memchr(u + hs, ':', ne - hs);
      he = colon ? (size_t)(colon - u) : ne;
      if (colon) port_s = he + 1, port_e = ne;
    }
    if (port_e > port_s) {
      long v = 0;
      for (size_t j = port_s; j < port_e; j++) {
        if (!is_digit((unsigned char)u[j])) return KR_EURL;
        v = v * 10 + (u[j] - '0');
        if (v > 65535) return KR_EURL;
      }
      h->port = v ? v : -1;
    }
    if (he > hs) {
      kr_buf_reset(t);
      rc = kr_buf_append(t, u + hs, he - hs);
      for (size_t j = 0; j < t->len; j++) t->data[j] = (char)to_lower((unsigned char)t->data[j]);
      if (!rc) rc = comp_from_t(h, &h->host);
      if (rc) return rc;
    }
  }
  if (pe > ps) h->path = (struct comp){base + (uint32_t)ps, (uint32_t)(pe - ps), 1};
  if (has_q && qe > qs) h->query = (struct comp){base + (uint32_t)qs, (uint32_t)(qe - qs), 1};
  if (has_f && un > fs) h->hash = (struct comp){base + (uint32_t)fs, (uint32_t)(un - fs), 1};
  /* "http:////www.vikings.com": the host hides in the path */
  if (starts_with(CP(h, scheme), h->scheme.len, "http") && !h->host.set && h->path.set) {
    const char *p = CP(h, path);
    size_t pn = h->path.len, j = 0;
    while (j < pn && p[j] == '/') j++;
    size_t hstart = j;
    while (j < pn && p[j] != '/') j++;
    uint32_t hoff = h->path.off + (uint32_t)hstart, hlen = (uint32_t)(j - hstart);
    kr_buf_reset(t);
    rc = kr_buf_append(t, "/", 1);
    if (!rc && j < pn) rc = kr_buf_append(t, p + j + 1, pn - j - 1);
    if (!rc) rc = comp_from_t(h, &h->path);
    if (rc) return rc;
    h->host = (struct comp){hoff, hlen, 1};
  }
  if (ends_q && !h->query.set) h->last_q = 1;
  return 0;
}

/* geturl_bytes(). */
static int hurl_serialize(struct hurl *h, int surt, const kr_surt_opts_t *o, int with_scheme,
                          kr_buf_t *out) {
  kr_buf_t hs;
  kr_buf_init(&hs, h->pool.max);
  int rc = 0;
  if (truthy(&h->host)) {
    kr_slice_t host = kr_slice(CP(h, host), h->host.len);
    if (o->public_suffix) {
      kr_slice_t reg;
      if (kr_url_registrable_domain(host, &reg)) reg = kr_slice(host.p, 0);
      host = reg;
    }
    if (surt) rc = kr_surt_host(host, o->reverse_ipaddr, &hs);
    else rc = kr_buf_append(&hs, host.p, host.n);
  }
  const char *scheme = CP(h, scheme);
  size_t sn = h->scheme.len;
  if (!rc && with_scheme) {
    rc = kr_buf_append(out, scheme, sn);
    if (!rc) rc = kr_buf_append(out, ":", 1);
    if (!rc && hs.len) {
      if (!(sn == 3 && !memcmp(scheme, "dns", 3))) rc = kr_buf_append(out, "//", 2);
      if (!rc && surt) rc = kr_buf_append(out, "(", 1);
    }
  } else if (!rc && !hs.len) {
    rc = kr_buf_append(out, scheme, sn);
    if (!rc) rc = kr_buf_append(out, ":", 1);
  }
  if (!rc && hs.len) {
    rc = kr_buf_append(out, hs.data, hs.len);
    if (!rc && h->port >= 0) rc = kr_buf_printf(out, ":%ld", h->port);
    if (!rc && surt) rc = kr_buf_append_str(out, o->trailing_comma ? ",)" : ")");
  }
  kr_buf_free(&hs);
  if (rc) return rc;
  if (truthy(&h->path)) rc = kr_buf_append(out, CP(h, path), h->path.len);
  else if (h->query.set || h->hash.set) rc = kr_buf_append(out, "/", 1);
  if (!rc && h->query.set) {
    rc = kr_buf_append(out, "?", 1);
    if (!rc) rc = kr_buf_append(out, CP(h, query), h->query.len);
  }
  if (!rc && h->hash.set) {
    rc = kr_buf_append(out, "#", 1);
    if (!rc) rc = kr_buf_append(out, CP(h, hash), h->hash.len);
  }
  if (!rc && h->last_q) rc = kr_buf_append(out, "?", 1);
  return rc;
}

/* ---- host helpers ---- */

/* glibc inet_aton on a string of digits and dots: 0 and *v, or -1. */
static int inet_aton_digits(const char *s, size_t n, uint32_t *v) {
  uint64_t parts[4];
  int np = 0;
  size_t i = 0;
  while (i <= n) {
    if (np == 4 || i == n) return -1;
    uint64_t x = 0;
    int octal = s[i] == '0' && i + 1 < n && s[i + 1] != '.';
    if (s[i] == '0' && !octal) i++; /* a lone 0 */
    if (octal) i++;
    while (i < n && s[i] != '.') {
      int d = s[i] - '0';
      if (d < 0 || d > 9 || (octal && d > 7)) return -1;
      x = x * (octal ? 8 : 10) + (unsigned)d;
      if (x > 0xffffffffULL) return -1;
      i++;
    }
    parts[np++] = x;
    if (i == n) break;
    i++; /* '.' */
    if (i == n) return -1;
  }
  static const uint64_t lim[4] = {0xffffffffULL, 0xffffffULL, 0xffffULL, 0xffULL};
  uint64_t r = parts[np - 1];
  if (r > lim[np - 1]) return -1;
  for (int k = 0; k < np - 1; k++) {
    if (parts[k] > 0xff) return -1;
    r |= parts[k] << (24 - 8 * k);
  }
  *v = (uint32_t)r;
  return 0;
}

int kr__surt_attempt_ip_formats(const char *s, size_t n, char out[16]) {
  if (!s || n == 0) return -1;
  uint32_t v = 0;
  size_t i = 0;
  while (i < n && is_digit((unsigned char)s[i])) {
    v = v * 10 + (uint32_t)(s[i] - '0'); /* mod 2^32: python masks to 32 bits */
    i++;
  }
  if (i < n) {
    /* ^([1-9][0-9]*)(\.[0-9]+){0,3}$ or ^(0[0-7]*)(\.[0-7]+){0,3}$, then
     * the resolver's numeric parse */
    int octal = s[0] == '0';
    if (!is_digit((unsigned char)s[0])) return -1;
    int dots = 0;
    for (size_t j = 0; j < n; j++) {
      if (s[j] == '.') {
        if (++dots > 3 || j + 1 == n || s[j + 1] == '.') return -1;
      } else if (!is_digit((unsigned char)s[j]) || (octal && s[j] > '7')) {
        return -1;
      }
    }
    if (inet_aton_digits(s, n, &v)) return -1;
  }
  snprintf(out, 16, "%u.%u.%u.%u", v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255);
  return 0;
}

/* Length of a label separator python's idna codec splits on ('.',
 * U+3002, U+FF0E, U+FF61) at s, or 0. */
static size_t dot_len(const unsigned char *s, size_t n) {
  if (n >= 1 && s[0] == '.') return 1;
  if (n >= 3 && ((s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x82) ||
                 (s[0] == 0xEF && s[1] == 0xBC && s[2] == 0x8E) ||
                 (s[0] == 0xEF && s[1] == 0xBD && s[2] == 0xA1)))
    return 3;
  return 0;
}

/* python's encode('idna') (IDNA 2003), approximated: ASCII labels as they
 * are, other labels through libidn2 in transitional mode (as IDNA 2003
 * maps ß to ss), symbols IDNA2008 refuses Punycoded as they stand. Empty
 * labels (but a trailing one) and labels over 63 fail, like python. s is
 * valid UTF-8. */
static int idna2003_to_ascii(const char *s, size_t n, kr_buf_t *out) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  for (;;) {
    size_t j = i, sep = 0;
    int ascii = 1;
    while (j < n && !(sep = dot_len(u + j, n - j))) {
      if (u[j] >= 0x80) ascii = 0;
      j++;
    }
    size_t ln = j - i;
    if (ln == 0 && j == n && i > 0) break; /* trailing dot: kept */
    if (ln == 0 || (ascii && ln > 63)) return -1;
    if (ascii) {
      if (kr_buf_append(out, s + i, ln)) return -1;
    } else {
      char *tmp = kr_xstrndup(s + i, ln);
      char *o = NULL;
      int rc = idn2_to_ascii_8z(tmp, &o, IDN2_TRANSITIONAL | IDN2_NFC_INPUT);
      int ok = 0;
      if (rc == IDN2_OK) {
        ok = !kr_buf_append_str(out, o);
      } else if (rc == IDN2_DISALLOWED) {
        kr_buf_t sym;
        kr_buf_init(&sym, 256);
        if (!kr__url_domain_to_ascii(tmp, ln, &sym) && sym.len <= 63 && !memchr(sym.data, '.', sym.len))
          ok = !kr_buf_append(out, sym.data, sym.len);
        kr_buf_free(&sym);
      }
      free(o);
      free(tmp);
      if (!ok) return -1;
    }
    if (j >= n) break;
    if (kr_buf_append(out, ".", 1)) return -1;
    i = j + sep;
  }
  return 0;
}

int kr_surt_host(kr_slice_t host, int reverse_ipaddr, kr_buf_t *out) {
  if (!reverse_ipaddr) {
    /* (?:(?:\d{1,3}\.){3}\d{1,3})$ */
    size_t i = 0;
    int ok = 1;
    for (int part = 0; part < 4 && ok; part++) {
      size_t d = 0;
      while (i < host.n && is_digit((unsigned char)host.p[i]) && d < 3) i++, d++;
      if (!d) ok = 0;
      if (part < 3) {
        if (i < host.n && host.p[i] == '.') i++;
        else ok = 0;
      }
    }
    if (ok && i == host.n) return kr_buf_append(out, host.p, host.n);
  }
  size_t end = host.n;
  int rc = 0;
  for (size_t k = host.n + 1; k-- > 0 && !rc;) {
    if (k == 0 || host.p[k - 1] == '.') {
      rc = kr_buf_append(out, host.p + k, end - k);
      if (!rc && k) rc = kr_buf_append(out, ",", 1);
      end = k ? k - 1 : 0;
    }
  }
  return rc;
}

/* ---- session ids (URLRegexTransformer) ---- */

static size_t run_of(const char *s, size_t n, int (*cls)(int), size_t want) {
  size_t k = 0;
  while (k < n && k < want && cls((unsigned char)s[k])) k++;
  return k;
}

static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static int is_lower_alnum_ci(int c) { return is_alnum(c); }

/* Length of "(" + [0-9a-z]{24} + ")" at s (case-insensitive), or 0. */
static size_t paren24(const char *s, size_t n) {
  if (n < 26 || s[0] != '(' || s[25] != ')') return 0;
  return run_of(s + 1, 24, is_lower_alnum_ci, 24) == 24 ? 26 : 0;
}

/* [^?]+\.aspx.* : some non-'?' text then ".aspx" before any '?'. */
static int aspx_tail(const char *s, size_t n) {
  for (size_t i = 1; i + 5 <= n; i++) {
    if (s[i - 1] == '?') return 0;
    if (s[i] == '?') return 0;
    if (ci_starts_with(s + i, n - i, ".aspx")) return 1;
  }
  return 0;
}

/* Length of the ASP.NET session segment at s ending in ")/", form 1
 * "(" ([a-z] "(" x24 ")")+ ")/" or form 2 "(" x24 ")/"; 0 if none. */
static size_t asp_session(const char *s, size_t n, int form) {
  if (form == 2) {
    size_t k = paren24(s, n);
    return k && k < n && s[k] == '/' ? k + 1 : 0;
  }
  if (n < 1 || s[0] != '(') return 0;
  size_t k = 1;
  int reps = 0;
  while (k < n && is_alpha((unsigned char)s[k])) {
    size_t p = paren24(s + k + 1, n - k - 1);
    if (!p) break;
    k += 1 + p;
    reps++;
  }
  if (!reps || k + 1 >= n || s[k] != ')' || s[k + 1] != '/') return 0;
  return k + 2;
}

int kr__surt_strip_path_session_id(const char *s, size_t n, kr_buf_t *out) {
  kr_buf_t a;
  kr_buf_init(&a, n + 1);
  int rc = kr_buf_append(&a, s, n);
  for (int form = 1; form <= 2 && !rc; form++) {
    /* greedy prefix ending in a slash: try the last slash first */
    const char *p = a.data ? a.data : "";
    size_t pn = a.len;
    for (size_t i = pn; i-- > 0;) {
      if (p[i] != '/') continue;
      size_t k = asp_session(p + i + 1, pn - i - 1, form);
      if (k && aspx_tail(p + i + 1 + k, pn - i - 1 - k)) {
        memmove(a.data + i + 1, p + i + 1 + k, pn - i - 1 - k);
        a.len -= k;
        a.data[a.len] = '\0';
        break;
      }
    }
  }
  if (!rc) rc = kr_buf_append(out, a.data ? a.data : "", a.len);
  kr_buf_free(&a);
  return rc;
}

/* Query session-id token matchers: length of the token at s, or 0. */
static size_t tok_named32(const char *s, size_t n, const char *name) {
  size_t k = strlen(name);
  if (!ci_starts_with(s, n, name)) return 0;
  return run_of(s + k, n - k, is_alnum, 32) == 32 ? k + 32 : 0;
}
static size_t tok_jsession(const char *s, size_t n) { return tok_named32(s, n, "jsessionid="); }
static size_t tok_phpsess(const char *s, size_t n) { return tok_named32(s, n, "phpsessid="); }
static size_t tok_sid(const char *s, size_t n) { return tok_named32(s, n, "sid="); }
static size_t tok_asp(const char *s, size_t n) {
  if (!ci_starts_with(s, n, "aspsessionid")) return 0;
  if (run_of(s + 12, n - 12, is_alpha, 8) != 8 || n < 21 || s[20] != '=') return 0;
  return run_of(s + 21, n - 21, is_alpha, 24) == 24 ? 45 : 0;
}
static size_t tok_cfid(const char *s, size_t n) {
  if (!ci_starts_with(s, n, "cfid=")) return 0;
  size_t k = 5, v = k;
  while (k < n && s[k] != '&') k++;
  if (k == v || k == n) return 0;
  k++;
  if (!ci_starts_with(s + k, n - k, "cftoken=")) return 0;
  k += 8;
  v = k;
  while (k < n && s[k] != '&') k++;
  return k > v ? k : 0;
}

/* ^(.*)(?:token)(?:&(.*))?$ — the last token followed by '&' or the end
 * is cut, with its '&'. first is the token's first letter, lowercase. */
static void strip_token(kr_buf_t *a, int first, size_t (*tok)(const char *, size_t)) {
  const char *p = a->data ? a->data : "";
  size_t n = a->len;
  for (size_t i = n + 1; i-- > 0;) {
    if (i == n || to_lower((unsigned char)p[i]) != first) continue;
    size_t k = tok(p + i, n - i);
    if (!k) continue;
    size_t e = i + k;
    if (e == n) {
      a->len = i;
    } else if (p[e] == '&') {
      memmove(a->data + i, p + e + 1, n - e - 1);
      a->len = n - (k + 1);
    } else {
      continue;
    }
    a->data[a->len] = '\0';
    return;
  }
}

int kr__surt_strip_query_session_id(const char *s, size_t n, kr_buf_t *out) {
  kr_buf_t a;
  kr_buf_init(&a, n + 1);
  int rc = kr_buf_append(&a, s, n);
  if (!rc) {
    strip_token(&a, 'j', tok_jsession);
    strip_token(&a, 'p', tok_phpsess);
    strip_token(&a, 's', tok_sid);
    strip_token(&a, 'a', tok_asp);
    strip_token(&a, 'c', tok_cfid);
    rc = kr_buf_append(out, a.data ? a.data : "", a.len);
  }
  kr_buf_free(&a);
  return rc;
}

/* ---- IA canonicalizer pieces ---- */

kr_slice_t kr__surt_massage_host(kr_slice_t host) {
  if (host.n < 4 || memcmp(host.p, "www", 3)) return host;
  size_t i = 3;
  while (i < host.n && is_digit((unsigned char)host.p[i])) i++;
  if (i < host.n && host.p[i] == '.') return kr_slice(host.p + i + 1, host.n - i - 1);
  return host;
}

int kr__surt_default_port(kr_slice_t scheme) {
  if (kr_slice_case_eq(scheme, KR_SLICE_LIT("http"))) return 80;
  if (kr_slice_case_eq(scheme, KR_SLICE_LIT("https"))) return 443;
  return 0;
}

/* Python sorts the (key,) / (key, value) tuples of split('=', 1). */
static int cmp_qarg(const void *a, const void *b) {
  const kr_slice_t *x = a, *y = b;
  const char *xe = memchr(x->p, '=', x->n), *ye = memchr(y->p, '=', y->n);
  size_t xk = xe ? (size_t)(xe - x->p) : x->n, yk = ye ? (size_t)(ye - y->p) : y->n;
  size_t m = xk < yk ? xk : yk;
  int c = m ? memcmp(x->p, y->p, m) : 0;
  if (c) return c;
  if (xk != yk) return xk < yk ? -1 : 1;
  if (!xe || !ye) return (xe != NULL) - (ye != NULL);
  size_t xv = x->n - xk - 1, yv = y->n - yk - 1;
  m = xv < yv ? xv : yv;
  c = m ? memcmp(xe + 1, ye + 1, m) : 0;
  if (c) return c;
  return xv < yv ? -1 : xv > yv;
}

int kr__surt_alpha_reorder_query(const char *s, size_t n, kr_buf_t *out) {
  if (n <= 1) return kr_buf_append(out, s, n);
  size_t count = 1;
  for (size_t i = 0; i < n; i++) count += s[i] == '&';
  kr_slice_t *parts = kr_xmalloc(count * sizeof *parts);
  size_t k = 0, from = 0;
  for (size_t i = 0; i <= n; i++)
    if (i == n || s[i] == '&') {
      parts[k++] = kr_slice(s + from, i - from);
      from = i + 1;
    }
  qsort(parts, k, sizeof *parts, cmp_qarg);
  int rc = 0;
  for (size_t j = 0; j < k && !rc; j++) {
    if (j) rc = kr_buf_append(out, "&", 1);
    if (!rc) rc = kr_buf_append(out, parts[j].p, parts[j].n);
  }
  free(parts);
  return rc;
}

/* GoogleURLCanonicalizer.normalizePath. */
static int normalize_path(const char *s, size_t n, kr_buf_t *out) {
  if (n == 0) return kr_buf_append(out, "/", 1);
  size_t count = 1;
  for (size_t i = 0; i < n; i++) count += s[i] == '/';
  kr_slice_t *kept = kr_xmalloc(count * sizeof *kept);
  size_t nk = 0, from = 0;
  int first = 1;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '/') continue;
    kr_slice_t seg = kr_slice(s + from, i - from);
    from = i + 1;
    if (first) {
      first = 0;
    } else if (seg.n == 1 && seg.p[0] == '.') {
      /* skip */
    } else if (seg.n == 2 && seg.p[0] == '.' && seg.p[1] == '.') {
      if (nk) nk--;
      else kept[nk++] = seg;
    } else {
      kept[nk++] = seg;
    }
  }
  int rc = kr_buf_append(out, "/", 1);
  for (size_t j = 0; j + 1 < nk && !rc; j++)
    if (kept[j].n) {
      rc = kr_buf_append(out, kept[j].p, kept[j].n);
      if (!rc) rc = kr_buf_append(out, "/", 1);
    }
  if (!rc && nk) rc = kr_buf_append(out, kept[nk - 1].p, kept[nk - 1].n);
  free(kept);
  return rc;
}

/* ---- the canonicalizers ---- */

static int google_canon(struct hurl *h, const kr_surt_opts_t *o) {
  kr_buf_t *t = &h->t;
  kr_buf_t tmp;
  kr_buf_init(&tmp, h->pool.max);
  int rc = 0;
  h->hash.set = 0;
  if (truthy(&h->query)) {
    kr_buf_reset(&tmp);
    kr_buf_reset(t);
    rc = unescape_rep(CP(h, query), h->query.len, &tmp, o->query_keep_escaped_delims);
    if (!rc) rc = escape_once(tmp.data, tmp.len, t, o->query_keep_escaped_delims);
    if (!rc) rc = comp_from_t(h, &h->query);
  }
  if (!rc && truthy(&h->host)) {
    kr_buf_reset(&tmp);
    rc = unescape_rep(CP(h, host), h->host.len, &tmp, 0);
    int ascii = 1;
    for (size_t i = 0; i < tmp.len; i++)
      if ((unsigned char)tmp.data[i] >= 0x80) ascii = 0;
    if (!rc && !ascii) {
      /* decode('utf-8', 'ignore'): drop the bytes of invalid sequences */
      kr_buf_t clean;
      kr_buf_init(&clean, tmp.len + 1);
      for (size_t i = 0; i < tmp.len;) {
        size_t k = 1;
        unsigned char c = (unsigned char)tmp.data[i];
        if (c >= 0x80) k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (i + k <= tmp.len && kr__utf8_valid(tmp.data + i, k)) kr_buf_append(&clean, tmp.data + i, k);
        else k = 1;
        i += k;
      }
      kr_buf_t idn;
      kr_buf_init(&idn, 4 * tmp.len + 64);
      if (clean.len && !idna2003_to_ascii(clean.data, clean.len, &idn)) {
        kr_buf_reset(&tmp);
        rc = kr_buf_append(&tmp, idn.data, idn.len);
      }
      kr_buf_free(&idn);
      kr_buf_free(&clean);
    }
    /* replace(b'..', b'.') once over the string, then strip('.') */
    kr_buf_reset(t);
    if (!rc) rc = kr_buf_reserve(t, tmp.len);
    for (size_t i = 0; !rc && i < tmp.len; i++) {
      t->data[t->len++] = tmp.data[i];
      if (tmp.data[i] == '.' && i + 1 < tmp.len && tmp.data[i + 1] == '.') i++;
    }
    if (!rc) t->data[t->len] = '\0';
    size_t a = 0, b = t->len;
    while (a < b && t->data[a] == '.') a++;
    while (b > a && t->data[b - 1] == '.') b--;
    char ip[16];
    kr_buf_reset(&tmp);
    if (!rc && b > a && kr__surt_attempt_ip_formats(t->data + a, b - a, ip) == 0) {
      rc = kr_buf_append_str(&tmp, ip);
    } else if (!rc) {
      for (size_t i = a; i < b; i++) t->data[i] = (char)to_lower((unsigned char)t->data[i]);
      rc = escape_once(t->data + a, b - a, &tmp, 0);
    }
    if (!rc) rc = comp_set(h, &h->host, tmp.data ? tmp.data : "", tmp.len);
  }
  if (!rc && h->path.set) {
    kr_buf_reset(&tmp);
    rc = unescape_rep(CP(h, path), h->path.len, &tmp, 0);
    kr_buf_reset(t);
    if (!rc && truthy(&h->host)) {
      rc = normalize_path(tmp.data ? tmp.data : "", tmp.len, t);
      kr_buf_reset(&tmp);
      if (!rc) rc = kr_buf_append(&tmp, t->data, t->len);
      kr_buf_reset(t);
    }
    if (!rc) rc = escape_once(tmp.data ? tmp.data : "", tmp.len, t, 0);
    if (!rc) rc = comp_from_t(h, &h->path);
  } else if (!rc && truthy(&h->host)) {
    rc = comp_set(h, &h->path, "/", 1); /* normalizePath(None) */
  }
  kr_buf_free(&tmp);
  return rc;
}

static void lower_comp(struct hurl *h, struct comp *c) {
  char *p = h->pool.data + c->off;
  for (uint32_t i = 0; i < c->len; i++) p[i] = (char)to_lower((unsigned char)p[i]);
}

static int ia_canon(struct hurl *h, const kr_surt_opts_t *o) {
  kr_buf_t *t = &h->t;
  int rc = 0;
  if (o->host_lowercase && truthy(&h->host)) lower_comp(h, &h->host);
  if (o->host_massage && truthy(&h->host) &&
      !(h->scheme.len == 3 && !memcmp(CP(h, scheme), "dns", 3))) {
    kr_slice_t m = kr__surt_massage_host(kr_slice(CP(h, host), h->host.len));
    h->host.off = (uint32_t)(m.p - h->pool.data);
    h->host.len = (uint32_t)m.n;
  }
  if (o->port_strip_default && h->scheme.set &&
      h->port == kr__surt_default_port(kr_slice(CP(h, scheme), h->scheme.len)))
    h->port = -1;
  if (o->path_strip_empty && h->path.set && h->path.len == 1 && CP(h, path)[0] == '/') {
    h->path.set = 0;
  } else {
    if (o->path_lowercase && truthy(&h->path)) lower_comp(h, &h->path);
    if (o->path_strip_session_id && truthy(&h->path)) {
      kr_buf_reset(t);
      rc = kr__surt_strip_path_session_id(CP(h, path), h->path.len, t);
      if (!rc) rc = comp_from_t(h, &h->path);
    }
    if (o->path_strip_empty && h->path.set && h->path.len == 1 && CP(h, path)[0] == '/')
      h->path.set = 0;
    if (o->path_strip_trailing_slash_unless_empty && truthy(&h->path) && h->path.len > 1 &&
        CP(h, path)[h->path.len - 1] == '/')
      h->path.len--;
  }
  if (rc) return rc;
  if (truthy(&h->query)) {
    if (o->query_strip_session_id) {
      kr_buf_reset(t);
      rc = kr__surt_strip_query_session_id(CP(h, query), h->query.len, t);
      if (!rc) rc = comp_from_t(h, &h->query);
    }
    if (!rc && o->query_lowercase) lower_comp(h, &h->query);
    if (!rc && o->query_alpha_reorder) {
      kr_buf_reset(t);
      rc = kr__surt_alpha_reorder_query(CP(h, query), h->query.len, t);
      if (!rc) rc = comp_from_t(h, &h->query);
    }
    if (!rc && h->query.len == 0 && o->query_strip_empty) h->query.set = 0;
  } else if (o->query_strip_empty) {
    h->last_q = 0;
  }
  return rc;
}

static int canonicalize(struct hurl *h, const kr_surt_opts_t *o) {
  switch (o->canonicalizer) {
  case KR_SURT_CANON_NONE: return 0;
  case KR_SURT_CANON_GOOGLE: return google_canon(h, o);
  case KR_SURT_CANON_IA: return ia_canon(h, o);
  default: {
    int rc = google_canon(h, o);
    return rc ? rc : ia_canon(h, o);
  }
  }
}

/* ---- entry points ---- */

void kr_surt_opts_init(kr_surt_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->canonicalizer = KR_SURT_CANON_DEFAULT_IA;
  o->reverse_ipaddr = 1;
  o->host_lowercase = 1;
  o->host_massage = 1;
  o->port_strip_default = 1;
  o->path_lowercase = 1;
  o->path_strip_session_id = 1;
  o->path_strip_trailing_slash_unless_empty = 1;
  o->query_lowercase = 1;
  o->query_strip_session_id = 1;
  o->query_strip_empty = 1;
  o->query_alpha_reorder = 1;
}

static int surt_or_canon(const char *url, size_t len, const kr_surt_opts_t *opts, int surt,
                         kr_buf_t *out) {
  kr_surt_opts_t defaults;
  if (!opts) {
    kr_surt_opts_init(&defaults);
    opts = &defaults;
  }
  if (surt) {
    if (!url || len == 0) return kr_buf_append(out, "-", 1);
    if (starts_with(url, len, "filedesc")) return kr_buf_append(out, url, len);
    if (opts->java_keymaker) {
      if (starts_with(url, len, "warcinfo")) return kr_buf_append(out, url, len);
      if (starts_with(url, len, "dns:")) {
        int rc = kr_surt_host(kr_slice(url + 4, len - 4), 1, out);
        return rc ? rc : kr_buf_append(out, ")", 1);
      }
    }
  }
  if (!url || len > SURT_MAX_INPUT) return KR_EURL;
  struct hurl h;
  hurl_init(&h, 16 * len + 1024);
  int rc = hurl_parse(&h, url, len);
  if (!rc) rc = canonicalize(&h, opts);
  if (!rc) rc = hurl_serialize(&h, surt, opts, surt ? opts->with_scheme : 1, out);
  hurl_free(&h);
  return rc;
}

int kr_surt(const char *url, size_t len, const kr_surt_opts_t *opts, kr_buf_t *out) {
  return surt_or_canon(url, len, opts, 1, out);
}

int kr_surt_canon_url(const char *url, size_t len, const kr_surt_opts_t *opts, kr_buf_t *out) {
  return surt_or_canon(url, len, opts, 0, out);
}

int kr_url_surt(const kr_url_t *url, const kr_surt_opts_t *opts, kr_buf_t *out) {
  return kr_surt(kr_url_href(url), kr_url_href_len(url), opts, out);
}

int kr__surt_handyurl_roundtrip(const char *s, size_t n, kr_buf_t *out) {
  kr_surt_opts_t o;
  kr_surt_opts_init(&o);
  o.canonicalizer = KR_SURT_CANON_NONE;
  return surt_or_canon(s, n, &o, 0, out);
}
