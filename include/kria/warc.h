/*
 * WARC/1.1 (ISO 28500:2017) records: a writer that turns one record at a
 * time into bytes (optionally one gzip member per record) handed to a
 * sink, helpers that build the warc-fields blocks of warcinfo and
 * metadata records, and a reader that iterates the records of a .warc or
 * multi-member .warc.gz stream with bounded memory. Pure: no loop, no
 * files, no clock, no global state (the caller supplies dates; files,
 * rotation and durability live in src/archive/warcfile.h).
 *
 * Writing. A record's header carries Content-Length and WARC-Block-Digest,
 * which must precede the block, so the writer needs the block's length
 * and digest before its first byte. Two ways in:
 *  - kr_warc_write(): the block is in memory as up to
 *    KR_WARC_MAX_SLICES slices (e.g. the raw HTTP head and the body
 *    buffer of a fetch, not concatenated). The writer hashes them, then
 *    compresses. With igzip or libdeflate (the default engines at level 1
 *    and above) a record up to opts.whole_max is gathered into one
 *    staging buffer and compressed in one call — one memcpy of the
 *    record, under 1 % of the compression cost (bench/warc); larger
 *    records stream through zlib without a copy.
 *  - kr_warc_begin/append/end(): the caller already knows the length and
 *    SHA-1 of the block (it hashed the bytes as they arrived, e.g. a body
 *    spilled to a temporary file) and streams the block in pieces through
 *    zlib (or uncompressed). kr_warc_end verifies length and digest.
 * The sink receives the bytes of a record in one or more calls; a failing
 * sink aborts the record, and the caller (warcfile) cuts the partial
 * record away again.
 *
 * Reading. kr_warc_reader_next() parses the next header; the block is
 * read with kr_warc_reader_read() (or skipped); kr_warc_reader_finish()
 * checks the CRLF CRLF after the block and gives the record's extent in
 * the file (offset and length of its gzip member for .warc.gz). Hostile
 * input (garbage, truncated members, wrong Content-Length, huge headers)
 * gives KR_EWARC or KR_ETOOBIG, never a crash or unbounded allocation.
 */
#ifndef KRIA_WARC_H
#define KRIA_WARC_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/digest.h"

/* "<urn:uuid:" + 36 + ">" + NUL */
#define KR_WARC_ID_SIZE 48
/* "YYYY-MM-DDThh:mm:ss.sssZ" + NUL */
#define KR_WARC_DATE_SIZE 25
#define KR_WARC_MAX_SLICES 16
/* Chosen from bench/warc: libdeflate level 1 costs about a third of
 * zlib level 6 for a 10 KB page and compresses within 1-2 % of it. */
#define KR_WARC_DEFAULT_LEVEL 1
#define KR_WARC_DEFAULT_WHOLE_MAX (4u << 20)

#define KR_WARC_PROFILE_IDENTICAL \
  "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
#define KR_WARC_PROFILE_NOT_MODIFIED \
  "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
#define KR_WARC_FORMAT "WARC File Format 1.1"
#define KR_WARC_CONFORMS_TO \
  "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"

enum kr_warc_type {
  KR_WARC_WARCINFO = 0,
  KR_WARC_RESPONSE,
  KR_WARC_RESOURCE,
  KR_WARC_REQUEST,
  KR_WARC_METADATA,
  KR_WARC_REVISIT,
  KR_WARC_CONVERSION,
  KR_WARC_CONTINUATION,
  KR_WARC_UNKNOWN, /* reader: a type outside the standard's list */
};

/* "response", ...; "unknown" outside the enum. Never NULL. */
const char *kr_warc_type_name(int type);
/* The enum value of a WARC-Type value (case-insensitive), or
 * KR_WARC_UNKNOWN. */
int kr_warc_type_parse(kr_slice_t s);

/* One named field of a header or warc-fields block. Writer: name is a
 * NUL-terminated token, value must not hold CR, LF or other controls. */
typedef struct kr_warc_field {
  const char *name;
  kr_slice_t value;
} kr_warc_field_t;

/* How the record's WARC-Payload-Digest is obtained. */
enum kr_warc_payload {
  KR_WARC_PAYLOAD_NONE = 0, /* no WARC-Payload-Digest */
  KR_WARC_PAYLOAD_DIGEST,   /* rec.payload_digest, computed by the caller
                               (e.g. over the fetch's transfer-decoded
                               entity, or carried forward for a revisit) */
  KR_WARC_PAYLOAD_FROM,     /* the block's bytes from rec.payload_from to
                               its end: the writer hashes them (a response
                               without transfer coding; a resource: 0) */
};

/* What one record says. Strings are NUL-terminated and borrowed for the
 * call; NULL or empty leaves the field out. */
typedef struct kr_warc_rec {
  int type;                      /* enum kr_warc_type (not UNKNOWN) */
  char id[KR_WARC_ID_SIZE];      /* "" = the writer makes a fresh
                                    <urn:uuid:...> and stores it here */
  uint64_t date_ms;              /* WARC-Date, epoch ms (required) */
  kr_slice_t target_uri;         /* WARC-Target-URI */
  const char *ip;                /* WARC-IP-Address */
  const char *content_type;      /* NULL: the type's default (see .c) */
  const char *concurrent_to;     /* WARC-Concurrent-To, a record id */
  const char *warcinfo_id;       /* WARC-Warcinfo-ID */
  const char *refers_to;         /* WARC-Refers-To (the original's id) */
  kr_slice_t refers_to_uri;      /* WARC-Refers-To-Target-URI */
  uint64_t refers_to_date_ms;    /* WARC-Refers-To-Date; 0 = none */
  const char *profile;           /* WARC-Profile (required for revisit) */
  const char *truncated;         /* WARC-Truncated: length|time|disconnect|
                                    unspecified */
  const char *filename;          /* WARC-Filename (warcinfo) */
  int payload;                   /* enum kr_warc_payload */
  const char *payload_digest;    /* "sha1:BASE32" for PAYLOAD_DIGEST */
  uint64_t payload_from;         /* for PAYLOAD_FROM */
  const uint8_t *block_sha1;     /* the block's SHA-1 when the caller has
                                    it (required by kr_warc_begin) */
  const kr_warc_field_t *extra;  /* more header fields, after the above */
  size_t nextra;
} kr_warc_rec_t;

/* Result of writing one record. */
typedef struct kr_warc_written {
  uint64_t bytes;                /* bytes given to the sink (compressed) */
  uint64_t record_bytes;         /* header + block + CRLF CRLF */
  char block_digest[KR_SHA1_LABEL_SIZE];
  char payload_digest[KR_SHA1_LABEL_SIZE]; /* "" when none */
} kr_warc_written_t;

enum kr_warc_engine {
  KR_WARC_ENGINE_AUTO = 0,   /* igzip at level 1, libdeflate above */
  KR_WARC_ENGINE_ZLIB,       /* zlib streaming, deflateReset per record */
  KR_WARC_ENGINE_LIBDEFLATE, /* libdeflate for records up to whole_max */
  KR_WARC_ENGINE_IGZIP       /* ISA-L's igzip for records up to whole_max
                                (levels 1, 2-3, 4-9 as its 1, 2, 3) */
};

typedef struct kr_warc_writer_opts {
  int gzip;                 /* 1: each record is one gzip member */
  int level;                /* 1..9 (KR_WARC_DEFAULT_LEVEL) */
  int engine;               /* enum kr_warc_engine */
  size_t whole_max;         /* records up to this compress in one call
                               (libdeflate); larger ones stream (zlib) */
  size_t max_header;        /* limit on one record's header (1 MiB) */
  uint64_t seed;            /* 0: record ids from getrandom(); else a
                               fixed seed (tests only) */
} kr_warc_writer_opts_t;

/* gzip on, default level and engine, whole_max 4 MiB. */
void kr_warc_writer_opts_default(kr_warc_writer_opts_t *o);

/* Receives the bytes of a record, n slices in order. Returns 0 when all
 * were stored, else a negative KR_E* that aborts the record (the writer
 * returns it from the call that was writing). */
typedef int (*kr_warc_sink_fn)(void *ctx, const kr_slice_t *v, size_t n);

typedef struct kr_warc_writer kr_warc_writer_t;

/* A writer sending records to sink(ctx). 0 and *out, KR_EINVAL for a bad
 * level or engine, KR_EIO when the compressor cannot be set up. */
int kr_warc_writer_new(const kr_warc_writer_opts_t *opts, kr_warc_sink_fn sink,
                       void *ctx, kr_warc_writer_t **out);
void kr_warc_writer_free(kr_warc_writer_t *w);
const kr_warc_writer_opts_t *kr_warc_writer_opts(const kr_warc_writer_t *w);

/* A fresh record id "<urn:uuid:...>" (random version 4 UUID) in out, e.g.
 * to name a request record before its response is written. */
void kr_warc_new_id(kr_warc_writer_t *w, char out[KR_WARC_ID_SIZE]);

/* Write one record whose block is the concatenation of the n slices
 * (n <= KR_WARC_MAX_SLICES; n may be 0 for an empty block). Fills rec->id
 * when empty. 0 and *out (may be NULL); KR_EINVAL for a bad record
 * (missing date, revisit without profile/refers-to/payload digest,
 * control characters in a value, payload_from past the block's end); the
 * sink's error. Nothing is given to the sink when the record is invalid. */
int kr_warc_write(kr_warc_writer_t *w, kr_warc_rec_t *rec, const kr_slice_t *block,
                  size_t n, kr_warc_written_t *out);

/* Streaming: rec->block_sha1 is required, rec->payload may be NONE or
 * DIGEST. The header goes to the sink at once. */
int kr_warc_begin(kr_warc_writer_t *w, kr_warc_rec_t *rec, uint64_t block_len);
/* More block bytes. KR_EINVAL past block_len (the record is abandoned). */
int kr_warc_append(kr_warc_writer_t *w, const void *p, size_t n);
/* Finish: KR_EINVAL when fewer than block_len bytes came or their SHA-1
 * differs from rec->block_sha1 — the bytes given to the sink are then not
 * a valid record and must be cut away by the caller. */
int kr_warc_end(kr_warc_writer_t *w, kr_warc_written_t *out);
/* Drop a record begun and not ended (after an error). */
void kr_warc_abandon(kr_warc_writer_t *w);

/* WARC-Date text of epoch ms: "YYYY-MM-DDThh:mm:ss.sssZ". */
void kr_warc_date(uint64_t ms, char out[KR_WARC_DATE_SIZE]);
/* Parse a WARC-Date (W3C-ISO8601 as WARC allows: YYYY, YYYY-MM, ...,
 * seconds with an optional fraction, "Z"). 0 and *ms, or KR_EINVAL. */
int kr_warc_date_parse(kr_slice_t s, uint64_t *ms);
/* The 14-digit timestamp YYYYMMDDhhmmss of a WARC-Date value, for CDX
 * (missing parts are padded as pywb does: month/day 01, time 00). */
int kr_warc_timestamp14(kr_slice_t date, char out[15]);

/* ---- blocks of warcinfo, metadata and DNS resource records ------------ */

typedef struct kr_warc_info {
  const char *software;          /* "kria/0.1.0 (+URL)" */
  const char *hostname;
  const char *ip;
  const char *operator_name;     /* "operator" */
  const char *is_part_of;        /* the crawl's name */
  const char *description;
  const char *robots;            /* e.g. "obey" */
  const char *user_agent;        /* http-header-user-agent */
  const char *from;              /* http-header-from */
  const kr_warc_field_t *extra;  /* the caller's config summary */
  size_t nextra;
} kr_warc_info_t;

/* Append the application/warc-fields block of a warcinfo record: the
 * fields above plus format and conformsTo. 0, KR_EINVAL (a value with a
 * control character), KR_ETOOBIG (out's limit). */
int kr_warc_info_block(kr_buf_t *out, const kr_warc_info_t *info);

typedef struct kr_warc_outlink {
  kr_slice_t url;
  char hop;                      /* L E R P X (DESIGN.md hop path) */
  kr_slice_t context;            /* e.g. "a/@href"; may be empty */
} kr_warc_outlink_t;

typedef struct kr_warc_meta {
  kr_slice_t via;                /* the URI this one was found on */
  kr_slice_t hops_from_seed;     /* hop path, e.g. "LLE" */
  int64_t fetch_time_ms;         /* fetchTimeMs; < 0 = leave out */
  const kr_warc_outlink_t *outlinks;
  size_t noutlinks;
  const kr_warc_field_t *annotations; /* adaptive-revisit notes, e.g.
                                         contentState, waitInterval */
  size_t nannotations;
} kr_warc_meta_t;

/* Append the Heritrix-style warc-fields block of a metadata record:
 * "via:", "hopsFromSeed:", "fetchTimeMs:", one "outlink: URL HOP [CTX]"
 * per link, then the annotations. 0, KR_EINVAL, KR_ETOOBIG. */
int kr_warc_metadata_block(kr_buf_t *out, const kr_warc_meta_t *m);

/* Append a DNS resource record block (Heritrix's text/dns form): the
 * 14-digit fetch time, then one "NAME.\tTTL\tIN\tA|AAAA\tADDR" line per
 * address. 0, KR_EINVAL, KR_ETOOBIG. */
int kr_warc_dns_block(kr_buf_t *out, uint64_t date_ms, const char *host,
                      const char *const *addrs, size_t naddrs, uint32_t ttl);

/* ---- reader ------------------------------------------------------------ */

/* Reads up to n bytes into buf: the count (0 at end of input) or a
 * negative KR_E*. */
typedef long (*kr_warc_source_fn)(void *ctx, void *buf, size_t n);
/* A source reading the file descriptor *(int *)ctx (KR_EIO on errors). */
long kr_warc_fd_source(void *ctx, void *buf, size_t n);

typedef struct kr_warc_reader_opts {
  size_t max_header;             /* a bigger header is KR_ETOOBIG (256 KiB) */
  size_t max_fields;             /* fields per header (1024) */
  uint64_t base;                 /* input offset of the source's first
                                    byte, when it starts inside a file
                                    (0): offsets and messages count
                                    from the file's start */
  int lenient;                   /* 1: read as warcio's ArchiveIterator
                                    does, for indexing real collections:
                                    ARC v1 files (kria/arc.h; each
                                    record a response, the filedesc a
                                    warcinfo, version "ARC/1.0"), blank
                                    lines before a record skipped, any
                                    blank lines (or none) after a block,
                                    a stray first line there skipped with
                                    a warning, header lines ending in
                                    any blanks (CR CR LF), lines without
                                    ':' ignored, a bad Content-Length
                                    read as 0. A file is WARC or ARC by
                                    its first record. Extents of plain
                                    input end with the block. 0: the
                                    strict WARC/1.1 reader. */
} kr_warc_reader_opts_t;

typedef struct kr_warc_header {
  kr_slice_t version;            /* "WARC/1.1"; "ARC/1.0" (lenient) */
  int type;                      /* enum kr_warc_type */
  kr_slice_t type_name;
  const kr_warc_field_t *fields; /* in order; names NUL-terminated */
  size_t nfields;
  uint64_t content_length;
  uint64_t offset;               /* in the input: the record's first byte,
                                    or its gzip member's first byte */
} kr_warc_header_t;

/* Where a finished record lies in the input. offset and length follow
 * the CDX convention of warcio and cdxj-indexer: for gzip the whole
 * member(s), for plain WARC the record without the CRLF CRLF after its
 * block (lenient: without whatever follows its block). end is where the
 * next record starts. */
typedef struct kr_warc_extent {
  uint64_t offset, length;       /* length 0 when not aligned */
  uint64_t end;                  /* first byte after the record (0 when
                                    not aligned) */
  int aligned;                   /* plain WARC, or the record is exactly
                                    one or more whole gzip members */
} kr_warc_extent_t;

typedef struct kr_warc_reader kr_warc_reader_t;

/* opts may be NULL (defaults). The input's kind (gzip or plain) is found
 * from its first bytes. */
kr_warc_reader_t *kr_warc_reader_new(const kr_warc_reader_opts_t *opts,
                                     kr_warc_source_fn src, void *ctx);
void kr_warc_reader_free(kr_warc_reader_t *r);
/* Finish the current record if any, then parse the next header. 1 and *h
 * (valid until the next call), 0 at a clean end of input, or KR_EWARC /
 * KR_ETOOBIG / the source's error; errmsg says what and where. After an
 * error the reader stays failed. */
int kr_warc_reader_next(kr_warc_reader_t *r, const kr_warc_header_t **h);
/* Up to n bytes of the current block: the count, 0 at the block's end,
 * or an error. */
long kr_warc_reader_read(kr_warc_reader_t *r, void *buf, size_t n);
/* Skip the rest of the block, check the CRLF CRLF after it and, for gzip,
 * that the member ends there. 0 and *ext (may be NULL), or an error. */
int kr_warc_reader_finish(kr_warc_reader_t *r, kr_warc_extent_t *ext);
/* 1 for gzip input (known after the first kr_warc_reader_next). */
int kr_warc_reader_is_gzip(const kr_warc_reader_t *r);
/* What the last error was about ("" when none). */
const char *kr_warc_reader_errmsg(const kr_warc_reader_t *r);
/* Lenient reading: what was tolerated when the last record was finished
 * (a stray line after its block), "" when nothing; cleared by
 * kr_warc_reader_next. */
const char *kr_warc_reader_warning(const kr_warc_reader_t *r);

/* The first field named name (case-insensitive): its value, or a slice
 * with p == NULL. */
kr_slice_t kr_warc_header_get(const kr_warc_header_t *h, const char *name);

#endif
