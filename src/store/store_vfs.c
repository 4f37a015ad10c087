/*
 * The store's SQLite VFS: the default (unix) VFS with the writes to the
 * WAL file gathered into large ones. SQLite appends each WAL frame with
 * two writes (the 24-byte frame header, then the page), so a commit of a
 * thousand URI updates costs some four thousand pwrite calls, which was a
 * large share of the frontier's CPU (kernel entry, file and page-cache
 * bookkeeping per call). Here a WAL file keeps the frames of the
 * transaction being written in a buffer and writes them with one pwrite
 * per 124 KiB (the most the unix VFS writes in one call); nothing else
 * changes.
 *
 * Why it is safe: SQLite publishes committed frames to other connections
 * (the checkpointer, readers) only through the wal-index, after it has
 * written them all, and the last of them is the commit frame (its header
 * holds the database size, never 0 in other frames). The buffer is
 * written out as soon as the commit frame's page is in it, inside that
 * xWrite call, so every frame a reader can see is in the file, and a
 * crash before that point loses only an uncommitted transaction, which
 * recovery ignores anyway. With synchronous=NORMAL nothing is synced at a
 * commit, so the durability is exactly SQLite's own. Any other access to
 * the file (read, size, truncate, sync, file control, close, a write that
 * does not append or land inside the buffer) writes the buffer out first,
 * so the file and the buffer never disagree; a write inside the buffer
 * (SQLite rewriting a frame of the same transaction) patches it.
 *
 * Files other than WALs pass straight through. Registered once per
 * process as KR_STORE_VFS_NAME, not as the default.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "store.h"

#define KR_WAL_BUF_BYTES (2u << 20)
#define WAL_FRAME_HDR 24

typedef struct kr_vfile {
  sqlite3_file base;    /* our methods */
  sqlite3_file *real;   /* the unix VFS's file, right after this struct */
  /* WAL only */
  unsigned char *buf;   /* pending bytes, file offsets [off, off + len) */
  sqlite3_int64 off;
  size_t len;
  int commit_next;      /* the last header written was a commit frame's */
} kr_vfile_t;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs kr_vfs;

#define REAL(f) (((kr_vfile_t *)(f))->real)

/* The unix VFS writes at most 128 KiB - 1 per call (it masks larger
 * sizes), so the buffer goes out in pieces of this size. */
#define WRITE_MAX 0x1f000

/* Write the buffer out. SQLite error code. */
static int wal_flush(kr_vfile_t *f) {
  int rc = SQLITE_OK;
  for (size_t at = 0; at < f->len && rc == SQLITE_OK; at += WRITE_MAX) {
    size_t n = f->len - at < WRITE_MAX ? f->len - at : WRITE_MAX;
    rc = f->real->pMethods->xWrite(f->real, f->buf + at, (int)n, f->off + (sqlite3_int64)at);
  }
  f->len = 0;
  return rc;
}

/* ---- pass-through methods --------------------------------------------- */

static int v_close(sqlite3_file *p) {
  kr_vfile_t *f = (kr_vfile_t *)p;
  int rc = wal_flush(f);
  int rc2 = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
  free(f->buf);
  f->buf = NULL;
  return rc != SQLITE_OK ? rc : rc2;
}

static int v_read(sqlite3_file *p, void *b, int n, sqlite3_int64 o) {
  return REAL(p)->pMethods->xRead(REAL(p), b, n, o);
}
static int v_write(sqlite3_file *p, const void *b, int n, sqlite3_int64 o) {
  return REAL(p)->pMethods->xWrite(REAL(p), b, n, o);
}
static int v_truncate(sqlite3_file *p, sqlite3_int64 size) {
  return REAL(p)->pMethods->xTruncate(REAL(p), size);
}
static int v_sync(sqlite3_file *p, int flags) { return REAL(p)->pMethods->xSync(REAL(p), flags); }
static int v_file_size(sqlite3_file *p, sqlite3_int64 *size) {
  return REAL(p)->pMethods->xFileSize(REAL(p), size);
}
static int v_lock(sqlite3_file *p, int l) { return REAL(p)->pMethods->xLock(REAL(p), l); }
static int v_unlock(sqlite3_file *p, int l) { return REAL(p)->pMethods->xUnlock(REAL(p), l); }
static int v_check_reserved(sqlite3_file *p, int *out) {
  return REAL(p)->pMethods->xCheckReservedLock(REAL(p), out);
}
static int v_file_control(sqlite3_file *p, int op, void *arg) {
  return REAL(p)->pMethods->xFileControl(REAL(p), op, arg);
}
static int v_sector_size(sqlite3_file *p) { return REAL(p)->pMethods->xSectorSize(REAL(p)); }
static int v_device_chars(sqlite3_file *p) {
  return REAL(p)->pMethods->xDeviceCharacteristics(REAL(p));
}
static int v_shm_map(sqlite3_file *p, int pg, int pgsz, int ext, void volatile **pp) {
  if (REAL(p)->pMethods->iVersion < 2) return SQLITE_IOERR;
  return REAL(p)->pMethods->xShmMap(REAL(p), pg, pgsz, ext, pp);
}
static int v_shm_lock(sqlite3_file *p, int off, int n, int flags) {
  if (REAL(p)->pMethods->iVersion < 2) return SQLITE_IOERR;
  return REAL(p)->pMethods->xShmLock(REAL(p), off, n, flags);
}
static void v_shm_barrier(sqlite3_file *p) {
  if (REAL(p)->pMethods->iVersion >= 2) REAL(p)->pMethods->xShmBarrier(REAL(p));
}
static int v_shm_unmap(sqlite3_file *p, int del) {
  if (REAL(p)->pMethods->iVersion < 2) return SQLITE_OK;
  return REAL(p)->pMethods->xShmUnmap(REAL(p), del);
}
static int v_fetch(sqlite3_file *p, sqlite3_int64 o, int n, void **pp) {
  if (REAL(p)->pMethods->iVersion < 3) {
    *pp = NULL;
    return SQLITE_OK;
  }
  return REAL(p)->pMethods->xFetch(REAL(p), o, n, pp);
}
static int v_unfetch(sqlite3_file *p, sqlite3_int64 o, void *q) {
  if (REAL(p)->pMethods->iVersion < 3) return SQLITE_OK;
  return REAL(p)->pMethods->xUnfetch(REAL(p), o, q);
}

/* ---- WAL methods ------------------------------------------------------- */

static int w_read(sqlite3_file *p, void *b, int n, sqlite3_int64 o) {
  kr_vfile_t *f = (kr_vfile_t *)p;
  if (f->len && o < f->off + (sqlite3_int64)f->len && o + n > f->off) {
    int rc = wal_flush(f);
    if (rc != SQLITE_OK) return SQLITE_IOERR_READ;
  }
  return v_read(p, b, n, o);
}

static int w_write(sqlite3_file *p, const void *b, int n, sqlite3_int64 o) {
  kr_vfile_t *f = (kr_vfile_t *)p;
  int rc;
  if (n <= 0 || n > WRITE_MAX) {
    if ((rc = wal_flush(f)) != SQLITE_OK) return rc;
    return v_write(p, b, n, o);
  }
  sqlite3_int64 end = f->off + (sqlite3_int64)f->len;
  if (f->len && o >= f->off && o + n <= end) {
    /* a frame of this transaction written again */
    memcpy(f->buf + (o - f->off), b, (size_t)n);
  } else {
    if (f->len && (o != end || f->len + (size_t)n > KR_WAL_BUF_BYTES)) {
      if ((rc = wal_flush(f)) != SQLITE_OK) return rc;
    }
    if (!f->buf) {
      f->buf = malloc(KR_WAL_BUF_BYTES);
      if (!f->buf) return v_write(p, b, n, o);
    }
    if (!f->len) f->off = o;
    memcpy(f->buf + f->len, b, (size_t)n);
    f->len += (size_t)n;
  }
  /* A frame header: bytes 4-7 are the database size after a commit, 0 in
   * every other frame. The commit frame's page follows it. */
  if (n == WAL_FRAME_HDR) {
    const unsigned char *h = b;
    f->commit_next = (h[4] | h[5] | h[6] | h[7]) != 0;
    return SQLITE_OK;
  }
  if (f->commit_next) {
    f->commit_next = 0;
    return wal_flush(f);
  }
  return SQLITE_OK;
}

static int w_truncate(sqlite3_file *p, sqlite3_int64 size) {
  int rc = wal_flush((kr_vfile_t *)p);
  return rc != SQLITE_OK ? rc : v_truncate(p, size);
}
static int w_sync(sqlite3_file *p, int flags) {
  int rc = wal_flush((kr_vfile_t *)p);
  return rc != SQLITE_OK ? rc : v_sync(p, flags);
}
static int w_file_size(sqlite3_file *p, sqlite3_int64 *size) {
  int rc = wal_flush((kr_vfile_t *)p);
  return rc != SQLITE_OK ? SQLITE_IOERR_FSTAT : v_file_size(p, size);
}
static int w_file_control(sqlite3_file *p, int op, void *arg) {
  int rc = wal_flush((kr_vfile_t *)p);
  return rc != SQLITE_OK ? rc : v_file_control(p, op, arg);
}

static const sqlite3_io_methods pass_methods = {
    3,          v_close,     v_read,        v_write,      v_truncate,  v_sync,
    v_file_size, v_lock,     v_unlock,      v_check_reserved, v_file_control,
    v_sector_size, v_device_chars, v_shm_map, v_shm_lock, v_shm_barrier,
    v_shm_unmap, v_fetch,    v_unfetch,
};

static const sqlite3_io_methods wal_methods = {
    3,          v_close,     w_read,        w_write,      w_truncate,  w_sync,
    w_file_size, v_lock,     v_unlock,      v_check_reserved, w_file_control,
    v_sector_size, v_device_chars, v_shm_map, v_shm_lock, v_shm_barrier,
    v_shm_unmap, v_fetch,    v_unfetch,
};

/* ---- the VFS ------------------------------------------------------------ */

static int x_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *p, int flags, int *out) {
  (void)vfs;
  kr_vfile_t *f = (kr_vfile_t *)p;
  memset(f, 0, sizeof(*f));
  f->real = (sqlite3_file *)(f + 1);
  int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out);
  if (rc != SQLITE_OK || !f->real->pMethods) {
    p->pMethods = NULL;
    return rc;
  }
  p->pMethods = (flags & SQLITE_OPEN_WAL) ? &wal_methods : &pass_methods;
  return SQLITE_OK;
}

static int x_delete(sqlite3_vfs *v, const char *n, int sync) {
  (void)v;
  return real_vfs->xDelete(real_vfs, n, sync);
}
static int x_access(sqlite3_vfs *v, const char *n, int flags, int *out) {
  (void)v;
  return real_vfs->xAccess(real_vfs, n, flags, out);
}
static int x_full_pathname(sqlite3_vfs *v, const char *n, int len, char *out) {
  (void)v;
  return real_vfs->xFullPathname(real_vfs, n, len, out);
}
static void *x_dl_open(sqlite3_vfs *v, const char *n) {
  (void)v;
  return real_vfs->xDlOpen(real_vfs, n);
}
static void x_dl_error(sqlite3_vfs *v, int n, char *msg) {
  (void)v;
  real_vfs->xDlError(real_vfs, n, msg);
}
static void (*x_dl_sym(sqlite3_vfs *v, void *h, const char *sym))(void) {
  (void)v;
  return real_vfs->xDlSym(real_vfs, h, sym);
}
static void x_dl_close(sqlite3_vfs *v, void *h) {
  (void)v;
  real_vfs->xDlClose(real_vfs, h);
}
static int x_randomness(sqlite3_vfs *v, int n, char *out) {
  (void)v;
  return real_vfs->xRandomness(real_vfs, n, out);
}
static int x_sleep(sqlite3_vfs *v, int us) {
  (void)v;
  return real_vfs->xSleep(real_vfs, us);
}
static int x_current_time(sqlite3_vfs *v, double *t) {
  (void)v;
  return real_vfs->xCurrentTime(real_vfs, t);
}
static int x_get_last_error(sqlite3_vfs *v, int n, char *msg) {
  (void)v;
  return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, n, msg) : 0;
}
static int x_current_time_int64(sqlite3_vfs *v, sqlite3_int64 *t) {
  (void)v;
  if (real_vfs->iVersion >= 2 && real_vfs->xCurrentTimeInt64)
    return real_vfs->xCurrentTimeInt64(real_vfs, t);
  double d;
  int rc = real_vfs->xCurrentTime(real_vfs, &d);
  *t = (sqlite3_int64)(d * 86400000.0);
  return rc;
}

static uv_once_t vfs_once = UV_ONCE_INIT;
static int vfs_rc = SQLITE_ERROR;

static void vfs_init(void) {
  real_vfs = sqlite3_vfs_find(NULL);
  if (!real_vfs) return;
  kr_vfs.iVersion = 2;
  kr_vfs.szOsFile = (int)sizeof(kr_vfile_t) + real_vfs->szOsFile;
  kr_vfs.mxPathname = real_vfs->mxPathname;
  kr_vfs.zName = KR_STORE_VFS_NAME;
  kr_vfs.xOpen = x_open;
  kr_vfs.xDelete = x_delete;
  kr_vfs.xAccess = x_access;
  kr_vfs.xFullPathname = x_full_pathname;
  kr_vfs.xDlOpen = x_dl_open;
  kr_vfs.xDlError = x_dl_error;
  kr_vfs.xDlSym = x_dl_sym;
  kr_vfs.xDlClose = x_dl_close;
  kr_vfs.xRandomness = x_randomness;
  kr_vfs.xSleep = x_sleep;
  kr_vfs.xCurrentTime = x_current_time;
  kr_vfs.xGetLastError = x_get_last_error;
  kr_vfs.xCurrentTimeInt64 = x_current_time_int64;
  vfs_rc = sqlite3_vfs_register(&kr_vfs, 0);
}

const char *kr_store_vfs(void) {
  uv_once(&vfs_once, vfs_init);
  return vfs_rc == SQLITE_OK ? KR_STORE_VFS_NAME : NULL;
}
