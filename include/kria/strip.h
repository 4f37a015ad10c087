/*
 * Volatile-section strip for the change digest (the thesis'
 * HTTPContentDigest, section 6.3.3): operator patterns whose matches are
 * replaced by one space before hashing, so a clock, a counter or a
 * rotating teaser does not make every visit a new version. The archived
 * bytes are never touched: kria hashes the gaps between matches and a
 * space for each match straight into a streaming SHA-1, without a copy.
 * Pure: no loop, no database, no globals; a kr_strip_t carries its own
 * PCRE2 match state, so use one per thread.
 *
 * Rules: a rule applies to a URI when its host (if any) is the URI's host
 * or a parent domain of it (ASCII case-insensitive, "example.org" covers
 * "www.example.org") and its URL pattern (if any) matches the URL. All
 * rules that apply are used together, as if their patterns were one
 * alternation in the order added: from the current position the leftmost
 * match of any pattern is replaced (on a tie the earlier rule wins), then
 * the search goes on after it. Empty matches are never replaced.
 *
 * Patterns are PCRE2, JIT-compiled, matched byte-wise (the body's charset
 * is unknown; (*UTF) is refused), with PCRE2's defaults otherwise: "."
 * does not match a newline unless the pattern says (?s). Example, the
 * thesis' clock: <span id="clock">[^<]*</span>.
 *
 * Limits (hostile bodies): a body larger than max_size (1 MiB) is hashed
 * unstripped (status SKIPPED_SIZE). Each search runs under PCRE2's match,
 * depth and heap limits and the default JIT stack; a search that hits one
 * (a catastrophic pattern meeting an unlucky body) or any other matching
 * error, or more than max_sections replacements, abandons stripping for
 * this body: the digest is then the unstripped one and the status LIMIT,
 * for the crawl.log annotation "stripLimit". JIT applies match_limit to
 * a whole search; PCRE2's interpreter restarts it at every start
 * position, so a pattern that is not JIT-compiled (use_jit off, or no
 * JIT on the platform) is compiled with auto-callouts that count its
 * steps against 8 x size + match_limit per body (a 1 MiB body of
 * "<s>" against <s>.*?</s> would otherwise cost the interpreter tens of
 * seconds; it now gives up after about 0.15 s).
 */
#ifndef KRIA_STRIP_H
#define KRIA_STRIP_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/digest.h"

#define KR_STRIP_MAX_RULES 1024

typedef struct kr_strip_opts {
  size_t max_size;         /* larger bodies are hashed unstripped (1 MiB) */
  uint32_t match_limit;    /* PCRE2 match limit of one search (100000) */
  uint32_t depth_limit;    /* PCRE2 depth limit (interpreter) (10000) */
  uint32_t heap_limit_kib; /* PCRE2 heap limit (interpreter) (16384) */
  size_t max_sections;     /* replacements per body before giving up (100000) */
  int use_jit;             /* JIT-compile patterns when possible (1) */
} kr_strip_opts_t;

void kr_strip_opts_default(kr_strip_opts_t *o);

typedef struct kr_strip kr_strip_t;

/* A rule set with options o (NULL: defaults). Never NULL. */
kr_strip_t *kr_strip_new(const kr_strip_opts_t *o);
void kr_strip_free(kr_strip_t *s);

/* Add a rule. host: NULL or "" for any host; url_pattern: NULL or "" for
 * any URL; pattern: the volatile section, not empty. 0, KR_EINVAL (a
 * pattern does not compile, or is empty: a message naming it goes to err
 * when errlen > 0) or KR_ETOOBIG (KR_STRIP_MAX_RULES reached). */
int kr_strip_add(kr_strip_t *s, const char *host, const char *url_pattern, const char *pattern,
                 char *err, size_t errlen);
size_t kr_strip_rule_count(const kr_strip_t *s);

/* 1 when some rule applies to (host, url), 0 when none, KR_ETOOBIG when
 * a URL pattern hit a limit. */
int kr_strip_applies(kr_strip_t *s, kr_slice_t host, kr_slice_t url);

typedef enum kr_strip_status {
  KR_STRIP_NONE = 0,         /* no rule applies: the plain digest */
  KR_STRIP_DONE = 1,         /* stripped (perhaps nothing matched) */
  KR_STRIP_SKIPPED_SIZE = 2, /* body above max_size: the plain digest */
  KR_STRIP_LIMIT = 3,        /* a limit or matching error: the plain digest */
} kr_strip_status_t;

typedef struct kr_strip_result {
  uint8_t sha1[KR_SHA1_LEN];        /* the change digest */
  char b32[KR_SHA1_B32_LEN + 1];    /* the same in base32 */
  kr_strip_status_t status;
  unsigned rules;                   /* rules that applied */
  size_t sections;                  /* sections replaced (0 unless DONE) */
  size_t bytes_removed;             /* their length in total */
  int pcre2_error;                  /* the PCRE2 error behind LIMIT, else 0 */
} kr_strip_result_t;

/* The change digest of body (len bytes; the whole decoded body) of the
 * URI (host, url), stripped by the rules that apply. sha is the caller's
 * reusable context (kr_sha1_init'ed; it is reset here). 0 with *r filled,
 * or KR_EIO when SHA-1 fails. */
int kr_strip_digest(kr_strip_t *s, kr_sha1_t *sha, kr_slice_t host, kr_slice_t url,
                    const void *body, size_t len, kr_strip_result_t *r);

/* crawl.log annotation for a result: "stripped" (sections replaced),
 * "stripSkippedSize", "stripLimit", or NULL (nothing to say). */
const char *kr_strip_annotation(const kr_strip_result_t *r);

#endif
