/*
 * Canonical URL form for dedupe (see kr_url_canon in include/kria/url.h).
 * A parsed URL is first normalised from its components: fragment dropped,
 * percent-encoding normalised (unreserved characters decoded, hex
 * upper-cased), then the optional flag steps (userinfo, www, query sort
 * and tidy). Then the rules of the options run over that string: PCRE2
 * regexes compiled once with JIT and matched under a match and depth
 * limit, in Heritrix's RegexRule style (a whole-string match is replaced
 * by a template of its groups), plus three non-regex rules of Heritrix
 * (lowercase, fixup-query-string, strip-extra-slashes). A rule that
 * changes the string sends the result through parse and normalisation
 * again until it stops changing (bounded), which keeps the function
 * idempotent.
 *
 * Sections: percent-encoding normalisation; the normalising serializer;
 * rules (compile, built-in sets, apply); kr_url_canon.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"
#include "kria/url.h"

/* Rounds of rules + reparse: up to CANON_FREE_ROUNDS whatever they do,
 * then more only while each round shortens the string, to at most
 * CANON_MAX_ROUNDS (strip rules shrink a URL, so two rounds are the norm;
 * past the cap idempotence is not guaranteed). */
#define CANON_FREE_ROUNDS 4
#define CANON_MAX_ROUNDS 64
/* Hard cap on intermediate strings rules may build. */
#define CANON_SCRATCH_MAX (256 * 1024)

static inline int is_hex(int c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}
static inline int hex_val(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }
static inline int to_lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
static inline int to_upper(int c) { return (c >= 'a' && c <= 'z') ? c - 32 : c; }

static int is_unreserved(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

/* ---- percent-encoding normalisation ---- */

/* Append s with %XX of unreserved characters decoded and other %xx
 * upper-cased. */
static int pct_normalize(kr_buf_t *out, const char *s, size_t n) {
  int rc = kr_buf_reserve(out, n);
  if (rc) return rc;
  char *o = out->data + out->len;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n && is_hex((unsigned char)s[i + 1]) && is_hex((unsigned char)s[i + 2])) {
      int v = hex_val((unsigned char)s[i + 1]) * 16 + hex_val((unsigned char)s[i + 2]);
      /* A decoded hex digit must not complete a stray '%' or "%h" before
       * it into a new escape (which the next pass would decode). */
      size_t k = (size_t)(o - out->data);
      int after_stray = is_hex(v) && ((k >= 1 && o[-1] == '%') ||
                                      (k >= 2 && o[-2] == '%' && is_hex((unsigned char)o[-1])));
      if (is_unreserved(v) && !after_stray) {
        *o++ = (char)v;
      } else {
        *o++ = '%';
        *o++ = (char)to_upper((unsigned char)s[i + 1]);
        *o++ = (char)to_upper((unsigned char)s[i + 2]);
      }
      i += 2;
    } else {
      *o++ = s[i];
    }
  }
  out->len = (size_t)(o - out->data);
  out->data[out->len] = '\0';
  return 0;
}

/* ---- the normalising serializer ---- */

static int cmp_slice(const void *a, const void *b) {
  const kr_slice_t *x = a, *y = b;
  size_t m = x->n < y->n ? x->n : y->n;
  int c = m ? memcmp(x->p, y->p, m) : 0;
  if (c) return c;
  return x->n < y->n ? -1 : x->n > y->n;
}

/* Query (already normalised, at out->data + start) sorted and/or tidied
 * in place. */
static int rework_query(kr_buf_t *out, size_t qmark, unsigned flags) {
  size_t start = qmark + 1;
  char *q = out->data + start;
  size_t qn = out->len - start;
  size_t count = 1;
  for (size_t i = 0; i < qn; i++) count += q[i] == '&';
  kr_slice_t small[32];
  kr_slice_t *parts = count <= 32 ? small : kr_xmalloc(count * sizeof *parts);
  size_t k = 0, from = 0;
  for (size_t i = 0; i <= qn; i++) {
    if (i == qn || q[i] == '&') {
      if (!(flags & KR_URL_CANON_TIDY_QUERY) || i > from) parts[k++] = kr_slice(q + from, i - from);
      from = i + 1;
    }
  }
  if (flags & KR_URL_CANON_SORT_QUERY) qsort(parts, k, sizeof *parts, cmp_slice);
  char *copy = kr_xmalloc(qn + 1);
  size_t o = 0;
  for (size_t j = 0; j < k; j++) {
    if (j) copy[o++] = '&';
    memcpy(copy + o, parts[j].p, parts[j].n);
    o += parts[j].n;
  }
  if (parts != small) free(parts);
  if (o == 0 && (flags & KR_URL_CANON_TIDY_QUERY)) {
    out->len = qmark; /* no '?' for an empty query */
  } else {
    memcpy(q, copy, o);
    out->len = start + o;
  }
  out->data[out->len] = '\0';
  free(copy);
  return 0;
}

static size_t www_prefix(kr_slice_t host) {
  if (host.n < 4 || memcmp(host.p, "www", 3) != 0) return 0;
  size_t i = 3;
  while (i < host.n && host.p[i] >= '0' && host.p[i] <= '9') i++;
  if (i >= host.n || host.p[i] != '.') return 0;
  i++;
  /* keep at least "x.y": never turn www.com into com */
  if (!memchr(host.p + i, '.', host.n - i)) return 0;
  return i;
}

static int normalize(const kr_url_t *u, unsigned flags, kr_buf_t *out) {
  kr_slice_t s = kr_url_scheme(u);
  int rc = kr_buf_append(out, s.p, s.n);
  if (!rc) rc = kr_buf_append(out, ":", 1);
  kr_url_host_type_t ht = kr_url_host_type(u);
  kr_slice_t path = kr_url_pathname(u);
  if (!rc && ht != KR_URL_HOST_NONE) {
    rc = kr_buf_append(out, "//", 2);
    kr_slice_t user = kr_url_username(u), pass = kr_url_password(u);
    if (!rc && !(flags & KR_URL_CANON_STRIP_USERINFO) && (user.n || pass.n)) {
      rc = pct_normalize(out, user.p, user.n);
      if (!rc && pass.n) rc = kr_buf_append(out, ":", 1);
      if (!rc) rc = pct_normalize(out, pass.p, pass.n);
      if (!rc) rc = kr_buf_append(out, "@", 1);
    }
    kr_slice_t host = kr_url_hostname(u);
    const char *after = host.p + host.n; /* ":port", then "/." if any */
    if (!rc && ht == KR_URL_HOST_OPAQUE) {
      rc = pct_normalize(out, host.p, host.n);
    } else if (!rc) {
      if (ht == KR_URL_HOST_DOMAIN && (flags & KR_URL_CANON_STRIP_WWW)) {
        /* every leading www label ("www.www2.x.org" -> "x.org"), or the
         * canonical form would lose one more on the next canon */
        for (size_t cut; (cut = www_prefix(host)) != 0;) host.p += cut, host.n -= cut;
      }
      rc = kr_buf_append(out, host.p, host.n);
    }
    if (!rc) rc = kr_buf_append(out, after, (size_t)(path.p - after));
  } else if (!rc) {
    /* "/." prefix or nothing between the scheme and the path */
    const char *after = s.p + s.n + 1;
    rc = kr_buf_append(out, after, (size_t)(path.p - after));
  }
  if (!rc && s.n == 4 && !memcmp(s.p, "file", 4) && path.n >= 5 && path.p[1] == '%' &&
      is_hex((unsigned char)path.p[2]) && is_hex((unsigned char)path.p[3]) && path.p[4] == '|' &&
      (path.n == 5 || path.p[5] == '/')) {
    /* "/%43|" decoded would be the drive letter "C|", which a reparse
     * turns into "C:": keep the escape */
    char keep[5] = {'/', '%', (char)to_upper((unsigned char)path.p[2]),
                    (char)to_upper((unsigned char)path.p[3]), '|'};
    rc = kr_buf_append(out, keep, 5);
    path.p += 5, path.n -= 5;
  }
  if (!rc) rc = pct_normalize(out, path.p, path.n);
  kr_slice_t q = kr_url_query(u);
  if (!rc && q.p) {
    size_t qmark = out->len;
    rc = kr_buf_append(out, "?", 1);
    if (!rc) rc = pct_normalize(out, q.p, q.n);
    if (!rc && (flags & (KR_URL_CANON_SORT_QUERY | KR_URL_CANON_TIDY_QUERY)))
      rc = rework_query(out, qmark, flags);
  }
  return rc;
}

/* ---- rules ---- */

enum rule_kind {
  RULE_REGEX,
  RULE_LOWERCASE,          /* Heritrix LowercaseRule (ASCII) */
  RULE_FIXUP_QUERY,        /* Heritrix FixupQueryString */
};

struct rule {
  enum rule_kind kind;
  pcre2_code *code;
  char *replacement;       /* template; NULL = "$1$2" */
  const char *need;        /* a literal every match holds (lowercase,
                              matched case-insensitively), or NULL */
};

struct kr_url_canon_opts {
  unsigned flags;
  struct rule *rules;
  size_t nrules, cap;
  pcre2_match_data *md;    /* sized for the rule with most groups */
  uint32_t md_pairs;
  pcre2_match_context *mctx;
  kr_buf_t a, b;           /* scratch for rule rounds */
  kr_buf_t cur, next;      /* scratch for the canonical string */
  kr_buf_t lc;             /* lowercase copy of the string the rules see */
  int lc_valid;            /* lc matches that string */
};

kr_url_canon_opts_t *kr_url_canon_opts_new(unsigned flags) {
  kr_url_canon_opts_t *o = kr_xcalloc(1, sizeof *o);
  o->flags = flags;
  o->mctx = pcre2_match_context_create(NULL);
  if (!o->mctx) abort();
  pcre2_set_match_limit(o->mctx, KR_URL_RULE_MATCH_LIMIT);
  pcre2_set_depth_limit(o->mctx, KR_URL_RULE_DEPTH_LIMIT);
  kr_buf_init(&o->a, CANON_SCRATCH_MAX);
  kr_buf_init(&o->b, CANON_SCRATCH_MAX);
  kr_buf_init(&o->cur, CANON_SCRATCH_MAX);
  kr_buf_init(&o->next, CANON_SCRATCH_MAX);
  kr_buf_init(&o->lc, CANON_SCRATCH_MAX);
  return o;
}

void kr_url_canon_opts_free(kr_url_canon_opts_t *o) {
  if (!o) return;
  for (size_t i = 0; i < o->nrules; i++) {
    pcre2_code_free(o->rules[i].code);
    free(o->rules[i].replacement);
  }
  free(o->rules);
  pcre2_match_data_free(o->md);
  pcre2_match_context_free(o->mctx);
  kr_buf_free(&o->a);
  kr_buf_free(&o->b);
  kr_buf_free(&o->cur);
  kr_buf_free(&o->next);
  kr_buf_free(&o->lc);
  free(o);
}

unsigned kr_url_canon_opts_flags(const kr_url_canon_opts_t *o) {
  return o ? o->flags : KR_URL_CANON_DEFAULT;
}

static struct rule *rule_push(kr_url_canon_opts_t *o) {
  if (o->nrules == o->cap) {
    o->cap = o->cap ? 2 * o->cap : 8;
    o->rules = kr_xrealloc(o->rules, o->cap * sizeof *o->rules);
  }
  struct rule *r = &o->rules[o->nrules++];
  memset(r, 0, sizeof *r);
  return r;
}

/* Check a replacement template: "$N", "${N}", "$$"; N <= groups. */
static int check_template(const char *t, uint32_t groups) {
  for (size_t i = 0; t[i]; i++) {
    if (t[i] != '$') continue;
    i++;
    if (t[i] == '$') continue;
    int brace = t[i] == '{';
    if (brace) i++;
    if (t[i] < '0' || t[i] > '9') return -1;
    unsigned long g = 0;
    while (t[i] >= '0' && t[i] <= '9') {
      g = g * 10 + (unsigned)(t[i] - '0');
      if (g > groups) return -1;
      i++;
    }
    if (brace && t[i] != '}') return -1;
    if (!brace) i--;
  }
  return 0;
}

static int add_regex(kr_url_canon_opts_t *o, const char *pattern, uint32_t extra_opts,
                     const char *replacement, const char *need, char *errbuf, size_t errlen) {
  int errcode;
  PCRE2_SIZE erroff;
  pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_ANCHORED | PCRE2_ENDANCHORED | extra_opts, &errcode,
                                   &erroff, NULL);
  if (!code) {
    if (errbuf && errlen) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(errcode, msg, sizeof msg);
      snprintf(errbuf, errlen, "rule /%s/: %s at offset %zu", pattern, (char *)msg, (size_t)erroff);
    }
    return KR_ECONFIG;
  }
  uint32_t groups = 0;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &groups);
  if (replacement && check_template(replacement, groups)) {
    if (errbuf && errlen)
      snprintf(errbuf, errlen, "rule /%s/: bad replacement \"%s\" (%u groups)", pattern,
               replacement, groups);
    pcre2_code_free(code);
    return KR_ECONFIG;
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
  if (groups + 1 > o->md_pairs) {
    pcre2_match_data_free(o->md);
    o->md_pairs = groups + 1 < 3 ? 3 : groups + 1;
    o->md = pcre2_match_data_create(o->md_pairs, NULL);
    if (!o->md) abort();
  }
  struct rule *r = rule_push(o);
  r->kind = RULE_REGEX;
  r->code = code;
  r->replacement = replacement ? kr_xstrdup(replacement) : NULL;
  r->need = need;
  return 0;
}

int kr_url_canon_opts_add_rule(kr_url_canon_opts_t *o, const char *pattern,
                               const char *replacement, char *errbuf, size_t errlen) {
  if (!o || !pattern) return KR_EINVAL;
  return add_regex(o, pattern, 0, replacement, NULL, errbuf, errlen);
}

/* Heritrix's canonicalization rules (modules/.../canonicalize), the same
 * regular expressions. */
#define RX_USERINFO "^((?:(?:https?)|(?:ftps?))://)(?:[^/]+@)(.*)$"
#define RX_WWWN "(?i)^(https?://)(?:www[0-9]*\\.)([^/]*/.+)$"
#define RX_WWW "(?i)^(https?://)(?:www\\.)([^/]*/.+)$"
#define RX_SESSION_BASE "(?i)^(.+)(?:(?:(?:jsessionid)|(?:phpsessid))=[0-9a-zA-Z]{32})(?:&(.*))?$"
#define RX_SESSION_SID "(?i)^(.+)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$"
#define RX_SESSION_ASP "(?i)^(.+)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$"
#define RX_SESSION_CFID "^(.+)(?i)(?:cfid=[^&]+&cftoken=[^&]+(?:jsession=[^&]+)?)(?:&(.*))?$"
#define RX_EXTRA_SLASHES "(^https?://.*?)//+(.*)"

static int add_builtin(kr_url_canon_opts_t *o, const char *name) {
  int rc = KR_EINVAL;
  if (!strcmp(name, "LowercaseRule")) {
    rule_push(o)->kind = RULE_LOWERCASE;
    rc = 0;
  } else if (!strcmp(name, "FixupQueryString")) {
    rule_push(o)->kind = RULE_FIXUP_QUERY;
    rc = 0;
  } else if (!strcmp(name, "StripUserinfoRule")) {
    rc = add_regex(o, RX_USERINFO, PCRE2_CASELESS, NULL, "@", NULL, 0);
  } else if (!strcmp(name, "StripWWWNRule")) {
    rc = add_regex(o, RX_WWWN, 0, NULL, "www", NULL, 0);
  } else if (!strcmp(name, "StripWWWRule")) {
    rc = add_regex(o, RX_WWW, 0, NULL, "www.", NULL, 0);
  } else if (!strcmp(name, "StripSessionIDs")) {
    rc = add_regex(o, RX_SESSION_BASE, 0, NULL, "sess", NULL, 0);
    if (!rc) rc = add_regex(o, RX_SESSION_SID, 0, NULL, "sid=", NULL, 0);
    if (!rc) rc = add_regex(o, RX_SESSION_ASP, 0, NULL, "aspsessionid", NULL, 0);
  } else if (!strcmp(name, "StripSessionCFIDs")) {
    rc = add_regex(o, RX_SESSION_CFID, 0, NULL, "cftoken=", NULL, 0);
  } else if (!strcmp(name, "StripExtraSlashes")) {
    rc = add_regex(o, RX_EXTRA_SLASHES, 0, "$1/$2", "//", NULL, 0);
  }
  return rc;
}

int kr_url_canon_opts_add_ruleset(kr_url_canon_opts_t *o, const char *name) {
  if (!o || !name) return KR_EINVAL;
  if (!strcmp(name, "heritrix-default")) {
    static const char *const chain[] = {"LowercaseRule",   "StripUserinfoRule",
                                        "StripWWWNRule",   "StripSessionIDs",
                                        "StripSessionCFIDs", "FixupQueryString"};
    for (size_t i = 0; i < sizeof chain / sizeof chain[0]; i++) {
      int rc = add_builtin(o, chain[i]);
      if (rc) return rc;
    }
    return 0;
  }
  if (!strcmp(name, "session-ids")) {
    int rc = add_builtin(o, "StripSessionIDs");
    return rc ? rc : add_builtin(o, "StripSessionCFIDs");
  }
  return add_builtin(o, name);
}

/* Expand the template t (NULL = "$1$2") for the match in md over s. */
static int expand(kr_buf_t *out, const char *t, pcre2_match_data *md, int groups_set,
                  const char *s) {
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
  uint32_t pairs = pcre2_get_ovector_count(md);
  const char *tmpl = t ? t : "$1$2";
  for (size_t i = 0; tmpl[i]; i++) {
    int rc;
    if (tmpl[i] != '$') {
      rc = kr_buf_append(out, tmpl + i, 1);
    } else if (tmpl[i + 1] == '$') {
      rc = kr_buf_append(out, "$", 1);
      i++;
    } else {
      i++;
      int brace = tmpl[i] == '{';
      if (brace) i++;
      unsigned g = 0;
      while (tmpl[i] >= '0' && tmpl[i] <= '9') g = g * 10 + (unsigned)(tmpl[i++] - '0');
      if (!brace) i--;
      rc = 0;
      if (g < pairs && (int)g < groups_set && ov[2 * g] != PCRE2_UNSET)
        rc = kr_buf_append(out, s + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
    }
    if (rc) return rc;
  }
  return 0;
}

/* Heritrix FixupQueryString, applied until it changes nothing (Heritrix
 * applies it once, which is not idempotent: "x??" keeps a '?'): strip a
 * trailing '?', the '&'s right after the last '?' (and that '?' if
 * nothing follows), and trailing '&'s. */
static int fixup_query(kr_buf_t *out, const char *s, size_t n) {
  for (;;) {
    const char *q = n ? memrchr(s, '?', n) : NULL;
    if (!q || q == s) break;
    size_t idx = (size_t)(q - s), m = n;
    if (idx == n - 1) {
      m = n - 1;
    } else if (s[idx + 1] == '&') {
      size_t k = idx + 1;
      while (k < n && s[k] == '&') k++;
      if (k == n) {
        m = idx; /* "?&&" at the end goes whole */
      } else {
        int rc = kr_buf_append(out, s, idx + 1);
        if (!rc) rc = kr_buf_append(out, s + k, n - k);
        if (rc) return rc;
        /* the rest is done on the copy */
        size_t at = out->len - (idx + 1 + n - k);
        char *c = out->data + at;
        size_t cn = out->len - at;
        while (cn && c[cn - 1] == '&') cn--;
        out->len = at + cn;
        out->data[out->len] = '\0';
        return 0;
      }
    } else if (s[n - 1] == '&') {
      while (m > idx + 1 && s[m - 1] == '&') m--;
    }
    if (m == n) break;
    n = m;
  }
  return kr_buf_append(out, s, n);
}

/* 1 if s holds need (lowercase) case-insensitively: a cheap filter that
 * spares the built-in rules their regex on most URLs. The lowercase copy
 * of s is made once and kept while the rules leave s alone. */
static int ci_contains(kr_url_canon_opts_t *o, const char *s, size_t n, const char *need) {
  if (!o->lc_valid) {
    kr_buf_reset(&o->lc);
    if (kr_buf_append(&o->lc, s, n)) return 1; /* too long to filter: run the regex */
    unsigned char *l = (unsigned char *)o->lc.data;
    for (size_t i = 0; i < n; i++) l[i] = (unsigned char)(l[i] + ((unsigned char)(l[i] - 'A') < 26u) * 32);
    o->lc_valid = 1;
  }
  const char *h = o->lc.data ? o->lc.data : "", *end = h + n;
  size_t k = strlen(need);
  while ((size_t)(end - h) >= k && (h = memchr(h, need[0], (size_t)(end - h) - k + 1)) != NULL) {
    if (!memcmp(h, need, k)) return 1;
    h++;
  }
  return 0;
}

/* One rule over (s, n): 1 and the result in out, 0 when the rule leaves
 * s as it is (nothing written), or an error. */
static int apply_rule(kr_url_canon_opts_t *o, const struct rule *r, const char *s, size_t n,
                      kr_buf_t *out) {
  int rc;
  switch (r->kind) {
  case RULE_LOWERCASE: {
    size_t i = 0;
    while (i < n && !(s[i] >= 'A' && s[i] <= 'Z')) i++;
    if (i == n) return 0;
    if ((rc = kr_buf_append(out, s, n))) return rc;
    for (; i < n; i++) out->data[i] = (char)to_lower((unsigned char)out->data[i]);
    return 1;
  }
  case RULE_FIXUP_QUERY:
    if ((rc = fixup_query(out, s, n))) return rc;
    return !(out->len == n && !memcmp(out->data, s, n));
  case RULE_REGEX: {
    if (r->need && !ci_contains(o, s, n, r->need)) return 0;
    int m = pcre2_match(r->code, (PCRE2_SPTR)s, n, 0, 0, o->md, o->mctx);
    if (m <= 0) return 0; /* no match, or over a limit */
    if ((rc = expand(out, r->replacement, o->md, m, s))) return rc;
    return !(out->len == n && !memcmp(out->data, s, n));
  }
  }
  return KR_EINVAL;
}

/* All rules in order over s into out (out is the caller's buffer, never
 * o->a or o->b). A regex rule that shortens the string is applied again
 * until it stops matching (a strip rule removes one occurrence per match:
 * "?sid=..&sid=.." needs two), one that does not is applied once. */
static int apply_all(kr_url_canon_opts_t *o, const char *s, size_t n, kr_buf_t *out) {
  kr_buf_t *dst = &o->a;
  const char *cs = s;
  size_t cn = n;
  o->lc_valid = 0;
  for (size_t i = 0; i < o->nrules; i++) {
    const struct rule *r = &o->rules[i];
    size_t passes = r->kind == RULE_REGEX ? cn + 1 : 1;
    for (size_t k = 0; k < passes; k++) {
      kr_buf_reset(dst);
      int rc = apply_rule(o, r, cs, cn, dst);
      if (rc < 0) return rc;
      if (rc == 0) break;
      int shorter = dst->len < cn;
      cs = dst->data ? dst->data : "";
      cn = dst->len;
      dst = dst == &o->a ? &o->b : &o->a;
      o->lc_valid = 0;
      if (!shorter) break;
    }
  }
  return kr_buf_append(out, cs, cn);
}

int kr_url_canon_apply_rules(kr_url_canon_opts_t *o, const char *s, size_t n, kr_buf_t *out) {
  if (!o) return kr_buf_append(out, s, n);
  return apply_all(o, s, n, out);
}

/* ---- kr_url_canon ---- */

/* The rounds end in a fixed point: the rules leave the string alone, or
 * parse + normalisation undoes what they did, or they make a non-URL (that
 * round is ignored). Each of these exits depends only on the normalised
 * string the rounds started from, so canonicalising the result again ends
 * the same way. When rounds stop shrinking the string, or the cap is hit,
 * without such a fixed point (rules that keep restructuring a URL, e.g.
 * stripping "www." off "http://www./x@y/" makes "x@y" userinfo), the
 * result is the normalised form without rules: also a function of that
 * starting string, so idempotence holds there too. */
int kr_url_canon(const kr_url_t *url, kr_url_canon_opts_t *o, kr_buf_t *out) {
  unsigned flags = o ? o->flags : KR_URL_CANON_DEFAULT;
  if (!o || o->nrules == 0) return normalize(url, flags, out);
  kr_buf_t *cur = &o->cur;
  kr_buf_reset(cur);
  int rc = normalize(url, flags, cur);
  if (rc) return rc;
  kr_buf_t *next = &o->next;
  int fixed = 0;
  for (int round = 0; round < CANON_MAX_ROUNDS && !fixed; round++) {
    kr_buf_reset(next);
    if ((rc = apply_all(o, cur->data, cur->len, next))) return rc;
    if (next->len == cur->len && !memcmp(next->data, cur->data, cur->len)) {
      fixed = 1;
      break;
    }
    kr_url_t *again = NULL;
    if (kr_url_parse_ex(next->data, next->len, NULL, CANON_SCRATCH_MAX / 3, &again) != 0) {
      fixed = 1; /* a rule made a non-URL: ignore that round */
      break;
    }
    kr_buf_reset(next);
    rc = normalize(again, flags, next);
    kr_url_free(again);
    if (rc) return rc;
    int same = next->len == cur->len && !memcmp(next->data, cur->data, cur->len);
    int shorter = next->len < cur->len;
    kr_buf_t tmp = *cur;
    *cur = *next;
    *next = tmp;
    if (same) fixed = 1;
    else if (round + 1 >= CANON_FREE_ROUNDS && !shorter) break;
  }
  if (!fixed) return normalize(url, flags, out);
  return kr_buf_append(out, cur->data, cur->len);
}

int kr_url_canon_str(const char *input, size_t len, const kr_url_t *base, kr_url_canon_opts_t *o,
                     kr_buf_t *out) {
  kr_url_t *u = NULL;
  int rc = kr_url_parse(input, len, base, &u);
  if (rc) return rc;
  rc = kr_url_canon(u, o, out);
  kr_url_free(u);
  return rc;
}
