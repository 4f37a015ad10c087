/*
 * The archive's captures: the raw body of each fetch being recorded, for
 * its response record's block. Bytes are kept in memory up to 4 MiB per
 * fetch (and 256 MiB across fetches), then spilled to an unlinked
 * temporary file in the WARC directory (the block digest is then made as
 * the bytes arrive) and streamed from there into the record; recording
 * stops (WARC-Truncated: length) past twice http.max-body-bytes, the most
 * chunk framing could add. Captures are pooled.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_impl.h"
#include "internal.h"
#include "log.h"

#define POOL_KEEP (64u << 10)    /* pooled captures keep smaller buffers */
#define POOL_MAX 1024            /* captures kept for reuse */

kr_archive_cap_t *kr_archive_capture_begin(kr_archive_t *a, kr_slice_t head, const char *url,
                                           int body) {
  struct kr_archive_cap *k = a->pool;
  if (k) {
    a->pool = k->next;
    a->npool--;
  } else {
    k = kr_xcalloc(1, sizeof *k);
    kr_buf_init(&k->mem, CAP_MEM_MAX);
    k->sha_ready = kr_sha1_init(&k->sha) == 0;
  }
  k->next = NULL;
  k->fd = -1;
  k->len = 0;
  k->max = body ? a->raw_max : 0;
  k->over = k->failed = k->done = 0;
  k->head = head;
  k->url = url;
  return k;
}

static void cap_free(struct kr_archive_cap *k) {
  if (k->sha_ready) kr_sha1_free(&k->sha);
  kr_buf_free(&k->mem);
  free(k);
}

void kr_archive_capture_end(kr_archive_t *a, kr_archive_cap_t *k) {
  a->mem -= k->mem.len;
  if (k->fd >= 0) close(k->fd);
  k->fd = -1;
  if (a->npool >= POOL_MAX) {
    cap_free(k);
    return;
  }
  if (k->mem.cap > POOL_KEEP) {
    kr_buf_free(&k->mem);
    kr_buf_init(&k->mem, CAP_MEM_MAX);
  }
  kr_buf_reset(&k->mem);
  k->next = a->pool;
  a->pool = k;
  a->npool++;
}

void kr__archive_caps_free(kr_archive_t *a) {
  while (a->pool) {
    struct kr_archive_cap *k = a->pool;
    a->pool = k->next;
    cap_free(k);
  }
  a->npool = 0;
}

/* An unlinked file in the WARC directory (same file system as the
 * records it will feed). */
static int spill_open(const char *dir) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  char path[4096];
  if (snprintf(path, sizeof path, "%s/.kria-spill-XXXXXX", dir) >= (int)sizeof path) return -1;
  fd = mkostemp(path, O_CLOEXEC);
  if (fd >= 0) unlink(path);
  return fd;
}

/* Move the capture to a spill file: the block digest starts with the head
 * and the bytes held so far. */
static int spill_start(kr_archive_t *a, struct kr_archive_cap *k) {
  k->fd = spill_open(a->dir);
  if (k->fd < 0 || !k->sha_ready || kr_sha1_reset(&k->sha) ||
      kr_sha1_update(&k->sha, k->head.p, k->head.n) ||
      kr_sha1_update(&k->sha, k->mem.data ? k->mem.data : "", k->mem.len) ||
      kr_write_all(k->fd, k->mem.data ? k->mem.data : "", k->mem.len)) {
    KR_LOG(KR_LOG_WARN, k->url, "cannot spill a large body to %s: %s", a->dir, strerror(errno));
    return -1;
  }
  a->mem -= k->mem.len;
  kr_buf_free(&k->mem);
  kr_buf_init(&k->mem, CAP_MEM_MAX);
  a->st_.spilled++;
  return 0;
}

/* n more bytes stay in memory (else the capture spills). */
static int mem_keeps(const kr_archive_t *a, const struct kr_archive_cap *k, size_t n) {
  return k->mem.len + n <= CAP_MEM_MAX && a->mem + n <= MEM_BUDGET;
}

int kr_archive_capture_held(const kr_archive_t *a, const kr_archive_cap_t *k, uint64_t from,
                            uint64_t to, kr_slice_t *out) {
  if (!k || k->fd >= 0 || k->failed || from > k->len) return 0;
  if (to > k->len && (k->over || k->len != from || to - from > k->max - k->len ||
                      !mem_keeps(a, k, (size_t)(to - from))))
    return 0;
  if (out) *out = kr_slice(k->mem.data ? k->mem.data + from : "", (size_t)(k->mem.len - from));
  return 1;
}

int kr_archive_capture_claim(kr_archive_cap_t *k) {
  if (k->done) return 0;
  k->done = 1;
  return 1;
}

int kr_archive_capture_claimed(const kr_archive_cap_t *k) { return k->done; }

void kr_archive_capture_feed(kr_archive_t *a, kr_archive_cap_t *k, const char *p, size_t n) {
  if (!k || k->failed || k->over || !n) return;
  if (n > k->max - k->len) {
    k->over = 1;
    n = (size_t)(k->max - k->len);
    if (!n) return;
  }
  if (k->fd < 0) {
    if (mem_keeps(a, k, n) && kr_buf_append(&k->mem, p, n) == 0) {
      a->mem += n;
      k->len += n;
      return;
    }
    if (spill_start(a, k)) {
      k->failed = 1;
      return;
    }
  }
  if (kr_sha1_update(&k->sha, p, n) || kr_write_all(k->fd, p, n)) {
    KR_LOG(KR_LOG_WARN, k->url, "cannot spill a large body to %s: %s", a->dir, strerror(errno));
    k->failed = 1;
    return;
  }
  k->len += n;
}
