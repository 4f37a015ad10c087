/*
 * Where a loop turn's time goes: exclusive time by phase (the callbacks
 * that do a crawl's work on the loop thread), per turn and in total, so
 * that the loop-lag probe's late firings can be blamed on what ran before
 * them. One instance per process (kr_turnprof), used from the loop thread
 * only; a process running two crawls at once would mix their figures.
 *
 * A turn runs from the end of one check phase to the end of the next. The
 * poll phase (prepare to check) counts as KR_TP_IO less the time libuv
 * spent waiting in epoll; callbacks that enter a phase of their own inside
 * it (socket reads) are carved out of it. Nesting is allowed (a commit
 * inside the check's turn inside ...): time goes to the innermost phase.
 *
 * A turn whose busy time (wall less the poll wait) exceeds KR_TP_LONG_NS
 * is a long turn: counted under its largest phase, or under KR_TP_OFFCPU
 * when the thread spent most of it off its CPU (runnable but waiting,
 * page faults, blocking syscalls), with every phase's time. A late probe
 * is counted under the largest phase of the turn before it plus the
 * current one so far (KR_TP_OFFCPU as above), or under KR_TP_SCHED when
 * most of its lateness is not busy time at all (the thread was woken on
 * time but not run: another thread on its CPU).
 *
 * Functions take times from the caller (ns, monotonic), so tests drive
 * them without a loop; the KR_TP_ENTER/LEAVE macros use uv_hrtime().
 */
#ifndef KRIA_TURNPROF_H
#define KRIA_TURNPROF_H

#include <stdint.h>

typedef enum kr_tp_phase {
  KR_TP_OTHER,       /* not in any phase below */
  KR_TP_IO,          /* poll phase callbacks not named below */
  KR_TP_READ,        /* socket reads: parsing, digests, extraction as bytes come */
  KR_TP_CONNECT,     /* TCP connections established: requests written */
  KR_TP_TIMERS,      /* the timer wheel's callbacks */
  KR_TP_DONE,        /* HTTP completions delivered (chain walks) */
  KR_TP_RESUME,      /* the crawl's idle callback: waiting walks, dispatch */
  KR_TP_DISPATCH,    /* taking URIs from the frontier and starting fetches */
  KR_TP_WARC,        /* writing (compressing) WARC records */
  KR_TP_FINISH,      /* a visit's outcome and links into the frontier */
  KR_TP_TURN,        /* the crawl's once-per-turn work (crawl.log, seen filter) */
  KR_TP_REPLAY,      /* writes held back during a drain or sync, applied */
  KR_TP_FLUSH_HOSTS, /* host rows written before a commit */
  KR_TP_PRESYNC,     /* the step before a commit (WARC sync start) */
  KR_TP_COMMIT,      /* the SQLite COMMIT */
  KR_TP_STATUS,      /* status server requests */
  KR_TP_DNS,         /* DNS answers delivered: mostly connects started */
  KR_TP__N,
  KR_TP_OFFCPU = KR_TP__N, /* blame only: busy time spent off the CPU */
  KR_TP_SCHED,             /* blame only: lateness that was not busy time */
  KR_TP__BLAME
} kr_tp_phase_t;

#define KR_TP_LONG_NS (20u * 1000 * 1000)
#define KR_TP_DEPTH 16

typedef struct kr_turnprof {
  int on;                      /* 0: every call returns at once */
  unsigned cur;                /* the innermost phase entered */
  unsigned stack[KR_TP_DEPTH]; /* the phases it interrupted */
  unsigned depth;
  uint64_t overflow;           /* enters past KR_TP_DEPTH (ignored) */
  uint64_t stamp;              /* when cur last started accruing */
  uint64_t turn_start, turn_cpu, turn_wait;
  uint64_t acc[KR_TP__N];      /* this turn so far */
  uint64_t last[KR_TP__N];     /* the last whole turn */
  uint64_t last_busy, last_offcpu;
  /* totals */
  uint64_t turns, total[KR_TP__N], busy_ns, offcpu_ns;
  uint64_t long_turns[KR_TP__BLAME]; /* long turns by their largest phase */
  uint64_t long_ns[KR_TP__N];    /* time in long turns by phase */
  uint64_t long_busy_ns, long_offcpu_ns, long_max_ns;
  uint64_t late[KR_TP__BLAME];   /* late probes by blame */
} kr_turnprof_t;

extern kr_turnprof_t kr_turnprof;

extern const char *const kr_tp_names[KR_TP__BLAME];

/* Start (or restart) counting at now; on = 0 turns it off. */
void kr_tp_init(kr_turnprof_t *p, int on, uint64_t now, uint64_t cpu);
void kr_tp_enter(kr_turnprof_t *p, kr_tp_phase_t ph, uint64_t now);
void kr_tp_leave(kr_turnprof_t *p, uint64_t now);
/* Poll phase: begin right before it (prepare), end right after it
 * (check) with the time it spent waiting for events. */
void kr_tp_poll_begin(kr_turnprof_t *p, uint64_t now);
void kr_tp_poll_end(kr_turnprof_t *p, uint64_t now, uint64_t wait_ns);
/* The turn ends (end of the check phase); cpu: the thread's CPU time. */
void kr_tp_turn_end(kr_turnprof_t *p, uint64_t now, uint64_t cpu);
/* The lag probe fired lag_ns late: blame it (returns the blamed phase). */
kr_tp_phase_t kr_tp_late(kr_turnprof_t *p, uint64_t now, uint64_t lag_ns);

/* The loop thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t kr_tp_thread_cpu(void);

#define KR_TP_ENTER(ph)                                                   \
  do {                                                                    \
    if (kr_turnprof.on) kr_tp_enter(&kr_turnprof, (ph), uv_hrtime());     \
  } while (0)
#define KR_TP_LEAVE()                                                     \
  do {                                                                    \
    if (kr_turnprof.on) kr_tp_leave(&kr_turnprof, uv_hrtime());           \
  } while (0)

#endif
