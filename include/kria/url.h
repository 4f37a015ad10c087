/*
 * URLs: WHATWG URL Standard parsing, resolution and serialization (every
 * special scheme: http, https, ws, wss, ftp, file; other schemes with
 * opaque hosts or opaque paths such as mailto:, data:, javascript:), a
 * canonical form for dedupe (with PCRE2 strip rules such as session ids),
 * and SURT keys compatible with python `surt` / IA's WaybackURLKeyMaker.
 * Pure: no loop, no global state.
 *
 * A kr_url_t is one allocation holding its serialized href and the
 * offsets of its components, so component accessors return slices into
 * the href (valid as long as the URL).
 *
 * Deviations from the standard, all deliberate:
 *  - Input is bytes, taken as UTF-8. Bytes that are not valid UTF-8 are
 *    percent-encoded one by one where the standard would percent-encode
 *    the code point (path, query, fragment, userinfo, opaque host), as
 *    if they came from a legacy-encoded page; in a domain they fail.
 *  - Only the UTF-8 query encoding (no legacy document encodings).
 *  - IDNA is libidn2 (UTS #46 non-transitional over IDNA2008), called per
 *    label so ASCII labels pass as UTS #46 wants; labels of symbols and
 *    emoji that IDNA2008 refuses get their Punycode directly (as browsers
 *    do). libidn2 still rejects non-ASCII labels starting or ending with
 *    '-', with "--" in 3rd/4th position or over 63 octets, some symbols
 *    mixed with letters, and maps a few code points by older Unicode
 *    tables. test/unit/test_url.c counts these against toascii.json and
 *    IdnaTestV2.json.
 *  - Inputs longer than a limit (default KR_URL_MAX_LEN) fail.
 */
#ifndef KRIA_URL_H
#define KRIA_URL_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

typedef struct kr_url kr_url_t;

/* Default limit on the input length of kr_url_parse. */
#define KR_URL_MAX_LEN 8192

typedef enum kr_url_host_type {
  KR_URL_HOST_NONE = 0, /* no host: "mailto:x", "foo:/x" */
  KR_URL_HOST_DOMAIN,   /* ASCII (punycode) domain, lowercase */
  KR_URL_HOST_IPV4,     /* dotted quad, already normalised */
  KR_URL_HOST_IPV6,     /* "[...]", compressed per RFC 5952 */
  KR_URL_HOST_OPAQUE,   /* host of a non-special URL, percent-encoded */
  KR_URL_HOST_EMPTY,    /* "file:///x", "foo:///x" */
} kr_url_host_type_t;

/* Parse input (len bytes, need not be NUL-terminated, may hold NULs)
 * against base (may be NULL). 0 and *out (free with kr_url_free), or
 * KR_EURL (not a URL, or longer than KR_URL_MAX_LEN). */
int kr_url_parse(const char *input, size_t len, const kr_url_t *base,
                 kr_url_t **out);
/* Same with an explicit input length limit (0 = KR_URL_MAX_LEN). The
 * href of the result is at most 3 * max_len + the base's href length
 * + 64 bytes (percent-encoding triples a byte). */
int kr_url_parse_ex(const char *input, size_t len, const kr_url_t *base,
                    size_t max_len, kr_url_t **out);
/* How much of base's href a parse of input against base depends on: 0
 * (an http(s) URL with "//": not at all), the length of base's
 * "scheme://userinfo@host:port" (a path-absolute "/x" against an http(s)
 * base), or all of it (anything else, and any input holding a tab or a
 * newline). Two bases whose hrefs agree on that many bytes give the same
 * result for input, so (that prefix, input) can key a cache of parses. */
size_t kr_url_base_use(const char *input, size_t len, const kr_url_t *base);
kr_url_t *kr_url_dup(const kr_url_t *url);
/* Bytes of url's one allocation. A kr_url_t holds no pointers: a memcpy
 * of these bytes to memory aligned for any type is a kr_url_t too (for
 * the accessors; not for kr_url_free). */
size_t kr_url_size(const kr_url_t *url);
void kr_url_free(kr_url_t *url);

const char *kr_url_href(const kr_url_t *url); /* NUL-terminated */
size_t kr_url_href_len(const kr_url_t *url);
kr_slice_t kr_url_scheme(const kr_url_t *url);   /* "https", no colon */
kr_slice_t kr_url_username(const kr_url_t *url); /* percent-encoded */
kr_slice_t kr_url_password(const kr_url_t *url); /* percent-encoded */
kr_slice_t kr_url_hostname(const kr_url_t *url); /* IPv6 in brackets */
/* hostname plus ":port" when the port is explicit (URL API's `host`). */
kr_slice_t kr_url_host(const kr_url_t *url);
kr_url_host_type_t kr_url_host_type(const kr_url_t *url);
/* Explicit port, or -1 when absent (the scheme's default). */
int kr_url_port(const kr_url_t *url);
/* Explicit port or the scheme's default (80, 443, ...); -1 if none. */
int kr_url_effective_port(const kr_url_t *url);
/* Path as serialized ("/a/b", or the opaque path "x@y" of mailto:x@y). */
kr_slice_t kr_url_pathname(const kr_url_t *url);
/* Query without '?'; .p == NULL when the URL has no query at all. */
kr_slice_t kr_url_query(const kr_url_t *url);
/* "?query", or empty when the query is absent or empty (URL API). */
kr_slice_t kr_url_search(const kr_url_t *url);
/* Fragment without '#'; .p == NULL when the URL has no fragment. */
kr_slice_t kr_url_fragment(const kr_url_t *url);
/* "#fragment", or empty when absent or empty (URL API's `hash`). */
kr_slice_t kr_url_hash(const kr_url_t *url);
/* Origin-form request target: path plus "?query" when present. */
kr_slice_t kr_url_request_target(const kr_url_t *url);
/* href without "#fragment". */
kr_slice_t kr_url_href_nofrag(const kr_url_t *url);
/* 1 for https. */
int kr_url_is_https(const kr_url_t *url);
/* 1 for http or https: what a crawler fetches (the parsed scheme, no
 * string compare). */
int kr_url_is_http(const kr_url_t *url);
/* 1 for http, https, ws, wss, ftp, file. */
int kr_url_is_special(const kr_url_t *url);
/* 1 when the path is opaque (mailto:, data:, javascript:). */
int kr_url_has_opaque_path(const kr_url_t *url);
/* Append the ASCII serialization of the URL's origin ("https://h:8443",
 * or "null" for an opaque origin) to out. 0 or KR_ETOOBIG. */
int kr_url_origin(const kr_url_t *url, kr_buf_t *out);

/* Public Suffix List (libpsl's built-in list) on an ASCII lowercase
 * domain, such as kr_url_hostname of a KR_URL_HOST_DOMAIN URL.
 * registrable domain: "www.amazon.co.uk" -> "amazon.co.uk"; public
 * suffix: -> "co.uk". 0 and *out as a slice into host, or KR_EINVAL (no
 * such part: an IP address, a bare public suffix, a name over 253). */
int kr_url_registrable_domain(kr_slice_t host, kr_slice_t *out);
int kr_url_public_suffix(kr_slice_t host, kr_slice_t *out);

/*
 * Canonical form for dedupe. Starts from the WHATWG serialization (scheme
 * and host lowercase, IDNA to punycode, default port dropped, dot
 * segments resolved), then: fragment removed; percent-encoding normalised
 * in userinfo, opaque host, path and query (%XX of an unreserved
 * character A-Z a-z 0-9 - . _ ~ decoded, every other %xx upper-cased);
 * then the optional steps of `flags`; then the rules, in order, on the
 * resulting string. A regex rule that shortens the string is applied
 * again until it stops matching (a strip rule removes one occurrence per
 * match); a round of rules that changed the string sends the result
 * through parse + normalisation and the rules again, while that keeps
 * shortening it (at most 64 rounds). So, but for rule sets that grow
 * URLs, kr_url_canon(parse(kr_url_canon(u))) == kr_url_canon(u).
 */
enum kr_url_canon_flag {
  KR_URL_CANON_STRIP_USERINFO = 1u << 0, /* drop user:pass@ */
  KR_URL_CANON_STRIP_WWW = 1u << 1,  /* "www\d*." label off a domain that
                                        keeps a dot: www2.x.org -> x.org */
  KR_URL_CANON_SORT_QUERY = 1u << 2, /* sort '&'-separated params bytewise */
  KR_URL_CANON_TIDY_QUERY = 1u << 3, /* drop empty params ("a&&b", "?&a",
                                        "a&") and an empty query ("x?") */
};
#define KR_URL_CANON_DEFAULT KR_URL_CANON_TIDY_QUERY

/* Options with compiled PCRE2 rules. Not shareable between threads (it
 * holds the match data); build one per thread. */
typedef struct kr_url_canon_opts kr_url_canon_opts_t;

/* Limits on each rule match (PCRE2 match and depth limits). */
#define KR_URL_RULE_MATCH_LIMIT 100000
#define KR_URL_RULE_DEPTH_LIMIT 1000

kr_url_canon_opts_t *kr_url_canon_opts_new(unsigned flags);
void kr_url_canon_opts_free(kr_url_canon_opts_t *opts);
unsigned kr_url_canon_opts_flags(const kr_url_canon_opts_t *opts);
/* Add a rule, Heritrix RegexRule style: when pattern (PCRE2, UTF-8)
 * matches the WHOLE canonical URL, the URL becomes replacement with $1,
 * ${2}... substituted (NULL = "$1$2", Heritrix's strip rule: keep groups
 * 1 and 2, drop the rest; unset groups are empty). Compiled with JIT.
 * A match that hits the match limit counts as no match.
 * 0, or KR_ECONFIG with a message in errbuf (may be NULL). */
int kr_url_canon_opts_add_rule(kr_url_canon_opts_t *opts, const char *pattern,
                               const char *replacement, char *errbuf,
                               size_t errlen);
/* Add a built-in rule set by name; 0 or KR_EINVAL for an unknown name.
 * Heritrix's rules (same names, same regexes): "LowercaseRule",
 * "StripUserinfoRule", "StripWWWRule", "StripWWWNRule", "StripSessionIDs"
 * (jsessionid, phpsessid, sid: 32 alphanumerics; aspsessionid),
 * "StripSessionCFIDs" (cfid & cftoken), "FixupQueryString" (run to its
 * fixed point: Heritrix's single pass leaves "x??" with a '?'),
 * "StripExtraSlashes"; "heritrix-default" (Heritrix's default chain:
 * Lowercase, StripUserinfo, StripWWWN, StripSessionIDs, StripSessionCFIDs,
 * FixupQueryString); "session-ids" (StripSessionIDs + StripSessionCFIDs,
 * what a crawler usually wants). */
int kr_url_canon_opts_add_ruleset(kr_url_canon_opts_t *opts, const char *name);
/* Append the canonical form of url to out (opts NULL = defaults, no
 * rules). 0, KR_ETOOBIG (out's max), or KR_EURL. */
int kr_url_canon(const kr_url_t *url, kr_url_canon_opts_t *opts, kr_buf_t *out);
/* Parse (against base, may be NULL) and canonicalise in one call. */
int kr_url_canon_str(const char *input, size_t len, const kr_url_t *base,
                     kr_url_canon_opts_t *opts, kr_buf_t *out);
/* Run only the rules of opts over the string s, as Heritrix's
 * RulesCanonicalizationPolicy does (no parsing; strip rules repeat as
 * above), appending to out. 0 or KR_ETOOBIG. */
int kr_url_canon_apply_rules(kr_url_canon_opts_t *opts, const char *s, size_t n,
                             kr_buf_t *out);

/*
 * SURT (Sort-friendly URI Reordering Transform), as python `surt` 0.3.1
 * computes it for CDX keys: "http://www.archive.org/goo/?b&a" ->
 * "org,archive)/goo?a&b". It parses leniently (its own RFC 2396 regex
 * split, no WHATWG), canonicalises with Google's and IA's canonicalizers
 * (unescape repeatedly, IDNA, dotted IPv4 from odd forms, path dot
 * segments, lowercase, strip www\d*., session ids, trailing slash,
 * sorted query), then reverses the host labels.
 */
enum kr_surt_canon {
  KR_SURT_CANON_DEFAULT_IA = 0, /* Google + IA (python's default) */
  KR_SURT_CANON_NONE,           /* identity */
  KR_SURT_CANON_GOOGLE,         /* GoogleURLCanonicalizer only */
  KR_SURT_CANON_IA,             /* IAURLCanonicalizer only */
};

typedef struct kr_surt_opts {
  unsigned char canonicalizer;  /* enum kr_surt_canon */
  unsigned char with_scheme;    /* "http://(org,archive)/" (default 0) */
  unsigned char trailing_comma; /* "org,archive,)/" (default 0) */
  unsigned char reverse_ipaddr; /* 1.2.3.4 -> 4,3,2,1 (default 1) */
  unsigned char public_suffix;  /* host cut to its registrable domain (0) */
  unsigned char java_keymaker;  /* Java WaybackURLKeyMaker: "dns:a.com" ->
                                   "com,a)", "warcinfo:..." verbatim (0) */
  /* IA canonicalizer switches, python names and defaults */
  unsigned char host_lowercase;                          /* 1 */
  unsigned char host_massage;                            /* 1: strip www\d*. */
  unsigned char port_strip_default;                      /* 1 */
  unsigned char path_strip_empty;                        /* 0 */
  unsigned char path_lowercase;                          /* 1 */
  unsigned char path_strip_session_id;                   /* 1 */
  unsigned char path_strip_trailing_slash_unless_empty;  /* 1 */
  unsigned char query_lowercase;                         /* 1 */
  unsigned char query_strip_session_id;                  /* 1 */
  unsigned char query_strip_empty;                       /* 1 */
  unsigned char query_alpha_reorder;                     /* 1 */
  /* Not in python: keep %26 %3D %23 %25 %2B escaped in the query instead
   * of decoding them (python's known bug, kept there for compatibility:
   * "?type=a+b+%26+c" splits at the decoded '&'). Default 0. */
  unsigned char query_keep_escaped_delims;
} kr_surt_opts_t;

/* Python surt's defaults. */
void kr_surt_opts_init(kr_surt_opts_t *opts);
/* SURT of a string (NULL or empty gives "-"; "filedesc..." is kept
 * verbatim), appended to out. opts NULL = defaults. 0, KR_ETOOBIG, or
 * KR_EURL (an unparseable port, a blank string). */
int kr_surt(const char *url, size_t len, const kr_surt_opts_t *opts, kr_buf_t *out);
/* SURT of a parsed URL (of its href). */
int kr_url_surt(const kr_url_t *url, const kr_surt_opts_t *opts, kr_buf_t *out);
/* The canonicalised URL in plain (non-SURT) form, e.g. for
 * KR_SURT_CANON_IA "http://www.archive.org:80/" -> "http://archive.org/". */
int kr_surt_canon_url(const char *url, size_t len, const kr_surt_opts_t *opts,
                      kr_buf_t *out);
/* Host to SURT host: "www.archive.org" -> "org,archive,www"; a dotted
 * quad is kept unless reverse_ipaddr. Appended to out. */
int kr_surt_host(kr_slice_t host, int reverse_ipaddr, kr_buf_t *out);

#endif
