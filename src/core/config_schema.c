/*
 * The configuration schema as data, and typed values. The tables
 * kr__cfg_keys and kr__cfg_wait_keys are generated from the X-macros of
 * include/kria/config.h; everything else here works from a table entry:
 * the unit parsers (durations, sizes) and their formatters, the parser of
 * each type with its range check, the extra validators named in the
 * schema's CHECK column (addresses, tokens, URLs), regex compilation, and
 * merging (list append) and freeing of values. Sections: validators,
 * tables, number parsers, value parsing, merging and formatting.
 */
#include "config_schema.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/addrpolicy.h"
#include "kria/cluster.h"
#include "kria/error.h"
#include "kria/mem.h"

/* ---- Validators of the CHECK column ------------------------------------ */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static int is_print_ascii(const char *s, int allow_space) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c > 0x7e || (c == ' ' && !allow_space)) return 0;
  }
  return 1;
}

static int check_NAME(const char *s, char *err, size_t errlen) {
  size_t n = strlen(s);
  if (n == 0 || n > 64 || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789._-") != n)
    return fail(err, errlen, "use 1 to 64 letters, digits, '.', '_' or '-'");
  return 0;
}

static int check_NONEMPTY(const char *s, char *err, size_t errlen) {
  return *s ? 0 : fail(err, errlen, "must not be empty");
}

static int check_USER_AGENT(const char *s, char *err, size_t errlen) {
  if (!*s) return fail(err, errlen, "must not be empty");
  if (strlen(s) > 512) return fail(err, errlen, "longer than 512 bytes");
  if (!is_print_ascii(s, 1)) return fail(err, errlen, "use printable ASCII only");
  return 0;
}

static int check_CONTACT(const char *s, char *err, size_t errlen) {
  if (!*s) return 0;
  static const char *const schemes[] = {"http://", "https://", "mailto:"};
  size_t i;
  for (i = 0; i < sizeof schemes / sizeof *schemes; i++)
    if (strncasecmp(s, schemes[i], strlen(schemes[i])) == 0 && s[strlen(schemes[i])])
      break;
  if (i == sizeof schemes / sizeof *schemes || strlen(s) > 256 || !is_print_ascii(s, 0))
    return fail(err, errlen, "expected an http://, https:// or mailto: URL without spaces");
  return 0;
}

/* A WebSub callback base: an http:// or https:// URL with a host, no
 * query or fragment (kria appends "/TOKEN"), printable, at most 256. */
static int check_CALLBACK(const char *s, char *err, size_t errlen) {
  if (!*s) return 0;
  size_t k = strncasecmp(s, "http://", 7) == 0 ? 7 : strncasecmp(s, "https://", 8) == 0 ? 8 : 0;
  if (!k || !s[k] || s[k] == '/' || strlen(s) > 256 || !is_print_ascii(s, 0) ||
      strpbrk(s, "?#"))
    return fail(err, errlen,
                "expected an http:// or https:// URL with a host, no query or fragment");
  return 0;
}

/* "ip", "ip:port", "[ip6]", "[ip6]:port" or a bare IPv6 address. With
 * need_port, the port is required (and may be 0). */
static int parse_address(const char *s, int need_port, int *is_loopback) {
  char host[64];
  const char *port = NULL;
  int v6 = 0;
  if (*s == '[') {
    const char *end = strchr(s, ']');
    if (!end || (size_t)(end - s - 1) >= sizeof host) return -1;
    memcpy(host, s + 1, (size_t)(end - s - 1));
    host[end - s - 1] = '\0';
    v6 = 1;
    if (end[1] == ':') port = end + 2;
    else if (end[1]) return -1;
  } else {
    const char *colon = strchr(s, ':');
    if (colon && strchr(colon + 1, ':')) { /* bare IPv6, no port */
      if (strlen(s) >= sizeof host) return -1;
      strcpy(host, s);
      v6 = 1;
    } else {
      size_t hn = colon ? (size_t)(colon - s) : strlen(s);
      if (hn >= sizeof host) return -1;
      memcpy(host, s, hn);
      host[hn] = '\0';
      if (colon) port = colon + 1;
    }
  }
  unsigned char addr[16];
  if (inet_pton(v6 ? AF_INET6 : AF_INET, host, addr) != 1) return -1;
  if (need_port && !port) return -1;
  if (port) {
    if (!*port || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port)) return -1;
    if (atoi(port) > 65535) return -1;
  }
  if (is_loopback) {
    static const unsigned char v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    *is_loopback = v6 ? memcmp(addr, v6lo, 16) == 0 : addr[0] == 127;
  }
  return 0;
}

static int check_ADDRESS(const char *s, char *err, size_t errlen) {
  if (parse_address(s, 0, NULL))
    return fail(err, errlen, "expected an IP address, IP:PORT or [IPv6]:PORT");
  return 0;
}

static int check_LISTEN(const char *s, char *err, size_t errlen) {
  if (*s && parse_address(s, 1, NULL))
    return fail(err, errlen, "expected IP:PORT or [IPv6]:PORT, e.g. 127.0.0.1:8080");
  return 0;
}

int kr__cfg_listen_is_loopback(const char *listen) {
  int lo = 0;
  return *listen && parse_address(listen, 1, &lo) == 0 && lo;
}

static int check_SURT(const char *s, char *err, size_t errlen) {
  if (!(s[0] == '(' || strncmp(s, "http://(", 8) == 0 || strncmp(s, "https://(", 9) == 0) ||
      !is_print_ascii(s, 0))
    return fail(err, errlen, "expected a SURT prefix such as http://(org,example,");
  return 0;
}

static int check_TOKEN(const char *s, char *err, size_t errlen) {
  size_t n = strlen(s);
  if (n == 0 || n > 64 ||
      strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") != n)
    return fail(err, errlen, "a product token is 1 to 64 letters, '_' or '-' (RFC 9309)");
  return 0;
}

static int check_SECRET(const char *s, char *err, size_t errlen) {
  size_t n = strlen(s);
  if (n && (n < 16 || n > 256 || !is_print_ascii(s, 0)))
    return fail(err, errlen, "use 16 to 256 printable characters without spaces");
  return 0;
}

static int check_CIDR(const char *s, char *err, size_t errlen) {
  kr_cidr_t c;
  return kr_cidr_parse(s, strlen(s), &c, err, errlen) ? -1 : 0;
}

static int check_REDIS(const char *s, char *err, size_t errlen) {
  char host[256];
  int port;
  if (*s && kr_cluster_parse_redis(s, host, sizeof host, &port))
    return fail(err, errlen, "expected HOST:PORT, [IPv6]:PORT or a unix socket path (/...)");
  return 0;
}

static int check_MEMBER(const char *s, char *err, size_t errlen) {
  if (*s && !kr_cluster_name_is_valid(s, strlen(s)))
    return fail(err, errlen, "a member name is 1 to 64 letters, digits, '.', '_' or '-'");
  return 0;
}

#define check_NONE NULL

/* ---- Tables ------------------------------------------------------------- */

#define KR__CFG_DEF(id, sec, nm, ty, fl, df, rg, ck, dc) \
  {sec, nm, KR_CFG_T_##ty, fl, df, rg, check_##ck, dc},

const kr__cfg_def_t kr__cfg_keys[KR_CFG__COUNT] = {KR_CFG_KEYS(KR__CFG_DEF)};
const kr__cfg_def_t kr__cfg_wait_keys[KR_CFG_WAIT__COUNT] = {KR_CFG_WAIT_KEYS(KR__CFG_DEF)};

#undef KR__CFG_DEF

/* ---- Number parsers ------------------------------------------------------ */

/* Leading decimal digits of s[0..n) into *v; number of digits eaten, 0
 * when there are none, -1 on overflow. */
static long parse_digits(const char *s, size_t n, uint64_t *v) {
  size_t i = 0;
  uint64_t x = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') {
    unsigned d = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - d) / 10) return -1;
    x = x * 10 + d;
    i++;
  }
  *v = x;
  return (long)i;
}

int kr_config_parse_duration(const char *s, size_t n, int64_t *ms) {
  static const struct { const char *u; int64_t mult; } units[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
  };
  if (n == 1 && s[0] == '0') return *ms = 0, 0;
  if (n == 0) return KR_EINVAL;
  int64_t total = 0;
  size_t i = 0;
  while (i < n) {
    uint64_t num;
    long k = parse_digits(s + i, n - i, &num);
    if (k < 0) return KR_ETOOBIG;
    if (k == 0) return KR_EINVAL;
    i += (size_t)k;
    size_t u;
    for (u = 0; u < sizeof units / sizeof *units; u++) {
      size_t ul = strlen(units[u].u);
      /* "m" must not eat the m of "ms" */
      if (n - i >= ul && memcmp(s + i, units[u].u, ul) == 0 &&
          !(ul == 1 && s[i] == 'm' && n - i > 1 && s[i + 1] == 's'))
        break;
    }
    if (u == sizeof units / sizeof *units) return KR_EINVAL; /* no unit */
    i += strlen(units[u].u);
    if (num > (uint64_t)(INT64_MAX / units[u].mult)) return KR_ETOOBIG;
    int64_t part = (int64_t)num * units[u].mult;
    if (total > INT64_MAX - part) return KR_ETOOBIG;
    total += part;
  }
  *ms = total;
  return 0;
}

int kr_config_parse_size(const char *s, size_t n, uint64_t *bytes) {
  static const struct { const char *u; uint64_t mult; } units[] = {
      {"", 1},
      {"B", 1},
      {"k", 1000},
      {"K", 1000},
      {"kB", 1000},
      {"KB", 1000},
      {"M", 1000000},
      {"MB", 1000000},
      {"G", 1000000000},
      {"GB", 1000000000},
      {"T", 1000000000000},
      {"TB", 1000000000000},
      {"KiB", 1ull << 10},
      {"MiB", 1ull << 20},
      {"GiB", 1ull << 30},
      {"TiB", 1ull << 40},
  };
  uint64_t num;
  long k = parse_digits(s, n, &num);
  if (k < 0) return KR_ETOOBIG;
  if (k == 0) return KR_EINVAL;
  size_t i = (size_t)k;
  while (i < n && s[i] == ' ') i++;
  for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
    if (strlen(units[u].u) == n - i && memcmp(s + i, units[u].u, n - i) == 0) {
      if (num > UINT64_MAX / units[u].mult) return KR_ETOOBIG;
      *bytes = num * units[u].mult;
      return 0;
    }
  }
  return KR_EINVAL;
}

void kr_config_format_duration(int64_t ms, char *out, size_t len) {
  static const struct { const char *u; int64_t mult; } units[] = {
      {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1},
  };
  if (!len) return;
  out[0] = '\0';
  if (ms == 0) {
    snprintf(out, len, "0");
    return;
  }
  size_t pos = 0;
  uint64_t left = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
  if (ms < 0) pos += (size_t)snprintf(out, len, "-");
  for (size_t u = 0; u < sizeof units / sizeof *units && pos < len; u++) {
    uint64_t q = left / (uint64_t)units[u].mult;
    if (!q) continue;
    left -= q * (uint64_t)units[u].mult;
    pos += (size_t)snprintf(out + pos, len - pos, "%llu%s", (unsigned long long)q, units[u].u);
  }
}

void kr_config_format_size(uint64_t bytes, char *out, size_t len) {
  static const char *const bin[] = {"TiB", "GiB", "MiB", "KiB"};
  static const char *const dec[] = {"T", "G", "M", "k"};
  if (!len) return;
  for (int k = 0; k < 4 && bytes; k++) {
    uint64_t b = 1ull << (10 * (4 - k));
    if (bytes % b == 0) {
      snprintf(out, len, "%llu%s", (unsigned long long)(bytes / b), bin[k]);
      return;
    }
  }
  uint64_t d = 1000000000000ull;
  for (int k = 0; k < 4 && bytes; k++, d /= 1000) {
    if (bytes % d == 0) {
      snprintf(out, len, "%llu%s", (unsigned long long)(bytes / d), dec[k]);
      return;
    }
  }
  snprintf(out, len, "%llu", (unsigned long long)bytes);
}

static int parse_int(const char *s, int64_t *v) {
  int neg = 0;
  size_t n = strlen(s), i = 0;
  if (n && (s[0] == '-' || s[0] == '+')) neg = s[0] == '-', i = 1;
  uint64_t x;
  long k = parse_digits(s + i, n - i, &x);
  if (k < 0) return KR_ETOOBIG;
  if (k == 0 || (size_t)k != n - i) return KR_EINVAL;
  if (x > (uint64_t)INT64_MAX + neg) return KR_ETOOBIG;
  *v = neg ? (int64_t)(0 - x) : (int64_t)x;
  return 0;
}

static int parse_float(const char *s, double *v) {
  if (!*s || strspn(s, "0123456789.eE+-") != strlen(s)) return KR_EINVAL;
  char *end;
  errno = 0;
  double d = strtod(s, &end);
  if (*end) return KR_EINVAL;
  if (errno == ERANGE || !isfinite(d)) return KR_ETOOBIG;
  *v = d;
  return 0;
}

/* ---- Value parsing -------------------------------------------------------- */

const char *kr__cfg_quote(const char *s, char *buf, size_t len) {
  size_t o = 0, i = 0;
  if (!len) return "";
  for (; s[i] && o + 5 < len && i < 60; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c >= 0x7f || c == '\\')
      o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
    else
      buf[o++] = (char)c;
  }
  if (s[i] && o + 4 < len) memcpy(buf + o, "...", 3), o += 3;
  buf[o] = '\0';
  return buf;
}

pcre2_code *kr__cfg_regex_compile(const char *pattern, char *err, size_t errlen) {
  int ec;
  PCRE2_SIZE off;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec,
                                 &off, NULL);
  if (!re) {
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(ec, msg, sizeof msg);
    char q[96];
    fail(err, errlen, "bad regex '%s' at offset %zu: %s", kr__cfg_quote(pattern, q, sizeof q),
         (size_t)off, (const char *)msg);
    return NULL;
  }
  (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* the interpreter is the fallback */
  return re;
}

/* "min..max" of a numeric key into two int64 (ms, bytes, plain) or doubles. */
static int range_bounds(const kr__cfg_def_t *def, int64_t *lo, int64_t *hi, double *flo,
                        double *fhi) {
  const char *dots = strstr(def->range, "..");
  if (!dots) return 0;
  const char *a = def->range, *b = dots + 2;
  size_t an = (size_t)(dots - a), bn = strlen(b);
  char tmp[64];
  int rc = 0;
  switch (def->type) {
  case KR_CFG_T_DURATION:
    rc = kr_config_parse_duration(a, an, lo) | kr_config_parse_duration(b, bn, hi);
    break;
  case KR_CFG_T_SIZE: {
    uint64_t x, y;
    rc = kr_config_parse_size(a, an, &x) | kr_config_parse_size(b, bn, &y);
    *lo = (int64_t)x, *hi = (int64_t)y;
    break;
  }
  case KR_CFG_T_INT:
    snprintf(tmp, sizeof tmp, "%.*s", (int)an, a);
    rc = parse_int(tmp, lo) | parse_int(b, hi);
    break;
  case KR_CFG_T_FLOAT:
    snprintf(tmp, sizeof tmp, "%.*s", (int)an, a);
    rc = parse_float(tmp, flo) | parse_float(b, fhi);
    break;
  default:
    return 0;
  }
  return rc == 0;
}

/* Index of choice text in "a|b|c", or -1. */
static int enum_index(const char *choices, const char *text) {
  size_t tn = strlen(text);
  int i = 0;
  for (const char *p = choices;; i++) {
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    if (n == tn && memcmp(p, text, n) == 0) return i;
    if (!bar) return -1;
    p = bar + 1;
  }
}

static int parse_list(const kr__cfg_def_t *def, const char *text, kr__cfg_value_t *out,
                      char *err, size_t errlen) {
  if (!*text) return 0;
  char q[96];
  if (def->type == KR_CFG_T_REGEX_LIST) {
    pcre2_code *re = kr__cfg_regex_compile(text, err, errlen);
    if (!re) return -1;
    out->items = kr_xmalloc(sizeof *out->items);
    out->codes = kr_xmalloc(sizeof *out->codes);
    out->items[0] = kr_xstrdup(text);
    out->codes[0] = re;
    out->n = 1;
    return 0;
  }
  size_t cap = 0;
  for (const char *p = text;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    kr_slice_t item = kr_slice_trim(kr_slice(p, n));
    if (!item.n) return fail(err, errlen, "empty item in list '%s'", kr__cfg_quote(text, q, sizeof q));
    if (out->n == KR_CONFIG_MAX_LIST)
      return fail(err, errlen, "more than %u items in a list", KR_CONFIG_MAX_LIST);
    if (out->n == cap) {
      cap = cap ? cap * 2 : 4;
      out->items = kr_xrealloc(out->items, cap * sizeof *out->items);
    }
    out->items[out->n++] = kr_xstrndup(item.p, item.n);
    if (def->check) {
      char why[200];
      if (def->check(out->items[out->n - 1], why, sizeof why))
        return fail(err, errlen, "bad item '%s': %s",
                    kr__cfg_quote(out->items[out->n - 1], q, sizeof q), why);
    }
    if (!comma) return 0;
    p = comma + 1;
  }
}

int kr__cfg_parse(const kr__cfg_def_t *def, const char *text, kr__cfg_value_t *out, char *err,
                  size_t errlen) {
  char q[96];
  int rc = 0;
  memset(out, 0, sizeof *out);
  kr__cfg_quote(text, q, sizeof q);
  switch (def->type) {
  case KR_CFG_T_STRING:
    if (def->check) {
      char why[200];
      if (def->check(text, why, sizeof why))
        return fail(err, errlen, "bad value '%s': %s", q, why);
    }
    out->s = kr_xstrdup(text);
    return 0;
  case KR_CFG_T_BOOL: {
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
      if (strcasecmp(text, yes[i]) == 0) return out->i = 1, 0;
      if (strcasecmp(text, no[i]) == 0) return out->i = 0, 0;
    }
    return fail(err, errlen, "bad boolean '%s' (use true or false)", q);
  }
  case KR_CFG_T_ENUM: {
    int i = enum_index(def->range, text);
    if (i < 0) {
      char choices[200];
      size_t k = 0;
      for (const char *p = def->range; *p && k + 3 < sizeof choices; p++) {
        if (*p == '|') choices[k++] = ',', choices[k++] = ' ';
        else choices[k++] = *p;
      }
      choices[k] = '\0';
      return fail(err, errlen, "bad value '%s' (one of: %s)", q, choices);
    }
    out->i = i;
    out->s = kr_xstrdup(text); /* for kr_config_str */
    return 0;
  }
  case KR_CFG_T_REGEX:
    out->s = kr_xstrdup(text);
    if (*text && !(out->re = kr__cfg_regex_compile(text, err, errlen))) {
      kr__cfg_value_free(out);
      return -1;
    }
    return 0;
  case KR_CFG_T_LIST:
  case KR_CFG_T_REGEX_LIST:
    if (parse_list(def, text, out, err, errlen)) {
      kr__cfg_value_free(out);
      return -1;
    }
    return 0;
  case KR_CFG_T_INT:
    rc = parse_int(text, &out->i);
    if (rc == KR_EINVAL) return fail(err, errlen, "bad integer '%s'", q);
    break;
  case KR_CFG_T_SIZE: {
    uint64_t b = 0;
    rc = kr_config_parse_size(text, strlen(text), &b);
    if (rc == KR_EINVAL)
      return fail(err, errlen,
                  "bad size '%s' (a number and an optional unit: B, KiB, MiB, GiB, TiB, "
                  "k, M, G, T)", q);
    if (rc == 0 && b > INT64_MAX) rc = KR_ETOOBIG;
    out->i = (int64_t)b;
    break;
  }
  case KR_CFG_T_DURATION:
    rc = kr_config_parse_duration(text, strlen(text), &out->i);
    if (rc == KR_EINVAL) {
      uint64_t x;
      if (*text && parse_digits(text, strlen(text), &x) == (long)strlen(text))
        return fail(err, errlen, "duration '%s' needs a unit (ms, s, m, h, d), e.g. %ss", q, q);
      return fail(err, errlen,
                  "bad duration '%s' (numbers with units ms, s, m, h, d, e.g. 30s or 1h30m)",
                  q);
    }
    break;
  case KR_CFG_T_FLOAT:
    rc = parse_float(text, &out->f);
    if (rc == KR_EINVAL) return fail(err, errlen, "bad number '%s'", q);
    break;
  }
  if (rc == KR_ETOOBIG) return fail(err, errlen, "'%s' is too large", q);
  int64_t lo = 0, hi = 0;
  double flo = 0, fhi = 0;
  if (range_bounds(def, &lo, &hi, &flo, &fhi)) {
    int out_of_range = def->type == KR_CFG_T_FLOAT ? (out->f < flo || out->f > fhi)
                                                    : (out->i < lo || out->i > hi);
    if (out_of_range)
      return fail(err, errlen, "'%s' is out of range %s", q, def->range);
  }
  return 0;
}

/* ---- Merging, freeing, formatting ------------------------------------------ */

void kr__cfg_value_free(kr__cfg_value_t *v) {
  free(v->s);
  pcre2_code_free(v->re);
  for (size_t i = 0; i < v->n; i++) {
    free(v->items[i]);
    if (v->codes) pcre2_code_free(v->codes[i]);
  }
  free(v->items);
  free(v->codes);
  v->s = NULL, v->re = NULL, v->items = NULL, v->codes = NULL, v->n = 0;
}

int kr__cfg_merge(const kr__cfg_def_t *def, kr__cfg_value_t *dst, kr__cfg_value_t *src,
                  int append, char *err, size_t errlen) {
  int is_list = def->type == KR_CFG_T_LIST || def->type == KR_CFG_T_REGEX_LIST;
  if (!is_list || !append || src->n == 0) { /* replace; an empty list clears */
    kr__cfg_value_free(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
    return 0;
  }
  if (dst->n + src->n > KR_CONFIG_MAX_LIST) {
    kr__cfg_value_free(src);
    return fail(err, errlen, "more than %u items in a list", KR_CONFIG_MAX_LIST);
  }
  size_t n = dst->n + src->n;
  dst->items = kr_xrealloc(dst->items, n * sizeof *dst->items);
  memcpy(dst->items + dst->n, src->items, src->n * sizeof *src->items);
  if (def->type == KR_CFG_T_REGEX_LIST) {
    dst->codes = kr_xrealloc(dst->codes, n * sizeof *dst->codes);
    memcpy(dst->codes + dst->n, src->codes, src->n * sizeof *src->codes);
  }
  dst->n = n;
  free(src->items);
  free(src->codes);
  memset(src, 0, sizeof *src);
  return 0;
}

static const char *choice_name(const char *choices, int64_t idx, size_t *len) {
  const char *p = choices;
  for (int64_t i = 0; i < idx; i++) {
    p = strchr(p, '|');
    if (!p) return NULL;
    p++;
  }
  const char *bar = strchr(p, '|');
  *len = bar ? (size_t)(bar - p) : strlen(p);
  return p;
}

int kr__cfg_format(const kr__cfg_def_t *def, const kr__cfg_value_t *v, kr_buf_t *out) {
  char tmp[64];
  switch (def->type) {
  case KR_CFG_T_STRING:
  case KR_CFG_T_REGEX:
  case KR_CFG_T_ENUM:
    return kr_buf_append_str(out, v->s ? v->s : "");
  case KR_CFG_T_BOOL:
    return kr_buf_append_str(out, v->i ? "true" : "false");
  case KR_CFG_T_INT:
    return kr_buf_printf(out, "%lld", (long long)v->i);
  case KR_CFG_T_SIZE:
    kr_config_format_size((uint64_t)v->i, tmp, sizeof tmp);
    return kr_buf_append_str(out, tmp);
  case KR_CFG_T_DURATION:
    kr_config_format_duration(v->i, tmp, sizeof tmp);
    return kr_buf_append_str(out, tmp);
  case KR_CFG_T_FLOAT:
    /* the shortest text that reads back as the same double */
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(tmp, sizeof tmp, "%.*g", prec, v->f);
      if (strtod(tmp, NULL) == v->f) break;
    }
    return kr_buf_append_str(out, tmp);
  case KR_CFG_T_LIST:
  case KR_CFG_T_REGEX_LIST:
    for (size_t i = 0; i < v->n; i++) {
      int rc = kr_buf_append_str(out, i == 0 ? "" : def->type == KR_CFG_T_LIST ? ", " : "\n");
      if (!rc) rc = kr_buf_append_str(out, v->items[i]);
      if (rc) return rc;
    }
    return 0;
  }
  return KR_EINVAL;
}

kr_slice_t kr_config_enum_choice(kr_cfg_key_t key, int idx) {
  size_t n;
  const char *p;
  if ((unsigned)key >= KR_CFG__COUNT || kr__cfg_keys[key].type != KR_CFG_T_ENUM || idx < 0 ||
      !(p = choice_name(kr__cfg_keys[key].range, idx, &n)))
    return kr_slice(NULL, 0);
  return kr_slice(p, n);
}
