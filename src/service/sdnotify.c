/*
 * sd_notify(3) over a plain AF_UNIX datagram socket (see sdnotify.h). The
 * address is built once at open: a leading '@' becomes the NUL byte of
 * Linux's abstract namespace and the address length then counts exactly
 * the name's bytes (no terminator), as systemd does. Sends never block; a
 * failed send is counted and reported, never fatal, because a crawler
 * must not stop because its supervisor went away. Sections: parsing the
 * environment, open/close, sending.
 */
#include "sdnotify.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

_Static_assert(sizeof(((kr_sdnotify_t *)0)->addr) >= sizeof(struct sockaddr_un),
               "kr_sdnotify_t.addr holds a sockaddr_un");

/* ---- parsing the environment ------------------------------------------- */

uint64_t kr_sdnotify_parse_usec(const char *s) {
  if (!s || !*s || strlen(s) > 20) return 0;
  uint64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (v < 1000 || v > UINT64_C(86400000000)) return 0;
  return v;
}

static int pid_is_us(const char *s) {
  if (!s || !*s) return 1;
  if (strlen(s) > 10 || strspn(s, "0123456789") != strlen(s)) return 0;
  return strtol(s, NULL, 10) == (long)getpid();
}

/* ---- open/close --------------------------------------------------------- */

int kr_sdnotify_open_with(kr_sdnotify_t *n, const char *sock, const char *wd_usec,
                          const char *wd_pid) {
  memset(n, 0, sizeof *n);
  n->fd = -1;
  if (!sock || !*sock) return 0;
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  size_t len = strlen(sock);
  if ((sock[0] != '/' && sock[0] != '@') || len < 2 || len >= sizeof sa.sun_path)
    return KR_EINVAL;
  memcpy(sa.sun_path, sock, len);
  if (sock[0] == '@') sa.sun_path[0] = '\0';
  /* Abstract names are exactly len bytes long; paths carry their NUL. */
  unsigned alen = (unsigned)(offsetof(struct sockaddr_un, sun_path) + len + (sock[0] == '/'));
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return KR_EIO;
  n->fd = fd;
  memcpy(n->addr, &sa, sizeof sa);
  n->addr_len = alen;
  if (pid_is_us(wd_pid)) n->watchdog_usec = kr_sdnotify_parse_usec(wd_usec);
  return 0;
}

int kr_sdnotify_open(kr_sdnotify_t *n) {
  return kr_sdnotify_open_with(n, getenv("NOTIFY_SOCKET"), getenv("WATCHDOG_USEC"),
                               getenv("WATCHDOG_PID"));
}

void kr_sdnotify_close(kr_sdnotify_t *n) {
  if (n->fd >= 0) close(n->fd);
  n->fd = -1;
}

int kr_sdnotify_is_enabled(const kr_sdnotify_t *n) { return n->fd >= 0; }

/* ---- sending --------------------------------------------------------------- */

int kr_sdnotify_send(kr_sdnotify_t *n, const char *msg) {
  if (n->fd < 0) return 0;
  size_t len = strnlen(msg, KR_SDNOTIFY_MAX_MSG);
  ssize_t r;
  do {
    r = sendto(n->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)n->addr,
               (socklen_t)n->addr_len);
  } while (r < 0 && errno == EINTR);
  if (r != (ssize_t)len) {
    n->errors++;
    return KR_EIO;
  }
  n->sent++;
  return 0;
}

int kr_sdnotify_status(kr_sdnotify_t *n, const char *fmt, ...) {
  if (n->fd < 0) return 0;
  char msg[KR_SDNOTIFY_MAX_MSG];
  memcpy(msg, "STATUS=", 7);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + 7, sizeof msg - 7, fmt, ap);
  va_end(ap);
  /* One message, one STATUS line: a newline would start another key. */
  for (char *p = msg + 7; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  return kr_sdnotify_send(n, msg);
}
