/*
 * The crawl's counters (src/crawl/counters.h) as each surface shows them,
 * generated from the one table: the "crawl" object of /status, the lines
 * of /metrics (the summary lines are the crawl's: kr_counters_summary in
 * counters.h). Nothing here lists a counter by hand.
 */
#ifndef KRIA_COUNTERVIEWS_H
#define KRIA_COUNTERVIEWS_H

#include <stddef.h>

#include "crawl.h"
#include "kria/buf.h"

/* {"issued":N,...}: every counter under its name. */
void kr_counters_json(const kr_crawl_stats_t *st, kr_buf_t *out);
/* Legacy members of /status "adaptive", each another name of one row:
 * {"changed":N,...}. */
void kr_counters_json_adaptive(const kr_crawl_stats_t *st, kr_buf_t *out);
/* # HELP, # TYPE and the sample of every counter (Prometheus text). */
void kr_counters_metrics(const kr_crawl_stats_t *st, kr_buf_t *out);
#endif
