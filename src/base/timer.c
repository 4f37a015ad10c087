/*
 * Timers on the loop (see timer.h): a kr_wheel_t driven by one uv_timer_t.
 * The uv timer is always armed at exactly kr_wheel_next_due() (or stopped
 * when that is UINT64_MAX), so it fires only when the wheel has work: an
 * entry due, or entries to move down a level on their way to due. Changes
 * made from inside timer callbacks are folded into one re-arm after the
 * wheel's run. Each uv callback runs at most `budget` entries; the rest run
 * 1 ms later so network I/O gets its turn (libuv 1.44 would run a timer
 * re-armed with timeout 0 again within the same timer phase). Sections:
 * arming, uv callbacks, public API, a turn's budget (kr_turn_budget_t).
 */
#include "timer.h"

#include <string.h>

#include "internal.h"
#include "turnprof.h"

#define ADVANCE_MAX 1000000

/* ---- arming ---------------------------------------------------------- */

static void on_uv_timer(uv_timer_t *h);

/* Bring the uv timer in line with the wheel's earliest due time. */
static void rearm(kr_timers_t *t, uint64_t min_delay) {
  if (t->closing || t->running || t->clock->is_virtual || !t->loop) return;
  uint64_t nd = kr_wheel_next_due(&t->wheel);
  if (nd == t->armed_at) return;
  if (nd == UINT64_MAX) {
    uv_timer_stop(&t->handle);
    t->armed_at = UINT64_MAX;
    return;
  }
  /* Refresh the loop's cached time so the delay is measured from now, not
   * from the start of this loop turn. */
  uv_update_time(t->loop);
  uint64_t now = kr_clock_now_ms(t->clock);
  uint64_t delay = nd > now ? nd - now : 0;
  if (delay < min_delay) delay = min_delay;
  uv_timer_start(&t->handle, on_uv_timer, delay, 0);
  t->armed_at = nd;
  t->arms++;
}

/* ---- uv callbacks ---------------------------------------------------- */

static void on_uv_timer(uv_timer_t *h) {
  kr_timers_t *t = container_of(h, kr_timers_t, handle);
  t->armed_at = UINT64_MAX; /* a one-shot: no longer armed */
  t->uv_fires++;
  t->running = 1;
  KR_TP_ENTER(KR_TP_TIMERS);
  size_t n = kr_wheel_run(&t->wheel, kr_clock_now_ms(t->clock), t->budget);
  KR_TP_LEAVE();
  t->running = 0;
  /* Budget spent with entries still due: yield to I/O for a millisecond. */
  rearm(t, n >= t->budget ? 1 : 0);
}

static void on_uv_close(uv_handle_t *h) {
  kr_timers_t *t = container_of((uv_timer_t *)h, kr_timers_t, handle);
  if (t->close_cb) t->close_cb(t);
}

/* ---- public API ------------------------------------------------------ */

int kr_timers_init(kr_timers_t *t, uv_loop_t *loop, kr_clock_t *clock) {
  if (!clock || (!loop && !clock->is_virtual)) return KR_EINVAL;
  kr_wheel_init(&t->wheel, kr_clock_now_ms(clock));
  t->loop = loop;
  t->clock = clock;
  t->armed_at = UINT64_MAX;
  t->budget = KR_TIMERS_BUDGET;
  t->running = 0;
  t->closing = 0;
  t->close_cb = NULL;
  t->uv_fires = 0;
  t->arms = 0;
  if (loop) {
    int rc = uv_timer_init(loop, &t->handle);
    if (rc < 0) return KR_EINVAL;
  }
  return 0;
}

void kr_timer_start(kr_timers_t *t, kr_wheel_entry_t *e, uint64_t due_ms,
                    kr_wheel_cb cb) {
  kr_wheel_t *old = e->wheel;
  e->cb = cb;
  kr_wheel_add(&t->wheel, e, due_ms);
  if (old && old != &t->wheel)
    rearm(container_of(old, kr_timers_t, wheel), 0);
  rearm(t, 0);
}

void kr_timer_stop(kr_wheel_entry_t *e) {
  kr_wheel_t *w = e->wheel;
  if (!w) return;
  kr_wheel_cancel(e);
  rearm(container_of(w, kr_timers_t, wheel), 0);
}

size_t kr_timers_advance(kr_timers_t *t, uint64_t ms) {
  if (!t->clock->is_virtual || t->running || t->closing) return 0;
  uint64_t now = kr_clock_now_ms(t->clock);
  uint64_t target = ms > UINT64_MAX - now ? UINT64_MAX : now + ms;
  size_t fired = 0;
  t->running = 1;
  for (;;) {
    uint64_t nd = kr_wheel_next_due(&t->wheel);
    if (nd > target || fired >= ADVANCE_MAX) break;
    kr_clock_set(t->clock, nd); /* no-op when nd is already past */
    fired += kr_wheel_run(&t->wheel, kr_clock_now_ms(t->clock),
                          ADVANCE_MAX - fired);
    if (t->closing) break; /* a callback closed us */
  }
  /* Stopped early, the clock stays at the callbacks' time: moving it to
   * target would run what is due before target late, by an amount that
   * depends on how many callbacks the step had. */
  if (!t->closing && fired < ADVANCE_MAX) {
    kr_clock_set(t->clock, target);
    kr_wheel_run(&t->wheel, target, 0);
  }
  t->running = 0;
  return fired;
}

void kr_timers_close(kr_timers_t *t, kr_timers_close_cb cb) {
  if (t->closing) return;
  t->closing = 1;
  t->close_cb = cb;
  kr_wheel_clear(&t->wheel);
  t->armed_at = UINT64_MAX;
  if (t->loop) {
    uv_timer_stop(&t->handle);
    uv_close((uv_handle_t *)&t->handle, on_uv_close);
  } else if (cb) {
    cb(t);
  }
}

/* ---- a turn's budget ------------------------------------------------------------- */

void kr_turn_budget_init(kr_turn_budget_t *b, uint64_t limit_ns) {
  memset(b, 0, sizeof *b);
  b->limit_ns = limit_ns;
}

void kr_turn_budget_reset(kr_turn_budget_t *b) { b->open = 0; }

int kr_turn_budget_take(kr_turn_budget_t *b, uint64_t now_ns) {
  if (!b->open) {
    b->open = 1;
    b->start_ns = now_ns;
    return 1;
  }
  if (now_ns - b->start_ns < b->limit_ns) return 1;
  b->deferred++;
  return 0;
}
