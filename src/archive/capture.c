/*
 * The archive's captures: the raw body of each fetch being recorded, for
 * its response record's block. Bytes are kept in memory up to 4 MiB per
 * fetch (and 256 MiB across fetches), then spilled to an unlinked
 * temporary file in the WARC directory (the block digest is then made as
 * the bytes arrive) and streamed from there into the record; recording
 * stops (WARC-Truncated: length) past twice http.max-body-bytes, the most
 * chunk framing could add. With warc.chunked = dechunk, a chunked
 * response's capture holds the body without its chunk framing instead,
 * under a rewritten head (kr_archive_capture_dechunk). Captures are
 * pooled.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "archive_impl.h"
#include "internal.h"
#include "log.h"

#define POOL_KEEP (64u << 10)    /* pooled captures keep smaller buffers */
#define POOL_MAX 1024            /* captures kept for reuse */
#define HEAD_MAX (17u << 20)     /* a rewritten head: http.max-header-bytes is 16 MiB at most */

kr_archive_cap_t *kr_archive_capture_begin(kr_archive_t *a, kr_slice_t head, const char *url,
                                           int body) {
  struct kr_archive_cap *k = a->pool;
  if (k) {
    a->pool = k->next;
    a->npool--;
  } else {
    k = kr_xcalloc(1, sizeof *k);
    kr_buf_init(&k->mem, CAP_MEM_MAX);
    kr_buf_init(&k->headbuf, HEAD_MAX);
    k->sha_ready = kr_sha1_init(&k->sha) == 0;
  }
  k->next = NULL;
  k->fd = -1;
  k->len = 0;
  k->max = body ? a->raw_max : 0;
  k->over = k->failed = k->done = 0;
  k->head = head;
  k->dechunked = 0;
  k->url = url;
  return k;
}

/* 1 when the field line l (no line end) is named name. */
static int field_is(kr_slice_t l, const char *name) {
  size_t n = strlen(name);
  return l.n > n && l.p[n] == ':' && strncasecmp(l.p, name, n) == 0;
}

/* 1 when a Transfer-Encoding value v is "chunked" alone. */
static int chunked_alone(kr_slice_t v) {
  while (v.n && (*v.p == ' ' || *v.p == '\t')) v.p++, v.n--;
  while (v.n && (v.p[v.n - 1] == ' ' || v.p[v.n - 1] == '\t' || v.p[v.n - 1] == '\r')) v.n--;
  return v.n == 7 && strncasecmp(v.p, "chunked", 7) == 0;
}

/* head as a close-delimited message into out: its Transfer-Encoding and
 * Content-Length fields renamed X-Orig-..., as Browsertrix names the
 * fields it leaves out. 0, or -1 when head is not "chunked" alone (some
 * other transfer coding is there too) or out is full. */
static int dechunked_head(kr_slice_t head, kr_buf_t *out) {
  kr_buf_reset(out);
  int te = 0;
  for (size_t i = 0, start = 0; i < head.n; i++) {
    if (head.p[i] != '\n') continue;
    kr_slice_t l = kr_slice(head.p + start, i - start);
    int is_te = start && field_is(l, "Transfer-Encoding");
    if (is_te && !chunked_alone(kr_slice(l.p + 18, l.n - 18))) return -1;
    te |= is_te;
    if ((is_te || (start && field_is(l, "Content-Length"))) && kr_buf_append(out, "X-Orig-", 7))
      return -1;
    if (kr_buf_append(out, l.p, i + 1 - start)) return -1;
    start = i + 1;
  }
  return te ? 0 : -1;
}

int kr_archive_capture_dechunk(kr_archive_t *a, kr_archive_cap_t *k) {
  if (!k || !a->dechunk || k->len || dechunked_head(k->head, &k->headbuf)) return 0;
  k->head = kr_slice(k->headbuf.data, k->headbuf.len);
  k->dechunked = 1;
  return 1;
}

kr_slice_t kr_archive_capture_head(const kr_archive_cap_t *k) { return k->head; }

static void cap_free(struct kr_archive_cap *k) {
  if (k->sha_ready) kr_sha1_free(&k->sha);
  kr_buf_free(&k->mem);
  kr_buf_free(&k->headbuf);
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
  if (k->headbuf.cap > POOL_KEEP) {
    kr_buf_free(&k->headbuf);
    kr_buf_init(&k->headbuf, HEAD_MAX);
  }
  kr_buf_reset(&k->headbuf);
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
