/*
 * Unit tests for the service's parts that need no running crawl: the
 * counters table (src/crawl/counters.h) as every surface renders it —
 * each row, with a value of its own, must appear in the /status "crawl"
 * object under its name, in /metrics with HELP, TYPE and its sample, and
 * in the end-of-run summary (which the text status repeats), so a surface
 * written by hand again fails here; the table's own rules (unique names,
 * counters end in _total, one value per summary fragment); the fields
 * by index; the legacy /status "adaptive" names; the figures tables of
 * the frontier, the store, the WARC writer and the HTTP client
 * (counterviews.h) in /status and /metrics; and the reload's refusal rule
 * (which keys a SIGHUP may change).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "counters.h"
#include "counterviews.h"
#include "crawl.h"
#include "service.h"

/* Row i's test value: distinct, and no row's digits inside another's. */
static uint64_t value_of(size_t i) { return 7000001 + 1000 * (uint64_t)i; }

static void fill(kr_crawl_stats_t *st) {
  memset(st, 0, sizeof *st);
  for (size_t i = 0; i < KR_CTR__N; i++) st->v[i] = value_of(i);
}

static void table_rules(void **state) {
  (void)state;
  for (size_t i = 0; i < KR_CTR__N; i++) {
    const kr_counter_def_t *d = &kr_counter_defs[i];
    assert_non_null(d->name);
    assert_non_null(d->help);
    assert_true(strlen(d->help) > 10);
    size_t n = strlen(d->metric);
    assert_true(strncmp(d->metric, "kria_", 5) == 0);
    assert_true(n > 6 && strcmp(d->metric + n - 6, "_total") == 0);
    const char *p = strstr(d->summary, "%s");
    assert_non_null(p);
    assert_null(strstr(p + 2, "%")); /* one value, nothing printf-like */
    assert_true(d->line >= 0 && d->line < KR_COUNTER_LINES);
    for (size_t j = 0; j < i; j++) {
      assert_string_not_equal(d->name, kr_counter_defs[j].name);
      assert_string_not_equal(d->metric, kr_counter_defs[j].metric);
    }
  }
}

static void every_row_in_json(void **state) {
  (void)state;
  kr_crawl_stats_t st;
  fill(&st);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 20);
  kr_counters_json(&st, &b);
  kr_buf_append(&b, "", 1);
  json_object *o = json_tokener_parse(b.data);
  assert_non_null(o);
  assert_int_equal(json_object_object_length(o), KR_CTR__N);
  for (size_t i = 0; i < KR_CTR__N; i++) {
    json_object *v;
    assert_true(json_object_object_get_ex(o, kr_counter_defs[i].name, &v));
    assert_int_equal((uint64_t)json_object_get_int64(v), value_of(i));
  }
  json_object_put(o);
  kr_buf_free(&b);
}

static void every_row_in_metrics(void **state) {
  (void)state;
  kr_crawl_stats_t st;
  fill(&st);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 20);
  kr_counters_metrics(&st, &b);
  kr_buf_append(&b, "", 1);
  for (size_t i = 0; i < KR_CTR__N; i++) {
    const kr_counter_def_t *d = &kr_counter_defs[i];
    char want[512];
    snprintf(want, sizeof want, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", d->metric,
             d->help, d->metric, d->metric, value_of(i));
    if (!strstr(b.data, want)) fail_msg("/metrics lacks %s", d->metric);
  }
  kr_buf_free(&b);
}

static void every_row_in_summary(void **state) {
  (void)state;
  kr_crawl_stats_t st;
  fill(&st);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 20);
  for (int line = 0; line < KR_COUNTER_LINES; line++) {
    kr_counters_summary(&st, line, &b);
    kr_buf_append(&b, "\n", 1);
  }
  kr_buf_append(&b, "", 1);
  for (size_t i = 0; i < KR_CTR__N; i++) {
    /* the fragment with its value in it */
    const kr_counter_def_t *d = &kr_counter_defs[i];
    char want[512], num[24];
    snprintf(num, sizeof num, "%" PRIu64, value_of(i));
    const char *p = strstr(d->summary, "%s");
    snprintf(want, sizeof want, "%.*s%s%s", (int)(p - d->summary), d->summary, num, p + 2);
    if (!strstr(b.data, want)) fail_msg("the summary lacks '%s'", want);
  }
  /* the lines as the logs and the tests read them */
  assert_non_null(strstr(b.data, "crawl: 7000001 URIs issued, 7001001 responses"));
  char rev[64];
  snprintf(rev, sizeof rev, "revisits: %" PRIu64 " changed, %" PRIu64 " unchanged (",
           value_of(KR_CTR_changes_found), value_of(KR_CTR_unchanged));
  assert_non_null(strstr(b.data, rev));
  kr_buf_free(&b);
}

static void by_index(void **state) {
  (void)state;
  kr_crawl_stats_t st;
  memset(&st, 0, sizeof st);
  st.issued = 9;
  st.waits_poisson = 5;
  assert_int_equal(st.v[KR_CTR_issued], 9);
  assert_int_equal(st.v[KR_CTR_waits_poisson], 5);
  assert_int_equal(sizeof st, KR_CTR__N * sizeof(uint64_t));
}

static void adaptive_names(void **state) {
  (void)state;
  kr_crawl_stats_t st;
  fill(&st);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  kr_counters_json_adaptive(&st, &b);
  kr_buf_append(&b, "", 1);
  json_object *o = json_tokener_parse(b.data), *v;
  assert_non_null(o);
  static const struct {
    const char *key;
    int ctr;
  } want[] = {{"changed", KR_CTR_changes_found}, {"unchanged", KR_CTR_unchanged},
              {"not_modified", KR_CTR_not_modified}, {"aborted", KR_CTR_midfetch_aborts},
              {"bytes_saved", KR_CTR_aborted_bytes_saved}, {"versions", KR_CTR_changed}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    assert_true(json_object_object_get_ex(o, want[i].key, &v));
    assert_int_equal((uint64_t)json_object_get_int64(v), value_of((size_t)want[i].ctr));
  }
  json_object_put(o);
  kr_buf_free(&b);
}

/* The frontier's table: every figure under its key in /status "frontier"
 * (then limit) and with its HELP, TYPE and sample in /metrics. */
static void frontier_figures(void **state) {
  (void)state;
  kr_frontier_stats_t fs;
  memset(&fs, 0, sizeof fs);
  uint64_t v = 9000001;
#define SET_(key, member, metric, type, help) fs.member = v, v += 1000;
  KR_FRONTIER_FIGURES(SET_)
#undef SET_
  fs.limit = "max-uris \"x\"";
  kr_buf_t j, m;
  kr_buf_init(&j, 1 << 16);
  kr_buf_init(&m, 1 << 16);
  kr_frontier_figures_json(&fs, &j);
  kr_buf_append(&j, "", 1);
  kr_frontier_figures_metrics(&fs, &m);
  kr_buf_append(&m, "", 1);
  json_object *o = json_tokener_parse(j.data), *x;
  assert_non_null(o);
  size_t n = 0;
#define CHECK_(key, member, metric, type, help)                                      \
  do {                                                                               \
    n++;                                                                             \
    assert_true(json_object_object_get_ex(o, #key, &x));                             \
    assert_int_equal((uint64_t)json_object_get_int64(x), (uint64_t)fs.member);       \
    char want[512];                                                                  \
    snprintf(want, sizeof want, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", metric, \
             help, metric, type, metric, (uint64_t)fs.member);                       \
    if (!strstr(m.data, want)) fail_msg("/metrics lacks %s", metric);               \
  } while (0);
  KR_FRONTIER_FIGURES(CHECK_)
#undef CHECK_
  assert_true(json_object_object_get_ex(o, "limit", &x));
  assert_string_equal(json_object_get_string(x), "max-uris \"x\"");
  assert_false(json_object_object_get_ex(o, "limit_until", &x)); /* 0: absent */
  assert_int_equal(json_object_object_length(o), n + 1);
  json_object_put(o);
  kr_buf_free(&j);
  kr_buf_free(&m);
}

/* ---- the KR_FIG_* tables (store, WARC writer, HTTP client) ---- */

/* Every byte of a statistics struct set so that each 64-bit field holds a
 * value of its own (below 2^56: JSON reads it back exactly). */
static void fill_bytes(void *p, size_t n) {
  uint8_t *b = p;
  for (size_t i = 0; i < n; i++) b[i] = i % 8 == 7 ? 0 : (uint8_t)(i * 37 + 11);
}

#define FIG_EXPECT_(kind, value) \
  ((kind) == KR_FIG_BOOL ? (uint64_t)!!(value) : (uint64_t)(value))

/* One row: under its key in o (when it has one), with its HELP, TYPE and
 * sample in metrics (when it has a metric). Returns 1 when keyed. */
static size_t check_fig(json_object *o, const char *metrics, const char *key, int kind,
                        uint64_t v, const char *metric, const char *type, const char *help) {
  json_object *x;
  if (!key && !metric) fail_msg("a row shown nowhere (help \"%s\")", help);
  if (key) {
    if (!json_object_object_get_ex(o, key, &x)) fail_msg("JSON lacks \"%s\"", key);
    if (kind == KR_FIG_BOOL) {
      assert_true(json_object_is_type(x, json_type_boolean));
      assert_int_equal(json_object_get_boolean(x), v);
    } else {
      assert_int_equal((uint64_t)json_object_get_int64(x), v);
    }
  }
  if (metric) {
    char want[512], sample[64];
    if (kind == KR_FIG_USEC) snprintf(sample, sizeof sample, "%.17g", (double)v / 1e6);
    else snprintf(sample, sizeof sample, "%" PRIu64, v);
    snprintf(want, sizeof want, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", metric, help, metric,
             type, metric, sample);
    if (!strstr(metrics, want)) fail_msg("/metrics lacks %s", metric);
  }
  return key ? 1 : 0;
}

static size_t count_of(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

#define FIG_CHECK_(key, value, kind, metric, type, help) \
  keyed += check_fig(o, m.data, key, kind, FIG_EXPECT_(kind, value), metric, type, help);

/* Renders a table's JSON members as an object, and its metrics. */
static json_object *members_object(kr_buf_t *j) {
  kr_buf_t o;
  kr_buf_init(&o, 1 << 16);
  kr_buf_append(&o, "{", 1);
  kr_buf_append(&o, j->data, j->len);
  kr_buf_append(&o, "}", 2); /* and the NUL */
  json_object *r = json_tokener_parse(o.data);
  kr_buf_free(&o);
  assert_non_null(r);
  return r;
}

static void store_figures(void **state) {
  (void)state;
  kr_store_stats_t st;
  fill_bytes(&st, sizeof st);
  const kr_store_stats_t *s = &st;
  kr_buf_t j, m;
  kr_buf_init(&j, 1 << 16);
  kr_buf_init(&m, 1 << 16);
  size_t n = kr_store_figures_json(s, &j);
  kr_store_figures_metrics(s, &m);
  kr_buf_append(&m, "", 1);
  json_object *o = members_object(&j);
  size_t keyed = 0, metrics = 0;
  KR_STORE_FIGURES(FIG_CHECK_)
#define M_(key, value, kind, metric, type, help) metrics += (metric) ? 1 : 0;
  KR_STORE_FIGURES(M_)
  assert_int_equal(n, keyed);
  assert_int_equal(json_object_object_length(o), keyed);
  assert_int_equal(count_of(m.data, "# HELP "), metrics); /* nothing but the rows */
  json_object_put(o);
  kr_buf_free(&j);
  kr_buf_free(&m);
}

static void archive_figures(void **state) {
  (void)state;
  kr_archive_stats_t st;
  fill_bytes(&st, sizeof st);
  st.current = "kria-\"x\".warc.gz.open";
  const kr_archive_stats_t *s = &st;
  kr_buf_t j, m;
  kr_buf_init(&j, 1 << 16);
  kr_buf_init(&m, 1 << 16);
  size_t n = kr_archive_figures_json(s, &j);
  kr_archive_figures_metrics(s, &m);
  kr_buf_append(&m, "", 1);
  json_object *o = members_object(&j);
  size_t keyed = 0, metrics = 0;
  KR_ARCHIVE_FIGURES(FIG_CHECK_)
  KR_ARCHIVE_FIGURES(M_)
  assert_int_equal(n, keyed);
  assert_int_equal(json_object_object_length(o), keyed);
  /* the rows, then the two with labels */
  assert_int_equal(count_of(m.data, "# HELP "), metrics + 2);
  char want[256];
  snprintf(want, sizeof want,
           "kria_warc_revisits_total{profile=\"identical-payload-digest\"} %" PRIu64 "\n",
           st.revisits_identical);
  assert_non_null(strstr(m.data, want));
  assert_non_null(strstr(m.data, "kria_warc_current_file{file=\"kria-\\\"x\\\".warc.gz.open\"} 1\n"));
  json_object_put(o);
  kr_buf_free(&j);
  kr_buf_free(&m);
}

static void http_figures(void **state) {
  (void)state;
  kr_http_stats_t st;
  fill_bytes(&st, sizeof st);
  const kr_http_stats_t *s = &st;
  kr_buf_t m;
  kr_buf_init(&m, 1 << 16);
  kr_http_figures_metrics(s, &m);
  kr_buf_append(&m, "", 1);
  json_object *o = NULL; /* no /status member */
  size_t keyed = 0, metrics = 0;
  KR_HTTP_FIGURES(FIG_CHECK_)
  KR_HTTP_FIGURES(M_)
#undef M_
  assert_int_equal(keyed, 0);
  assert_int_equal(count_of(m.data, "# HELP "), metrics);
  /* full handshakes are those that did not resume */
  st.tls.handshakes = 5;
  st.tls.resumed = 3;
  kr_buf_reset(&m);
  kr_http_figures_metrics(s, &m);
  kr_buf_append(&m, "", 1);
  assert_non_null(strstr(m.data, "\nkria_tls_handshakes_full_total 2\n"));
  assert_non_null(strstr(m.data, "\nkria_tls_handshakes_resumed_total 3\n"));
  kr_buf_free(&m);
}

static void reload_rules(void **state) {
  (void)state;
  /* live: seeds, scope, per-host politeness and robots, the token */
  assert_true(kr__service_key_is_live(KR_CFG_CRAWL_SEEDS));
  assert_true(kr__service_key_is_live(KR_CFG_SCOPE_MODE));
  assert_true(kr__service_key_is_live(KR_CFG_POLITENESS_MIN_DELAY));
  assert_true(kr__service_key_is_live(KR_CFG_ROBOTS_OBEY));
  assert_true(kr__service_key_is_live(KR_CFG_STATUS_TOKEN));
  assert_true(kr__service_key_is_live(KR_CFG_HTTP_CONDITIONAL_REQUESTS));
  /* a restart: the state directory, the HTTP client, queue assignment,
   * the status address */
  assert_false(kr__service_key_is_live(KR_CFG_CRAWL_STATE_DIR));
  assert_false(kr__service_key_is_live(KR_CFG_HTTP_TIMEOUT_CONNECT));
  assert_false(kr__service_key_is_live(KR_CFG_POLITENESS_QUEUE_ASSIGNMENT));
  assert_false(kr__service_key_is_live(KR_CFG_STATUS_LISTEN));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(table_rules),          cmocka_unit_test(every_row_in_json),
      cmocka_unit_test(every_row_in_metrics), cmocka_unit_test(every_row_in_summary),
      cmocka_unit_test(by_index),             cmocka_unit_test(adaptive_names),
      cmocka_unit_test(frontier_figures),     cmocka_unit_test(store_figures),
      cmocka_unit_test(archive_figures),      cmocka_unit_test(http_figures),
      cmocka_unit_test(reload_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
