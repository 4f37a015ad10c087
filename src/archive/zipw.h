/*
 * A minimal ZIP writer for `kria wacz`: entries stored (method 0) or
 * deflated (method 8, zlib raw deflate), written one after the other into
 * a seekable file, each entry's CRC-32 and sizes patched into its local
 * header once its data is written (no data descriptors, so readers that
 * look at local headers only, as HTTP range readers do, see them). Plain
 * ZIP, not ZIP64: an entry, an offset or the central directory past
 * 0xFFFFFFFF bytes, or more than 65,535 entries, is refused (KR_ETOOBIG).
 * Names are UTF-8 (flag bit 11). Every entry also gets the SHA-256 of its
 * uncompressed bytes, for manifests such as WACZ's datapackage.json.
 *
 * Use: kr_zipw_open, then per entry kr_zipw_begin / kr_zipw_write* /
 * kr_zipw_end, then kr_zipw_close (central directory, fsync). After any
 * error the archive is unusable: kr_zipw_close returns the first error.
 */
#ifndef KRIA_ZIPW_H
#define KRIA_ZIPW_H

#include <stddef.h>
#include <stdint.h>

#define KR_ZIP_STORE 0
#define KR_ZIP_DEFLATE 8
#define KR_ZIP_MAX32 0xffffffffull

typedef struct kr_zipw kr_zipw_t;

/* What kr_zipw_end says about the entry just written. */
typedef struct kr_zipw_entry {
  uint64_t size;                /* uncompressed bytes */
  uint64_t csize;               /* bytes in the archive */
  uint32_t crc;
  char sha256[72];              /* "sha256:" + 64 hex digits */
} kr_zipw_entry_t;

/* Write a new archive to fd (opened for writing, seekable, empty);
 * mtime (epoch s) dates every entry. The fd stays the caller's. */
kr_zipw_t *kr_zipw_new(int fd, int64_t mtime);
/* Frees z (not the fd). */
void kr_zipw_free(kr_zipw_t *z);

/* Begin an entry. 0, KR_EINVAL (empty or over-long name, a name with
 * "..", a leading '/', a backslash or a control character; bad method),
 * KR_ETOOBIG (65,535 entries, or past 4 GiB), KR_EIO. */
int kr_zipw_begin(kr_zipw_t *z, const char *name, int method);
/* Entry data. 0, KR_ETOOBIG (the entry passed 4 GiB), KR_EIO. */
int kr_zipw_write(kr_zipw_t *z, const void *p, size_t n);
/* Finish the entry; *out (may be NULL) describes it. */
int kr_zipw_end(kr_zipw_t *z, kr_zipw_entry_t *out);
/* Central directory and end record, then fdatasync. 0 or the first error
 * of any call (the archive is then not valid). */
int kr_zipw_close(kr_zipw_t *z);
/* Detail of the first error ("" when none). */
const char *kr_zipw_errmsg(const kr_zipw_t *z);

#endif
