/*
 * The chain of the crawl in one table: every processor with its phase,
 * in the order it runs (within a phase, the order of the rows; the chain
 * keeps it, chain.h). Stream hooks run in the same order, so the
 * validators' verdict at the headers (midfetch) comes before the digest
 * reads it. A row's setup gives the processor what it needs from the
 * crawl (filters, the WARC writer) and may leave it out; a module that
 * keeps something for the whole crawl (the robots.txt rules cache, the
 * via URLs, the per-host revisit plans) has it made by its row's open and
 * released by its close, so the crawl itself never calls a processor
 * module.
 *
 *   prefetch  scope, robots
 *   fetch     validators (trust, before the request), http, midfetch (at
 *             the headers)
 *   digest    digest
 *   change    change
 *   extract   extract-headers, extract-html, extract-css, extract-feed
 *   write     xdedup (cluster.shared-dedup: the shared digest index asked,
 *             the walk waits for Redis), warc-dns, warc
 *   post      digest-end and warc-late (with WARC on: a visit the walk
 *             left before write, its payload digest finished), robots-update,
 *             robots-sitemaps (the rules' Sitemap lines as links), outcome,
 *             revisit (the wait), extract-end (links dropped), finish (the
 *             crawl.log line, the URI and its links to the frontier),
 *             feed-hints (after finish: the rows exist)
 */
#include <string.h>

#include "clusterdedup.h"
#include "crawl.h"
#include "internal.h"
#include "procs.h"

typedef struct chain_row {
  kr_phase_t phase;
  const kr_processor_t *proc;
  /* 1: leave it out. NULL: data is the crawl, no filters. */
  int (*setup)(kr_crawl_t *c, kr_processor_t *p);
  /* the module's state for the whole crawl: made when the chain is
   * built, released when the crawl is freed (also after a failed start:
   * close takes what open left, maybe nothing) */
  void (*open)(kr_crawl_t *c);
  void (*close)(kr_crawl_t *c);
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
    {KR_PHASE_PREFETCH, &kr_proc_scope, NULL, NULL, NULL},
    {KR_PHASE_PREFETCH, &kr_proc_robots, NULL, kr__rulecache_open, kr__rulecache_close},
    {KR_PHASE_FETCH, &kr_proc_validators, NULL, NULL, NULL},
    {KR_PHASE_FETCH, &kr_proc_http, NULL, NULL, NULL},
    {KR_PHASE_FETCH, &kr_proc_midfetch, NULL, NULL, NULL},
    {KR_PHASE_DIGEST, &kr_proc_digest, NULL, NULL, NULL},
    {KR_PHASE_CHANGE, &kr_proc_change, NULL, NULL, NULL},
    {KR_PHASE_EXTRACT, &kr_proc_extract_headers, NULL, NULL, NULL},
    {KR_PHASE_EXTRACT, &kr_proc_extract_html, html_only, NULL, NULL},
    {KR_PHASE_EXTRACT, &kr_proc_extract_css, css_only, NULL, NULL},
    {KR_PHASE_EXTRACT, &kr_proc_extract_feed, feeds_only, NULL, NULL},
    {KR_PHASE_WRITE, &kr_proc_xdedup, kr__crawl_xdedup_setup, NULL, kr__crawl_xdedup_close},
    {KR_PHASE_WRITE, &kr_proc_warc_dns, warc_on, NULL, NULL},
    {KR_PHASE_WRITE, &kr_proc_warc, warc_on, NULL, NULL},
    {KR_PHASE_POST, &kr_proc_digest_end, warc_on, NULL, NULL},
    {KR_PHASE_POST, &kr_proc_warc_late, warc_on, NULL, NULL},
    {KR_PHASE_POST, &kr_proc_robots_update, NULL, NULL, NULL},
    {KR_PHASE_POST, &kr_proc_robots_sitemaps, NULL, NULL, NULL},
    {KR_PHASE_POST, &kr_proc_outcome, NULL, NULL, NULL},
    {KR_PHASE_POST, &kr_proc_revisit, NULL, NULL, kr__revisit_free},
    {KR_PHASE_POST, &kr_proc_extract_end, NULL, NULL, NULL},
    {KR_PHASE_POST, &kr_proc_finish, NULL, NULL, kr__via_free},
    {KR_PHASE_POST, &kr_proc_feed_hints, NULL, NULL, NULL},
};

int kr__crawl_chain_build(kr_crawl_t *c) {
  KR_BUG_ON(ARRAY_SIZE(chain_table) > ARRAY_SIZE(c->procs));
  for (size_t i = 0; i < ARRAY_SIZE(chain_table); i++) {
    const chain_row_t *row = &chain_table[i];
    if (row->open) row->open(c);
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

void kr__crawl_chain_close(kr_crawl_t *c) {
  for (size_t i = 0; i < ARRAY_SIZE(chain_table); i++)
    if (chain_table[i].close) chain_table[i].close(c);
}
