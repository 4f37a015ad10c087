/*
 * The one source of time (see clock.h). Real mode reads CLOCK_REALTIME
 * exactly once, at init, and from then on adds CLOCK_MONOTONIC deltas to
 * it: a wall-clock step (NTP, an operator) while the crawler runs can
 * neither move a scheduled visit backwards nor make two visits swap
 * places. Virtual mode is a counter that only kr_clock_advance() and
 * kr_clock_set() move, and never backwards. Sections: helpers, init, read,
 * move.
 */
#include "clock.h"

#include <time.h>

static uint64_t ts_ms(const struct timespec *ts) {
  return (uint64_t)ts->tv_sec * 1000u + (uint64_t)ts->tv_nsec / 1000000u;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void kr_clock_init_real(kr_clock_t *c) {
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  c->is_virtual = 0;
  c->virt_ms = 0;
  c->anchor_wall = ts_ms(&wall);
  c->anchor_mono = mono_ns() / 1000000u;
}

void kr_clock_init_virtual(kr_clock_t *c, uint64_t start_ms) {
  c->is_virtual = 1;
  c->virt_ms = start_ms;
  c->anchor_wall = 0;
  c->anchor_mono = 0;
}

uint64_t kr_clock_now_ms(const kr_clock_t *c) {
  if (c->is_virtual) return c->virt_ms;
  uint64_t mono = mono_ns() / 1000000u;
  /* CLOCK_MONOTONIC never goes backwards; guard anyway so a corrupted
   * anchor cannot make time wrap around. */
  return c->anchor_wall + (mono >= c->anchor_mono ? mono - c->anchor_mono : 0);
}

uint64_t kr_clock_mono_us(const kr_clock_t *c) {
  if (c->is_virtual)
    return c->virt_ms > UINT64_MAX / 1000u ? UINT64_MAX : c->virt_ms * 1000u;
  return mono_ns() / 1000u;
}

void kr_clock_advance(kr_clock_t *c, uint64_t ms) {
  if (!c->is_virtual) return; /* real time is not ours to move */
  c->virt_ms = ms > UINT64_MAX - c->virt_ms ? UINT64_MAX : c->virt_ms + ms;
}

void kr_clock_set(kr_clock_t *c, uint64_t now_ms) {
  if (!c->is_virtual) return; /* real time is not ours to move */
  if (now_ms > c->virt_ms) c->virt_ms = now_ms;
}
