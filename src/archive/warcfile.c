/*
 * WARC files of a crawl (see warcfile.h). Sections: names (prefix check,
 * file name, serial found from the directory); the file sink (pwritev at
 * the end of the file, partial writes continued, errors typed); opening a
 * new file with its warcinfo record, closing and rotating; writing
 * records, whole or streamed, with the cut-back that keeps a file valid
 * when a write fails; durability; start-up repair of ".open" files with
 * the record reader.
 *
 * Everything is relative to one directory descriptor, so a later chdir
 * or a rename of the path cannot send a file elsewhere.
 */
#include "warcfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kria/version.h"
#include "internal.h"
#include "log.h"

#define OPEN_SUFFIX ".open"

struct kr_warcfile {
  kr_warcfile_opts_t o;
  char host[65];
  int dirfd;
  kr_warc_writer_t *w;
  kr_buf_t info;                 /* warcinfo block, built once */
  unsigned serial;               /* next file's serial */
  /* the open file */
  int fd;                        /* -1 when none */
  char name[264];                /* with ".open" */
  char final[256];               /* without */
  char info_id[KR_WARC_ID_SIZE];
  uint64_t size;                 /* bytes written = next record's offset */
  /* The write buffer: the bytes from `flushed` (what the kernel has) to
   * `size`, gathered so that the file grows by one large write instead
   * of three small ones per visit (see flush). */
  char *wbuf;
  size_t wbuf_len;
  uint64_t flushed;
  uint64_t written;              /* records in the file (counting up) */
  uint64_t synced_n;             /* ... of them synced: syncs may end out
                                    of order (kr_warcfile_sync_end) */
  uint64_t synced;               /* record boundary the last sync reached */
  uint64_t first_unsynced_ms;
  uint64_t files;                /* files opened so far */
  int streaming;
  uint64_t stream_start;
  int hold;                      /* no rotation: the rest of a visit */
  int sink_err;
  char err[512];
};

__attribute__((format(printf, 2, 3))) static void set_err(kr_warcfile_t *wf,
                                                          const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(wf->err, sizeof wf->err, fmt, ap);
  va_end(ap);
}

static int errno_code(int e) { return e == ENOSPC || e == EDQUOT ? KR_ENOSPC : KR_EIO; }

static uint64_t now_ms(const kr_warcfile_t *wf) {
  if (wf->o.clock) return kr_clock_now_ms(wf->o.clock);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- names ------------------------------------------------------------- */

int kr_warcfile_prefix_ok(const char *p) {
  if (!p || !*p || *p == '.' || strlen(p) > 64 || strstr(p, "..")) return 0;
  for (; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '_' || *p == '-'))
      return 0;
  return 1;
}

/* Host names go into file names: anything but [A-Za-z0-9.-] becomes '-'. */
static void clean_host(const char *in, char out[65]) {
  size_t n = 0;
  for (; in && in[n] && n < 64; n++) {
    char c = in[n];
    out[n] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '.' || c == '-'
                 ? c
                 : '-';
  }
  if (n == 0) out[n++] = '-';
  if (out[0] == '.') out[0] = '-';
  out[n] = '\0';
}

/* Largest SERIAL of PREFIX-<17 digits>-SERIAL-... in the directory, + 1. */
static unsigned next_serial(int dirfd, const char *prefix) {
  int fd = dup(dirfd);
  if (fd < 0) return 0;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return 0;
  }
  size_t pl = strlen(prefix);
  unsigned best = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *s = e->d_name;
    if (strncmp(s, prefix, pl) || s[pl] != '-') continue;
    s += pl + 1;
    size_t k = 0;
    while (k < 17 && s[k] >= '0' && s[k] <= '9') k++;
    if (k != 17 || s[17] != '-') continue;
    s += 18;
    unsigned long v = 0;
    k = 0;
    while (s[k] >= '0' && s[k] <= '9' && k < 9) v = v * 10 + (unsigned long)(s[k++] - '0');
    if (k == 0 || s[k] != '-') continue;
    if (v + 1 > best) best = (unsigned)v + 1;
  }
  closedir(d);
  return best;
}

/* ---- the sink ---------------------------------------------------------- */

/* Write iov (cnt > 0 slices) at the end of what the kernel has. Bounded:
 * each turn writes at least one byte or returns. On an error the bytes
 * written so far stay counted in wf->flushed and *done says how many of
 * the iov's bytes that was. */
static int write_out(kr_warcfile_t *wf, struct iovec *cur, int cnt, size_t *done) {
  *done = 0;
  while (cnt > 0) {
    ssize_t got = wf->o.pwritev_fn(wf->fd, cur, cnt, (off_t)wf->flushed);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      int e = got < 0 ? errno : ENOSPC;
      set_err(wf, "writing %s at offset %" PRIu64 ": %s", wf->name, wf->flushed, strerror(e));
      return wf->sink_err = errno_code(e);
    }
    wf->flushed += (uint64_t)got;
    *done += (size_t)got;
    while (cnt > 0 && (size_t)got >= cur->iov_len) {
      got -= (ssize_t)cur->iov_len;
      cur++, cnt--;
    }
    if (cnt > 0) {
      cur->iov_base = (char *)cur->iov_base + got;
      cur->iov_len -= (size_t)got;
    }
  }
  return 0;
}

/* The buffered bytes to the kernel. On an error what was not written
 * stays buffered, for the next flush. */
static int flush(kr_warcfile_t *wf) {
  if (!wf->wbuf_len) return 0;
  struct iovec v = {wf->wbuf, wf->wbuf_len};
  size_t done;
  int err = write_out(wf, &v, 1, &done);
  wf->wbuf_len -= done;
  if (err && wf->wbuf_len) memmove(wf->wbuf, wf->wbuf + done, wf->wbuf_len);
  return err;
}

/* Small writes cost the kernel most per byte here (ext4: a 10 KB
 * pwritev is ~5 µs, the same bytes in 64 KiB ones ~2.5 µs), and a visit
 * is three records: they are gathered up to o.buffer bytes. Slices that
 * do not fit after a flush are written directly. */
static int file_sink(void *ctx, const kr_slice_t *v, size_t n) {
  kr_warcfile_t *wf = ctx;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += v[i].n;
  size_t cap = wf->o.buffer;
  if (total == 0) return 0;
  if (cap && wf->wbuf_len + total > cap) {
    int err = flush(wf);
    if (err) return err;
  }
  if (cap && total <= cap - wf->wbuf_len) {
    if (!wf->wbuf) wf->wbuf = kr_xmalloc(cap);
    for (size_t i = 0; i < n; i++) {
      if (!v[i].n) continue;
      memcpy(wf->wbuf + wf->wbuf_len, v[i].p, v[i].n);
      wf->wbuf_len += v[i].n;
    }
    wf->size += total;
    return 0;
  }
  struct iovec iov[KR_WARC_MAX_SLICES + 2];
  int cnt = 0;
  for (size_t i = 0; i < n; i++) {
    if (!v[i].n) continue;
    KR_BUG_ON(cnt == (int)ARRAY_SIZE(iov));
    iov[cnt].iov_base = (void *)v[i].p;
    iov[cnt++].iov_len = v[i].n;
  }
  size_t done;
  int err = write_out(wf, iov, cnt, &done);
  wf->size += done;
  return err;
}

int kr_warcfile_flush(kr_warcfile_t *wf) { return wf->fd >= 0 ? flush(wf) : 0; }

/* Cut the file back to start after a failed record; err is returned. When
 * even that fails, the file is given up (left ".open" for the next
 * start-up repair) and the next record starts a new file. */
static int cut_back(kr_warcfile_t *wf, uint64_t start, int err) {
  if (wf->fd < 0 || wf->size == start) return err;
  if (start >= wf->flushed) { /* only buffered bytes go: earlier records stay */
    wf->wbuf_len = (size_t)(start - wf->flushed);
    wf->size = start;
    return err;
  }
  wf->wbuf_len = 0; /* all of it past start */
  if (ftruncate(wf->fd, (off_t)start) == 0) {
    wf->size = wf->flushed = start;
    return err;
  }
  KR_LOG(KR_LOG_ERROR, wf->name, "cannot cut a failed record away (%s); file left for repair",
         strerror(errno));
  close(wf->fd);
  wf->fd = -1;
  return err;
}

/* ---- files ------------------------------------------------------------- */

void kr_warcfile_opts_default(kr_warcfile_opts_t *o) {
  memset(o, 0, sizeof *o);
  kr_warc_writer_opts_default(&o->writer);
  o->prefix = "kria";
  o->max_size = 1ull << 30;
  o->durability = KR_WARC_SYNC_NONE;
  o->batch_ms = 1000;
  o->batch_records = 1000;
  o->buffer = KR_WARCFILE_BUFFER;
}

int kr_warcfile_open(const kr_warcfile_opts_t *opts, kr_warcfile_t **out, char *errbuf,
                     size_t errlen) {
  char dummy[8];
  if (!errbuf) errbuf = dummy, errlen = sizeof dummy;
  errbuf[0] = '\0';
  if (!opts->dir || !*opts->dir) {
    snprintf(errbuf, errlen, "no WARC directory given");
    return KR_EINVAL;
  }
  if (!kr_warcfile_prefix_ok(opts->prefix)) {
    snprintf(errbuf, errlen,
             "WARC prefix '%s' must be 1-64 of A-Z a-z 0-9 . _ -, not start with '.' and "
             "hold no '..'",
             opts->prefix ? opts->prefix : "");
    return KR_EINVAL;
  }
  if (opts->durability < KR_WARC_SYNC_NONE || opts->durability > KR_WARC_SYNC_RECORD) {
    snprintf(errbuf, errlen, "bad durability %d", opts->durability);
    return KR_EINVAL;
  }
  if (mkdir(opts->dir, 0755) == 0) {
    chmod(opts->dir, 0755); /* exactly, whatever the umask */
  } else if (errno != EEXIST) {
    snprintf(errbuf, errlen, "cannot create WARC directory %s: %s", opts->dir,
             strerror(errno));
    return KR_EIO;
  }
  int dirfd = open(opts->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    snprintf(errbuf, errlen, "cannot open WARC directory %s: %s", opts->dir, strerror(errno));
    return KR_EIO;
  }
  if (faccessat(dirfd, ".", W_OK | X_OK, AT_EACCESS)) {
    snprintf(errbuf, errlen, "WARC directory %s is not writable: %s", opts->dir,
             strerror(errno));
    close(dirfd);
    return KR_EIO;
  }
  kr_warcfile_t *wf = kr_xcalloc(1, sizeof *wf);
  wf->o = *opts;
  wf->o.dir = NULL; /* borrowed strings are not kept */
  wf->o.prefix = NULL;
  wf->o.host = NULL;
  memset(&wf->o.info, 0, sizeof wf->o.info);
  if (!wf->o.pwritev_fn) wf->o.pwritev_fn = pwritev;
  if (!wf->o.sync_fn) wf->o.sync_fn = fdatasync;
  wf->dirfd = dirfd;
  wf->fd = -1;
  char hn[256] = "";
  if (gethostname(hn, sizeof hn - 1)) snprintf(hn, sizeof hn, "localhost");
  clean_host(opts->host ? opts->host : hn, wf->host);
  /* The prefix is copied into every name; keep our own copy. */
  wf->o.prefix = kr_xstrdup(opts->prefix);
  kr_warc_info_t info = opts->info;
  if (!info.software) info.software = "kria/" KRIA_VERSION;
  if (!info.hostname) info.hostname = hn;
  kr_buf_init(&wf->info, 1u << 20);
  int err = kr_warc_info_block(&wf->info, &info);
  if (err) {
    snprintf(errbuf, errlen, "warcinfo: %s", err == KR_EINVAL ? "a value holds a control "
                                                                "character"
                                                              : kr_strerror(err));
    kr_warcfile_close(wf);
    return err;
  }
  err = kr_warc_writer_new(&opts->writer, file_sink, wf, &wf->w);
  if (err) {
    snprintf(errbuf, errlen, "WARC writer: %s", kr_strerror(err));
    kr_warcfile_close(wf);
    return err;
  }
  wf->serial = next_serial(dirfd, wf->o.prefix);
  *out = wf;
  return 0;
}

static int sync_file(kr_warcfile_t *wf) {
  if (wf->fd < 0 || wf->written == wf->synced_n) return 0;
  int err = flush(wf);
  if (err) return err;
  if (wf->o.sync_fn(wf->fd)) {
    int e = errno;
    set_err(wf, "syncing %s: %s", wf->name, strerror(e));
    return errno_code(e);
  }
  wf->synced_n = wf->written;
  /* a record being streamed is not durable yet; its start is a boundary */
  wf->synced = wf->streaming ? wf->stream_start : wf->size;
  return 0;
}

static int close_file(kr_warcfile_t *wf) {
  if (wf->fd < 0) return 0;
  int err = flush(wf);
  if (!err && wf->o.durability != KR_WARC_SYNC_NONE) err = sync_file(wf);
  if (close(wf->fd) && !err) {
    set_err(wf, "closing %s: %s", wf->name, strerror(errno));
    err = KR_EIO;
  }
  wf->fd = -1;
  if (!err && renameat(wf->dirfd, wf->name, wf->dirfd, wf->final)) {
    set_err(wf, "renaming %s: %s", wf->name, strerror(errno));
    err = KR_EIO;
  }
  if (!err && wf->o.durability != KR_WARC_SYNC_NONE) fsync(wf->dirfd);
  if (err) KR_LOG(KR_LOG_ERROR, wf->name, "%s; left for repair at start-up", wf->err);
  return err;
}

static int open_file(kr_warcfile_t *wf) {
  const char *ext = wf->o.writer.gzip ? ".warc.gz" : ".warc";
  /* Bounded: a few names; a clash only when another writer shares the
   * directory and the millisecond. */
  for (int tries = 0; tries < 16; tries++) {
    uint64_t now = now_ms(wf);
    time_t secs = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%d%H%M%S", &tm);
    unsigned serial = wf->serial++;
    snprintf(wf->final, sizeof wf->final, "%s-%s%03u-%05u-%s%s", wf->o.prefix, ts,
             (unsigned)(now % 1000), serial, wf->host, ext);
    snprintf(wf->name, sizeof wf->name, "%s%s", wf->final, OPEN_SUFFIX);
    if (faccessat(wf->dirfd, wf->final, F_OK, 0) == 0) continue;
    wf->fd = openat(wf->dirfd, wf->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (wf->fd >= 0) {
      fchmod(wf->fd, 0644); /* readable by the archive's tools, whatever the umask */
      break;
    }
    if (errno != EEXIST) {
      int e = errno;
      set_err(wf, "creating %s: %s", wf->name, strerror(e));
      return errno_code(e);
    }
  }
  if (wf->fd < 0) {
    set_err(wf, "no free WARC file name after 16 tries");
    return KR_EIO;
  }
  wf->size = wf->flushed = 0;
  wf->wbuf_len = 0;
  wf->written = wf->synced_n = 0;
  wf->synced = 0;
  kr_warc_rec_t rec = {.type = KR_WARC_WARCINFO, .date_ms = now_ms(wf), .filename = wf->final};
  kr_slice_t block = {wf->info.data ? wf->info.data : "", wf->info.len};
  int err = kr_warc_write(wf->w, &rec, &block, 1, NULL);
  if (!err) {
    wf->written = 1;
    wf->first_unsynced_ms = now_ms(wf);
    if (wf->o.durability == KR_WARC_SYNC_RECORD) err = sync_file(wf);
  }
  if (err) {
    if (err == KR_EINVAL) set_err(wf, "warcinfo record rejected");
    close(wf->fd);
    wf->fd = -1;
    unlinkat(wf->dirfd, wf->name, 0);
    return err;
  }
  memcpy(wf->info_id, rec.id, sizeof wf->info_id);
  wf->files++;
  KR_LOG(KR_LOG_INFO, wf->name, "WARC file opened");
  return 0;
}

static int ensure_file(kr_warcfile_t *wf) {
  if (wf->fd >= 0 && !wf->hold && wf->o.max_size && wf->size >= wf->o.max_size) {
    int err = close_file(wf);
    if (err) return err;
  }
  if (wf->fd < 0) return open_file(wf);
  return 0;
}

void kr_warcfile_hold(kr_warcfile_t *wf, int on) { wf->hold = on; }

int kr_warcfile_rotate(kr_warcfile_t *wf) {
  if (wf->streaming) {
    kr_warc_abandon(wf->w);
    cut_back(wf, wf->stream_start, 0);
    wf->streaming = 0;
  }
  return close_file(wf);
}

int kr_warcfile_close(kr_warcfile_t *wf) {
  if (!wf) return 0;
  int err = wf->w ? kr_warcfile_rotate(wf) : 0;
  kr_warc_writer_free(wf->w);
  kr_buf_free(&wf->info);
  free(wf->wbuf);
  if (wf->dirfd >= 0) close(wf->dirfd);
  free((char *)wf->o.prefix);
  free(wf);
  return err;
}

const char *kr_warcfile_current(const kr_warcfile_t *wf) {
  return wf->fd >= 0 ? wf->name : NULL;
}
uint64_t kr_warcfile_size(const kr_warcfile_t *wf) { return wf->fd >= 0 ? wf->size : 0; }
uint64_t kr_warcfile_files(const kr_warcfile_t *wf) { return wf->files; }
const char *kr_warcfile_errmsg(const kr_warcfile_t *wf) { return wf->err; }

int kr_warcfile_synced(const kr_warcfile_t *wf, const char **name, uint64_t *offset) {
  if (wf->fd < 0 || wf->synced == 0) return 0;
  *name = wf->name;
  *offset = wf->synced;
  return 1;
}

void kr_warcfile_mark_format(char *out, size_t outlen, const char *name, uint64_t offset) {
  snprintf(out, outlen, "%" PRIu64 " %s", offset, name);
}

/* ---- records ----------------------------------------------------------- */

/* Defaults for the record; returns the warcinfo_id to restore. */
static const char *fill_rec(kr_warcfile_t *wf, kr_warc_rec_t *rec) {
  const char *saved = rec->warcinfo_id;
  if (!rec->date_ms) rec->date_ms = now_ms(wf);
  if (!rec->warcinfo_id) rec->warcinfo_id = wf->info_id;
  return saved;
}

/* After a record: count it, sync for durability record, fill *loc. */
static int record_done(kr_warcfile_t *wf, uint64_t start, const kr_warc_written_t *w,
                       kr_warcfile_loc_t *loc) {
  if (wf->written++ == wf->synced_n) wf->first_unsynced_ms = now_ms(wf);
  if (wf->o.durability == KR_WARC_SYNC_RECORD) {
    int err = sync_file(wf);
    if (err) return cut_back(wf, start, err);
  }
  if (loc) {
    snprintf(loc->file, sizeof loc->file, "%s", wf->final);
    loc->offset = start;
    /* CDX convention: a plain record without its CRLF CRLF */
    loc->length = wf->size - start - (wf->o.writer.gzip ? 0 : 4);
    loc->w = *w;
  }
  return 0;
}

int kr_warcfile_write(kr_warcfile_t *wf, kr_warc_rec_t *rec, const kr_slice_t *block,
                      size_t n, kr_warcfile_loc_t *loc) {
  if (wf->streaming) return KR_EINVAL;
  wf->err[0] = '\0';
  int err = ensure_file(wf);
  if (err) return err;
  uint64_t start = wf->size;
  const char *saved = fill_rec(wf, rec);
  kr_warc_written_t w;
  err = kr_warc_write(wf->w, rec, block, n, &w);
  rec->warcinfo_id = saved;
  if (err == KR_EINVAL && !wf->err[0]) set_err(wf, "invalid WARC record");
  if (err) return cut_back(wf, start, err);
  return record_done(wf, start, &w, loc);
}

void kr_warcfile_new_id(kr_warcfile_t *wf, char out[KR_WARC_ID_SIZE]) {
  kr_warc_new_id(wf->w, out);
}

int kr_warcfile_begin(kr_warcfile_t *wf, kr_warc_rec_t *rec, uint64_t block_len) {
  if (wf->streaming) return KR_EINVAL;
  wf->err[0] = '\0';
  int err = ensure_file(wf);
  if (err) return err;
  wf->stream_start = wf->size;
  const char *saved = fill_rec(wf, rec);
  err = kr_warc_begin(wf->w, rec, block_len);
  rec->warcinfo_id = saved;
  if (err) return cut_back(wf, wf->stream_start, err);
  wf->streaming = 1;
  return 0;
}

int kr_warcfile_append(kr_warcfile_t *wf, const void *p, size_t n) {
  if (!wf->streaming) return KR_EINVAL;
  int err = kr_warc_append(wf->w, p, n);
  if (err) {
    wf->streaming = 0;
    if (err == KR_EINVAL) set_err(wf, "more block bytes than announced");
    return cut_back(wf, wf->stream_start, err);
  }
  return 0;
}

int kr_warcfile_end(kr_warcfile_t *wf, kr_warcfile_loc_t *loc) {
  if (!wf->streaming) return KR_EINVAL;
  wf->streaming = 0;
  kr_warc_written_t w;
  int err = kr_warc_end(wf->w, &w);
  if (err) {
    if (err == KR_EINVAL) set_err(wf, "block length or SHA-1 differs from the announced");
    return cut_back(wf, wf->stream_start, err);
  }
  return record_done(wf, wf->stream_start, &w, loc);
}

void kr_warcfile_abort(kr_warcfile_t *wf) {
  if (!wf->streaming) return;
  wf->streaming = 0;
  kr_warc_abandon(wf->w);
  cut_back(wf, wf->stream_start, 0);
}

int kr_warcfile_sync(kr_warcfile_t *wf) { return sync_file(wf); }

int kr_warcfile_sync_begin(kr_warcfile_t *wf, kr_warcfile_syncjob_t *j) {
  memset(j, 0, sizeof *j);
  j->fd = -1;
  if (wf->fd < 0 || wf->written == wf->synced_n) return 0;
  int err = flush(wf); /* the sync covers what the kernel has */
  if (err) return err;
  j->fd = fcntl(wf->fd, F_DUPFD_CLOEXEC, 0);
  if (j->fd < 0) {
    set_err(wf, "syncing %s: %s", wf->name, strerror(errno));
    return KR_EIO;
  }
  j->sync_fn = wf->o.sync_fn;
  j->file = wf->files;
  j->boundary = wf->streaming ? wf->stream_start : wf->size;
  j->records = wf->written;
  snprintf(j->name, sizeof j->name, "%s", wf->name);
  return 1;
}

void kr_warcfile_sync_run(kr_warcfile_syncjob_t *j) {
  if (j->fd < 0) return;
  if (j->sync_fn(j->fd)) j->err = errno ? errno : EIO;
}

int kr_warcfile_sync_end(kr_warcfile_t *wf, kr_warcfile_syncjob_t *j) {
  if (j->fd < 0) return 0;
  close(j->fd);
  j->fd = -1;
  if (j->err) {
    if (wf) set_err(wf, "syncing %s: %s", j->name, strerror(j->err));
    return errno_code(j->err);
  }
  /* Another file by now: the close of this one synced it. */
  if (!wf || wf->fd < 0 || wf->files != j->file) return 0;
  if (j->records > wf->synced_n) wf->synced_n = j->records;
  if (j->boundary > wf->synced) wf->synced = j->boundary;
  return 0;
}

int kr_warcfile_sync_due(const kr_warcfile_t *wf, uint64_t now) {
  uint64_t unsynced = wf->written - wf->synced_n;
  if (wf->o.durability != KR_WARC_SYNC_BATCH || wf->fd < 0 || unsynced == 0) return 0;
  return unsynced >= wf->o.batch_records || now >= wf->first_unsynced_ms + wf->o.batch_ms;
}

/* ---- repair ------------------------------------------------------------ */

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a > b && !strcmp(s + a - b, suf);
}

static int open_name_ok(const char *name) {
  return !strchr(name, '/') &&
         (ends_with(name, ".warc" OPEN_SUFFIX) || ends_with(name, ".warc.gz" OPEN_SUFFIX));
}

int kr_warcfile_mark_parse(const char *s, kr_warcfile_mark_t *m) {
  uint64_t v = 0;
  size_t k = 0;
  for (; s[k] >= '0' && s[k] <= '9'; k++) {
    uint64_t d = (uint64_t)(s[k] - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (k == 0 || s[k] != ' ') return -1;
  const char *name = s + k + 1;
  if (strlen(name) >= sizeof m->name || !open_name_ok(name)) return -1;
  snprintf(m->name, sizeof m->name, "%s", name);
  m->offset = v;
  return 0;
}

/* Read the records of fd from offset from on (0, or a synced record
 * boundary): *good is the end of the last complete one (from when none),
 * *records their count; why says what ended the run. -1 when from > 0
 * and no record of the file's kind (gz) starts at from: the caller reads
 * the whole file instead. */
static int scan(int fd, uint64_t from, int gz, uint64_t *good, uint64_t *records, char *why,
                size_t whylen) {
  *good = from;
  *records = 0;
  snprintf(why, whylen, "incomplete record");
  if (lseek(fd, (off_t)from, SEEK_SET) < 0) {
    snprintf(why, whylen, "seek to %" PRIu64 ": %s", from, strerror(errno));
    return -1;
  }
  kr_warc_reader_opts_t ro = {.base = from};
  kr_warc_reader_t *r = kr_warc_reader_new(&ro, kr_warc_fd_source, &fd);
  const kr_warc_header_t *h;
  kr_warc_extent_t ext;
  int rc, headers = 0, ret = 0;
  /* Bounded by the file's size: every record consumes its bytes. */
  while ((rc = kr_warc_reader_next(r, &h)) == 1) {
    if (headers++ == 0 && from && kr_warc_reader_is_gzip(r) != gz) {
      snprintf(why, whylen, "not a %s record", gz ? "gzip" : "plain");
      ret = -1;
      break;
    }
    if (kr_warc_reader_finish(r, &ext) || !ext.aligned) break;
    *good = ext.end;
    (*records)++;
  }
  if (rc < 0) {
    snprintf(why, whylen, "%s", kr_warc_reader_errmsg(r));
    /* a header torn at the offset is also "no record": read it all */
    if (from && headers == 0) ret = -1;
  }
  kr_warc_reader_free(r);
  return ret;
}

int kr_warcfile_repair(int dirfd, const char *name, kr_warcfile_repair_stats_t *st,
                       char *errbuf, size_t errlen) {
  return kr_warcfile_repair_from(dirfd, name, 0, st, errbuf, errlen);
}

int kr_warcfile_repair_from(int dirfd, const char *name, uint64_t synced,
                            kr_warcfile_repair_stats_t *st, char *errbuf, size_t errlen) {
  char dummy[8];
  if (!errbuf) errbuf = dummy, errlen = sizeof dummy;
  errbuf[0] = '\0';
  if (!open_name_ok(name)) {
    snprintf(errbuf, errlen, "%s: not an open WARC file name", name);
    return KR_EINVAL;
  }
  char final[PATH_MAX];
  snprintf(final, sizeof final, "%.*s", (int)(strlen(name) - strlen(OPEN_SUFFIX)), name);
  int fd = openat(dirfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
    snprintf(errbuf, errlen, "%s: %s", name, fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return KR_EIO;
  }
  uint64_t good = 0, records = 0, size = (uint64_t)sb.st_size;
  char why[256];
  /* What was synced is whole (it was written record by record and a
   * commit of the store says so): only the rest needs reading. */
  int resumed = 0;
  if (synced && synced <= size) {
    resumed = scan(fd, synced, ends_with(name, ".gz" OPEN_SUFFIX), &good, &records, why,
                   sizeof why) == 0;
    if (!resumed)
      KR_LOG(KR_LOG_NOTICE, name, "no record at the synced offset %" PRIu64 " (%s): "
             "checking the whole file", synced, why);
  } else if (synced) {
    KR_LOG(KR_LOG_NOTICE, name, "shorter (%" PRIu64 " bytes) than its synced offset %" PRIu64
           ": checking the whole file", size, synced);
  }
  if (!resumed) scan(fd, 0, 0, &good, &records, why, sizeof why);
  if (size != good)
    KR_LOG(KR_LOG_NOTICE, name, "cut after %" PRIu64 " complete records %sat offset %" PRIu64
           " of %" PRIu64 " (%s)", records, resumed ? "past the synced part " : "", good,
           size, why);
  int err = 0;
  if ((uint64_t)sb.st_size != good && (ftruncate(fd, (off_t)good) || fdatasync(fd))) {
    snprintf(errbuf, errlen, "%s: cannot cut to %" PRIu64 " bytes: %s", name, good,
             strerror(errno));
    err = KR_EIO;
  }
  close(fd);
  if (err) return err;
  if (good == 0) {
    if (unlinkat(dirfd, name, 0)) {
      snprintf(errbuf, errlen, "%s: cannot remove: %s", name, strerror(errno));
      return KR_EIO;
    }
  } else {
    if (faccessat(dirfd, final, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
      snprintf(errbuf, errlen, "%s: cannot rename, %s exists", name, final);
      return KR_EIO;
    }
    if (renameat(dirfd, name, dirfd, final)) {
      snprintf(errbuf, errlen, "%s: cannot rename: %s", name, strerror(errno));
      return KR_EIO;
    }
  }
  fsync(dirfd);
  if (st) {
    st->files++;
    st->resumed += resumed;
    st->removed += good == 0;
    st->records += records;
    st->bytes_cut += (uint64_t)sb.st_size - good;
  }
  return 0;
}

int kr_warcfile_repair_dir(const char *dir, const kr_warcfile_mark_t *marks, size_t nmarks,
                           kr_warcfile_repair_stats_t *st, char *errbuf, size_t errlen) {
  char dummy[8];
  if (!errbuf) errbuf = dummy, errlen = sizeof dummy;
  errbuf[0] = '\0';
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    if (errno == ENOENT) return 0;
    snprintf(errbuf, errlen, "cannot open WARC directory %s: %s", dir, strerror(errno));
    return KR_EIO;
  }
  /* Names first, then repairs: renaming while reading the directory
   * could show a file twice. */
  char **names = NULL;
  size_t n = 0, cap = 0;
  int dfd = dup(dirfd);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    if (dfd >= 0) close(dfd);
    snprintf(errbuf, errlen, "cannot read WARC directory %s: %s", dir, strerror(errno));
    close(dirfd);
    return KR_EIO;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!ends_with(e->d_name, ".warc" OPEN_SUFFIX) &&
        !ends_with(e->d_name, ".warc.gz" OPEN_SUFFIX))
      continue;
    if (n == cap) names = kr_xrealloc(names, (cap = cap ? 2 * cap : 8) * sizeof *names);
    names[n++] = kr_xstrdup(e->d_name);
  }
  closedir(d);
  int err = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t synced = 0;
    for (size_t k = 0; k < nmarks; k++)
      if (!strcmp(marks[k].name, names[i])) synced = marks[k].offset;
    if (!err) err = kr_warcfile_repair_from(dirfd, names[i], synced, st, errbuf, errlen);
    free(names[i]);
  }
  free(names);
  close(dirfd);
  return err;
}
