/*
 * robots.txt parser and matcher (RFC 9309), see include/kria/robots.h.
 *
 * The parser walks the input once, line by line, and keeps only what one
 * crawler needs: the rules of the groups that name its product token, or,
 * until such a group turns up, of the `*` groups (dropped the moment a
 * group for us appears, so max_rules only ever bites on rules that could
 * apply). Patterns are stored in canonical percent-encoding in one byte
 * array; rules are sorted once by (length desc, Allow first) so the first
 * rule that matches a path decides. Wildcard matching is greedy leftmost
 * per `*`-separated segment, with KMP for long segments: linear time, no
 * backtracking.
 *
 * Sections: character classes and canonical encoding; storage helpers;
 * line classification; the parser (groups, rules, Crawl-delay, Sitemap);
 * finishing a parse; the matcher; the fetch-status policy; accessors and
 * the decision formatter; URL path extraction.
 */
#include "kria/robots.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"

/* ---- character classes and canonical encoding ---------------------- */

static const char hexdig[] = "0123456789ABCDEF";

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int is_alpha(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* RFC 3986 unreserved: the only characters whose %XX form is equivalent
 * to the character itself. */
static int is_unreserved(unsigned char c) {
  return is_alpha(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

/* Bytes never valid literally in a URL path or query: always compared in
 * their %XX form, so "Disallow: /a b" and a path "/a%20b" agree. */
static int must_encode(unsigned char c) {
  if (c <= 0x20 || c >= 0x7f) return 1;
  switch (c) {
  case '"': case '<': case '>': case '\\': case '^': case '`':
  case '{': case '|': case '}':
    return 1;
  default:
    return 0;
  }
}

static int is_ws(unsigned char c) { return c == ' ' || c == '\t'; }

static int token_char(unsigned char c) {
  return is_alpha(c) || c == '-' || c == '_';
}

static char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

/* Characters RFC 3986 lets a query hold literally (query = *( pchar / "/"
 * / "?" )) that are neither unreserved nor sub-delims: in a query they
 * are data, never delimiters, so their %XX form means the same. RFC 9309
 * §2.2.2 (Figure 4) matches a rule's "?baz=https://foo.bar" against a
 * URI's "?baz=https%3A%2F%2Ffoo.bar"; both compare as the former. */
static int query_data(unsigned char c) {
  return c == ':' || c == '/' || c == '?' || c == '@';
}

/* The canonical encoding shared by patterns and paths. In a pattern a '*'
 * is the wildcard and a final '$' the end anchor, so they stay; any other
 * '$' is literal and becomes %24. In a path both are plain characters and
 * become %2A / %24, the form a rule gives them when it means them
 * literally (RFC 9309 §2.2.3, Figure 6): after canonicalization a path
 * holds neither, so the matcher never confuses data with syntax. */
static size_t canon(const char *in, size_t len, char *out, int is_path) {
  size_t o = 0;
  int in_query = 0; /* after the first literal '?' */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)in[i];
    if (c == '%') {
      int hi = i + 2 < len ? hexval((unsigned char)in[i + 1]) : -1;
      int lo = hi >= 0 ? hexval((unsigned char)in[i + 2]) : -1;
      if (lo >= 0) {
        unsigned char v = (unsigned char)(hi * 16 + lo);
        i += 2;
        if (is_unreserved(v) || (in_query && query_data(v))) {
          out[o++] = (char)v;
          continue;
        }
        c = v;
      }
      /* c is the escaped octet, or a stray '%' that becomes %25 */
    } else if (c == '*' || c == '$') {
      int syntax = !is_path && (c == '*' || i + 1 == len);
      if (syntax) {
        out[o++] = (char)c;
        continue;
      }
    } else if (!must_encode(c)) {
      if (c == '?') in_query = 1;
      out[o++] = (char)c;
      continue;
    }
    out[o++] = '%';
    out[o++] = hexdig[c >> 4];
    out[o++] = hexdig[c & 15];
  }
  return o;
}

size_t kr_robots_canon(const char *in, size_t len, char *out) {
  return canon(in, len, out, 0);
}

size_t kr_robots_canon_path(const char *in, size_t len, char *out) {
  return canon(in, len, out, 1);
}

static kr_slice_t trim(const char *p, size_t n) {
  while (n && is_ws((unsigned char)p[0])) p++, n--;
  while (n && is_ws((unsigned char)p[n - 1])) n--;
  return kr_slice(p, n);
}

static int slice_case_is(kr_slice_t s, const char *lit) {
  size_t n = strlen(lit);
  if (s.n != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower(s.p[i]) != lit[i]) return 0;
  return 1;
}

int kr_robots_is_valid_token(kr_slice_t s) {
  if (s.n == 0) return 0;
  for (size_t i = 0; i < s.n; i++)
    if (!token_char((unsigned char)s.p[i])) return 0;
  return 1;
}

/* ---- storage -------------------------------------------------------- */

struct rule {
  uint32_t off;     /* pattern offset in robots->pat (NUL-terminated) */
  uint32_t len;     /* canonical pattern length, '*' and '$' included */
  uint32_t line;    /* 1-based line number in the file */
  uint8_t allow;    /* 1 Allow, 0 Disallow */
  uint8_t specific; /* from a group naming our token (not only `*`) */
};

struct kr_robots {
  kr_robots_policy_t policy;
  int status;
  struct rule *rules;  /* sorted: longest first, Allow before Disallow */
  size_t nrules, rules_cap;
  char *pat;           /* canonical patterns, each followed by a NUL */
  size_t pat_len, pat_cap;
  char *smap;          /* sitemap values, each followed by a NUL */
  size_t smap_len, smap_cap;
  uint32_t *smap_off;  /* offsets into smap */
  size_t nsmap, smap_off_cap;
  int64_t crawl_delay_ms; /* -1: none */
  size_t max_seg;      /* longest '*'-free run of any pattern */
  kr_robots_stats_t stats;
};

/* Make room for need elements of size elem in *p (capacity *cap). Sizes are
 * bounded by the parse limits, so doubling cannot overflow in practice;
 * kr_xrealloc aborts if memory runs out. */
static void grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return;
  size_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  *p = kr_xrealloc(*p, c * elem);
  *cap = c;
}

static kr_robots_t *robots_new(kr_robots_policy_t policy, int status) {
  kr_robots_t *r = kr_xcalloc(1, sizeof *r);
  r->policy = policy;
  r->status = status;
  r->crawl_delay_ms = -1;
  return r;
}

void kr_robots_free(kr_robots_t *r) {
  if (!r) return;
  free(r->rules);
  free(r->pat);
  free(r->smap);
  free(r->smap_off);
  free(r);
}

/* ---- line classification -------------------------------------------- */

/* Keys, ASCII case-insensitive. The misspellings are those Google accepts;
 * honouring them can only make kria more polite (or find more sitemaps). */
static const struct {
  const char *name;
  kr_robots_line_kind_t kind;
  int typo;
} keys[] = {
    {"user-agent", KR_ROBOTS_LINE_USER_AGENT, 0},
    {"useragent", KR_ROBOTS_LINE_USER_AGENT, 1},
    {"user agent", KR_ROBOTS_LINE_USER_AGENT, 1},
    {"allow", KR_ROBOTS_LINE_ALLOW, 0},
    {"disallow", KR_ROBOTS_LINE_DISALLOW, 0},
    {"dissallow", KR_ROBOTS_LINE_DISALLOW, 1},
    {"dissalow", KR_ROBOTS_LINE_DISALLOW, 1},
    {"disalow", KR_ROBOTS_LINE_DISALLOW, 1},
    {"diasllow", KR_ROBOTS_LINE_DISALLOW, 1},
    {"disallaw", KR_ROBOTS_LINE_DISALLOW, 1},
    {"sitemap", KR_ROBOTS_LINE_SITEMAP, 0},
    {"site-map", KR_ROBOTS_LINE_SITEMAP, 1},
    {"crawl-delay", KR_ROBOTS_LINE_CRAWL_DELAY, 0},
    {"crawldelay", KR_ROBOTS_LINE_CRAWL_DELAY, 1},
};

static kr_robots_line_kind_t classify_key(kr_slice_t key, unsigned *flags) {
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (slice_case_is(key, keys[i].name)) {
      if (keys[i].typo) *flags |= KR_ROBOTS_LINE_TYPO;
      return keys[i].kind;
    }
  return KR_ROBOTS_LINE_UNKNOWN;
}

/* Split one line (no terminator) into kind, key and value. A '#' starts a
 * comment anywhere. "key: value" is the form; "key value" (exactly two
 * words, known key) is tolerated. */
static kr_robots_line_kind_t split_line(const char *s, size_t n,
                                        kr_slice_t *value, unsigned *flags) {
  const char *hash = n ? memchr(s, '#', n) : NULL;
  kr_slice_t t = trim(s, hash ? (size_t)(hash - s) : n);
  if (t.n == 0) return hash ? KR_ROBOTS_LINE_COMMENT : KR_ROBOTS_LINE_EMPTY;
  if (hash) *flags |= KR_ROBOTS_LINE_HAS_COMMENT;

  kr_slice_t key;
  const char *colon = memchr(t.p, ':', t.n);
  if (colon) {
    key = trim(t.p, (size_t)(colon - t.p));
    *value = trim(colon + 1, t.n - (size_t)(colon - t.p) - 1);
    return classify_key(key, flags);
  }
  size_t k = 0;
  while (k < t.n && !is_ws((unsigned char)t.p[k])) k++;
  if (k == t.n) return KR_ROBOTS_LINE_INVALID;
  key = kr_slice(t.p, k);
  *value = trim(t.p + k, t.n - k);
  for (size_t i = 0; i < value->n; i++)
    if (is_ws((unsigned char)value->p[i])) return KR_ROBOTS_LINE_INVALID;
  unsigned f = KR_ROBOTS_LINE_MISSING_COLON;
  kr_robots_line_kind_t kind = classify_key(key, &f);
  if (kind == KR_ROBOTS_LINE_UNKNOWN) return KR_ROBOTS_LINE_INVALID;
  *flags |= f;
  return kind;
}

/* ---- the parser ------------------------------------------------------ */

struct parser {
  kr_robots_t *r;
  size_t max_rules, max_sitemaps;
  kr_slice_t token;     /* our product token */
  int token_valid;
  int in_agents;        /* the last group line was a user-agent line */
  int group_open;       /* a user-agent line has been seen */
  int grp_specific;     /* the current group names our token */
  int grp_global;       /* the current group names `*` */
  int any_specific;     /* some group named our token */
  int64_t delay_specific, delay_global;
  kr_robots_line_fn *on_line;
  void *ctx;
};

/* A group naming our token turned up: `*` rules can never apply now. */
static void drop_global_rules(struct parser *p) {
  kr_robots_t *r = p->r;
  size_t k = 0;
  for (size_t i = 0; i < r->nrules; i++)
    if (r->rules[i].specific) r->rules[k++] = r->rules[i];
  r->nrules = k;
  /* every rule dropped for max_rules so far was a `*` one */
  r->stats.rules_dropped = 0;
}

static void on_user_agent(struct parser *p, kr_slice_t v) {
  if (!p->in_agents) { /* a user-agent line after rules starts a group */
    p->in_agents = 1;
    p->group_open = 1;
    p->grp_specific = p->grp_global = 0;
    p->r->stats.groups++;
  }
  if (v.n && v.p[0] == '*' && (v.n == 1 || is_ws((unsigned char)v.p[1]))) {
    p->grp_global = 1;
    return;
  }
  /* The product token is the leading run of token characters; "Foo/1.0"
   * or "Foo Bar" name Foo. */
  size_t k = 0;
  while (k < v.n && token_char((unsigned char)v.p[k])) k++;
  if (p->token_valid && kr_slice_case_eq(kr_slice(v.p, k), p->token)) {
    p->grp_specific = 1;
    if (!p->any_specific) {
      p->any_specific = 1;
      drop_global_rules(p);
    }
  }
}

static void add_rule(struct parser *p, kr_slice_t v, unsigned line, int allow) {
  kr_robots_t *r = p->r;
  if (!p->grp_specific && !(p->grp_global && !p->any_specific)) return;
  if (v.n == 0) return; /* an empty pattern matches nothing */
  size_t room = 3 * v.n + 1;
  if (r->nrules >= p->max_rules || r->pat_len + room > UINT32_MAX) {
    r->stats.rules_dropped++;
    return;
  }
  grow((void **)&r->pat, &r->pat_cap, r->pat_len + room, 1);
  size_t n = kr_robots_canon(v.p, v.n, r->pat + r->pat_len);
  grow((void **)&r->rules, &r->rules_cap, r->nrules + 1, sizeof *r->rules);
  r->rules[r->nrules++] = (struct rule){
      .off = (uint32_t)r->pat_len,
      .len = (uint32_t)n,
      .line = line,
      .allow = (uint8_t)allow,
      .specific = (uint8_t)p->grp_specific,
  };
  r->pat[r->pat_len + n] = '\0';
  r->pat_len += n + 1;
}

/* "10", "0.5", ".25": decimal seconds to ms (first three decimals, the
 * rest and any trailing text ignored); -1 unless it starts with a number. */
static int64_t parse_delay(kr_slice_t v) {
  size_t i = 0;
  int64_t ms = 0;
  int digits = 0;
  for (; i < v.n && v.p[i] >= '0' && v.p[i] <= '9'; i++, digits++)
    if (ms <= KR_ROBOTS_MAX_CRAWL_DELAY_MS)
      ms = ms * 10 + (v.p[i] - '0') * 1000;
  if (i < v.n && v.p[i] == '.') {
    int64_t scale = 100;
    for (i++; i < v.n && v.p[i] >= '0' && v.p[i] <= '9'; i++, digits++) {
      ms += (v.p[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (!digits) return -1;
  return ms > KR_ROBOTS_MAX_CRAWL_DELAY_MS ? KR_ROBOTS_MAX_CRAWL_DELAY_MS : ms;
}

static void add_sitemap(struct parser *p, kr_slice_t v) {
  kr_robots_t *r = p->r;
  if (v.n == 0) return;
  if (r->nsmap >= p->max_sitemaps || r->smap_len + v.n + 1 > UINT32_MAX) {
    r->stats.sitemaps_dropped++;
    return;
  }
  grow((void **)&r->smap, &r->smap_cap, r->smap_len + v.n + 1, 1);
  grow((void **)&r->smap_off, &r->smap_off_cap, r->nsmap + 1,
       sizeof *r->smap_off);
  r->smap_off[r->nsmap++] = (uint32_t)r->smap_len;
  memcpy(r->smap + r->smap_len, v.p, v.n);
  r->smap[r->smap_len + v.n] = '\0';
  r->smap_len += v.n + 1;
}

static void parse_line(struct parser *p, const char *s, size_t n,
                       unsigned line, int too_long) {
  kr_robots_stats_t *st = &p->r->stats;
  unsigned flags = too_long ? KR_ROBOTS_LINE_TOO_LONG : 0;
  kr_slice_t v = {0};
  kr_robots_line_kind_t kind = split_line(s, n, &v, &flags);

  switch (kind) {
  case KR_ROBOTS_LINE_EMPTY:
  case KR_ROBOTS_LINE_COMMENT:
    break; /* blank lines do not end groups (RFC 9309 §2.2) */
  case KR_ROBOTS_LINE_INVALID:
    st->invalid++;
    break;
  case KR_ROBOTS_LINE_UNKNOWN:
    /* other records do not end a run of user-agent lines */
    st->unknown++;
    st->last_directive_line = line;
    break;
  case KR_ROBOTS_LINE_USER_AGENT:
    on_user_agent(p, v);
    goto directive;
  case KR_ROBOTS_LINE_ALLOW:
  case KR_ROBOTS_LINE_DISALLOW:
    p->in_agents = 0;
    if (p->group_open)
      add_rule(p, v, line, kind == KR_ROBOTS_LINE_ALLOW);
    goto directive;
  case KR_ROBOTS_LINE_CRAWL_DELAY: {
    /* A group member like a rule: it ends the user-agent run, so
     * "User-agent: *  Crawl-delay: 5  User-agent: kria ..." is two groups. */
    p->in_agents = 0;
    int64_t d = p->group_open ? parse_delay(v) : -1;
    if (d >= 0 && p->grp_specific)
      p->delay_specific = d > p->delay_specific ? d : p->delay_specific;
    else if (d >= 0 && p->grp_global)
      p->delay_global = d > p->delay_global ? d : p->delay_global;
    goto directive;
  }
  case KR_ROBOTS_LINE_SITEMAP:
    add_sitemap(p, v); /* anywhere; does not touch groups */
  directive:
    st->directives++;
    st->last_directive_line = line;
    break;
  }
  if (p->on_line) p->on_line(p->ctx, line, kind, flags);
}

/* ---- finishing a parse ---------------------------------------------- */

static int rule_order(const void *a, const void *b) {
  const struct rule *x = a, *y = b;
  if (x->len != y->len) return x->len > y->len ? -1 : 1;
  if (x->allow != y->allow) return x->allow ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

/* Copy the kept patterns into an exact-size array (dropped `*` rules left
 * holes), trim the other arrays, sort the rules for the matcher. */
static void finish(kr_robots_t *r) {
  size_t total = 0;
  for (size_t i = 0; i < r->nrules; i++) total += r->rules[i].len + 1;
  char *pat = total ? kr_xmalloc(total) : NULL;
  size_t o = 0;
  for (size_t i = 0; i < r->nrules; i++) {
    struct rule *ru = &r->rules[i];
    memcpy(pat + o, r->pat + ru->off, ru->len + 1);
    ru->off = (uint32_t)o;
    o += ru->len + 1;
    size_t run = 0;
    for (size_t k = 0; k < ru->len; k++) {
      run = pat[ru->off + k] == '*' ? 0 : run + 1;
      if (run > r->max_seg) r->max_seg = run;
    }
  }
  free(r->pat);
  r->pat = pat;
  r->pat_len = r->pat_cap = total;
  if (r->nrules) {
    r->rules = kr_xrealloc(r->rules, r->nrules * sizeof *r->rules);
    r->rules_cap = r->nrules;
    qsort(r->rules, r->nrules, sizeof *r->rules, rule_order);
  } else {
    free(r->rules);
    r->rules = NULL;
    r->rules_cap = 0;
  }
  if (r->nsmap) {
    r->smap = kr_xrealloc(r->smap, r->smap_len);
    r->smap_cap = r->smap_len;
    r->smap_off = kr_xrealloc(r->smap_off, r->nsmap * sizeof *r->smap_off);
    r->smap_off_cap = r->nsmap;
  }
  r->stats.rules_kept = (unsigned)r->nrules;
}

int kr_robots_parse_opts(const char *data, size_t len,
                         const char *product_token,
                         const kr_robots_options_t *opts, kr_robots_t **out) {
  if (!out || !product_token || (!data && len)) return KR_EINVAL;
  if (!data) data = ""; /* len is 0: no pointer arithmetic on NULL */
  static const kr_robots_options_t none = {0};
  if (!opts) opts = &none;
  size_t max_bytes = opts->max_bytes ? opts->max_bytes
                                     : KR_ROBOTS_DEFAULT_MAX_BYTES;
  kr_robots_t *r = robots_new(KR_ROBOTS_PARSE, 200);
  struct parser p = {
      .r = r,
      .max_rules = opts->max_rules ? opts->max_rules
                                   : KR_ROBOTS_DEFAULT_MAX_RULES,
      .max_sitemaps = opts->max_sitemaps ? opts->max_sitemaps
                                         : KR_ROBOTS_DEFAULT_MAX_SITEMAPS,
      .token = kr_slice_cstr(product_token),
      .delay_specific = -1,
      .delay_global = -1,
      .on_line = opts->on_line,
      .ctx = opts->ctx,
  };
  p.token_valid = kr_robots_is_valid_token(p.token);

  /* The window: at most max_bytes, and a line cut by the limit is dropped
   * rather than read as a shorter (broader) rule. */
  size_t end = len;
  if (len > max_bytes) {
    r->stats.truncated = 1;
    end = max_bytes;
    if (data[end] != '\n' && data[end] != '\r') {
      while (end > 0 && data[end - 1] != '\n' && data[end - 1] != '\r') end--;
    }
  }
  /* A UTF-8 BOM, or the start of one, is skipped (only at the start). */
  static const unsigned char bom[3] = {0xef, 0xbb, 0xbf};
  size_t i = 0;
  while (i < 3 && i < end && (unsigned char)data[i] == bom[i]) i++;
  r->stats.bytes_parsed = end - i;

  unsigned line = 0;
  for (;;) {
    size_t b = i;
    while (i < end && data[i] != '\n' && data[i] != '\r') i++;
    size_t n = i - b;
    int too_long = n > KR_ROBOTS_MAX_LINE;
    if (too_long) {
      n = KR_ROBOTS_MAX_LINE;
      r->stats.long_lines++;
    }
    parse_line(&p, data + b, n, ++line, too_long);
    if (i >= end) break;
    i += (data[i] == '\r' && i + 1 < end && data[i + 1] == '\n') ? 2 : 1;
  }
  r->stats.lines = line;
  r->crawl_delay_ms = p.any_specific ? p.delay_specific : p.delay_global;
  finish(r);
  *out = r;
  return 0;
}

int kr_robots_parse(const char *data, size_t len, const char *product_token,
                    kr_robots_t **out) {
  return kr_robots_parse_opts(data, len, product_token, NULL, out);
}

/* ---- the matcher ------------------------------------------------------ */

#define NOPOS SIZE_MAX
/* Needles up to this long are searched naively: O(n * SHORT) at worst. */
#define SHORT 16

/* Leftmost occurrence of nd (m >= 1 bytes) in hay[from, n), or NOPOS.
 * fail has room for m entries when m > SHORT (KMP failure function). */
static size_t find(const char *hay, size_t n, size_t from, const char *nd,
                   size_t m, uint32_t *fail) {
  if (from > n || m > n - from) return NOPOS;
  if (m <= SHORT) {
    for (size_t i = from; i + m <= n; i++) {
      const char *c = memchr(hay + i, nd[0], n - m + 1 - i);
      if (!c) return NOPOS;
      i = (size_t)(c - hay);
      if (memcmp(hay + i, nd, m) == 0) return i;
    }
    return NOPOS;
  }
  uint32_t k = 0;
  fail[0] = 0;
  for (size_t q = 1; q < m; q++) {
    while (k && nd[q] != nd[k]) k = fail[k - 1];
    if (nd[q] == nd[k]) k++;
    fail[q] = k;
  }
  k = 0;
  for (size_t i = from; i < n; i++) {
    while (k && hay[i] != nd[k]) k = fail[k - 1];
    if (hay[i] == nd[k] && ++k == m) return i + 1 - m;
  }
  return NOPOS;
}

/* Does pattern pat (canonical, '*' wildcards, optional final '$') match
 * the start of path? Greedy leftmost placement of each '*'-free segment is
 * exact for '*'-only patterns, and each byte of path is scanned once. */
static int pattern_matches(const char *pat, size_t plen, const char *path,
                           size_t n, uint32_t *fail) {
  int anchored = plen && pat[plen - 1] == '$';
  if (anchored) plen--;
  const char *star = memchr(pat, '*', plen);
  if (!star) {
    if (anchored) return n == plen && memcmp(pat, path, n) == 0;
    return n >= plen && memcmp(pat, path, plen) == 0;
  }
  size_t pos = (size_t)(star - pat);
  if (n < pos || memcmp(pat, path, pos) != 0) return 0;
  size_t i = pos + 1; /* start of the next segment in pat */
  for (;;) {
    const char *next = memchr(pat + i, '*', plen - i);
    size_t j = next ? (size_t)(next - pat) : plen;
    size_t m = j - i;
    if (!next) { /* the last segment */
      if (anchored)
        return n - pos >= m && memcmp(path + n - m, pat + i, m) == 0;
      return m == 0 || find(path, n, pos, pat + i, m, fail) != NOPOS;
    }
    if (m) {
      size_t f = find(path, n, pos, pat + i, m, fail);
      if (f == NOPOS) return 0;
      pos = f + m;
    }
    i = j + 1;
  }
}

int kr_robots_allowed(const kr_robots_t *r, kr_slice_t target,
                      kr_robots_decision_t *decision) {
  kr_robots_decision_t d = {.allowed = 1, .reason = KR_ROBOTS_NO_RULE,
                            .pattern = {"", 0}, .status = r->status};
  const char *hash = target.n ? memchr(target.p, '#', target.n) : NULL;
  if (hash) target.n = (size_t)(hash - target.p);

  char small[1024];
  uint32_t small_fail[256];
  char *path = small;
  uint32_t *fail = small_fail;
  size_t need = 1 + 3 * target.n;
  if (target.n > (SIZE_MAX - 1) / 3) need = SIZE_MAX; /* xmalloc aborts */
  if (need > sizeof small) path = kr_xmalloc(need);
  size_t n = 0;
  if (target.n == 0 || target.p[0] != '/') path[n++] = '/';
  n += kr_robots_canon_path(target.p, target.n, path + n);

  if (n == 11 && memcmp(path, "/robots.txt", 11) == 0) {
    d.reason = KR_ROBOTS_ROBOTS_TXT; /* RFC 9309 §2.2.2: implicitly allowed */
  } else if (r->policy != KR_ROBOTS_PARSE) {
    d.reason = KR_ROBOTS_BY_STATUS;
    d.allowed = r->policy == KR_ROBOTS_ALLOW_ALL;
  } else if (r->nrules) {
    if (r->max_seg > sizeof small_fail / sizeof small_fail[0])
      fail = kr_xmalloc(r->max_seg * sizeof *fail);
    for (size_t i = 0; i < r->nrules; i++) {
      const struct rule *ru = &r->rules[i];
      if (!pattern_matches(r->pat + ru->off, ru->len, path, n, fail)) continue;
      d.allowed = ru->allow;
      d.reason = KR_ROBOTS_BY_RULE;
      d.line = ru->line;
      d.rule_is_allow = ru->allow;
      d.pattern = kr_slice(r->pat + ru->off, ru->len);
      break; /* sorted: the first match is the longest, Allow on ties */
    }
  }
  if (fail != small_fail) free(fail);
  if (path != small) free(path);
  if (decision) *decision = d;
  return d.allowed;
}

/* ---- the fetch-status policy ------------------------------------------ */

kr_robots_policy_t kr_robots_policy_for_status(int status) {
  if (status >= 200 && status <= 299) return KR_ROBOTS_PARSE;
  if (status == 429) return KR_ROBOTS_DISALLOW_ALL;
  if (status >= 300 && status <= 499) return KR_ROBOTS_ALLOW_ALL;
  return KR_ROBOTS_DISALLOW_ALL;
}

int kr_robots_from_status(int status, const char *body, size_t len,
                          const char *product_token,
                          const kr_robots_options_t *opts, kr_robots_t **out) {
  if (!out || !product_token) return KR_EINVAL;
  kr_robots_policy_t policy = kr_robots_policy_for_status(status);
  if (policy != KR_ROBOTS_PARSE) {
    *out = robots_new(policy, status);
    return 0;
  }
  int err = kr_robots_parse_opts(body, len, product_token, opts, out);
  if (err == 0) (*out)->status = status;
  return err;
}

/* ---- accessors and the decision formatter ----------------------------- */

int64_t kr_robots_crawl_delay_ms(const kr_robots_t *r) {
  return r->crawl_delay_ms;
}

size_t kr_robots_sitemap_count(const kr_robots_t *r) { return r->nsmap; }

kr_slice_t kr_robots_sitemap(const kr_robots_t *r, size_t i) {
  if (i >= r->nsmap) return kr_slice("", 0);
  return kr_slice_cstr(r->smap + r->smap_off[i]);
}

kr_robots_policy_t kr_robots_policy(const kr_robots_t *r) { return r->policy; }

int kr_robots_status(const kr_robots_t *r) { return r->status; }

const kr_robots_stats_t *kr_robots_stats(const kr_robots_t *r) {
  return &r->stats;
}

size_t kr_robots_memory(const kr_robots_t *r) {
  return sizeof *r + r->rules_cap * sizeof *r->rules + r->pat_cap +
         r->smap_cap + r->smap_off_cap * sizeof *r->smap_off;
}

int kr_robots_decision_format(const kr_robots_decision_t *d, kr_buf_t *out) {
  const char *verdict = d->allowed ? "allowed" : "disallowed";
  switch (d->reason) {
  case KR_ROBOTS_BY_RULE:
    return kr_buf_printf(out, "%s by line %u: %s: %.*s", verdict, d->line,
                         d->rule_is_allow ? "Allow" : "Disallow",
                         (int)d->pattern.n, d->pattern.p);
  case KR_ROBOTS_ROBOTS_TXT:
    return kr_buf_printf(out, "%s (/robots.txt is always allowed)", verdict);
  case KR_ROBOTS_BY_STATUS:
    if (d->status <= 0)
      return kr_buf_printf(out, "%s (robots.txt unreachable: %s all)",
                           verdict, d->allowed ? "allow" : "disallow");
    return kr_buf_printf(out, "%s (robots.txt status %d: %s all)", verdict,
                         d->status, d->allowed ? "allow" : "disallow");
  case KR_ROBOTS_NO_RULE:
  default:
    return kr_buf_printf(out, "%s (no matching rule)", verdict);
  }
}

/* ---- URL path extraction ---------------------------------------------- */

/* First index in [from, len) holding one of "/?;", or len. */
static size_t path_start(const char *url, size_t len, size_t from) {
  for (size_t i = from; i < len; i++)
    if (url[i] == '/' || url[i] == '?' || url[i] == ';') return i;
  return len;
}

kr_slice_t kr_robots_url_path(const char *url, size_t len) {
  if (!url || !len) return kr_slice("", 0);
  /* "//host/..." has an authority but no scheme */
  size_t base = (len >= 2 && url[0] == '/' && url[1] == '/') ? 2 : 0;
  /* "scheme://" counts only when it comes before any path character */
  size_t early = path_start(url, len, base), from = base;
  for (size_t i = base; i < early && i + 3 <= len; i++)
    if (url[i] == ':' && url[i + 1] == '/' && url[i + 2] == '/') {
      from = i + 3;
      break;
    }
  size_t start = path_start(url, len, from);
  if (start == len) return kr_slice("", 0);
  const char *hash = memchr(url + base, '#', len - base);
  if (hash && (size_t)(hash - url) < start) return kr_slice("", 0);
  size_t end = hash ? (size_t)(hash - url) : len;
  return kr_slice(url + start, end - start);
}

/* ---- comparing two files ------------------------------------------------ */

/* The next line of [*p, end) with content once its comment and the
 * whitespace around it are dropped: 1 and [*ls, *ls + *ln), 0 at the end. */
static int next_content_line(const char **p, const char *end, const char **ls, size_t *ln) {
  while (*p < end) {
    const char *s = *p, *e = memchr(s, '\n', (size_t)(end - s));
    if (!e) e = end;
    *p = e < end ? e + 1 : end;
    const char *h = memchr(s, '#', (size_t)(e - s));
    if (h) e = h;
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    if (e > s) {
      *ls = s;
      *ln = (size_t)(e - s);
      return 1;
    }
  }
  return 0;
}

int kr_robots_same_text(const char *a, size_t a_len, const char *b, size_t b_len) {
  const char *pa = a ? a : "", *ea = pa + (a ? a_len : 0);
  const char *pb = b ? b : "", *eb = pb + (b ? b_len : 0);
  for (;;) {
    const char *la = NULL, *lb = NULL;
    size_t na = 0, nb = 0;
    int ha = next_content_line(&pa, ea, &la, &na), hb = next_content_line(&pb, eb, &lb, &nb);
    if (ha != hb) return 0;
    if (!ha) return 1;
    if (na != nb || memcmp(la, lb, na) != 0) return 0;
  }
}
