/*
 * ARC v1 (the Internet Archive's format before WARC) record header lines,
 * read as warcio reads them for indexing: a record is one line
 *
 *   URL IP-ADDRESS ARCHIVE-DATE CONTENT-TYPE LENGTH
 *
 * then LENGTH bytes (the HTTP response as captured), then a newline. The
 * file's first record has a "filedesc://NAME" URL and two more lines (the
 * version line and the field list) before the rest of its block. The
 * URL may hold spaces: the line is split at its last four spaces. Pure:
 * the WARC reader (kria/warc.h, opts.lenient) frames the records and
 * turns each into a WARC header (a response, or a warcinfo for filedesc).
 */
#ifndef KRIA_ARC_H
#define KRIA_ARC_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

/* "YYYY-MM-DDThh:mm:ssZ" + NUL */
#define KR_ARC_DATE_SIZE 21

typedef struct kr_arc_header {
  kr_slice_t url, ip, date, mime, length_text; /* into the line */
  int filedesc;                 /* the URL starts with "filedesc://" */
  uint64_t length;              /* LENGTH; 0 when it is not a number >= 0
                                   (warcio takes such a record as empty) */
} kr_arc_header_t;

/* Split one header line (its line end removed, trailing blanks allowed).
 * 0 and *out, or KR_EINVAL when the line has fewer than five fields or
 * no length. */
int kr_arc_parse_line(const char *line, size_t n, kr_arc_header_t *out);

/* The 14-digit timestamp of an ARC date as warcio reads it: the first 14
 * characters, a short date padded to 6 with "299912", every part clamped
 * to its range (year 1900-2999, the day to the month's length), a part
 * that is not a number or is missing becomes its maximum. Never fails. */
void kr_arc_timestamp14(kr_slice_t date, char out[15]);

/* The WARC-Date form of a 14-digit timestamp: "YYYY-MM-DDThh:mm:ssZ". */
void kr_arc_iso_date(const char ts[15], char out[KR_ARC_DATE_SIZE]);

#endif
