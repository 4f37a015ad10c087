/*
 * Unit tests for the stderr diagnostics: the syslog priority prefix (<3>
 * ... <7>) only when stderr is the journal, i.e. $JOURNAL_STREAM names
 * fd 2's device and inode; never with the variable unset, empty,
 * malformed or naming another file (a terminal, a log file, a pipe
 * inherited from a unit). kr_cli_error follows the same rule. Each test
 * points fd 2 at a temporary file and reads back what was written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kria/error.h"
#include "log.h"

typedef struct {
  char path[64];
  int fd, saved;
} capture_t;

/* fd 2 onto a fresh file until capture_end. */
static void capture_begin(capture_t *c) {
  snprintf(c->path, sizeof c->path, "/tmp/kria-log-XXXXXX");
  c->fd = mkstemp(c->path);
  assert_true(c->fd >= 0);
  fflush(stderr);
  c->saved = dup(2);
  assert_true(c->saved >= 0);
  assert_int_equal(dup2(c->fd, 2), 2);
}

/* What was written to fd 2, fd 2 restored. */
static void capture_end(capture_t *c, char *out, size_t outlen) {
  fflush(stderr);
  assert_int_equal(dup2(c->saved, 2), 2);
  close(c->saved);
  ssize_t n = pread(c->fd, out, outlen - 1, 0);
  assert_true(n >= 0);
  out[n] = '\0';
  close(c->fd);
  unlink(c->path);
}

/* JOURNAL_STREAM naming fd 2 (which is c's file now). */
static void set_journal_stream_to_stderr(void) {
  struct stat sb;
  assert_int_equal(fstat(2, &sb), 0);
  char v[64];
  snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)sb.st_dev,
           (unsigned long long)sb.st_ino);
  assert_int_equal(setenv("JOURNAL_STREAM", v, 1), 0);
}

static void write_lines(void) {
  kr_log_write(KR_LOG_ERROR, "ctx", "bad %d", 1);
  kr_log_write(KR_LOG_NOTICE, NULL, "fine");
  kr_cli_error(KR_ECONFIG, "fatal");
}

static void journal_gets_prefixes(void **state) {
  (void)state;
  capture_t c;
  char out[1024];
  capture_begin(&c);
  set_journal_stream_to_stderr();
  kr_log_init();
  assert_int_equal(kr_log_journal(), 1);
  write_lines();
  capture_end(&c, out, sizeof out);
  assert_string_equal(out,
                      "<3>kria: error: ctx: bad 1\n"
                      "<5>kria: notice: fine\n"
                      "<3>kria: error: config: fatal\n");
  unsetenv("JOURNAL_STREAM");
  kr_log_init();
}

static void no_journal_no_prefixes(void **state) {
  (void)state;
  const char *const values[] = {NULL, "", "1:2", "garbage", "12", "12:", ":12"};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    capture_t c;
    char out[1024];
    capture_begin(&c);
    if (values[i]) assert_int_equal(setenv("JOURNAL_STREAM", values[i], 1), 0);
    else unsetenv("JOURNAL_STREAM");
    kr_log_init();
    assert_int_equal(kr_log_journal(), 0);
    write_lines();
    capture_end(&c, out, sizeof out);
    assert_string_equal(out,
                        "kria: error: ctx: bad 1\n"
                        "kria: notice: fine\n"
                        "kria: error: config: fatal\n");
  }
  unsetenv("JOURNAL_STREAM");
  kr_log_init();
}

/* The variable is inherited (a shell started from a unit) and names
 * another file than fd 2 now: no prefixes. */
static void inherited_variable_other_file(void **state) {
  (void)state;
  char other[64] = "/tmp/kria-log-XXXXXX";
  int ofd = mkstemp(other); /* kept open: its inode is not reused */
  assert_true(ofd >= 0);
  struct stat sb;
  assert_int_equal(fstat(ofd, &sb), 0);
  char v[64];
  snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)sb.st_dev,
           (unsigned long long)sb.st_ino);
  assert_int_equal(setenv("JOURNAL_STREAM", v, 1), 0);
  capture_t c;
  char out[1024];
  capture_begin(&c);
  kr_log_init();
  assert_int_equal(kr_log_journal(), 0);
  write_lines();
  capture_end(&c, out, sizeof out);
  assert_null(strchr(out, '<'));
  close(ofd);
  unlink(other);
  unsetenv("JOURNAL_STREAM");
  kr_log_init();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(journal_gets_prefixes),
      cmocka_unit_test(no_journal_no_prefixes),
      cmocka_unit_test(inherited_variable_other_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
