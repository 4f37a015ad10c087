/*
 * libFuzzer harness for the url module: WHATWG parse, resolve against a
 * base, serialize, canonicalize (flags and PCRE2 strip rules) and SURT.
 * The first input byte picks the base (bits 0-1), the canonicalization
 * flags (bits 2-5) and the rule set (bits 6-7); the rest is the URL.
 *
 * Invariants, beyond ASan/UBSan:
 *  - a parsed URL's href is NUL-terminated, within the documented bound
 *    (3 * input + base href + 64), and every component slice lies inside
 *    it; scheme is its prefix, "#fragment" its suffix, href_nofrag plus
 *    hash is the href, a special URL's path starts with '/';
 *  - serialization round-trips: parse(href(u)) succeeds with the same
 *    href, host type and port, and kr_url_dup gives the same href;
 *  - canon is idempotent: canon(parse(canon(u))) == canon(u), and
 *    kr_url_canon_str gives the same bytes as parse + kr_url_canon;
 *  - kr_url_base_use (the link cache's key): a base that agrees with the
 *    base on the prefix it names resolves the input to the same URL (or
 *    fails alike), checked against an http base with its tail (path,
 *    query, fragment, or all but nothing) swapped;
 *  - SURT is deterministic and kr_url_surt(u) == kr_surt(href(u));
 *    kr_surt and kr_surt_canon_url never fail other than with KR_EURL or
 *    KR_ETOOBIG, also on the raw (unparsed) input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kria/error.h"
#include "kria/url.h"

static const char *const url_bases[4] = {
    NULL,
    "http://user:pw@example.org:8080/a/b/c;p?q=1&r#f",
    "file:///C:/dir/x.html",
    "sc://h%20x/p/q?x",
};
static const char *const url_rulesets[4] = {NULL, "session-ids", "heritrix-default", NULL};
static kr_url_t *url_base_urls[4];
static kr_url_canon_opts_t *url_opts[16][4];

static int url_slice_inside(const kr_url_t *u, kr_slice_t s) {
  const char *h = kr_url_href(u);
  size_t n = kr_url_href_len(u);
  if (!s.p) return s.n == 0;
  return s.p >= h && s.p + s.n <= h + n;
}

static kr_url_canon_opts_t *url_get_opts(unsigned flags, unsigned rules) {
  kr_url_canon_opts_t **slot = &url_opts[flags][rules];
  if (*slot) return *slot;
  kr_url_canon_opts_t *o = kr_url_canon_opts_new(flags);
  if (url_rulesets[rules]) {
    FUZZ_CHECK(kr_url_canon_opts_add_ruleset(o, url_rulesets[rules]) == 0);
  } else if (rules == 3) {
    FUZZ_CHECK(kr_url_canon_opts_add_rule(o, "^(.*?)[?&]utm_[a-z]+=[^&]*(.*)$", NULL, NULL, 0) ==
               0);
    FUZZ_CHECK(kr_url_canon_opts_add_rule(o, "^(https?://[^/]*)/+(.*)$", "$1/$2", NULL, 0) == 0);
  }
  *slot = o;
  return o;
}

static void url_check_parsed(const kr_url_t *u, size_t in_len, const kr_url_t *base) {
  const char *h = kr_url_href(u);
  size_t n = kr_url_href_len(u);
  FUZZ_CHECK(h && strlen(h) == n);
  FUZZ_CHECK(n <= 3 * in_len + (base ? kr_url_href_len(base) : 0) + 64);
  kr_slice_t parts[] = {
      kr_url_scheme(u),   kr_url_username(u),        kr_url_password(u),
      kr_url_hostname(u), kr_url_host(u),            kr_url_pathname(u),
      kr_url_query(u),    kr_url_search(u),          kr_url_fragment(u),
      kr_url_hash(u),     kr_url_href_nofrag(u),
  };
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    FUZZ_CHECK(url_slice_inside(u, parts[i]));
  /* Origin-form is never empty ("/" for a URL without a path). */
  FUZZ_CHECK(kr_url_request_target(u).n > 0);
  kr_slice_t scheme = kr_url_scheme(u);
  FUZZ_CHECK(scheme.n > 0 && scheme.p == h && h[scheme.n] == ':');
  kr_slice_t nofrag = kr_url_href_nofrag(u), hash = kr_url_hash(u);
  FUZZ_CHECK(nofrag.p == h);
  if (kr_url_fragment(u).p) {
    FUZZ_CHECK(h[nofrag.n] == '#');
    FUZZ_CHECK(nofrag.n + 1 + kr_url_fragment(u).n == n);
    if (hash.n) FUZZ_CHECK(nofrag.n + hash.n == n);
  } else {
    FUZZ_CHECK(nofrag.n == n && hash.n == 0);
  }
  if (kr_url_is_special(u)) {
    kr_slice_t path = kr_url_pathname(u);
    FUZZ_CHECK(path.n >= 1 && path.p[0] == '/');
    FUZZ_CHECK(!kr_url_has_opaque_path(u));
  }
  int port = kr_url_port(u);
  FUZZ_CHECK(port >= -1 && port <= 65535);
  int eport = kr_url_effective_port(u);
  FUZZ_CHECK(port < 0 || eport == port);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  FUZZ_CHECK(kr_url_origin(u, &b) == 0 && b.len > 0);
  kr_buf_free(&b);
  if (kr_url_host_type(u) == KR_URL_HOST_DOMAIN) {
    kr_slice_t host = kr_url_hostname(u), part;
    if (kr_url_registrable_domain(host, &part) == 0)
      FUZZ_CHECK(part.n <= host.n && part.p + part.n == host.p + host.n);
    if (kr_url_public_suffix(host, &part) == 0)
      FUZZ_CHECK(part.n <= host.n && part.p + part.n == host.p + host.n);
  }

  /* parse(href(u)) == u */
  kr_url_t *again = NULL;
  FUZZ_CHECK(kr_url_parse_ex(h, n, NULL, n + 1, &again) == 0);
  FUZZ_CHECK(kr_url_href_len(again) == n && memcmp(kr_url_href(again), h, n) == 0);
  FUZZ_CHECK(kr_url_host_type(again) == kr_url_host_type(u));
  FUZZ_CHECK(kr_url_port(again) == port);
  kr_url_free(again);
  kr_url_t *dup = kr_url_dup(u);
  FUZZ_CHECK(strcmp(kr_url_href(dup), h) == 0);
  kr_url_free(dup);
}

static void url_check_canon(const kr_url_t *u, const char *in, size_t len, const kr_url_t *base,
                            kr_url_canon_opts_t *o) {
  kr_buf_t c1, c2, c3;
  kr_buf_init(&c1, 1 << 20);
  kr_buf_init(&c2, 1 << 20);
  kr_buf_init(&c3, 1 << 20);
  int rc = kr_url_canon(u, o, &c1);
  FUZZ_CHECK(rc == 0 || rc == KR_EURL || rc == KR_ETOOBIG);
  if (rc == 0) {
    kr_url_t *cu = NULL;
    /* The canonical form is a URL: rules that make a non-URL are ignored. */
    FUZZ_CHECK(kr_url_parse_ex(c1.data ? c1.data : "", c1.len, NULL, c1.len + 1, &cu) == 0);
    FUZZ_CHECK(kr_url_canon(cu, o, &c2) == 0);
    FUZZ_CHECK(c2.len == c1.len && memcmp(c1.data, c2.data, c1.len) == 0);
    kr_url_free(cu);
    FUZZ_CHECK(kr_url_canon_str(in, len, base, o, &c3) == 0);
    FUZZ_CHECK(c3.len == c1.len && (c1.len == 0 || memcmp(c1.data, c3.data, c1.len) == 0));
  }
  kr_buf_free(&c1);
  kr_buf_free(&c2);
  kr_buf_free(&c3);
}

static void url_check_surt(const kr_url_t *u, const char *in, size_t len, unsigned mode) {
  kr_surt_opts_t so;
  kr_surt_opts_init(&so);
  so.canonicalizer = (unsigned char)((mode >> 2) & 3);
  so.with_scheme = (mode >> 4) & 1;
  so.trailing_comma = (mode >> 5) & 1;
  so.public_suffix = (mode >> 6) & 1;
  so.java_keymaker = (mode >> 7) & 1;
  so.query_keep_escaped_delims = mode & 1;
  kr_buf_t a, b;
  kr_buf_init(&a, 1 << 20);
  kr_buf_init(&b, 1 << 20);
  int ra = kr_surt(in, len, &so, &a);
  int rb = kr_surt(in, len, &so, &b);
  FUZZ_CHECK(ra == 0 || ra == KR_EURL || ra == KR_ETOOBIG);
  FUZZ_CHECK(ra == rb && a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));
  kr_buf_reset(&a);
  int rc = kr_surt_canon_url(in, len, &so, &a);
  FUZZ_CHECK(rc == 0 || rc == KR_EURL || rc == KR_ETOOBIG);
  if (u) {
    kr_buf_reset(&a);
    kr_buf_reset(&b);
    ra = kr_url_surt(u, &so, &a);
    rb = kr_surt(kr_url_href(u), kr_url_href_len(u), &so, &b);
    FUZZ_CHECK(ra == rb && a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));
    if (kr_url_host_type(u) == KR_URL_HOST_DOMAIN) {
      kr_buf_reset(&a);
      FUZZ_CHECK(kr_surt_host(kr_url_hostname(u), 1, &a) == 0);
    }
  }
  kr_buf_free(&a);
  kr_buf_free(&b);
}

/* in against base and against a base sharing the prefix kr_url_base_use
 * names: the same result. */
static void url_check_base_use(const char *in, size_t len, const kr_url_t *base,
                               const kr_url_t *rel) {
  size_t k = kr_url_base_use(in, len, base);
  FUZZ_CHECK(k <= kr_url_href_len(base));
  if (k == kr_url_href_len(base)) return;
  char alt_s[512];
  int n = k ? snprintf(alt_s, sizeof alt_s, "%.*s/zz/../y;p/x?alt=1#alt", (int)k, kr_url_href(base))
            : snprintf(alt_s, sizeof alt_s, "https://other.invalid:9/q/r?s#t");
  FUZZ_CHECK(n > 0 && (size_t)n < sizeof alt_s);
  kr_url_t *alt = NULL, *u = NULL;
  FUZZ_CHECK(kr_url_parse(alt_s, (size_t)n, NULL, &alt) == 0);
  int r = kr_url_parse(in, len, alt, &u);
  FUZZ_CHECK((r == 0) == (rel != NULL));
  if (u) FUZZ_CHECK(strcmp(kr_url_href(u), kr_url_href(rel)) == 0);
  kr_url_free(u);
  kr_url_free(alt);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned mode = data[0];
  const char *in = (const char *)data + 1;
  size_t len = size - 1;
  unsigned bi = mode & 3, flags = (mode >> 2) & 15, rules = mode >> 6;
  if (bi && !url_base_urls[bi])
    FUZZ_CHECK(kr_url_parse(url_bases[bi], strlen(url_bases[bi]), NULL, &url_base_urls[bi]) == 0);
  const kr_url_t *base = url_base_urls[bi];
  kr_url_canon_opts_t *o = url_get_opts(flags, rules);

  kr_url_t *abs = NULL, *rel = NULL;
  int ra = kr_url_parse(in, len, NULL, &abs);
  FUZZ_CHECK(ra == 0 || ra == KR_EURL);
  FUZZ_CHECK((ra == 0) == (abs != NULL));
  if (abs) {
    url_check_parsed(abs, len, NULL);
    url_check_canon(abs, in, len, NULL, o);
  }
  if (base) {
    int rr = kr_url_parse(in, len, base, &rel);
    FUZZ_CHECK(rr == 0 || rr == KR_EURL);
    url_check_base_use(in, len, base, rel);
    if (rel) {
      url_check_parsed(rel, len, base);
      url_check_canon(rel, in, len, base, o);
    }
  }
  url_check_surt(rel ? rel : abs, in, len, mode);
  kr_url_free(abs);
  kr_url_free(rel);
  return 0;
}
