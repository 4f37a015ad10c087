/* Pieces of the adaptive processors that stand alone: crawl.log's
 * durations in Heritrix's form (the thesis' "wt:45s0ms,...,ov:3ms"). The
 * processors themselves run end to end in test/integration/adaptive.sh,
 * midfetch_nginx.sh and feeds.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "crawl.h"

static void durations(void **state) {
  (void)state;
  static const struct {
    int64_t ms;
    const char *want;
  } cases[] = {
      {45000, "45s0ms"},       /* the thesis' example */
      {3, "3ms"},              /* ov:3ms */
      {0, "0ms"},
      {999, "999ms"},
      {1000, "1s0ms"},
      {1500, "1s500ms"},
      {60000, "1m0ms"},
      {61001, "1m1s1ms"},
      {3600000, "1h0ms"},
      {86400000 + 3600000 + 60000 + 1000 + 1, "1d1h1m1s1ms"},
      {28LL * 86400000, "28d0ms"},
      {-2500, "-2s500ms"},
      {INT64_MAX, "106751991167d7h12m55s807ms"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char out[64];
    size_t n = kr__fmt_duration(out, sizeof out, cases[i].ms);
    assert_string_equal(out, cases[i].want);
    assert_int_equal(n, strlen(cases[i].want));
  }
  /* cut to the buffer, NUL-terminated */
  char small[5];
  size_t n = kr__fmt_duration(small, sizeof small, 86400000 + 1);
  assert_true(n < sizeof small);
  assert_int_equal(strlen(small), n);
  assert_memory_equal(small, "1d1m", 4);
  (void)kr__fmt_duration(small, sizeof small, INT64_MIN); /* no overflow */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(durations)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
