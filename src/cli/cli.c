/*
 * Command dispatch for the kria binary: a table of commands, the shared
 * error printer and usage text. Exit statuses are part of the contract
 * other tools rely on: 0 success, 1 a "no" answer (invalid URL,
 * disallowed), 2 an error, 64 a usage error.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kria/config.h"
#include "kria/error.h"
#include "log.h"

struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
};

static const struct command commands[] = {
    {"url", kr_cmd_url, "parse | resolve | canon | surt  URL tools"},
    {"fetch", kr_cmd_fetch, "fetch one URL through the engine"},
    {"robots", kr_cmd_robots, "FILE USER-AGENT URL  robots.txt decision"},
    {"crawl", kr_cmd_crawl, "-c FILE [-o section.key=value]...  run a crawl"},
    {"demo", kr_cmd_demo, "[--seconds N] [--state-dir DIR]  crawl a built-in changing site"},
    {"cdx", kr_cmd_cdx, "FILE...  sorted CDXJ index of WARC files"},
    {"wacz", kr_cmd_wacz, "OUT.wacz FILE...  package WARC files for replayweb.page (WACZ 1.1.1)"},
    {"simulate", kr_cmd_simulate, "[--trace FILE | --urls N --hosts H] ...  compare revisit policies"},
    {"status", kr_cmd_status, "[--addr IP:PORT | -s DIR | -c FILE]  what a crawl is doing"},
    {"report", kr_cmd_report, "hosts | frontier | uri URL  host queues, frontier, one URI"},
    {"cluster", kr_cmd_cluster, "rebalance -c FILE --nodes LIST  change a cluster's members"},
};

void kr_cli_error(int err, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%skria: error: %s: %s\n", kr_log_journal() ? "<3>" : "",
          err < 0 ? kr_err_name(err) : "usage", msg);
}

kr_config_t *kr_cli_load_config(const char *path) {
  kr_config_t *cfg = kr_config_new();
  int rc = kr_config_load_file(cfg, path);
  if (!rc) rc = kr_config_finish(cfg);
  if (!rc) return cfg;
  for (size_t i = 0; i < kr_config_error_count(cfg); i++)
    kr_cli_error(KR_ECONFIG, "%s", kr_config_error(cfg, i));
  kr_config_free(cfg);
  return NULL;
}

static void usage(FILE *f) {
  fprintf(f, "usage: kria <command> [args]\n\ncommands:\n");
  for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "  %-8s %s\n", "version", "print the version");
}

int kr_cli_main(int argc, char **argv) {
  kr_log_init();
  if (argc < 2) {
    usage(stderr);
    return 64;
  }
  const char *name = argv[1];
  if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(name, "version") || !strcmp(name, "--version")) {
    printf("kria %s\n", KRIA_VERSION);
    return 0;
  }
  for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
    if (!strcmp(name, commands[i].name))
      return commands[i].run(argc - 1, argv + 1);
  kr_cli_error(0, "unknown command '%s' (try 'kria help')", name);
  return 64;
}
