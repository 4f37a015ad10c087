/*
 * Diagnostic log on stderr, one event per line: "kria: LEVEL: ...". When
 * stderr is the journal (kr_log_init) each line starts with its syslog
 * priority (<3> error ... <7> debug) so journald files it at the right
 * level; a terminal or a file never sees the prefix. KR_LOG checks the level before formatting anything. ctx
 * names what the line is about (a host, a URI, a file) and may be NULL.
 * The crawl log (crawl.log) is a different module.
 */
#ifndef KRIA_LOG_H
#define KRIA_LOG_H

enum kr_log_level {
  KR_LOG_ERROR = 3,
  KR_LOG_WARN = 4,
  KR_LOG_NOTICE = 5,
  KR_LOG_INFO = 6,
  KR_LOG_DEBUG = 7,
};

extern int kr_log_level; /* lines above this level are dropped */

/* Look at whether stderr is the journal (JOURNAL_STREAM names fd 2's
 * device and inode). Called once at start, before any thread; until then
 * lines have no priority prefix. */
void kr_log_init(void);
/* 1: stderr is the journal, errors written outside KR_LOG (kr_cli_error)
 * carry the <N> prefix too. */
int kr_log_journal(void);

void kr_log_write(int level, const char *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Parse "error|warn|notice|info|debug"; -1 if unknown. */
int kr_log_level_parse(const char *s);

#define KR_LOG(level, ctx, ...) \
  do {                                                  \
    if ((level) <= kr_log_level)                        \
      kr_log_write((level), (ctx), __VA_ARGS__);        \
  } while (0)

#endif
