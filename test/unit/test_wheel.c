/* Unit tests for the timer wheel: order, FIFO at equal due times, cancel,
 * callbacks that change the wheel while it runs, budgets, far-future due
 * times (49 days, UINT64_MAX), next_due bounds, validation, and a measured
 * cost per add+fire. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/error.h"
#include "kria/wheel.h"
#include "helpers.h"

#define DAY_MS (86400ull * 1000)

typedef struct item {
  kr_wheel_entry_t e;
  int id;
  int fired;       /* how many times it fired */
  uint64_t fired_at; /* wheel time when it fired */
} item_t;

/* Fire log shared by the callbacks of one test. */
static struct {
  kr_wheel_t *w;
  int order[4096];
  int n;
  uint64_t last_due;
  int out_of_order;
} g;

static item_t *item_of(kr_wheel_entry_t *e) {
  return (item_t *)((char *)e - offsetof(item_t, e));
}

static void log_cb(kr_wheel_entry_t *e) {
  item_t *it = item_of(e);
  it->fired++;
  it->fired_at = g.w->now;
  if (e->due > g.w->now) g.out_of_order++; /* fired early */
  if (g.n > 0 && e->due < g.last_due) g.out_of_order++;
  g.last_due = e->due > g.last_due ? e->due : g.last_due;
  if (g.n < (int)(sizeof(g.order) / sizeof(g.order[0]))) g.order[g.n] = it->id;
  g.n++;
}

static void reset_log(kr_wheel_t *w) {
  memset(&g, 0, sizeof(g));
  g.w = w;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void empty_wheel(void **state) {
  (void)state;
  static kr_wheel_t w;
  kr_wheel_init(&w, 12345);
  assert_int_equal(kr_wheel_validate(&w), 0);
  assert_true(kr_wheel_next_due(&w) == UINT64_MAX);
  assert_int_equal(kr_wheel_run(&w, 99999, 100), 0);
  assert_true(w.now == 99999);
  assert_int_equal(kr_wheel_run(&w, 5, 100), 0); /* never backwards */
  assert_true(w.now == 99999);
  assert_int_equal(kr_wheel_count(&w), 0);
}

/* Random due times over every scale, run in random steps: each entry fires
 * exactly once, never early, never late (all due ones fire by the end of
 * each run), and in due order. */
static void random_order(void **state) {
  (void)state;
  static kr_wheel_t w;
  enum { N = 3000 };
  static item_t it[N];
  uint64_t start = 1700000000000ull;
  kr_wheel_init(&w, start);
  reset_log(&w);
  for (int i = 0; i < N; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    it[i].id = i;
    uint64_t span;
    switch (i % 6) {
      case 0: span = 64; break;
      case 1: span = 5000; break;
      case 2: span = 3600ull * 1000; break;
      case 3: span = 60 * DAY_MS; break;
      case 4: span = 3650 * DAY_MS; break;
      default: span = 0; break;
    }
    uint64_t due = span ? start + rnd() % span : UINT64_MAX - rnd() % 3;
    kr_wheel_add(&w, &it[i].e, due);
    assert_true(kr_wheel_next_due(&w) <= due);
  }
  assert_int_equal(kr_wheel_validate(&w), 0);
  assert_int_equal(kr_wheel_count(&w), N);
  uint64_t now = start;
  int steps = 0;
  while (kr_wheel_count(&w) > 0) {
    uint64_t step;
    switch (rnd() % 4) {
      case 0: step = rnd() % 100; break;
      case 1: step = rnd() % ((UINT64_MAX - now) / 4 + 1); break; /* far */
      default: step = rnd() % (200 * DAY_MS); break;
    }
    now = step > UINT64_MAX - now ? UINT64_MAX : now + step;
    kr_wheel_run(&w, now, SIZE_MAX);
    assert_int_equal(kr_wheel_validate(&w), 0);
    for (int i = 0; i < N; i += 97)
      assert_int_equal(it[i].fired, it[i].e.due <= now ? 1 : 0);
    assert_true(++steps < 100000);
  }
  assert_int_equal(g.n, N);
  assert_int_equal(g.out_of_order, 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(it[i].fired, 1);
    assert_false(kr_wheel_is_linked(&it[i].e));
  }
}

/* Stepping millisecond by millisecond fires each entry exactly at its due
 * time (exact resolution, no batching by slot width). */
static void exact_millisecond(void **state) {
  (void)state;
  static kr_wheel_t w;
  enum { N = 200 };
  static item_t it[N];
  kr_wheel_init(&w, 0);
  reset_log(&w);
  for (int i = 0; i < N; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    it[i].id = i;
    kr_wheel_add(&w, &it[i].e, 1 + rnd() % 20000);
  }
  for (uint64_t t = 0; t <= 20000; t++) {
    kr_wheel_run(&w, t, SIZE_MAX);
    if (t % 1000 == 0) assert_int_equal(kr_wheel_validate(&w), 0);
  }
  for (int i = 0; i < N; i++) {
    assert_int_equal(it[i].fired, 1);
    assert_true(it[i].fired_at == it[i].e.due);
  }
  assert_int_equal(g.out_of_order, 0);
}

/* Same due time: insertion order, even when the first entries were added
 * far ahead (high level, cascaded down) and later ones near the time. */
static void fifo_same_ms(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t it[6];
  const uint64_t T = 10 * DAY_MS + 777;
  kr_wheel_init(&w, 0);
  reset_log(&w);
  for (int i = 0; i < 6; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    it[i].id = i;
  }
  kr_wheel_add(&w, &it[0].e, T);
  kr_wheel_add(&w, &it[1].e, T);
  kr_wheel_run(&w, T - 3 * DAY_MS, SIZE_MAX);
  kr_wheel_add(&w, &it[2].e, T);
  kr_wheel_run(&w, T - 50000, SIZE_MAX);
  kr_wheel_add(&w, &it[3].e, T);
  kr_wheel_run(&w, T - 40, SIZE_MAX);
  kr_wheel_add(&w, &it[4].e, T);
  kr_wheel_run(&w, T - 1, SIZE_MAX);
  kr_wheel_add(&w, &it[5].e, T);
  assert_int_equal(kr_wheel_validate(&w), 0);
  assert_int_equal(g.n, 0);
  assert_true(kr_wheel_next_due(&w) == T); /* within 64 ms: exact */
  assert_int_equal(kr_wheel_run(&w, T, SIZE_MAX), 6);
  for (int i = 0; i < 6; i++) assert_int_equal(g.order[i], i);
}

/* Past due times fire on the next run, after what was already due. */
static void past_due_is_due_now(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t it[3];
  kr_wheel_init(&w, 1000);
  reset_log(&w);
  for (int i = 0; i < 3; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    it[i].id = i;
  }
  kr_wheel_add(&w, &it[0].e, 1000);
  kr_wheel_add(&w, &it[1].e, 10);
  kr_wheel_add(&w, &it[2].e, 0);
  assert_true(kr_wheel_next_due(&w) <= 1000);
  assert_int_equal(kr_wheel_validate(&w), 0);
  assert_int_equal(kr_wheel_run(&w, 1000, SIZE_MAX), 3);
  for (int i = 0; i < 3; i++) assert_int_equal(g.order[i], i);
}

static void cancel_works(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t it[4];
  kr_wheel_init(&w, 0);
  reset_log(&w);
  for (int i = 0; i < 4; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    it[i].id = i;
  }
  kr_wheel_cancel(&it[0].e); /* unlinked: no-op */
  assert_int_equal(kr_wheel_count(&w), 0);
  kr_wheel_add(&w, &it[0].e, 100);
  kr_wheel_add(&w, &it[1].e, 100);
  kr_wheel_add(&w, &it[2].e, 5 * DAY_MS);
  kr_wheel_add(&w, &it[3].e, UINT64_MAX);
  kr_wheel_cancel(&it[1].e);
  kr_wheel_cancel(&it[1].e); /* twice: no-op */
  kr_wheel_cancel(&it[2].e);
  kr_wheel_cancel(&it[3].e);
  assert_int_equal(kr_wheel_validate(&w), 0);
  assert_int_equal(kr_wheel_count(&w), 1);
  assert_true(kr_wheel_next_due(&w) <= 100);
  kr_wheel_cancel(&it[0].e);
  assert_true(kr_wheel_next_due(&w) == UINT64_MAX);
  kr_wheel_add(&w, &it[0].e, 100);
  assert_int_equal(kr_wheel_run(&w, UINT64_MAX, SIZE_MAX), 1);
  assert_int_equal(it[0].fired, 1);
  assert_int_equal(it[1].fired + it[2].fired + it[3].fired, 0);
  assert_int_equal(kr_wheel_validate(&w), 0);
}

/* Re-adding a linked entry moves it (and to the back of the new queue). */
static void readd_moves(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t it[2];
  kr_wheel_init(&w, 0);
  reset_log(&w);
  for (int i = 0; i < 2; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    it[i].id = i;
  }
  kr_wheel_add(&w, &it[0].e, 50);
  kr_wheel_add(&w, &it[1].e, 50);
  kr_wheel_add(&w, &it[0].e, 50); /* now behind 1 */
  kr_wheel_add(&w, &it[1].e, DAY_MS);
  kr_wheel_add(&w, &it[1].e, 50); /* back; behind 0 */
  kr_wheel_add(&w, &it[0].e, 60);
  assert_int_equal(kr_wheel_count(&w), 2);
  assert_int_equal(kr_wheel_validate(&w), 0);
  assert_int_equal(kr_wheel_run(&w, 55, SIZE_MAX), 1);
  assert_int_equal(g.order[0], 1);
  assert_int_equal(kr_wheel_run(&w, 60, SIZE_MAX), 1);
  assert_int_equal(g.order[1], 0);
}

/* Callbacks that re-arm themselves, cancel others and add new due-now
 * entries while the wheel runs. */
static kr_wheel_entry_t *victim;
static item_t spawned;
static int periodic_left;

static void periodic_cb(kr_wheel_entry_t *e) {
  log_cb(e);
  kr_wheel_cancel(e); /* itself, already unlinked: no-op */
  if (--periodic_left > 0) kr_wheel_add(g.w, e, e->due + 10);
}

static void killer_cb(kr_wheel_entry_t *e) {
  log_cb(e);
  kr_wheel_cancel(victim);
  kr_wheel_entry_init(&spawned.e, log_cb);
  spawned.id = 99;
  kr_wheel_add(g.w, &spawned.e, g.w->now); /* due now: fires this run */
}

static void callbacks_mutate_wheel(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t per, killer, vic;
  kr_wheel_init(&w, 0);
  reset_log(&w);
  kr_wheel_entry_init(&per.e, periodic_cb);
  per.id = 1;
  kr_wheel_entry_init(&killer.e, killer_cb);
  killer.id = 2;
  kr_wheel_entry_init(&vic.e, log_cb);
  vic.id = 3;
  victim = &vic.e;
  periodic_left = 100;
  kr_wheel_add(&w, &per.e, 10);
  kr_wheel_add(&w, &killer.e, 500);
  kr_wheel_add(&w, &vic.e, 500); /* same ms as killer, after it */
  size_t n = kr_wheel_run(&w, 1000, SIZE_MAX);
  assert_int_equal(per.fired, 100); /* 10, 20, ..., 1000 */
  assert_true(per.fired_at == 1000);
  assert_int_equal(killer.fired, 1);
  assert_int_equal(vic.fired, 0);
  assert_int_equal(spawned.fired, 1);
  assert_true(spawned.fired_at == 500);
  assert_int_equal(n, 102);
  assert_int_equal(g.out_of_order, 0);
  assert_int_equal(kr_wheel_count(&w), 0);
  assert_int_equal(kr_wheel_validate(&w), 0);
}

/* A callback that re-adds itself due now is bounded by the budget. */
static void again_cb(kr_wheel_entry_t *e) {
  log_cb(e);
  kr_wheel_add(g.w, e, 0);
}

static void budget_limits_a_run(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t it[10], again;
  kr_wheel_init(&w, 0);
  reset_log(&w);
  for (int i = 0; i < 10; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    it[i].id = i;
    kr_wheel_add(&w, &it[i].e, 100 + (uint64_t)i * 1000);
  }
  assert_int_equal(kr_wheel_run(&w, 20000, 3), 3);
  assert_true(kr_wheel_next_due(&w) <= 20000); /* still due */
  assert_int_equal(kr_wheel_validate(&w), 0);
  assert_int_equal(kr_wheel_run(&w, 20000, 3), 3);
  assert_int_equal(kr_wheel_run(&w, 20000, 0), 0);
  assert_int_equal(kr_wheel_run(&w, 20000, 100), 4);
  for (int i = 0; i < 10; i++) assert_int_equal(g.order[i], i);
  assert_true(kr_wheel_next_due(&w) == UINT64_MAX);

  kr_wheel_entry_init(&again.e, again_cb);
  kr_wheel_add(&w, &again.e, 0);
  assert_int_equal(kr_wheel_run(&w, 30000, 50), 50);
  assert_true(kr_wheel_is_linked(&again.e));
  kr_wheel_cancel(&again.e);
  assert_int_equal(kr_wheel_validate(&w), 0);
}

/* 49+ days and "never" (UINT64_MAX): exact, no overflow, and a jump of
 * any size costs steps per entry, not per millisecond. */
static void far_future(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t it[4];
  uint64_t start = 1700000000123ull;
  kr_wheel_init(&w, start);
  reset_log(&w);
  uint64_t due[4] = {start + 50 * DAY_MS,
                     start + 49 * DAY_MS + 17 * 3600000ull + 5,
                     (uint64_t)1 << 63, UINT64_MAX};
  for (int i = 0; i < 4; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    it[i].id = i;
    kr_wheel_add(&w, &it[i].e, due[i]);
  }
  assert_int_equal(kr_wheel_validate(&w), 0);
  /* Follow next_due: each hop either fires or moves entries down; the
   * number of hops is bounded by entries x levels. */
  int hops = 0;
  uint64_t prev = start;
  while (kr_wheel_count(&w) > 0) {
    uint64_t nd = kr_wheel_next_due(&w);
    assert_true(nd >= prev);
    for (int i = 0; i < 4; i++)
      if (kr_wheel_is_linked(&it[i].e)) assert_true(nd <= it[i].e.due);
    /* Nothing fires before its millisecond. */
    if (nd > start) {
      kr_wheel_run(&w, nd - 1, SIZE_MAX);
      for (int i = 0; i < 4; i++)
        if (it[i].e.due > nd - 1) assert_int_equal(it[i].fired, 0);
    }
    kr_wheel_run(&w, nd, SIZE_MAX);
    assert_int_equal(kr_wheel_validate(&w), 0);
    prev = nd;
    assert_true(++hops <= 4 * KR_WHEEL_LEVELS);
  }
  assert_int_equal(g.n, 4);
  assert_int_equal(g.order[0], 1);
  assert_int_equal(g.order[1], 0);
  assert_int_equal(g.order[2], 2);
  assert_int_equal(g.order[3], 3);
  for (int i = 0; i < 4; i++) assert_true(it[i].fired_at == due[i]);
}

static void clear_unlinks_all(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t it[50];
  kr_wheel_init(&w, 0);
  reset_log(&w);
  for (int i = 0; i < 50; i++) {
    kr_wheel_entry_init(&it[i].e, log_cb);
    kr_wheel_add(&w, &it[i].e, rnd());
  }
  kr_wheel_clear(&w);
  assert_int_equal(kr_wheel_count(&w), 0);
  assert_int_equal(kr_wheel_validate(&w), 0);
  for (int i = 0; i < 50; i++) {
    assert_false(kr_wheel_is_linked(&it[i].e));
    kr_wheel_cancel(&it[i].e); /* no-op, must not touch the wheel */
  }
  assert_int_equal(kr_wheel_run(&w, UINT64_MAX, SIZE_MAX), 0);
  assert_int_equal(kr_wheel_validate(&w), 0);
}

/* validate() is not a rubber stamp: it notices a corrupted entry. */
static void validate_detects_corruption(void **state) {
  (void)state;
  static kr_wheel_t w;
  static item_t a, b;
  kr_wheel_init(&w, 0);
  kr_wheel_entry_init(&a.e, log_cb);
  kr_wheel_entry_init(&b.e, log_cb);
  kr_wheel_add(&w, &a.e, 5000);
  kr_wheel_add(&w, &b.e, 7);
  assert_int_equal(kr_wheel_validate(&w), 0);
  a.e.due = 9 * DAY_MS; /* changed behind the wheel's back */
  assert_int_equal(kr_wheel_validate(&w), KR_EINVAL);
  a.e.due = 5000;
  w.count++;
  assert_int_equal(kr_wheel_validate(&w), KR_EINVAL);
  w.count--;
  w.occupied[0] |= 1ull << 40;
  assert_int_equal(kr_wheel_validate(&w), KR_EINVAL);
  w.occupied[0] &= ~(1ull << 40);
  assert_int_equal(kr_wheel_validate(&w), 0);
  kr_wheel_clear(&w);
}

/* Cost of add + fire for 1M entries spread over 10 days (host queues), and
 * of add + cancel. Printed as TAP comments; the assertion is only a loose
 * sanity bound so the test cannot flake on a busy machine. */
static void nop_cb(kr_wheel_entry_t *e) { (void)e; }

static void measure_cost(void **state) {
  (void)state;
  enum { N = 1000000 };
  static kr_wheel_t w;
  kr_wheel_entry_t *es = malloc(sizeof(*es) * N);
  assert_non_null(es);
  kr_wheel_init(&w, 0);
  double t0 = th_now_s();
  for (int i = 0; i < N; i++) {
    kr_wheel_entry_init(&es[i], nop_cb);
    kr_wheel_add(&w, &es[i], 1 + rnd() % (10 * DAY_MS));
  }
  double t1 = th_now_s();
  size_t fired = 0;
  for (uint64_t t = 0; t <= 10 * DAY_MS; t += 1000)
    fired += kr_wheel_run(&w, t, SIZE_MAX);
  double t2 = th_now_s();
  assert_int_equal(fired, N);
  for (int i = 0; i < N; i++) kr_wheel_add(&w, &es[i], rnd());
  for (int i = 0; i < N; i++) kr_wheel_cancel(&es[i]);
  double t3 = th_now_s();
  printf("# wheel: add %.0f ns, fire (1 s steps over 10 days) %.0f ns, "
         "add+cancel %.0f ns per entry\n",
         (t1 - t0) * 1e9 / N, (t2 - t1) * 1e9 / N, (t3 - t2) * 1e9 / N);
  assert_true(t3 - t0 < 30.0);
  free(es);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(empty_wheel),
      cmocka_unit_test(random_order),
      cmocka_unit_test(exact_millisecond),
      cmocka_unit_test(fifo_same_ms),
      cmocka_unit_test(past_due_is_due_now),
      cmocka_unit_test(cancel_works),
      cmocka_unit_test(readd_moves),
      cmocka_unit_test(callbacks_mutate_wheel),
      cmocka_unit_test(budget_limits_a_run),
      cmocka_unit_test(far_future),
      cmocka_unit_test(clear_unlinks_all),
      cmocka_unit_test(validate_detects_corruption),
      cmocka_unit_test(measure_cost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
