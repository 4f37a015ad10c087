/*
 * systemd's notification protocol (sd_notify(3)) without libsystemd: one
 * datagram per message on the AF_UNIX socket named by $NOTIFY_SOCKET
 * ("/path", or "@name" for the abstract namespace), and the watchdog
 * interval from $WATCHDOG_USEC (honoured only when $WATCHDOG_PID is unset
 * or names this process). Outside systemd ($NOTIFY_SOCKET unset) every
 * call is a cheap no-op. No loop here: the caller decides when to ping
 * (src/service/service.c pings from a loop timer while the crawl is healthy).
 */
#ifndef KRIA_SDNOTIFY_H
#define KRIA_SDNOTIFY_H

#include <stddef.h>
#include <stdint.h>

#define KR_SDNOTIFY_MAX_MSG 1024 /* longer messages are cut (STATUS= lines) */

typedef struct kr_sdnotify {
  int fd;                   /* datagram socket, -1 when disabled */
  char addr[112];           /* struct sockaddr_un, filled at open */
  unsigned addr_len;        /* socklen_t of addr */
  uint64_t watchdog_usec;   /* 0: no watchdog asked for */
  uint64_t sent, errors;    /* messages sent / failed (counted, not fatal) */
} kr_sdnotify_t;

/* Read the environment and open the socket. 0 with n disabled when
 * $NOTIFY_SOCKET is unset or empty; KR_EINVAL for a socket name that is
 * not an absolute path or @name or is too long; KR_EIO when the socket
 * cannot be created. n is usable (disabled) after any return. */
int kr_sdnotify_open(kr_sdnotify_t *n);
/* Same, from explicit values instead of the environment (tests); any may
 * be NULL. A watchdog_pid naming another process turns the watchdog off. */
int kr_sdnotify_open_with(kr_sdnotify_t *n, const char *socket, const char *watchdog_usec,
                          const char *watchdog_pid);
void kr_sdnotify_close(kr_sdnotify_t *n);
/* 1 when messages go somewhere. */
int kr_sdnotify_is_enabled(const kr_sdnotify_t *n);

/* Send one message, e.g. "READY=1" or "STATUS=...\nWATCHDOG=1" (never
 * blocks: MSG_DONTWAIT). 0, a no-op 0 when disabled, KR_EIO when the
 * send failed (counted in errors). */
int kr_sdnotify_send(kr_sdnotify_t *n, const char *msg);
/* "STATUS=" + the formatted text (newlines become spaces), cut to
 * KR_SDNOTIFY_MAX_MSG. */
int kr_sdnotify_status(kr_sdnotify_t *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse $WATCHDOG_USEC-style text: 0 for NULL, empty, junk, or an
 * unreasonable value (over 1 day, under 1 ms). */
uint64_t kr_sdnotify_parse_usec(const char *s);

#endif
