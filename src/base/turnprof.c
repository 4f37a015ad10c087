/*
 * Where a loop turn's time goes (see turnprof.h). Costs two clock reads
 * per phase entered and one thread-CPU read (a syscall) per turn.
 */
#include "turnprof.h"

#include <string.h>
#include <time.h>

kr_turnprof_t kr_turnprof;

const char *const kr_tp_names[KR_TP__BLAME] = {
    [KR_TP_OTHER] = "other",         [KR_TP_IO] = "io",
    [KR_TP_READ] = "read",           [KR_TP_CONNECT] = "connect",
    [KR_TP_TIMERS] = "timers",
    [KR_TP_DONE] = "done",           [KR_TP_RESUME] = "resume",
    [KR_TP_DISPATCH] = "dispatch",   [KR_TP_WARC] = "warc",
    [KR_TP_FINISH] = "finish",       [KR_TP_TURN] = "turn",
    [KR_TP_REPLAY] = "replay",       [KR_TP_FLUSH_HOSTS] = "flush_hosts",
    [KR_TP_PRESYNC] = "presync",     [KR_TP_COMMIT] = "commit",
    [KR_TP_STATUS] = "status",       [KR_TP_DNS] = "dns",
    [KR_TP_OFFCPU] = "offcpu",
    [KR_TP_SCHED] = "sched",
};

void kr_tp_init(kr_turnprof_t *p, int on, uint64_t now, uint64_t cpu) {
  memset(p, 0, sizeof *p);
  p->on = on;
  p->stamp = p->turn_start = now;
  p->turn_cpu = cpu;
}

/* Charge the running phase up to now. */
static void accrue(kr_turnprof_t *p, uint64_t now) {
  if (now > p->stamp) p->acc[p->cur] += now - p->stamp;
  p->stamp = now;
}

void kr_tp_enter(kr_turnprof_t *p, kr_tp_phase_t ph, uint64_t now) {
  if (!p->on) return;
  if (p->depth == KR_TP_DEPTH) { /* keeps the pairs: leave pops nothing */
    p->overflow++;
    return;
  }
  accrue(p, now);
  p->stack[p->depth++] = p->cur;
  p->cur = ph;
}

void kr_tp_leave(kr_turnprof_t *p, uint64_t now) {
  if (!p->on) return;
  if (p->overflow) {
    p->overflow--;
    return;
  }
  if (!p->depth) return;
  accrue(p, now);
  p->cur = p->stack[--p->depth];
}

void kr_tp_poll_begin(kr_turnprof_t *p, uint64_t now) { kr_tp_enter(p, KR_TP_IO, now); }

void kr_tp_poll_end(kr_turnprof_t *p, uint64_t now, uint64_t wait_ns) {
  if (!p->on) return;
  accrue(p, now);
  /* the wait was charged to IO, which it is not */
  p->acc[KR_TP_IO] = p->acc[KR_TP_IO] > wait_ns ? p->acc[KR_TP_IO] - wait_ns : 0;
  p->turn_wait += wait_ns;
  if (p->depth && p->cur == KR_TP_IO) p->cur = p->stack[--p->depth];
}

static unsigned largest(const uint64_t *a, const uint64_t *b) {
  unsigned best = 0;
  uint64_t bv = 0;
  for (unsigned i = 0; i < KR_TP__N; i++) {
    uint64_t v = a[i] + (b ? b[i] : 0);
    if (v > bv) {
      bv = v;
      best = i;
    }
  }
  return best;
}

void kr_tp_turn_end(kr_turnprof_t *p, uint64_t now, uint64_t cpu) {
  if (!p->on) return;
  accrue(p, now);
  uint64_t wall = now > p->turn_start ? now - p->turn_start : 0;
  uint64_t busy = wall > p->turn_wait ? wall - p->turn_wait : 0;
  uint64_t used = cpu > p->turn_cpu ? cpu - p->turn_cpu : 0;
  uint64_t off = busy > used ? busy - used : 0;
  p->turns++;
  p->busy_ns += busy;
  p->offcpu_ns += off;
  for (unsigned i = 0; i < KR_TP__N; i++) p->total[i] += p->acc[i];
  if (busy > KR_TP_LONG_NS) {
    unsigned big = largest(p->acc, NULL);
    p->long_turns[2 * off > busy ? KR_TP_OFFCPU : big]++;
    for (unsigned i = 0; i < KR_TP__N; i++) p->long_ns[i] += p->acc[i];
    p->long_busy_ns += busy;
    p->long_offcpu_ns += off;
    if (busy > p->long_max_ns) p->long_max_ns = busy;
  }
  memcpy(p->last, p->acc, sizeof p->last);
  memset(p->acc, 0, sizeof p->acc);
  p->last_busy = busy;
  p->last_offcpu = off;
  p->turn_start = now;
  p->turn_cpu = cpu;
  p->turn_wait = 0;
}

kr_tp_phase_t kr_tp_late(kr_turnprof_t *p, uint64_t now, uint64_t lag_ns) {
  if (!p->on) return KR_TP_OTHER;
  accrue(p, now);
  uint64_t busy = p->last_busy;
  for (unsigned i = 0; i < KR_TP__N; i++) busy += p->acc[i];
  kr_tp_phase_t blame = (kr_tp_phase_t)largest(p->last, p->acc);
  if (lag_ns > 2 * busy) blame = KR_TP_SCHED; /* most of it was not work */
  else if (2 * p->last_offcpu > p->last_busy) blame = KR_TP_OFFCPU;
  p->late[blame]++;
  return blame;
}

uint64_t kr_tp_thread_cpu(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
