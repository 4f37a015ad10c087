/* Cluster ownership (kria/cluster.h): rendezvous hashing of registrable
 * domains over member names. The same owner whatever the members' order
 * and on every call; a site's hosts together; balance over many domains;
 * removing one of N members moves only the domains it owned, adding one
 * moves only those it gains (each about 1/N); URL hosts and the
 * cluster.redis address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/cluster.h"
#include "kria/error.h"

#define NDOM 20000

static const char *domain_name(int i, char *buf, size_t n) {
  static const char *const tlds[] = {"org", "com", "is", "co.uk", "de", "fr"};
  snprintf(buf, n, "site%d.%s", i, tlds[i % 6]);
  return buf;
}

static size_t owner(const kr_cluster_members_t *m, const char *dom) {
  return kr_cluster_owner_of_domain(m, kr_slice_cstr(dom));
}

static void names_checked(void **state) {
  (void)state;
  kr_cluster_members_t m;
  const char *bad[] = {"a", "b c"};
  assert_int_equal(kr_cluster_members_init(&m, bad, 2), KR_EINVAL);
  const char *twice[] = {"a", "b", "a"};
  assert_int_equal(kr_cluster_members_init(&m, twice, 3), KR_EINVAL);
  assert_int_equal(kr_cluster_members_init(&m, twice, 0), KR_EINVAL);
  const char *ok[] = {"kria-1", "kria_2", "k.3"};
  assert_int_equal(kr_cluster_members_init(&m, ok, 3), 0);
  assert_int_equal(kr_cluster_member_index(&m, "kria_2", 6), 1);
  assert_int_equal(kr_cluster_member_index(&m, "kria", 4), -1);
  kr_cluster_members_free(&m);
}

/* The owner depends on the set of names only, never their order, and is
 * the same at every call (and every build: one pinned answer). */
static void deterministic(void **state) {
  (void)state;
  const char *a[] = {"alpha", "beta", "gamma", "delta"};
  const char *b[] = {"delta", "gamma", "alpha", "beta"};
  kr_cluster_members_t ma, mb;
  assert_int_equal(kr_cluster_members_init(&ma, a, 4), 0);
  assert_int_equal(kr_cluster_members_init(&mb, b, 4), 0);
  char buf[64];
  for (int i = 0; i < 2000; i++) {
    const char *d = domain_name(i, buf, sizeof buf);
    size_t oa = owner(&ma, d), ob = owner(&mb, d);
    assert_string_equal(ma.v[oa].name, mb.v[ob].name);
    assert_int_equal(owner(&ma, d), oa);
  }
  /* pinned: the weights decide where URIs live, they must never change */
  assert_string_equal(ma.v[owner(&ma, "example.org")].name, "delta");
  assert_true(kr_cluster_weight(&ma.v[0], kr_slice_cstr("example.org")) ==
              UINT64_C(0x3025918b139a42a1));
  kr_cluster_members_free(&ma);
  kr_cluster_members_free(&mb);
}

/* Every host of one registrable domain has the domain's owner. */
static void site_hosts_together(void **state) {
  (void)state;
  const char *n[] = {"n1", "n2", "n3", "n4", "n5"};
  kr_cluster_members_t m;
  assert_int_equal(kr_cluster_members_init(&m, n, 5), 0);
  char buf[64], url[128];
  for (int i = 0; i < 500; i++) {
    const char *d = domain_name(i, buf, sizeof buf);
    int o = (int)owner(&m, d);
    const char *prefixes[] = {"", "www.", "a.b.", "static."};
    for (int k = 0; k < 4; k++) {
      int len = snprintf(url, sizeof url, "https://%s%s:8443/x?y", prefixes[k], d);
      assert_int_equal(kr_cluster_owner_of_url(&m, url, (size_t)len), o);
    }
  }
  kr_cluster_members_free(&m);
}

/* 20,000 domains over 3 and over 10 members: each gets its share within
 * 5 standard deviations of the binomial. */
static void balanced(void **state) {
  (void)state;
  const char *n[] = {"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"};
  size_t sizes[] = {3, 10};
  char buf[64];
  for (size_t s = 0; s < 2; s++) {
    kr_cluster_members_t m;
    assert_int_equal(kr_cluster_members_init(&m, n, sizes[s]), 0);
    size_t count[10] = {0};
    for (int i = 0; i < NDOM; i++) count[owner(&m, domain_name(i, buf, sizeof buf))]++;
    double p = 1.0 / (double)sizes[s], mean = NDOM * p, sd = 0;
    sd = __builtin_sqrt(NDOM * p * (1 - p));
    for (size_t i = 0; i < sizes[s]; i++) {
      assert_true((double)count[i] > mean - 5 * sd);
      assert_true((double)count[i] < mean + 5 * sd);
    }
    kr_cluster_members_free(&m);
  }
}

/* Removing a member moves only its domains; adding one moves only the
 * domains it gains; each about 1/N of all. */
static void minimal_moves(void **state) {
  (void)state;
  const char *five[] = {"a", "b", "c", "d", "e"};
  const char *four[] = {"a", "b", "d", "e"}; /* c removed */
  const char *six[] = {"a", "b", "c", "d", "e", "f"};
  kr_cluster_members_t m5, m4, m6;
  assert_int_equal(kr_cluster_members_init(&m5, five, 5), 0);
  assert_int_equal(kr_cluster_members_init(&m4, four, 4), 0);
  assert_int_equal(kr_cluster_members_init(&m6, six, 6), 0);
  char buf[64];
  size_t moved_rm = 0, moved_add = 0;
  for (int i = 0; i < NDOM; i++) {
    const char *d = domain_name(i, buf, sizeof buf);
    const char *o5 = m5.v[owner(&m5, d)].name;
    const char *o4 = m4.v[owner(&m4, d)].name;
    const char *o6 = m6.v[owner(&m6, d)].name;
    if (strcmp(o5, o4) != 0) {
      assert_string_equal(o5, "c"); /* only c's domains move */
      moved_rm++;
    }
    if (strcmp(o5, o6) != 0) {
      assert_string_equal(o6, "f"); /* only to f */
      moved_add++;
    }
  }
  /* 1/5 and 1/6 of 20,000 (4,000 and 3,333), within 5 sd */
  assert_true(moved_rm > 4000 - 5 * 57 && moved_rm < 4000 + 5 * 57);
  assert_true(moved_add > 3333 - 5 * 53 && moved_add < 3333 + 5 * 53);
  kr_cluster_members_free(&m5);
  kr_cluster_members_free(&m4);
  kr_cluster_members_free(&m6);
}

static void url_hosts(void **state) {
  (void)state;
  struct {
    const char *url, *host;
  } v[] = {
      {"http://example.org/", "example.org"},
      {"https://u:p@www.example.org:8443/a@b", "www.example.org"},
      {"http://127.0.0.2:8080", "127.0.0.2"},
      {"http://[::1]:80/x", "[::1]"},
      {"http://h.test?q", "h.test"},
      {"no-scheme", ""},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    kr_slice_t h = kr_cluster_host_of_url(v[i].url, strlen(v[i].url));
    assert_int_equal(h.n, strlen(v[i].host));
    assert_memory_equal(h.p, v[i].host, h.n);
  }
  /* the registrable domain, else the host */
  kr_slice_t d = kr_cluster_domain_of_host(kr_slice_cstr("a.b.example.co.uk"));
  assert_int_equal(d.n, strlen("example.co.uk"));
  d = kr_cluster_domain_of_host(kr_slice_cstr("127.0.0.3"));
  assert_int_equal(d.n, strlen("127.0.0.3"));
}

static void redis_address(void **state) {
  (void)state;
  char host[256];
  int port = -1;
  assert_int_equal(kr_cluster_parse_redis("127.0.0.1:6379", host, sizeof host, &port), 0);
  assert_string_equal(host, "127.0.0.1");
  assert_int_equal(port, 6379);
  assert_int_equal(kr_cluster_parse_redis("[::1]:7000", host, sizeof host, &port), 0);
  assert_string_equal(host, "::1");
  assert_int_equal(port, 7000);
  assert_int_equal(kr_cluster_parse_redis("/run/redis/redis.sock", host, sizeof host, &port), 0);
  assert_string_equal(host, "/run/redis/redis.sock");
  assert_int_equal(port, 0);
  const char *bad[] = {"", "localhost", "h:0", "h:70000", "h:x", ":6379", "::1:6379", "h :1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(kr_cluster_parse_redis(bad[i], host, sizeof host, &port), KR_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(names_checked),   cmocka_unit_test(deterministic),
      cmocka_unit_test(site_hosts_together), cmocka_unit_test(balanced),
      cmocka_unit_test(minimal_moves),   cmocka_unit_test(url_hosts),
      cmocka_unit_test(redis_address),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
