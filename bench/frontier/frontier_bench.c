/*
 * frontier_bench — the frontier and its SQLite store at scale, on disk.
 *
 *   frontier_bench --dir DIR --mode MODE [--uris N] [--hosts H] [--seconds S]
 *                  [--links L] [--cycles C] [--cache-mib M] [--wal-mib M]
 *                  [--page-size P] [--plain-vfs 0|1] [--dup-pct P]
 *
 * Modes (each prints "key value" lines on stdout, progress on stderr):
 *   build    add N new URIs over H hosts as discovered links (30 per page,
 *            every one new): new-URI inserts/s, overall and over the last
 *            tenth; then bytes per URI on disk.
 *   dedupe   schedule L discovered links of which about half (--dup-pct P:
 *            P %, default 50) are already known (random earlier URIs) and
 *            the rest new: links/s; checks
 *            that SQLite saw only the new ones.
 *   cycles   next + finished (a realistic success: status, content type,
 *            20-byte digest, ETag, wait of 1-7 days) for S seconds or C
 *            cycles, all URIs due, politeness off: cycles/s; then bytes
 *            per URI with visited rows.
 *   startup  open the state (after a kill -9 of a previous run): time to
 *            open with every host queue rebuilt, time until the seen filter
 *            is complete, then validate the head of every host.
 *
 * Time: a virtual clock moved to the real elapsed time at each loop turn,
 * so commit-by-age works as in a crawl while nothing ever sleeps; a real
 * uv loop runs the checkpoint jobs (uv_queue_work), polled each turn.
 * URLs are deterministic from their index: http://hHHHHH.example.org/
 * sS/page-IIIIIIIII.html with host = index mod H.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <uv.h>

#include "clock.h"
#include "frontier.h"
#include "kria/fp.h"
#include "log.h"
#include "store.h"
#include "timer.h"

#define T0 UINT64_C(1700000000000)

static const char *dir;
static uint64_t nuris = 1000000, nhosts = 10000, nlinks = 2000000, ncycles = 0;
static int dup_pct = 50; /* dedupe: share of links pointing to known URLs */
static double seconds = 60, build_seconds = 0;
static uint32_t cache_mib = 64, wal_mib = 256, page_size = 4096;
static int plain_vfs = 0;
static kr_clock_t clk;
static kr_timers_t timers;
static uv_loop_t loop;
static kr_frontier_t *F;
static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double t_start;
static uint64_t clock_base = T0; /* virtual time at this run's start */

/* Each run starts its virtual clock 8 days after the previous run ended
 * (kept in DIR/bench-clock), so what earlier runs scheduled (waits of at
 * most 7 days) is due again and no next_at lies ahead of the clock. */
static void clock_load(void) {
  char p[4096];
  snprintf(p, sizeof(p), "%s/bench-clock", dir);
  FILE *f = fopen(p, "r");
  unsigned long long v = 0;
  if (f) {
    if (fscanf(f, "%llu", &v) != 1) v = 0;
    fclose(f);
  }
  if (v) clock_base = (uint64_t)v + 8 * 86400000ull;
}

static void clock_save(void) {
  char p[4096];
  snprintf(p, sizeof(p), "%s/bench-clock", dir);
  FILE *f = fopen(p, "w");
  if (f) {
    fprintf(f, "%llu\n", (unsigned long long)kr_clock_now_ms(&clk));
    fclose(f);
  }
}

/* URL k of host h. Every host has its own counter of URLs handed out. */
static uint64_t *next_k;

static int url_of(uint64_t h, uint64_t k, char *buf, size_t n) {
  return snprintf(buf, n, "http://h%05" PRIu64 ".example.org/s%" PRIu64 "/page-%08" PRIu64 ".html",
                  h, k % 50, k);
}

/* Fill one page's 30 links: 24 on the page's own host h, 6 on random
 * hosts (the locality of real pages: most links stay on their site).
 * dup_pct of them point to URLs handed out before. Returns the count. */
static size_t page_links(uint64_t h, int dups, uint64_t budget, char urls[][128],
                         kr_link_t *links) {
  size_t k = 0;
  for (; k < 30 && k < budget; k++) {
    uint64_t host = k < 24 ? h : rnd() % nhosts;
    uint64_t idx;
    if (next_k[host] > 0 && (int)(rnd() % 100) < dups)
      idx = rnd() % next_k[host];
    else
      idx = next_k[host]++;
    int n = url_of(host, idx, urls[k], 128);
    links[k] = (kr_link_t){.url = urls[k], .url_len = (size_t)n, .hop_path = "LL", .hop_len = 2};
  }
  return k;
}

/* After a restart: how many URLs each host has, from the store's rows
 * (their URLs encode it), so new links are new. */
static void count_hosts(void) {
  next_k = calloc(nhosts, sizeof(*next_k));
  size_t it = 0;
  kr_host_report_t r;
  while (kr_frontier_report_next(F, &it, kr_clock_now_ms(&clk), &r)) {
    uint64_t h = strtoull(r.name + 1, NULL, 10);
    if (h < nhosts) next_k[h] = r.c.discovered;
  }
}

/* One loop turn: clock to real elapsed time, commit when due, checkpoint
 * jobs completed. */
static void turn(void) {
  uint64_t now = clock_base + (uint64_t)((mono() - t_start) * 1000);
  if (now > kr_clock_now_ms(&clk)) kr_clock_set(&clk, now);
  if (kr_frontier_turn(F, kr_clock_now_ms(&clk)) < 0) {
    fprintf(stderr, "commit failed\n");
    exit(1);
  }
  uv_run(&loop, UV_RUN_NOWAIT);
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

static long rss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static long cur_rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return res * 4;
}

static uint64_t file_size(const char *name) {
  char p[4096];
  snprintf(p, sizeof(p), "%s/%s", dir, name);
  struct stat sb;
  return stat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* A producer of links not driven by completions (seeds, the benchmark)
 * waits out a store drain, as the crawl loop's fetches would. */
static double drain_wait_s; /* wall time spent in wait_writable() */

static void wait_writable(void) {
  if (kr_store_writable(kr_frontier_store(F))) return;
  double t = mono();
  while (!kr_store_writable(kr_frontier_store(F))) uv_run(&loop, UV_RUN_ONCE);
  drain_wait_s += mono() - t;
}

static void open_frontier(void) {
  kr_frontier_opts_t o;
  kr_frontier_opts_default(&o);
  o.min_delay_ms = 0; /* politeness off: measure the frontier, not the wait */
  o.max_delay_ms = 0;
  o.cache_mib = cache_mib;
  o.wal_checkpoint_mib = wal_mib;
  o.page_size = page_size;
  o.plain_vfs = plain_vfs;
  o.quick_check = 0; /* measured separately in startup mode */
  char err[512];
  if (kr_frontier_open(dir, &o, &timers, &F, err, sizeof(err))) {
    fprintf(stderr, "open: %s\n", err);
    exit(1);
  }
}

static void close_frontier(void) {
  kr_frontier_commit(F);
  kr_store_checkpoint(kr_frontier_store(F));
  kr_frontier_close(F);
  F = NULL;
}

static uint64_t uris_now(void) {
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  return s.c.discovered;
}

static void print_disk(const char *tag) {
  /* Fold the WAL in so the main file holds every page. */
  kr_frontier_commit(F);
  kr_store_checkpoint(kr_frontier_store(F));
  uint64_t db = file_size("kria.db"), wal = file_size("kria.db-wal");
  uint64_t n = uris_now();
  printf("%s_uris %" PRIu64 "\n", tag, n);
  printf("%s_db_bytes %" PRIu64 "\n", tag, db);
  printf("%s_wal_bytes %" PRIu64 "\n", tag, wal);
  printf("%s_bytes_per_uri %.1f\n", tag, n ? (double)db / (double)n : 0.0);
}

/* ---- build -------------------------------------------------------------- */

static void mode_build(void) {
  open_frontier();
  uint64_t start = uris_now();
  count_hosts();
  char urls[30][128];
  kr_link_t links[30];
  double c0 = cpu_s();
  double t0 = mono(), t90 = 0;
  uint64_t i = start, mark90 = start + (nuris - start) * 9 / 10, page = 0;
  double limit_s = build_seconds > 0 ? build_seconds : 1e18;
  while (i < nuris && mono() - t0 < limit_s) {
    size_t k = page_links(page++ % nhosts, 0, nuris - i, urls, links);
    wait_writable();
    if (kr_frontier_add_batch(F, links, k, kr_clock_now_ms(&clk), NULL) < 0) exit(1);
    i += k; /* all new */
    turn();
    if (!t90 && i >= mark90) t90 = mono();
    if (page % 10000 == 0)
      fprintf(stderr, "\rbuild: %" PRIu64 " URIs, %.0f/s, rss %ld MiB   ", i,
              (double)(i - start) / (mono() - t0), cur_rss_kib() / 1024);
  }
  kr_frontier_commit(F);
  double t1 = mono();
  fprintf(stderr, "\n");
  printf("build_added %" PRIu64 "\n", i - start);
  printf("build_target %" PRIu64 "\n", nuris);
  printf("build_complete %s\n", i >= nuris ? "yes" : "no (time limit)");
  printf("build_seconds %.2f\n", t1 - t0);
  printf("build_cpu_seconds %.2f\n", cpu_s() - c0);
  printf("build_cpu_us_per_insert %.1f\n", (cpu_s() - c0) * 1e6 / (double)(i - start ? i - start : 1));
  printf("build_inserts_per_s %.0f\n", (double)(i - start) / (t1 - t0));
  if (t90 && i > mark90)
    printf("build_inserts_per_s_last10pct %.0f\n", (double)(i - mark90) / (t1 - t90));
  const kr_store_stats_t *ss = kr_store_stats(kr_frontier_store(F));
  printf("build_commits %" PRIu64 "\n", ss->commits);
  printf("build_commit_ms_max %.1f\n", (double)ss->commit_us_max / 1000);
  printf("build_wal_mib_max %.1f\n", (double)ss->wal_frames_max * 4096 / 1048576);
  printf("build_checkpoints %" PRIu64 "\n", ss->checkpoints);
  printf("build_wal_restarts %" PRIu64 "\n", ss->restarts);
  printf("build_drains %" PRIu64 " (broken %" PRIu64 ")\n", ss->drains, ss->drains_broken);
  printf("build_drain_ms_max %.1f\n", (double)ss->drain_us_max / 1000);
  print_disk("build");
  printf("build_peak_rss_mib %.1f\n", rss_kib() / 1024.0);
  close_frontier();
}

/* ---- dedupe ------------------------------------------------------------- */

static void mode_dedupe(void) {
  open_frontier();
  kr_frontier_load_seen(F);

  const kr_store_stats_t *ss = kr_store_stats(kr_frontier_store(F));
  uint64_t ins0 = ss->inserts;
  count_hosts();
  char urls[30][128];
  kr_link_t links[30];
  uint64_t done = 0, added_total = 0, page = 0;
  double t0 = mono(), c0 = cpu_s();
  while (done < nlinks) {
    size_t k = page_links(rnd() % nhosts, dup_pct, nlinks - done, urls, links);
    done += k;
    size_t added;
    wait_writable();
    if (kr_frontier_add_batch(F, links, k, kr_clock_now_ms(&clk), &added) < 0) exit(1);
    added_total += added;
    page++;
    turn();
  }
  kr_frontier_commit(F);
  double t1 = mono();
  printf("dedupe_dup_pct %d\n", dup_pct);
  printf("dedupe_links %" PRIu64 "\n", done);
  printf("dedupe_duplicates %" PRIu64 "\n", done - added_total);
  printf("dedupe_new %" PRIu64 "\n", added_total);
  printf("dedupe_seconds %.2f\n", t1 - t0);
  printf("dedupe_cpu_seconds %.2f\n", cpu_s() - c0);
  printf("dedupe_cpu_us_per_link %.2f\n", (cpu_s() - c0) * 1e6 / (double)(done ? done : 1));
  printf("dedupe_links_per_s %.0f\n", (double)done / (t1 - t0));
  printf("dedupe_sqlite_inserts %" PRIu64 "\n", ss->inserts - ins0);
  printf("dedupe_sqlite_saw_duplicates %s\n",
         ss->inserts - ins0 == added_total ? "no" : "YES");
  printf("dedupe_peak_rss_mib %.1f\n", rss_kib() / 1024.0);
  close_frontier();
}

/* ---- cycles ------------------------------------------------------------- */

static void mode_cycles(void) {
  open_frontier();
  uint64_t total = uris_now();
  /* The clock runs ahead of every URI's next_at: all are due. */
  kr_timers_advance(&timers, 0);
  uint8_t digest[20];
  const char *etag = "\"5f3a-1c2b0a\"";
  uint64_t n = 0, empty_pulls = 0, drain_waits = 0;
  double t0 = mono(), last = t0;
  uint64_t limit = ncycles ? ncycles : UINT64_MAX;
  double c0 = cpu_s();
  while (n < limit && mono() - t0 < seconds) {
    kr_curi_t *c = NULL;
    int rc = kr_frontier_next(F, kr_clock_now_ms(&clk), &c);
    if (rc < 0) exit(1);
    if (!c) { /* nothing ready: the loop would sleep until the next timer */
      empty_pulls++;
      if (getenv("KR_DBG") && empty_pulls < 20) {
        kr_frontier_stats_t st; kr_frontier_stats(F, &st);
        fprintf(stderr, "empty at %" PRIu64 ": ready %" PRIu64 " inflight %" PRIu64 " wheel %zu next_due %+" PRId64 "\n", n, st.ready_hosts, st.in_flight, kr_wheel_count(&timers.wheel), (int64_t)(kr_wheel_next_due(&timers.wheel) - kr_clock_now_ms(&clk)));
      }
      /* Hosts that were re-armed come back through the wheel: run it as
       * a crawl loop's turn would. Only when that brings nothing while the
       * store drains, wait for the checkpoint job as a crawl loop would
       * sleep, rather than spin (the spin was CPU charged to the cycles). */
      uint64_t due = kr_wheel_next_due(&timers.wheel), now = kr_clock_now_ms(&clk);
      size_t fired = kr_timers_advance(&timers, due > now && due != UINT64_MAX ? due - now : 0);
      if (!fired && !kr_store_writable(kr_frontier_store(F))) {
        drain_waits++;
        wait_writable();
      }
      turn();
      continue;
    }
    for (int i = 0; i < 20; i++) digest[i] = (uint8_t)rnd();
    kr_outcome_t o = {.kind = KR_OUTCOME_SUCCESS,
                      .status = 200,
                      .fetch_ms = 20,
                      .bytes = 10240,
                      .wait_ms = 86400000u * (1 + rnd() % 7),
                      .content = (int)(rnd() & 1),
                      .content_type = "text/html",
                      .content_type_len = 9,
                      .digest = digest,
                      .digest_len = 20,
                      .etag = (rnd() & 1) ? etag : NULL,
                      .etag_len = strlen(etag),
                      .last_modified = 1700000000};
    if (kr_frontier_finished(F, c, &o, NULL, 0, kr_clock_now_ms(&clk)) < 0) exit(1);
    n++;
    if ((n & 7) == 0) turn();
    if ((n & 0xffff) == 0) {
      double t = mono();
      fprintf(stderr, "\rcycles: %" PRIu64 ", %.0f/s (last %.0f/s), rss %ld MiB   ", n,
              (double)n / (t - t0), 65536 / (t - last), cur_rss_kib() / 1024);
      last = t;
    }
  }
  kr_frontier_commit(F);
  double t1 = mono();
  fprintf(stderr, "\n");
  const kr_store_stats_t *ss = kr_store_stats(kr_frontier_store(F));
  printf("cycles_uris %" PRIu64 "\n", total);
  printf("cycles %" PRIu64 "\n", n);
  printf("cycles_seconds %.2f\n", t1 - t0);
  printf("cycles_cpu_seconds %.2f\n", cpu_s() - c0);
  printf("cycles_cpu_us_per_cycle %.1f\n", (cpu_s() - c0) * 1e6 / (double)(n ? n : 1));
  printf("cycles_per_s %.0f\n", (double)n / (t1 - t0));
  printf("cycles_visited_fraction %.2f\n", total ? (double)n / (double)total : 0.0);
  printf("cycles_empty_pulls %" PRIu64 "\n", empty_pulls);
  printf("cycles_drain_waits %" PRIu64 "\n", drain_waits);
  printf("cycles_drain_wait_seconds %.2f\n", drain_wait_s);
  printf("cycles_commit_ms_max %.1f\n", (double)ss->commit_us_max / 1000);
  printf("cycles_wal_mib_max %.1f\n", (double)ss->wal_frames_max * 4096 / 1048576);
  printf("cycles_checkpoints %" PRIu64 "\n", ss->checkpoints);
  printf("cycles_wal_restarts %" PRIu64 "\n", ss->restarts);
  printf("cycles_drains %" PRIu64 " (broken %" PRIu64 ")\n", ss->drains, ss->drains_broken);
  printf("cycles_drain_ms_max %.1f\n", (double)ss->drain_us_max / 1000);
  kr_frontier_stats_t fs;
  kr_frontier_stats(F, &fs);
  printf("cycles_held_back_max %" PRIu64 "\n", fs.held_back_max);
  print_disk("cycles");
  printf("cycles_peak_rss_mib %.1f\n", rss_kib() / 1024.0);
  close_frontier();
}

/* ---- startup ------------------------------------------------------------ */

static void mode_startup(int quick_check) {
  kr_frontier_opts_t o;
  kr_frontier_opts_default(&o);
  o.cache_mib = cache_mib;
  o.plain_vfs = plain_vfs;
  o.quick_check = quick_check;
  char err[512];
  double t0 = mono();
  if (kr_frontier_open(dir, &o, &timers, &F, err, sizeof(err))) {
    fprintf(stderr, "open: %s\n", err);
    exit(1);
  }
  double t1 = mono();
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  int complete_at_open = s.seen_complete;
  uint64_t turns = 0;
  double t_check = 0, t_seen = s.seen_complete ? mono() : 0;
  kr_store_t *st = kr_frontier_store(F);
  while (!s.seen_complete || (quick_check == 2 && !t_check)) {
    kr_frontier_turn(F, kr_clock_now_ms(&clk));
    uv_run(&loop, UV_RUN_NOWAIT);
    if (!t_check && kr_store_check_state(st, NULL) != 0) t_check = mono();
    turns++;
    kr_frontier_stats(F, &s);
    if (s.seen_complete && !t_seen) t_seen = mono();
    if (s.seen_complete && quick_check == 2 && !t_check) uv_run(&loop, UV_RUN_ONCE);
  }
  double t2 = mono();
  /* Issue one URI to show the crawl can start at once. */
  kr_timers_advance(&timers, 0);
  kr_curi_t *c = NULL;
  kr_frontier_next(F, kr_clock_now_ms(&clk), &c);
  double t3 = mono();
  const char *tag = quick_check == 1 ? "startup_qc" : "startup";
  printf("%s_uris %" PRIu64 "\n", tag, s.c.discovered);
  printf("%s_hosts %" PRIu64 "\n", tag, s.hosts);
  printf("%s_open_seconds %.3f\n", tag, t1 - t0);
  printf("%s_first_uri_seconds %.3f\n", tag, (t1 - t0) + (t3 - t2));
  printf("%s_seen_complete_at_open %s\n", tag, complete_at_open ? "yes" : "no");
  printf("%s_seen_complete_seconds %.3f\n", tag, t_seen - t0);
  printf("%s_seen_turns %" PRIu64 "\n", tag, turns);
  if (t_check)
    printf("%s_background_check_seconds %.3f (%s)\n", tag, t_check - t0,
           kr_store_check_state(st, NULL) > 0 ? "ok" : "CORRUPT");
  printf("%s_peak_rss_mib %.1f\n", tag, rss_kib() / 1024.0);
  if (c) kr_frontier_defer(F, c, kr_clock_now_ms(&clk));
  kr_frontier_close(F);
  F = NULL;
}

int main(int argc, char **argv) {
  const char *mode = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
    else if (!strcmp(argv[i], "--uris")) nuris = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--hosts")) nhosts = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--links")) nlinks = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--dup-pct")) dup_pct = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--cycles")) ncycles = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--build-seconds")) build_seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--cache-mib")) cache_mib = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--wal-mib")) wal_mib = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--page-size")) page_size = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--plain-vfs")) plain_vfs = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!dir || !mode || !nhosts) {
    fprintf(stderr, "usage: frontier_bench --dir DIR --mode build|dedupe|cycles|startup|startup-qc "
                    "[--uris N] [--hosts H] [--links L] [--seconds S] [--cycles C]\n");
    return 2;
  }
  kr_log_level = KR_LOG_WARN;
  mkdir(dir, 0755);
  clock_load();
  t_start = mono();
  kr_clock_init_virtual(&clk, clock_base);
  uv_loop_init(&loop);
  kr_timers_init(&timers, &loop, &clk);
  if (!strcmp(mode, "build")) mode_build();
  else if (!strcmp(mode, "dedupe")) mode_dedupe();
  else if (!strcmp(mode, "cycles")) mode_cycles();
  else if (!strcmp(mode, "startup")) mode_startup(2);
  else if (!strcmp(mode, "startup-qc")) mode_startup(1);
  else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  clock_save();
  kr_timers_close(&timers, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return 0;
}
