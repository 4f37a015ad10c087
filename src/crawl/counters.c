/*
 * The counters table's rows (counters.h) and the end-of-run summary made
 * from them; src/service/counterviews.c renders the same rows for
 * /status and /metrics.
 */
#include "counters.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "crawl.h"

const kr_counter_def_t kr_counter_defs[KR_CTR__N] = {
#define DEF_(n, m, u, h, l, s) \
  [KR_CTR_##n] = {.name = #n, .metric = m, .help = h, .summary = s, .unit = u, .line = l},
    KR_CRAWL_COUNTERS(DEF_)
#undef DEF_
};

void kr_counters_summary(const kr_crawl_stats_t *st, int line, kr_buf_t *out) {
  for (size_t i = 0; i < KR_CTR__N; i++) {
    const kr_counter_def_t *d = &kr_counter_defs[i];
    if (d->line != line) continue;
    const char *p = strstr(d->summary, "%s");
    if (!p) continue; /* every row has one (test_service checks) */
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, st->v[i]);
    kr_buf_append(out, d->summary, (size_t)(p - d->summary));
    kr_buf_append_str(out, num);
    kr_buf_append_str(out, p + 2);
  }
}
