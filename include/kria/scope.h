/*
 * Scope: which discovered URLs the crawl may fetch. Pure: no loop, no
 * database, no global state.
 *
 * Every mode is reduced to one sorted set of Heritrix-style SURT prefixes
 * built from the seeds (plus configured extra prefixes):
 *   host    "http://(org,example,www,)/"        the seed's host (and port)
 *   domain  "http://(org,example,"              the seed's registrable
 *           domain (libpsl) and every name under it, any port; a host
 *           without one (an IP address, "localhost") stands for itself
 *           and its subdomains
 *   path    "http://(org,example,)/dir/"        the seed's host and the
 *           directory of its path ("/dir/page.html" gives "/dir/")
 *   surt    Heritrix's SurtPrefixedDecideRule seed rule: "/dir/" as in
 *           path mode, except that a seed written without any path
 *           ("http://example.org", or the bare "example.org") opens the
 *           prefix to subdomains: "http://(org,example,".
 * A candidate's SURT is "http://(" reversed host labels "," [":" port] ")"
 * path [?query]; https is compared as http (both schemes are one site),
 * IP addresses are not reversed, the host is lowercase (WHATWG), the path
 * is case-sensitive. With www_alias (default on) the exact-host prefixes
 * of host/path/surt modes get a twin with the leading "www." label added
 * or removed, so http://example.org/ and http://www.example.org/ are one
 * site. Redundant prefixes (those another prefix covers) are dropped, so
 * a lookup is one binary search: O(log n) for 10,000 seeds.
 *
 * A decision applies these rules in order; the first that decides wins:
 *   length        href (without fragment) longer than max_url_len: reject
 *   scheme        not http or https: reject
 *   prerequisite  hop path ends in P (DNS, robots.txt): accept
 *   hops          more than max_link_hops L hops: reject
 *   (mode)        in the prefix set -> in scope (rule: the mode's
 *                 name); else, with also_check_via, the via URL in it ->
 *                 "via"; else the trailing run of non-L hops (E, R, X)
 *                 of the hop path, if 1..max_trans_hops long, makes it
 *                 "trans-hops" (an embed of an in-scope page on a CDN
 *                 host, a redirect to another host); else it is out of
 *                 scope: rejected at once when there are no include
 *                 patterns, else pending them below
 *   depth         more than max_path_depth '/' in the path: reject
 *   trap          Heritrix's PathologicalPathDecideRule: a block of 1 to
 *                 KR_SCOPE_TRAP_MAX_PERIOD '/'-terminated segments
 *                 repeated more than max_repeated_segments times in a row
 *                 anywhere in the URL ("/a/b/a/b/a/b/"): reject
 *   calendar      (optional, off by default) a calendar-trap heuristic:
 *                 a 4-digit number standing alone in the path or query
 *                 (not inside a longer run of letters or digits) that
 *                 reads as a year 1000-2999 and lies outside
 *                 [calendar_min_year, calendar_max_year]: reject
 *                 ("/cal/2031/01/", "?year=2045"). Endless calendars that
 *                 only deepen the path are the depth rule's, and those
 *                 repeating segments the trap rule's
 *   exclude       a PCRE2 exclude pattern matches: reject (wins over
 *                 in-scope, via, trans-hops and include)
 *   include       out of scope but an include pattern matches: accept
 * and otherwise accepts an in-scope candidate (rule: the mode's name or
 * "trans-hops") and rejects the rest ("out-of-scope", or "trans-hops"
 * when the trailing run was too long).
 *
 * Costs: a decision allocates nothing and reads no global state; it uses
 * scratch space inside the kr_scope_t, so one scope serves one thread.
 */
#ifndef KRIA_SCOPE_H
#define KRIA_SCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "kria/buf.h"
#include "kria/url.h"

struct kr_seeds;

typedef enum kr_scope_mode {
  KR_SCOPE_HOST = 0,
  KR_SCOPE_DOMAIN,
  KR_SCOPE_PATH,
  KR_SCOPE_SURT,
} kr_scope_mode_t;

/* The rule that decided; kr_scope_rule_name() gives the short name used
 * in crawl.log annotations ("scope:hops"). */
typedef enum kr_scope_rule {
  KR_SCOPE_R_LENGTH = 0,   /* "length"        reject */
  KR_SCOPE_R_SCHEME,       /* "scheme"        reject */
  KR_SCOPE_R_PREREQUISITE, /* "prerequisite"  accept */
  KR_SCOPE_R_HOPS,         /* "hops"          reject */
  KR_SCOPE_R_DEPTH,        /* "depth"         reject */
  KR_SCOPE_R_TRAP,         /* "trap"          reject */
  KR_SCOPE_R_CALENDAR,     /* "calendar"      reject */
  KR_SCOPE_R_EXCLUDE,      /* "exclude"       reject */
  KR_SCOPE_R_INCLUDE,      /* "include"       accept */
  KR_SCOPE_R_IN_SCOPE,     /* the mode's name ("host", "domain", "path",
                              "surt") accept: in the prefix set */
  KR_SCOPE_R_VIA,          /* "via"           accept */
  KR_SCOPE_R_TRANS_HOPS,   /* "trans-hops"    accept or reject */
  KR_SCOPE_R_OUT_OF_SCOPE, /* "out-of-scope"  reject */
} kr_scope_rule_t;

/* Defaults: kr_scope_opts_init takes the numbers from the config schema
 * (include/kria/config.h, [scope]), their one source; test_scope checks
 * the two agree. */
/* The trap rule finds repeated blocks of up to this many segments (a
 * longer block repeated three times is deeper than any sane depth limit;
 * the depth rule guards that case). Keeps the rule linear in the URL. */
#define KR_SCOPE_TRAP_MAX_PERIOD 32
/* PCRE2 limits on each include/exclude match. */
#define KR_SCOPE_MATCH_LIMIT 100000
#define KR_SCOPE_DEPTH_LIMIT 1000

typedef struct kr_scope_opts {
  kr_scope_mode_t mode;            /* KR_SCOPE_HOST */
  size_t max_url_len;              /* 2083 bytes of href; 0 = no limit */
  int max_link_hops;               /* 20; < 0 = no limit; 0 = seeds only */
  int max_trans_hops;              /* 2; 0 = nothing out of scope */
  unsigned max_path_depth;         /* 20 '/' in the path; 0 = no limit */
  unsigned max_repeated_segments;  /* 2; 0 = trap rule off */
  int calendar_min_year;           /* calendar rule: both 0 = off (default) */
  int calendar_max_year;
  unsigned char www_alias;         /* 1: www.x.org and x.org are one host */
  unsigned char also_check_via;    /* 0: accept when the via URL is in the
                                      prefix set (Heritrix alsoCheckVia) */
  const char *const *surt_prefixes; /* extra prefixes, every mode: must
                                       start "http://(" or "https://(" */
  size_t n_surt_prefixes;
  const char *const *include;      /* PCRE2 patterns (UTF, JIT), searched */
  size_t n_include;                /* for anywhere in the URL like the
                                      config's; anchor with ^...$ for
                                      Heritrix's whole-URL matches() */
  const char *const *exclude;
  size_t n_exclude;
} kr_scope_opts_t;

/* The limits a [host "..."] section may override; pass one to
 * kr_scope_decide (NULL = the scope's own, from its options). Compiled
 * patterns may come from elsewhere (the config's views) and must outlive
 * the call. A match that hits the match or depth limit counts as no
 * match for an include and as a match for an exclude (fail closed). */
typedef struct kr_scope_limits {
  size_t max_url_len;
  unsigned max_path_depth;
  unsigned max_repeated_segments;
  const pcre2_code *const *include;
  size_t n_include;
  const pcre2_code *const *exclude;
  size_t n_exclude;
} kr_scope_limits_t;

/* A URL to decide on. */
typedef struct kr_scope_candidate {
  const kr_url_t *url; /* the canonical URL, parsed (required) */
  kr_slice_t hops;     /* hop path ("LLE"; "" for a seed); may start with
                          Heritrix's "N+" count of hops no longer shown */
  const kr_url_t *via; /* the URL it was found on, or NULL */
} kr_scope_candidate_t;

typedef struct kr_scope kr_scope_t;

void kr_scope_opts_init(kr_scope_opts_t *opts);

/* New scope without seeds: compiles the patterns and checks the extra
 * prefixes. 0 and *out, or KR_ECONFIG with a message in errbuf (may be
 * NULL) naming the bad pattern or prefix. The options' arrays are copied. */
int kr_scope_new(const kr_scope_opts_t *opts, kr_scope_t **out, char *errbuf,
                 size_t errlen);
void kr_scope_free(kr_scope_t *scope);

/* Seed flag: the seed was written without a path ("http://x.org",
 * "x.org"); in surt mode it opens its prefix to subdomains. */
#define KR_SCOPE_SEED_NO_PATH 1u

/* Add a seed (http or https; any other scheme gives KR_ESCHEME) and the
 * prefix its mode derives. May be called at any time: the set is sorted
 * again on the next decision. 0, KR_ESCHEME, KR_EURL (no host). */
int kr_scope_add_seed(kr_scope_t *scope, const kr_url_t *seed, unsigned flags);
/* Add every seed of a parsed seeds file. 0 or the first error. */
int kr_scope_add_seeds(kr_scope_t *scope, const struct kr_seeds *seeds);
/* Add one SURT prefix ("http://(org,example,"); "https://" counts as
 * "http://". 0 or KR_EINVAL if it does not start "http(s)://(". */
int kr_scope_add_surt_prefix(kr_scope_t *scope, const char *prefix, size_t len);
/* Sort and drop redundant prefixes (done lazily by kr_scope_decide). */
void kr_scope_finish(kr_scope_t *scope);

/* Number of prefixes in the set (after kr_scope_finish) and the i-th, for
 * reports (Heritrix writes them to surts.dump). */
size_t kr_scope_prefix_count(kr_scope_t *scope);
kr_slice_t kr_scope_prefix(kr_scope_t *scope, size_t i);

/* Decide. 1 accept / 0 reject, the deciding rule in *rule (may be NULL).
 * limits NULL = the scope's own. Allocates nothing (except that the first
 * decision after an add sorts the set). */
int kr_scope_decide(kr_scope_t *scope, const kr_scope_candidate_t *cand,
                    const kr_scope_limits_t *limits, kr_scope_rule_t *rule);

/* What kr_scope_decide_memo remembers of one candidate URL: the parts of
 * a decision that depend on the URL, the scope's prefixes and the limits
 * alone (in the prefix set, the depth/trap/calendar/exclude rules, the
 * includes), not on the hops or the via. Zero-initialise; it is redone
 * when used with another scope, limits, or after prefixes were added. */
typedef struct kr_scope_memo {
  const kr_scope_t *scope;
  uint64_t gen;
  const kr_scope_limits_t *limits;
  uint8_t known;  /* which parts are known, and the prefix/include values */
  uint8_t filter; /* the first URL rule that rejects, or KR_SCOPE_R_IN_SCOPE */
} kr_scope_memo_t;

/* kr_scope_decide for a candidate decided before with the same memo: the
 * same answer, without redoing the URL's own parts. The memo belongs to
 * one URL (cand->url may be another kr_url_t of the same href). The
 * limits (numbers and patterns) must not change in place while a memo
 * refers to them: it knows them by their address. */
int kr_scope_decide_memo(kr_scope_t *scope, const kr_scope_candidate_t *cand,
                         const kr_scope_limits_t *limits, kr_scope_rule_t *rule,
                         kr_scope_memo_t *memo);

/* Short name of a rule; for KR_SCOPE_R_IN_SCOPE the mode's name. */
const char *kr_scope_rule_name(const kr_scope_t *scope, kr_scope_rule_t rule);
const char *kr_scope_mode_name(kr_scope_mode_t mode);
/* "host" | "domain" | "path" | "surt" -> mode; -1 if unknown. */
int kr_scope_mode_parse(const char *name);

/* Append the candidate SURT form used for prefix matching
 * ("http://(org,example,www,:8080)/a?b") to out. 0, KR_ETOOBIG or
 * KR_EURL (not http/https, no host). */
int kr_scope_surt(const kr_url_t *url, kr_buf_t *out);

/* Hop paths. Link hops: the number of L, plus N for a leading "N+".
 * Trans hops: the length of the trailing run of non-L hops. */
unsigned kr_scope_link_hops(kr_slice_t hops);
unsigned kr_scope_trans_hops(kr_slice_t hops);
/* Append hops + hop to out as Heritrix extends a path from seed: at most
 * 50 hops shown, older ones counted in a leading "N+" ("LLL...L" of 50
 * plus 'X' gives "1+LL...LX"). hop is one of L E R P X. 0 or KR_ETOOBIG,
 * KR_EINVAL for another hop letter. */
int kr_scope_hops_extend(kr_slice_t hops, char hop, kr_buf_t *out);

#endif
