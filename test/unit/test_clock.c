/* Unit tests for the clock: real mode tracks wall time but is anchored
 * (monotonic deltas only after init), virtual mode moves only when told
 * and never backwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>

#include "clock.h"

static void clock_real_tracks_wall_time(void **state) {
  (void)state;
  kr_clock_t c;
  kr_clock_init_real(&c);
  uint64_t wall = (uint64_t)time(NULL) * 1000;
  uint64_t a = kr_clock_now_ms(&c);
  assert_true(a + 2000 > wall && a < wall + 2000);
  uint64_t prev = a, us = kr_clock_mono_us(&c);
  for (int i = 0; i < 100000; i++) {
    uint64_t n = kr_clock_now_ms(&c);
    assert_true(n >= prev);
    prev = n;
  }
  assert_true(kr_clock_mono_us(&c) >= us);
  kr_clock_advance(&c, 1000000); /* real time is not ours to move */
  assert_true(kr_clock_now_ms(&c) < a + 500000);
}

/* now = wall anchor + monotonic elapsed: after init the wall clock is not
 * read again, so a step of the wall clock cannot reach the schedule. We
 * show it by moving the anchor the way a step would have: the reading
 * moves by exactly the anchor, i.e. it depends on nothing else. */
static void clock_real_is_anchored(void **state) {
  (void)state;
  kr_clock_t c;
  kr_clock_init_real(&c);
  c.anchor_wall = 1000;
  uint64_t n = kr_clock_now_ms(&c);
  assert_true(n >= 1000 && n < 1000 + 5000);
  c.anchor_mono += 3600000; /* anchor ahead of the monotonic clock */
  assert_true(kr_clock_now_ms(&c) == 1000); /* saturates, never wraps */
}

static void clock_virtual_moves_only_forward(void **state) {
  (void)state;
  kr_clock_t c;
  kr_clock_init_virtual(&c, 5000);
  assert_true(kr_clock_now_ms(&c) == 5000);
  assert_true(kr_clock_mono_us(&c) == 5000000);
  assert_true(kr_clock_now_ms(&c) == 5000); /* stands still */
  kr_clock_advance(&c, 250);
  assert_true(kr_clock_now_ms(&c) == 5250);
  kr_clock_set(&c, 100); /* backwards: ignored */
  assert_true(kr_clock_now_ms(&c) == 5250);
  kr_clock_set(&c, 9000);
  assert_true(kr_clock_now_ms(&c) == 9000);
  kr_clock_advance(&c, UINT64_MAX); /* saturates */
  assert_true(kr_clock_now_ms(&c) == UINT64_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(clock_real_tracks_wall_time),
      cmocka_unit_test(clock_real_is_anchored),
      cmocka_unit_test(clock_virtual_moves_only_forward),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
