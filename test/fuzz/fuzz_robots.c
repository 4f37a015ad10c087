/*
 * libFuzzer harness for robots.txt parsing and matching. The first input
 * byte picks the product token (bits 0-2), the max_bytes window (bits
 * 3-4), max_rules (bits 5-6) and max_sitemaps (bit 7). The rest is the
 * robots.txt, optionally followed by "\n#paths\n" and paths to match, one
 * per line; without that separator the paths are a fixed few plus the
 * value of every line of the file (so patterns get matched against
 * themselves).
 *
 * Invariants, beyond ASan/UBSan:
 *  - parsing never fails; bytes_parsed <= max_bytes, truncated only when
 *    the input is longer; rules_kept <= max_rules, sitemaps <= max_sitemaps,
 *    crawl delay -1 or within [0, KR_ROBOTS_MAX_CRAWL_DELAY_MS];
 *  - max_bytes is respected: replacing everything after the window (and
 *    the one byte that says whether its last line is complete) by other
 *    rules changes no decision, crawl delay, sitemap or statistic;
 *  - matching is deterministic and consistent: the return value equals
 *    decision.allowed, a rule decision names a parsed line, /robots.txt
 *    is always allowed, and a path matches like its canonical form;
 *  - kr_robots_canon and kr_robots_canon_path are idempotent and within
 *    3 * len, the path form holds no '*' or '$', and a path matches like
 *    either of its canonical forms; kr_robots_url_path
 *    returns a slice of its input; a non-2xx status allows or disallows
 *    everything as kr_robots_policy_for_status says.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kria/robots.h"

#define RB_MAX_PATHS 64

static const char *const rb_tokens[8] = {"FooBot", "kria",  "Googlebot", "*",
                                         "",       "foo_bar-baz", "BarBot", "Foo Bar"};
static const size_t rb_max_bytes[4] = {0, 64, 300, 4096};
static const size_t rb_max_rules[4] = {0, 1, 4, 64};

static int rb_same_decision(const kr_robots_decision_t *a, const kr_robots_decision_t *b) {
  return a->allowed == b->allowed && a->reason == b->reason && a->line == b->line &&
         a->rule_is_allow == b->rule_is_allow && a->status == b->status &&
         a->pattern.n == b->pattern.n &&
         (a->pattern.n == 0 || memcmp(a->pattern.p, b->pattern.p, a->pattern.n) == 0);
}

static void rb_check_path(const kr_robots_t *r, kr_slice_t path) {
  kr_robots_decision_t d1, d2;
  int a1 = kr_robots_allowed(r, path, &d1);
  int a2 = kr_robots_allowed(r, path, &d2);
  FUZZ_CHECK(a1 == 0 || a1 == 1);
  FUZZ_CHECK(a1 == a2 && a1 == d1.allowed && rb_same_decision(&d1, &d2));
  FUZZ_CHECK(kr_robots_allowed(r, path, NULL) == a1);
  if (d1.reason == KR_ROBOTS_BY_RULE) {
    FUZZ_CHECK(d1.line >= 1 && d1.line <= kr_robots_stats(r)->lines);
    FUZZ_CHECK(d1.allowed == d1.rule_is_allow);
  } else {
    FUZZ_CHECK(d1.line == 0);
  }
  char *canon = malloc(3 * path.n + 1);
  size_t cn = kr_robots_canon(path.p, path.n, canon);
  FUZZ_CHECK(cn <= 3 * path.n);
  char *canon2 = malloc(3 * cn + 1);
  size_t cn2 = kr_robots_canon(canon, cn, canon2);
  FUZZ_CHECK(cn2 == cn && memcmp(canon, canon2, cn) == 0);
  kr_robots_decision_t d3;
  FUZZ_CHECK(kr_robots_allowed(r, kr_slice(canon, cn), &d3) == a1);
  FUZZ_CHECK(d3.line == d1.line);
  free(canon);
  free(canon2);
  /* the path form: idempotent, never a '*' or '$' the matcher could take
   * for syntax, and matched like the path itself */
  canon = malloc(3 * path.n + 1);
  cn = kr_robots_canon_path(path.p, path.n, canon);
  FUZZ_CHECK(cn <= 3 * path.n);
  canon2 = malloc(3 * cn + 1);
  cn2 = kr_robots_canon_path(canon, cn, canon2);
  FUZZ_CHECK(cn2 == cn && memcmp(canon, canon2, cn) == 0);
  FUZZ_CHECK(!memchr(canon, '*', cn) && !memchr(canon, '$', cn));
  FUZZ_CHECK(kr_robots_allowed(r, kr_slice(canon, cn), &d3) == a1);
  FUZZ_CHECK(d3.line == d1.line);
  free(canon);
  free(canon2);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 20);
  FUZZ_CHECK(kr_robots_decision_format(&d1, &b) == 0 && b.len > 0);
  kr_buf_free(&b);
  kr_slice_t up = kr_robots_url_path(path.p, path.n);
  FUZZ_CHECK(up.n == 0 || (up.p >= path.p && up.p + up.n <= path.p + path.n));
}

/* The paths to match: after the separator, or derived from the file. */
static size_t rb_paths(const char *p, size_t n, int explicit_paths, kr_slice_t *out) {
  static const char *const fixed[] = {"/", "", "/robots.txt", "/a/b?c=d", "?x", "/%7Ea/%2f"};
  size_t k = 0;
  if (!explicit_paths)
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
      out[k++] = kr_slice_cstr(fixed[i]);
  size_t i = 0;
  while (i < n && k < RB_MAX_PATHS) {
    size_t b = i;
    while (i < n && p[i] != '\n' && p[i] != '\r') i++;
    kr_slice_t line = kr_slice(p + b, i - b);
    if (!explicit_paths) {
      const char *colon = memchr(line.p, ':', line.n);
      if (!colon) goto next;
      line = kr_slice_trim(kr_slice(colon + 1, (size_t)(line.p + line.n - colon - 1)));
    }
    out[k++] = line;
  next:
    i++;
  }
  return k;
}

static void rb_compare(const kr_robots_t *a, const kr_robots_t *b, const kr_slice_t *paths,
                       size_t np) {
  const kr_robots_stats_t *sa = kr_robots_stats(a), *sb = kr_robots_stats(b);
  FUZZ_CHECK(sa->bytes_parsed == sb->bytes_parsed && sa->lines == sb->lines &&
             sa->directives == sb->directives && sa->groups == sb->groups &&
             sa->rules_kept == sb->rules_kept && sa->rules_dropped == sb->rules_dropped &&
             sa->invalid == sb->invalid && sa->unknown == sb->unknown);
  FUZZ_CHECK(kr_robots_crawl_delay_ms(a) == kr_robots_crawl_delay_ms(b));
  FUZZ_CHECK(kr_robots_sitemap_count(a) == kr_robots_sitemap_count(b));
  for (size_t i = 0; i < np; i++) {
    kr_robots_decision_t da, db;
    kr_robots_allowed(a, paths[i], &da);
    kr_robots_allowed(b, paths[i], &db);
    FUZZ_CHECK(rb_same_decision(&da, &db));
  }
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned mode = data[0];
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  static const char sep[] = "\n#paths\n";
  const char *paths_at = NULL;
  for (size_t i = 0; i + sizeof sep - 1 <= len; i++)
    if (memcmp(text + i, sep, sizeof sep - 1) == 0) {
      paths_at = text + i + sizeof sep - 1;
      len = i;
      break;
    }
  const char *token = rb_tokens[mode & 7];
  kr_robots_options_t o = {0};
  o.max_bytes = rb_max_bytes[(mode >> 3) & 3];
  o.max_rules = rb_max_rules[(mode >> 5) & 3];
  o.max_sitemaps = (mode & 0x80) ? 1 : 0;
  size_t max_bytes = o.max_bytes ? o.max_bytes : KR_ROBOTS_DEFAULT_MAX_BYTES;
  size_t max_rules = o.max_rules ? o.max_rules : KR_ROBOTS_DEFAULT_MAX_RULES;
  size_t max_sitemaps = o.max_sitemaps ? o.max_sitemaps : KR_ROBOTS_DEFAULT_MAX_SITEMAPS;

  kr_robots_t *r = NULL;
  FUZZ_CHECK(kr_robots_parse_opts(text, len, token, &o, &r) == 0 && r);
  const kr_robots_stats_t *st = kr_robots_stats(r);
  FUZZ_CHECK(st->bytes_parsed <= max_bytes && st->bytes_parsed <= len);
  FUZZ_CHECK(st->truncated == (len > max_bytes));
  FUZZ_CHECK(st->rules_kept <= max_rules);
  FUZZ_CHECK(kr_robots_sitemap_count(r) <= max_sitemaps);
  FUZZ_CHECK(st->last_directive_line <= st->lines);
  for (size_t i = 0; i < kr_robots_sitemap_count(r); i++) {
    kr_slice_t s = kr_robots_sitemap(r, i);
    FUZZ_CHECK(s.n == 0 || s.p);
  }
  int64_t delay = kr_robots_crawl_delay_ms(r);
  FUZZ_CHECK(delay == -1 || (delay >= 0 && delay <= (int64_t)KR_ROBOTS_MAX_CRAWL_DELAY_MS));
  FUZZ_CHECK(kr_robots_policy(r) == KR_ROBOTS_PARSE && kr_robots_status(r) == 200);

  kr_slice_t paths[RB_MAX_PATHS];
  size_t np = paths_at ? rb_paths(paths_at, (size_t)((const char *)data + size - paths_at), 1, paths)
                       : rb_paths(text, len, 0, paths);
  for (size_t i = 0; i < np; i++) rb_check_path(r, paths[i]);
  kr_robots_decision_t d;
  FUZZ_CHECK(kr_robots_allowed(r, KR_SLICE_LIT("/robots.txt"), &d) == 1);
  FUZZ_CHECK(d.reason == KR_ROBOTS_ROBOTS_TXT);

  /* Bytes past the window (and past the byte that tells whether the
   * window's last line is complete) do not count. */
  if (len > max_bytes) {
    static const char tail[] = "\nUser-agent: *\nDisallow: /\nAllow: /x\nSitemap: /s\n";
    size_t keep = max_bytes + 1;
    char *other = malloc(keep + sizeof tail);
    memcpy(other, text, keep);
    memcpy(other + keep, tail, sizeof tail);
    kr_robots_t *r2 = NULL;
    FUZZ_CHECK(kr_robots_parse_opts(other, keep + sizeof tail - 1, token, &o, &r2) == 0);
    rb_compare(r, r2, paths, np);
    kr_robots_free(r2);
    free(other);
  }

  /* Fetch outcomes other than 2xx ignore the body. */
  static const int statuses[] = {404, 429, 503, 301, 0, -1, 418};
  int status = statuses[len % (sizeof statuses / sizeof statuses[0])];
  kr_robots_t *rs = NULL;
  FUZZ_CHECK(kr_robots_from_status(status, text, len, token, &o, &rs) == 0);
  kr_robots_policy_t pol = kr_robots_policy_for_status(status);
  FUZZ_CHECK(kr_robots_policy(rs) == pol && pol != KR_ROBOTS_PARSE);
  for (size_t i = 0; i < np; i++) {
    int a = kr_robots_allowed(rs, paths[i], &d);
    FUZZ_CHECK(a == (pol == KR_ROBOTS_ALLOW_ALL) || d.reason == KR_ROBOTS_ROBOTS_TXT);
  }
  kr_robots_free(rs);
  kr_robots_free(r);
  return 0;
}
