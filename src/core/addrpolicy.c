/*
 * Address policy (see include/kria/addrpolicy.h): classes of special
 * addresses from the IANA registries, CIDR parsing and lists, and the
 * allow/deny decision the HTTP client takes for every address it is about
 * to connect to. Everything works on 16-byte IPv6 forms (IPv4 as
 * ::ffff:a.b.c.d), so one CIDR matcher serves both families and a mapped
 * address can never slip past a rule written for the IPv4 one. Sections:
 * classes, CIDRs, policy.
 */
#include "kria/addrpolicy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"

/* ---- classes ------------------------------------------------------------ */

static const char *const class_names[] = {
    [KR_ADDR_PUBLIC] = "public",         [KR_ADDR_LOOPBACK] = "loopback",
    [KR_ADDR_PRIVATE] = "private",       [KR_ADDR_SHARED] = "shared",
    [KR_ADDR_LINK_LOCAL] = "link-local", [KR_ADDR_MULTICAST] = "multicast",
    [KR_ADDR_UNSPECIFIED] = "unspecified", [KR_ADDR_BROADCAST] = "broadcast",
    [KR_ADDR_RESERVED] = "reserved",
};

const char *kr_addr_class_name(kr_addr_class_t cls) {
  if ((unsigned)cls >= sizeof class_names / sizeof class_names[0]) return "unknown";
  return class_names[cls];
}

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static void v4_to_v6(const uint8_t v4[4], uint8_t ip[16]) {
  memcpy(ip, v4mapped_prefix, 12);
  memcpy(ip + 12, v4, 4);
}

/* The IPv4 address an IPv6 one carries toward an IPv4 host: translated
 * ::ffff:0:a.b.c.d (RFC 2765), NAT64 64:ff9b::a.b.c.d (RFC 6052), 6to4
 * 2002:AABB:CCDD::/48 (RFC 3056). Mapped addresses are IPv4 already and
 * not reported here. 1 with v4 filled, else 0. */
static int embedded_v4(const uint8_t ip[16], uint8_t v4[4]) {
  static const uint8_t translated[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
  static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (!memcmp(ip, translated, 12) || !memcmp(ip, nat64, 12)) {
    memcpy(v4, ip + 12, 4);
    return 1;
  }
  if (ip[0] == 0x20 && ip[1] == 0x02) {
    memcpy(v4, ip + 2, 4);
    return 1;
  }
  return 0;
}

static int is_mapped(const uint8_t ip[16]) { return !memcmp(ip, v4mapped_prefix, 12); }

static kr_addr_class_t classify_v4(const uint8_t a[4]) {
  uint8_t x = a[0], y = a[1], z = a[2];
  if (x == 0) return KR_ADDR_UNSPECIFIED; /* "this network": 0.0.0.0 is the local host */
  if (x == 10) return KR_ADDR_PRIVATE;
  if (x == 100 && (y & 0xc0) == 64) return KR_ADDR_SHARED;
  if (x == 127) return KR_ADDR_LOOPBACK;
  if (x == 169 && y == 254) return KR_ADDR_LINK_LOCAL;
  if (x == 172 && (y & 0xf0) == 16) return KR_ADDR_PRIVATE;
  if (x == 192 && y == 168) return KR_ADDR_PRIVATE;
  if (x == 192 && y == 0 && (z == 0 || z == 2)) return KR_ADDR_RESERVED;
  if (x == 192 && y == 88 && z == 99) return KR_ADDR_RESERVED;
  if (x == 198 && (y & 0xfe) == 18) return KR_ADDR_RESERVED;
  if (x == 198 && y == 51 && z == 100) return KR_ADDR_RESERVED;
  if (x == 203 && y == 0 && z == 113) return KR_ADDR_RESERVED;
  if ((x & 0xf0) == 224) return KR_ADDR_MULTICAST;
  if (x == 255 && y == 255 && z == 255 && a[3] == 255) return KR_ADDR_BROADCAST;
  if ((x & 0xf0) == 240) return KR_ADDR_RESERVED;
  return KR_ADDR_PUBLIC;
}

kr_addr_class_t kr_addr_classify(const uint8_t ip[16]) {
  static const uint8_t zero[16];
  uint8_t v4[4];
  if (is_mapped(ip)) return classify_v4(ip + 12);
  if (embedded_v4(ip, v4)) return classify_v4(v4);
  if (!memcmp(ip, zero, 16)) return KR_ADDR_UNSPECIFIED;
  if (!memcmp(ip, zero, 15) && ip[15] == 1) return KR_ADDR_LOOPBACK;
  if (ip[0] == 0xff) return KR_ADDR_MULTICAST;
  if (ip[0] == 0xfe && (ip[1] & 0xc0) == 0x80) return KR_ADDR_LINK_LOCAL;
  if (ip[0] == 0xfe && (ip[1] & 0xc0) == 0xc0) return KR_ADDR_PRIVATE; /* site-local */
  if ((ip[0] & 0xfe) == 0xfc) return KR_ADDR_PRIVATE;                   /* ULA */
  static const uint8_t nat64_local[6] = {0, 0x64, 0xff, 0x9b, 0, 1};
  if (!memcmp(ip, nat64_local, 6)) return KR_ADDR_PRIVATE;
  if ((ip[0] & 0xe0) != 0x20) return KR_ADDR_RESERVED; /* outside 2000::/3 */
  if (ip[0] == 0x20 && ip[1] == 0x01) {
    if (ip[2] < 2) return KR_ADDR_RESERVED; /* 2001::/23, Teredo included */
    if (ip[2] == 0x0d && ip[3] == 0xb8) return KR_ADDR_RESERVED; /* documentation */
  }
  if (ip[0] == 0x3f && ip[1] == 0xff && (ip[2] & 0xf0) == 0) return KR_ADDR_RESERVED; /* 3fff::/20 */
  return KR_ADDR_PUBLIC;
}

int kr_addr_from_sockaddr(const struct sockaddr *sa, uint8_t ip[16]) {
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
    v4_to_v6((const uint8_t *)&s4->sin_addr, ip);
    return 0;
  }
  if (sa->sa_family == AF_INET6) {
    memcpy(ip, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    return 0;
  }
  return KR_EINVAL;
}

/* ---- CIDRs --------------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *fmt, const char *s, size_t n)
    __attribute__((format(printf, 3, 0)));
/* fmt has one %.*s for the item, shown printable and cut to 60 bytes. */
static int fail(char *err, size_t errlen, const char *fmt, const char *s, size_t n) {
  if (!errlen) return KR_EINVAL;
  char q[64];
  size_t k = 0;
  for (size_t i = 0; i < n && k < 60; i++) {
    unsigned char c = (unsigned char)s[i];
    q[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
  }
  snprintf(err, errlen, fmt, (int)k, q);
  return KR_EINVAL;
}

/* Four decimal parts 0..255 without leading zeros. */
static int parse_v4(const char *s, size_t n, uint8_t out[4]) {
  size_t i = 0;
  for (int part = 0; part < 4; part++) {
    if (part) {
      if (i >= n || s[i] != '.') return -1;
      i++;
    }
    size_t start = i;
    unsigned v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 3) v = v * 10 + (unsigned)(s[i++] - '0');
    size_t len = i - start;
    if (len == 0 || v > 255 || (len > 1 && s[start] == '0')) return -1;
    out[part] = (uint8_t)v;
  }
  return i == n ? 0 : -1;
}

static int parse_v6(const char *s, size_t n, uint8_t out[16]) {
  char buf[64];
  if (n == 0 || n >= sizeof buf) return -1;
  for (size_t i = 0; i < n; i++) /* inet_pton's alphabet; no zone, no NUL */
    if (!strchr("0123456789abcdefABCDEF:.", s[i]) || s[i] == '\0') return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return inet_pton(AF_INET6, buf, out) == 1 ? 0 : -1;
}

int kr_cidr_parse(const char *s, size_t n, kr_cidr_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  const char *slash = memchr(s, '/', n);
  size_t alen = slash ? (size_t)(slash - s) : n;
  const char *a = s;
  if (n == 0) return fail(err, errlen, "empty address%.*s", "", 0);
  if (alen >= 2 && a[0] == '[' && a[alen - 1] == ']') a++, alen -= 2;
  uint8_t v4[4];
  unsigned maxbits, base;
  if (parse_v4(a, alen, v4) == 0) {
    v4_to_v6(v4, out->ip);
    maxbits = 32;
    base = 96;
  } else if (parse_v6(a, alen, out->ip) == 0) {
    maxbits = 128;
    base = 0;
  } else {
    return fail(err, errlen, "'%.*s' is not an IPv4 or IPv6 address (CIDR a.b.c.d/N or x::y/N)", s, n);
  }
  unsigned bits = maxbits;
  if (slash) {
    const char *p = slash + 1, *end = s + n;
    size_t plen = (size_t)(end - p);
    if (plen == 0 || plen > 3 || (plen > 1 && p[0] == '0'))
      return fail(err, errlen, "'%.*s': bad prefix length", s, n);
    bits = 0;
    for (; p < end; p++) {
      if (*p < '0' || *p > '9') return fail(err, errlen, "'%.*s': bad prefix length", s, n);
      bits = bits * 10 + (unsigned)(*p - '0');
    }
    if (bits > maxbits)
      return fail(err, errlen, maxbits == 32 ? "'%.*s': IPv4 prefix longer than 32"
                                             : "'%.*s': IPv6 prefix longer than 128",
                  s, n);
  }
  out->bits = (uint8_t)(base + bits);
  /* Bits past the prefix: a typo more often than not ("10.1.0.0/8"). */
  for (unsigned i = out->bits; i < 128; i++)
    if (out->ip[i / 8] & (0x80u >> (i % 8)))
      return fail(err, errlen, "'%.*s' has address bits set past the prefix length", s, n);
  return 0;
}

const char *kr_cidr_format(const kr_cidr_t *c, char *buf, size_t len) {
  char ip[INET6_ADDRSTRLEN];
  if (is_mapped(c->ip) && c->bits >= 96) {
    inet_ntop(AF_INET, c->ip + 12, ip, sizeof ip);
    snprintf(buf, len, "%s/%u", ip, (unsigned)c->bits - 96);
  } else {
    inet_ntop(AF_INET6, c->ip, ip, sizeof ip);
    snprintf(buf, len, "%s/%u", ip, (unsigned)c->bits);
  }
  return buf;
}

int kr_cidr_contains(const kr_cidr_t *c, const uint8_t ip[16]) {
  unsigned full = c->bits / 8, rest = c->bits % 8;
  if (memcmp(c->ip, ip, full)) return 0;
  if (!rest) return 1;
  uint8_t mask = (uint8_t)(0xff00u >> rest);
  return (c->ip[full] & mask) == (ip[full] & mask);
}

/* ---- policy -------------------------------------------------------------- */

/* A list entry with its prefix as two masked 64-bit halves, so a check
 * costs two ANDs and compares per entry, whatever the list's length. */
typedef struct cidr_entry {
  uint64_t net[2], mask[2];
  kr_cidr_t c;
} cidr_entry_t;

typedef struct cidr_list {
  cidr_entry_t *v;
  size_t n, cap;
} cidr_list_t;

static uint64_t load_be64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

static uint64_t half_mask(unsigned bits) { /* the top bits of 64 set */
  return bits == 0 ? 0 : bits >= 64 ? UINT64_MAX : UINT64_MAX << (64 - bits);
}

static void entry_init(cidr_entry_t *e, const kr_cidr_t *c) {
  e->c = *c;
  e->mask[0] = half_mask(c->bits);
  e->mask[1] = half_mask(c->bits > 64 ? c->bits - 64u : 0);
  e->net[0] = load_be64(c->ip) & e->mask[0];
  e->net[1] = load_be64(c->ip + 8) & e->mask[1];
}

struct kr_addrpolicy {
  int allow_private;
  cidr_list_t allow, deny;
};

kr_addrpolicy_t *kr_addrpolicy_new(int allow_private) {
  kr_addrpolicy_t *p = kr_xcalloc(1, sizeof *p);
  p->allow_private = allow_private ? 1 : 0;
  return p;
}

void kr_addrpolicy_free(kr_addrpolicy_t *p) {
  if (!p) return;
  free(p->allow.v);
  free(p->deny.v);
  free(p);
}

int kr_addrpolicy_allows_private(const kr_addrpolicy_t *p) { return p->allow_private; }

static void list_copy(cidr_list_t *dst, const cidr_list_t *src) {
  dst->n = dst->cap = src->n;
  dst->v = src->n ? kr_xmalloc(src->n * sizeof *src->v) : NULL;
  if (src->n) memcpy(dst->v, src->v, src->n * sizeof *src->v);
}

kr_addrpolicy_t *kr_addrpolicy_dup(const kr_addrpolicy_t *p) {
  kr_addrpolicy_t *d = kr_addrpolicy_new(p->allow_private);
  list_copy(&d->allow, &p->allow);
  list_copy(&d->deny, &p->deny);
  return d;
}

static int list_add(cidr_list_t *l, const char *list, char *err, size_t errlen) {
  if (!list) return 0;
  size_t n0 = l->n;
  static const char seps[] = ", \t\r\n";
  for (const char *s = list; *s;) {
    s += strspn(s, seps);
    size_t len = strcspn(s, seps);
    if (!len) break;
    kr_cidr_t c;
    int rc = kr_cidr_parse(s, len, &c, err, errlen);
    if (rc == 0 && l->n >= KR_ADDRPOLICY_MAX_CIDRS) {
      if (errlen) snprintf(err, errlen, "more than %d addresses in one list", KR_ADDRPOLICY_MAX_CIDRS);
      rc = KR_ETOOBIG;
    }
    if (rc) {
      l->n = n0; /* all or nothing */
      return rc;
    }
    if (l->n == l->cap) {
      l->cap = l->cap ? l->cap * 2 : 8;
      l->v = kr_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    entry_init(&l->v[l->n++], &c);
    s += len;
  }
  return 0;
}

int kr_addrpolicy_allow(kr_addrpolicy_t *p, const char *list, char *err, size_t errlen) {
  return list_add(&p->allow, list, err, errlen);
}

int kr_addrpolicy_deny(kr_addrpolicy_t *p, const char *list, char *err, size_t errlen) {
  return list_add(&p->deny, list, err, errlen);
}

static int entry_contains(const cidr_entry_t *e, uint64_t hi, uint64_t lo) {
  return (hi & e->mask[0]) == e->net[0] && (lo & e->mask[1]) == e->net[1];
}

/* The first entry of l containing ip or, when ip carries an IPv4 address,
 * that one (v4 != NULL). */
static const kr_cidr_t *list_match(const cidr_list_t *l, const uint8_t ip[16], const uint8_t *v4) {
  uint64_t hi = load_be64(ip), lo = load_be64(ip + 8);
  uint64_t hi4 = v4 ? load_be64(v4) : 0, lo4 = v4 ? load_be64(v4 + 8) : 0;
  for (size_t i = 0; i < l->n; i++)
    if (entry_contains(&l->v[i], hi, lo) || (v4 && entry_contains(&l->v[i], hi4, lo4)))
      return &l->v[i].c;
  return NULL;
}

int kr_addrpolicy_check(const kr_addrpolicy_t *p, const uint8_t ip[16], kr_addr_verdict_t *v) {
  kr_addr_verdict_t tmp;
  if (!v) v = &tmp;
  memset(v, 0, sizeof *v);
  v->cls = kr_addr_classify(ip);
  uint8_t e4[4], e6[16];
  const uint8_t *emb = NULL;
  if (embedded_v4(ip, e4)) {
    v4_to_v6(e4, e6);
    emb = e6;
  }
  if ((v->cidr = list_match(&p->deny, ip, emb))) {
    v->rule = KR_ADDR_BY_DENY_LIST;
    return v->allowed = 0;
  }
  if ((v->cidr = list_match(&p->allow, ip, emb))) {
    v->rule = KR_ADDR_BY_ALLOW_LIST;
    return v->allowed = 1;
  }
  if (v->cls == KR_ADDR_PUBLIC) {
    v->rule = KR_ADDR_BY_CLASS;
    return v->allowed = 1;
  }
  if (p->allow_private) {
    v->rule = KR_ADDR_BY_ALLOW_PRIVATE;
    return v->allowed = 1;
  }
  v->rule = KR_ADDR_BY_CLASS;
  return v->allowed = 0;
}

int kr_addrpolicy_check_sockaddr(const kr_addrpolicy_t *p, const struct sockaddr *sa,
                                 kr_addr_verdict_t *v) {
  uint8_t ip[16];
  if (kr_addr_from_sockaddr(sa, ip)) {
    if (v) {
      memset(v, 0, sizeof *v);
      v->cls = KR_ADDR_RESERVED;
    }
    return 0;
  }
  return kr_addrpolicy_check(p, ip, v);
}
