/*
 * The chain of the crawl in one table: every processor with its phase,
 * in the order it runs (within a phase, the order of the rows; the chain
 * keeps it, chain.h). Stream hooks run in the same order, so the
 * validators' verdict at the headers (midfetch) comes before the digest
 * reads it. A row's setup gives the processor what it needs from the
 * crawl (filters, the WARC writer) and may leave it out.
 *
 *   prefetch  scope, robots
 *   fetch     validators (trust, before the request), http, midfetch (at
 *             the headers)
 *   digest    digest
 *   change    change
 *   extract   extract-headers, extract-html, extract-css, extract-feed
 *   write     warc-dns, warc
 *   post      digest-end and warc-late (with WARC on: a visit the walk
 *             left before write, its payload digest finished), robots-update,
 *             robots-sitemaps (the rules' Sitemap lines as links), outcome,
 *             revisit (the wait), extract-end (links dropped), finish (the
 *             crawl.log line, the URI and its links to the frontier),
 *             feed-hints (after finish: the rows exist)
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "procs.h"

typedef struct chain_row {
  kr_phase_t phase;
  const kr_processor_t *proc;
  /* 1: leave it out. NULL: data is the crawl, no filters. */
  int (*setup)(kr_crawl_t *c, kr_processor_t *p);
} chain_row_t;

static int html_only(kr_crawl_t *c, kr_processor_t *p) {
  p->ctype_re = c->re_html;
  return 0;
}

static int css_only(kr_crawl_t *c, kr_processor_t *p) {
  p->ctype_re = c->re_css;
  return 0;
}

static int feeds_only(kr_crawl_t *c, kr_processor_t *p) {
  p->ctype_re = c->re_feed;
  return 0;
}

static int warc_on(kr_crawl_t *c, kr_processor_t *p) {
  p->data = c->warc;
  return !c->warc;
}

static const chain_row_t chain_table[] = {
    {KR_PHASE_PREFETCH, &kr_proc_scope, NULL},
    {KR_PHASE_PREFETCH, &kr_proc_robots, NULL},
    {KR_PHASE_FETCH, &kr_proc_validators, NULL},
    {KR_PHASE_FETCH, &kr_proc_http, NULL},
    {KR_PHASE_FETCH, &kr_proc_midfetch, NULL},
    {KR_PHASE_DIGEST, &kr_proc_digest, NULL},
    {KR_PHASE_CHANGE, &kr_proc_change, NULL},
    {KR_PHASE_EXTRACT, &kr_proc_extract_headers, NULL},
    {KR_PHASE_EXTRACT, &kr_proc_extract_html, html_only},
    {KR_PHASE_EXTRACT, &kr_proc_extract_css, css_only},
    {KR_PHASE_EXTRACT, &kr_proc_extract_feed, feeds_only},
    {KR_PHASE_WRITE, &kr_proc_warc_dns, warc_on},
    {KR_PHASE_WRITE, &kr_proc_warc, warc_on},
    {KR_PHASE_POST, &kr_proc_digest_end, warc_on},
    {KR_PHASE_POST, &kr_proc_warc_late, warc_on},
    {KR_PHASE_POST, &kr_proc_robots_update, NULL},
    {KR_PHASE_POST, &kr_proc_robots_sitemaps, NULL},
    {KR_PHASE_POST, &kr_proc_outcome, NULL},
    {KR_PHASE_POST, &kr_proc_revisit, NULL},
    {KR_PHASE_POST, &kr_proc_extract_end, NULL},
    {KR_PHASE_POST, &kr_proc_finish, NULL},
    {KR_PHASE_POST, &kr_proc_feed_hints, NULL},
};

int kr__crawl_chain_build(kr_crawl_t *c) {
  KR_BUG_ON(ARRAY_SIZE(chain_table) > ARRAY_SIZE(c->procs));
  for (size_t i = 0; i < ARRAY_SIZE(chain_table); i++) {
    const chain_row_t *row = &chain_table[i];
    kr_processor_t *p = &c->procs[c->nprocs];
    *p = *row->proc;
    p->phase = row->phase;
    p->data = c;
    if (row->setup && row->setup(c, p)) continue;
    c->nprocs++;
    int rc = kr_chain_add(&c->chain, p);
    if (rc) return rc;
  }
  return kr_chain_build(&c->chain);
}
