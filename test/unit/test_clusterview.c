/* The cluster's snapshot (crawl/clusterview.h) and its text and JSON
 * (service/clusterpage.h), as `kria status --cluster` and /cluster.json
 * print them: the commands asked per member, replies of every shape
 * taken (a heartbeat with an unknown field, an error for a stream without
 * its group, no reply at all), absent figures as "-" and null, the totals
 * over the members seen, the members missing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clusterpage.h"
#include "clusterview.h"
#include "kria/clustermove.h"
#include "kria/config.h"
#include "kria/error.h"

static kr_config_t *cfg_of(const char *text) {
  kr_config_t *cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(cfg, "test", text, strlen(text)), 0);
  assert_int_equal(kr_config_finish(cfg), 0);
  return cfg;
}

static void view_of(kr_clusterview_t *v) {
  kr_config_t *cfg = cfg_of("[cluster]\nredis = 127.0.0.1:6379\nnode = b\nnodes = a, b, c\n"
                            "prefix = p.1\n");
  assert_int_equal(kr_clusterview_init(v, cfg), 0);
  kr_config_free(cfg);
}

/* replies built by hand, as hiredis hands them over */
static redisReply *str(const char *s) {
  redisReply *r = calloc(1, sizeof *r);
  r->type = REDIS_REPLY_STRING;
  r->str = (char *)s;
  r->len = strlen(s);
  return r;
}
static redisReply *num(long long n) {
  redisReply *r = calloc(1, sizeof *r);
  r->type = REDIS_REPLY_INTEGER;
  r->integer = n;
  return r;
}
static redisReply *arr(size_t n, redisReply **e) {
  redisReply *r = calloc(1, sizeof *r);
  r->type = REDIS_REPLY_ARRAY;
  r->elements = n;
  r->element = e;
  return r;
}
static void reply_free(redisReply *r) {
  for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) reply_free(r->element[i]);
  if (r->type == REDIS_REPLY_ARRAY) free(r->element);
  free(r);
}

static void no_cluster_refused(void **state) {
  (void)state;
  kr_config_t *cfg = cfg_of("[crawl]\n");
  kr_clusterview_t v;
  assert_int_equal(kr_clusterview_init(&v, cfg), KR_EINVAL);
  kr_clusterview_free(&v);
  kr_config_free(cfg);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  kr_clusterpage_json(NULL, 0, &b);
  assert_string_equal(b.data, "{\"on\":false}");
  kr_buf_free(&b);
}

static void commands(void **state) {
  (void)state;
  kr_clusterview_t v;
  view_of(&v);
  assert_int_equal(v.n, 3);
  const char *argv[4];
  kr_clusterview_bufs_t bufs;
  assert_int_equal(kr_clusterview_cmd(&v, 2, 0, argv, bufs), 2);
  assert_string_equal(argv[0], "HGETALL");
  assert_string_equal(argv[1], "p.1:member:c");
  assert_int_equal(kr_clusterview_cmd(&v, 0, 1, argv, bufs), 2);
  assert_string_equal(argv[0], "XLEN");
  assert_string_equal(argv[1], "p.1:links:a");
  assert_int_equal(kr_clusterview_cmd(&v, 1, 2, argv, bufs), 3);
  assert_string_equal(argv[0], "XPENDING");
  assert_string_equal(argv[1], "p.1:links:b");
  assert_string_equal(argv[2], "p.1"); /* the group */
  kr_clusterview_free(&v);
}

/* after `kria cluster rebalance` the members are Redis's list, not
 * cluster.nodes': the readers ask for the new ones */
static void members_replaced(void **state) {
  (void)state;
  kr_clusterview_t v;
  view_of(&v);
  kr_cluster_members_t ms = {0};
  assert_int_equal(kr_cluster_members_parse(&ms, "a,c,d,e"), 0);
  kr_clusterview_set_members(&v, &ms);
  kr_cluster_members_free(&ms);
  assert_int_equal(v.n, 4);
  assert_string_equal(v.m[3].name, "e");
  assert_int_equal(v.m[3].at, -1);
  const char *argv[4];
  kr_clusterview_bufs_t bufs;
  assert_int_equal(kr_clusterview_cmd(&v, 2, 0, argv, bufs), 2);
  assert_string_equal(argv[1], "p.1:member:d");
  kr_clusterview_free(&v);
}

/* a and b seen, c not (no heartbeat, no group on its stream) */
static void fill(kr_clusterview_t *v) {
  static const char *const beat_a[] = {"at", "9000", "fetched", "10", "hosts", "2", "sent", "5",
                                       "received", "3", "outbox", "1", "future", "7"};
  static const char *const beat_b[] = {"at", "9500", "fetched", "4", "hosts", "1", "sent", "0",
                                       "received", "2", "outbox", "0", "held", "1"};
  const char *const *beats[] = {beat_a, beat_b};
  for (int i = 0; i < 2; i++) {
    redisReply **e = calloc(14, sizeof *e);
    for (int k = 0; k < 14; k++) e[k] = str(beats[i][k]);
    redisReply *hb = arr(14, e);
    kr_clusterview_take(&v->m[i], 0, hb);
    reply_free(hb);
    redisReply *xl = num(i ? 0 : 6);
    kr_clusterview_take(&v->m[i], 1, xl);
    reply_free(xl);
    redisReply **pe = calloc(4, sizeof *pe);
    pe[0] = num(i ? 0 : 2), pe[1] = str("1-0"), pe[2] = str("2-0"), pe[3] = arr(0, NULL);
    redisReply *xp = arr(4, pe);
    kr_clusterview_take(&v->m[i], 2, xp);
    reply_free(xp);
  }
  redisReply *none = arr(0, NULL); /* HGETALL of a key gone */
  kr_clusterview_take(&v->m[2], 0, none);
  reply_free(none);
  redisReply *zero = num(0);
  kr_clusterview_take(&v->m[2], 1, zero);
  reply_free(zero);
  redisReply *err = calloc(1, sizeof *err);
  err->type = REDIS_REPLY_ERROR;
  err->str = (char *)"NOGROUP No such key";
  kr_clusterview_take(&v->m[2], 2, err);
  free(err);
  kr_clusterview_take(&v->m[1], 1, NULL); /* no reply: unknown */
  v->taken = 9800;
}

static void json_figures(void **state) {
  (void)state;
  kr_clusterview_t v;
  view_of(&v);
  fill(&v);
  assert_int_equal(kr_clusterview_seen(&v), 2);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  kr_clusterpage_json(&v, 10000, &b);
  json_object *o = json_tokener_parse(b.data);
  assert_non_null(o);
  json_object *x;
#define GET(obj, key) (assert_true(json_object_object_get_ex((obj), (key), &x)), x)
  assert_true(json_object_get_boolean(GET(o, "on")));
  assert_string_equal(json_object_get_string(GET(o, "prefix")), "p.1");
  assert_string_equal(json_object_get_string(GET(o, "node")), "b");
  assert_true(json_object_get_boolean(GET(o, "redis_up")));
  assert_int_equal(json_object_get_int(GET(o, "taken_ms_ago")), 200);
  assert_int_equal(json_object_get_int(GET(o, "seen")), 2);
  json_object *missing = GET(o, "missing");
  assert_int_equal(json_object_array_length(missing), 1);
  assert_string_equal(json_object_get_string(json_object_array_get_idx(missing, 0)), "c");
  json_object *ms = GET(o, "members");
  assert_int_equal(json_object_array_length(ms), 3);
  json_object *a = json_object_array_get_idx(ms, 0), *mb = json_object_array_get_idx(ms, 1),
              *c = json_object_array_get_idx(ms, 2);
  assert_string_equal(json_object_get_string(GET(a, "node")), "a");
  assert_int_equal(json_object_get_int(GET(a, "seen_ms_ago")), 1000);
  assert_int_equal(json_object_get_int(GET(a, "fetched")), 10);
  assert_int_equal(json_object_get_int(GET(a, "stream")), 6);
  assert_int_equal(json_object_get_int(GET(a, "pending")), 2);
  assert_true(json_object_is_type(GET(a, "held"), json_type_null)); /* not in its heartbeat */
  assert_false(json_object_object_get_ex(a, "future", NULL));      /* unknown: left out */
  assert_true(json_object_is_type(GET(mb, "stream"), json_type_null)); /* no reply */
  assert_int_equal(json_object_get_int(GET(mb, "held")), 1);
  assert_true(json_object_is_type(GET(c, "seen_ms_ago"), json_type_null));
  assert_true(json_object_is_type(GET(c, "fetched"), json_type_null));
  assert_int_equal(json_object_get_int(GET(c, "stream")), 0);
  assert_true(json_object_is_type(GET(c, "pending"), json_type_null)); /* NOGROUP */
  json_object *t = GET(o, "totals");
  assert_int_equal(json_object_get_int(GET(t, "members")), 3);
  assert_int_equal(json_object_get_int(GET(t, "fetched")), 14);
  assert_int_equal(json_object_get_int(GET(t, "sent")), 5);
  assert_int_equal(json_object_get_int(GET(t, "received")), 5);
  assert_int_equal(json_object_get_int(GET(t, "outbox")), 1);
  assert_int_equal(json_object_get_int(GET(t, "stream")), 6);
  assert_int_equal(json_object_get_int(GET(t, "pending")), 2);
#undef GET
  json_object_put(o);
  kr_buf_free(&b);
  kr_clusterview_free(&v);
}

static void text_table(void **state) {
  (void)state;
  kr_clusterview_t v;
  view_of(&v);
  fill(&v);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  kr_clusterpage_text(&v, 10000, &b);
  assert_non_null(strstr(b.data, "member                 seen   fetched  hosts      uris    queued     sent "
                                 "received    acked  outbox held  stream pending\n"));
  assert_non_null(strstr(b.data, "\na                 1.0 s ago        10      2         -         -        5 "
                                 "       3        -       1    -       6       2\n"));
  assert_non_null(strstr(b.data, "\nc                  not seen         -      -"));
  assert_non_null(strstr(b.data, "\ncluster p.1 on Redis 127.0.0.1:6379: 3 members, 2 seen in the last 10 s\n"));
  kr_buf_free(&b);
  kr_clusterview_free(&v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(no_cluster_refused),
      cmocka_unit_test(commands),
      cmocka_unit_test(members_replaced),
      cmocka_unit_test(json_figures),
      cmocka_unit_test(text_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
