/*
 * The processors of the crawl, each a template (name, hooks, its module's
 * per-fetch context) that the chain table (procs.c) puts in its phase and
 * order. A module exports its processors here and nothing else to the
 * others: processors never call each other; what one needs from another
 * travels through the fetch (fetch.h) or the chain's stream (chain.h).
 */
#ifndef KRIA_PROCS_H
#define KRIA_PROCS_H

#include "chain.h"

/* proc_prefetch.c: the scope re-check and the robots.txt gate; after a
 * robots.txt fetch, its rules stored (post) */
extern const kr_processor_t kr_proc_scope, kr_proc_robots, kr_proc_robots_update;
/* proc_midfetch.c: validator trust before the request; the mid-fetch
 * check at the headers */
extern const kr_processor_t kr_proc_validators, kr_proc_midfetch;
/* proc_fetch.c: the HTTP exchange, the three levels of the byte stream */
extern const kr_processor_t kr_proc_http;
/* proc_digest.c: payload and change digests, stripping; a payload digest
 * the walk left open finished (post) */
extern const kr_processor_t kr_proc_digest, kr_proc_digest_end;
/* proc_change.c: changed / unchanged / unknown, duplicates */
extern const kr_processor_t kr_proc_change;
/* proc_extract.c: links from headers, HTML and CSS; dropped links noted */
extern const kr_processor_t kr_proc_extract_headers, kr_proc_extract_html,
    kr_proc_extract_css, kr_proc_extract_end;
/* proc_feed.c: feeds and sitemaps, robots.txt sitemaps, changefreq hints */
extern const kr_processor_t kr_proc_extract_feed, kr_proc_robots_sitemaps, kr_proc_feed_hints;
/* clusterdedup.c: a payload the local index lacks asked of the cluster's
 * shared index (Redis) */
extern const kr_processor_t kr_proc_xdedup;
/* proc_warc.c: WARC records */
extern const kr_processor_t kr_proc_warc_dns, kr_proc_warc, kr_proc_warc_late;
/* proc_post.c: the outcome, the crawl.log line, the URI back to the frontier */
extern const kr_processor_t kr_proc_outcome, kr_proc_finish;
/* proc_wait.c: the wait before the next visit, embeds and feeds pulled */
extern const kr_processor_t kr_proc_revisit;

#endif
