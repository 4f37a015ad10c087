/*
 * WHATWG URL Standard parser and serializer (https://url.spec.whatwg.org/,
 * "basic URL parser"), without the setters' state overrides. The state
 * machine follows the standard's states one for one, but instead of
 * building a URL record and serializing it afterwards it writes the
 * serialization as it goes into the one allocation that becomes the
 * kr_url_t, recording component offsets; path segments are appended with
 * their '/' and "shortening the path" truncates back to the previous '/'.
 * So a parse costs one malloc (two when percent-encoding grows the href
 * past the first guess) and no per-component copies. run() is one switch
 * over the states of the standard's basic URL parser (4.4 URL parsing),
 * kept whole on purpose: each case reads as its state in the spec.
 *
 * Sections: percent-encode sets; the output writer; the host parser (its
 * IPv4, IPv6 and IDNA helpers live in url_host.c); the state machine;
 * accessors and origin; public-suffix helpers (libpsl).
 */
#include "kria/url.h"

#include <libpsl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"
#include "url_internal.h"

#define NOPOS UINT32_MAX

enum scheme_type {
  SCHEME_OTHER = 0, /* not special */
  SCHEME_HTTP,
  SCHEME_HTTPS,
  SCHEME_WS,
  SCHEME_WSS,
  SCHEME_FTP,
  SCHEME_FILE,
};

struct kr_url {
  uint32_t href_len;
  uint32_t scheme_end;             /* index of the ':' after the scheme */
  uint32_t user_start, user_end;   /* username */
  uint32_t pass_start, pass_end;   /* password (empty when none) */
  uint32_t host_start, host_end;   /* serialized host */
  uint32_t port_end;               /* end of ":port" (host_end if none) */
  uint32_t path_start;             /* pathname (after a "/." prefix) */
  uint32_t query_start;            /* index of '?', or NOPOS */
  uint32_t frag_start;             /* index of '#', or NOPOS */
  int32_t port;                    /* -1 when null */
  uint8_t host_type;               /* kr_url_host_type_t */
  uint8_t scheme_type;             /* enum scheme_type */
  uint8_t opaque_path;             /* path is an opaque string */
  char href[];                     /* NUL-terminated serialization */
};

/* ---- percent-encode sets (code points above U+007E are in all) ---- */

#define B(c) (1ULL << ((unsigned)(c)&63u))
#define C0_LO 0x00000000FFFFFFFFULL
#define C0_HI B(0x7F)
#define FRAG_LO (C0_LO | B(' ') | B('"') | B('<') | B('>'))
#define FRAG_HI (C0_HI | B('`'))
#define QUERY_LO (C0_LO | B(' ') | B('"') | B('#') | B('<') | B('>'))
#define QUERY_HI C0_HI
#define SQUERY_LO (QUERY_LO | B('\''))
#define PATH_LO (QUERY_LO | B('?'))
#define PATH_HI (QUERY_HI | B('^') | B('`') | B('{') | B('}'))
#define USER_LO (PATH_LO | B('/') | B(':') | B(';') | B('='))
#define USER_HI (PATH_HI | B('@') | B('[') | B('\\') | B(']') | B('|'))

typedef struct pset {
  uint64_t lo, hi;
} pset_t;

static const pset_t SET_C0 = {C0_LO, C0_HI};
static const pset_t SET_FRAG = {FRAG_LO, FRAG_HI};
static const pset_t SET_QUERY = {QUERY_LO, QUERY_HI};
static const pset_t SET_SQUERY = {SQUERY_LO, QUERY_HI};
static const pset_t SET_PATH = {PATH_LO, PATH_HI};
static const pset_t SET_USER = {USER_LO, USER_HI};

static inline int in_set(unsigned c, pset_t s) {
  if (c >= 0x80) return 1;
  return c < 64 ? (int)((s.lo >> c) & 1) : (int)((s.hi >> (c - 64)) & 1);
}

static const char HEX_UP[] = "0123456789ABCDEF";

static inline int is_alpha(int c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static inline int is_digit(int c) { return c >= '0' && c <= '9'; }
static inline int is_hex(int c) {
  return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}
static inline int hex_val(int c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }
static inline int to_lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

static int forbidden_host_cp(unsigned c) {
  switch (c) {
  case 0x00: case 0x09: case 0x0A: case 0x0D: case ' ': case '#': case '/':
  case ':': case '<': case '>': case '?': case '@': case '[': case '\\':
  case ']': case '^': case '|':
    return 1;
  default:
    return 0;
  }
}

static int forbidden_domain_cp(unsigned c) {
  return forbidden_host_cp(c) || c <= 0x1F || c == '%' || c == 0x7F;
}

/* ---- the output writer ---- */

struct parser {
  const char *in;              /* input without tabs/newlines, trimmed */
  size_t n;
  const kr_url_t *base;
  struct kr_url *u;            /* output being built */
  size_t cap;                  /* bytes available in u->href */
  size_t max;                  /* hard limit on the href length */
  size_t len;                  /* bytes written */
  int err;                     /* sticky KR_EURL on overflow */
  uint8_t scheme_type;
  uint8_t host_type;
  uint8_t has_host;
  uint32_t scheme_end, user_start, user_end, pass_start, pass_end;
  uint32_t host_start, host_end, port_end, path_start, query_start, frag_start;
  int32_t port;
};

static int grow(struct parser *p, size_t need) {
  if (p->err) return -1;
  if (need > p->max) {
    p->err = KR_EURL;
    return -1;
  }
  size_t cap = p->cap * 2;
  if (cap < need) cap = need;
  if (cap > p->max + 1) cap = p->max + 1;
  p->u = kr_xrealloc(p->u, sizeof(struct kr_url) + cap + 1);
  p->cap = cap;
  return 0;
}

static inline void put(struct parser *p, const char *s, size_t n) {
  if (p->len + n > p->cap && grow(p, p->len + n)) return;
  if (n) memcpy(p->u->href + p->len, s, n);
  p->len += n;
}

static inline void putch(struct parser *p, char c) {
  if (p->len + 1 > p->cap && grow(p, p->len + 1)) return;
  p->u->href[p->len++] = c;
}

static inline void put_enc(struct parser *p, unsigned char c, pset_t set) {
  if (!in_set(c, set)) {
    putch(p, (char)c);
    return;
  }
  if (p->len + 3 > p->cap && grow(p, p->len + 3)) return;
  char *o = p->u->href + p->len;
  o[0] = '%';
  o[1] = HEX_UP[c >> 4];
  o[2] = HEX_UP[c & 15];
  p->len += 3;
}

static void put_uint(struct parser *p, unsigned long v) {
  char tmp[KR_U64_DEC_MAX]; /* no snprintf: every port goes here */
  put(p, tmp, kr_u64_dec(tmp, v));
}

/* ---- schemes ---- */

static int scheme_lookup(const char *s, size_t n) {
  switch (n) {
  case 2:
    if (!memcmp(s, "ws", 2)) return SCHEME_WS;
    break;
  case 3:
    if (!memcmp(s, "wss", 3)) return SCHEME_WSS;
    if (!memcmp(s, "ftp", 3)) return SCHEME_FTP;
    break;
  case 4:
    if (!memcmp(s, "http", 4)) return SCHEME_HTTP;
    if (!memcmp(s, "file", 4)) return SCHEME_FILE;
    break;
  case 5:
    if (!memcmp(s, "https", 5)) return SCHEME_HTTPS;
    break;
  }
  return SCHEME_OTHER;
}

static int default_port(int scheme_type) {
  switch (scheme_type) {
  case SCHEME_HTTP: case SCHEME_WS: return 80;
  case SCHEME_HTTPS: case SCHEME_WSS: return 443;
  case SCHEME_FTP: return 21;
  default: return -1;
  }
}

/* ---- hosts (helpers in url_host.c) ---- */

static void put_ipv4(struct parser *p, uint32_t v) {
  char tmp[16];
  int k = snprintf(tmp, sizeof tmp, "%u.%u.%u.%u", v >> 24, (v >> 16) & 255,
                   (v >> 8) & 255, v & 255);
  put(p, tmp, (size_t)k);
}

static size_t pct_decode(const char *s, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n &&
        is_hex((unsigned char)s[i + 1]) && is_hex((unsigned char)s[i + 2])) {
      out[k++] = (char)(hex_val((unsigned char)s[i + 1]) * 16 + hex_val((unsigned char)s[i + 2]));
      i += 2;
    } else {
      out[k++] = s[i];
    }
  }
  return k;
}

/* Host parser: writes the serialized host; 0 or -1 (failure). */
static int host_parse(struct parser *p, const char *s, size_t n, int is_opaque) {
  if (n && s[0] == '[') {
    if (s[n - 1] != ']' || n < 2) return -1;
    uint16_t a[8];
    if (kr__url_ipv6_parse(s + 1, n - 2, a)) return -1;
    char tmp[48];
    size_t k = kr__url_ipv6_serialize(a, tmp);
    putch(p, '[');
    put(p, tmp, k);
    putch(p, ']');
    p->host_type = KR_URL_HOST_IPV6;
    return 0;
  }
  if (is_opaque) {
    for (size_t i = 0; i < n; i++)
      if (forbidden_host_cp((unsigned char)s[i])) return -1;
    for (size_t i = 0; i < n; i++) put_enc(p, (unsigned char)s[i], SET_C0);
    p->host_type = n ? KR_URL_HOST_OPAQUE : KR_URL_HOST_EMPTY;
    return 0;
  }
  char small[256];
  char *d = n <= sizeof small ? small : kr_xmalloc(n);
  size_t dn = pct_decode(s, n, d);
  int ascii = 1, rc = -1;
  for (size_t i = 0; i < dn; i++)
    if ((unsigned char)d[i] >= 0x80) ascii = 0;
  kr_buf_t idn;
  kr_buf_init(&idn, 4 * n + 64);
  const char *dom = d;
  size_t domn = dn;
  if (ascii) {
    for (size_t i = 0; i < dn; i++) d[i] = (char)to_lower((unsigned char)d[i]);
  } else {
    if (!kr__utf8_valid(d, dn) || kr__url_domain_to_ascii(d, dn, &idn)) goto out;
    dom = idn.data ? idn.data : "";
    domn = idn.len;
  }
  if (domn == 0) goto out;
  for (size_t i = 0; i < domn; i++)
    if (forbidden_domain_cp((unsigned char)dom[i])) goto out;
  if (kr__url_ends_in_number(dom, domn)) {
    uint32_t v4;
    if (kr__url_ipv4_parse(dom, domn, &v4)) goto out;
    put_ipv4(p, v4);
    p->host_type = KR_URL_HOST_IPV4;
  } else {
    put(p, dom, domn);
    p->host_type = KR_URL_HOST_DOMAIN;
  }
  rc = 0;
out:
  kr_buf_free(&idn);
  if (d != small) free(d);
  return rc;
}

/* ---- state machine helpers ---- */

enum state {
  ST_SCHEME_START,
  ST_SCHEME,
  ST_NO_SCHEME,
  ST_SPECIAL_RELATIVE_OR_AUTHORITY,
  ST_PATH_OR_AUTHORITY,
  ST_RELATIVE,
  ST_RELATIVE_SLASH,
  ST_SPECIAL_AUTHORITY_SLASHES,
  ST_SPECIAL_AUTHORITY_IGNORE_SLASHES,
  ST_AUTHORITY,
  ST_PORT,
  ST_FILE,
  ST_FILE_SLASH,
  ST_FILE_HOST,
  ST_PATH_START,
  ST_PATH,
  ST_OPAQUE_PATH,
  ST_QUERY,
  ST_FRAGMENT,
};

static inline int is_special(const struct parser *p) { return p->scheme_type != SCHEME_OTHER; }

static int is_drive(const char *s, size_t n) {
  return n == 2 && is_alpha((unsigned char)s[0]) && (s[1] == ':' || s[1] == '|');
}

static int is_norm_drive(const char *s, size_t n) {
  return n == 2 && is_alpha((unsigned char)s[0]) && s[1] == ':';
}

static int starts_with_drive(const char *s, size_t n) {
  if (n < 2 || !is_drive(s, 2)) return 0;
  return n == 2 || s[2] == '/' || s[2] == '\\' || s[2] == '?' || s[2] == '#';
}

static void set_no_authority(struct parser *p) {
  uint32_t at = (uint32_t)p->len;
  p->has_host = 0;
  p->host_type = KR_URL_HOST_NONE;
  p->user_start = p->user_end = p->pass_start = p->pass_end = at;
  p->host_start = p->host_end = p->port_end = at;
  p->port = -1;
}

/* Write "scheme:" from the base. */
static void copy_base_scheme(struct parser *p) {
  const kr_url_t *b = p->base;
  put(p, b->href, b->scheme_end + 1);
  p->scheme_end = b->scheme_end;
  p->scheme_type = b->scheme_type;
}

/* Write the base's "//userinfo@host:port" (or nothing if it has none). */
static void copy_base_authority(struct parser *p) {
  const kr_url_t *b = p->base;
  if (b->host_type == KR_URL_HOST_NONE) {
    set_no_authority(p);
    return;
  }
  uint32_t delta = (uint32_t)p->len - (b->scheme_end + 1);
  put(p, b->href + b->scheme_end + 1, b->port_end - (b->scheme_end + 1));
  p->has_host = 1;
  p->host_type = b->host_type;
  p->user_start = b->user_start + delta;
  p->user_end = b->user_end + delta;
  p->pass_start = b->pass_start + delta;
  p->pass_end = b->pass_end + delta;
  p->host_start = b->host_start + delta;
  p->host_end = b->host_end + delta;
  p->port_end = b->port_end + delta;
  p->port = b->port;
}

static uint32_t base_path_end(const kr_url_t *b) {
  if (b->query_start != NOPOS) return b->query_start;
  if (b->frag_start != NOPOS) return b->frag_start;
  return b->href_len;
}

static void copy_base_path(struct parser *p) {
  const kr_url_t *b = p->base;
  uint32_t e = base_path_end(b);
  put(p, b->href + b->path_start, e - b->path_start);
}

static void copy_base_query(struct parser *p) {
  const kr_url_t *b = p->base;
  if (b->query_start == NOPOS) return;
  uint32_t e = b->frag_start != NOPOS ? b->frag_start : b->href_len;
  p->query_start = (uint32_t)p->len;
  put(p, b->href + b->query_start, e - b->query_start);
}

/* Remove the last path segment (the standard's "shorten a path"). */
static void shorten_path(struct parser *p) {
  size_t start = p->path_start, end = p->len;
  if (end == start) return;
  const char *h = p->u->href;
  /* a lone normalized drive letter stays */
  if (p->scheme_type == SCHEME_FILE && end - start == 3 && is_norm_drive(h + start + 1, 2))
    return;
  size_t k = end;
  while (k > start + 1 && h[k - 1] != '/') k--;
  p->len = k - 1; /* h[start] is the path's first '/' */
}

static int is_single_dot(const char *s, size_t n) {
  return (n == 1 && s[0] == '.') ||
         (n == 3 && s[0] == '%' && s[1] == '2' && (s[2] | 0x20) == 'e');
}

static int is_double_dot(const char *s, size_t n) {
  switch (n) {
  case 2: return s[0] == '.' && s[1] == '.';
  case 4:
    return (s[0] == '.' && s[1] == '%' && s[2] == '2' && (s[3] | 0x20) == 'e') ||
           (s[0] == '%' && s[1] == '2' && (s[2] | 0x20) == 'e' && s[3] == '.');
  case 6:
    return s[0] == '%' && s[1] == '2' && (s[2] | 0x20) == 'e' && s[3] == '%' &&
           s[4] == '2' && (s[5] | 0x20) == 'e';
  default: return 0;
  }
}

/* Userinfo: split at the first ':' into username and password, each
 * percent-encoded with the userinfo set, '@' included. */
static void put_userinfo(struct parser *p, const char *s, size_t n) {
  const char *colon = memchr(s, ':', n);
  size_t un = colon ? (size_t)(colon - s) : n;
  p->user_start = (uint32_t)p->len;
  for (size_t i = 0; i < un; i++) put_enc(p, (unsigned char)s[i], SET_USER);
  p->user_end = (uint32_t)p->len;
  size_t pn = colon ? n - un - 1 : 0;
  if (pn) {
    putch(p, ':');
    p->pass_start = (uint32_t)p->len;
    for (size_t i = 0; i < pn; i++) put_enc(p, (unsigned char)colon[1 + i], SET_USER);
    p->pass_end = (uint32_t)p->len;
  } else {
    p->pass_start = p->pass_end = (uint32_t)p->len;
  }
  if (un || pn) putch(p, '@');
}

/* ---- the basic URL parser ---- */

static int run(struct parser *p) {
  const char *in = p->in;
  const ptrdiff_t n = (ptrdiff_t)p->n;
  const kr_url_t *base = p->base;
  enum state st = ST_SCHEME_START;
  ptrdiff_t i = 0;
  ptrdiff_t mark = 0;       /* start of the scheme / file host buffer */
  int seg_open = 0;         /* a path segment has been started */
  size_t seg_start = 0;     /* index of that segment's '/' */

  for (;;) {
    const int c = i < n ? (unsigned char)in[i] : -1; /* -1 = EOF */
    switch (st) {
    case ST_SCHEME_START:
      if (c != -1 && is_alpha(c)) {
        st = ST_SCHEME;
        mark = i;
      } else {
        st = ST_NO_SCHEME;
        i--;
      }
      break;

    case ST_SCHEME:
      if (c != -1 && (is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.')) {
        break;
      } else if (c == ':') {
        for (ptrdiff_t k = mark; k < i; k++) putch(p, (char)to_lower((unsigned char)in[k]));
        p->scheme_end = (uint32_t)p->len;
        putch(p, ':');
        if (p->err) return -1;
        p->scheme_type = (uint8_t)scheme_lookup(p->u->href, p->scheme_end);
        if (p->scheme_type == SCHEME_FILE) {
          st = ST_FILE;
        } else if (is_special(p) && base && base->scheme_type == p->scheme_type &&
                   base->scheme_end == p->scheme_end &&
                   !memcmp(base->href, p->u->href, p->scheme_end)) {
          st = ST_SPECIAL_RELATIVE_OR_AUTHORITY;
        } else if (is_special(p)) {
          st = ST_SPECIAL_AUTHORITY_SLASHES;
        } else if (i + 1 < n && in[i + 1] == '/') {
          st = ST_PATH_OR_AUTHORITY;
          i++;
        } else {
          set_no_authority(p);
          p->path_start = (uint32_t)p->len;
          p->u->opaque_path = 1;
          st = ST_OPAQUE_PATH;
        }
      } else {
        p->len = 0;
        st = ST_NO_SCHEME;
        i = -1;
      }
      break;

    case ST_NO_SCHEME:
      if (!base || (base->opaque_path && c != '#')) return -1;
      if (base->opaque_path && c == '#') {
        copy_base_scheme(p);
        set_no_authority(p);
        p->path_start = (uint32_t)p->len;
        copy_base_path(p);
        p->u->opaque_path = 1;
        copy_base_query(p);
        p->frag_start = (uint32_t)p->len;
        putch(p, '#');
        st = ST_FRAGMENT;
      } else if (base->scheme_type != SCHEME_FILE) {
        st = ST_RELATIVE;
        i--;
      } else {
        copy_base_scheme(p);
        st = ST_FILE;
        i--;
      }
      break;

    case ST_SPECIAL_RELATIVE_OR_AUTHORITY:
      if (c == '/' && i + 1 < n && in[i + 1] == '/') {
        st = ST_SPECIAL_AUTHORITY_IGNORE_SLASHES;
        i++;
      } else {
        st = ST_RELATIVE;
        i--;
      }
      break;

    case ST_PATH_OR_AUTHORITY:
      if (c == '/') {
        st = ST_AUTHORITY;
      } else {
        set_no_authority(p);
        p->path_start = (uint32_t)p->len;
        st = ST_PATH;
        i--;
      }
      break;

    case ST_RELATIVE:
      if (p->len == 0) copy_base_scheme(p);
      if (c == '/') {
        st = ST_RELATIVE_SLASH;
      } else if (is_special(p) && c == '\\') {
        st = ST_RELATIVE_SLASH;
      } else {
        copy_base_authority(p);
        p->path_start = (uint32_t)p->len;
        copy_base_path(p);
        if (c == '?') {
          p->query_start = (uint32_t)p->len;
          putch(p, '?');
          st = ST_QUERY;
        } else if (c == '#') {
          copy_base_query(p);
          p->frag_start = (uint32_t)p->len;
          putch(p, '#');
          st = ST_FRAGMENT;
        } else if (c != -1) {
          shorten_path(p);
          st = ST_PATH;
          i--;
        } else {
          copy_base_query(p);
        }
      }
      break;

    case ST_RELATIVE_SLASH:
      if (is_special(p) && (c == '/' || c == '\\')) {
        st = ST_SPECIAL_AUTHORITY_IGNORE_SLASHES;
      } else if (c == '/') {
        st = ST_AUTHORITY;
      } else {
        copy_base_authority(p);
        p->path_start = (uint32_t)p->len;
        st = ST_PATH;
        i--;
      }
      break;

    case ST_SPECIAL_AUTHORITY_SLASHES:
      if (c == '/' && i + 1 < n && in[i + 1] == '/') {
        st = ST_SPECIAL_AUTHORITY_IGNORE_SLASHES;
        i++;
      } else {
        st = ST_SPECIAL_AUTHORITY_IGNORE_SLASHES;
        i--;
      }
      break;

    case ST_SPECIAL_AUTHORITY_IGNORE_SLASHES:
      if (c != '/' && c != '\\') {
        st = ST_AUTHORITY;
        i--;
      }
      break;

    case ST_AUTHORITY: {
      /* The standard buffers up to the end of the authority and splits
       * at each '@'; the net effect is: userinfo is everything before the
       * last '@', the host (and port) everything after it. */
      const int special = is_special(p);
      ptrdiff_t end = i, at = -1;
      while (end < n) {
        char ch = in[end];
        if (ch == '/' || ch == '?' || ch == '#' || (special && ch == '\\')) break;
        if (ch == '@') at = end;
        end++;
      }
      putch(p, '/');
      putch(p, '/');
      p->has_host = 1;
      if (at >= 0) {
        if (at + 1 == end) return -1; /* credentials but no host */
        put_userinfo(p, in + i, (size_t)(at - i));
        i = at + 1;
      } else {
        p->user_start = p->user_end = p->pass_start = p->pass_end = (uint32_t)p->len;
      }
      /* host state */
      ptrdiff_t h = i;
      int brackets = 0;
      while (h < end) {
        char ch = in[h];
        if (ch == ':' && !brackets) break;
        if (ch == '[') brackets = 1;
        else if (ch == ']') brackets = 0;
        h++;
      }
      if (h < end) { /* stopped at ':' */
        if (h == i) return -1;
      } else if (special && h == i) {
        return -1;
      }
      p->host_start = (uint32_t)p->len;
      if (host_parse(p, in + i, (size_t)(h - i), !special)) return -1;
      p->host_end = p->port_end = (uint32_t)p->len;
      p->port = -1;
      if (h < end) {
        st = ST_PORT;
        i = h; /* ':' is consumed by the increment below */
      } else {
        st = ST_PATH_START;
        i = end - 1;
      }
      break;
    }

    case ST_PORT: {
      ptrdiff_t e = i;
      unsigned long v = 0;
      while (e < n && is_digit((unsigned char)in[e])) {
        if (v <= 65535) v = v * 10 + (unsigned)(in[e] - '0');
        e++;
      }
      int ch = e < n ? (unsigned char)in[e] : -1;
      if (!(ch == -1 || ch == '/' || ch == '?' || ch == '#' || (is_special(p) && ch == '\\')))
        return -1;
      if (e > i) {
        if (v > 65535) return -1;
        if ((int)v != default_port(p->scheme_type)) {
          putch(p, ':');
          put_uint(p, v);
          p->port = (int32_t)v;
        }
        p->port_end = (uint32_t)p->len;
      }
      st = ST_PATH_START;
      i = e - 1;
      break;
    }

    case ST_FILE:
      if (p->len == 0) {
        put(p, "file:", 5);
        p->scheme_end = 4;
      }
      p->scheme_type = SCHEME_FILE;
      if (c == '/' || c == '\\') {
        st = ST_FILE_SLASH;
      } else if (base && base->scheme_type == SCHEME_FILE) {
        copy_base_authority(p);
        p->path_start = (uint32_t)p->len;
        copy_base_path(p);
        if (c == '?') {
          p->query_start = (uint32_t)p->len;
          putch(p, '?');
          st = ST_QUERY;
        } else if (c == '#') {
          copy_base_query(p);
          p->frag_start = (uint32_t)p->len;
          putch(p, '#');
          st = ST_FRAGMENT;
        } else if (c != -1) {
          if (!starts_with_drive(in + i, (size_t)(n - i))) shorten_path(p);
          else p->len = p->path_start;
          st = ST_PATH;
          i--;
        } else {
          copy_base_query(p);
        }
      } else {
        put(p, "//", 2);
        p->has_host = 1;
        p->host_type = KR_URL_HOST_EMPTY;
        p->user_start = p->user_end = p->pass_start = p->pass_end = (uint32_t)p->len;
        p->host_start = p->host_end = p->port_end = (uint32_t)p->len;
        p->path_start = (uint32_t)p->len;
        st = ST_PATH;
        i--;
      }
      break;

    case ST_FILE_SLASH:
      if (c == '/' || c == '\\') {
        st = ST_FILE_HOST;
        mark = i + 1;
      } else {
        if (base && base->scheme_type == SCHEME_FILE) {
          copy_base_authority(p);
          p->path_start = (uint32_t)p->len;
          if (!starts_with_drive(in + i, (size_t)(n - i))) {
            /* base's path[0], if a normalized drive letter */
            const char *bp = base->href + base->path_start;
            uint32_t bn = base_path_end(base) - base->path_start;
            if (bn >= 3 && bp[0] == '/' && is_norm_drive(bp + 1, 2) && (bn == 3 || bp[3] == '/'))
              put(p, bp, 3);
          }
        } else {
          put(p, "//", 2);
          p->has_host = 1;
          p->host_type = KR_URL_HOST_EMPTY;
          p->user_start = p->user_end = p->pass_start = p->pass_end = (uint32_t)p->len;
          p->host_start = p->host_end = p->port_end = (uint32_t)p->len;
          p->path_start = (uint32_t)p->len;
        }
        st = ST_PATH;
        i--;
      }
      break;

    case ST_FILE_HOST:
      if (c == -1 || c == '/' || c == '\\' || c == '?' || c == '#') {
        const char *buf = in + mark;
        size_t bn = (size_t)(i - mark);
        put(p, "//", 2);
        p->has_host = 1;
        p->port = -1;
        p->user_start = p->user_end = p->pass_start = p->pass_end = (uint32_t)p->len;
        p->host_start = (uint32_t)p->len;
        if (is_drive(buf, bn)) {
          /* the buffer is the path's first segment, not a host */
          p->host_type = KR_URL_HOST_EMPTY;
          p->host_end = p->port_end = p->path_start = (uint32_t)p->len;
          st = ST_PATH;
          i = mark - 1;
        } else if (bn == 0) {
          p->host_type = KR_URL_HOST_EMPTY;
          p->host_end = p->port_end = p->path_start = (uint32_t)p->len;
          st = ST_PATH_START;
          i--;
        } else {
          if (host_parse(p, buf, bn, 0)) return -1;
          if (p->len - p->host_start == 9 && !memcmp(p->u->href + p->host_start, "localhost", 9)) {
            p->len = p->host_start;
            p->host_type = KR_URL_HOST_EMPTY;
          }
          p->host_end = p->port_end = p->path_start = (uint32_t)p->len;
          st = ST_PATH_START;
          i--;
        }
      }
      break;

    case ST_PATH_START:
      p->path_start = (uint32_t)p->len;
      if (is_special(p)) {
        st = ST_PATH;
        if (c != '/' && c != '\\') i--;
      } else if (c == '?') {
        p->query_start = (uint32_t)p->len;
        putch(p, '?');
        st = ST_QUERY;
      } else if (c == '#') {
        p->frag_start = (uint32_t)p->len;
        putch(p, '#');
        st = ST_FRAGMENT;
      } else if (c != -1) {
        st = ST_PATH;
        if (c != '/') i--;
      }
      break;

    case ST_PATH: {
      const int special = is_special(p);
      if (!seg_open) {
        seg_start = p->len;
        putch(p, '/');
        seg_open = 1;
      }
      if (c == -1 || c == '/' || (special && c == '\\') || c == '?' || c == '#') {
        const char *seg = p->u->href + seg_start + 1;
        size_t sn = p->len - seg_start - 1;
        const int slash = c == '/' || (special && c == '\\');
        if (p->err) return -1;
        if (is_double_dot(seg, sn)) {
          p->len = seg_start;
          shorten_path(p);
          if (!slash) putch(p, '/');
        } else if (is_single_dot(seg, sn)) {
          p->len = seg_start;
          if (!slash) putch(p, '/');
        } else if (p->scheme_type == SCHEME_FILE && seg_start == p->path_start &&
                   is_drive(seg, sn)) {
          p->u->href[seg_start + 2] = ':';
        }
        seg_open = 0;
        if (c == '?') {
          p->query_start = (uint32_t)p->len;
          putch(p, '?');
          st = ST_QUERY;
        } else if (c == '#') {
          p->frag_start = (uint32_t)p->len;
          putch(p, '#');
          st = ST_FRAGMENT;
        }
      } else {
        /* the rest of the segment in one go: plain runs copied whole */
        ptrdiff_t j = i;
        while (j < n) {
          ptrdiff_t k = j;
          while (k < n) {
            unsigned char ch = (unsigned char)in[k];
            if (ch == '/' || ch == '?' || ch == '#' || (special && ch == '\\') || in_set(ch, SET_PATH))
              break;
            k++;
          }
          put(p, in + j, (size_t)(k - j));
          j = k;
          if (j >= n) break;
          unsigned char ch = (unsigned char)in[j];
          if (ch == '/' || ch == '?' || ch == '#' || (special && ch == '\\')) break;
          put_enc(p, ch, SET_PATH);
          j++;
        }
        i = j - 1;
      }
      break;
    }

    case ST_OPAQUE_PATH:
      if (c == '?') {
        p->query_start = (uint32_t)p->len;
        putch(p, '?');
        st = ST_QUERY;
      } else if (c == '#') {
        p->frag_start = (uint32_t)p->len;
        putch(p, '#');
        st = ST_FRAGMENT;
      } else if (c == ' ') {
        if (i + 1 < n && (in[i + 1] == '?' || in[i + 1] == '#')) put(p, "%20", 3);
        else putch(p, ' ');
      } else if (c != -1) {
        put_enc(p, (unsigned char)c, SET_C0);
      }
      break;

    case ST_QUERY: {
      /* the whole rest of the query in one go */
      const pset_t set = is_special(p) ? SET_SQUERY : SET_QUERY;
      while (i < n && in[i] != '#') {
        ptrdiff_t k = i;
        while (k < n && in[k] != '#' && !in_set((unsigned char)in[k], set)) k++;
        put(p, in + i, (size_t)(k - i));
        i = k;
        if (i < n && in[i] != '#') put_enc(p, (unsigned char)in[i++], set);
      }
      if (i < n) {
        p->frag_start = (uint32_t)p->len;
        putch(p, '#');
        st = ST_FRAGMENT;
      }
      break;
    }

    case ST_FRAGMENT:
      while (i < n) put_enc(p, (unsigned char)in[i++], SET_FRAG);
      break;
    }
    if (p->err) return -1;
    if (i >= n) break;
    i++;
  }
  return p->err ? -1 : 0;
}

/* ---- entry points ---- */

static int is_c0_or_space(unsigned char c) { return c <= 0x20; }

int kr_url_parse_ex(const char *input, size_t len, const kr_url_t *base,
                    size_t max_len, kr_url_t **out) {
  *out = NULL;
  if (!max_len) max_len = KR_URL_MAX_LEN;
  if (len > max_len || (!input && len)) return KR_EURL;
  if (!input) input = "";
  /* trim C0 controls and spaces, drop tabs and newlines */
  while (len && is_c0_or_space((unsigned char)input[0])) input++, len--;
  while (len && is_c0_or_space((unsigned char)input[len - 1])) len--;
  char *clean = NULL;
  for (size_t k = 0; k < len; k++) {
    unsigned char ch = (unsigned char)input[k];
    if (ch <= '\r' && (ch == '\t' || ch == '\n' || ch == '\r')) {
      clean = kr_xmalloc(len + 1);
      size_t m = 0;
      for (size_t j = 0; j < len; j++)
        if (input[j] != '\t' && input[j] != '\n' && input[j] != '\r') clean[m++] = input[j];
      input = clean;
      len = m;
      break;
    }
  }
  struct parser p;
  memset(&p, 0, sizeof p);
  p.in = input;
  p.n = len;
  p.base = base;
  p.max = 3 * max_len + (base ? base->href_len : 0) + 64;
  p.cap = len + (base ? base->href_len : 0) + 32;
  if (p.cap > p.max) p.cap = p.max;
  p.u = kr_xmalloc(sizeof(struct kr_url) + p.cap + 1);
  p.u->opaque_path = 0;
  p.query_start = p.frag_start = NOPOS;
  p.port = -1;
  int rc = run(&p);
  free(clean);
  if (rc) {
    free(p.u);
    return KR_EURL;
  }
  /* "/." keeps a path starting with an empty segment from reading as a
   * host when there is none. */
  if (!p.has_host && !p.u->opaque_path && p.len >= p.path_start + 2 &&
      p.u->href[p.path_start] == '/' && p.u->href[p.path_start + 1] == '/') {
    if (p.len + 2 > p.cap && grow(&p, p.len + 2)) {
      free(p.u);
      return KR_EURL;
    }
    memmove(p.u->href + p.path_start + 2, p.u->href + p.path_start, p.len - p.path_start);
    p.u->href[p.path_start] = '/';
    p.u->href[p.path_start + 1] = '.';
    p.len += 2;
    p.path_start += 2;
    if (p.query_start != NOPOS) p.query_start += 2;
    if (p.frag_start != NOPOS) p.frag_start += 2;
  }
  struct kr_url *u = p.u;
  u->href[p.len] = '\0';
  u->href_len = (uint32_t)p.len;
  u->scheme_end = p.scheme_end;
  u->user_start = p.user_start;
  u->user_end = p.user_end;
  u->pass_start = p.pass_start;
  u->pass_end = p.pass_end;
  u->host_start = p.host_start;
  u->host_end = p.host_end;
  u->port_end = p.port_end;
  u->path_start = p.path_start;
  u->query_start = p.query_start;
  u->frag_start = p.frag_start;
  u->port = p.port;
  u->host_type = p.has_host ? p.host_type : KR_URL_HOST_NONE;
  u->scheme_type = p.scheme_type;
  *out = u;
  return 0;
}

int kr_url_parse(const char *input, size_t len, const kr_url_t *base, kr_url_t **out) {
  return kr_url_parse_ex(input, len, base, 0, out);
}

/* The cases follow the state machine: a special scheme followed by "//"
 * goes to the authority states whatever the base ("special relative or
 * authority" and "special authority slashes" both skip the two slashes);
 * one '/' not followed by '/' or '\\' takes the base's userinfo, host and
 * port in "relative slash" and nothing else of it (the path starts
 * empty). Tabs and newlines are removed before parsing and could join
 * pieces into other forms, so they get the conservative answer. */
size_t kr_url_base_use(const char *input, size_t len, const kr_url_t *base) {
  if (!base) return 0;
  size_t all = base->href_len;
  if (base->scheme_type != SCHEME_HTTP && base->scheme_type != SCHEME_HTTPS) return all;
  if (!input) return all;
  while (len && is_c0_or_space((unsigned char)input[0])) input++, len--;
  while (len && is_c0_or_space((unsigned char)input[len - 1])) len--;
  for (size_t k = 0; k < len; k++)
    if (input[k] == '\t' || input[k] == '\n' || input[k] == '\r') return all;
  if (len >= 1 && input[0] == '/') {
    if (len == 1 || (input[1] != '/' && input[1] != '\\')) return base->port_end;
    return all;
  }
  size_t i = 0;
  if (len && is_alpha((unsigned char)input[0]))
    while (i < len && (is_alpha((unsigned char)input[i]) || is_digit((unsigned char)input[i]) ||
                       input[i] == '+' || input[i] == '-' || input[i] == '.'))
      i++;
  if ((i == 4 || i == 5) && i + 2 < len && input[i] == ':' && input[i + 1] == '/' &&
      input[i + 2] == '/') {
    char sc[5];
    for (size_t k = 0; k < i; k++) sc[k] = (char)to_lower((unsigned char)input[k]);
    int st = scheme_lookup(sc, i);
    if (st == SCHEME_HTTP || st == SCHEME_HTTPS) return 0;
  }
  return all;
}

size_t kr_url_size(const kr_url_t *url) { return sizeof(struct kr_url) + url->href_len + 1; }

kr_url_t *kr_url_dup(const kr_url_t *url) {
  size_t sz = sizeof(struct kr_url) + url->href_len + 1;
  kr_url_t *c = kr_xmalloc(sz);
  memcpy(c, url, sz);
  return c;
}

void kr_url_free(kr_url_t *url) { free(url); }

/* ---- accessors ---- */

static kr_slice_t sl(const kr_url_t *u, uint32_t a, uint32_t b) {
  return kr_slice(u->href + a, b - a);
}

static uint32_t path_end(const kr_url_t *u) { return base_path_end(u); }

const char *kr_url_href(const kr_url_t *url) { return url->href; }
size_t kr_url_href_len(const kr_url_t *url) { return url->href_len; }
kr_slice_t kr_url_scheme(const kr_url_t *url) { return sl(url, 0, url->scheme_end); }
kr_slice_t kr_url_username(const kr_url_t *url) { return sl(url, url->user_start, url->user_end); }
kr_slice_t kr_url_password(const kr_url_t *url) { return sl(url, url->pass_start, url->pass_end); }
kr_slice_t kr_url_hostname(const kr_url_t *url) { return sl(url, url->host_start, url->host_end); }
kr_slice_t kr_url_host(const kr_url_t *url) { return sl(url, url->host_start, url->port_end); }
kr_url_host_type_t kr_url_host_type(const kr_url_t *url) { return (kr_url_host_type_t)url->host_type; }
int kr_url_port(const kr_url_t *url) { return url->port; }

int kr_url_effective_port(const kr_url_t *url) {
  return url->port >= 0 ? url->port : default_port(url->scheme_type);
}

kr_slice_t kr_url_pathname(const kr_url_t *url) { return sl(url, url->path_start, path_end(url)); }

kr_slice_t kr_url_query(const kr_url_t *url) {
  if (url->query_start == NOPOS) return kr_slice(NULL, 0);
  uint32_t e = url->frag_start != NOPOS ? url->frag_start : url->href_len;
  return sl(url, url->query_start + 1, e);
}

kr_slice_t kr_url_search(const kr_url_t *url) {
  if (url->query_start == NOPOS) return kr_slice(url->href + url->href_len, 0);
  uint32_t e = url->frag_start != NOPOS ? url->frag_start : url->href_len;
  if (e == url->query_start + 1) return kr_slice(url->href + e, 0);
  return sl(url, url->query_start, e);
}

kr_slice_t kr_url_fragment(const kr_url_t *url) {
  if (url->frag_start == NOPOS) return kr_slice(NULL, 0);
  return sl(url, url->frag_start + 1, url->href_len);
}

kr_slice_t kr_url_hash(const kr_url_t *url) {
  if (url->frag_start == NOPOS || url->frag_start + 1 == url->href_len)
    return kr_slice(url->href + url->href_len, 0);
  return sl(url, url->frag_start, url->href_len);
}

kr_slice_t kr_url_request_target(const kr_url_t *url) {
  uint32_t e = url->frag_start != NOPOS ? url->frag_start : url->href_len;
  if (url->path_start == e) return KR_SLICE_LIT("/");
  return sl(url, url->path_start, e);
}

kr_slice_t kr_url_href_nofrag(const kr_url_t *url) {
  return sl(url, 0, url->frag_start != NOPOS ? url->frag_start : url->href_len);
}

int kr_url_is_https(const kr_url_t *url) { return url->scheme_type == SCHEME_HTTPS; }
int kr_url_is_http(const kr_url_t *url) {
  return url->scheme_type == SCHEME_HTTP || url->scheme_type == SCHEME_HTTPS;
}
int kr_url_is_special(const kr_url_t *url) { return url->scheme_type != SCHEME_OTHER; }
int kr_url_has_opaque_path(const kr_url_t *url) { return url->opaque_path; }

int kr_url_origin(const kr_url_t *url, kr_buf_t *out) {
  switch (url->scheme_type) {
  case SCHEME_HTTP: case SCHEME_HTTPS: case SCHEME_WS: case SCHEME_WSS: case SCHEME_FTP: {
    int rc = kr_buf_append(out, url->href, url->scheme_end);
    if (!rc) rc = kr_buf_append(out, "://", 3);
    if (!rc) rc = kr_buf_append(out, url->href + url->host_start, url->port_end - url->host_start);
    return rc;
  }
  case SCHEME_OTHER:
    if (url->scheme_end == 4 && !memcmp(url->href, "blob", 4)) {
      kr_slice_t path = kr_url_pathname(url);
      kr_url_t *inner = NULL;
      if (kr_url_parse(path.p, path.n, NULL, &inner) == 0) {
        int rc = 1;
        if (inner->scheme_type == SCHEME_HTTP || inner->scheme_type == SCHEME_HTTPS)
          rc = kr_url_origin(inner, out);
        kr_url_free(inner);
        if (rc <= 0) return rc;
      }
    }
    return kr_buf_append_str(out, "null");
  default:
    return kr_buf_append_str(out, "null");
  }
}

/* ---- public suffix list ---- */

static int psl_part(kr_slice_t host, kr_slice_t *out, int registrable) {
  char tmp[256];
  if (host.n == 0 || host.n > 253) return KR_EINVAL;
  memcpy(tmp, host.p, host.n);
  tmp[host.n] = '\0';
  uint32_t v4;
  if (kr__url_ends_in_number(tmp, host.n) && !kr__url_ipv4_parse(tmp, host.n, &v4))
    return KR_EINVAL;
  if (tmp[0] == '[') return KR_EINVAL;
  const psl_ctx_t *psl = psl_builtin();
  if (!psl) return KR_EINVAL;
  const char *r = registrable ? psl_registrable_domain(psl, tmp) : psl_unregistrable_domain(psl, tmp);
  if (!r || !*r) return KR_EINVAL;
  *out = kr_slice(host.p + (r - tmp), host.n - (size_t)(r - tmp));
  return 0;
}

int kr_url_registrable_domain(kr_slice_t host, kr_slice_t *out) { return psl_part(host, out, 1); }
int kr_url_public_suffix(kr_slice_t host, kr_slice_t *out) { return psl_part(host, out, 0); }
