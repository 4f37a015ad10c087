/*
 * Seeds file reader. Pure: no loop, no global state.
 *
 * Format, one seed per line:
 *   - surrounding whitespace (space, tab, CR, VT, FF) is trimmed, a UTF-8
 *     BOM at the start of the file is skipped;
 *   - blank lines and lines starting with '#' are ignored; after the URL,
 *     whitespace then '#' starts a comment ("http://x.org/  # home"); a
 *     '#' inside the URL is its fragment (dropped by canonicalization);
 *   - a line without "://" that does not start with a scheme and a colon
 *     (a colon followed by a port number does not count) is taken as a
 *     bare host or host/path and gets "http://" in front: "example.org"
 *     is http://example.org/, "example.org:8080/a" is
 *     http://example.org:8080/a (as Heritrix does for seeds), while
 *     "mailto:a@b.org" keeps its scheme (and is refused, below);
 *   - only http and https URLs are seeds, and only with a host a crawl
 *     can reach: an IP address or a DNS name (letters, digits, '-', '_';
 *     labels of 1-63, 253 in all); a bare host must be written with a
 *     dot, as localhost or as [IPv6] ("qb" or "7" are bad lines, not the
 *     hosts qb and 0.0.0.7 that WHATWG parsing would make of them).
 * Each seed is canonicalized (kr_url_canon with the given options) and
 * kept once: a later duplicate is skipped and reported once per URL.
 * Bad lines are skipped and reported as "NAME:LINE: reason: text" (text
 * escaped, at most 120 bytes of it). Hostile files are bounded: the file
 * size, the line length and the number of seeds are capped; NUL bytes,
 * binary and overlong lines are bad lines; at most KR_SEEDS_MAX_MESSAGES
 * messages are kept (the rest are counted).
 */
#ifndef KRIA_SEEDS_H
#define KRIA_SEEDS_H

#include <stddef.h>
#include <stdint.h>

#include "kria/url.h"

#define KR_SEEDS_MAX_FILE (64u << 20)  /* default file size cap, bytes */
#define KR_SEEDS_MAX_LINE 8192u        /* default line length cap, bytes */
#define KR_SEEDS_MAX_SEEDS 1000000u    /* default cap on seeds kept */
#define KR_SEEDS_MAX_MESSAGES 100u     /* messages kept; more are counted */

/* Seed flags. */
#define KR_SEED_IMPLIED_HTTP 1u /* written without a scheme ("example.org") */
#define KR_SEED_NO_PATH 2u      /* written without a path after the host
                                   ("http://x.org"): see scope.h, surt */

typedef struct kr_seed {
  char *url;     /* canonical URL, NUL-terminated, owned by the list */
  size_t len;    /* strlen(url) */
  uint32_t line; /* 1-based line of its first occurrence */
  uint32_t flags; /* KR_SEED_* (bits above 0xff are internal) */
} kr_seed_t;

typedef struct kr_seeds_opts {
  size_t max_file;  /* KR_SEEDS_MAX_FILE (kr_seeds_load only) */
  size_t max_line;  /* KR_SEEDS_MAX_LINE */
  size_t max_seeds; /* KR_SEEDS_MAX_SEEDS */
  kr_url_canon_opts_t *canon; /* canonicalization; NULL = defaults */
} kr_seeds_opts_t;

typedef struct kr_seeds {
  kr_seed_t *v;           /* seeds in file order */
  size_t n;
  size_t cap;
  size_t lines;           /* lines read */
  size_t bad;             /* bad lines skipped */
  size_t duplicates;      /* duplicate lines skipped */
  char **messages;        /* "seeds.txt:12: invalid URL: ..." */
  size_t n_messages;
  size_t messages_dropped; /* messages beyond KR_SEEDS_MAX_MESSAGES */
  uint32_t *table;        /* dedupe: open addressing, index + 1, 0 = empty */
  size_t table_cap;       /* power of two */
} kr_seeds_t;

void kr_seeds_opts_init(kr_seeds_opts_t *opts);
void kr_seeds_init(kr_seeds_t *seeds);
void kr_seeds_free(kr_seeds_t *seeds);

/* Parse len bytes of seeds text (need not be NUL-terminated, may hold
 * NULs) named name in messages, appending to seeds (deduplicated against
 * what it already holds). opts NULL = defaults. Bad lines are messages,
 * not errors: 0, or KR_ETOOBIG when more than max_seeds seeds (the
 * seeds before the cap are kept and a message says where it stopped). */
int kr_seeds_parse(kr_seeds_t *seeds, const char *name, const char *buf,
                   size_t len, const kr_seeds_opts_t *opts);
/* Read the file at path (at most max_file bytes) and parse it, named by
 * its path. 0, KR_ETOOBIG (file or seeds over the cap), KR_EIO (cannot
 * open or read; errno is kept) with a message in seeds->messages. */
int kr_seeds_load(kr_seeds_t *seeds, const char *path,
                  const kr_seeds_opts_t *opts);

#endif
