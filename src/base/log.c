/*
 * stderr diagnostics (see log.h) and the KR_BUG_ON handler. Each line is
 * formatted into one buffer and written with a single write(2) so lines
 * from concurrent processes do not interleave.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int kr_log_level = KR_LOG_NOTICE;
uint64_t kr__rare_events;
static int journal; /* stderr is the journal: lines carry <N> */

void kr_log_init(void) {
  /* systemd sets JOURNAL_STREAM=DEV:INODE of the stream it connects to
   * stderr. The variable alone is not enough: it is inherited by children
   * whose stderr went elsewhere (a shell started from a unit, a pipe). */
  journal = 0;
  kr_mem_set_oom_prefix(NULL);
  const char *js = getenv("JOURNAL_STREAM");
  struct stat sb;
  if (!js || !*js || fstat(2, &sb) != 0) return;
  char *end;
  unsigned long long dev = strtoull(js, &end, 10);
  if (end == js || *end != ':' || !end[1]) return;
  const char *ip = end + 1;
  unsigned long long ino = strtoull(ip, &end, 10);
  if (end == ip || *end) return;
  journal = dev == (unsigned long long)sb.st_dev && ino == (unsigned long long)sb.st_ino;
  kr_mem_set_oom_prefix(journal ? "<2>" : NULL);
}

int kr_log_journal(void) { return journal; }

static const char *const level_names[] = {
    [KR_LOG_ERROR] = "error", [KR_LOG_WARN] = "warn",
    [KR_LOG_NOTICE] = "notice", [KR_LOG_INFO] = "info",
    [KR_LOG_DEBUG] = "debug",
};

int kr_log_level_parse(const char *s) {
  for (int i = KR_LOG_ERROR; i <= KR_LOG_DEBUG; i++)
    if (strcmp(s, level_names[i]) == 0) return i;
  return -1;
}

void kr_log_write(int level, const char *ctx, const char *fmt, ...) {
  char line[2048];
  if (level < KR_LOG_ERROR) level = KR_LOG_ERROR;
  if (level > KR_LOG_DEBUG) level = KR_LOG_DEBUG;
  int n = journal ? snprintf(line, sizeof line, "<%d>kria: %s: ", level, level_names[level])
                  : snprintf(line, sizeof line, "kria: %s: ", level_names[level]);
  if (ctx && n > 0 && (size_t)n < sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, "%s: ", ctx);
  if (n > 0 && (size_t)n < sizeof line) {
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
  }
  if (n < 0) return;
  if ((size_t)n >= sizeof line - 1) n = (int)sizeof line - 2;
  /* Control characters from hostile input must not forge log lines. */
  for (int i = 0; i < n; i++)
    if ((unsigned char)line[i] < 0x20) line[i] = '?';
  line[n++] = '\n';
  ssize_t w = write(2, line, (size_t)n);
  (void)w;
}

void kr__bug(const char *file, int line, const char *cond) {
  kr_log_write(KR_LOG_ERROR, "BUG", "%s:%d: %s", file, line, cond);
  abort();
}
