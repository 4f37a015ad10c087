/*
 * The parts of `kria wacz` (cmd_wacz.c) that do not need the package: the
 * compressed CDXJ index with its block index (indexes/index.cdx.gz and
 * indexes/index.idx), the digest of a record as stored, and the <title>
 * of a page's response.
 */
#ifndef KRIA_WACZ_H
#define KRIA_WACZ_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "zipw.h"

/* From this many bytes of CDXJ on, the index is written compressed in
 * blocks: browsertrix-crawler's ZIP_CDX_MIN_SIZE (src/util/wacz.ts,
 * mergeCDXJ), which keeps a small index as one plain file a reader takes
 * in one request. */
#define KR_WACZ_GZ_MIN 50000u
/* Lines per gzip block: browsertrix-crawler's LINES_PER_BLOCK (py-wacz
 * uses 1024, archiveweb.page's size; wabac.js reads any). A reader
 * fetches and inflates one block per lookup, so smaller blocks cost less
 * per page replayed at the price of a longer index.idx. */
#define KR_WACZ_BLOCK_LINES 256u
/* "sha256:" + 64 hex digits + NUL */
#define KR_WACZ_SHA256_SIZE 72

/* Write the n sorted lines (without '\n') into the zip entry z has open
 * (indexes/index.cdx.gz, stored) as blocks of `per` lines, each block
 * its own gzip member, and append to idx the block index: the header
 * line `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}`,
 * then per block its first line's key (up to " {") and {"offset",
 * "length", "digest", "filename"} of its member in the entry. 0,
 * KR_ETOOBIG (idx full), or the entry's error. */
int kr__wacz_cdx_gz(kr_zipw_t *z, char *const *lines, size_t n, size_t per, kr_buf_t *idx);

/* The SHA-256 of len bytes of fd from off, as "sha256:" + hex, through
 * buf (bufsize bytes). 0 or KR_EIO (also when the file ends first). */
int kr__wacz_range_sha256(int fd, uint64_t off, uint64_t len, char out[KR_WACZ_SHA256_SIZE],
                          char *buf, size_t bufsize);

/* The title of an HTML page: p[0..n) is the start of an HTTP response as
 * a WARC stores it (head, then the body with its transfer coding
 * "chunked" and content coding gzip or deflate, possibly cut short).
 * Looks at the first KR_WACZ_TITLE_SCAN decoded bytes for the first
 * <title> outside comments, closed there; its text, character
 * references decoded (numeric ones and amp lt gt quot apos nbsp; others
 * are kept as written), white space
 * collapsed as document.title does, at most KR_WACZ_TITLE_MAX bytes,
 * goes to out (reset first). 1 when found and not empty, else 0. */
#define KR_WACZ_TITLE_SCAN (64u << 10)
#define KR_WACZ_TITLE_MAX 2048u
int kr__wacz_http_title(const char *p, size_t n, kr_buf_t *out);

/* The title of the response record at off..off+len of the WARC file fd
 * (its gzip member(s), or the plain record): reads the record's start
 * and calls kr__wacz_http_title. 1, 0 (none), or KR_EIO / KR_EWARC. */
int kr__wacz_record_title(int fd, uint64_t off, uint64_t len, kr_buf_t *out);

#endif
