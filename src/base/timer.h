/*
 * Timers on the loop: one kr_wheel_t plus one uv_timer_t armed at the
 * wheel's next due time, reading time from the kr_clock. The uv timer never
 * ticks while idle: it is re-armed on start/stop only when the wheel's
 * earliest due time changed, and stopped when the wheel is empty. With a
 * virtual clock the uv timer is never armed; kr_timers_advance() moves the
 * clock and runs what became due, so a month of revisits takes no waiting.
 *
 * Entries are kr_wheel_entry_t embedded in the caller's structs (see
 * include/kria/wheel.h); starting and stopping never allocates.
 */
#ifndef KRIA_TIMER_H
#define KRIA_TIMER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clock.h"
#include "kria/wheel.h"

#define KR_TIMERS_BUDGET 1024 /* callbacks per loop turn before yielding */

/* A loop turn's share of some work: ask before each unit; once units have
 * run for limit_ns since the first one of this turn, the rest waits for
 * the next turn (the caller keeps it, in order). The first unit of a turn
 * always runs, so work never stalls. Times come from the caller (a
 * monotonic clock in ns), so tests drive it without a loop. */
typedef struct kr_turn_budget {
  uint64_t limit_ns;
  uint64_t start_ns; /* first unit of this turn */
  int open;          /* a unit ran since the last reset */
  uint64_t deferred; /* units told to wait, ever (stats, tests) */
} kr_turn_budget_t;

void kr_turn_budget_init(kr_turn_budget_t *b, uint64_t limit_ns);
/* A new turn begins. */
void kr_turn_budget_reset(kr_turn_budget_t *b);
/* 1: run the unit now; 0: the turn is spent, keep it for the next. */
int kr_turn_budget_take(kr_turn_budget_t *b, uint64_t now_ns);

typedef struct kr_timers kr_timers_t;
typedef void (*kr_timers_close_cb)(kr_timers_t *t);

struct kr_timers {
  kr_wheel_t wheel;            /* every linked entry of these timers */
  uv_timer_t handle;           /* real clock: armed at armed_at */
  uv_loop_t *loop;             /* NULL allowed with a virtual clock */
  kr_clock_t *clock;           /* not owned */
  uint64_t armed_at;           /* handle armed for this; UINT64_MAX: stopped */
  size_t budget;               /* callbacks per uv timer callback */
  int running;                 /* in the wheel's run: re-arm once, after */
  int closing;                 /* kr_timers_close() was called */
  kr_timers_close_cb close_cb; /* called once the handle is closed */
  uint64_t uv_fires;           /* uv timer callbacks so far (stats, tests) */
  uint64_t arms;               /* uv_timer_start calls so far (stats, tests) */
};

/* Initialise t on loop with clock (both must outlive t). loop may be NULL
 * only with a virtual clock. Returns 0 or KR_EINVAL. */
int kr_timers_init(kr_timers_t *t, uv_loop_t *loop, kr_clock_t *clock);

/* Arm e (embedded in the caller's struct) to call cb at due_ms (absolute,
 * kr_clock epoch ms; a past time means "as soon as possible"). Re-arming a
 * linked entry moves it. Never calls cb from inside this call. */
void kr_timer_start(kr_timers_t *t, kr_wheel_entry_t *e, uint64_t due_ms,
                    kr_wheel_cb cb);

/* Disarm e; its callback will not run. A no-op when e is not armed. e must
 * have been armed through kr_timer_start (its wheel is inside a
 * kr_timers_t). */
void kr_timer_stop(kr_wheel_entry_t *e);

static inline int kr_timer_is_active(const kr_wheel_entry_t *e) {
  return kr_wheel_is_linked(e);
}

/* Virtual clock only: move the clock forward by ms, stepping it to each
 * due time in turn so every callback sees the clock at its own due time,
 * and run everything that becomes due (advance(0) runs what is due now).
 * Returns the number of callbacks run; stops early (leaving entries due,
 * the clock at the last callbacks' time, not moved on to now + ms) after
 * 1,000,000 callbacks so a callback re-arming itself at "now" cannot spin
 * forever. Returns 0 with a real clock or when called from a
 * callback. */
size_t kr_timers_advance(kr_timers_t *t, uint64_t ms);

/* Disarm every entry (they are unlinked; kr_timer_stop on them is then a
 * no-op) and close the uv handle; cb (may be NULL) runs once it is closed,
 * from the loop — or at once when t has no loop. t must stay valid until
 * then. May be called from a timer callback. */
void kr_timers_close(kr_timers_t *t, kr_timers_close_cb cb);

#endif
