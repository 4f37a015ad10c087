/*
 * Unit tests for scope: each mode with accepts and rejects and the rule
 * named; SURT prefixes derived from seeds (http and https, www, no path,
 * redundant prefixes); hop-path rules (max-link-hops, max-trans-hops,
 * prerequisites, Heritrix's "N+" form and how paths are extended);
 * length, scheme, depth, the repeated-segment trap (checked against
 * Heritrix's own regex run by PCRE2 on random URLs), the calendar rule,
 * include/exclude patterns and per-host limits; and a timing loop over
 * 10,000 seeds that also counts allocations (none per decision).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/buf.h"
#include "kria/config.h"
#include "kria/error.h"
#include "kria/scope.h"
#include "kria/seeds.h"
#include "kria/url.h"
#include "helpers.h"

/* ---- allocation counter (not under ASan, which owns malloc) ---------- */

#if defined(__SANITIZE_ADDRESS__)
#define COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNT_ALLOCS 0
#endif
#endif
#ifndef COUNT_ALLOCS
#define COUNT_ALLOCS 1
#endif

#if COUNT_ALLOCS
/* Interpose the allocator for this test binary only, forwarding to
 * glibc's own entry points, to count calls during decisions. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static unsigned long allocs;
void *malloc(size_t n);
void *calloc(size_t a, size_t b);
void *realloc(void *p, size_t n);
void free(void *p);
void *malloc(size_t n) { allocs++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { allocs++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { allocs++; return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
#endif

/* ---- helpers -------------------------------------------------------- */

static kr_url_t *U(const char *s) {
  kr_url_t *u = NULL;
  assert_int_equal(kr_url_parse(s, strlen(s), NULL, &u), 0);
  return u;
}

static kr_scope_t *make(const kr_scope_opts_t *o, const char *const *seeds, unsigned flags) {
  kr_scope_t *s = NULL;
  char err[256] = "";
  int rc = kr_scope_new(o, &s, err, sizeof err);
  if (rc) fprintf(stderr, "kr_scope_new: %s\n", err);
  assert_int_equal(rc, 0);
  for (; seeds && *seeds; seeds++) {
    kr_url_t *u = U(*seeds);
    assert_int_equal(kr_scope_add_seed(s, u, flags), 0);
    kr_url_free(u);
  }
  return s;
}

static kr_scope_t *make_mode(kr_scope_mode_t mode, const char *const *seeds) {
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.mode = mode;
  return make(&o, seeds, 0);
}

/* Decide on url with hop path hops (via optional); returns "accept:rule"
 * or "reject:rule" in a static buffer. */
static const char *D3(kr_scope_t *s, const char *url, const char *hops, const char *via,
                      const kr_scope_limits_t *lim) {
  static char out[64];
  kr_url_t *u = U(url);
  kr_url_t *v = via ? U(via) : NULL;
  kr_scope_candidate_t c = {u, kr_slice_cstr(hops), v};
  kr_scope_rule_t r;
  int a = kr_scope_decide(s, &c, lim, &r);
  snprintf(out, sizeof out, "%s:%s", a ? "accept" : "reject", kr_scope_rule_name(s, r));
  kr_url_free(u);
  kr_url_free(v);
  return out;
}

static const char *D(kr_scope_t *s, const char *url, const char *hops) {
  return D3(s, url, hops, NULL, NULL);
}

/* ---- modes ---------------------------------------------------------- */

static void host_mode(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/start", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_HOST, seeds);
  assert_string_equal(D(s, "http://example.org/", ""), "accept:host");
  assert_string_equal(D(s, "http://example.org/any/where?x=1", "L"), "accept:host");
  assert_string_equal(D(s, "https://example.org/secure", "L"), "accept:host");
  assert_string_equal(D(s, "http://www.example.org/", "L"), "accept:host"); /* www twin */
  assert_string_equal(D(s, "http://sub.example.org/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://example.org:8080/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://other.org/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://example.org.evil.net/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://www2.example.org/", "L"), "reject:out-of-scope");
  assert_int_equal(kr_scope_prefix_count(s), 2);
  assert_string_equal(kr_scope_prefix(s, 0).p, "http://(org,example,)/");
  assert_string_equal(kr_scope_prefix(s, 1).p, "http://(org,example,www,)/");
  kr_scope_free(s);

  /* Without the www alias the www host is another host. */
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.www_alias = 0;
  static const char *const seeds2[] = {"http://www.example.org/", "http://127.0.0.1:8080/",
                                       NULL};
  s = make(&o, seeds2, 0);
  assert_string_equal(D(s, "http://www.example.org/a", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://127.0.0.1:8080/x", "L"), "accept:host");
  assert_string_equal(D(s, "http://127.0.0.1:8081/x", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://127.0.0.1/x", "L"), "reject:out-of-scope");
  kr_scope_free(s);
}

static void domain_mode(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://www.example.co.uk/x/y", "http://127.0.0.1:8080/",
                                      "http://localhost:9000/", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_DOMAIN, seeds);
  assert_string_equal(D(s, "http://example.co.uk/", "L"), "accept:domain");
  assert_string_equal(D(s, "http://a.b.example.co.uk/deep", "L"), "accept:domain");
  assert_string_equal(D(s, "https://shop.example.co.uk:8443/", "L"), "accept:domain");
  assert_string_equal(D(s, "http://other.co.uk/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://co.uk/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://notexample.co.uk/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://example.co.uk.evil.net/", "L"), "reject:out-of-scope");
  /* An address stands for itself, any port; a name without a
   * registrable domain for itself and its subdomains. */
  assert_string_equal(D(s, "http://127.0.0.1:9090/", "L"), "accept:domain");
  assert_string_equal(D(s, "http://127.0.0.2/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://a.localhost/", "L"), "accept:domain");
  assert_string_equal(D(s, "http://localhostx/", "L"), "reject:out-of-scope");
  assert_string_equal(kr_scope_prefix(s, 0).p, "http://(127.0.0.1,");
  assert_string_equal(kr_scope_prefix(s, 1).p, "http://(localhost,");
  assert_string_equal(kr_scope_prefix(s, 2).p, "http://(uk,co,example,");
  kr_scope_free(s);
}

static void path_mode(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/dir/page.html",
                                      "https://example.org/other/", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_PATH, seeds);
  assert_string_equal(D(s, "http://example.org/dir/", "L"), "accept:path");
  assert_string_equal(D(s, "http://example.org/dir/sub/x.html", "L"), "accept:path");
  assert_string_equal(D(s, "https://www.example.org/dir/a", "L"), "accept:path");
  assert_string_equal(D(s, "http://example.org/other/x", "L"), "accept:path");
  assert_string_equal(D(s, "http://example.org/dir", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://example.org/dirx/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://example.org/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://example.org/Dir/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://sub.example.org/dir/", "L"), "reject:out-of-scope");
  kr_scope_free(s);
}

static void surt_mode_from_seeds(void **state) {
  (void)state;
  /* Seeds through the seeds reader: the bare host has no path, so its
   * prefix is open to subdomains (Heritrix's rule). */
  const char *text = "example.org\n"
                     "https://www.example.com/dir/a.html\n"
                     "http://example.net/\n";
  kr_seeds_t seeds;
  kr_seeds_init(&seeds);
  assert_int_equal(kr_seeds_parse(&seeds, "seeds.txt", text, strlen(text), NULL), 0);
  assert_int_equal(seeds.n, 3);
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.mode = KR_SCOPE_SURT;
  static const char *const extra[] = {"HTTPS://(Net,CDN,)/Static/"};
  o.surt_prefixes = extra;
  o.n_surt_prefixes = 1;
  kr_scope_t *s = make(&o, NULL, 0);
  assert_int_equal(kr_scope_add_seeds(s, &seeds), 0);
  kr_seeds_free(&seeds);

  static const char *const want[] = {
      "http://(com,example,)/dir/", "http://(com,example,www,)/dir/",
      "http://(net,cdn,)/Static/",  "http://(net,example,)/",
      "http://(net,example,www,)/", "http://(org,example,",
  };
  assert_int_equal(kr_scope_prefix_count(s), 6);
  for (size_t i = 0; i < 6; i++) assert_string_equal(kr_scope_prefix(s, i).p, want[i]);

  assert_string_equal(D(s, "http://example.org/", "L"), "accept:surt");
  assert_string_equal(D(s, "https://deep.sub.example.org/x", "L"), "accept:surt");
  assert_string_equal(D(s, "http://example.org:8080/", "L"), "accept:surt");
  assert_string_equal(D(s, "http://www.example.com/dir/b", "L"), "accept:surt");
  assert_string_equal(D(s, "http://example.com/dir/b", "L"), "accept:surt");
  assert_string_equal(D(s, "https://www.example.com/dir/", "L"), "accept:surt");
  assert_string_equal(D(s, "http://www.example.com/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://sub.example.net/", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "https://cdn.net/Static/x.js", "L"), "accept:surt");
  assert_string_equal(D(s, "https://cdn.net/static/x.js", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "http://example.organic/", "L"), "reject:out-of-scope");
  kr_scope_free(s);
}

static void surt_prefix_set(void **state) {
  (void)state;
  kr_scope_t *s = make_mode(KR_SCOPE_SURT, NULL);
  /* Nothing in scope without prefixes. */
  assert_string_equal(D(s, "http://example.org/", "L"), "reject:out-of-scope");
  const char *p[] = {"http://(org,example,www,)/a/", "http://(org,example,",
                     "http://(org,example,)/", "http://(com,", "http://(org,example,www,)/"};
  for (size_t i = 0; i < 5; i++) assert_int_equal(kr_scope_add_surt_prefix(s, p[i], strlen(p[i])), 0);
  assert_int_equal(kr_scope_add_surt_prefix(s, "ftp://(org,", 11), KR_EINVAL);
  assert_int_equal(kr_scope_add_surt_prefix(s, "org,example)/", 13), KR_EINVAL);
  /* Redundant prefixes are dropped. */
  assert_int_equal(kr_scope_prefix_count(s), 2);
  assert_string_equal(kr_scope_prefix(s, 0).p, "http://(com,");
  assert_string_equal(kr_scope_prefix(s, 1).p, "http://(org,example,");
  assert_string_equal(D(s, "http://anything.com/", "L"), "accept:surt");
  assert_string_equal(D(s, "http://www.example.org/b", "L"), "accept:surt");
  assert_string_equal(D(s, "http://example.com.au/", "L"), "reject:out-of-scope");
  /* Adding after decisions re-sorts lazily. */
  assert_int_equal(kr_scope_add_surt_prefix(s, "http://(au,", 11), 0);
  assert_string_equal(D(s, "http://example.com.au/", "L"), "accept:surt");
  kr_scope_free(s);

  /* A bad extra prefix or pattern in the options is a config error. */
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  static const char *const bad[] = {"example.org"};
  o.surt_prefixes = bad;
  o.n_surt_prefixes = 1;
  char err[256] = "";
  assert_int_equal(kr_scope_new(&o, &s, err, sizeof err), KR_ECONFIG);
  assert_null(s);
  assert_non_null(strstr(err, "\"example.org\""));
}

static void candidate_surt_form(void **state) {
  (void)state;
  static const struct { const char *in, *out; } v[] = {
      {"https://www.Example.org:8443/a/b?c=D#frag", "http://(org,example,www,:8443)/a/b?c=D"},
      {"http://example.org", "http://(org,example,)/"},
      {"http://127.0.0.1:80/x", "http://(127.0.0.1,)/x"},
      {"http://[::1]:8080/", "http://([::1],:8080)/"},
      {"https://example.org:443/", "http://(org,example,)/"},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    kr_url_t *u = U(v[i].in);
    kr_buf_t b;
    kr_buf_init(&b, 1024);
    assert_int_equal(kr_scope_surt(u, &b), 0);
    assert_string_equal(b.data, v[i].out);
    kr_buf_free(&b);
    kr_url_free(u);
  }
  kr_url_t *u = U("ftp://example.org/");
  kr_buf_t b;
  kr_buf_init(&b, 1024);
  assert_int_equal(kr_scope_surt(u, &b), KR_EURL);
  kr_buf_free(&b);
  kr_url_free(u);
  assert_int_equal(kr_scope_mode_parse("domain"), KR_SCOPE_DOMAIN);
  assert_int_equal(kr_scope_mode_parse("nope"), -1);
}

/* ---- hop paths ------------------------------------------------------ */

static void link_hops(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.max_link_hops = 4;
  kr_scope_t *s = make(&o, seeds, 0);
  assert_string_equal(D(s, "http://example.org/a", "LLLL"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a", "LLLLL"), "reject:hops");
  assert_string_equal(D(s, "http://example.org/a", "LELELEL"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a", "3+LL"), "reject:hops");
  assert_string_equal(D(s, "http://example.org/a", "2+LL"), "accept:host");
  kr_scope_free(s);

  kr_scope_opts_init(&o); /* defaults: 20 */
  s = make(&o, seeds, 0);
  assert_string_equal(D(s, "http://example.org/a", "LLLLLLLLLLLLLLLLLLLL"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a", "LLLLLLLLLLLLLLLLLLLLL"), "reject:hops");
  assert_string_equal(D(s, "http://example.org/a", "30+LL"), "reject:hops");
  kr_scope_free(s);

  o.max_link_hops = 0; /* seeds only */
  s = make(&o, seeds, 0);
  assert_string_equal(D(s, "http://example.org/", ""), "accept:host");
  assert_string_equal(D(s, "http://example.org/a", "L"), "reject:hops");
  assert_string_equal(D(s, "http://example.org/a.css", "E"), "accept:host");
  kr_scope_free(s);

  assert_int_equal(kr_scope_link_hops(kr_slice_cstr("LLELRL")), 4);
  assert_int_equal(kr_scope_link_hops(kr_slice_cstr("17+LLE")), 19);
  assert_int_equal(kr_scope_trans_hops(kr_slice_cstr("LLERX")), 3);
  assert_int_equal(kr_scope_trans_hops(kr_slice_cstr("LL")), 0);
  assert_int_equal(kr_scope_trans_hops(kr_slice_cstr("5+EE")), 2);
  assert_int_equal(kr_scope_trans_hops(kr_slice_cstr("")), 0);
}

/* The scope's defaults are the config schema's: kria crawl (which sets
 * every field from the config) and the scope's other users (tools, tests,
 * fuzzers) must decide alike. */
static void defaults_match_schema(void **state) {
  (void)state;
  kr_config_t *cfg = kr_config_new();
  assert_int_equal(kr_config_finish(cfg), 0);
  const kr_config_view_t *g = kr_config_global(cfg);
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  assert_int_equal(o.max_url_len, kr_config_int(g, KR_CFG_SCOPE_MAX_URL_LENGTH));
  assert_int_equal(o.max_link_hops, kr_config_int(g, KR_CFG_SCOPE_MAX_LINK_HOPS));
  assert_int_equal(o.max_trans_hops, kr_config_int(g, KR_CFG_SCOPE_MAX_TRANS_HOPS));
  assert_int_equal(o.max_path_depth, kr_config_int(g, KR_CFG_SCOPE_MAX_PATH_DEPTH));
  assert_int_equal(o.max_repeated_segments,
                   kr_config_int(g, KR_CFG_SCOPE_MAX_REPEATED_SEGMENTS));
  assert_int_equal(o.mode, KR_SCOPE_HOST);
  assert_int_equal(kr_config_enum(g, KR_CFG_SCOPE_MODE), KR_CFG_SCOPE_HOST);
  kr_config_free(cfg);
}

static void trans_hops(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_HOST, seeds);
  /* An embed of an in-scope page on a CDN host is accepted. */
  assert_string_equal(D(s, "http://cdn.other.net/img.png", "LLLE"), "accept:trans-hops");
  assert_string_equal(D(s, "http://cdn.other.net/a.css", "LLLER"), "accept:trans-hops");
  /* max-trans-hops is 2 by default (the schema's, as Heritrix's) */
  assert_string_equal(D(s, "http://cdn.other.net/b", "LLLERX"), "reject:trans-hops");
  assert_string_equal(D(s, "http://cdn.other.net/c", "LLLEERX"), "reject:trans-hops");
  assert_string_equal(D(s, "http://elsewhere.net/", "LLLL"), "reject:out-of-scope");
  /* A redirect from a seed to another host. */
  assert_string_equal(D(s, "https://www.example.com/", "R"), "accept:trans-hops");
  /* Links from there are out again. */
  assert_string_equal(D(s, "https://www.example.com/next", "RL"), "reject:out-of-scope");
  /* Prerequisites (robots.txt of the CDN) are always accepted. */
  assert_string_equal(D(s, "http://cdn.other.net/robots.txt", "LLLEP"), "accept:prerequisite");
  kr_scope_free(s);

  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.max_trans_hops = 0;
  s = make(&o, seeds, 0);
  assert_string_equal(D(s, "http://cdn.other.net/img.png", "LLLE"), "reject:trans-hops");
  assert_string_equal(D(s, "http://example.org/img.png", "LLLE"), "accept:host");
  kr_scope_free(s);
}

static void via_rule(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.also_check_via = 1;
  kr_scope_t *s = make(&o, seeds, 0);
  assert_string_equal(D3(s, "http://other.net/", "LL", "http://example.org/p", NULL),
                      "accept:via");
  assert_string_equal(D3(s, "http://other.net/", "LL", "http://third.net/p", NULL),
                      "reject:out-of-scope");
  assert_string_equal(D3(s, "http://other.net/", "LL", NULL, NULL), "reject:out-of-scope");
  kr_scope_free(s);
  s = make_mode(KR_SCOPE_HOST, seeds); /* off by default */
  assert_string_equal(D3(s, "http://other.net/", "LL", "http://example.org/p", NULL),
                      "reject:out-of-scope");
  kr_scope_free(s);
}

static void hops_extend_like_heritrix(void **state) {
  (void)state;
  char l49[50], l50[51], l99[60];
  memset(l49, 'L', 49), l49[49] = 0;
  memset(l50, 'L', 50), l50[50] = 0;
  snprintf(l99, sizeof l99, "99+%s", l50);
  static const struct { const char *from; char hop; const char *want; } v[] = {
      {"", 'L', "L"},
      {"L", 'X', "LX"},
  };
  kr_buf_t b;
  kr_buf_init(&b, 256);
  for (size_t i = 0; i < 2; i++) {
    kr_buf_reset(&b);
    assert_int_equal(kr_scope_hops_extend(kr_slice_cstr(v[i].from), v[i].hop, &b), 0);
    assert_string_equal(b.data, v[i].want);
  }
  char want[80];
  kr_buf_reset(&b);
  assert_int_equal(kr_scope_hops_extend(kr_slice_cstr(l49), 'X', &b), 0);
  snprintf(want, sizeof want, "%sX", l49);
  assert_string_equal(b.data, want);
  kr_buf_reset(&b);
  assert_int_equal(kr_scope_hops_extend(kr_slice_cstr(l50), 'X', &b), 0);
  snprintf(want, sizeof want, "1+%sX", l49);
  assert_string_equal(b.data, want);
  kr_buf_reset(&b);
  assert_int_equal(kr_scope_hops_extend(kr_slice_cstr(l99), 'X', &b), 0);
  snprintf(want, sizeof want, "100+%sX", l49);
  assert_string_equal(b.data, want);
  kr_buf_reset(&b);
  assert_int_equal(kr_scope_hops_extend(kr_slice_cstr("L"), 'Q', &b), KR_EINVAL);
  assert_int_equal(kr_scope_hops_extend(kr_slice_cstr("L"), '\0', &b), KR_EINVAL);
  kr_buf_free(&b);
}

/* ---- URL rules ------------------------------------------------------ */

static void length_and_scheme(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_HOST, seeds);
  char url[2200]; /* max-url-length is 2083 by default */
  strcpy(url, "http://example.org/");
  size_t n = strlen(url);
  memset(url + n, 'a', 2083 - n);
  url[2083] = '\0';
  assert_string_equal(D(s, url, "L"), "accept:host");
  strcat(url, "#a-fragment-is-not-counted");
  assert_string_equal(D(s, url, "L"), "accept:host");
  url[2083] = 'b', url[2084] = '\0';
  assert_string_equal(D(s, url, "L"), "reject:length");
  assert_string_equal(D(s, "ftp://example.org/", "L"), "reject:scheme");
  assert_string_equal(D(s, "mailto:a@example.org", "L"), "reject:scheme");
  assert_string_equal(D(s, "wss://example.org/", "L"), "reject:scheme");
  /* Even a prerequisite must be http(s) and short enough. */
  assert_string_equal(D(s, "ftp://example.org/", "P"), "reject:scheme");
  kr_scope_free(s);

  kr_url_t *ftp = U("ftp://example.org/");
  kr_scope_t *s2 = make_mode(KR_SCOPE_HOST, NULL);
  assert_int_equal(kr_scope_add_seed(s2, ftp, 0), KR_ESCHEME);
  kr_url_free(ftp);
  kr_scope_free(s2);
}

static void path_depth(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_HOST, seeds);
  char url[256] = "http://example.org";
  for (int i = 1; i <= 20; i++) {
    char seg[8];
    snprintf(seg, sizeof seg, "/d%d", i);
    strcat(url, seg);
  }
  assert_string_equal(D(s, url, "L"), "accept:host");   /* 20 '/' */
  strcat(url, "/");
  assert_string_equal(D(s, url, "L"), "reject:depth");  /* 21 */
  /* Slashes in the query do not count. */
  assert_string_equal(D(s, "http://example.org/a?x=/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21",
                        "L"), "accept:host");
  kr_scope_free(s);
}

static void trap_rule(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_HOST, seeds);
  assert_string_equal(D(s, "http://example.org/a/b/a/b/a/b/", "L"), "reject:trap");
  assert_string_equal(D(s, "http://example.org/x/a/b/a/b/a/b/c.html", "L"), "reject:trap");
  assert_string_equal(D(s, "http://example.org/a/b/a/b/c", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a/a/", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a/a/a/", "L"), "reject:trap");
  assert_string_equal(D(s, "http://example.org/a/a/a", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a/aa/a/", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a///", "L"), "accept:host"); /* "/" + 2 x "/" */
  assert_string_equal(D(s, "http://example.org/a////", "L"), "reject:trap");
  assert_string_equal(D(s, "http://example.org/cal/2024/cal/2024/cal/2024/", "L"), "reject:trap");
  kr_scope_free(s);

  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.max_repeated_segments = 0; /* off */
  s = make(&o, seeds, 0);
  assert_string_equal(D(s, "http://example.org/a/a/a/a/", "L"), "accept:host");
  kr_scope_free(s);
  o.max_repeated_segments = 4;
  s = make(&o, seeds, 0);
  assert_string_equal(D(s, "http://example.org/a/a/a/a/a/", "L"), "reject:trap");
  assert_string_equal(D(s, "http://example.org/a/a/a/a/", "L"), "accept:host");
  kr_scope_free(s);
}

/* Heritrix's own regex, run by PCRE2, on random URLs over a tiny
 * alphabet must agree with the linear scan. */
static void trap_matches_heritrix_regex(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://h/", NULL};
  for (unsigned rep = 1; rep <= 3; rep++) {
    char pat[64];
    snprintf(pat, sizeof pat, ".*?/(.*?/)\\1{%u,}.*", rep);
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                   PCRE2_ANCHORED | PCRE2_ENDANCHORED, &ec, &eo, NULL);
    assert_non_null(re);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    kr_scope_opts_t o;
    kr_scope_opts_init(&o);
    o.max_repeated_segments = rep;
    o.max_path_depth = 0;
    kr_scope_t *s = make(&o, seeds, 0);
    unsigned seed = 12345 + rep, traps = 0;
    for (int i = 0; i < 20000; i++) {
      char url[64] = "http://h/";
      size_t n = strlen(url);
      size_t len = 1 + (seed = seed * 1103515245u + 12345u) % 24;
      for (size_t k = 0; k < len; k++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = (seed >> 16) % 5;
        url[n++] = r < 2 ? '/' : r < 4 ? 'a' : 'b';
      }
      url[n] = '\0';
      kr_url_t *u = U(url);
      kr_slice_t h = kr_url_href_nofrag(u);
      int want = pcre2_match(re, (PCRE2_SPTR)h.p, h.n, 0, 0, md, NULL) >= 0;
      kr_scope_candidate_t c = {u, kr_slice_cstr("L"), NULL};
      kr_scope_rule_t rule;
      int acc = kr_scope_decide(s, &c, NULL, &rule);
      int got = !acc && rule == KR_SCOPE_R_TRAP;
      if (want != got) fprintf(stderr, "rep %u: %s: regex %d, scope %d\n", rep, h.p, want, got);
      assert_int_equal(want, got);
      traps += got;
      kr_url_free(u);
    }
    assert_true(traps > 1000 && traps < 19000); /* both outcomes exercised */
    kr_scope_free(s);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
  }
}

static void trap_long_url_bounded(void **state) {
  (void)state;
  /* 8 KiB of ~1000 distinct segments, no depth limit: the scan compares
   * each segment with at most KR_SCOPE_TRAP_MAX_PERIOD earlier ones, so
   * the work is bounded by construction; this only guards against a
   * gross regression (and crashes on long input). */
  static const char *const seeds[] = {"http://h/", NULL};
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.max_path_depth = 0;
  o.max_url_len = 0;
  kr_scope_t *s = make(&o, seeds, 0);
  char *url = malloc(9000);
  strcpy(url, "http://h/");
  size_t n = strlen(url);
  unsigned seed = 7;
  while (n < 8000) { /* distinct-ish segments: no early exit */
    seed = seed * 1103515245u + 12345u;
    n += (size_t)sprintf(url + n, "%x/", seed >> 8);
  }
  url[n] = '\0';
  kr_url_t *u = U(url);
  kr_scope_candidate_t c = {u, kr_slice_cstr("L"), NULL};
  kr_scope_rule_t rule;
  double t0 = th_now_s();
  for (int i = 0; i < 100; i++) assert_int_equal(kr_scope_decide(s, &c, NULL, &rule), 1);
  double per = (th_now_s() - t0) / 100;
  printf("# trap scan of an 8 KiB URL of ~1000 segments: %.1f us\n", per * 1e6);
  assert_true(per < 0.05);
  kr_url_free(u);
  free(url);
  kr_scope_free(s);
}

static void calendar_rule(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_HOST, seeds);
  assert_string_equal(D(s, "http://example.org/cal/2999/01/", "L"), "accept:host"); /* off */
  kr_scope_free(s);
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.calendar_min_year = 1990;
  o.calendar_max_year = 2030;
  s = make(&o, seeds, 0);
  assert_string_equal(D(s, "http://example.org/cal/2031/01/", "L"), "reject:calendar");
  assert_string_equal(D(s, "http://example.org/cal?year=2045&month=1", "L"), "reject:calendar");
  assert_string_equal(D(s, "http://example.org/events/1850-01-01", "L"), "reject:calendar");
  assert_string_equal(D(s, "http://example.org/cal/2026/11/", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/item/123456", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/item/x2099", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/v/3000/", "L"), "accept:host");
  kr_scope_free(s);
}

static void include_exclude(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  static const char *const inc[] = {"^https?://cdn\\.net/", "/always/"};
  static const char *const exc[] = {"\\.pdf$", "^https?://cdn\\.net/private/"};
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.include = inc, o.n_include = 2;
  o.exclude = exc, o.n_exclude = 2;
  kr_scope_t *s = make(&o, seeds, 0);
  assert_string_equal(D(s, "http://example.org/a.html", "L"), "accept:host");
  assert_string_equal(D(s, "http://example.org/a.pdf", "L"), "reject:exclude");
  assert_string_equal(D(s, "https://cdn.net/x.js", "LLL"), "accept:include");
  assert_string_equal(D(s, "https://other.net/always/x", "L"), "accept:include");
  assert_string_equal(D(s, "https://cdn.net/private/x", "L"), "reject:exclude"); /* wins */
  assert_string_equal(D(s, "https://cdn.net/doc.pdf", "L"), "reject:exclude");
  assert_string_equal(D(s, "https://cdn.net/img.png", "LE"), "accept:trans-hops");
  assert_string_equal(D(s, "https://other.net/x", "L"), "reject:out-of-scope");
  assert_string_equal(D(s, "https://other.net/x", "LEEEE"), "reject:trans-hops");
  /* Hard limits hold for included URLs too. */
  assert_string_equal(D(s, "https://cdn.net/a/a/a/", "L"), "reject:trap");
  kr_scope_free(s);

  /* A bad pattern names itself. */
  static const char *const badp[] = {"ok", "(unclosed"};
  kr_scope_opts_init(&o);
  o.exclude = badp, o.n_exclude = 2;
  char err[256] = "";
  assert_int_equal(kr_scope_new(&o, &s, err, sizeof err), KR_ECONFIG);
  assert_non_null(strstr(err, "exclude pattern 2 \"(unclosed\""));

  /* Catastrophic patterns (compiled elsewhere, as per-host lists) hit
   * the match limit: as an include it does not match, as an exclude it
   * fails closed. */
  int ec;
  PCRE2_SIZE eo;
  pcre2_code *ri = pcre2_compile((PCRE2_SPTR) "^http://other\\.net/(a+)+$",
                                 PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
  pcre2_code *rx = pcre2_compile((PCRE2_SPTR) "^http://example\\.org/(a+)+$",
                                 PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
  assert_non_null(ri);
  assert_non_null(rx);
  s = make_mode(KR_SCOPE_HOST, seeds);
  char other[200], mine[200], as[64];
  memset(as, 'a', 40), as[40] = '\0';
  snprintf(other, sizeof other, "http://other.net/%sb", as);
  snprintf(mine, sizeof mine, "http://example.org/%sb", as);
  const pcre2_code *li[] = {ri}, *lx[] = {rx};
  kr_scope_limits_t lim = {2048, 20, 2, li, 1, NULL, 0};
  double t0 = th_now_s();
  assert_string_equal(D3(s, other, "L", NULL, &lim), "reject:out-of-scope");
  snprintf(other, sizeof other, "http://other.net/%s", as);
  assert_string_equal(D3(s, other, "L", NULL, &lim), "accept:include"); /* it does work */
  lim.include = NULL, lim.n_include = 0;
  lim.exclude = lx, lim.n_exclude = 1;
  assert_string_equal(D3(s, mine, "L", NULL, &lim), "reject:exclude");
  assert_string_equal(D3(s, "http://example.org/b", "L", NULL, &lim), "accept:host");
  assert_true(th_now_s() - t0 < 2.0);
  pcre2_code_free(ri);
  pcre2_code_free(rx);
  kr_scope_free(s);
}

static void per_host_limits(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  kr_scope_t *s = make_mode(KR_SCOPE_HOST, seeds);
  kr_scope_limits_t lim = {40, 2, 1, NULL, 0, NULL, 0};
  assert_string_equal(D3(s, "http://example.org/a/b", "L", NULL, &lim), "accept:host");
  assert_string_equal(D3(s, "http://example.org/a/b/", "L", NULL, &lim), "reject:depth");
  assert_string_equal(D3(s, "http://example.org/aaaaaaaaaaaaaaaaaaaaaaaaaaa", "L", NULL, &lim),
                      "reject:length");
  lim.max_path_depth = 0;
  assert_string_equal(D3(s, "http://example.org/a/a/", "L", NULL, &lim), "reject:trap");
  assert_string_equal(D(s, "http://example.org/a/a/", "L"), "accept:host");
  kr_scope_free(s);
}

/* ---- memo ----------------------------------------------------------- */

/* kr_scope_decide_memo gives what kr_scope_decide gives, for every mix
 * of hops, via and limits one memo sees in turn, and after prefixes are
 * added (the memo's generation) or the limits change (its limits). */
static void memo_matches_plain_decisions(void **state) {
  (void)state;
  static const char *const seeds[] = {"http://example.org/", NULL};
  static const char *const inc[] = {"^https?://cdn\\.net/", "/always/"};
  static const char *const exc[] = {"\\.pdf$"};
  kr_scope_opts_t o;
  kr_scope_opts_init(&o);
  o.include = inc, o.n_include = 2;
  o.exclude = exc, o.n_exclude = 1;
  o.also_check_via = 1;
  o.calendar_min_year = 1990;
  o.calendar_max_year = 2030;
  kr_scope_t *s = make(&o, seeds, 0);
  static const char *const urls[] = {
      "http://example.org/a.html", "http://example.org/a.pdf", "https://cdn.net/x.js",
      "https://other.net/always/x", "https://other.net/x", "http://example.org/a/a/a/",
      "http://example.org/1/2/3/4/5/6", "http://example.org/cal/1850/", "http://late.net/",
      "http://www.example.org/b", "https://example.org/c"};
  static const char *const hops[] = {"", "L", "LE", "LEE", "LEEE", "LLLLLLLLLLLLLLLLLLLLL",
                                     "LP", "R", "E"};
  static const char *const vias[] = {NULL, "http://example.org/", "http://elsewhere.net/"};
  kr_scope_limits_t lim = {40, 3, 1, NULL, 0, NULL, 0};
  const kr_scope_limits_t *limits[] = {NULL, &lim};
  int n = 0;
  for (int round = 0; round < 2; round++) {
    if (round == 1) { /* a new prefix: memos made before must not hold */
      kr_url_t *u = U("http://other.net/");
      assert_int_equal(kr_scope_add_seed(s, u, 0), 0);
      kr_url_free(u);
    }
    for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
      static kr_scope_memo_t memos[16];
      kr_scope_memo_t *m = &memos[i];
      if (round == 0) *m = (kr_scope_memo_t){0};
      kr_url_t *u = U(urls[i]);
      /* one limits at a time, so the memo is reused across hops and vias;
       * round 1 starts with the limits round 0 ended with, so only the
       * generation tells the memo that the prefixes changed */
      for (size_t k = 0; k < 2; k++)
        for (size_t h = 0; h < sizeof hops / sizeof *hops; h++)
          for (size_t v = 0; v < sizeof vias / sizeof *vias; v++) {
            size_t l = round == 0 ? k : 1 - k;
            kr_url_t *via = vias[v] ? U(vias[v]) : NULL;
            kr_scope_candidate_t c = {u, kr_slice_cstr(hops[h]), via};
            kr_scope_rule_t r1, r2;
            int a1 = kr_scope_decide(s, &c, limits[l], &r1);
            int a2 = kr_scope_decide_memo(s, &c, limits[l], &r2, m);
            if (a1 != a2 || r1 != r2)
              fail_msg("%s hops \"%s\" via %s limits %zu round %d: %d %s / memo %d %s", urls[i],
                       hops[h], vias[v] ? vias[v] : "-", l, round, a1, kr_scope_rule_name(s, r1),
                       a2, kr_scope_rule_name(s, r2));
            n++;
            kr_url_free(via);
          }
      kr_url_free(u);
    }
  }
  /* the seed added in round 1 changed some answers, and the memo saw it */
  assert_string_equal(D(s, "https://other.net/x", "L"), "accept:host");
  kr_scope_memo_t m = {0};
  kr_url_t *u = U("http://example.org/a/b/c/d");
  kr_scope_candidate_t c = {u, kr_slice_cstr("L"), NULL};
  kr_scope_rule_t r;
  assert_int_equal(kr_scope_decide_memo(s, &c, NULL, &r, &m), 1);
  assert_int_equal(kr_scope_decide_memo(s, &c, &lim, &r, &m), 0); /* other limits */
  assert_int_equal(r, KR_SCOPE_R_DEPTH);
  lim.max_path_depth = 0; /* the same limits changed in place: a new memo is needed */
  m = (kr_scope_memo_t){0};
  assert_int_equal(kr_scope_decide_memo(s, &c, &lim, &r, &m), 1);
  kr_url_free(u);
  printf("# memo: %d decisions compared\n", n);
  kr_scope_free(s);
}

/* ---- speed ---------------------------------------------------------- */

static void timing_10000_seeds(void **state) {
  (void)state;
  for (int mode = KR_SCOPE_HOST; mode <= KR_SCOPE_SURT; mode++) {
    kr_scope_opts_t o;
    kr_scope_opts_init(&o);
    o.mode = (kr_scope_mode_t)mode;
    kr_scope_t *s = make(&o, NULL, 0);
    for (int i = 0; i < 10000; i++) {
      char seed[64];
      snprintf(seed, sizeof seed, "http://www.site%d.example%d.com/dir%d/", i, i % 97, i % 7);
      kr_url_t *u = U(seed);
      assert_int_equal(kr_scope_add_seed(s, u, 0), 0);
      kr_url_free(u);
    }
    kr_scope_finish(s);
    /* A page's 30 links: mostly its own site, some off-site, embeds. */
    kr_url_t *links[30];
    const char *hops[30];
    for (int i = 0; i < 30; i++) {
      char url[128];
      if (i % 5 == 4)
        snprintf(url, sizeof url, "http://tracker%d.ads.net/pixel.gif?id=%d", i, i);
      else
        snprintf(url, sizeof url, "https://www.site%d.example%d.com/dir%d/page/%d.html", 4242,
                 4242 % 97, 4242 % 7, i);
      links[i] = U(url);
      hops[i] = (i % 3 == 0) ? "LLLE" : "LLLL";
    }
    unsigned long accepted = 0;
    const int rounds = 20000;
#if COUNT_ALLOCS
    unsigned long a0 = allocs;
    kr_url_free(U("http://the.counter.works/")); /* it does count */
    assert_true(allocs > a0);
    a0 = allocs;
#endif
    double t0 = th_now_s();
    for (int r = 0; r < rounds; r++) {
      for (int i = 0; i < 30; i++) {
        kr_scope_candidate_t c = {links[i], kr_slice_cstr(hops[i]), NULL};
        accepted += (unsigned long)kr_scope_decide(s, &c, NULL, NULL);
      }
    }
    double dt = th_now_s() - t0;
#if COUNT_ALLOCS
    assert_int_equal(allocs - a0, 0); /* no allocation per decision */
#endif
    printf("# scope %s mode, 10,000 seeds (%zu prefixes): %.0f ns/decision\n",
           kr_scope_mode_name((kr_scope_mode_t)mode), kr_scope_prefix_count(s),
           dt * 1e9 / (rounds * 30.0));
    /* 24 in-scope + 2 trans-hop embeds of the 6 off-site links per page */
    assert_int_equal(accepted, (unsigned long)rounds * 26);
    for (int i = 0; i < 30; i++) kr_url_free(links[i]);
    kr_scope_free(s);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(host_mode),
      cmocka_unit_test(domain_mode),
      cmocka_unit_test(path_mode),
      cmocka_unit_test(surt_mode_from_seeds),
      cmocka_unit_test(surt_prefix_set),
      cmocka_unit_test(candidate_surt_form),
      cmocka_unit_test(link_hops),
      cmocka_unit_test(trans_hops),
      cmocka_unit_test(via_rule),
      cmocka_unit_test(hops_extend_like_heritrix),
      cmocka_unit_test(length_and_scheme),
      cmocka_unit_test(path_depth),
      cmocka_unit_test(trap_rule),
      cmocka_unit_test(trap_matches_heritrix_regex),
      cmocka_unit_test(trap_long_url_bounded),
      cmocka_unit_test(calendar_rule),
      cmocka_unit_test(defaults_match_schema),
      cmocka_unit_test(include_exclude),
      cmocka_unit_test(per_host_limits),
      cmocka_unit_test(memo_matches_plain_decisions),
      cmocka_unit_test(timing_10000_seeds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
