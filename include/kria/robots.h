/*
 * robots.txt (RFC 9309): parse once for one crawler, then answer "may this
 * path be fetched?" many times. Pure: no loop, no I/O, no global state.
 *
 * A kr_robots_t keeps only what one crawler needs: the rules of the groups
 * whose user-agent matches its product token (or, when none does, of the
 * `*` groups), the Crawl-delay of those groups, and every Sitemap line.
 * Memory per host is therefore bounded by the input window (max_bytes) and
 * max_rules, whatever the file holds: 10,000 groups for other crawlers
 * cost nothing, a 100 MB file is read only up to max_bytes.
 *
 * Matching follows RFC 9309 §2.2.2: the most specific (longest) pattern
 * wins, Allow wins ties, `*` matches any run of octets, a final `$`
 * anchors the end, and both the pattern and the path are compared in one
 * canonical percent-encoding (see kr_robots_canon): a literal `*` or `$`
 * in a path is the same as its %2A / %24, which is how a rule names it
 * (§2.2.3). /robots.txt itself is always allowed. Matching is linear in
 * path + pattern length.
 *
 * Where Google's parser (github.com/google/robotstxt) tolerates more than
 * the RFC and the tolerance is harmless or more polite, kria tolerates it
 * too: a missing colon in "Disallow /x", the typos "useragent",
 * "disallaw" and friends, a partial UTF-8 BOM, lines cut at 16,663 bytes.
 * Where the two disagree, kria follows the RFC (percent-decoding of
 * unreserved characters, encoding of raw non-ASCII paths, a rule's
 * %2A / %24 matching a literal * / $ in the URL, and %3A %2F %3F %40 in a
 * query comparing as : / ? @, RFC 9309 Figure 4).
 */
#ifndef KRIA_ROBOTS_H
#define KRIA_ROBOTS_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

typedef struct kr_robots kr_robots_t;

/* At least this much of a robots.txt is parsed (RFC 9309 §2.5 asks for
 * 500 KiB); bytes beyond max_bytes are ignored, as is a line cut by it. */
#define KR_ROBOTS_DEFAULT_MAX_BYTES (500u * 1024u)
/* Rules kept for our groups; more are counted in rules_dropped. 65,536
 * exceeds what 500 KiB can hold ("allow:/x" lines), so with the default
 * window nothing real is dropped, yet the worst case stays ~1 MiB. */
#define KR_ROBOTS_DEFAULT_MAX_RULES 65536u
#define KR_ROBOTS_DEFAULT_MAX_SITEMAPS 1000u
/* Bytes of one line that are read; the rest of the line is ignored. The
 * same cut as Google's parser (2083 * 8 - 1), so site owners who test
 * against Google see the same rules. */
#define KR_ROBOTS_MAX_LINE 16663u
/* Crawl-delay values are clamped to one day. */
#define KR_ROBOTS_MAX_CRAWL_DELAY_MS (86400u * 1000u)

/* Classification of one line, reported through kr_robots_options_t.on_line
 * (for linting and explanations; the matcher does not need it). */
typedef enum kr_robots_line_kind {
  KR_ROBOTS_LINE_EMPTY,       /* blank or whitespace only */
  KR_ROBOTS_LINE_COMMENT,     /* starts with '#' */
  KR_ROBOTS_LINE_INVALID,     /* text that is not "key: value" */
  KR_ROBOTS_LINE_USER_AGENT,
  KR_ROBOTS_LINE_ALLOW,
  KR_ROBOTS_LINE_DISALLOW,
  KR_ROBOTS_LINE_SITEMAP,
  KR_ROBOTS_LINE_CRAWL_DELAY,
  KR_ROBOTS_LINE_UNKNOWN,     /* "key: value" with a key kria does not use */
} kr_robots_line_kind_t;

/* Flags of a reported line. */
#define KR_ROBOTS_LINE_TYPO 0x1u          /* key is an accepted misspelling */
#define KR_ROBOTS_LINE_MISSING_COLON 0x2u /* "key value", tolerated */
#define KR_ROBOTS_LINE_TOO_LONG 0x4u      /* cut at KR_ROBOTS_MAX_LINE */
#define KR_ROBOTS_LINE_HAS_COMMENT 0x8u   /* text, then a '#' comment */

typedef void kr_robots_line_fn(void *ctx, unsigned line,
                               kr_robots_line_kind_t kind, unsigned flags);

/* Parse options; a zero field means its default. */
typedef struct kr_robots_options {
  size_t max_bytes;             /* KR_ROBOTS_DEFAULT_MAX_BYTES */
  size_t max_rules;             /* KR_ROBOTS_DEFAULT_MAX_RULES */
  size_t max_sitemaps;          /* KR_ROBOTS_DEFAULT_MAX_SITEMAPS */
  kr_robots_line_fn *on_line;   /* optional, called for every line in order */
  void *ctx;                    /* passed to on_line */
} kr_robots_options_t;

/* What the parse saw; all counts cover the parsed window only. */
typedef struct kr_robots_stats {
  size_t bytes_parsed;          /* after the BOM and the max_bytes cut */
  int truncated;                /* input was longer than max_bytes */
  unsigned lines;               /* incl. the (maybe empty) last line */
  unsigned directives;          /* user-agent/allow/disallow/sitemap/crawl-delay */
  unsigned unknown;             /* KR_ROBOTS_LINE_UNKNOWN lines */
  unsigned invalid;             /* KR_ROBOTS_LINE_INVALID lines */
  unsigned last_directive_line; /* last directive or unknown line, 0 if none */
  unsigned groups;              /* runs of user-agent lines */
  unsigned long_lines;          /* lines cut at KR_ROBOTS_MAX_LINE */
  unsigned rules_kept;          /* rules that apply to us */
  unsigned rules_dropped;       /* rules that would apply, over max_rules */
  unsigned sitemaps_dropped;    /* over max_sitemaps */
} kr_robots_stats_t;

/* Parse len bytes of robots.txt (need not be NUL-terminated; NULs and any
 * other bytes are fine) for the crawler whose product token is
 * product_token (NUL-terminated, e.g. "kria"; compared ASCII
 * case-insensitively). A token that is not a valid product token (see
 * kr_robots_is_valid_token), the empty one included, matches only `*`
 * groups. opts may be NULL. on_line, when set, is called synchronously
 * before this returns. Returns 0 and *out (free with kr_robots_free), or
 * KR_EINVAL for NULL arguments. Content never makes it fail. */
int kr_robots_parse(const char *data, size_t len, const char *product_token,
                    kr_robots_t **out);
int kr_robots_parse_opts(const char *data, size_t len,
                         const char *product_token,
                         const kr_robots_options_t *opts, kr_robots_t **out);
void kr_robots_free(kr_robots_t *robots);

/* The fetch-outcome policy of RFC 9309 §2.3.1, used by
 * kr_robots_from_status:
 *   2xx                      PARSE: the body is the robots.txt
 *   3xx (redirects exhausted, more than five: §2.3.1.2 "unavailable"),
 *   4xx incl. 404            ALLOW_ALL: there is no robots.txt
 *   429                      DISALLOW_ALL: "slow down" is treated like a
 *                            server error (as Google does), not as absence
 *   5xx, status <= 0 (DNS, connect, TLS, timeout: unreachable), anything
 *   else                     DISALLOW_ALL (§2.3.1.4), until the next fetch
 * Keeping a previous good copy while the server fails is the caller's
 * choice (§2.4 caching), not this function's. */
typedef enum kr_robots_policy {
  KR_ROBOTS_PARSE,
  KR_ROBOTS_ALLOW_ALL,
  KR_ROBOTS_DISALLOW_ALL,
} kr_robots_policy_t;

kr_robots_policy_t kr_robots_policy_for_status(int status);

/* Build the robots for a finished robots.txt fetch: status is the final
 * HTTP status after redirects, or <= 0 when no response came. The body is
 * parsed (as kr_robots_parse_opts) only for 2xx, and ignored otherwise
 * (may then be NULL). Returns 0 and *out, or KR_EINVAL. */
int kr_robots_from_status(int status, const char *body, size_t len,
                          const char *product_token,
                          const kr_robots_options_t *opts, kr_robots_t **out);

/* Why a path was allowed or not. */
typedef enum kr_robots_reason {
  KR_ROBOTS_BY_RULE,    /* a rule matched: line, rule_is_allow, pattern */
  KR_ROBOTS_NO_RULE,    /* no rule matched (or no group applies): allowed */
  KR_ROBOTS_ROBOTS_TXT, /* the path is /robots.txt: always allowed */
  KR_ROBOTS_BY_STATUS,  /* allow-all or disallow-all from the fetch status */
} kr_robots_reason_t;

typedef struct kr_robots_decision {
  int allowed;               /* 1 allowed, 0 disallowed */
  kr_robots_reason_t reason;
  unsigned line;             /* 1-based line of the deciding rule, else 0 */
  int rule_is_allow;         /* the deciding rule is Allow (1) / Disallow (0) */
  kr_slice_t pattern;        /* its canonical pattern, owned by the robots
                                (valid until kr_robots_free); else empty */
  int status;                /* the fetch status, for KR_ROBOTS_BY_STATUS */
} kr_robots_decision_t;

/* May path_and_query be fetched? It is the request target ("/a/b?c=d",
 * as kr_url_request_target gives; a '#' and anything after it is ignored).
 * An empty target means "/", and one that does not start with '/' (as
 * kr_robots_url_path may return, e.g. "?a") has a '/' put before it. Raw
 * non-ASCII bytes are percent-encoded before matching (RFC 9309 §2.2.2).
 * Returns 1 (allowed) or 0 (disallowed) and fills *decision when not
 * NULL. Time is O(rules * (path + pattern)) at worst, never exponential. */
int kr_robots_allowed(const kr_robots_t *robots, kr_slice_t path_and_query,
                      kr_robots_decision_t *decision);

/* Crawl-delay of the applicable group(s) in milliseconds (the largest when
 * several are given, clamped to KR_ROBOTS_MAX_CRAWL_DELAY_MS), or -1 when
 * none applies. Parsed as a decimal number of seconds ("10", "0.5");
 * other values are ignored. The caller caps it (respect-crawl-delay-up-to). */
int64_t kr_robots_crawl_delay_ms(const kr_robots_t *robots);

/* Sitemap URLs from every Sitemap line, wherever it stood, in file order,
 * as written (not validated: resolve them with the url module). */
size_t kr_robots_sitemap_count(const kr_robots_t *robots);
kr_slice_t kr_robots_sitemap(const kr_robots_t *robots, size_t i);

/* The fetch policy this robots was made with (KR_ROBOTS_PARSE for a parsed
 * file) and the status given to kr_robots_from_status (200 for
 * kr_robots_parse). */
kr_robots_policy_t kr_robots_policy(const kr_robots_t *robots);
int kr_robots_status(const kr_robots_t *robots);

const kr_robots_stats_t *kr_robots_stats(const kr_robots_t *robots);
/* Bytes of heap this robots holds (for cache accounting). */
size_t kr_robots_memory(const kr_robots_t *robots);

/* Append a one-line explanation of a decision to out:
 *   "disallowed by line 3: Disallow: /private"
 *   "allowed (no matching rule)"
 *   "allowed (/robots.txt is always allowed)"
 *   "disallowed (robots.txt status 503: disallow all)"
 * Returns 0 or KR_ETOOBIG (out's maximum reached; out may then hold a
 * prefix). */
int kr_robots_decision_format(const kr_robots_decision_t *decision,
                              kr_buf_t *out);

/* 1 if s is a valid product token to look for (RFC 9309 §2.2.1:
 * 1*(ALPHA / "-" / "_")), else 0. */
int kr_robots_is_valid_token(kr_slice_t s);

/* The part of a URL that rules are matched against: path, params and
 * query, without the fragment, as a slice of url. Accepts absolute URLs
 * ("http://h/a?b"), network-path references ("//h/a") and paths ("/a").
 * The slice is empty when there is no path ("http://h" means "/"), and
 * does not start with '/' when the query follows the host directly
 * ("http://h?a" gives "?a", meaning "/?a"): kr_robots_allowed takes both.
 * Lenient on purpose, like Google's GetPathParamsQuery; for a crawler's
 * own URLs kr_url_request_target is the better source. */
kr_slice_t kr_robots_url_path(const char *url, size_t len);

/* Write the canonical encoding of a rule's pattern into out (room for
 * 3 * len bytes is always enough; no NUL is written) and return its
 * length: %XX of an unreserved character (ALPHA DIGIT - . _ ~) becomes
 * the character, other %xx get upper-case hex, a '%' not followed by two
 * hex digits becomes %25, and bytes outside printable ASCII or among
 * " < > \ ^ ` { | } become %XX. After the first '?' (in the query),
 * %XX of ':' '/' '?' '@' becomes the character too: a query may hold
 * them literally (RFC 3986 3.4) and there they are data, never
 * delimiters; RFC 9309 §2.2.2 (Figure 4) matches "?baz=https://foo.bar"
 * with "?baz=https%3A%2F%2Ffoo.bar". A '*' (the wildcard) and a final '$'
 * (the end anchor) stay; a '$' elsewhere is literal and becomes %24, and
 * %2A / %24 stay escaped: they are the literal '*' and '$' (RFC 9309
 * §2.2.3). Other reserved characters (/ ? : @ ! & ' ( ) + , ; = [ ])
 * stay as they are. Idempotent. */
size_t kr_robots_canon(const char *in, size_t len, char *out);

/* The same for a path to match (as kr_robots_allowed does), where '*' and
 * '$' are data: they become %2A and %24 wherever they stand, so a rule's
 * %2A or %24 matches them. Idempotent; room for 3 * len is enough. */
size_t kr_robots_canon_path(const char *in, size_t len, char *out);

/* 1 when two robots.txt bodies hold the same lines once comments ('#' to
 * the end of the line), blank lines and the whitespace around each line
 * are dropped (a file that only stamps its generation time in a comment
 * has not changed), else 0. O(a_len + b_len). */
int kr_robots_same_text(const char *a, size_t a_len, const char *b, size_t b_len);

#endif
