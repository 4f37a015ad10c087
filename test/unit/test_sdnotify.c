/*
 * Unit tests for sd_notify without libsystemd: a test AF_UNIX datagram
 * socket (a path in a temp dir, and an abstract "@name") receives READY=1,
 * STATUS= (newlines flattened, long text cut), WATCHDOG=1 and STOPPING=1
 * byte for byte; $WATCHDOG_USEC/$WATCHDOG_PID parsing; unset, empty and
 * malformed $NOTIFY_SOCKET values; a vanished receiver is counted, never
 * fatal, and never blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kria/error.h"
#include "sdnotify.h"

typedef struct {
  int fd;
  char name[108]; /* as given to NOTIFY_SOCKET */
  char dir[64];
} receiver_t;

/* A datagram socket bound at a fresh path (abstract: "@kria-test-PID-N"). */
static void receiver_open(receiver_t *r, int abstract) {
  static int serial;
  memset(r, 0, sizeof *r);
  r->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(r->fd >= 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  socklen_t len;
  if (abstract) {
    snprintf(r->name, sizeof r->name, "@kria-test-%d-%d", (int)getpid(), serial++);
    size_t n = strlen(r->name);
    memcpy(sa.sun_path, r->name, n);
    sa.sun_path[0] = '\0';
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
  } else {
    snprintf(r->dir, sizeof r->dir, "/tmp/kria-sdn-XXXXXX");
    assert_non_null(mkdtemp(r->dir));
    snprintf(r->name, sizeof r->name, "%s/notify", r->dir);
    strcpy(sa.sun_path, r->name);
    len = (socklen_t)sizeof sa;
  }
  assert_int_equal(bind(r->fd, (struct sockaddr *)&sa, len), 0);
}

static void receiver_close(receiver_t *r) {
  close(r->fd);
  if (r->dir[0]) {
    unlink(r->name);
    rmdir(r->dir);
  }
}

/* The next datagram, NUL-terminated (the test fails rather than block). */
static const char *receive(receiver_t *r) {
  static char buf[4096];
  ssize_t n = recv(r->fd, buf, sizeof buf - 1, MSG_DONTWAIT);
  assert_true(n >= 0);
  buf[n] = '\0';
  return buf;
}

static void messages_reach_socket(int abstract) {
  receiver_t r;
  receiver_open(&r, abstract);
  kr_sdnotify_t n;
  assert_int_equal(kr_sdnotify_open_with(&n, r.name, NULL, NULL), 0);
  assert_true(kr_sdnotify_is_enabled(&n));
  assert_int_equal(n.watchdog_usec, 0);
  assert_int_equal(kr_sdnotify_send(&n, "READY=1"), 0);
  assert_string_equal(receive(&r), "READY=1");
  assert_int_equal(kr_sdnotify_status(&n, "crawling: %d URIs\nqueued", 42), 0);
  assert_string_equal(receive(&r), "STATUS=crawling: 42 URIs queued");
  assert_int_equal(kr_sdnotify_send(&n, "WATCHDOG=1"), 0);
  assert_string_equal(receive(&r), "WATCHDOG=1");
  assert_int_equal(kr_sdnotify_send(&n, "STOPPING=1"), 0);
  assert_string_equal(receive(&r), "STOPPING=1");
  assert_int_equal(n.sent, 4);
  assert_int_equal(n.errors, 0);
  kr_sdnotify_close(&n);
  assert_false(kr_sdnotify_is_enabled(&n));
  receiver_close(&r);
}

static void path_socket(void **state) {
  (void)state;
  messages_reach_socket(0);
}

static void abstract_socket(void **state) {
  (void)state;
  messages_reach_socket(1);
}

static void long_status_is_cut(void **state) {
  (void)state;
  receiver_t r;
  receiver_open(&r, 1);
  kr_sdnotify_t n;
  assert_int_equal(kr_sdnotify_open_with(&n, r.name, NULL, NULL), 0);
  char big[5000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(kr_sdnotify_status(&n, "%s", big), 0);
  const char *m = receive(&r);
  assert_int_equal(strlen(m), KR_SDNOTIFY_MAX_MSG - 1);
  assert_memory_equal(m, "STATUS=xxx", 10);
  kr_sdnotify_close(&n);
  receiver_close(&r);
}

static void disabled_without_socket(void **state) {
  (void)state;
  kr_sdnotify_t n;
  assert_int_equal(kr_sdnotify_open_with(&n, NULL, "5000000", NULL), 0);
  assert_false(kr_sdnotify_is_enabled(&n));
  assert_int_equal(n.watchdog_usec, 0);
  assert_int_equal(kr_sdnotify_send(&n, "READY=1"), 0);
  assert_int_equal(kr_sdnotify_status(&n, "x"), 0);
  assert_int_equal(n.sent, 0);
  kr_sdnotify_close(&n);
  assert_int_equal(kr_sdnotify_open_with(&n, "", NULL, NULL), 0);
  assert_false(kr_sdnotify_is_enabled(&n));
  /* The environment variant: unset means disabled. */
  unsetenv("NOTIFY_SOCKET");
  assert_int_equal(kr_sdnotify_open(&n), 0);
  assert_false(kr_sdnotify_is_enabled(&n));
}

static void bad_socket_names(void **state) {
  (void)state;
  kr_sdnotify_t n;
  assert_int_equal(kr_sdnotify_open_with(&n, "relative/path", NULL, NULL), KR_EINVAL);
  assert_false(kr_sdnotify_is_enabled(&n));
  assert_int_equal(kr_sdnotify_open_with(&n, "@", NULL, NULL), KR_EINVAL);
  char longname[300];
  memset(longname, 'a', sizeof longname - 1);
  longname[0] = '/';
  longname[sizeof longname - 1] = '\0';
  assert_int_equal(kr_sdnotify_open_with(&n, longname, NULL, NULL), KR_EINVAL);
  assert_false(kr_sdnotify_is_enabled(&n));
}

static void watchdog_env(void **state) {
  (void)state;
  assert_int_equal(kr_sdnotify_parse_usec("30000000"), 30000000);
  assert_int_equal(kr_sdnotify_parse_usec(NULL), 0);
  assert_int_equal(kr_sdnotify_parse_usec(""), 0);
  assert_int_equal(kr_sdnotify_parse_usec("12s"), 0);
  assert_int_equal(kr_sdnotify_parse_usec("-5"), 0);
  assert_int_equal(kr_sdnotify_parse_usec("999"), 0);                 /* < 1 ms */
  assert_int_equal(kr_sdnotify_parse_usec("99999999999999999999"), 0); /* > 1 day */
  receiver_t r;
  receiver_open(&r, 1);
  kr_sdnotify_t n;
  char pid[32];
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  assert_int_equal(kr_sdnotify_open_with(&n, r.name, "20000000", pid), 0);
  assert_int_equal(n.watchdog_usec, 20000000);
  kr_sdnotify_close(&n);
  assert_int_equal(kr_sdnotify_open_with(&n, r.name, "20000000", NULL), 0);
  assert_int_equal(n.watchdog_usec, 20000000);
  kr_sdnotify_close(&n);
  /* Meant for another process (e.g. inherited through exec): not ours. */
  snprintf(pid, sizeof pid, "%d", (int)getpid() + 1);
  assert_int_equal(kr_sdnotify_open_with(&n, r.name, "20000000", pid), 0);
  assert_int_equal(n.watchdog_usec, 0);
  kr_sdnotify_close(&n);
  assert_int_equal(kr_sdnotify_open_with(&n, r.name, "20000000", "junk"), 0);
  assert_int_equal(n.watchdog_usec, 0);
  kr_sdnotify_close(&n);
  receiver_close(&r);
}

static void receiver_gone(void **state) {
  (void)state;
  receiver_t r;
  receiver_open(&r, 0);
  kr_sdnotify_t n;
  assert_int_equal(kr_sdnotify_open_with(&n, r.name, NULL, NULL), 0);
  receiver_close(&r);
  assert_int_equal(kr_sdnotify_send(&n, "WATCHDOG=1"), KR_EIO);
  assert_int_equal(kr_sdnotify_send(&n, "WATCHDOG=1"), KR_EIO);
  assert_int_equal(n.errors, 2);
  assert_int_equal(n.sent, 0);
  kr_sdnotify_close(&n);
}

static void full_receiver_never_blocks(void **state) {
  (void)state;
  receiver_t r;
  receiver_open(&r, 1);
  kr_sdnotify_t n;
  assert_int_equal(kr_sdnotify_open_with(&n, r.name, NULL, NULL), 0);
  /* Nobody reads: the queue fills and sends fail at once instead of
   * blocking the loop. Bounded: the default queue holds far fewer. */
  int failed = 0;
  for (int i = 0; i < 100000 && !failed; i++)
    if (kr_sdnotify_send(&n, "WATCHDOG=1") == KR_EIO) failed = 1;
  assert_true(failed);
  kr_sdnotify_close(&n);
  receiver_close(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(path_socket),          cmocka_unit_test(abstract_socket),
      cmocka_unit_test(long_status_is_cut),   cmocka_unit_test(disabled_without_socket),
      cmocka_unit_test(bad_socket_names),     cmocka_unit_test(watchdog_env),
      cmocka_unit_test(receiver_gone),        cmocka_unit_test(full_receiver_never_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
