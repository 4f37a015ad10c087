/*
 * Scope decisions (see include/kria/scope.h for the rules and their
 * order). Every mode becomes one set of SURT prefixes, kept sorted with
 * redundant entries removed, so that "is some prefix a prefix of this
 * candidate" is answered by one binary search: the greatest entry not
 * above the candidate is the only one that can be its prefix. The
 * candidate's SURT is written into scratch space in the scope, cut at the
 * longest prefix's length (comparisons never look further), so a
 * decision allocates nothing. The trap rule replaces Heritrix's
 * PathologicalPathDecideRule regex, ".*?/(.*?/)\1{N,}.*", with a linear
 * scan over the '/'-terminated segments: for each block length k up to
 * KR_SCOPE_TRAP_MAX_PERIOD it counts how many segments in a row equal the
 * one k before; a run of k*N means N+1 copies of a k-segment block.
 * Sections: options and names, prefix set, seeds, candidate SURT, hop
 * paths, rules, decision.
 */
#include "kria/scope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kria/config.h"
#include "kria/error.h"
#include "kria/mem.h"
#include "kria/seeds.h"

typedef struct prefix {
  char *p;
  size_t n;
} prefix_t;

struct kr_scope {
  kr_scope_mode_t mode;
  int max_link_hops;
  int max_trans_hops;
  int calendar_min_year;
  int calendar_max_year;
  unsigned char www_alias;
  unsigned char also_check_via;
  kr_scope_limits_t limits;  /* own limits; include/exclude point below */
  pcre2_code **include;      /* compiled from the options */
  size_t n_include;
  pcre2_code **exclude;
  size_t n_exclude;
  pcre2_match_data *md;      /* one pair: only "did it match" matters */
  pcre2_match_context *mc;   /* match and depth limits */
  prefix_t *pfx;             /* sorted, no entry a prefix of another, once clean */
  size_t n_pfx;
  size_t cap_pfx;
  size_t max_pfx_len;        /* longest entry: candidate SURTs are cut here */
  int dirty;                 /* entries added since the last sort */
  char *scratch;             /* max_pfx_len bytes for the candidate SURT */
  size_t scratch_cap;
  uint64_t gen;              /* prefixes added so far: memos of older ones are stale */
};

/* ---- options and names ---- */

/* A [scope] key's default from the config schema: the one place the
 * numbers are written, so kria crawl and the scope's own users agree. */
static long schema_default(kr_cfg_key_t key) {
  return strtol(kr_config_key_default(key), NULL, 10);
}

void kr_scope_opts_init(kr_scope_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->mode = KR_SCOPE_HOST;
  o->max_url_len = (size_t)schema_default(KR_CFG_SCOPE_MAX_URL_LENGTH);
  o->max_link_hops = (int)schema_default(KR_CFG_SCOPE_MAX_LINK_HOPS);
  o->max_trans_hops = (int)schema_default(KR_CFG_SCOPE_MAX_TRANS_HOPS);
  o->max_path_depth = (unsigned)schema_default(KR_CFG_SCOPE_MAX_PATH_DEPTH);
  o->max_repeated_segments = (unsigned)schema_default(KR_CFG_SCOPE_MAX_REPEATED_SEGMENTS);
  o->www_alias = 1;
}

static const char *const mode_names[] = {"host", "domain", "path", "surt"};

const char *kr_scope_mode_name(kr_scope_mode_t mode) {
  return (unsigned)mode < 4 ? mode_names[mode] : "unknown";
}

int kr_scope_mode_parse(const char *name) {
  for (int i = 0; i < 4; i++)
    if (name && strcmp(name, mode_names[i]) == 0) return i;
  return -1;
}

const char *kr_scope_rule_name(const kr_scope_t *scope, kr_scope_rule_t rule) {
  switch (rule) {
  case KR_SCOPE_R_LENGTH: return "length";
  case KR_SCOPE_R_SCHEME: return "scheme";
  case KR_SCOPE_R_PREREQUISITE: return "prerequisite";
  case KR_SCOPE_R_HOPS: return "hops";
  case KR_SCOPE_R_DEPTH: return "depth";
  case KR_SCOPE_R_TRAP: return "trap";
  case KR_SCOPE_R_CALENDAR: return "calendar";
  case KR_SCOPE_R_EXCLUDE: return "exclude";
  case KR_SCOPE_R_INCLUDE: return "include";
  case KR_SCOPE_R_IN_SCOPE: return scope ? kr_scope_mode_name(scope->mode) : "in-scope";
  case KR_SCOPE_R_VIA: return "via";
  case KR_SCOPE_R_TRANS_HOPS: return "trans-hops";
  case KR_SCOPE_R_OUT_OF_SCOPE: return "out-of-scope";
  }
  return "unknown";
}

static pcre2_code **compile_list(const char *const *pats, size_t n, const char *what,
                                 char *errbuf, size_t errlen, int *rc) {
  *rc = 0;
  if (!n) return NULL;
  pcre2_code **v = kr_xcalloc(n, sizeof *v);
  for (size_t i = 0; i < n; i++) {
    int ec;
    PCRE2_SIZE off;
    v[i] = pcre2_compile((PCRE2_SPTR)(pats[i] ? pats[i] : ""), PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF, &ec, &off, NULL);
    if (!v[i]) {
      PCRE2_UCHAR msg[160];
      pcre2_get_error_message(ec, msg, sizeof msg);
      if (errbuf && errlen)
        snprintf(errbuf, errlen, "scope %s pattern %zu \"%s\": %s at offset %zu", what, i + 1,
                 pats[i] ? pats[i] : "", (const char *)msg, (size_t)off);
      for (size_t j = 0; j < i; j++) pcre2_code_free(v[j]);
      free(v);
      *rc = KR_ECONFIG;
      return NULL;
    }
    (void)pcre2_jit_compile(v[i], PCRE2_JIT_COMPLETE); /* interpreter is the fallback */
  }
  return v;
}

int kr_scope_new(const kr_scope_opts_t *o, kr_scope_t **out, char *errbuf, size_t errlen) {
  kr_scope_opts_t def;
  if (!o) {
    kr_scope_opts_init(&def);
    o = &def;
  }
  *out = NULL;
  if ((unsigned)o->mode > KR_SCOPE_SURT) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "scope: unknown mode %d", (int)o->mode);
    return KR_ECONFIG;
  }
  kr_scope_t *s = kr_xcalloc(1, sizeof *s);
  s->mode = o->mode;
  s->max_link_hops = o->max_link_hops;
  s->max_trans_hops = o->max_trans_hops < 0 ? 0 : o->max_trans_hops;
  s->calendar_min_year = o->calendar_min_year;
  s->calendar_max_year = o->calendar_max_year;
  s->www_alias = o->www_alias;
  s->also_check_via = o->also_check_via;
  s->limits.max_url_len = o->max_url_len;
  s->limits.max_path_depth = o->max_path_depth;
  s->limits.max_repeated_segments = o->max_repeated_segments;
  int rc;
  s->include = compile_list(o->include, o->n_include, "include", errbuf, errlen, &rc);
  s->n_include = s->include ? o->n_include : 0;
  if (!rc) s->exclude = compile_list(o->exclude, o->n_exclude, "exclude", errbuf, errlen, &rc);
  s->n_exclude = s->exclude ? o->n_exclude : 0;
  if (rc) {
    kr_scope_free(s);
    return rc;
  }
  s->limits.include = (const pcre2_code *const *)s->include;
  s->limits.n_include = s->n_include;
  s->limits.exclude = (const pcre2_code *const *)s->exclude;
  s->limits.n_exclude = s->n_exclude;
  s->md = pcre2_match_data_create(1, NULL);
  s->mc = pcre2_match_context_create(NULL);
  if (!s->md || !s->mc) {
    fputs("kria: out of memory (PCRE2 match data)\n", stderr);
    abort(); /* as kr_xmalloc does */
  }
  pcre2_set_match_limit(s->mc, KR_SCOPE_MATCH_LIMIT);
  pcre2_set_depth_limit(s->mc, KR_SCOPE_DEPTH_LIMIT);
  for (size_t i = 0; i < o->n_surt_prefixes; i++) {
    const char *p = o->surt_prefixes[i] ? o->surt_prefixes[i] : "";
    if (kr_scope_add_surt_prefix(s, p, strlen(p))) {
      if (errbuf && errlen)
        snprintf(errbuf, errlen,
                 "scope: SURT prefix \"%s\" does not start with \"http://(\" or \"https://(\"",
                 p);
      kr_scope_free(s);
      return KR_ECONFIG;
    }
  }
  *out = s;
  return 0;
}

void kr_scope_free(kr_scope_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n_include; i++) pcre2_code_free(s->include[i]);
  for (size_t i = 0; i < s->n_exclude; i++) pcre2_code_free(s->exclude[i]);
  free(s->include);
  free(s->exclude);
  pcre2_match_data_free(s->md);
  pcre2_match_context_free(s->mc);
  for (size_t i = 0; i < s->n_pfx; i++) free(s->pfx[i].p);
  free(s->pfx);
  free(s->scratch);
  free(s);
}

/* ---- prefix set ---- */

static void add_prefix(kr_scope_t *s, const char *p, size_t n) {
  if (s->n_pfx == s->cap_pfx) {
    s->cap_pfx = s->cap_pfx ? s->cap_pfx * 2 : 16;
    s->pfx = kr_xrealloc(s->pfx, s->cap_pfx * sizeof *s->pfx);
  }
  s->pfx[s->n_pfx].p = kr_xstrndup(p, n);
  s->pfx[s->n_pfx].n = n;
  s->n_pfx++;
  s->dirty = 1;
  s->gen++;
  if (n > s->max_pfx_len) s->max_pfx_len = n;
  if (s->scratch_cap < s->max_pfx_len + 1) {
    s->scratch_cap = s->max_pfx_len + 1;
    s->scratch = kr_xrealloc(s->scratch, s->scratch_cap);
  }
}

/* Bytewise order, a proper prefix before what it prefixes. */
static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

static int cmp_prefix(const void *x, const void *y) {
  const prefix_t *a = x, *b = y;
  return cmp_bytes(a->p, a->n, b->p, b->n);
}

void kr_scope_finish(kr_scope_t *s) {
  if (!s->dirty) return;
  qsort(s->pfx, s->n_pfx, sizeof *s->pfx, cmp_prefix);
  /* In sorted order everything a kept entry prefixes follows it at once,
   * so comparing with the last kept entry drops every redundant one. */
  size_t k = 0;
  for (size_t i = 0; i < s->n_pfx; i++) {
    if (k && s->pfx[i].n >= s->pfx[k - 1].n &&
        memcmp(s->pfx[i].p, s->pfx[k - 1].p, s->pfx[k - 1].n) == 0) {
      free(s->pfx[i].p);
      continue;
    }
    s->pfx[k++] = s->pfx[i];
  }
  s->n_pfx = k;
  s->dirty = 0;
}

size_t kr_scope_prefix_count(kr_scope_t *s) {
  kr_scope_finish(s);
  return s->n_pfx;
}

kr_slice_t kr_scope_prefix(kr_scope_t *s, size_t i) {
  kr_scope_finish(s);
  return i < s->n_pfx ? kr_slice(s->pfx[i].p, s->pfx[i].n) : kr_slice(NULL, 0);
}

/* 1 if some entry is a prefix of c (c cut at max_pfx_len). */
static int prefix_match(const kr_scope_t *s, const char *c, size_t cn) {
  size_t lo = 0, hi = s->n_pfx;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_bytes(s->pfx[mid].p, s->pfx[mid].n, c, cn) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return 0;
  const prefix_t *e = &s->pfx[lo - 1];
  return e->n <= cn && memcmp(e->p, c, e->n) == 0;
}

/* ---- candidate SURT ---- */

/* Bounded writer: bytes past cap are counted, not stored. */
typedef struct writer {
  char *p;
  size_t n, cap;
} writer_t;

static inline void w_put(writer_t *w, const char *p, size_t n) {
  if (w->n < w->cap) {
    size_t k = w->cap - w->n < n ? w->cap - w->n : n;
    memcpy(w->p + w->n, p, k);
  }
  w->n += n;
}

static inline void w_ch(writer_t *w, char c) {
  if (w->n < w->cap) w->p[w->n] = c;
  w->n++;
}

/* "org,example,www," for a domain; an address as it is, then ','. */
static void w_host(writer_t *w, kr_slice_t h, int is_domain) {
  if (!is_domain) {
    w_put(w, h.p, h.n);
    w_ch(w, ',');
    return;
  }
  size_t end = h.n;
  for (;;) {
    const char *dot = end ? memrchr(h.p, '.', end) : NULL;
    size_t i = dot ? (size_t)(dot - h.p) + 1 : 0;
    w_put(w, h.p + i, end - i);
    w_ch(w, ',');
    if (i == 0) break;
    end = i - 1;
  }
}

static void w_port(writer_t *w, int port) {
  if (port < 0) return;
  char num[1 + KR_U64_DEC_MAX] = ":"; /* no snprintf on the per-link path */
  w_put(w, num, 1 + kr_u64_dec(num + 1, (unsigned)port));
}

/* The candidate form of an http(s) u into w; 0 or KR_EURL (no host). */
static int w_surt(writer_t *w, const kr_url_t *u) {
  kr_slice_t h = kr_url_hostname(u);
  if (h.n == 0) return KR_EURL;
  w_put(w, "http://(", 8);
  w_host(w, h, kr_url_host_type(u) == KR_URL_HOST_DOMAIN);
  w_port(w, kr_url_port(u));
  w_ch(w, ')');
  kr_slice_t t = kr_url_request_target(u);
  w_put(w, t.p, t.n);
  return 0;
}

int kr_scope_surt(const kr_url_t *url, kr_buf_t *out) {
  size_t need = kr_url_href_len(url) + 32;
  int rc = kr_buf_reserve(out, need);
  if (rc) return rc;
  writer_t w = {out->data + out->len, 0, need};
  rc = kr_url_is_http(url) ? w_surt(&w, url) : KR_EURL;
  if (rc) return rc;
  if (w.n > need) return KR_ETOOBIG; /* cannot happen: the SURT is shorter */
  out->len += w.n;
  out->data[out->len] = '\0';
  return 0;
}

/* u must be http(s). */
static int in_prefixes(kr_scope_t *s, const kr_url_t *u) {
  if (!s->n_pfx) return 0;
  writer_t w = {s->scratch, 0, s->max_pfx_len};
  if (w_surt(&w, u)) return 0;
  return prefix_match(s, s->scratch, w.n < w.cap ? w.n : w.cap);
}

/* ---- seeds ---- */

/* Prefix for host h (port, path dir) in the given shape into a fresh
 * buffer and add it. open: no ')' (subdomains too); dir NULL: "/". */
static void add_host_prefix(kr_scope_t *s, kr_slice_t h, int is_domain, int port, int open,
                            kr_slice_t dir) {
  size_t cap = h.n + dir.n + 32;
  char *buf = kr_xmalloc(cap);
  writer_t w = {buf, 0, cap};
  w_put(&w, "http://(", 8);
  w_host(&w, h, is_domain);
  w_port(&w, port);
  if (!open) {
    w_ch(&w, ')');
    if (dir.n)
      w_put(&w, dir.p, dir.n);
    else
      w_ch(&w, '/');
  }
  add_prefix(s, buf, w.n);
  free(buf);
}

int kr_scope_add_seed(kr_scope_t *s, const kr_url_t *seed, unsigned flags) {
  if (!kr_url_is_http(seed)) return KR_ESCHEME;
  kr_slice_t h = kr_url_hostname(seed);
  if (h.n == 0) return KR_EURL;
  int is_domain = kr_url_host_type(seed) == KR_URL_HOST_DOMAIN;
  int port = kr_url_port(seed);
  kr_slice_t path = kr_url_pathname(seed);
  kr_slice_t dir = path;
  while (dir.n && dir.p[dir.n - 1] != '/') dir.n--;
  kr_slice_t none = kr_slice(NULL, 0);
  int open = 0;
  switch (s->mode) {
  case KR_SCOPE_DOMAIN: {
    kr_slice_t reg;
    if (!is_domain || kr_url_registrable_domain(h, &reg)) reg = h;
    add_host_prefix(s, reg, is_domain, -1, 1, none);
    return 0;
  }
  case KR_SCOPE_HOST:
    dir = none;
    break;
  case KR_SCOPE_PATH:
    break;
  case KR_SCOPE_SURT:
    open = (flags & KR_SCOPE_SEED_NO_PATH) != 0;
    break;
  }
  add_host_prefix(s, h, is_domain, port, open, dir);
  if (s->www_alias && is_domain && !open) {
    /* The twin with "www." added or removed. */
    if (h.n > 4 && memcmp(h.p, "www.", 4) == 0) {
      kr_slice_t bare = kr_slice(h.p + 4, h.n - 4);
      if (memchr(bare.p, '.', bare.n)) add_host_prefix(s, bare, 1, port, 0, dir);
    } else if (h.n + 4 <= 253) {
      char twin[260];
      memcpy(twin, "www.", 4);
      memcpy(twin + 4, h.p, h.n);
      add_host_prefix(s, kr_slice(twin, h.n + 4), 1, port, 0, dir);
    }
  }
  return 0;
}

int kr_scope_add_seeds(kr_scope_t *s, const struct kr_seeds *seeds) {
  for (size_t i = 0; i < seeds->n; i++) {
    kr_url_t *u = NULL;
    int rc = kr_url_parse(seeds->v[i].url, seeds->v[i].len, NULL, &u);
    if (rc) return rc;
    rc = kr_scope_add_seed(s, u, (seeds->v[i].flags & KR_SEED_NO_PATH) ? KR_SCOPE_SEED_NO_PATH : 0);
    kr_url_free(u);
    if (rc) return rc;
  }
  return 0;
}

int kr_scope_add_surt_prefix(kr_scope_t *s, const char *p, size_t n) {
  size_t skip;
  if (n >= 8 && strncasecmp(p, "http://(", 8) == 0)
    skip = 8;
  else if (n >= 9 && strncasecmp(p, "https://(", 9) == 0)
    skip = 9;
  else
    return KR_EINVAL;
  /* "http://(" then the host part lowercased up to ')'; the path as is. */
  char *buf = kr_xmalloc(n + 1);
  memcpy(buf, "http://(", 8);
  size_t o = 8, i = skip;
  int in_host = 1;
  for (; i < n; i++) {
    char c = p[i];
    if (in_host && c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c == ')') in_host = 0;
    buf[o++] = c;
  }
  add_prefix(s, buf, o);
  free(buf);
  return 0;
}

/* ---- hop paths ---- */

/* Split a hop path into its "N+" count and the letters shown. */
static kr_slice_t hops_tail(kr_slice_t h, unsigned *hidden) {
  *hidden = 0;
  size_t i = 0;
  unsigned v = 0;
  while (i < h.n && h.p[i] >= '0' && h.p[i] <= '9') {
    if (v < 100000000u) v = v * 10 + (unsigned)(h.p[i] - '0');
    i++;
  }
  if (i > 0 && i < h.n && h.p[i] == '+') {
    *hidden = v;
    return kr_slice(h.p + i + 1, h.n - i - 1);
  }
  return h;
}

unsigned kr_scope_link_hops(kr_slice_t hops) {
  unsigned hidden;
  kr_slice_t t = hops_tail(hops, &hidden);
  unsigned n = hidden;
  for (size_t i = 0; i < t.n; i++) n += t.p[i] == 'L';
  return n;
}

unsigned kr_scope_trans_hops(kr_slice_t hops) {
  unsigned hidden;
  kr_slice_t t = hops_tail(hops, &hidden);
  unsigned n = 0;
  while (n < t.n && t.p[t.n - 1 - n] != 'L') n++;
  return n;
}

#define HOPS_SHOWN 50

int kr_scope_hops_extend(kr_slice_t hops, char hop, kr_buf_t *out) {
  if (hop == '\0' || !strchr("LERPX", hop)) return KR_EINVAL;
  unsigned hidden;
  kr_slice_t t = hops_tail(hops, &hidden);
  if (t.n < HOPS_SHOWN) {
    if (hidden) {
      int rc = kr_buf_printf(out, "%u+", hidden);
      if (rc) return rc;
    }
    int rc = kr_buf_append_slice(out, t);
    return rc ? rc : kr_buf_append(out, &hop, 1);
  }
  size_t drop = t.n - (HOPS_SHOWN - 1);
  int rc = kr_buf_printf(out, "%u+", hidden + (unsigned)drop);
  if (!rc) rc = kr_buf_append(out, t.p + drop, t.n - drop);
  if (!rc) rc = kr_buf_append(out, &hop, 1);
  return rc;
}

/* ---- rules ---- */

/* Number of '/' in s. */
static unsigned path_depth(kr_slice_t s) {
  unsigned d = 0;
  const char *p = s.p, *end = s.p + s.n;
  while (p < end && (p = memchr(p, '/', (size_t)(end - p)))) d++, p++;
  return d;
}

typedef struct seg {
  uint32_t off, len;
  uint64_t hash;
} seg_t;

#define RING 64 /* > KR_SCOPE_TRAP_MAX_PERIOD, a power of two */

static inline int seg_eq(const char *s, const seg_t *a, const seg_t *b) {
  return a->len == b->len && a->hash == b->hash && memcmp(s + a->off, s + b->off, a->len) == 0;
}

/* Heritrix's ".*?/(.*?/)\1{N,}.*" on s, which holds `slashes` '/': some
 * block of whole segments (each ending in '/', the first right after a
 * '/') N+1 times in a row. Blocks longer than KR_SCOPE_TRAP_MAX_PERIOD
 * segments are not looked for, nor blocks that cannot fit N+1 times into
 * the URL's segments (a usual URL has few, so usually only neighbours
 * are compared). O(len * period). */
static int is_trap(const char *s, size_t n, unsigned rep, size_t slashes) {
  if (rep == 0) return 0;
  size_t m = slashes ? slashes - 1 : 0; /* '/'-terminated segments */
  size_t kcap = m / ((size_t)rep + 1);
  if (kcap == 0) return 0;
  if (kcap > KR_SCOPE_TRAP_MAX_PERIOD) kcap = KR_SCOPE_TRAP_MAX_PERIOD;
  seg_t ring[RING];
  uint32_t run[KR_SCOPE_TRAP_MAX_PERIOD + 1];
  memset(run, 0, sizeof run);
  const char *slash = memchr(s, '/', n);
  size_t j = 0; /* segments seen */
  while (slash) {
    size_t start = (size_t)(slash - s) + 1;
    const char *next = start < n ? memchr(s + start, '/', n - start) : NULL;
    if (!next) break; /* the last piece is not '/'-terminated */
    seg_t *cur = &ring[j % RING];
    cur->off = (uint32_t)start;
    cur->len = (uint32_t)((size_t)(next - s) - start);
    uint64_t h = 0;
    if (kcap > 2) { /* many comparisons per segment: worth a hash */
      h = 1469598103934665603ull;
      for (size_t i = start; i < start + cur->len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
      }
    }
    cur->hash = h;
    size_t kmax = j < kcap ? j : kcap;
    for (size_t k = 1; k <= kmax; k++) {
      if (seg_eq(s, cur, &ring[(j - k) % RING])) {
        if (++run[k] >= (uint64_t)k * rep) return 1;
      } else {
        run[k] = 0;
      }
    }
    j++;
    slash = next;
  }
  return 0;
}

/* A 4-digit number standing alone (not part of a longer run of letters
 * or digits) that reads as a year 1000-2999, outside [lo, hi] (0 = no
 * bound). Looks at the path and query. */
static int is_calendar(kr_slice_t t, int lo, int hi) {
  for (size_t i = 0; i + 4 <= t.n; i++) {
    const char *p = t.p + i;
    if (!(p[0] == '1' || p[0] == '2')) continue;
    if (i > 0) {
      char b = t.p[i - 1];
      if ((b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')) continue;
    }
    int ok = 1, y = 0;
    for (int k = 0; k < 4; k++) {
      if (p[k] < '0' || p[k] > '9') {
        ok = 0;
        break;
      }
      y = y * 10 + (p[k] - '0');
    }
    if (!ok) continue;
    if (i + 4 < t.n) {
      char a = p[4];
      if ((a >= '0' && a <= '9') || (a >= 'a' && a <= 'z') || (a >= 'A' && a <= 'Z')) continue;
    }
    if ((lo && y < lo) || (hi && y > hi)) return 1;
  }
  return 0;
}

/* 1 match, 0 no match, -1 error (limit hit, bad UTF-8). */
static int re_match(kr_scope_t *s, const pcre2_code *re, kr_slice_t subj) {
  int rc = pcre2_match(re, (PCRE2_SPTR)subj.p, subj.n, 0, 0, s->md, s->mc);
  if (rc >= 0) return 1;
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  return -1;
}

/* ---- decision ---- */

enum { ST_IN, ST_VIA, ST_TRANS, ST_OUT };

/* The rules after the prefixes that look at the URL alone: depth, trap,
 * calendar, exclude. The first that rejects, or KR_SCOPE_R_IN_SCOPE. */
static kr_scope_rule_t url_filters(kr_scope_t *s, const kr_url_t *u, kr_slice_t href,
                                   const kr_scope_limits_t *L) {
  unsigned depth = path_depth(kr_url_pathname(u));
  if (L->max_path_depth && depth > L->max_path_depth) return KR_SCOPE_R_DEPTH;
  if (L->max_repeated_segments) {
    /* An http(s) href has '/' in "://", the path and the query only. */
    kr_slice_t q = kr_url_query(u);
    size_t slashes = 2 + depth + (q.p ? path_depth(q) : 0);
    if (is_trap(href.p, href.n, L->max_repeated_segments, slashes)) return KR_SCOPE_R_TRAP;
  }
  if ((s->calendar_min_year || s->calendar_max_year)) {
    kr_slice_t t = kr_url_request_target(u);
    if (is_calendar(t, s->calendar_min_year, s->calendar_max_year)) return KR_SCOPE_R_CALENDAR;
  }
  for (size_t i = 0; i < L->n_exclude; i++)
    if (L->exclude[i] && re_match(s, L->exclude[i], href) != 0) return KR_SCOPE_R_EXCLUDE;
  return KR_SCOPE_R_IN_SCOPE;
}

/* Memo bits: each part known, and its value. */
enum { MK_PFX = 1, MV_PFX = 2, MK_FILTER = 4, MK_INCL = 8, MV_INCL = 16 };

static int decide(kr_scope_t *s, const kr_scope_candidate_t *c, const kr_scope_limits_t *L,
                  kr_scope_rule_t *rule, kr_scope_memo_t *m) {
  const kr_url_t *u = c->url;
  kr_slice_t href = kr_url_href_nofrag(u);
  if (L->max_url_len && href.n > L->max_url_len) return *rule = KR_SCOPE_R_LENGTH, 0;
  if (!kr_url_is_http(u)) return *rule = KR_SCOPE_R_SCHEME, 0;
  kr_scope_memo_t scratch = {0};
  if (!m) {
    m = &scratch;
  } else if (m->scope != s || m->gen != s->gen || m->limits != L) {
    *m = (kr_scope_memo_t){.scope = s, .gen = s->gen, .limits = L};
  }

  unsigned hidden;
  kr_slice_t tail = hops_tail(c->hops, &hidden);
  if (tail.n && tail.p[tail.n - 1] == 'P') return *rule = KR_SCOPE_R_PREREQUISITE, 1;
  if (s->max_link_hops >= 0 && kr_scope_link_hops(c->hops) > (unsigned)s->max_link_hops)
    return *rule = KR_SCOPE_R_HOPS, 0;

  int st;
  kr_scope_rule_t out_rule = KR_SCOPE_R_OUT_OF_SCOPE;
  if (!(m->known & MK_PFX)) m->known |= MK_PFX | (in_prefixes(s, u) ? MV_PFX : 0);
  if (m->known & MV_PFX) {
    st = ST_IN;
  } else if (s->also_check_via && c->via && kr_url_is_http(c->via) && in_prefixes(s, c->via)) {
    st = ST_VIA;
  } else {
    unsigned t = kr_scope_trans_hops(c->hops);
    if (t > 0 && t <= (unsigned)s->max_trans_hops) {
      st = ST_TRANS;
    } else {
      st = ST_OUT;
      if (t > 0) out_rule = KR_SCOPE_R_TRANS_HOPS;
      if (!L->n_include) return *rule = out_rule, 0; /* the usual off-site link */
    }
  }

  if (!(m->known & MK_FILTER)) {
    m->filter = (uint8_t)url_filters(s, u, href, L);
    m->known |= MK_FILTER;
  }
  if (m->filter != KR_SCOPE_R_IN_SCOPE) return *rule = (kr_scope_rule_t)m->filter, 0;
  switch (st) {
  case ST_IN: return *rule = KR_SCOPE_R_IN_SCOPE, 1;
  case ST_VIA: return *rule = KR_SCOPE_R_VIA, 1;
  case ST_TRANS: return *rule = KR_SCOPE_R_TRANS_HOPS, 1;
  default: break;
  }
  if (!(m->known & MK_INCL)) {
    int inc = 0;
    for (size_t i = 0; i < L->n_include && !inc; i++)
      inc = L->include[i] && re_match(s, L->include[i], href) == 1;
    m->known |= MK_INCL | (inc ? MV_INCL : 0);
  }
  if (m->known & MV_INCL) return *rule = KR_SCOPE_R_INCLUDE, 1;
  return *rule = out_rule, 0;
}

int kr_scope_decide(kr_scope_t *s, const kr_scope_candidate_t *c, const kr_scope_limits_t *limits,
                    kr_scope_rule_t *rule) {
  kr_scope_rule_t dummy;
  if (!rule) rule = &dummy;
  kr_scope_finish(s);
  return decide(s, c, limits ? limits : &s->limits, rule, NULL);
}

int kr_scope_decide_memo(kr_scope_t *s, const kr_scope_candidate_t *c,
                         const kr_scope_limits_t *limits, kr_scope_rule_t *rule,
                         kr_scope_memo_t *memo) {
  kr_scope_rule_t dummy;
  if (!rule) rule = &dummy;
  kr_scope_finish(s);
  return decide(s, c, limits ? limits : &s->limits, rule, memo);
}
