/*
 * The counters table rendered for /status and /metrics (counterviews.h).
 */
#include "counterviews.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "status.h"

void kr_counters_json(const kr_crawl_stats_t *st, kr_buf_t *out) {
  kr_buf_append(out, "{", 1);
  for (size_t i = 0; i < KR_CTR__N; i++)
    kr_buf_printf(out, "%s\"%s\":%" PRIu64, i ? "," : "", kr_counter_defs[i].name, st->v[i]);
  kr_buf_append(out, "}", 1);
}

/* /status "adaptive" predates the table: its keys are other names of rows
 * ("revisits", the same figure as "unchanged", was dropped). */
static const struct {
  const char *key;
  int ctr;
} adaptive_keys[] = {
    {"changed", KR_CTR_changes_found},       {"unchanged", KR_CTR_unchanged},
    {"not_modified", KR_CTR_not_modified},   {"aborted", KR_CTR_midfetch_aborts},
    {"bytes_saved", KR_CTR_aborted_bytes_saved}, {"versions", KR_CTR_changed},
};

void kr_counters_json_adaptive(const kr_crawl_stats_t *st, kr_buf_t *out) {
  kr_buf_append(out, "{", 1);
  for (size_t i = 0; i < ARRAY_SIZE(adaptive_keys); i++)
    kr_buf_printf(out, "%s\"%s\":%" PRIu64, i ? "," : "", adaptive_keys[i].key,
                  st->v[adaptive_keys[i].ctr]);
  kr_buf_append(out, "}", 1);
}

void kr_counters_metrics(const kr_crawl_stats_t *st, kr_buf_t *out) {
  for (size_t i = 0; i < KR_CTR__N; i++) {
    const kr_counter_def_t *d = &kr_counter_defs[i];
    kr_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", d->metric, d->help,
                  d->metric, d->metric, st->v[i]);
  }
}

void kr_frontier_figures_json(const kr_frontier_stats_t *fs, kr_buf_t *out) {
  kr_buf_append(out, "{", 1);
#define JSON_(key, member, metric, type, help) \
  kr_buf_printf(out, "\"" #key "\":%" PRIu64 ",", (uint64_t)fs->member);
  KR_FRONTIER_FIGURES(JSON_)
#undef JSON_
  kr_buf_append_str(out, "\"limit\":");
  if (fs->limit) kr_status_json_str(out, fs->limit, strlen(fs->limit));
  else kr_buf_append_str(out, "null");
  if (fs->limit_until) kr_buf_printf(out, ",\"limit_until\":%" PRIu64, fs->limit_until);
  kr_buf_append(out, "}", 1);
}

void kr_frontier_figures_metrics(const kr_frontier_stats_t *fs, kr_buf_t *out) {
#define METRIC_(key, member, metric, type, help)                                           \
  kr_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", metric, help, metric, \
                type, metric, (uint64_t)fs->member);
  KR_FRONTIER_FIGURES(METRIC_)
#undef METRIC_
}
