/* Loop tests for timers on libuv (real clock) and the virtual clock: order
 * of firing, no uv timer callbacks while nothing is scheduled, re-arming
 * only when the earliest due time changes, callbacks that start/stop
 * timers or close everything, per-turn budgets, and clean teardown
 * (uv_loop_close() == 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "kria/error.h"
#include "timer.h"

typedef struct tmr {
  kr_wheel_entry_t e;
  kr_timers_t *t;
  int id;
  int fired;
  uint64_t fired_at; /* kr_clock time seen by the callback */
  int repeat;        /* re-arm this many more times, every `period` ms */
  uint64_t period;
} tmr_t;

static struct {
  int order[8192];
  int n;
  int early; /* callbacks that ran before their due time */
  int closed;
} g;

static tmr_t *tmr_of(kr_wheel_entry_t *e) {
  return (tmr_t *)((char *)e - offsetof(tmr_t, e));
}

static void on_fire(kr_wheel_entry_t *e) {
  tmr_t *x = tmr_of(e);
  x->fired++;
  x->fired_at = kr_clock_now_ms(x->t->clock);
  if (x->fired_at < e->due) g.early++;
  if (g.n < (int)(sizeof(g.order) / sizeof(g.order[0]))) g.order[g.n] = x->id;
  g.n++;
  if (x->repeat > 0) {
    x->repeat--;
    kr_timer_start(x->t, e, e->due + x->period, on_fire);
  }
}

static void on_closed(kr_timers_t *t) {
  (void)t;
  g.closed++;
}

static void tmr_init(tmr_t *x, kr_timers_t *t, int id) {
  memset(x, 0, sizeof(*x));
  kr_wheel_entry_init(&x->e, on_fire);
  x->t = t;
  x->id = id;
}

/* Guard: an unreferenced timer that stops a runaway loop after 10 s. */
static int guard_hit;
static void on_guard(uv_timer_t *h) {
  guard_hit = 1;
  uv_stop(h->loop);
}
static void start_guard(uv_loop_t *loop, uv_timer_t *guard) {
  guard_hit = 0;
  uv_timer_init(loop, guard);
  uv_timer_start(guard, on_guard, 10000, 0);
  uv_unref((uv_handle_t *)guard);
}

static void close_self(uv_timer_t *h) { uv_close((uv_handle_t *)h, NULL); }

static void close_loop(uv_loop_t *loop, uv_timer_t *guard) {
  uv_close((uv_handle_t *)guard, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(loop), 0);
}

/* ---- real loop ------------------------------------------------------- */

/* Several timers fire in due order (FIFO at equal due), none early; the
 * loop ends on its own once the wheel is empty because the uv timer is
 * stopped then; and no uv callback fires while nothing is scheduled. */
static void real_loop_fires_in_order(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_timer_t guard;
  kr_clock_t clock;
  kr_timers_t t;
  tmr_t x[6];
  memset(&g, 0, sizeof(g));
  assert_int_equal(uv_loop_init(&loop), 0);
  start_guard(&loop, &guard);
  kr_clock_init_real(&clock);
  assert_int_equal(kr_timers_init(&t, &loop, &clock), 0);
  assert_false(uv_is_active((uv_handle_t *)&t.handle)); /* idle: no ticking */
  uint64_t now = kr_clock_now_ms(&clock);
  uint64_t off[6] = {40, 10, 25, 10, 60, 5};
  for (int i = 0; i < 6; i++) {
    tmr_init(&x[i], &t, i);
    kr_timer_start(&t, &x[i].e, now + off[i], on_fire);
  }
  assert_int_equal(g.n, 0); /* never from inside start */
  assert_true(uv_is_active((uv_handle_t *)&t.handle));
  uv_run(&loop, UV_RUN_DEFAULT); /* returns when nothing is armed */
  assert_false(guard_hit);
  assert_int_equal(g.n, 6);
  int want[6] = {5, 1, 3, 2, 0, 4};
  for (int i = 0; i < 6; i++) assert_int_equal(g.order[i], want[i]);
  assert_int_equal(g.early, 0);
  /* Distinct due times: 5 (fewer callbacks if the loop ran late); a few
   * extra wake-ups are allowed for entries moving down a level or a
   * millisecond of rounding, never a tick per ms. */
  printf("# uv timer callbacks for 5 distinct due times: %llu\n",
         (unsigned long long)t.uv_fires);
  assert_true(t.uv_fires >= 1 && t.uv_fires <= 12);
  assert_false(uv_is_active((uv_handle_t *)&t.handle));

  /* Idle period of 50 ms with nothing scheduled: no uv timer callback. */
  uint64_t fires = t.uv_fires;
  uv_timer_t wait;
  uv_timer_init(&loop, &wait);
  uv_timer_start(&wait, close_self, 50, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_true(t.uv_fires == fires);

  kr_timers_close(&t, on_closed);
  assert_int_equal(g.closed, 0); /* from the loop, not from close */
  close_loop(&loop, &guard);
  assert_int_equal(g.closed, 1);
}

/* The uv timer is re-armed only when the earliest due time changes, and
 * stopped once the wheel is empty. */
static void rearm_only_when_earliest_changes(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_timer_t guard;
  kr_clock_t clock;
  kr_timers_t t;
  tmr_t a, b, c;
  memset(&g, 0, sizeof(g));
  assert_int_equal(uv_loop_init(&loop), 0);
  start_guard(&loop, &guard);
  kr_clock_init_real(&clock);
  assert_int_equal(kr_timers_init(&t, &loop, &clock), 0);
  tmr_init(&a, &t, 0);
  tmr_init(&b, &t, 1);
  tmr_init(&c, &t, 2);
  uint64_t now = kr_clock_now_ms(&clock);
  kr_timer_start(&t, &a.e, now + 60000, on_fire);
  assert_true(t.arms == 1);
  uint64_t armed = t.armed_at;
  assert_true(armed <= now + 60000);
  kr_timer_start(&t, &b.e, now + 120000, on_fire); /* later: no re-arm */
  assert_true(t.arms == 1 && t.armed_at == armed);
  kr_timer_stop(&b.e);
  assert_true(t.arms == 1);
  kr_timer_start(&t, &c.e, now + 30, on_fire); /* earlier: re-arm */
  assert_true(t.arms == 2);
  kr_timer_stop(&c.e); /* earliest gone: re-arm back */
  assert_true(t.arms == 3 && t.armed_at == armed);
  kr_timer_stop(&c.e); /* not armed: no-op */
  assert_true(t.arms == 3);
  kr_timer_stop(&a.e); /* empty: uv timer stopped */
  assert_false(uv_is_active((uv_handle_t *)&t.handle));
  assert_true(t.armed_at == UINT64_MAX);
  uv_run(&loop, UV_RUN_DEFAULT); /* nothing armed: returns at once */
  assert_true(t.uv_fires == 0);
  assert_int_equal(g.n, 0);
  kr_timers_close(&t, on_closed);
  close_loop(&loop, &guard);
  assert_int_equal(g.closed, 1);
}

/* Callbacks re-arm themselves and stop another timer; a later one closes
 * the whole timers object from inside its callback. */
static tmr_t *victim;
static void stop_victim(kr_wheel_entry_t *e) {
  on_fire(e);
  kr_timer_stop(&victim->e);
}
static void close_all(kr_wheel_entry_t *e) {
  on_fire(e);
  kr_timers_close(tmr_of(e)->t, on_closed);
}

static void callbacks_start_stop_close(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_timer_t guard;
  kr_clock_t clock;
  kr_timers_t t;
  tmr_t per, killer, vic, closer, never;
  memset(&g, 0, sizeof(g));
  assert_int_equal(uv_loop_init(&loop), 0);
  start_guard(&loop, &guard);
  kr_clock_init_real(&clock);
  assert_int_equal(kr_timers_init(&t, &loop, &clock), 0);
  uint64_t now = kr_clock_now_ms(&clock);
  tmr_init(&per, &t, 1);
  per.repeat = 4;
  per.period = 5;
  tmr_init(&killer, &t, 2);
  tmr_init(&vic, &t, 3);
  tmr_init(&closer, &t, 4);
  tmr_init(&never, &t, 5);
  victim = &vic;
  kr_timer_start(&t, &per.e, now + 5, on_fire);
  kr_timer_start(&t, &killer.e, now + 12, stop_victim);
  kr_timer_start(&t, &vic.e, now + 40, on_fire);
  kr_timer_start(&t, &closer.e, now + 50, close_all);
  kr_timer_start(&t, &never.e, now + 3600000, on_fire);
  uv_run(&loop, UV_RUN_DEFAULT); /* ends: closing stops everything */
  assert_false(guard_hit);
  assert_int_equal(per.fired, 5);
  assert_int_equal(killer.fired, 1);
  assert_int_equal(vic.fired, 0);
  assert_int_equal(closer.fired, 1);
  assert_int_equal(never.fired, 0);
  assert_false(kr_timer_is_active(&never.e)); /* close unlinked it */
  kr_timer_stop(&never.e);                    /* and stop is a no-op */
  assert_int_equal(g.closed, 1);
  assert_int_equal(g.early, 0);
  close_loop(&loop, &guard);
}

/* 3,000 entries due together with a budget of 1,000 per callback: all
 * fire, in at least three uv callbacks, so a burst cannot hog the loop. */
static void budget_splits_bursts(void **state) {
  (void)state;
  enum { N = 3000 };
  static tmr_t x[N];
  uv_loop_t loop;
  uv_timer_t guard;
  kr_clock_t clock;
  kr_timers_t t;
  memset(&g, 0, sizeof(g));
  assert_int_equal(uv_loop_init(&loop), 0);
  start_guard(&loop, &guard);
  kr_clock_init_real(&clock);
  assert_int_equal(kr_timers_init(&t, &loop, &clock), 0);
  t.budget = 1000;
  uint64_t due = kr_clock_now_ms(&clock) + 3;
  for (int i = 0; i < N; i++) {
    tmr_init(&x[i], &t, i);
    kr_timer_start(&t, &x[i].e, due, on_fire);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_false(guard_hit);
  assert_int_equal(g.n, N);
  for (int i = 0; i < N; i++) assert_int_equal(g.order[i], i);
  assert_true(t.uv_fires >= 3);
  kr_timers_close(&t, NULL);
  close_loop(&loop, &guard);
}

/* ---- virtual clock --------------------------------------------------- */

/* Sixty days of a daily timer and a few one-offs take no waiting; each
 * callback sees the clock at its own due time; the uv loop is untouched. */
static void virtual_advance(void **state) {
  (void)state;
  uv_loop_t loop;
  kr_clock_t clock;
  kr_timers_t t;
  tmr_t daily, a, b, far;
  const uint64_t day = 86400000, start = 1700000000000ull;
  memset(&g, 0, sizeof(g));
  assert_int_equal(uv_loop_init(&loop), 0);
  kr_clock_init_virtual(&clock, start);
  assert_int_equal(kr_timers_init(&t, &loop, &clock), 0);
  tmr_init(&daily, &t, 1);
  daily.repeat = 59;
  daily.period = day;
  tmr_init(&a, &t, 2);
  tmr_init(&b, &t, 3);
  tmr_init(&far, &t, 4);
  kr_timer_start(&t, &daily.e, start + day, on_fire);
  kr_timer_start(&t, &a.e, start + 1500, on_fire);
  kr_timer_start(&t, &b.e, start + 1500, on_fire);
  kr_timer_start(&t, &far.e, UINT64_MAX, on_fire); /* "never" */
  assert_false(uv_is_active((uv_handle_t *)&t.handle));
  assert_int_equal(kr_timers_advance(&t, 1499), 0);
  assert_true(kr_clock_now_ms(&clock) == start + 1499);
  assert_int_equal(kr_timers_advance(&t, 1), 2);
  assert_int_equal(g.order[0], 2);
  assert_int_equal(g.order[1], 3);
  assert_true(a.fired_at == start + 1500);
  assert_int_equal(kr_timers_advance(&t, 60 * day), 60);
  assert_int_equal(daily.fired, 60);
  assert_true(daily.fired_at == start + 60 * day); /* its own due time */
  assert_true(kr_clock_now_ms(&clock) == start + 1500 + 60 * day);
  assert_int_equal(far.fired, 0);
  assert_int_equal(g.early, 0);
  /* Past due now: advance(0) runs it. */
  kr_timer_start(&t, &a.e, start, on_fire);
  assert_int_equal(kr_timers_advance(&t, 0), 1);
  assert_true(t.uv_fires == 0 && t.arms == 0);
  assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 0); /* nothing active */
  kr_timers_close(&t, on_closed);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(g.closed, 1);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* A callback re-arming itself at "now" cannot make advance spin forever;
 * without a loop, close calls back at once. */
static void again_now(kr_wheel_entry_t *e) {
  tmr_t *x = tmr_of(e);
  x->fired++;
  kr_timer_start(x->t, e, 0, again_now);
}

static void virtual_without_loop(void **state) {
  (void)state;
  kr_clock_t clock, real;
  kr_timers_t t;
  tmr_t x;
  memset(&g, 0, sizeof(g));
  kr_clock_init_real(&real);
  assert_int_equal(kr_timers_init(&t, NULL, &real), KR_EINVAL);
  kr_clock_init_virtual(&clock, 0);
  assert_int_equal(kr_timers_init(&t, NULL, &clock), 0);
  tmr_init(&x, &t, 1);
  tmr_t y;
  tmr_init(&y, &t, 2);
  kr_timer_start(&t, &x.e, 10, again_now);
  kr_timer_start(&t, &y.e, 50, on_fire);
  assert_int_equal(kr_timers_advance(&t, 100), 1000000);
  assert_true(kr_timer_is_active(&x.e));
  /* stopped early: the clock stays where the callbacks were, so what
   * was due later still fires on time (the simulator's timing must not
   * depend on how many other callbacks a step ran) */
  assert_int_equal(kr_clock_now_ms(&clock), 10);
  kr_timer_stop(&x.e);
  assert_int_equal(kr_timers_advance(&t, 100), 1);
  assert_int_equal(y.fired, 1);
  assert_true(y.fired_at == 50);
  assert_int_equal(kr_clock_now_ms(&clock), 110);
  kr_timers_close(&t, on_closed);
  assert_int_equal(g.closed, 1);
  assert_false(kr_timer_is_active(&x.e));
}

/* A turn's budget: 1,000 units of 1 ms each, 4 ms per turn: every turn
 * runs 4 or 5 units (the one that crosses the limit starts before it), the
 * first unit of a turn always runs, and no unit is lost or reordered. */
static void turn_budget_bounds_a_turn(void **state) {
  (void)state;
  kr_turn_budget_t b;
  kr_turn_budget_init(&b, 4000000);
  uint64_t now = 1000000000; /* ns */
  size_t done = 0, turns = 0, max_per_turn = 0;
  while (done < 1000 && turns < 10000) {
    kr_turn_budget_reset(&b);
    turns++;
    size_t n = 0;
    while (done < 1000 && kr_turn_budget_take(&b, now)) {
      now += 1000000; /* the unit's work */
      done++;
      n++;
    }
    assert_true(n >= 1);
    if (n > max_per_turn) max_per_turn = n;
    now += 50000; /* the rest of the loop turn */
  }
  assert_int_equal(done, 1000);
  assert_int_equal(max_per_turn, 4);
  assert_int_equal(turns, 250);
  assert_int_equal(b.deferred, 249);
  /* A slow first unit still runs; the next waits. */
  kr_turn_budget_reset(&b);
  assert_true(kr_turn_budget_take(&b, now));
  now += 100000000;
  assert_false(kr_turn_budget_take(&b, now));
  /* Cheap units: many per turn. */
  kr_turn_budget_reset(&b);
  size_t cheap = 0;
  while (cheap < 100000 && kr_turn_budget_take(&b, now)) {
    now += 1000;
    cheap++;
  }
  assert_int_equal(cheap, 4000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(real_loop_fires_in_order),
      cmocka_unit_test(rearm_only_when_earliest_changes),
      cmocka_unit_test(callbacks_start_stop_close),
      cmocka_unit_test(budget_splits_bursts),
      cmocka_unit_test(virtual_advance),
      cmocka_unit_test(virtual_without_loop),
      cmocka_unit_test(turn_budget_bounds_a_turn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
