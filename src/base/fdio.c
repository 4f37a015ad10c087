/*
 * Whole reads and writes on a blocking descriptor (pipes, spill files):
 * retried on EINTR and on short counts. Each turn moves at least one byte
 * or returns, so the loops end.
 */
#include <errno.h>
#include <unistd.h>

#include "internal.h"

int kr_write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

int kr_read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t k = read(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1; /* an error, or the end before n bytes */
    c += k;
    n -= (size_t)k;
  }
  return 0;
}
