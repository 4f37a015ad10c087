/*
 * Unit tests for the crawl's link cache (src/crawl/linkcache.c) and the key it
 * stands on, kr_url_base_use: over every input of the WHATWG conformance
 * data (test/data/url/urltestdata.json) against several http(s)
 * bases, a base that shares the prefix kr_url_base_use names must parse
 * the input to the same URL (or fail alike), and a cache filled against
 * one base must hand back, for another base with the same key, exactly the
 * canonical URL computed afresh against that base. Then the cache itself:
 * keys, rejected links, the two ways and their replacement, the byte
 * budget and the key length limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/buf.h"
#include "kria/url.h"
#include "linkcache.h"

static json_object *load_urltestdata(void) {
  const char *top = getenv("KRIA_TOP");
  char path[4096];
  snprintf(path, sizeof path, "%s/test/data/url/urltestdata.json",
           top && *top ? top : ".");
  json_object *o = json_object_from_file(path);
  if (!o) fail_msg("cannot read %s (KRIA_TOP names the checkout; make check sets it)", path);
  return o;
}

static kr_url_t *parse(const char *s) {
  kr_url_t *u = NULL;
  assert_int_equal(kr_url_parse(s, strlen(s), NULL, &u), 0);
  return u;
}

/* A get and a put with the key computed by kr_linkcache_key, as every
 * caller does. */
static kr_linkcache_entry_t *get_raw(kr_linkcache_t *lc, const char *raw, size_t n,
                                     const kr_url_t *base) {
  kr_linkcache_key_t k;
  kr_linkcache_key(raw, n, base, &k);
  return kr_linkcache_get(lc, &k, raw, n, base);
}

static kr_linkcache_entry_t *put_raw(kr_linkcache_t *lc, const char *raw, size_t n,
                                     const kr_url_t *base, const char *canon, size_t len,
                                     const kr_url_t *url) {
  kr_linkcache_key_t k;
  kr_linkcache_key(raw, n, base, &k);
  return kr_linkcache_put(lc, &k, raw, n, base, canon, len, url);
}

/* Inputs beyond the conformance data: the edges of the three cases. */
static const char *const extra_inputs[] = {
    "http:foo", "http:/foo", "HTTP://x/y", "hTTpS://x", "http:\\\\x/", "http:/\\x/",
    "/\\x", "//x/y", " /x ", "/\tx", "\t/x", "/x\n/y", "/", "https://x/a?b#c", "ftp://x/",
    "http:x", "https:", "http://", "/?q", "/#f", "?q", "#f", "", "x/../y", "/a/../../b",
    "http://a/b/../c", " http://x/ ", "ht\ttp://x/", "http:\n//x/", "/%2e%2e/x", "/.//x",
};

/* Bases the inputs are resolved against (http(s): the cache's case). */
static const char *const bases[] = {
    "http://example.org/foo/bar",
    "https://user:pw@example.com:8080/a/b/c?q=1#frag",
    "http://[::1]/x/y/",
    "http://192.168.0.1:81/",
};

/* A base with the same first k bytes as b but everything after them
 * changed (or, when k is 0, another origin altogether). */
static kr_url_t *alt_base(const kr_url_t *b, size_t k) {
  if (k == 0) return parse("https://other.invalid:8443/zz/yy/?other=1#x");
  char buf[512];
  snprintf(buf, sizeof buf, "%.*s/q/r;s/t?u=v#w", (int)k, kr_url_href(b));
  return parse(buf);
}

struct counts {
  int none, origin, all, compared;
};

/* input against base and against an alternative sharing the key. */
static void check_one(const char *in, size_t n, const kr_url_t *base, struct counts *c) {
  size_t k = kr_url_base_use(in, n, base);
  if (k == kr_url_href_len(base)) {
    c->all++;
    return;
  }
  if (k == 0) c->none++;
  else c->origin++;
  kr_url_t *alt = alt_base(base, k);
  kr_url_t *u1 = NULL, *u2 = NULL;
  int r1 = kr_url_parse(in, n, base, &u1);
  int r2 = kr_url_parse(in, n, alt, &u2);
  if (r1 != r2 || (r1 == 0 && strcmp(kr_url_href(u1), kr_url_href(u2)) != 0))
    fail_msg("<%.*s> against <%s> and <%s> (key %zu bytes): %s / %s", (int)n, in,
             kr_url_href(base), kr_url_href(alt), k, r1 ? "fails" : kr_url_href(u1),
             r2 ? "fails" : kr_url_href(u2));
  c->compared++;
  kr_url_free(u1);
  kr_url_free(u2);
  kr_url_free(alt);
}

static void base_use_over_conformance_inputs(void **state) {
  (void)state;
  json_object *all = load_urltestdata();
  struct counts c = {0};
  kr_url_t *b[sizeof bases / sizeof *bases];
  for (size_t j = 0; j < sizeof bases / sizeof *bases; j++) b[j] = parse(bases[j]);
  size_t n = json_object_array_length(all);
  for (size_t i = 0; i < n; i++) {
    json_object *tc = json_object_array_get_idx(all, i), *v;
    if (!json_object_is_type(tc, json_type_object) ||
        !json_object_object_get_ex(tc, "input", &v))
      continue;
    const char *in = json_object_get_string(v);
    size_t len = (size_t)json_object_get_string_len(v);
    for (size_t j = 0; j < sizeof bases / sizeof *bases; j++) check_one(in, len, b[j], &c);
    /* the case's own base too, when it is http(s) */
    kr_url_t *own = NULL;
    if (json_object_object_get_ex(tc, "base", &v) && json_object_is_type(v, json_type_string) &&
        kr_url_parse(json_object_get_string(v), (size_t)json_object_get_string_len(v), NULL,
                     &own) == 0 &&
        (!strncmp(kr_url_href(own), "http:", 5) || !strncmp(kr_url_href(own), "https:", 6)))
      check_one(in, len, own, &c);
    kr_url_free(own);
  }
  for (size_t i = 0; i < sizeof extra_inputs / sizeof *extra_inputs; i++)
    for (size_t j = 0; j < sizeof bases / sizeof *bases; j++)
      check_one(extra_inputs[i], strlen(extra_inputs[i]), b[j], &c);
  printf("# base_use: %d compared (%d base-independent, %d origin only), %d whole base\n",
         c.compared, c.none, c.origin, c.all);
  /* the shortcut cases must really be exercised */
  assert_true(c.none > 200);
  assert_true(c.origin > 50);
  for (size_t j = 0; j < sizeof bases / sizeof *bases; j++) kr_url_free(b[j]);
  json_object_put(all);
}

static void base_use_cases(void **state) {
  (void)state;
  kr_url_t *b = parse("https://u:p@example.com:8080/a/b?c#d");
  size_t origin = strlen("https://u:p@example.com:8080");
  size_t whole = kr_url_href_len(b);
  assert_int_equal(kr_url_base_use("http://x/", 9, b), 0);
  assert_int_equal(kr_url_base_use(" HTTPS://x/ ", 12, b), 0);
  assert_int_equal(kr_url_base_use("/x", 2, b), origin);
  assert_int_equal(kr_url_base_use("/", 1, b), origin);
  assert_int_equal(kr_url_base_use("https:x", 7, b), whole);   /* relative to the base */
  assert_int_equal(kr_url_base_use("https:/x", 8, b), whole);
  assert_int_equal(kr_url_base_use("http:\\\\x", 8, b), whole);
  assert_int_equal(kr_url_base_use("//x/", 4, b), whole);     /* scheme-relative */
  assert_int_equal(kr_url_base_use("/\\x", 3, b), whole);
  assert_int_equal(kr_url_base_use("/\t/x", 4, b), whole);    /* joins into "//x" */
  assert_int_equal(kr_url_base_use("x", 1, b), whole);
  assert_int_equal(kr_url_base_use("?q", 2, b), whole);
  assert_int_equal(kr_url_base_use("ftp://x/", 8, b), whole);
  assert_int_equal(kr_url_base_use("/x", 2, NULL), 0);
  kr_url_t *f = parse("file:///etc/x");
  assert_int_equal(kr_url_base_use("/y", 2, f), kr_url_href_len(f));
  kr_url_free(f);
  kr_url_free(b);
}

/* Resolve + canonicalise as the crawl does: 0 and the canonical string. */
static int canon_of(const char *in, size_t n, const kr_url_t *base, kr_url_canon_opts_t *o,
                    kr_buf_t *out) {
  kr_buf_reset(out);
  return kr_url_canon_str(in, n, base, o, out);
}

/* Fill the cache against one base, read it back against another with the
 * same key: every hit must be what a fresh resolution gives. */
static void cache_hits_equal_fresh_results(void **state) {
  (void)state;
  json_object *all = load_urltestdata();
  kr_url_canon_opts_t *o = kr_url_canon_opts_new(KR_URL_CANON_STRIP_WWW | KR_URL_CANON_SORT_QUERY);
  assert_int_equal(kr_url_canon_opts_add_ruleset(o, "session-ids"), 0);
  kr_linkcache_t *lc = kr_linkcache_new(1 << 16, 64u << 20);
  kr_buf_t a, b;
  kr_buf_init(&a, 1 << 16);
  kr_buf_init(&b, 1 << 16);
  int hits = 0;
  for (size_t j = 0; j < sizeof bases / sizeof *bases; j++) {
    kr_url_t *base = parse(bases[j]);
    size_t n = json_object_array_length(all);
    for (size_t i = 0; i < n; i++) {
      json_object *tc = json_object_array_get_idx(all, i), *v;
      if (!json_object_is_type(tc, json_type_object) ||
          !json_object_object_get_ex(tc, "input", &v))
        continue;
      const char *in = json_object_get_string(v);
      size_t len = (size_t)json_object_get_string_len(v);
      kr_url_t *u = NULL;
      if (canon_of(in, len, base, o, &a) == 0 && kr_url_parse(a.data, a.len, NULL, &u) == 0) {
        put_raw(lc, in, len, base, a.data, a.len, u);
      } else {
        put_raw(lc, in, len, base, NULL, 0, NULL);
      }
      kr_url_free(u);
      kr_url_t *alt = alt_base(base, kr_url_base_use(in, len, base));
      kr_linkcache_entry_t *e = get_raw(lc, in, len, alt);
      if (e) {
        hits++;
        int rc = canon_of(in, len, alt, o, &b);
        kr_url_t *fresh = NULL;
        if (rc == 0) rc = kr_url_parse(b.data, b.len, NULL, &fresh);
        if (!e->canon) {
          if (rc == 0) fail_msg("<%s>: cached as rejected, fresh <%s>", in, b.data);
        } else {
          if (rc != 0) fail_msg("<%s>: cached <%s>, fresh fails", in, e->canon);
          assert_int_equal(e->canon_len, b.len);
          assert_memory_equal(e->canon, b.data, b.len);
          assert_string_equal(kr_url_href(e->url), kr_url_href(fresh));
          assert_int_equal(kr_url_port(e->url), kr_url_port(fresh));
          assert_true(kr_slice_eq(kr_url_hostname(e->url), kr_url_hostname(fresh)));
        }
        kr_url_free(fresh);
      }
      kr_url_free(alt);
    }
    kr_url_free(base);
  }
  printf("# cache: %d hits checked against fresh results\n", hits);
  assert_true(hits > 300);
  kr_buf_free(&a);
  kr_buf_free(&b);
  kr_linkcache_free(lc);
  kr_url_canon_opts_free(o);
  json_object_put(all);
}

static kr_linkcache_entry_t *put_str(kr_linkcache_t *lc, const char *raw, const kr_url_t *base,
                                     const char *canon) {
  kr_url_t *u = canon ? parse(canon) : NULL;
  kr_linkcache_entry_t *e =
      put_raw(lc, raw, strlen(raw), base, canon, canon ? strlen(canon) : 0, u);
  kr_url_free(u);
  return e;
}

static kr_linkcache_entry_t *get_str(kr_linkcache_t *lc, const char *raw, const kr_url_t *base) {
  return get_raw(lc, raw, strlen(raw), base);
}

static void cache_keys(void **state) {
  (void)state;
  kr_linkcache_t *lc = kr_linkcache_new(1024, 1 << 20);
  kr_url_t *p1 = parse("http://a.test/x/1.html");
  kr_url_t *p2 = parse("http://a.test/y/2.html?q");
  kr_url_t *o2 = parse("http://b.test/x/1.html");
  kr_url_t *o3 = parse("http://a.test:8080/x/1.html");
  assert_non_null(put_str(lc, "/p/3.html", p1, "http://a.test/p/3.html"));
  kr_linkcache_entry_t *e = get_str(lc, "/p/3.html", p2); /* same origin */
  assert_non_null(e);
  assert_string_equal(e->canon, "http://a.test/p/3.html");
  assert_string_equal(kr_url_href(e->url), "http://a.test/p/3.html");
  assert_null(get_str(lc, "/p/3.html", o2)); /* another host */
  assert_null(get_str(lc, "/p/3.html", o3)); /* another port */
  assert_null(get_str(lc, "/p/3.html ", p1)); /* the raw bytes are the key */
  /* absolute: any base */
  assert_non_null(put_str(lc, "http://c.test/", p1, "http://c.test/"));
  assert_non_null(get_str(lc, "http://c.test/", o2));
  assert_non_null(get_str(lc, "http://c.test/", NULL));
  /* relative: the same base only */
  assert_non_null(put_str(lc, "4.html", p1, "http://a.test/x/4.html"));
  assert_non_null(get_str(lc, "4.html", p1));
  assert_null(get_str(lc, "4.html", p2));
  /* a canonical string that is not its URL's href is kept as given */
  kr_url_t *pu = parse("http://A.test/%7e");
  assert_non_null(put_raw(lc, "/odd", 4, p1, "http://A.test/%7e", 17, pu));
  kr_url_free(pu);
  e = get_str(lc, "/odd", p1);
  assert_non_null(e);
  assert_string_equal(e->canon, "http://A.test/%7e");
  assert_int_equal(e->canon_len, 17);
  assert_string_equal(kr_url_href(e->url), "http://a.test/%7e");
  /* rejected before the scope */
  e = put_str(lc, "mailto:x@y", p1, NULL);
  assert_non_null(e);
  assert_null(e->canon);
  assert_null(e->url);
  e = get_str(lc, "mailto:x@y", p1);
  assert_non_null(e);
  assert_null(e->canon);
  /* a canonical string without its URL (or the reverse) is refused */
  kr_url_t *u = parse("http://a.test/");
  assert_null(put_raw(lc, "/z", 2, p1, "http://a.test/z", 15, NULL));
  assert_null(put_raw(lc, "/z", 2, p1, NULL, 0, u));
  kr_url_free(u);
  kr_linkcache_stats_t st;
  kr_linkcache_stats(lc, &st);
  assert_int_equal(st.entries, 5);
  assert_int_equal(st.hits, 6);
  kr_url_free(p1);
  kr_url_free(p2);
  kr_url_free(o2);
  kr_url_free(o3);
  kr_linkcache_free(lc);
}

/* One set of two ways: the least recently used entry goes. */
static void cache_two_ways_lru(void **state) {
  (void)state;
  kr_linkcache_t *lc = kr_linkcache_new(2, 1 << 20);
  assert_non_null(put_str(lc, "http://a.test/", NULL, "http://a.test/"));
  assert_non_null(put_str(lc, "http://b.test/", NULL, "http://b.test/"));
  assert_non_null(get_str(lc, "http://a.test/", NULL)); /* a is now the most recent */
  assert_non_null(put_str(lc, "http://c.test/", NULL, "http://c.test/"));
  assert_non_null(get_str(lc, "http://a.test/", NULL));
  assert_non_null(get_str(lc, "http://c.test/", NULL));
  assert_null(get_str(lc, "http://b.test/", NULL));
  kr_linkcache_stats_t st;
  kr_linkcache_stats(lc, &st);
  assert_int_equal(st.entries, 2);
  /* putting a key again replaces it, nothing else */
  assert_non_null(put_str(lc, "http://a.test/", NULL, "http://a.test/"));
  assert_non_null(get_str(lc, "http://c.test/", NULL));
  kr_linkcache_stats(lc, &st);
  assert_int_equal(st.entries, 2);
  kr_linkcache_free(lc);
}

static void cache_limits(void **state) {
  (void)state;
  /* byte budget: entries stop being kept, the memory stays bounded */
  kr_linkcache_t *lc = kr_linkcache_new(4096, 4096);
  char raw[64], url[64];
  int kept = 0;
  for (int i = 0; i < 1000; i++) {
    snprintf(raw, sizeof raw, "http://h%d.test/", i);
    snprintf(url, sizeof url, "http://h%d.test/", i);
    if (put_str(lc, raw, NULL, url)) kept++;
  }
  kr_linkcache_stats_t st;
  kr_linkcache_stats(lc, &st);
  assert_true(kept > 5 && kept < 1000);
  assert_true(st.bytes <= 4096);
  kr_linkcache_free(lc);
  /* keys and canonical strings past the limits are not cached */
  lc = kr_linkcache_new(64, 1 << 20);
  size_t n = KR_LINKCACHE_MAX_KEY + 1;
  char *big = malloc(n + 1);
  memset(big, 'a', n);
  memcpy(big, "http://a.test/", 14);
  big[n] = '\0';
  assert_null(put_str(lc, big, NULL, "http://a.test/"));
  assert_null(get_str(lc, big, NULL));
  kr_linkcache_stats(lc, &st);
  assert_int_equal(st.uncacheable, 1);
  big[KR_LINKCACHE_MAX_URL + 1] = '\0';
  assert_null(put_str(lc, "http://a.test/", NULL, big));
  free(big);
  kr_linkcache_free(lc);
}

/* kr_linkcache_prefetch and _prefetch_entry are hints: on an empty
 * cache, on a key too long to be cached and on cached keys they change
 * nothing; the key's hash is the one a lookup finds the entry by. */
static void cache_prefetch_is_a_hint(void **state) {
  (void)state;
  kr_linkcache_t *lc = kr_linkcache_new(64, 1 << 20);
  kr_url_t *base = parse("http://a.test/x/1.html");
  kr_linkcache_key_t k, k2;
  kr_linkcache_key("/y", 2, base, &k);
  kr_linkcache_prefetch(lc, &k);
  kr_linkcache_prefetch_entry(lc, &k);
  kr_linkcache_key("http://b.test/", 14, NULL, &k2);
  kr_linkcache_prefetch(lc, &k2);
  kr_linkcache_prefetch_entry(lc, &k2);
  assert_true(k.hash != k2.hash);
  assert_int_equal(k.plen, 13); /* "http://a.test" */
  assert_int_equal(k.len, 15);
  assert_int_equal(k2.plen, 0);
  assert_int_equal(k2.len, 14);
  size_t n = KR_LINKCACHE_MAX_KEY + 1;
  char *big = malloc(n);
  memset(big, 'a', n);
  kr_linkcache_key(big, n, base, &k2);
  assert_true(k2.len > KR_LINKCACHE_MAX_KEY);
  kr_linkcache_prefetch(lc, &k2);
  kr_linkcache_prefetch_entry(lc, &k2);
  free(big);
  assert_non_null(put_str(lc, "/y", base, "http://a.test/y"));
  kr_linkcache_key_t again;
  kr_linkcache_key("/y", 2, base, &again);
  assert_true(again.hash == k.hash);
  kr_linkcache_prefetch(lc, &again);
  kr_linkcache_prefetch_entry(lc, &again);
  again.hash ^= 1;
  kr_linkcache_prefetch_entry(lc, &again);
  kr_linkcache_entry_t *e = get_str(lc, "/y", base);
  assert_non_null(e);
  assert_string_equal(e->canon, "http://a.test/y");
  kr_linkcache_stats_t st;
  kr_linkcache_stats(lc, &st);
  assert_int_equal(st.entries, 1);
  assert_int_equal(st.hits, 1);
  assert_int_equal(st.misses, 0);
  assert_int_equal(st.uncacheable, 0);
  /* a full set and a hash it does not hold (the miss path: the way a
   * put would replace is prefetched): both entries stay */
  kr_linkcache_t *two = kr_linkcache_new(2, 1 << 20);
  assert_non_null(put_str(two, "http://a.test/", NULL, "http://a.test/"));
  assert_non_null(put_str(two, "http://b.test/", NULL, "http://b.test/"));
  kr_linkcache_key_t kc;
  kr_linkcache_key("http://c.test/", 14, NULL, &kc);
  kr_linkcache_prefetch(two, &kc);
  kr_linkcache_prefetch_entry(two, &kc);
  assert_non_null(get_str(two, "http://a.test/", NULL));
  assert_non_null(get_str(two, "http://b.test/", NULL));
  kr_linkcache_stats(two, &st);
  assert_int_equal(st.entries, 2);
  kr_linkcache_free(two);
  kr_url_free(base);
  kr_linkcache_free(lc);
}

/* A key that is not the link's against its base (another hash, another
 * link's, lengths that do not fit) only misses: it never returns another
 * entry, never reads past the base, and what a put keeps with it is not
 * found by the right key. */
static void cache_wrong_keys_miss(void **state) {
  (void)state;
  kr_linkcache_t *lc = kr_linkcache_new(2, 1 << 20); /* one set: every key meets both ways */
  kr_url_t *base = parse("http://a.test/x/1.html");
  assert_non_null(put_str(lc, "http://a.test/", NULL, "http://a.test/"));
  assert_non_null(put_str(lc, "/p/1", base, "http://a.test/p/1"));
  kr_linkcache_key_t ka, kb, kp, k;
  kr_linkcache_key("http://a.test/", 14, NULL, &ka);
  kr_linkcache_key("http://b.test/", 14, NULL, &kb); /* same lengths, another link */
  kr_linkcache_key("/p/1", 4, base, &kp);
  assert_non_null(kr_linkcache_get(lc, &ka, "http://a.test/", 14, NULL));
  assert_non_null(kr_linkcache_get(lc, &kp, "/p/1", 4, base));
  k = ka;
  k.hash ^= 1;
  assert_null(kr_linkcache_get(lc, &k, "http://a.test/", 14, NULL));
  assert_null(kr_linkcache_get(lc, &kb, "http://a.test/", 14, NULL));
  assert_null(kr_linkcache_get(lc, &ka, "http://b.test/", 14, NULL));
  k = ka; /* another length of raw */
  assert_null(kr_linkcache_get(lc, &k, "http://a.test/x", 15, NULL));
  k = kp; /* another split of the same length: a prefix of 14, a 3-byte raw */
  k.plen = 14;
  assert_null(kr_linkcache_get(lc, &k, "p/1", 3, base));
  k = kp; /* a prefix past the base's href */
  k.plen = 1000;
  k.len = 1004;
  assert_null(kr_linkcache_get(lc, &k, "/p/1", 4, base));
  assert_null(kr_linkcache_get(lc, &kp, "/p/1", 4, NULL)); /* no base: no prefix */
  k = kp;
  k.plen = k.len + 1; /* plen over len */
  assert_null(kr_linkcache_get(lc, &k, "/p/1", 4, base));
  assert_null(kr_linkcache_put(lc, &k, "/p/1", 4, base, "http://x.test/", 14, NULL));
  kr_linkcache_stats_t st;
  kr_linkcache_stats(lc, &st);
  assert_int_equal(st.hits, 2);
  assert_int_equal(st.misses, 8);
  assert_int_equal(st.entries, 2);
  /* a put with lengths that do not fit keeps nothing */
  kr_url_t *x = parse("http://x.test/");
  k = kp;
  k.plen = 1000;
  k.len = 1004;
  assert_null(kr_linkcache_put(lc, &k, "/p/1", 4, base, "http://x.test/", 14, x));
  k = ka;
  assert_null(kr_linkcache_put(lc, &k, "http://a.test/x", 15, NULL, "http://x.test/", 14, x));
  /* a put with a wrong hash: the right key never finds it */
  k = ka;
  k.hash ^= 1;
  assert_non_null(kr_linkcache_put(lc, &k, "http://a.test/", 14, NULL, "http://x.test/", 14, x));
  kr_linkcache_entry_t *e = kr_linkcache_get(lc, &ka, "http://a.test/", 14, NULL);
  assert_true(e == NULL || strcmp(e->canon, "http://a.test/") == 0);
  e = kr_linkcache_get(lc, &kp, "/p/1", 4, base);
  assert_true(e == NULL || strcmp(e->canon, "http://a.test/p/1") == 0);
  kr_url_free(x);
  kr_url_free(base);
  kr_linkcache_free(lc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(base_use_cases),
      cmocka_unit_test(base_use_over_conformance_inputs),
      cmocka_unit_test(cache_hits_equal_fresh_results),
      cmocka_unit_test(cache_keys),
      cmocka_unit_test(cache_two_ways_lru),
      cmocka_unit_test(cache_limits),
      cmocka_unit_test(cache_prefetch_is_a_hint),
      cmocka_unit_test(cache_wrong_keys_miss),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
