/*
 * `kria robots FILE USER-AGENT URL`: read a robots.txt file (or standard
 * input for "-"), parse it for the product token at the start of
 * USER-AGENT, and print whether URL may be fetched and the rule that
 * decided it. Exit 0 allowed, 1 disallowed, 2 error, 64 usage. URL may be
 * a full URL or a path; its path and query are taken with
 * kr_robots_url_path (no url-module parse, so any string gets an answer).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"
#include "kria/robots.h"

static const char usage_text[] =
    "usage: kria robots FILE USER-AGENT URL\n"
    "  FILE        robots.txt to read (\"-\" for standard input)\n"
    "  USER-AGENT  product token to obey, e.g. kria (kria/0.1 means kria)\n"
    "  URL         full URL or path to check\n"
    "exit status: 0 allowed, 1 disallowed, 2 error, 64 usage\n";

/* Read at most max bytes of FILE into *out (caller frees). 0 or -errno. */
static int read_bounded(const char *file, size_t max, char **out,
                        size_t *len) {
  FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
  if (!f) return -errno;
  char *data = kr_xmalloc(max ? max : 1);
  size_t n = 0;
  while (n < max) {
    size_t got = fread(data + n, 1, max - n, f);
    if (got == 0) break;
    n += got;
  }
  int err = ferror(f) ? -(errno ? errno : EIO) : 0;
  if (f != stdin) fclose(f);
  if (err) {
    free(data);
    return err;
  }
  *out = data;
  *len = n;
  return 0;
}

int kr_cmd_robots(int argc, char **argv) {
  if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (argc != 4) {
    kr_cli_error(0, "robots takes FILE USER-AGENT URL (see 'kria robots --help')");
    return 64;
  }
  const char *file = argv[1], *agent = argv[2], *url = argv[3];

  size_t tok = 0;
  while (agent[tok] && strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_",
                              agent[tok]))
    tok++;
  if (tok == 0) {
    kr_cli_error(0, "USER-AGENT '%s' does not start with a product token "
                    "([A-Za-z_-]+)", agent);
    return 64;
  }
  char *token = kr_xstrndup(agent, tok);

  /* One byte past the parse window tells the parser it was cut. */
  char *data = NULL;
  size_t len = 0;
  int err = read_bounded(file, KR_ROBOTS_DEFAULT_MAX_BYTES + 1, &data, &len);
  if (err) {
    kr_cli_error(KR_EIO, "cannot read '%s': %s", file, strerror(-err));
    free(token);
    return 2;
  }

  kr_robots_t *robots = NULL;
  err = kr_robots_parse(data, len, token, &robots);
  if (err) {
    kr_cli_error(err, "cannot parse '%s'", file);
    free(data);
    free(token);
    return 2;
  }
  if (kr_robots_stats(robots)->truncated)
    fprintf(stderr, "kria: note: only the first %u bytes of '%s' are read\n",
            KR_ROBOTS_DEFAULT_MAX_BYTES, file);

  kr_robots_decision_t d;
  int allowed = kr_robots_allowed(robots, kr_robots_url_path(url, strlen(url)), &d);
  kr_buf_t line;
  kr_buf_init(&line, 1 << 20);
  kr_robots_decision_format(&d, &line);
  puts(line.data ? line.data : (allowed ? "allowed" : "disallowed"));
  kr_buf_free(&line);

  kr_robots_free(robots);
  free(data);
  free(token);
  return allowed ? 0 : 1;
}
