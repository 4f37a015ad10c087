/*
 * `kria demo [--seconds N] [--state-dir DIR] [--config FILE] [--seed N]
 * [--pages N] [--truth FILE] [-o section.key=value]...`: crawl the
 * built-in demo site (demo_site.h) for a bounded time and show the wait
 * intervals adapting to how often each class of page changes. --pages
 * grows the site to N pages with Poisson changes (the real-crawl bench,
 * bench/adaptive/realcrawl.sh); --truth writes the site's account of the
 * versions that existed and were served when the crawl ends.
 *
 * The crawl is the real one, made and run exactly as `kria crawl` does
 * (kr_crawl_new / kr_crawl_run) from config/demo.conf, which is compiled
 * into the binary below (.incbin, from the top of the source tree, where
 * the Makefile runs the compiler) so the command works wherever the binary
 * is. The demo site serves on the crawl's own loop: its socket is bound
 * before the crawl exists (the seeds name its port), its listener is
 * opened on the crawl's loop once the crawl is made, and it is closed
 * when the crawl starts closing, noticed by a uv_check handle, so the
 * crawl's own shutdown (limits.max-time = --seconds, or SIGINT) ends
 * everything. While it runs, a progress line on stderr (rewritten in
 * place on a terminal, else one line every 5 s); at the end a table per
 * page class built from crawl.log (the wt:/vis/ver annotations and the
 * notModified / midFetchAbort / unchanged / validatorMiss ones) next to
 * the site's ground truth, then where crawl.log and the WARC files are.
 * Sections: the built-in configuration, arguments and the state
 * directory, progress, the table, the command.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdx.h"
#include "cli.h"
#include "crawl.h"
#include "demo_site.h"
#include "internal.h"
#include "kria/config.h"
#include "kria/warc.h"
#include "service.h"

/* ---- the built-in configuration ------------------------------------------------------ */

/* config/demo.conf as a NUL-terminated string (the Makefile makes
 * cmd_demo.o depend on it). */
__asm__(".section .rodata\n"
        ".globl kr__demo_conf\n"
        ".hidden kr__demo_conf\n"
        ".type kr__demo_conf, @object\n"
        "kr__demo_conf:\n"
        ".incbin \"config/demo.conf\"\n"
        ".byte 0\n"
        ".size kr__demo_conf, . - kr__demo_conf\n"
        ".previous\n");
extern const char kr__demo_conf[] __attribute__((visibility("hidden")));

/* ---- arguments and the state directory ------------------------------------------------- */

static const char usage_text[] =
    "usage: kria demo [--seconds N] [--state-dir DIR] [--config FILE] [--seed N]\n"
    "                 [--pages N] [--truth FILE] [-o section.key=value]...\n"
    "\n"
    "Serve a built-in demo site on 127.0.0.1 (pages changing every 3 s, every\n"
    "15 s or never, a clock section, images, validators of every quality) and\n"
    "crawl it for N seconds (default 60) with config/demo.conf (built in;\n"
    "--config FILE replaces it, -o overrides one key), showing progress and\n"
    "then a table of how the waits adapted per class of page, and where the\n"
    "crawl.log and WARC files are. DIR must be new or empty (default: a new\n"
    "directory under $TMPDIR or /tmp); it is kept. SIGINT ends the demo\n"
    "early, with the table. --pages N (20..1000) grows the site to N pages\n"
    "(news, sections, articles, archive, clock, images, liar) changing at\n"
    "random with known mean rates from --seed; --truth FILE writes, when the\n"
    "crawl ends, every version each page had, when it appeared, its SHA-1\n"
    "and how often it was served (TSV). Exit 0, 2 on an error, 64 on a usage\n"
    "error.\n";

#define MAX_SECONDS 86400
#define MAX_OVERRIDES 64

typedef struct demo_args {
  unsigned seconds;
  const char *state_dir;
  const char *config;
  uint64_t seed;
  unsigned pages;               /* 0: the default site */
  const char *truth;            /* --truth FILE */
  const char *over[MAX_OVERRIDES];
  size_t nover;
} demo_args_t;

static int parse_uint(const char *s, uint64_t max, uint64_t *out) {
  if (!*s) return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    v = v * 10 + (uint64_t)(*s - '0');
    if (v > max) return -1;
  }
  *out = v;
  return 0;
}

/* 0, 1 for --help (printed), or 64 (reported). */
static int parse_args(int argc, char **argv, demo_args_t *a) {
  memset(a, 0, sizeof *a);
  a->seconds = 60;
  a->seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      fputs(usage_text, stdout);
      return 1;
    }
    int known = !strcmp(o, "--seconds") || !strcmp(o, "--state-dir") || !strcmp(o, "--config") ||
                !strcmp(o, "--seed") || !strcmp(o, "--pages") || !strcmp(o, "--truth") ||
                !strcmp(o, "-o");
    if (!known) {
      kr_cli_error(0, "demo: unexpected argument '%s' (try 'kria demo --help')", o);
      return 64;
    }
    if (i + 1 >= argc) {
      kr_cli_error(0, "demo: %s needs a value", o);
      return 64;
    }
    const char *v = argv[++i];
    uint64_t n;
    if (!strcmp(o, "--seconds")) {
      if (parse_uint(v, MAX_SECONDS, &n) || n == 0) {
        kr_cli_error(0, "demo: --seconds wants a whole number from 1 to %d, not '%s'",
                     MAX_SECONDS, v);
        return 64;
      }
      a->seconds = (unsigned)n;
    } else if (!strcmp(o, "--seed")) {
      if (parse_uint(v, UINT32_MAX, &n)) {
        kr_cli_error(0, "demo: --seed wants a whole number, not '%s'", v);
        return 64;
      }
      a->seed = n;
    } else if (!strcmp(o, "--pages")) {
      kr_demo_layout_t l;
      if (parse_uint(v, KR_DEMO_MAX_PAGES, &n) || kr_demo_layout_grown(&l, (unsigned)n)) {
        kr_cli_error(0, "demo: --pages wants a whole number from 20 to %d, not '%s'",
                     KR_DEMO_MAX_PAGES, v);
        return 64;
      }
      a->pages = (unsigned)n;
    } else if (!strcmp(o, "--truth")) {
      if (!*v) {
        kr_cli_error(0, "demo: --truth needs a file");
        return 64;
      }
      a->truth = v;
    } else if (!strcmp(o, "--state-dir")) {
      if (!*v) {
        kr_cli_error(0, "demo: --state-dir needs a directory");
        return 64;
      }
      a->state_dir = v;
    } else if (!strcmp(o, "--config")) {
      a->config = v;
    } else {
      if (a->nover == MAX_OVERRIDES) {
        kr_cli_error(0, "demo: more than %d -o options", MAX_OVERRIDES);
        return 64;
      }
      a->over[a->nover++] = v;
    }
  }
  return 0;
}

/* Make dir (one level) or accept it when it is an empty directory: the
 * demo's URLs name a port of this run, so an old state directory would
 * hold URIs nobody serves. 0, or KR_EIO with err set. */
static int prepare_state_dir(const char *dir, char *err, size_t errlen) {
  if (mkdir(dir, 0777) == 0) return 0;
  if (errno != EEXIST) {
    snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
    return KR_EIO;
  }
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, errlen, "%s: cannot open: %s", dir, strerror(errno));
    return KR_EIO;
  }
  struct dirent *e;
  int empty = 1;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      empty = 0;
      break;
    }
  closedir(d);
  if (!empty) {
    snprintf(err, errlen,
             "%s is not empty: kria demo starts from a new state directory "
             "(remove it or name another)",
             dir);
    return KR_EIO;
  }
  return 0;
}

static int write_seeds(const char *path, const kr_demo_layout_t *l, uint16_t port) {
  FILE *f = fopen(path, "w");
  if (!f) return KR_EIO;
  fprintf(f, "# written by kria demo: the demo site of this run\nhttp://127.0.0.1:%u/\n", port);
  for (unsigned i = 0; i < l->pages[KR_DEMO_LIAR]; i++)
    fprintf(f, "http://localhost:%u/liar/%u\n", port, i);
  return fclose(f) ? KR_EIO : 0;
}

static void print_config_errors(kr_config_t *cfg, int rc, const char *name) {
  size_t n = kr_config_error_count(cfg);
  for (size_t i = 0; i < n; i++) kr_cli_error(KR_ECONFIG, "%s", kr_config_error(cfg, i));
  if (kr_config_error_total(cfg) > n)
    kr_cli_error(KR_ECONFIG, "... and %zu more", kr_config_error_total(cfg) - n);
  if (!n) kr_cli_error(rc, "%s: cannot load the configuration", name);
}

/* ---- progress ---------------------------------------------------------------------------- */

typedef struct demo_run {
  kr_crawl_t *crawl;
  kr_demo_site_t *site;
  uv_timer_t progress;
  uv_check_t watch;             /* notices the crawl closing */
  int tty;                      /* stderr is a terminal: one line, rewritten */
  int line_shown;               /* a progress line waits to be cleared */
  uint64_t started_ms;          /* site time at start (0) */
  uint64_t next_line_ms;        /* non-terminal: next line due */
  /* taken when the crawl closes, after the site is gone */
  kr_demo_site_stats_t site_st;
  uint64_t elapsed_ms;
  int closed;
  const char *truth;            /* --truth FILE */
  int truth_rc;                 /* writing it: 0 or KR_EIO */
} demo_run_t;

#define TTY_TICK_MS 250
#define LINE_EVERY_MS 5000

static void progress_line(demo_run_t *r) {
  kr_crawl_stats_t s;
  kr_crawl_get_stats(r->crawl, &s);
  kr_frontier_stats_t fs;
  memset(&fs, 0, sizeof fs);
  kr_frontier_t *fr = kr_crawl_frontier(r->crawl);
  if (fr) kr_frontier_stats(fr, &fs);
  double el = (double)kr_demo_site_elapsed_ms(r->site) / 1000.0;
  char line[256];
  snprintf(line, sizeof line,
           "%5.1f s  visits %" PRIu64 "  changed %" PRIu64 "  unchanged %" PRIu64 " (304 %" PRIu64
           ", aborts %" PRIu64 ", by digest %" PRIu64 ")  queued %" PRIu64,
           el, s.fetched, s.changed, s.unchanged, s.not_modified, s.midfetch_aborts,
           s.unchanged_full, fs.c.queued);
  if (r->tty) {
    /* One terminal row, or rewriting it in place breaks. */
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && ws.ws_col <= sizeof line)
      line[ws.ws_col - 1] = '\0';
    fprintf(stderr, "\r\033[K%s", line);
    r->line_shown = 1;
  } else {
    fprintf(stderr, "%s\n", line);
  }
  fflush(stderr);
}

static void clear_line(demo_run_t *r) {
  if (r->tty && r->line_shown) fputs("\r\033[K", stderr);
  r->line_shown = 0;
}

static void on_progress(uv_timer_t *t) {
  demo_run_t *r = t->data;
  if (r->closed || kr_crawl_is_closing(r->crawl)) return;
  progress_line(r);
}

static void on_watch(uv_check_t *h) {
  demo_run_t *r = h->data;
  if (r->closed || !kr_crawl_is_closing(r->crawl)) return;
  /* The crawl has finished its fetches and is closing: the site goes too. */
  r->closed = 1;
  r->elapsed_ms = kr_demo_site_elapsed_ms(r->site);
  kr_demo_site_get_stats(r->site, &r->site_st);
  if (r->truth) { /* the site's account, before the site goes */
    FILE *f = fopen(r->truth, "w");
    r->truth_rc = f ? kr_demo_site_truth_write(r->site, f) : KR_EIO;
    if (f && fclose(f) && !r->truth_rc) r->truth_rc = KR_EIO;
  }
  kr_demo_site_close(r->site);
  r->site = NULL;
  uv_close((uv_handle_t *)&r->progress, NULL);
  uv_close((uv_handle_t *)&r->watch, NULL);
  clear_line(r);
}

/* ---- the table --------------------------------------------------------------------------- */

#define LINE_MAX_BYTES 65536

typedef struct uri_row {
  char uri[256];
  int cls;
  unsigned page;
  uint64_t visits, versions, n304, aborts, by_digest, misses;
  int64_t first_wait, last_wait;   /* ms, -1 none */
} uri_row_t;

/* Heritrix's crawl.log durations ("1m2s300ms", "45s0ms"): ms or -1. */
static int64_t parse_duration(const char *s, size_t n) {
  int64_t total = 0;
  size_t i = 0;
  if (!n) return -1;
  while (i < n) {
    int64_t v = 0;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9' && i - d < 12) v = v * 10 + (s[i++] - '0');
    if (i == d || i >= n) return -1;
    if (i + 1 < n && s[i] == 'm' && s[i + 1] == 's') total += v, i += 2;
    else if (s[i] == 's') total += v * 1000, i++;
    else if (s[i] == 'm') total += v * 60000, i++;
    else if (s[i] == 'h') total += v * 3600000, i++;
    else if (s[i] == 'd') total += v * 86400000, i++;
    else return -1;
  }
  return total;
}

static uri_row_t *row_for(uri_row_t *rows, size_t *n, size_t max, const char *uri, size_t len) {
  for (size_t i = 0; i < *n; i++)
    if (strlen(rows[i].uri) == len && !memcmp(rows[i].uri, uri, len)) return &rows[i];
  if (*n == max || len >= sizeof rows[0].uri) return NULL;
  uri_row_t *r = &rows[(*n)++];
  memset(r, 0, sizeof *r);
  memcpy(r->uri, uri, len);
  r->first_wait = r->last_wait = -1;
  return r;
}

/* One crawl.log line into rows. Lines of other URIs (robots.txt) and
 * lines without a response are skipped. */
static void take_line(const kr_demo_layout_t *l, char *line, uri_row_t *rows, size_t *nrows) {
  char *f[12];
  size_t nf = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " \n", &save); t && nf < 12; t = strtok_r(NULL, " \n", &save))
    f[nf++] = t;
  if (nf < 12) return;
  long status = strtol(f[1], NULL, 10);
  if (status <= 0) return;
  const char *uri = f[3];
  const char *p = strstr(uri, "://");
  if (!p) return;
  const char *path = strchr(p + 3, '/');
  if (!path) return;
  unsigned page;
  int cls = kr_demo_classify(l, path, strlen(path), &page);
  if (cls < 0) return;
  uri_row_t *r = row_for(rows, nrows, l->total, uri, strlen(uri));
  if (!r) return;
  r->cls = cls;
  r->page = page;
  r->visits++;
  if (!strcmp(f[11], "-")) return;
  for (char *a = strtok_r(f[11], ",", &save); a; a = strtok_r(NULL, ",", &save)) {
    size_t an = strlen(a);
    if (!strncmp(a, "wt:", 3)) {
      int64_t w = parse_duration(a + 3, an - 3);
      if (w >= 0) {
        if (r->first_wait < 0) r->first_wait = w;
        r->last_wait = w;
      }
    } else if (an > 3 && !strcmp(a + an - 3, "ver") && a[0] >= '0' && a[0] <= '9') {
      r->versions = strtoull(a, NULL, 10);
    } else if (!strcmp(a, "notModified")) {
      r->n304++;
    } else if (!strcmp(a, "midFetchAbort")) {
      r->aborts++;
    } else if (!strcmp(a, "unchanged")) {
      r->by_digest++;
    } else if (!strcmp(a, "validatorMiss")) {
      r->misses++;
    }
  }
}

static void fmt_wait(char *out, size_t n, double ms) {
  if (ms < 0) snprintf(out, n, "-");
  else snprintf(out, n, "%.1fs", ms / 1000.0);
}

/* The table per class from crawl.log. 0, or -1 when crawl.log could not
 * be read (said on stderr). */
static int print_table(const kr_demo_layout_t *l, const char *log_path, uint64_t seed,
                       uint64_t elapsed_ms, const kr_demo_site_stats_t *ss) {
  FILE *f = fopen(log_path, "r");
  if (!f) {
    kr_cli_error(KR_EIO, "%s: cannot read: %s", log_path, strerror(errno));
    return -1;
  }
  uri_row_t *rows = kr_xcalloc(l->total, sizeof *rows);
  size_t nrows = 0;
  char *line = kr_xmalloc(LINE_MAX_BYTES);
  int skipping = 0; /* in the rest of an over-long line */
  while (fgets(line, LINE_MAX_BYTES, f)) {
    size_t len = strlen(line);
    int whole = len && line[len - 1] == '\n';
    if (!skipping && whole) take_line(l, line, rows, &nrows);
    skipping = !whole;
  }
  fclose(f);
  free(line);

  printf("\n%-8s %5s %6s %11s %13s %5s %6s %9s %9s\n", "class", "pages", "visits", "versions",
         "mean wait", "304s", "aborts", "unchanged", "validator");
  printf("%-8s %5s %6s %11s %6s %6s %5s %6s %9s %9s\n", "", "", "", "found/made", "first", "last",
         "", "", "by digest", "misses");
  for (int k = 0; k < KR_DEMO_NCLASS; k++) {
    const kr_demo_class_info_t *ci = kr_demo_class((kr_demo_class_t)k);
    if (!l->pages[k]) continue;
    uint64_t pages = 0, visits = 0, versions = 0, n304 = 0, aborts = 0, dig = 0, misses = 0;
    double wf = 0, wl = 0;
    unsigned nwf = 0, nwl = 0;
    for (size_t i = 0; i < nrows; i++) {
      const uri_row_t *r = &rows[i];
      if (r->cls != k) continue;
      pages++;
      visits += r->visits;
      versions += r->versions;
      n304 += r->n304;
      aborts += r->aborts;
      dig += r->by_digest;
      misses += r->misses;
      if (r->first_wait >= 0) wf += (double)r->first_wait, nwf++;
      if (r->last_wait >= 0) wl += (double)r->last_wait, nwl++;
    }
    /* Versions the site made while the demo ran (the clock section aside). */
    uint64_t made = 0;
    for (unsigned p = 0; p < l->pages[k]; p++)
      made += kr_demo_version(l, seed, (kr_demo_class_t)k, p, elapsed_ms) + 1;
    char a[32], b[32], v[48];
    fmt_wait(a, sizeof a, nwf ? wf / nwf : -1);
    fmt_wait(b, sizeof b, nwl ? wl / nwl : -1);
    snprintf(v, sizeof v, "%" PRIu64 "/%" PRIu64, versions, made);
    printf("%-8s %5" PRIu64 " %6" PRIu64 " %11s %6s %6s %5" PRIu64 " %6" PRIu64 " %9" PRIu64
           " %9" PRIu64 "\n",
           ci->name, pages, visits, v, a, b, n304, aborts, dig, misses);
  }
  free(rows);
  (void)ss;
  return 0;
}

/* Records by kind, as the CDXJ indexer sees them. */
typedef struct {
  uint64_t responses, revisits, revisits_304, other;
} warc_counts_t;

static void count_record(void *ud, const kr_cdx_rec_t *r) {
  warc_counts_t *c = ud;
  if (r->type == KR_WARC_RESPONSE) c->responses++;
  else if (r->type == KR_WARC_REVISIT) {
    c->revisits++;
    /* kria writes a 304's revisit with no HTTP head, so it has no status */
    if (!r->status.p) c->revisits_304++;
  } else c->other++;
}

/* WARC files in dir, with sizes, then their records counted through the
 * CDXJ indexer (what `kria cdx` reads): full responses for what changed,
 * revisits for what did not. */
static void print_warcs(const char *dir, warc_counts_t *c, unsigned *bad) {
  DIR *d = opendir(dir);
  if (!d) {
    printf("  WARC files  none (%s: %s)\n", dir, strerror(errno));
    return;
  }
  struct dirent *e;
  unsigned n = 0;
  uint64_t bytes = 0;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    int closed = (len > 5 && !strcmp(e->d_name + len - 5, ".warc")) ||
                 (len > 8 && !strcmp(e->d_name + len - 8, ".warc.gz"));
    if (!closed && !strstr(e->d_name, ".warc")) continue;
    char p[8192];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (stat(p, &sb) || !S_ISREG(sb.st_mode)) continue;
    if (n < 10) printf("  WARC file   %s (%" PRIu64 " bytes)\n", p, (uint64_t)sb.st_size);
    n++;
    bytes += (uint64_t)sb.st_size;
    if (!closed) continue;
    kr_cdx_lines_t lines = {0};
    if (kr__cdx_index_file(p, NULL, &lines, count_record, c)) (*bad)++;
    kr__cdx_lines_free(&lines);
  }
  closedir(d);
  if (!n) printf("  WARC files  none in %s\n", dir);
  else if (n > 10) printf("  WARC files  %u in %s (%" PRIu64 " bytes)\n", n, dir, bytes);
}

static void print_records(const warc_counts_t *c, unsigned bad) {
  printf("\nWARC records (as `kria cdx` indexes them%s):\n",
         bad ? "; some files could not be read" : "");
  printf("  %" PRIu64 " responses (full records: new versions, robots.txt, pages whose only\n"
         "     change was the stripped clock section)\n", c->responses);
  printf("  %" PRIu64 " revisits (pointing at a stored response: %" PRIu64
         " after a 304, with no block;\n     the rest with the response head only)\n",
         c->revisits, c->revisits_304);
  if (c->other) printf("  %" PRIu64 " other records (resources, metadata)\n", c->other);
}

/* ---- the command ------------------------------------------------------------------------- */

static int load_config(const demo_args_t *a, const char *state_dir, const char *seeds,
                       kr_config_t **out) {
  kr_config_t *cfg = kr_config_new();
  const char *name = a->config ? a->config : "demo.conf (built in)";
  int rc = a->config ? kr_config_load_file(cfg, a->config)
                     : kr_config_load_string(cfg, name, kr__demo_conf, strlen(kr__demo_conf));
  char set[4][4400];
  snprintf(set[0], sizeof set[0], "crawl.seeds=%s", seeds);
  snprintf(set[1], sizeof set[1], "crawl.state-dir=%s", state_dir);
  snprintf(set[2], sizeof set[2], "limits.max-time=%us", a->seconds);
  /* The demo site listens on loopback, which the address policy refuses
   * by default; also with --config FILE. */
  snprintf(set[3], sizeof set[3], "http.allow-private-addresses=true");
  for (size_t i = 0; i < 4; i++)
    if (kr_config_set(cfg, set[i]) && !rc) rc = KR_ECONFIG;
  for (size_t i = 0; i < a->nover; i++)
    if (kr_config_set(cfg, a->over[i]) && !rc) rc = KR_ECONFIG;
  if (rc == 0) rc = kr_config_finish(cfg);
  if (rc) {
    print_config_errors(cfg, rc, name);
    kr_config_free(cfg);
    return rc;
  }
  *out = cfg;
  return 0;
}

static void print_intro(const demo_args_t *a, const kr_demo_layout_t *l, uint16_t port,
                        const char *state_dir) {
  printf("kria demo: crawling a built-in demo site for %u s\n", a->seconds);
  printf("  site      http://127.0.0.1:%u/ (the liar pages on http://localhost:%u/liar/)\n",
         port, port);
  char p[4200], addr[128] = "";
  snprintf(p, sizeof p, "%s/status.addr", state_dir);
  FILE *f = fopen(p, "r");
  if (f) {
    if (fgets(addr, sizeof addr, f)) addr[strcspn(addr, "\r\n")] = '\0';
    fclose(f);
  }
  if (addr[0]) printf("  console   http://%s/ (open it while the demo runs)\n", addr);
  printf("  state     %s\n", state_dir);
  for (int k = 0, first = 1; k < KR_DEMO_NCLASS; k++) {
    if (!l->pages[k]) continue;
    char about[160];
    kr_demo_about(l, (kr_demo_class_t)k, about, sizeof about);
    printf("  %-9s %u %-8s %s\n", first ? "pages" : "", l->pages[k],
           kr_demo_class((kr_demo_class_t)k)->name, about);
    first = 0;
  }
  printf("\n");
  fflush(stdout);
}

int kr_cmd_demo(int argc, char **argv) {
  demo_args_t a;
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc == 1 ? 0 : rc;

  char err[8192], state_dir[4096];
  if (a.state_dir) {
    if (strlen(a.state_dir) >= sizeof state_dir - 64) {
      kr_cli_error(0, "demo: --state-dir path too long");
      return 64;
    }
    snprintf(state_dir, sizeof state_dir, "%s", a.state_dir);
    if (prepare_state_dir(state_dir, err, sizeof err)) {
      kr_cli_error(KR_EIO, "%s", err);
      return 2;
    }
  } else {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 1024) tmp = "/tmp";
    snprintf(state_dir, sizeof state_dir, "%s/kria-demo-XXXXXX", tmp);
    if (!mkdtemp(state_dir)) {
      kr_cli_error(KR_EIO, "%s: cannot create: %s", state_dir, strerror(errno));
      return 2;
    }
  }

  int fd;
  uint16_t port;
  if ((rc = kr_demo_site_bind(&fd, &port))) {
    kr_cli_error(rc, "demo: cannot bind a socket on 127.0.0.1: %s", strerror(errno));
    return 2;
  }
  char seeds[4200];
  snprintf(seeds, sizeof seeds, "%s/seeds.txt", state_dir);
  kr_demo_layout_t layout = *kr_demo_layout_default();
  if (a.pages) kr_demo_layout_grown(&layout, a.pages); /* checked by parse_args */
  if (write_seeds(seeds, &layout, port)) {
    kr_cli_error(KR_EIO, "%s: cannot write: %s", seeds, strerror(errno));
    close(fd);
    return 2;
  }
  kr_config_t *cfg;
  if (load_config(&a, state_dir, seeds, &cfg)) {
    close(fd);
    return 2;
  }
  char warc_dir[4200] = "";
  const kr_config_view_t *g = kr_config_global(cfg);
  if (kr_config_bool(g, KR_CFG_WARC_ENABLED)) {
    const char *wd = kr_config_str(g, KR_CFG_CRAWL_WARC_DIR);
    if (wd[0]) snprintf(warc_dir, sizeof warc_dir, "%s", wd);
    else snprintf(warc_dir, sizeof warc_dir, "%s/warcs", state_dir);
  }

  kr_crawl_t *crawl;
  kr_crawl_opts_t copts = {.hooks = &kr_service_hooks}; /* status, progress */
  rc = kr_crawl_new(cfg, &copts, &crawl, err, sizeof err);
  if (rc) {
    kr_cli_error(rc, "%s", err);
    close(fd);
    kr_config_free(cfg);
    return 2;
  }
  demo_run_t run;
  memset(&run, 0, sizeof run);
  run.crawl = crawl;
  run.tty = isatty(STDERR_FILENO);
  run.truth = a.truth;
  kr_demo_site_opts_t sopts = {.seed = a.seed, .layout = &layout, .truth = a.truth != NULL};
  rc = kr_demo_site_start(kr_crawl_loop(crawl), fd, &sopts, &run.site);
  if (rc) {
    kr_cli_error(rc, "demo: cannot serve the demo site on the crawl's loop");
    kr_crawl_free(crawl); /* runs the loop: the site's handles close too */
    kr_config_free(cfg);
    return 2;
  }
  uv_timer_init(kr_crawl_loop(crawl), &run.progress);
  uv_check_init(kr_crawl_loop(crawl), &run.watch);
  run.progress.data = run.watch.data = &run;
  uint64_t tick = run.tty ? TTY_TICK_MS : LINE_EVERY_MS;
  uv_timer_start(&run.progress, on_progress, tick, tick);
  uv_check_start(&run.watch, on_watch);

  print_intro(&a, &layout, port, state_dir);
  rc = kr_crawl_run(crawl);
  kr_crawl_stats_t st;
  kr_crawl_get_stats(crawl, &st);
  kr_crawl_free(crawl);
  kr_config_free(cfg);
  if (!run.closed) { /* cannot happen: the loop ran until everything closed */
    kr_cli_error(KR_EINVAL, "demo: the crawl ended without closing");
    return 2;
  }

  printf("kria demo: %.1f s, %" PRIu64 " fetches (%" PRIu64 " errors; the site answered %" PRIu64
         " requests)\n",
         (double)run.elapsed_ms / 1000.0, st.fetched, st.fetch_errors, run.site_st.requests);
  /* changes_found counts revisits only; changed (versions) includes first visits. */
  printf("  %" PRIu64 " changes found by revisits (%" PRIu64 " versions stored, first visits\n"
         "  included), %" PRIu64 " visits found none: %" PRIu64 " answered 304,\n"
         "  %" PRIu64 " stopped at the headers (%" PRIu64 " body bytes not downloaded), %" PRIu64
         " had the\n  same digest (%" PRIu64 " digests with the clock section stripped)\n",
         st.changes_found, st.changed, st.unchanged, st.not_modified, st.midfetch_aborts, st.aborted_bytes_saved,
         st.unchanged_full, st.stripped);
  if (st.vtrust_misses)
    printf("  validators said unchanged %" PRIu64 " time(s) when the content had changed:\n"
           "  that host's validators are not trusted (full downloads)\n",
           st.vtrust_misses);
  char log_path[4200];
  snprintf(log_path, sizeof log_path, "%s/logs/crawl.log", state_dir);
  int trc = print_table(&layout, log_path, a.seed, run.elapsed_ms, &run.site_st);
  printf("\nmean wait: the wait given after a page's first and after its last visit, averaged\n"
         "over the class; versions: those the crawl found / those the site made meanwhile.\n\n");
  printf("  crawl.log   %s\n", log_path);
  if (a.truth && !run.truth_rc) printf("  truth       %s\n", a.truth);
  else if (a.truth) kr_cli_error(run.truth_rc, "%s: cannot write the ground truth", a.truth);
  warc_counts_t wc = {0};
  unsigned wbad = 0;
  if (warc_dir[0]) print_warcs(warc_dir, &wc, &wbad);
  else printf("  WARC files  off (warc.enabled = false)\n");
  printf("  state       %s\n  look        kria status -s %s\n"
         "              kria report hosts -s %s\n",
         state_dir, state_dir, state_dir);
  if (warc_dir[0]) print_records(&wc, wbad);
  fflush(stdout);
  if (rc) {
    kr_cli_error(rc, "the crawl stopped on an error");
    return 2;
  }
  return trc || run.truth_rc ? 2 : 0;
}
