/*
 * `kria crawl -c FILE [-o section.key=value]... [--revisit-now]
 * [--allow-scope-change]`: load the configuration (the file, then the
 * overrides, then the cross-key checks), build the crawl and run it until
 * it ends (--revisit-now: every URI of the state directory due at start;
 * --allow-scope-change: this start may put hosts with URIs out of scope).
 * Exit 0 when the crawl ended as asked (a snapshot crawl completed, a
 * limit was reached, SIGINT/SIGTERM), 2 on a configuration,
 * state-directory or database error, a scope change refused, or a
 * snapshot crawl that fetched none of the seeds it tried, 64 on a usage
 * error.
 * A start that fails leaves no state directory it created behind.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "crawl.h"
#include "internal.h"
#include "kria/config.h"
#include "log.h"
#include "service.h"

static const char usage_text[] =
    "usage: kria crawl -c FILE [-o section.key=value]... [--revisit-now]\n"
    "                  [--allow-scope-change]\n"
    "\n"
    "Crawl as FILE says (see config/kria.conf for every key). -o overrides\n"
    "one key after the file (repeatable; wait.NAME.key for wait evaluators).\n"
    "Relative paths in the configuration (crawl.seeds, crawl.state-dir) are\n"
    "taken from the current directory. --revisit-now makes every URI the\n"
    "state directory knows due at start (a second pass over a site, e.g.\n"
    "with crawl.revisit = false: conditional GETs where validators are\n"
    "known, then exit). The seeds in force are kept in the state directory:\n"
    "with crawl.seeds empty a start uses them, and a start whose seeds or\n"
    "[scope] rules would put hosts with URIs out of scope is refused, naming\n"
    "them, unless --allow-scope-change (or scope.allow-change = true).\n"
    "SIGINT or SIGTERM stops the crawl:\n"
    "running fetches get 4 s to finish, the rest is abandoned (it stays\n"
    "queued), everything is committed and kria exits within 5 s.\n"
    "Exit 0 when the crawl ended, 2 on an error (a snapshot crawl that could\n"
    "fetch none of its seeds is one), 64 on a usage error.\n";

int kr_cmd_crawl(int argc, char **argv) {
  const char *file = NULL;
  const char *over[256];
  size_t nover = 0;
  int revisit_now = 0, allow_scope_change = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (!strcmp(a, "--revisit-now")) {
      revisit_now = 1;
      continue;
    }
    if (!strcmp(a, "--allow-scope-change")) {
      allow_scope_change = 1;
      continue;
    }
    if (!strcmp(a, "-c") || !strcmp(a, "-o")) {
      if (i + 1 >= argc) {
        kr_cli_error(0, "crawl: %s needs a value", a);
        return 64;
      }
      const char *v = argv[++i];
      if (a[1] == 'c') {
        if (file) {
          kr_cli_error(0, "crawl: one -c FILE only");
          return 64;
        }
        file = v;
      } else {
        if (nover == ARRAY_SIZE(over)) {
          kr_cli_error(0, "crawl: more than %zu -o options", ARRAY_SIZE(over));
          return 64;
        }
        over[nover++] = v;
      }
      continue;
    }
    kr_cli_error(0, "crawl: unexpected argument '%s' (try 'kria crawl --help')", a);
    return 64;
  }
  if (!file) {
    fputs(usage_text, stderr);
    return 64;
  }

  kr_config_t *cfg = kr_config_new();
  int rc = kr_config_load_file(cfg, file);
  for (size_t i = 0; i < nover; i++) /* every bad -o is reported at once */
    if (kr_config_set(cfg, over[i]) && !rc) rc = KR_ECONFIG;
  if (rc == 0) rc = kr_config_finish(cfg);
  if (rc) {
    size_t n = kr_config_error_count(cfg);
    for (size_t i = 0; i < n; i++) kr_cli_error(KR_ECONFIG, "%s", kr_config_error(cfg, i));
    if (kr_config_error_total(cfg) > n)
      kr_cli_error(KR_ECONFIG, "... and %zu more", kr_config_error_total(cfg) - n);
    if (!n) kr_cli_error(rc, "%s: cannot load the configuration", file);
    kr_config_free(cfg);
    return 2;
  }

  kr_crawl_t *crawl;
  char err[1024];
  kr_crawl_opts_t copts = {.config_path = file, .overrides = over, .n_overrides = nover,
                           .revisit_now = revisit_now,
                           .allow_scope_change = allow_scope_change,
                           .hooks = &kr_service_hooks};
  rc = kr_crawl_new(cfg, &copts, &crawl, err, sizeof err);
  if (rc) {
    kr_cli_error(rc, "%s", err);
    kr_config_free(cfg);
    return 2;
  }
  rc = kr_crawl_run(crawl);
  kr_crawl_free(crawl);
  kr_config_free(cfg);
  return rc ? 2 : 0; /* the crawl logged why it stopped, once */
}
