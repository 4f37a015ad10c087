/* Unit tests for the base modules: error names, bounded buffers, arena. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "kria/arena.h"
#include "kria/buf.h"
#include "kria/error.h"
#include "internal.h"

static void error_names_are_distinct_and_total(void **state) {
  (void)state;
  assert_string_equal(kr_err_name(0), "ok");
  assert_string_equal(kr_err_name(KR_ECONNECT_TIMEOUT), "connect-timeout");
  assert_string_equal(kr_err_name(-1), "unknown");
  assert_string_equal(kr_err_name(KR__ELAST), "unknown");
  for (int a = KR__EBASE + 1; a < KR__ELAST; a++) {
    assert_string_not_equal(kr_err_name(a), "unknown");
    assert_string_not_equal(kr_strerror(a), "unknown error");
    for (int b = a + 1; b < KR__ELAST; b++)
      assert_string_not_equal(kr_err_name(a), kr_err_name(b));
  }
}

static void buf_respects_max(void **state) {
  (void)state;
  kr_buf_t b;
  kr_buf_init(&b, 10);
  assert_int_equal(kr_buf_append_str(&b, "hello"), 0);
  assert_int_equal(kr_buf_append_str(&b, "world"), 0);
  assert_int_equal(b.len, 10);
  assert_int_equal(kr_buf_append_str(&b, "!"), KR_ETOOBIG);
  assert_string_equal(b.data, "helloworld"); /* unchanged on failure */
  assert_true(b.cap <= 11);
  assert_int_equal(kr_buf_append(&b, "x", SIZE_MAX), KR_ETOOBIG);
  kr_buf_consume(&b, 5);
  assert_string_equal(b.data, "world");
  assert_int_equal(kr_buf_printf(&b, "%d", 12345), 0);
  assert_string_equal(b.data, "world12345");
  assert_int_equal(kr_buf_printf(&b, "%d", 1), KR_ETOOBIG);
  kr_buf_consume(&b, 100);
  assert_int_equal(b.len, 0);
  kr_buf_free(&b);
}

static void slices_compare(void **state) {
  (void)state;
  assert_true(kr_slice_case_eq(KR_SLICE_LIT("ETag"), KR_SLICE_LIT("etag")));
  assert_false(kr_slice_case_eq(KR_SLICE_LIT("ETag"), KR_SLICE_LIT("etags")));
  assert_true(kr_slice_eq(kr_slice_trim(KR_SLICE_LIT(" \tx y\t ")), KR_SLICE_LIT("x y")));
  assert_int_equal(kr_slice_trim(KR_SLICE_LIT("   ")).n, 0);
}

/* kr_u64_dec writes what "%" PRIu64 would, over edges and a sweep. */
static void u64_decimal_as_printf(void **state) {
  (void)state;
  uint64_t v[] = {0, 1, 9, 10, 99, 100, 65535, 4294967295u, 4294967296u, UINT64_MAX / 10,
                  UINT64_MAX - 1, UINT64_MAX};
  char got[KR_U64_DEC_MAX + 1], want[32];
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    size_t n = kr_u64_dec(got, v[i]);
    got[n] = '\0';
    snprintf(want, sizeof want, "%" PRIu64, v[i]);
    assert_string_equal(got, want);
  }
  for (uint64_t x = 1; x < UINT64_MAX / 7; x = x * 7 + 3) {
    size_t n = kr_u64_dec(got, x);
    got[n] = '\0';
    snprintf(want, sizeof want, "%" PRIu64, x);
    assert_string_equal(got, want);
  }
}

static void arena_allocates_aligned_and_caps(void **state) {
  (void)state;
  kr_arena_t a;
  kr_arena_init(&a, 256, 4096);
  char *p = kr_arena_alloc(&a, 3);
  char *q = kr_arena_alloc(&a, 5);
  assert_non_null(p);
  assert_int_equal(((uintptr_t)q) % 16, 0);
  char *big = kr_arena_alloc(&a, 1000); /* oversized block of its own */
  assert_non_null(big);
  memset(big, 'x', 1000);
  char *r = kr_arena_alloc(&a, 16); /* still served by the first block */
  assert_true(r > q && r < q + 256);
  assert_string_equal(kr_arena_strndup(&a, "abcdef", 3), "abc");
  assert_null(kr_arena_alloc(&a, 4000)); /* over the cap */
  kr_arena_reset(&a);
  assert_int_equal(a.used, 0);
  assert_non_null(kr_arena_alloc(&a, 4000));
  kr_arena_free(&a);
}

/* Whole reads and writes: a read that meets the end before n bytes and a
 * write to a pipe nobody reads fail; n bytes in several pieces succeed. */
static void fd_read_write_all(void **state) {
  (void)state;
  signal(SIGPIPE, SIG_IGN);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  assert_int_equal(kr_write_all(fds[1], "abc", 3), 0);
  assert_int_equal(kr_write_all(fds[1], "de", 2), 0);
  char got[8] = {0};
  assert_int_equal(kr_read_all(fds[0], got, 4), 0);
  assert_string_equal(got, "abcd");
  close(fds[1]);
  assert_int_equal(kr_read_all(fds[0], got, 2), -1); /* "e", then the end */
  close(fds[0]);
  assert_int_equal(pipe(fds), 0);
  close(fds[0]);
  errno = 0;
  assert_int_equal(kr_write_all(fds[1], "x", 1), -1);
  assert_int_equal(errno, EPIPE);
  close(fds[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(error_names_are_distinct_and_total),
      cmocka_unit_test(buf_respects_max),
      cmocka_unit_test(slices_compare),
      cmocka_unit_test(u64_decimal_as_printf),
      cmocka_unit_test(arena_allocates_aligned_and_caps),
      cmocka_unit_test(fd_read_write_all),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
