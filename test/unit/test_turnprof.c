/*
 * Unit tests for the turn profile (src/base/turnprof.c), driven with made-up
 * times: exclusive time by phase with nesting, the poll phase's wait left
 * out, long turns counted under their largest phase (or off-CPU), late
 * probes blamed on the turn before them or on scheduling, unbalanced
 * nesting past the depth bound, and a profile that is off doing nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "turnprof.h"

#define MS 1000000ull

static void exclusive_nesting(void **state) {
  (void)state;
  kr_turnprof_t p;
  kr_tp_init(&p, 1, 0, 0);
  kr_tp_enter(&p, KR_TP_TURN, 1 * MS);
  kr_tp_enter(&p, KR_TP_COMMIT, 2 * MS);
  kr_tp_leave(&p, 7 * MS); /* commit 5 ms */
  kr_tp_leave(&p, 8 * MS); /* turn 1 + 1 ms */
  kr_tp_turn_end(&p, 10 * MS, 10 * MS);
  assert_int_equal(p.total[KR_TP_COMMIT], 5 * MS);
  assert_int_equal(p.total[KR_TP_TURN], 2 * MS);
  assert_int_equal(p.total[KR_TP_OTHER], 3 * MS);
  assert_int_equal(p.turns, 1);
  assert_int_equal(p.busy_ns, 10 * MS);
  assert_int_equal(p.offcpu_ns, 0);
  assert_int_equal(p.long_busy_ns, 0); /* 10 ms is not long */
}

static void poll_wait_left_out(void **state) {
  (void)state;
  kr_turnprof_t p;
  kr_tp_init(&p, 1, 0, 0);
  kr_tp_poll_begin(&p, 1 * MS);
  kr_tp_enter(&p, KR_TP_READ, 60 * MS); /* after 50 ms waiting, 9 ms of other I/O */
  kr_tp_leave(&p, 63 * MS);
  kr_tp_poll_end(&p, 70 * MS, 50 * MS);
  assert_int_equal(p.acc[KR_TP_READ], 3 * MS);
  assert_int_equal(p.acc[KR_TP_IO], 16 * MS);
  kr_tp_turn_end(&p, 71 * MS, 21 * MS);
  assert_int_equal(p.busy_ns, 21 * MS); /* 71 less the 50 ms wait */
  assert_int_equal(p.long_turns[KR_TP_IO], 1);
  assert_int_equal(p.long_ns[KR_TP_IO], 16 * MS);
  assert_int_equal(p.long_max_ns, 21 * MS);
}

static void long_turn_off_cpu(void **state) {
  (void)state;
  kr_turnprof_t p;
  kr_tp_init(&p, 1, 0, 0);
  kr_tp_enter(&p, KR_TP_COMMIT, 0);
  kr_tp_leave(&p, 30 * MS);
  kr_tp_turn_end(&p, 30 * MS, 5 * MS); /* ran 5 ms of the 30 */
  assert_int_equal(p.long_turns[KR_TP_OFFCPU], 1);
  assert_int_equal(p.long_turns[KR_TP_COMMIT], 0);
  assert_int_equal(p.long_offcpu_ns, 25 * MS);
}

static void late_probe_blame(void **state) {
  (void)state;
  kr_turnprof_t p;
  kr_tp_init(&p, 1, 0, 0);
  kr_tp_enter(&p, KR_TP_FLUSH_HOSTS, 0);
  kr_tp_leave(&p, 25 * MS);
  kr_tp_enter(&p, KR_TP_COMMIT, 25 * MS);
  kr_tp_leave(&p, 35 * MS);
  kr_tp_turn_end(&p, 35 * MS, 35 * MS);
  /* the probe due at 10 ms fires at the start of the next turn */
  assert_int_equal(kr_tp_late(&p, 36 * MS, 26 * MS), KR_TP_FLUSH_HOSTS);
  /* a turn that mostly waited in poll, then a probe 30 ms late: the
   * thread was woken on time (the wait counts until it runs) */
  kr_tp_poll_begin(&p, 36 * MS);
  kr_tp_poll_end(&p, 74 * MS, 37 * MS);
  kr_tp_turn_end(&p, 75 * MS, 37 * MS);
  assert_int_equal(p.last_busy, 3 * MS);
  assert_int_equal(kr_tp_late(&p, 75 * MS, 30 * MS), KR_TP_SCHED);
  assert_int_equal(p.late[KR_TP_FLUSH_HOSTS], 1);
  assert_int_equal(p.late[KR_TP_SCHED], 1);
}

static void depth_bound(void **state) {
  (void)state;
  kr_turnprof_t p;
  kr_tp_init(&p, 1, 0, 0);
  for (int i = 0; i < KR_TP_DEPTH + 3; i++) kr_tp_enter(&p, KR_TP_DONE, (uint64_t)i * MS);
  for (int i = 0; i < KR_TP_DEPTH + 3; i++) kr_tp_leave(&p, 100 * MS);
  assert_int_equal(p.depth, 0);
  assert_int_equal(p.cur, KR_TP_OTHER);
  kr_tp_leave(&p, 101 * MS); /* one too many: ignored */
  assert_int_equal(p.cur, KR_TP_OTHER);
}

static void off_does_nothing(void **state) {
  (void)state;
  kr_turnprof_t p;
  kr_tp_init(&p, 0, 0, 0);
  kr_tp_enter(&p, KR_TP_COMMIT, 0);
  kr_tp_leave(&p, 50 * MS);
  kr_tp_turn_end(&p, 50 * MS, 0);
  kr_tp_late(&p, 60 * MS, 40 * MS);
  kr_turnprof_t z;
  kr_tp_init(&z, 0, 0, 0);
  assert_memory_equal(&p, &z, sizeof p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exclusive_nesting), cmocka_unit_test(poll_wait_left_out),
      cmocka_unit_test(long_turn_off_cpu), cmocka_unit_test(late_probe_blame),
      cmocka_unit_test(depth_bound),       cmocka_unit_test(off_does_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
