/* Membership changes (kria/clustermove.h): member lists as text, which
 * host queues move when a member is added or removed (only to the one
 * added, only from the one removed, a port or a site's other host never
 * splitting a domain), and the verdict on a member's epoch against the
 * cluster's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/clustermove.h"
#include "kria/error.h"

static void lists(void **state) {
  (void)state;
  kr_cluster_members_t a, b;
  assert_int_equal(kr_cluster_members_parse(&a, " n1, n2 ,n3\tn4 "), 0);
  assert_int_equal(a.n, 4);
  assert_string_equal(a.v[3].name, "n4");
  char out[64];
  assert_int_equal(kr_cluster_members_format(&a, out, sizeof out), 11);
  assert_string_equal(out, "n1,n2,n3,n4");
  assert_int_equal(kr_cluster_members_format(&a, out, 11), KR_ETOOBIG);
  assert_int_equal(kr_cluster_members_parse(&b, "n4,n3,n2,n1"), 0);
  assert_int_equal(kr_cluster_members_same(&a, &b), 1);
  kr_cluster_members_free(&b);
  assert_int_equal(kr_cluster_members_parse(&b, "n4,n3,n2,n5"), 0);
  assert_int_equal(kr_cluster_members_same(&a, &b), 0);
  kr_cluster_members_free(&b);
  assert_int_equal(kr_cluster_members_parse(&b, "n1,n2,n3"), 0);
  assert_int_equal(kr_cluster_members_same(&a, &b), 0);
  kr_cluster_members_free(&b);
  assert_int_equal(kr_cluster_members_parse(&b, "n1,n1"), KR_EINVAL);
  assert_int_equal(kr_cluster_members_parse(&b, "n1,bad/name"), KR_EINVAL);
  assert_int_equal(kr_cluster_members_parse(&b, " , "), KR_EINVAL);
  kr_cluster_members_free(&a);
}

static void keys(void **state) {
  (void)state;
  const char *in[][2] = {{"a.example.org", "a.example.org"}, {"a.example.org:8080", "a.example.org"},
                         {"[::1]:8443", "[::1]"}, {"127.0.0.1:80", "127.0.0.1"}};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
    kr_slice_t h = kr_cluster_host_of_key(kr_slice_cstr(in[i][0]));
    assert_int_equal(h.n, strlen(in[i][1]));
    assert_memory_equal(h.p, in[i][1], h.n);
  }
}

/* Adding a member moves hosts only to it; removing one only from it; a
 * domain's hosts and ports move together. */
static void moves(void **state) {
  (void)state;
  kr_cluster_members_t three, four, two;
  assert_int_equal(kr_cluster_members_parse(&three, "a,b,c"), 0);
  assert_int_equal(kr_cluster_members_parse(&four, "a,b,c,d"), 0);
  assert_int_equal(kr_cluster_members_parse(&two, "a,c"), 0);
  size_t added = 0, removed = 0, from, to;
  char key[64], other[64];
  for (int i = 0; i < 4000; i++) {
    snprintf(key, sizeof key, "www.site%d.org:%d", i, 8000 + i % 7);
    snprintf(other, sizeof other, "img.site%d.org", i);
    int m = kr_cluster_host_moves(&three, &four, kr_slice_cstr(key), &from, &to);
    size_t f2, t2;
    assert_int_equal(kr_cluster_host_moves(&three, &four, kr_slice_cstr(other), &f2, &t2), m);
    assert_int_equal(f2, from);
    assert_int_equal(t2, to);
    if (m) {
      assert_string_equal(four.v[to].name, "d");
      added++;
    } else {
      assert_string_equal(three.v[from].name, four.v[to].name);
    }
    m = kr_cluster_host_moves(&three, &two, kr_slice_cstr(key), &from, &to);
    if (m) {
      assert_string_equal(three.v[from].name, "b");
      removed++;
    } else {
      assert_string_not_equal(three.v[from].name, "b");
    }
  }
  /* about 1/4 gained by d, 1/3 lost by b */
  assert_true(added > 800 && added < 1200);
  assert_true(removed > 1100 && removed < 1570);
  assert_int_equal(kr_cluster_host_moves(&three, &four, kr_slice_cstr(""), &from, &to), -1);
  kr_cluster_members_free(&three);
  kr_cluster_members_free(&four);
  kr_cluster_members_free(&two);
}

static void epochs(void **state) {
  (void)state;
  assert_int_equal(kr_cluster_epoch_decide(0, 0, -1), KR_EPOCH_CRAWL);  /* no Redis yet */
  assert_int_equal(kr_cluster_epoch_decide(0, 0, 0), KR_EPOCH_CRAWL);   /* never moved */
  assert_int_equal(kr_cluster_epoch_decide(3, 0, 3), KR_EPOCH_CRAWL);
  assert_int_equal(kr_cluster_epoch_decide(3, 3, 3), KR_EPOCH_CRAWL);   /* finished */
  assert_int_equal(kr_cluster_epoch_decide(3, 0, 4), KR_EPOCH_BEHIND);
  assert_int_equal(kr_cluster_epoch_decide(3, 4, 4), KR_EPOCH_MOVING);
  assert_int_equal(kr_cluster_epoch_decide(3, 4, -1), KR_EPOCH_MOVING); /* Redis away: still */
  assert_int_equal(kr_cluster_epoch_decide(3, 0, -1), KR_EPOCH_CRAWL);
  assert_int_equal(kr_cluster_epoch_decide(5, 0, 0), KR_EPOCH_AHEAD);   /* Redis lost it */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lists), cmocka_unit_test(keys), cmocka_unit_test(moves),
      cmocka_unit_test(epochs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
