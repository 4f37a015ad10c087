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

/* ---- the tables of KR_FIG_* rows (store, WARC, HTTP) ---- */

static size_t fig_json(kr_buf_t *out, size_t n, const char *key, int kind, uint64_t v) {
  if (!key) return n;
  kr_buf_printf(out, "%s\"%s\":", n ? "," : "", key);
  if (kind == KR_FIG_BOOL) kr_buf_append_str(out, v ? "true" : "false");
  else kr_buf_printf(out, "%" PRIu64, v);
  return n + 1;
}

static void fig_metric(kr_buf_t *out, const char *metric, const char *type, const char *help,
                       int kind, uint64_t v) {
  if (!metric) return;
  kr_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
  if (kind == KR_FIG_USEC) kr_buf_printf(out, "%s %.17g\n", metric, (double)v / 1e6);
  else kr_buf_printf(out, "%s %" PRIu64 "\n", metric, v);
}

#define FIG_V_(kind, value) ((kind) == KR_FIG_BOOL ? (uint64_t)!!(value) : (uint64_t)(value))
#define FIG_JSON_(key, value, kind, metric, type, help) \
  n = fig_json(out, n, key, kind, FIG_V_(kind, value));
#define FIG_METRIC_(key, value, kind, metric, type, help) \
  fig_metric(out, metric, type, help, kind, FIG_V_(kind, value));

size_t kr_store_figures_json(const kr_store_stats_t *s, kr_buf_t *out) {
  size_t n = 0;
  KR_STORE_FIGURES(FIG_JSON_)
  return n;
}

size_t kr_archive_figures_json(const kr_archive_stats_t *s, kr_buf_t *out) {
  size_t n = 0;
  KR_ARCHIVE_FIGURES(FIG_JSON_)
  return n;
}

void kr_store_figures_metrics(const kr_store_stats_t *s, kr_buf_t *out) {
  KR_STORE_FIGURES(FIG_METRIC_)
}

void kr_http_figures_metrics(const kr_http_stats_t *s, kr_buf_t *out) {
  KR_HTTP_FIGURES(FIG_METRIC_)
}

void kr_archive_figures_metrics(const kr_archive_stats_t *s, kr_buf_t *out) {
  KR_ARCHIVE_FIGURES(FIG_METRIC_)
  /* Not rows: one metric with a label per revisit profile, and the file
   * name as an info-style label, escaped (it holds the host name). */
  kr_buf_append_str(out, "# HELP kria_warc_revisits_total WARC revisit records by profile.\n"
                         "# TYPE kria_warc_revisits_total counter\n");
  kr_buf_printf(out, "kria_warc_revisits_total{profile=\"identical-payload-digest\"} %" PRIu64
                     "\nkria_warc_revisits_total{profile=\"server-not-modified\"} %" PRIu64 "\n",
                s->revisits_identical, s->revisits_not_modified + s->revisits_midfetch);
  kr_buf_append_str(out, "# HELP kria_warc_current_file The WARC file being written.\n"
                         "# TYPE kria_warc_current_file gauge\nkria_warc_current_file{file=\"");
  for (const char *p = s->current ? s->current : ""; *p; p++) {
    if (*p == '"' || *p == '\\') kr_buf_append(out, "\\", 1);
    if (*p == '\n') kr_buf_append(out, "\\n", 2);
    else kr_buf_append(out, p, 1);
  }
  kr_buf_printf(out, "\"} %d\n", s->current ? 1 : 0);
}
#undef FIG_V_
#undef FIG_JSON_
#undef FIG_METRIC_
