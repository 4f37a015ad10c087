/*
 * The one source of time in kria. Real mode: wall-clock milliseconds
 * since the epoch, derived from a monotonic clock anchored once at init,
 * so a clock step while running cannot reorder the schedule. Virtual
 * mode: time stands still until kr_clock_advance()/kr_clock_set() moves
 * it, so tests and `kria simulate` run months of revisits in seconds.
 */
#ifndef KRIA_CLOCK_H
#define KRIA_CLOCK_H

#include <stdint.h>

typedef struct kr_clock {
  int is_virtual;       /* 1 = time moves only when told */
  uint64_t virt_ms;     /* virtual now, epoch ms */
  uint64_t anchor_wall; /* real mode: epoch ms at init */
  uint64_t anchor_mono; /* real mode: monotonic ms at init */
} kr_clock_t;

void kr_clock_init_real(kr_clock_t *c);
void kr_clock_init_virtual(kr_clock_t *c, uint64_t start_ms);
/* Now, in epoch milliseconds. */
uint64_t kr_clock_now_ms(const kr_clock_t *c);
/* Monotonic microseconds for measuring durations (virtual: now_ms*1000). */
uint64_t kr_clock_mono_us(const kr_clock_t *c);
/* Virtual mode only; never moves time backwards. */
void kr_clock_advance(kr_clock_t *c, uint64_t ms);
void kr_clock_set(kr_clock_t *c, uint64_t now_ms);

#endif
