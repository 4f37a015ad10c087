/*
 * The CDXJ indexer of `kria cdx` (src/cli/cmd_cdx.c), shared with `kria wacz`
 * (src/cli/cmd_wacz.c): one pass over a WARC file gives its index lines and,
 * through a callback, what each indexed record is.
 */
#ifndef KRIA_CDX_H
#define KRIA_CDX_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

/* Index lines, unsorted until kr__cdx_sort. */
typedef struct kr_cdx_lines {
  char **v;                     /* NUL-terminated lines without '\n' */
  size_t n, cap;
  uint64_t bytes;               /* all lines (capped at 4 GiB) */
} kr_cdx_lines_t;

/* One indexed record; slices valid during the callback only. */
typedef struct kr_cdx_rec {
  int type;                     /* enum kr_warc_type */
  kr_slice_t url;               /* WARC-Target-URI (brackets removed) */
  kr_slice_t date;              /* WARC-Date */
  char ts[15];                  /* its 14-digit timestamp */
  kr_slice_t mime;              /* as in the line; p NULL when none */
  kr_slice_t status;            /* HTTP status; p NULL when none */
  uint64_t offset, length;      /* its bytes in the file, as in its line */
  size_t line;                  /* its line, out->v[line]: fn may put a
                                   kr_xmalloc'd line in its place */
} kr_cdx_rec_t;
typedef void (*kr_cdx_rec_fn)(void *ud, const kr_cdx_rec_t *r);

/* Index the WARC file at path into out, read strictly (kria/warc.h; `kria
 * cdx` reads leniently), naming it `name` in the lines' "filename" (NULL:
 * its base name); fn (may be NULL) sees every record indexed. 0, or
 * KR_EIO / KR_EWARC / KR_ETOOBIG after printing the reason with
 * kr_cli_error; the lines of the records before the failure are left in
 * out. */
int kr__cdx_index_file(const char *path, const char *name, kr_cdx_lines_t *out,
                       kr_cdx_rec_fn fn, void *ud);
/* Sort bytewise (LC_ALL=C sort) and drop repeated lines (LC_ALL=C sort
 * -u), as cdxj-indexer's sorted output does. */
void kr__cdx_sort(kr_cdx_lines_t *lines);
void kr__cdx_lines_free(kr_cdx_lines_t *lines);
/* Python json.dumps (ensure_ascii) of n bytes; bad UTF-8 as Latin-1. */
int kr__cdx_json_str(kr_buf_t *b, const char *s, size_t n);

#endif
