/* The frontier on a virtual clock over a real SQLite store in a temporary
 * directory: derived host states, the valence-2 slot timing of thesis
 * 6.2.1, add-never-later and directive raises, ready order by ready time
 * and round-robin fairness over 1,000 hosts, politeness clamp and
 * Crawl-delay cap, every outcome, retries, back-off growth/cap/reset,
 * prerequisite gating, dedupe in memory (the store never sees a
 * duplicate), commit boundaries (a completion and its links together),
 * recovery after a crash, snapshot "done", limits, queue assignment,
 * Retry-After parsing, reports. kr_frontier_validate() runs after the
 * steps that change state. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "frontier.h"
#include "kria/error.h"
#include "kria/fp.h"
#include "log.h"
#include "store.h"
#include "timer.h"
#include "helpers.h"
#include <uv.h>

#define T0 UINT64_C(1700000000000)
#define SEC 1000u

static char tmpdir[256];
static char sdir[300];
static kr_clock_t clk;
static kr_timers_t timers;
static kr_frontier_t *F;
static int ready_calls;

static uint64_t now(void) { return kr_clock_now_ms(&clk); }
static void adv(uint64_t ms) { kr_timers_advance(&timers, ms); }

static void on_ready(kr_frontier_t *f, void *ud) {
  (void)f;
  (void)ud;
  ready_calls++;
}

static void fopen_with(const kr_frontier_opts_t *o) {
  char err[512] = "";
  int rc = kr_frontier_open(sdir, o, &timers, &F, err, sizeof(err));
  if (rc) fail_msg("open: %d %s", rc, err);
  kr_frontier_set_on_ready(F, on_ready, NULL);
}

static kr_frontier_opts_t defaults(void) {
  kr_frontier_opts_t o;
  kr_frontier_opts_default(&o);
  return o;
}

static int setup(void **state) {
  (void)state;
  if (th_tmpdir(tmpdir, sizeof tmpdir, "test-frontier")) return -1;
  snprintf(sdir, sizeof(sdir), "%s/state", tmpdir);
  kr_log_level = 2;
  kr_clock_init_virtual(&clk, T0);
  kr_timers_init(&timers, NULL, &clk);
  ready_calls = 0;
  F = NULL;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (F) kr_frontier_close(F);
  F = NULL;
  kr_timers_close(&timers, NULL);
  th_rmtree(tmpdir);
  return 0;
}

static void valid(void) {
  int rc = kr_frontier_validate(F, now());
  if (rc) fail_msg("kr_frontier_validate failed (see log)");
}

static int add_at(const char *url, int dir, uint64_t next_at, unsigned flags, const char *hop) {
  kr_link_t l = {.url = url, .url_len = strlen(url), .hop_path = hop,
                 .hop_len = hop ? strlen(hop) : 0, .directive = dir,
                 .next_at = next_at, .flags = flags};
  return kr_frontier_add(F, &l, now());
}

static int add(const char *url) { return add_at(url, 0, 0, 0, "L"); }

static kr_curi_t *next(void) {
  kr_curi_t *c = NULL;
  int rc = kr_frontier_next(F, now(), &c);
  assert_true(rc >= 0);
  assert_true((rc == 1) == (c != NULL));
  return c;
}

static void finish(kr_curi_t *c, kr_outcome_kind_t kind, uint64_t fetch_ms) {
  kr_outcome_t o = {.kind = kind, .status = 200, .fetch_ms = fetch_ms, .bytes = 100};
  assert_int_equal(kr_frontier_finished(F, c, &o, NULL, 0, now()), 0);
}

static kr_host_report_t host(const char *key) {
  kr_hostq_t *h = kr_frontier_host_lookup(F, key, strlen(key));
  if (!h) fail_msg("no host %s", key);
  kr_host_report_t r;
  kr_frontier_host_report(F, h, now(), &r);
  return r;
}

static kr_uri_row_t row_of(const char *url) {
  kr_uri_row_t r;
  int rc = kr_store_uri_get(kr_frontier_store(F), kr_fp(url, strlen(url)), &r);
  if (rc != 1) fail_msg("no row for %s", url);
  return r;
}

/* Fixed politeness: every delay is exactly d ms. */
static kr_frontier_opts_t fixed_delay(uint64_t d) {
  kr_frontier_opts_t o = defaults();
  o.min_delay_ms = d;
  o.max_delay_ms = d;
  return o;
}

/* ---- states -------------------------------------------------------------- */

static void state_derivation(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(2 * SEC);
  fopen_with(&o);
  assert_int_equal(add_at("http://h.test/a", 0, T0 + 10 * SEC, 0, ""), 1);
  valid();
  kr_host_report_t r = host("h.test");
  assert_int_equal(r.state, KR_HOSTQ_SNOOZED);
  assert_true(r.ready_at == T0 + 10 * SEC);
  assert_null(next());
  adv(9999);
  assert_int_equal(host("h.test").state, KR_HOSTQ_SNOOZED);
  assert_int_equal(ready_calls, 0);
  assert_null(next());
  adv(1); /* the state changes by itself as time passes */
  assert_int_equal(host("h.test").state, KR_HOSTQ_READY);
  assert_int_equal(ready_calls, 1);
  valid();
  kr_curi_t *c = next();
  assert_non_null(c);
  assert_string_equal(c->url, "http://h.test/a");
  assert_int_equal(c->overdue_ms, 0);
  assert_int_equal(host("h.test").state, KR_HOSTQ_BUSY);
  assert_int_equal(host("h.test").in_flight, 1);
  valid();
  finish(c, KR_OUTCOME_DISREGARDED, 0);
  /* Its only URI is never due again: the queue is empty. */
  assert_int_equal(host("h.test").state, KR_HOSTQ_EMPTY);
  assert_true(host("h.test").ready_at == KR_NEVER);
  valid();
  /* A new URI wakes it; the disregarded one cost no politeness delay. */
  add("http://h.test/b");
  assert_int_equal(host("h.test").state, KR_HOSTQ_READY);
  adv(0);
  c = next();
  assert_non_null(c);
  adv(3 * SEC);
  c->issued_at = now();
  finish(c, KR_OUTCOME_SUCCESS, 10);
  /* Only URI revisited in 3 days: snoozed until then, not until +2 s. */
  r = host("h.test");
  assert_int_equal(r.state, KR_HOSTQ_SNOOZED);
  assert_true(r.ready_at == now() + o.default_wait_ms);
  valid();
}

/* Thesis 6.2.1: with valence 2, each slot keeps its own next-free time. */
static void valence_two_slots(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(1 * SEC);
  o.host_valence = 2;
  fopen_with(&o);
  const char *u[] = {"http://v.test/1", "http://v.test/2", "http://v.test/3",
                     "http://v.test/4", "http://v.test/5"};
  for (int i = 0; i < 5; i++) add_at(u[i], 0, T0 + (uint64_t)i, 0, "");
  adv(10);
  kr_curi_t *a = next();
  assert_non_null(a);
  /* The second slot is free too, but the host goes through the wheel
   * again (to the back of the ready list): one more wheel run. */
  assert_null(next());
  adv(0);
  kr_curi_t *b = next();
  assert_non_null(b);
  assert_int_equal(host("v.test").state, KR_HOSTQ_BUSY);
  assert_null(next());
  valid();
  uint64_t t0 = now();
  finish(a, KR_OUTCOME_SUCCESS, 0); /* slot of a: free at t0 + 1 s */
  kr_host_report_t r = host("v.test");
  assert_int_equal(r.state, KR_HOSTQ_SNOOZED);
  assert_true(r.ready_at == t0 + SEC);
  adv(500);
  finish(b, KR_OUTCOME_SUCCESS, 0); /* half way: nothing changes */
  r = host("v.test");
  assert_int_equal(r.state, KR_HOSTQ_SNOOZED);
  assert_true(r.ready_at == t0 + SEC);
  valid();
  adv(499);
  assert_null(next());
  adv(1);
  assert_int_equal(host("v.test").state, KR_HOSTQ_READY);
  kr_curi_t *c = next();
  assert_non_null(c);
  assert_non_null(c);
  /* One slot used again; the other frees at t0 + 1.5 s. */
  r = host("v.test");
  assert_int_equal(r.state, KR_HOSTQ_SNOOZED);
  assert_true(r.ready_at == t0 + 1500);
  assert_null(next());
  adv(499);
  assert_null(next());
  adv(1);
  kr_curi_t *d = next();
  assert_non_null(d);
  assert_int_equal(host("v.test").state, KR_HOSTQ_BUSY);
  valid();
  finish(c, KR_OUTCOME_SUCCESS, 0);
  finish(d, KR_OUTCOME_SUCCESS, 0);
  valid();
}

/* ---- add ----------------------------------------------------------------- */

static void add_never_later_and_raise(void **state) {
  (void)state;
  kr_frontier_opts_t o = defaults();
  o.preference_embed_hops = 1;
  fopen_with(&o);
  const char *a = "http://r.test/a", *b = "http://r.test/b";
  assert_int_equal(add_at(a, 0, T0 + 1000, 0, "L"), 1);
  assert_int_equal(add_at(b, 0, T0 + 2000, 0, "L"), 1);
  /* Later: never. */
  assert_int_equal(add_at(a, 0, T0 + 5000, KR_LINK_RESCHEDULE, "L"), 0);
  assert_true(row_of(a).next_at == T0 + 1000);
  /* Earlier without asking: unchanged; asking: moved. */
  assert_int_equal(add_at(a, 0, T0 + 200, 0, "L"), 0);
  assert_true(row_of(a).next_at == T0 + 1000);
  assert_int_equal(add_at(a, 0, T0 + 200, KR_LINK_RESCHEDULE, "L"), 0);
  assert_true(row_of(a).next_at == T0 + 200);
  valid();
  /* A higher directive for a link due later is not taken: it would put b
   * before due URIs while not due itself. */
  assert_int_equal(add_at(b, KR_DIRECTIVE_HIGH, T0 + 9000, 0, "L"), 0);
  assert_int_equal(row_of(b).directive, KR_DIRECTIVE_NORMAL);
  /* Due now: raised, and brought forward to now; b jumps ahead of a. */
  assert_int_equal(add_at(b, KR_DIRECTIVE_HIGH, 0, 0, "L"), 0);
  kr_uri_row_t rb = row_of(b);
  assert_int_equal(rb.directive, KR_DIRECTIVE_HIGH);
  assert_true(rb.next_at == T0);
  assert_int_equal(add_at(b, KR_DIRECTIVE_MEDIUM, 0, 0, "L"), 0);
  assert_int_equal(row_of(b).directive, KR_DIRECTIVE_HIGH); /* never lowered */
  valid();
  /* An embed within preference-embed-hops is MEDIUM, two hops is not. */
  assert_int_equal(add_at("http://r.test/e1.png", 0, 0, 0, "LE"), 1);
  assert_int_equal(row_of("http://r.test/e1.png").directive, KR_DIRECTIVE_MEDIUM);
  assert_int_equal(add_at("http://r.test/e2.png", 0, 0, 0, "LEE"), 1);
  assert_int_equal(row_of("http://r.test/e2.png").directive, KR_DIRECTIVE_NORMAL);
  adv(3000);
  const char *order[] = {b, "http://r.test/e1.png", "http://r.test/e2.png", a};
  for (int i = 0; i < 4; i++) {
    kr_curi_t *c = next();
    if (!c) {
      adv(0);
      c = next();
    }
    assert_non_null(c);
    assert_string_equal(c->url, order[i]);
    assert_int_equal(c->overdue_ms, now() - c->next_at);
    if (i == 0) assert_int_equal(c->overdue_ms, 3000);
    /* finished URIs return to NORMAL */
    finish(c, KR_OUTCOME_SUCCESS, 0);
    assert_int_equal(row_of(order[i]).directive, KR_DIRECTIVE_NORMAL);
    adv(5000);
  }
  valid();
}

static void longest_ready_first(void **state) {
  (void)state;
  fopen_with(NULL);
  add_at("http://a.test/", 0, T0 + 300, 0, "");
  add_at("http://b.test/", 0, T0 + 100, 0, "");
  add_at("http://c.test/", 0, T0 + 200, 0, "");
  add_at("http://d.test/", 0, T0 + 200, 0, ""); /* same time as c: FIFO */
  adv(1000);
  assert_int_equal(ready_calls, 1); /* edge: the list turned non-empty once */
  const char *want[] = {"http://b.test/", "http://c.test/", "http://d.test/",
                        "http://a.test/"};
  for (int i = 0; i < 4; i++) {
    kr_curi_t *c = next();
    assert_non_null(c);
    assert_string_equal(c->url, want[i]);
    assert_int_equal(c->overdue_ms, now() - c->next_at);
    finish(c, KR_OUTCOME_SUCCESS, 0);
  }
  assert_null(next());
  valid();
}

/* 1,000 hosts with 3 URIs each, all due, no politeness: the first 1,000
 * issues visit every host once, in the order they became ready. */
static void no_starvation_1000_hosts(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  fopen_with(&o);
  char u[64];
  for (int k = 0; k < 3; k++)
    for (int h = 0; h < 1000; h++) {
      snprintf(u, sizeof(u), "http://h%d.test/%d", h, k);
      assert_int_equal(add(u), 1);
    }
  adv(0);
  static int served[1000];
  memset(served, 0, sizeof(served));
  int issued = 0;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 1000; i++) {
      kr_curi_t *c = next();
      if (!c) { /* re-armed hosts become due on the next wheel run */
        adv(0);
        c = next();
      }
      assert_non_null(c);
      int hn = atoi(c->url + 8);
      assert_int_equal(served[hn], round); /* once per round */
      served[hn]++;
      if (round == 0) assert_int_equal(hn, i); /* creation = ready order */
      finish(c, KR_OUTCOME_SUCCESS, 0);
      issued++;
    }
  }
  adv(0);
  assert_null(next());
  assert_int_equal(issued, 3000);
  valid();
}

static void max_connections_cap(void **state) {
  (void)state;
  kr_frontier_opts_t o = defaults();
  o.max_connections = 2;
  fopen_with(&o);
  char u[64];
  for (int h = 0; h < 5; h++) {
    snprintf(u, sizeof(u), "http://m%d.test/", h);
    add(u);
  }
  adv(0);
  kr_curi_t *a = next(), *b = next();
  assert_non_null(a);
  assert_non_null(b);
  assert_null(next()); /* three hosts ready, no capacity */
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_int_equal(s.ready_hosts, 3);
  finish(a, KR_OUTCOME_SUCCESS, 0);
  assert_non_null(next()); /* capacity back: pull again */
  (void)b;
}

/* ---- politeness ----------------------------------------------------------- */

static uint64_t delay_after(const char *hostkey, const char *u1, uint64_t fetch_ms) {
  kr_curi_t *c = next();
  assert_non_null(c);
  assert_string_equal(c->url, u1);
  uint64_t t = now();
  finish(c, KR_OUTCOME_SUCCESS, fetch_ms);
  kr_host_report_t r = host(hostkey);
  assert_int_equal(r.state, KR_HOSTQ_SNOOZED);
  uint64_t d = r.ready_at - t;
  adv(d);
  return d;
}

static void politeness_clamp_and_crawl_delay(void **state) {
  (void)state;
  fopen_with(NULL); /* 5 x duration within [2 s, 5 s], Crawl-delay <= 300 s */
  char u[64];
  for (int i = 0; i < 9; i++) {
    snprintf(u, sizeof(u), "http://p.test/%d", i);
    add_at(u, 0, T0 + (uint64_t)i, 0, "");
  }
  adv(10);
  assert_int_equal(delay_after("p.test", "http://p.test/0", 100), 2000); /* 500 -> min */
  assert_int_equal(delay_after("p.test", "http://p.test/1", 600), 3000); /* 5 x 600 */
  assert_int_equal(delay_after("p.test", "http://p.test/2", 9000), 5000); /* max */
  kr_hostq_t *h = kr_frontier_host_lookup(F, "p.test", 6);
  kr_frontier_host_set_robots(F, h, now() + 3600 * SEC, 200, 10 * SEC, now());
  assert_int_equal(delay_after("p.test", "http://p.test/3", 100), 10000); /* Crawl-delay */
  kr_frontier_host_set_robots(F, h, now() + 3600 * SEC, 200, 1000 * SEC, now());
  assert_int_equal(delay_after("p.test", "http://p.test/4", 100), 300000); /* capped */
  kr_frontier_host_set_robots(F, h, now() + 3600 * SEC, 200, -1, now());
  /* Per-host options override the frontier's. */
  kr_frontier_opts_t fast = defaults();
  fast.min_delay_ms = 10;
  fast.max_delay_ms = 100;
  kr_frontier_host_set_opts(F, h, &fast, now());
  assert_int_equal(delay_after("p.test", "http://p.test/5", 1), 10);
  assert_int_equal(delay_after("p.test", "http://p.test/6", 1000), 100);
  /* A fetch that never reached the host costs no delay. */
  kr_frontier_host_set_opts(F, h, NULL, now());
  kr_curi_t *c = next();
  kr_outcome_t o = {.kind = KR_OUTCOME_RETRY, .no_contact = 1, .fetch_ms = 900};
  uint64_t t = now();
  assert_int_equal(kr_frontier_finished(F, c, &o, NULL, 0, t), 0);
  kr_host_report_t r = host("p.test");
  assert_true(r.ready_at <= t); /* /8 is due and no delay was added */
  valid();
}

/* ---- outcomes ----------------------------------------------------------------- */

static void outcomes(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.max_retries = 2;
  fopen_with(&o);
  /* Equal next_at would order by fingerprint: give each its own ms. */
  add_at("http://o.test/ok", 0, T0 + 1, 0, "");
  add_at("http://o.test/404", 0, T0 + 2, 0, "");
  add_at("http://o.test/retry", 0, T0 + 3, 0, "");
  add_at("http://o.test/robots-no", 0, T0 + 4, 0, "");
  add_at("http://o.test/failed", 0, T0 + 5, 0, "");
  adv(10);
  uint64_t t = now();
  /* success, any status; a caller-chosen wait */
  kr_curi_t *c = next();
  assert_string_equal(c->url, "http://o.test/ok");
  uint8_t dg[20] = {1, 2, 3};
  kr_outcome_t s = {.kind = KR_OUTCOME_SUCCESS, .status = 200, .wait_ms = 3600 * SEC,
                    .content = 1, .digest = dg, .digest_len = 20,
                    .content_type = "text/html", .content_type_len = 9, .bytes = 5000};
  kr_frontier_finished(F, c, &s, NULL, 0, t);
  kr_uri_row_t r = row_of("http://o.test/ok");
  assert_int_equal(r.state, KR_URI_SUCCESS);
  assert_true(r.next_at == t + 3600 * SEC);
  assert_int_equal(r.visits, 1);
  assert_int_equal(r.versions, 1);
  assert_int_equal(r.wait_ms, 3600 * SEC);
  assert_int_equal(r.digest_len, 20);
  assert_true(r.last_visit == t);
  kr_vhist_t vh;
  assert_int_equal(kr_vhist_decode(&vh, r.history, r.history_len), 0);
  assert_int_equal(vh.n, 1);
  assert_int_equal(vh.v[0].state, KR_CONTENT_CHANGED);
  adv(0);
  c = next();
  assert_string_equal(c->url, "http://o.test/404");
  kr_outcome_t nf = {.kind = KR_OUTCOME_SUCCESS, .status = 404};
  kr_frontier_finished(F, c, &nf, NULL, 0, now());
  r = row_of("http://o.test/404");
  assert_int_equal(r.state, KR_URI_SUCCESS);
  assert_int_equal(r.status, 404);
  assert_true(r.next_at == now() + o.default_wait_ms); /* revisited */
  /* retryable: retry-delay, retries++, then failed past max-retries */
  adv(0);
  c = next();
  assert_string_equal(c->url, "http://o.test/retry");
  kr_outcome_t rt = {.kind = KR_OUTCOME_RETRY, .status = KR_ECONNRESET};
  kr_frontier_finished(F, c, &rt, NULL, 0, now());
  r = row_of("http://o.test/retry");
  assert_int_equal(r.state, KR_URI_RETRY);
  assert_int_equal(r.retries, 1);
  assert_true(r.next_at == now() + 900 * SEC);
  valid();
  /* robots */
  adv(0);
  c = next();
  assert_string_equal(c->url, "http://o.test/robots-no");
  kr_outcome_t dr = {.kind = KR_OUTCOME_DISREGARDED, .status = -9998};
  kr_frontier_finished(F, c, &dr, NULL, 0, now());
  r = row_of("http://o.test/robots-no");
  assert_int_equal(r.state, KR_URI_DISREGARDED);
  assert_true(r.next_at == KR_NEVER);
  /* failed: revisited after failed-wait by default */
  adv(0);
  c = next();
  assert_string_equal(c->url, "http://o.test/failed");
  kr_outcome_t fl = {.kind = KR_OUTCOME_FAILED, .status = KR_ESCHEME};
  kr_frontier_finished(F, c, &fl, NULL, 0, now());
  r = row_of("http://o.test/failed");
  assert_int_equal(r.state, KR_URI_FAILED);
  assert_true(r.next_at == now() + o.failed_wait_ms);
  valid();
  /* the retry comes back after 900 s, twice, then fails */
  for (int i = 2; i <= 3; i++) {
    adv(900 * SEC);
    c = next();
    assert_non_null(c);
    assert_string_equal(c->url, "http://o.test/retry");
    kr_frontier_finished(F, c, &rt, NULL, 0, now());
    r = row_of("http://o.test/retry");
    if (i == 2) {
      assert_int_equal(r.state, KR_URI_RETRY);
      assert_int_equal(r.retries, 2);
    } else {
      assert_int_equal(r.state, KR_URI_FAILED);
    }
  }
  kr_frontier_stats_t st;
  kr_frontier_stats(F, &st);
  assert_int_equal(st.c.succeeded, 2);
  assert_int_equal(st.c.retried, 2);
  assert_int_equal(st.c.failed, 2);
  assert_int_equal(st.c.disregarded, 1);
  assert_int_equal(st.c.finished, 7);
  assert_int_equal(st.c.queued, 4); /* all but the disregarded one */
  assert_int_equal(st.c.bytes, 5000);
  valid();
}

static void failed_never_when_not_revisited(void **state) {
  (void)state;
  kr_frontier_opts_t o = defaults();
  o.revisit_failed = 0;
  fopen_with(&o);
  add("http://n.test/x");
  adv(0);
  kr_curi_t *c = next();
  kr_outcome_t fl = {.kind = KR_OUTCOME_FAILED};
  kr_frontier_finished(F, c, &fl, NULL, 0, now());
  assert_true(row_of("http://n.test/x").next_at == KR_NEVER);
  assert_int_equal(host("n.test").queued, 0);
  /* Rediscovery does not bring it back; an explicit revive does. */
  assert_int_equal(add("http://n.test/x"), 0);
  assert_true(row_of("http://n.test/x").next_at == KR_NEVER);
  assert_int_equal(add_at("http://n.test/x", 0, 0, KR_LINK_REVIVE, ""), 0);
  assert_true(row_of("http://n.test/x").next_at == now());
  assert_int_equal(row_of("http://n.test/x").state, KR_URI_QUEUED);
  assert_int_equal(host("n.test").queued, 1);
  valid();
}

/* A URI answering 429/503 backs off alone: exponentially (its retries
 * count the answers in a row), capped, or as Retry-After says within
 * [1 s, the cap], behind its host's other URIs, which go on at once. The
 * host backs off only when several URIs in a row answer so. (One URL
 * answering 503 used to snooze its whole host with that URL first again
 * each time: the host's other pages were never fetched.) */
static void backoff_growth_cap_reset(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.backoff_initial_ms = 60 * SEC;
  o.backoff_max_ms = 300 * SEC;
  fopen_with(&o);
  add_at("http://b.test/busy", 0, T0 + 1, 0, "");
  char u[64];
  for (int i = 1; i <= 5; i++) {
    snprintf(u, sizeof u, "http://b.test/p%d", i);
    add_at(u, 0, T0 + 1 + (uint64_t)i, 0, "");
  }
  adv(10);
  uint64_t expect[] = {60, 120, 240, 300, 300};
  for (int i = 0; i < 5; i++) {
    kr_curi_t *c = next();
    assert_non_null(c);
    assert_string_equal(c->url, "http://b.test/busy");
    uint64_t t = now();
    kr_outcome_t bo = {.kind = KR_OUTCOME_BACKOFF, .status = 503};
    kr_frontier_finished(F, c, &bo, NULL, 0, t);
    kr_uri_row_t row = row_of("http://b.test/busy");
    assert_int_equal(row.state, KR_URI_RETRY);
    assert_int_equal(row.retries, i + 1);
    assert_int_equal(row.visits, 0); /* not a visit */
    assert_true(row.next_at == t + expect[i] * SEC);
    /* the host is not snoozed: its other pages go at once */
    kr_host_report_t r = host("b.test");
    assert_int_equal(r.backoff_level, 0);
    for (int k = 1; i == 0 && k <= 5; k++) {
      adv(0);
      c = next();
      assert_non_null(c);
      snprintf(u, sizeof u, "http://b.test/p%d", k);
      assert_string_equal(c->url, u);
      finish(c, KR_OUTCOME_SUCCESS, 0);
    }
    valid();
    adv(expect[i] * SEC - 1);
    assert_null(next());
    adv(1);
  }
  /* Retry-After beyond the cap is capped; a short one is honoured. */
  kr_curi_t *c = next();
  assert_string_equal(c->url, "http://b.test/busy");
  uint64_t t = now();
  kr_outcome_t ra = {.kind = KR_OUTCOME_BACKOFF, .status = 429, .retry_after_ms = 3600 * SEC};
  kr_frontier_finished(F, c, &ra, NULL, 0, t);
  assert_true(row_of("http://b.test/busy").next_at == t + 300 * SEC);
  adv(300 * SEC);
  c = next();
  t = now();
  kr_outcome_t small = {.kind = KR_OUTCOME_BACKOFF, .status = 503, .retry_after_ms = 5 * SEC};
  kr_frontier_finished(F, c, &small, NULL, 0, t);
  assert_true(row_of("http://b.test/busy").next_at == t + 5 * SEC);
  adv(5 * SEC);
  /* answering again resets its growth */
  c = next();
  finish(c, KR_OUTCOME_SUCCESS, 0);
  assert_int_equal(row_of("http://b.test/busy").retries, 0);
  /* Three URIs in a row answering 503: now the host backs off. */
  for (int i = 1; i <= 3; i++) {
    snprintf(u, sizeof u, "http://b.test/q%d", i);
    add_at(u, 0, now(), 0, "");
  }
  for (int i = 1; i <= 3; i++) {
    adv(0);
    c = next();
    assert_non_null(c);
    assert_non_null(strstr(c->url, "/q"));
    t = now();
    kr_outcome_t bo = {.kind = KR_OUTCOME_BACKOFF, .status = 503};
    kr_frontier_finished(F, c, &bo, NULL, 0, t);
    assert_int_equal(host("b.test").state, i < 3 ? KR_HOSTQ_READY : KR_HOSTQ_SNOOZED);
  }
  kr_host_report_t r = host("b.test");
  assert_int_equal(r.backoff_level, 1);
  assert_true(r.ready_at == t + 60 * SEC);
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_int_equal(s.c.backoffs, 10);
  valid();
}

/* A snapshot crawl gives a URI that answers 503 for ever up after
 * max-retries back-offs, so it ends. */
static void backoff_gives_up_in_a_snapshot(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.revisit = 0;
  o.max_retries = 2;
  o.backoff_initial_ms = 1 * SEC;
  fopen_with(&o);
  add("http://s.test/busy");
  for (int i = 0; i < 3; i++) {
    adv(60 * SEC);
    kr_curi_t *c = next();
    assert_non_null(c);
    kr_outcome_t bo = {.kind = KR_OUTCOME_BACKOFF, .status = 503};
    kr_frontier_finished(F, c, &bo, NULL, 0, now());
  }
  assert_true(row_of("http://s.test/busy").next_at == KR_NEVER);
  assert_int_equal(host("s.test").queued, 0);
  valid();
}

/* A URI failed with its host (host_error: DNS, connect, robots.txt)
 * comes back with the host's back-off, at most max-backoff, so a host
 * that recovers has its URIs again within one back-off period; one that
 * failed on its own comes back after failed-wait. Neither waits the
 * longest max-wait (28 days: an outage past the retry budget used to
 * exile the host for that long). */
static void failed_with_host_comes_back_with_it(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.backoff_initial_ms = 60 * SEC;
  o.backoff_max_ms = 600 * SEC;
  o.failed_wait_ms = 86400 * SEC;
  o.retry_delay_ms = 30 * SEC; /* below the back-off: the back-off decides */
  o.host_failures_before_backoff = 1;
  fopen_with(&o);
  add("http://h.test/a");
  add("http://h.test/b");
  uint64_t expect[] = {60, 120, 240, 480, 600, 600};
  for (int i = 0; i < 6; i++) {
    adv(0);
    kr_curi_t *c = next();
    assert_non_null(c);
    uint64_t t = now();
    char url[32];
    snprintf(url, sizeof url, "%s", c->url);
    kr_outcome_t fl = {.kind = KR_OUTCOME_FAILED, .status = -61, .host_error = 1};
    kr_frontier_finished(F, c, &fl, NULL, 0, t);
    assert_true(row_of(url).next_at <= t + 600 * SEC);
    kr_host_report_t r = host("h.test");
    assert_true(r.ready_at == t + expect[i] * SEC);
    adv(expect[i] * SEC);
  }
  assert_true(row_of("http://h.test/a").next_at <= now() + 600 * SEC);
  assert_true(row_of("http://h.test/b").next_at <= now() + 600 * SEC);
  /* the host answers: its URIs are due within the cap; one failing on
   * its own now waits failed-wait */
  adv(600 * SEC);
  kr_curi_t *c = next();
  assert_non_null(c);
  finish(c, KR_OUTCOME_SUCCESS, 0);
  adv(0);
  c = next();
  assert_non_null(c);
  uint64_t t = now();
  char url[32];
  snprintf(url, sizeof url, "%s", c->url);
  kr_outcome_t own = {.kind = KR_OUTCOME_FAILED, .status = -7};
  kr_frontier_finished(F, c, &own, NULL, 0, t);
  assert_true(row_of(url).next_at == t + 86400 * SEC);
  /* robots.txt unavailable for good (with_host): back with the host too,
   * without counting towards its back-off */
  add("http://h.test/c");
  adv(0);
  c = next();
  assert_non_null(c);
  t = now();
  kr_outcome_t rb = {.kind = KR_OUTCOME_FAILED, .status = -61, .with_host = 1};
  kr_frontier_finished(F, c, &rb, NULL, 0, t);
  assert_true(row_of("http://h.test/c").next_at == t + 60 * SEC);
  assert_int_equal(host("h.test").backoff_level, 0);
  /* and not before a failed robots.txt is asked again (retry-delay), at
   * most max-backoff: its URIs do not each come back every minute */
  kr_frontier_close(F);
  F = NULL;
  o.retry_delay_ms = 900 * SEC;
  snprintf(sdir, sizeof(sdir), "%s/rd", tmpdir);
  fopen_with(&o);
  add("http://r.test/x");
  adv(0);
  c = next();
  assert_non_null(c);
  t = now();
  kr_frontier_finished(F, c, &rb, NULL, 0, t);
  assert_true(row_of("http://r.test/x").next_at == t + 600 * SEC);
  valid();
}

/* A host failing repeatedly is snoozed with exponential back-off. */
static void host_failures_snooze(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.retry_delay_ms = 1; /* keep the URIs due: only the host back-off waits */
  fopen_with(&o);
  char u[64];
  for (int i = 0; i < 10; i++) {
    snprintf(u, sizeof(u), "http://down.test/%d", i);
    add(u);
  }
  adv(0);
  kr_outcome_t ce = {.kind = KR_OUTCOME_RETRY, .status = KR_ECONNREFUSED, .host_error = 1};
  for (int i = 0; i < 2; i++) {
    kr_curi_t *c = next();
    kr_frontier_finished(F, c, &ce, NULL, 0, now());
    assert_int_equal(host("down.test").backoff_level, 0);
    adv(0);
  }
  kr_curi_t *c = next();
  uint64_t t = now();
  kr_frontier_finished(F, c, &ce, NULL, 0, t);
  kr_host_report_t r = host("down.test");
  assert_int_equal(r.fail_streak, 3);
  assert_int_equal(r.backoff_level, 1);
  assert_true(r.ready_at == t + 60 * SEC);
  adv(60 * SEC);
  c = next();
  t = now();
  kr_frontier_finished(F, c, &ce, NULL, 0, t);
  assert_true(host("down.test").ready_at == t + 120 * SEC);
  adv(120 * SEC);
  c = next();
  finish(c, KR_OUTCOME_SUCCESS, 0);
  r = host("down.test");
  assert_int_equal(r.fail_streak, 0);
  assert_int_equal(r.backoff_level, 0);
  valid();
}

/* ---- prerequisites --------------------------------------------------------------- */

static void prerequisites_gate(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.host_valence = 2;
  fopen_with(&o);
  add_at("http://g.test/a", 0, T0 + 1, 0, "");
  add_at("http://g.test/b", 0, T0 + 2, 0, "");
  adv(10);
  kr_curi_t *a = next();
  assert_string_equal(a->url, "http://g.test/a");
  /* The loop finds no robots.txt for this host. */
  assert_int_equal(kr_frontier_prereq_require(F, a, "http://g.test/robots.txt", 24, now()), 0);
  assert_true(host("g.test").gated);
  valid();
  adv(0);
  kr_curi_t *rb = next();
  assert_non_null(rb);
  assert_string_equal(rb->url, "http://g.test/robots.txt");
  assert_int_equal(rb->directive, KR_DIRECTIVE_HIGHEST);
  assert_string_equal(rb->hop_path, "P");
  assert_true(rb->via == kr_fp("http://g.test/a", 15));
  /* A slot is free but the host holds its other URIs. */
  adv(0);
  assert_null(next());
  kr_host_report_t r = host("g.test");
  assert_int_equal(r.state, KR_HOSTQ_SNOOZED);
  assert_true(r.ready_at == KR_NEVER);
  /* robots.txt unreachable: retried; the host stays held. */
  kr_outcome_t rt = {.kind = KR_OUTCOME_RETRY};
  kr_frontier_finished(F, rb, &rt, NULL, 0, now());
  assert_int_equal(row_of("http://g.test/robots.txt").directive, KR_DIRECTIVE_HIGHEST);
  adv(0);
  assert_null(next());
  adv(900 * SEC);
  rb = next();
  assert_non_null(rb);
  assert_string_equal(rb->url, "http://g.test/robots.txt");
  kr_outcome_t ok = {.kind = KR_OUTCOME_SUCCESS, .status = 200, .wait_ms = 3600 * SEC};
  kr_frontier_finished(F, rb, &ok, NULL, 0, now());
  kr_uri_row_t rr = row_of("http://g.test/robots.txt");
  assert_int_equal(rr.directive, KR_DIRECTIVE_NORMAL); /* back to NORMAL */
  assert_true(rr.next_at == now() + 3600 * SEC);
  adv(0);
  assert_null(next()); /* still gated until the loop says so */
  kr_frontier_prereq_done(F, kr_frontier_host_lookup(F, "g.test", 6), now());
  adv(0);
  kr_curi_t *x = next();
  adv(0);
  kr_curi_t *y = next();
  assert_non_null(x);
  assert_non_null(y);
  assert_string_equal(x->url, "http://g.test/a"); /* deferred, not visited */
  assert_int_equal(x->visits, 0);
  assert_int_equal(x->retries, 0);
  finish(x, KR_OUTCOME_SUCCESS, 0);
  finish(y, KR_OUTCOME_SUCCESS, 0);
  valid();
}

/* ---- dedupe and commits ------------------------------------------------------------- */

static void dedupe_in_memory(void **state) {
  (void)state;
  fopen_with(NULL);
  kr_link_t links[200];
  char urls[200][64];
  for (int i = 0; i < 200; i++) {
    snprintf(urls[i], sizeof(urls[i]), "http://d.test/%d", i % 100); /* 50% dups */
    links[i] = (kr_link_t){.url = urls[i], .url_len = strlen(urls[i]), .hop_path = "L",
                           .hop_len = 1};
  }
  const kr_store_stats_t *ss = kr_store_stats(kr_frontier_store(F));
  uint64_t ins0 = ss->inserts, gets0 = ss->gets;
  size_t added = 0;
  assert_int_equal(kr_frontier_add_batch(F, links, 200, now(), &added), 0);
  assert_int_equal(added, 100);
  assert_int_equal(ss->inserts - ins0, 100); /* SQLite saw each URL once */
  assert_int_equal(ss->insert_ignored, 0);
  assert_int_equal(ss->gets - gets0, 0);
  assert_int_equal(kr_frontier_add_batch(F, links, 200, now(), &added), 0);
  assert_int_equal(added, 0);
  assert_int_equal(ss->inserts - ins0, 100);
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_int_equal(s.duplicates, 300);
  assert_int_equal(s.c.discovered, 100);
  /* Bad links are skipped and counted. */
  kr_link_t bad[3] = {{.url = "no-scheme", .url_len = 9},
                      {.url = "http://", .url_len = 7},
                      {.url = NULL, .url_len = 0}};
  assert_int_equal(kr_frontier_add_batch(F, bad, 3, now(), &added), 0);
  assert_int_equal(added, 0);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.rejected, 3);
  char *huge = malloc(KR_URL_MAX + 10);
  memcpy(huge, "http://d.test/", 14);
  memset(huge + 14, 'x', KR_URL_MAX - 4);
  assert_int_equal(add_at("http://d.test/ok", 0, 0, 0, ""), 1);
  kr_link_t hl = {.url = huge, .url_len = KR_URL_MAX + 10};
  assert_int_equal(kr_frontier_add(F, &hl, now()), KR_ETOOBIG);
  /* Bad links inside a batch longer than the group whose fingerprints
   * are taken together (16), around its edge: skipped and counted, the
   * others added, duplicates within and across groups found. */
  kr_link_t mix[40];
  char murls[40][64];
  for (int i = 0; i < 40; i++) {
    snprintf(murls[i], sizeof(murls[i]), "http://m.test/%d", i % 30); /* 30..39 dup 0..9 */
    mix[i] = (kr_link_t){.url = murls[i], .url_len = strlen(murls[i]), .hop_path = "L",
                         .hop_len = 1};
  }
  mix[15] = (kr_link_t){.url = NULL, .url_len = 0};
  mix[16] = hl;
  mix[31] = (kr_link_t){.url = "http://", .url_len = 7}; /* would be a dup of 1 */
  kr_frontier_stats(F, &s);
  uint64_t rej0 = s.rejected, dup0 = s.duplicates;
  assert_int_equal(kr_frontier_add_batch(F, mix, 40, now(), &added), 0);
  assert_int_equal(added, 28); /* 30 distinct, 15 and 16 replaced */
  kr_frontier_stats(F, &s);
  assert_int_equal(s.rejected - rej0, 3);
  assert_int_equal(s.duplicates - dup0, 9);
  free(huge);
  valid();
}

static int64_t ext_count(const char *sql) {
  char path[400];
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) fail_msg("%s", sqlite3_errmsg(db));
  int64_t v = -1;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

/* A completion and its discovered links commit together, never apart. */
static void commit_boundaries(void **state) {
  (void)state;
  kr_frontier_opts_t o = defaults();
  o.commit_updates = 1; /* commit at every turn that has a write */
  fopen_with(&o);
  add("http://c.test/");
  kr_frontier_turn(F, now());
  assert_int_equal(ext_count("SELECT count(*) FROM uris"), 1);
  adv(0);
  kr_curi_t *c = next();
  kr_link_t l[3];
  const char *u[] = {"http://c.test/1", "http://c.test/2", "http://other.test/"};
  for (int i = 0; i < 3; i++)
    l[i] = (kr_link_t){.url = u[i], .url_len = strlen(u[i]), .hop_path = "L", .hop_len = 1,
                       .via = c->fp};
  kr_outcome_t s = {.kind = KR_OUTCOME_SUCCESS, .status = 200};
  assert_int_equal(kr_frontier_finished(F, c, &s, l, 3, now()), 0);
  /* Nothing is visible before the turn: no commit inside finished. */
  assert_true(kr_store_in_tx(kr_frontier_store(F)));
  assert_int_equal(ext_count("SELECT count(*) FROM uris"), 1);
  assert_int_equal(ext_count("SELECT visits FROM uris WHERE url='http://c.test/'"), 0);
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  assert_int_equal(ext_count("SELECT count(*) FROM uris"), 4);
  assert_int_equal(ext_count("SELECT visits FROM uris WHERE url='http://c.test/'"), 1);
  assert_int_equal(ext_count("SELECT discovered FROM hosts WHERE name='c.test'"), 3);
  /* Same again, then a crash before the turn: both are lost together. */
  adv(0);
  c = next();
  assert_non_null(c);
  char picked[64];
  snprintf(picked, sizeof(picked), "SELECT visits FROM uris WHERE url='%s'", c->url);
  const char *u2 = "http://c.test/3";
  kr_link_t l2 = {.url = u2, .url_len = strlen(u2), .hop_path = "LL", .hop_len = 2};
  kr_frontier_finished(F, c, &s, &l2, 1, now());
  kr_frontier_abandon(F);
  F = NULL;
  assert_int_equal(ext_count("SELECT count(*) FROM uris"), 4);
  assert_int_equal(ext_count(picked), 0);
  fopen_with(&o);
  valid();
}

/* ---- recovery ------------------------------------------------------------------------- */

static void recovery_after_crash(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  fopen_with(&o);
  char u[64];
  for (int i = 0; i < 200; i++) {
    snprintf(u, sizeof(u), "http://h%d.test/%d", i % 10, i);
    add(u);
  }
  assert_int_equal(kr_frontier_commit(F), 0);
  adv(0);
  kr_curi_t *c[8];
  for (int i = 0; i < 8; i++) assert_non_null(c[i] = next());
  for (int i = 0; i < 3; i++) finish(c[i], KR_OUTCOME_SUCCESS, 0); /* not committed */
  uint64_t inflight_fp[5];
  for (int i = 3; i < 8; i++) inflight_fp[i - 3] = c[i]->fp;
  kr_frontier_abandon(F); /* kill -9 */
  F = NULL;
  fopen_with(&o);
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_int_equal(s.c.discovered, 200);
  assert_int_equal(s.c.queued, 200);
  assert_int_equal(s.c.succeeded, 0);
  assert_int_equal(s.in_flight, 0);
  assert_int_equal(s.hosts, 10);
  assert_true(s.seen_complete);
  valid();
  /* Every committed URI is there and queued, the in-flight ones too. */
  for (int i = 0; i < 5; i++) {
    kr_uri_row_t r;
    assert_int_equal(kr_store_uri_get(kr_frontier_store(F), inflight_fp[i], &r), 1);
    assert_int_equal(r.state, KR_URI_QUEUED);
  }
  adv(0);
  int n = 0;
  kr_curi_t *x;
  while ((x = next()) != NULL || (adv(0), (x = next()) != NULL)) {
    finish(x, KR_OUTCOME_SUCCESS, 0);
    if (++n > 300) break;
  }
  assert_int_equal(n, 200);
  valid();
  /* Statistics reach the store lazily (a commit within 5 s of the last
   * full write keeps them back); a clean close writes them even when no
   * transaction is open. */
  adv(60 * SEC);
  assert_int_equal(kr_frontier_turn(F, now()), 0); /* everything written */
  add("http://h0.test/late");
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  adv(100);
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  adv(0);
  x = next();
  assert_non_null(x);
  finish(x, KR_OUTCOME_SUCCESS, 0); /* succeeded++: statistics only */
  adv(100);
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  assert_false(kr_store_in_tx(kr_frontier_store(F)));
  assert_int_equal(ext_count("SELECT sum(succeeded) FROM hosts"), 200); /* held back */
  /* Clean close and reopen: the same state, counters included. */
  assert_int_equal(kr_frontier_close(F), 0);
  F = NULL;
  assert_int_equal(ext_count("SELECT sum(succeeded) FROM hosts"), 201);
  fopen_with(&o);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.c.succeeded, 201);
  assert_int_equal(s.c.finished, 201);
  valid();
}

/* on_host at open: what each host's learned-state record held then. */
static char learned_seen[256];
static void note_learned(void *ud, kr_frontier_t *f, kr_hostq_t *h) {
  (void)ud;
  (void)f;
  size_t n;
  const uint8_t *p = kr_frontier_host_learned(h, &n);
  size_t at = strlen(learned_seen);
  snprintf(learned_seen + at, sizeof learned_seen - at, "%s:%zu:%s;", kr_frontier_host_name(h), n,
           n ? (const char *)p : "");
}

/* A host's learned-state record: written with the next commit (not
 * before), dropped from memory once written; after a kill -9 only what
 * was committed is there; at a clean reopen on_host reads each host's
 * record and the frontier drops its copy after. */
static void learned_record(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  fopen_with(&o);
  add("http://a.test/");
  add("http://b.test/");
  assert_int_equal(kr_frontier_commit(F), 0);
  kr_hostq_t *a = kr_frontier_host_lookup(F, "a.test", 6);
  kr_hostq_t *b = kr_frontier_host_lookup(F, "b.test", 6);
  kr_frontier_host_set_learned(F, a, (const uint8_t *)"A1", 3);
  size_t n;
  assert_non_null(kr_frontier_host_learned(a, &n));
  assert_int_equal(n, 3);
  assert_int_equal(ext_count("SELECT count(*) FROM hosts WHERE learned IS NOT NULL"), 0);
  assert_int_equal(kr_frontier_commit(F), 0);
  assert_int_equal(ext_count("SELECT count(*) FROM hosts WHERE learned IS NOT NULL"), 1);
  assert_null(kr_frontier_host_learned(a, &n)); /* written: not kept twice */
  assert_int_equal(n, 0);
  kr_frontier_host_set_learned(F, b, (const uint8_t *)"B1", 3);
  kr_frontier_abandon(F); /* kill -9 before the commit: b's is lost */
  F = NULL;
  o.on_host = note_learned;
  learned_seen[0] = 0;
  fopen_with(&o);
  assert_string_equal(learned_seen, "a.test:3:A1;b.test:0:;");
  a = kr_frontier_host_lookup(F, "a.test", 6);
  assert_null(kr_frontier_host_learned(a, &n)); /* read by on_host, then dropped */
  b = kr_frontier_host_lookup(F, "b.test", 6);
  kr_frontier_host_set_learned(F, b, (const uint8_t *)"B2", 3);
  assert_int_equal(kr_frontier_close(F), 0); /* a clean stop writes it */
  F = NULL;
  learned_seen[0] = 0;
  fopen_with(&o);
  assert_string_equal(learned_seen, "a.test:3:A1;b.test:3:B2;");
  valid();
}

static void seen_loaded_lazily(void **state) {
  (void)state;
  fopen_with(NULL);
  char u[64];
  for (int i = 0; i < 1000; i++) {
    snprintf(u, sizeof(u), "http://s.test/%d", i);
    add(u);
  }
  kr_frontier_close(F);
  F = NULL;
  kr_frontier_opts_t o = defaults();
  o.seen_open_budget_ms = 0; /* load nothing at open */
  o.seen_turn_step = 300;
  fopen_with(&o);
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_false(s.seen_complete);
  assert_int_equal(s.seen, 0);
  /* Still exact: the store rejects what the filter does not know yet. */
  assert_int_equal(add("http://s.test/5"), 0);
  assert_int_equal(kr_store_stats(kr_frontier_store(F))->insert_ignored, 1);
  assert_int_equal(add("http://s.test/new"), 1);
  for (int i = 0; i < 5; i++) kr_frontier_turn(F, now());
  kr_frontier_stats(F, &s);
  assert_true(s.seen_complete);
  assert_int_equal(s.seen, 1001);
  assert_int_equal(add("http://s.test/7"), 0);
  assert_int_equal(kr_store_stats(kr_frontier_store(F))->insert_ignored, 1);
  valid();
}

static void refusals(void **state) {
  (void)state;
  fopen_with(NULL);
  kr_frontier_t *g = NULL;
  char err[512];
  assert_int_equal(kr_frontier_open(sdir, NULL, &timers, &g, err, sizeof(err)), KR_EDB);
  assert_null(g);
  assert_non_null(strstr(err, "in use by another kria process"));
  kr_frontier_close(F);
  F = NULL;
  char path[400];
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  sqlite3 *db;
  sqlite3_open(path, &db);
  char sql[64], want[64];
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", KR_STORE_SCHEMA + 1);
  sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_close(db);
  assert_int_equal(kr_frontier_open(sdir, NULL, &timers, &g, err, sizeof(err)), KR_EDB);
  snprintf(want, sizeof want, "kria.db: schema version %d is newer", KR_STORE_SCHEMA + 1);
  assert_non_null(strstr(err, want));
}

/* ---- snapshot, limits --------------------------------------------------------------------- */

static void snapshot_done(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.revisit = 0;
  fopen_with(&o);
  add_at("http://s.test/1", 0, T0 + 1, 0, "");
  add_at("http://s.test/2", 0, T0 + 2, 0, "");
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_RUNNING);
  adv(10);
  kr_curi_t *a = next();
  finish(a, KR_OUTCOME_SUCCESS, 0);
  assert_true(row_of("http://s.test/1").next_at == KR_NEVER);
  adv(0);
  kr_curi_t *b = next();
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_RUNNING); /* in flight */
  finish(b, KR_OUTCOME_SUCCESS, 0);
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_DONE);
  valid();
}

static void limits_stop_issuing(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.max_document_download = 2;
  fopen_with(&o);
  for (int i = 0; i < 5; i++) {
    char u[64];
    snprintf(u, sizeof(u), "http://l%d.test/", i);
    add(u);
  }
  adv(0);
  finish(next(), KR_OUTCOME_SUCCESS, 0);
  kr_curi_t *b = next();
  finish(b, KR_OUTCOME_SUCCESS, 0);
  assert_null(next());
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_LIMIT);
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_string_equal(s.limit, "max-document-download");
  kr_frontier_close(F);
  F = NULL;
  o = fixed_delay(0);
  o.max_bytes_download = 150; /* finish() reports 100 bytes each */
  fopen_with(&o);
  adv(0);
  finish(next(), KR_OUTCOME_SUCCESS, 0);
  assert_non_null(b = next());
  finish(b, KR_OUTCOME_SUCCESS, 0);
  assert_null(next());
  kr_frontier_stats(F, &s);
  assert_string_equal(s.limit, "max-bytes-download");
  kr_frontier_close(F);
  F = NULL;
  o = fixed_delay(0);
  o.max_time_ms = 60 * SEC;
  fopen_with(&o);
  adv(0);
  assert_non_null(next());
  adv(60 * SEC);
  assert_null(next());
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_LIMIT);
}

/* max-document-download is exact: the URIs in flight hold places in the
 * count, so no more are issued than may still be downloaded; a fetch
 * that ends without a response gives its place back, any response (a
 * 503 too) takes it, and the limit stops the crawl at exactly the count. */
static void limits_documents_exact(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.max_document_download = 3;
  fopen_with(&o);
  for (int i = 0; i < 6; i++) {
    char u[64];
    snprintf(u, sizeof(u), "http://x%d.test/", i);
    add(u);
  }
  adv(0);
  kr_curi_t *a = next(), *b = next(), *c = next();
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_null(next()); /* three in flight fill the count */
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_RUNNING); /* waiting, not stopped */
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_null(s.limit);
  /* no response (a connection refused): its place comes back */
  kr_outcome_t none = {.kind = KR_OUTCOME_RETRY, .status = KR_ECONNREFUSED, .host_error = 1};
  assert_int_equal(kr_frontier_finished(F, a, &none, NULL, 0, now()), 0);
  kr_curi_t *d = next();
  assert_non_null(d);
  assert_null(next());
  /* a 503 is a response: a document */
  kr_outcome_t busy = {.kind = KR_OUTCOME_BACKOFF, .status = 503, .bytes = 10};
  assert_int_equal(kr_frontier_finished(F, b, &busy, NULL, 0, now()), 0);
  assert_null(next());
  /* given back untouched (a stop, a prerequisite): its place comes back */
  kr_frontier_defer(F, c, now());
  kr_curi_t *e = next();
  assert_non_null(e);
  assert_null(next());
  finish(d, KR_OUTCOME_SUCCESS, 0);
  assert_null(next());
  kr_frontier_stats(F, &s);
  assert_null(s.limit);
  assert_int_equal(s.run_documents, 2);
  finish(e, KR_OUTCOME_SUCCESS, 0);
  assert_null(next());
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_LIMIT);
  kr_frontier_stats(F, &s);
  assert_string_equal(s.limit, "max-document-download");
  assert_int_equal(s.run_documents, 3);
  assert_int_equal(s.in_flight, 0);
  valid();
}

/* ---- bounds: the URI cap, retirement, limits per period ------------------------------------ */

static void finish_status(kr_curi_t *c, int status, const kr_link_t *links, size_t n) {
  kr_outcome_t o = {.kind = KR_OUTCOME_SUCCESS, .status = status, .fetch_ms = 10, .bytes = 100};
  assert_int_equal(kr_frontier_finished(F, c, &o, links, n, now()), 0);
}

static int known(const char *url) {
  kr_uri_row_t r;
  return kr_store_uri_get(kr_frontier_store(F), kr_fp(url, strlen(url)), &r);
}

static void host_uri_cap(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.max_uris_per_host = 3;
  fopen_with(&o);
  assert_int_equal(add_at("http://c.test/", 0, 0, 0, ""), 1);
  assert_int_equal(add("http://c.test/1"), 1);
  assert_int_equal(add("http://c.test/2"), 1);
  /* at the cap: a new link is refused and counted, each time it is seen */
  assert_int_equal(add("http://c.test/3"), 0);
  assert_int_equal(known("http://c.test/3"), 0);
  assert_int_equal(add("http://c.test/3"), 0);
  assert_int_equal(host("c.test").c.refused, 2);
  assert_int_equal(host("c.test").c.discovered, 3);
  /* known URIs still take raises; seeds and prerequisites are not refused */
  assert_int_equal(add_at("http://c.test/1", KR_DIRECTIVE_HIGH, 0, 0, "L"), 0);
  assert_int_equal(add_at("http://c.test/seed", 0, 0, 0, ""), 1);
  assert_int_equal(add_at("http://c.test/robots.txt", KR_DIRECTIVE_HIGHEST, 0, 0, "P"), 1);
  /* another host has its own cap */
  assert_int_equal(add("http://other.test/3"), 1);
  /* links of a page go through the same door */
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  kr_link_t l[2] = {{.url = "http://c.test/4", .url_len = 15, .hop_path = "L", .hop_len = 1},
                    {.url = "http://other.test/4", .url_len = 19, .hop_path = "L", .hop_len = 1}};
  finish_status(c, 200, l, 2);
  assert_int_equal(known("http://c.test/4"), 0);
  assert_int_equal(known("http://other.test/4"), 1);
  kr_frontier_stats_t st;
  kr_frontier_stats(F, &st);
  assert_int_equal(st.c.refused, 3);
  valid();
  /* a higher cap for this host ([host] section) takes the refused link */
  kr_frontier_opts_t big = o;
  big.max_uris_per_host = 0;
  kr_frontier_host_set_opts(F, kr_frontier_host_lookup(F, "c.test", 6), &big, now());
  assert_int_equal(add("http://c.test/3"), 1);
  /* the count is in the host's row */
  kr_frontier_close(F);
  F = NULL;
  fopen_with(&o);
  assert_int_equal(host("c.test").c.refused, 3);
  assert_int_equal(add("http://c.test/5"), 0);
  assert_int_equal(host("c.test").c.refused, 4);
  valid();
}

static void retire_gone(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.retire_after = 3;
  o.retired_wait_ms = 90ull * 86400 * SEC;
  fopen_with(&o);
  add("http://g.test/gone");
  add("http://g.test/flaky");
  /* flaky: 404, 404, 200, 404 is no streak of 3 */
  static const int flaky[] = {404, 410, 200, 404};
  static const int gone[] = {404, 410, 404};
  for (int i = 0; i < 4; i++) {
    adv(i ? o.default_wait_ms : 0);
    for (int k = 0; k < 2; k++) {
      adv(0);
      kr_curi_t *c = next();
      if (!c) break;
      int is_gone = strcmp(c->url, "http://g.test/gone") == 0;
      if (is_gone && i == 3) fail_msg("a retired URI came back early");
      finish_status(c, is_gone ? gone[i] : flaky[i], NULL, 0);
    }
    kr_uri_row_t r = row_of("http://g.test/gone");
    if (i < 2) {
      assert_int_equal(r.state, KR_URI_SUCCESS);
      assert_int_equal(r.gone, i + 1);
    } else {
      /* retired at the third: kept, with its history, back in 90 days */
      assert_int_equal(r.state, KR_URI_RETIRED);
      assert_int_equal(r.visits, 3);
      assert_true(r.history_len > 0);
      if (i == 2) assert_true(r.next_at == now() + o.retired_wait_ms);
    }
    valid();
  }
  /* a link asking for more does not pull it forward */
  uint64_t back_at = row_of("http://g.test/gone").next_at;
  assert_int_equal(add_at("http://g.test/gone", KR_DIRECTIVE_HIGH, 0, KR_LINK_RESCHEDULE, "LE"), 0);
  assert_true(row_of("http://g.test/gone").next_at == back_at);
  kr_uri_row_t fr = row_of("http://g.test/flaky");
  assert_int_equal(fr.state, KR_URI_SUCCESS);
  assert_int_equal(fr.gone, 1);
  assert_int_equal(host("g.test").c.retired, 1);
  /* a retired URI answering again is back on its normal wait */
  adv(o.retired_wait_ms);
  kr_curi_t *c = NULL;
  while (adv(0), (c = next()) != NULL && strcmp(c->url, "http://g.test/gone") != 0)
    finish_status(c, 200, NULL, 0);
  assert_non_null(c);
  finish_status(c, 200, NULL, 0);
  kr_uri_row_t r = row_of("http://g.test/gone");
  assert_int_equal(r.state, KR_URI_SUCCESS);
  assert_int_equal(r.gone, 0);
  assert_true(r.next_at == now() + o.default_wait_ms);
  valid();
}

static void retire_gone_never(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.retire_after = 1;
  o.retired_wait_ms = 0; /* never revisited */
  fopen_with(&o);
  add("http://gn.test/x");
  add_at("http://gn.test/robots.txt", KR_DIRECTIVE_HIGHEST, 0, 0, "P");
  adv(0);
  finish_status(next(), 404, NULL, 0); /* robots.txt first: never retired */
  adv(0);
  finish_status(next(), 410, NULL, 0);
  assert_int_equal(row_of("http://gn.test/robots.txt").state, KR_URI_SUCCESS);
  kr_uri_row_t r = row_of("http://gn.test/x");
  assert_int_equal(r.state, KR_URI_RETIRED);
  assert_true(r.next_at == KR_NEVER);
  assert_int_equal(host("gn.test").queued, 1);
  valid();
}

static void retire_unlinked(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.retire_unlinked_ms = 10ull * 86400 * SEC;
  o.default_wait_ms = 3ull * 86400 * SEC;
  fopen_with(&o);
  add_at("http://u.test/", 0, T0 + 1, 0, ""); /* a seed: never retired this way */
  kr_link_t a = {.url = "http://u.test/a", .url_len = 15, .hop_path = "L", .hop_len = 1};
  kr_link_t b = {.url = "http://u.test/b", .url_len = 15, .hop_path = "L", .hop_len = 1};
  kr_link_t e = {.url = "http://cdn.test/e.png", .url_len = 21, .hop_path = "E", .hop_len = 1};
  kr_link_t all[3] = {a, b, e};
  adv(10);
  /* day 0: the seed links a, b and an offsite embed e; from day 3 only a */
  for (int day = 0; day <= 12; day += 3) {
    for (int k = 0; k < 8; k++) {
      adv(0);
      kr_curi_t *c = next();
      if (!c) break;
      if (strcmp(c->url, "http://u.test/") == 0)
        finish_status(c, 200, day ? &a : all, day ? 1 : 3);
      else
        finish_status(c, 200, NULL, 0);
    }
    valid();
    adv(o.default_wait_ms);
  }
  /* b and e: first seen on day 0, never linked since: retired on their
   * visit of day 12; a and the seed are not */
  assert_int_equal(row_of("http://u.test/b").state, KR_URI_RETIRED);
  assert_int_equal(row_of("http://cdn.test/e.png").state, KR_URI_RETIRED);
  assert_int_equal(row_of("http://u.test/a").state, KR_URI_SUCCESS);
  assert_int_equal(row_of("http://u.test/").state, KR_URI_SUCCESS);
  assert_true(row_of("http://u.test/a").last_linked > 0);
  assert_int_equal(host("u.test").c.retired, 1);
  /* linked again: back, due at once */
  assert_int_equal(kr_frontier_add(F, &b, now()), 0);
  kr_uri_row_t r = row_of("http://u.test/b");
  assert_int_equal(r.state, KR_URI_QUEUED);
  assert_true(r.next_at == now());
  valid();
}

static void limits_per_period(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.max_document_download = 2;
  o.limits_period_ms = 86400 * SEC;
  fopen_with(&o);
  for (int i = 0; i < 5; i++) {
    char u[64];
    snprintf(u, sizeof(u), "http://p%d.test/", i);
    add(u);
  }
  adv(0);
  finish(next(), KR_OUTCOME_SUCCESS, 0);
  finish(next(), KR_OUTCOME_SUCCESS, 0);
  /* paused, not stopped: the crawl goes on the next (UTC) day */
  assert_null(next());
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_RUNNING);
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_string_equal(s.limit, "max-document-download");
  uint64_t day = 86400 * SEC, next_day = (now() / day + 1) * day;
  assert_true(s.limit_until == next_day);
  int calls = ready_calls;
  adv(next_day - now() - 1);
  assert_null(next());
  adv(1);
  assert_true(ready_calls > calls); /* told to pull */
  kr_curi_t *c = next();
  assert_non_null(c);
  finish(c, KR_OUTCOME_SUCCESS, 0);
  finish(next(), KR_OUTCOME_SUCCESS, 0);
  assert_null(next());
  kr_frontier_stats(F, &s);
  assert_true(s.limit_until == next_day + day);
  /* Fetches in flight when a period ends count in the next one, and
   * hold their places there: still at most 2 a day. */
  for (int i = 0; i < 3; i++) {
    char u[64];
    snprintf(u, sizeof(u), "http://q%d.test/", i);
    add(u);
  }
  adv(next_day + day - now());
  kr_curi_t *late = next();
  assert_non_null(late);
  kr_frontier_stats(F, &s);
  assert_null(s.limit);
  adv(day); /* a day without a finish: the count restarts, late holds a place */
  kr_curi_t *one = next();
  assert_non_null(one);
  assert_null(next());
  finish(late, KR_OUTCOME_SUCCESS, 0);
  finish(one, KR_OUTCOME_SUCCESS, 0);
  assert_null(next());
  kr_frontier_stats(F, &s);
  assert_string_equal(s.limit, "max-document-download");
  assert_int_equal(s.run_documents, 2);
  /* max-time still ends the crawl */
  kr_frontier_close(F);
  F = NULL;
  o.max_time_ms = 60 * SEC;
  fopen_with(&o);
  adv(60 * SEC);
  assert_null(next());
  assert_int_equal(kr_frontier_status(F, now()), KR_FRONTIER_LIMIT);
}

/* ---- queue assignment ------------------------------------------------------------------- */

static int fake_ip(void *ud, const char *host, size_t len, char *out, size_t outlen) {
  (void)ud;
  if (len == 8 && memcmp(host, "unknown.", 8) == 0) return -1;
  return snprintf(out, outlen, "%s", len > 0 && host[0] == 'a' ? "10.0.0.1" : "10.0.0.2");
}

static void queue_assignment(void **state) {
  (void)state;
  fopen_with(NULL);
  char key[256];
  assert_int_equal(kr_frontier_queue_key(F, "http://user:pw@Www.A.test:8080/x?y", 35,
                                         key, sizeof(key)), 0);
  assert_string_equal(key, "www.a.test:8080");
  assert_int_equal(kr_frontier_queue_key(F, "http://[::1]:81/", 16, key, sizeof(key)), 0);
  assert_string_equal(key, "[::1]:81");
  assert_int_equal(kr_frontier_queue_key(F, "nope", 4, key, sizeof(key)), KR_EURL);
  assert_int_equal(kr_frontier_queue_key(F, "http:///x", 9, key, sizeof(key)), KR_EURL);
  assert_int_equal(kr_frontier_queue_key(F, "http://a.test/", 14, key, 4), KR_ETOOBIG);
  add("http://127.0.0.1:8001/");
  add("http://127.0.0.1:8002/");
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_int_equal(s.hosts, 2);
  kr_frontier_close(F);
  F = NULL;

  kr_frontier_opts_t o = defaults();
  o.queue_assign = KR_QUEUE_BY_DOMAIN;
  snprintf(sdir, sizeof(sdir), "%s/domain", tmpdir);
  fopen_with(&o);
  assert_int_equal(kr_frontier_queue_key(F, "http://www.example.co.uk/", 25, key, sizeof(key)), 0);
  assert_string_equal(key, "example.co.uk");
  add("http://a.example.co.uk/");
  add("http://b.example.co.uk/");
  add("http://10.1.2.3/"); /* an address is its own key */
  kr_frontier_stats(F, &s);
  assert_int_equal(s.hosts, 2);
  assert_non_null(kr_frontier_host_lookup(F, "10.1.2.3", 8));
  kr_frontier_close(F);
  F = NULL;

  o = defaults();
  o.queue_assign = KR_QUEUE_BY_IP;
  o.ip_of = fake_ip;
  snprintf(sdir, sizeof(sdir), "%s/ip", tmpdir);
  fopen_with(&o);
  add("http://a1.test/");
  add("http://a2.test/");
  add("http://b.test/");
  add("http://unknown./"); /* no address yet: its host name */
  kr_frontier_stats(F, &s);
  assert_int_equal(s.hosts, 3);
  assert_non_null(kr_frontier_host_lookup(F, "10.0.0.1", 8));
  assert_non_null(kr_frontier_host_lookup(F, "unknown.", 8));
  valid();
}

/* By IP, a host whose address becomes known later: its queue (its name)
 * gives its queued URIs to the address's queue, which then issues them
 * one at a time with the other host's on that address. */
static int learned;
static int late_ip(void *ud, const char *host, size_t len, char *out, size_t outlen) {
  (void)ud;
  if (!learned && len == 6 && memcmp(host, "v.test", 6) == 0) return 0;
  return snprintf(out, outlen, "10.0.0.9");
}

static void rekey_to_address(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(1000);
  o.revisit = 0; /* a visited URI leaves its queue */
  o.queue_assign = KR_QUEUE_BY_IP;
  o.ip_of = late_ip;
  learned = 0;
  fopen_with(&o);
  add("http://w.test/1");
  add("http://v.test/1");
  add("http://v.test/2");
  add("http://v.test/3");
  assert_int_equal(host("v.test").queued, 3);
  assert_int_equal(host("10.0.0.9").queued, 1);
  /* a URI of v.test in flight: nothing moves yet */
  adv(0);
  kr_curi_t *a = next(), *b = next();
  assert_non_null(a);
  assert_non_null(b);
  kr_curi_t *v = strstr(a->url, "v.test") ? a : b;
  kr_curi_t *w = v == a ? b : a;
  kr_hostq_t *hv = v->host;
  learned = 1;
  assert_int_equal(kr_frontier_host_rekey(F, hv, "http://v.test/", 14, now()), 0);
  finish(v, KR_OUTCOME_SUCCESS, 10);
  assert_int_equal(kr_frontier_host_rekey(F, hv, "http://v.test/", 14, now()), 2);
  assert_int_equal(kr_frontier_host_rekey(F, hv, "http://v.test/", 14, now()), 0);
  assert_int_equal(host("v.test").queued, 0);
  assert_int_equal(host("10.0.0.9").queued, 3); /* w.test/1 in flight included */
  valid();
  /* one slot, one clock: w.test/1 is in flight, so nothing else goes */
  adv(0);
  assert_null(next());
  finish(w, KR_OUTCOME_SUCCESS, 10);
  adv(0);
  assert_null(next());
  adv(1000);
  kr_curi_t *c = next();
  assert_non_null(c);
  assert_ptr_equal(c->host, kr_frontier_host_lookup(F, "10.0.0.9", 8));
  assert_null(next());
  finish(c, KR_OUTCOME_SUCCESS, 10);
  /* new links of v.test go to the address's queue at once */
  add("http://v.test/4");
  assert_int_equal(host("10.0.0.9").queued, 2);
  valid();
}

/* ---- Retry-After, report ------------------------------------------------------------------ */

static void retry_after_parser(void **state) {
  (void)state;
  uint64_t d;
  uint64_t base = UINT64_C(784111777000); /* Sun, 06 Nov 1994 08:49:37 GMT */
  assert_int_equal(kr_frontier_parse_retry_after("120", 3, base, &d), 0);
  assert_int_equal(d, 120000);
  assert_int_equal(kr_frontier_parse_retry_after(" 0 ", 3, base, &d), 0);
  assert_int_equal(d, 0);
  const char *imf = "Sun, 06 Nov 1994 08:49:37 GMT";
  assert_int_equal(kr_frontier_parse_retry_after(imf, strlen(imf), base - 5000, &d), 0);
  assert_int_equal(d, 5000);
  const char *rfc850 = "Sunday, 06-Nov-94 08:49:37 GMT";
  assert_int_equal(kr_frontier_parse_retry_after(rfc850, strlen(rfc850), base - 7000, &d), 0);
  assert_int_equal(d, 7000);
  const char *asc = "Sun Nov  6 08:49:37 1994";
  assert_int_equal(kr_frontier_parse_retry_after(asc, strlen(asc), base - 1000, &d), 0);
  assert_int_equal(d, 1000);
  assert_int_equal(kr_frontier_parse_retry_after(imf, strlen(imf), base + 99000, &d), 0);
  assert_int_equal(d, 0); /* in the past */
  const char *leap = "Thu, 29 Feb 2024 00:00:00 GMT";
  assert_int_equal(kr_frontier_parse_retry_after(leap, strlen(leap), UINT64_C(1709164800000) - 1, &d), 0);
  assert_int_equal(d, 1);
  const char *bad[] = {"", "soon", "-5", "12a", "Sun, 06 Nov 1994 08:49:37", "Sun, 32 Nov 1994 08:49:37 GMT",
                       "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
                       "Sun, 06 Nov 1994 08:49:37 GMT trailing"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_int_equal(kr_frontier_parse_retry_after(bad[i], strlen(bad[i]), base, &d), KR_EINVAL);
  assert_int_equal(kr_frontier_parse_retry_after("99999999999999999999999", 23, base, &d), 0);
  assert_true(d >= UINT64_C(100000000000));
  assert_int_equal(kr_frontier_parse_retry_after(NULL, 0, base, &d), KR_EINVAL);
}

static void report(void **state) {
  (void)state;
  fopen_with(NULL);
  add_at("http://late.test/", 0, T0 - 60 * SEC, 0, "");
  add_at("http://soon.test/", 0, T0 + 60 * SEC, 0, "");
  size_t it = 0;
  kr_host_report_t r;
  int n = 0;
  while (kr_frontier_report_next(F, &it, now(), &r)) {
    n++;
    if (strcmp(r.name, "late.test") == 0) assert_int_equal(r.overdue_ms, 60 * SEC);
    if (strcmp(r.name, "soon.test") == 0) assert_int_equal(r.state, KR_HOSTQ_SNOOZED);
  }
  assert_int_equal(n, 2);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  assert_int_equal(kr_frontier_report_text(F, now(), 10, &b), 0);
  const char *t = b.data;
  assert_non_null(strstr(t, "discovered 2, queued 2"));
  const char *late = strstr(t, "late.test"), *soon = strstr(t, "soon.test");
  assert_non_null(late);
  assert_non_null(soon);
  assert_true(late < soon); /* most overdue first */
  assert_non_null(strstr(t, "snoozed"));
  kr_buf_free(&b);
  kr_buf_init(&b, 64); /* too small: cut, with an error */
  assert_int_equal(kr_frontier_report_text(F, now(), 10, &b), KR_ETOOBIG);
  kr_buf_free(&b);
}

/* Adaptive revisiting: a wait beyond 32 bits of ms, a history built by
 * the wait policy stored verbatim (and one appended by the frontier when
 * none is given), validator trust persisted in the host row. */
static void adaptive_fields(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(2 * SEC);
  fopen_with(&o);
  add("http://a.test/x");
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  uint64_t big = UINT64_C(60) * 86400 * SEC; /* 60 days */
  kr_vhist_t h;
  kr_vhist_init(&h);
  kr_vhist_visit_t v = {.interval_s = 0, .state = KR_CONTENT_CHANGED, .age_s = 42};
  kr_vhist_append(&h, &v);
  uint8_t hb[KR_VHIST_BYTES];
  size_t hn = kr_vhist_encode(&h, hb, sizeof hb);
  kr_outcome_t s = {.kind = KR_OUTCOME_SUCCESS, .status = 200, .wait_ms = big, .content = 1,
                    .history = hb, .history_len = hn};
  assert_int_equal(kr_frontier_finished(F, c, &s, NULL, 0, now()), 0);
  kr_uri_row_t r = row_of("http://a.test/x");
  assert_true(r.wait_ms == big);
  assert_true(r.next_at == now() + big);
  assert_int_equal(r.history_len, hn);
  assert_memory_equal(r.history, hb, hn);
  /* politeness from the host's options */
  kr_hostq_t *hq = kr_frontier_host_lookup(F, "a.test", 6);
  assert_non_null(hq);
  assert_int_equal(kr_frontier_host_delay(F, hq, 10), 2 * SEC);
  kr_vtrust_t vt;
  kr_vtrust_init(&vt);
  vt.checks = 3;
  vt.misses = 1;
  vt.distrust_until = (int64_t)(T0 + 1000);
  kr_frontier_host_set_vtrust(F, hq, &vt);
  assert_int_equal(kr_frontier_commit(F), 0);
  assert_int_equal(kr_frontier_close(F), 0);
  F = NULL;
  fopen_with(&o);
  hq = kr_frontier_host_lookup(F, "a.test", 6);
  assert_non_null(hq);
  assert_int_equal(kr_frontier_host_vtrust(hq)->checks, 3);
  assert_int_equal(kr_frontier_host_vtrust(hq)->misses, 1);
  assert_true(kr_frontier_host_vtrust(hq)->distrust_until == (int64_t)(T0 + 1000));
  assert_int_equal(host("a.test").vt.checks, 3);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  assert_int_equal(kr_frontier_report_text(F, now(), 10, &b), 0);
  assert_non_null(strstr(b.data, "validators reliability"));
  kr_buf_free(&b);
  /* no history given: the frontier appends an unchanged visit itself */
  kr_clock_advance(&clk, big);
  adv(0);
  c = next();
  assert_non_null(c);
  kr_outcome_t u = {.kind = KR_OUTCOME_SUCCESS, .status = 200, .content = 0};
  assert_int_equal(kr_frontier_finished(F, c, &u, NULL, 0, now()), 0);
  r = row_of("http://a.test/x");
  assert_int_equal(kr_vhist_decode(&h, r.history, r.history_len), 0);
  assert_int_equal(h.n, 2);
  assert_int_equal(h.v[1].state, KR_CONTENT_UNCHANGED);
  assert_true(h.v[1].interval_s == (int64_t)(big / 1000));
  assert_int_equal(r.versions, 1);
  assert_int_equal(r.visits, 2);
  valid();
}

/* While the store drains its WAL (no transaction may begin), a completion
 * and links are held back — the URI keeps its slot, nothing is written —
 * and applied in order once the drain is over; the WAL then restarts. */
/* A retry with a Retry-After (robots.txt 503) comes after it instead of
 * retry-delay, but never later than backoff-max. */
/* Which of the two ra.test URLs c is (c is freed when it finishes). */
static const char *url_of_curi(const kr_curi_t *c) {
  return strcmp(c->url, "http://ra.test/a") == 0 ? "http://ra.test/a" : "http://ra.test/b";
}

static void retry_after_on_retry(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.retry_delay_ms = 3600 * SEC;
  o.backoff_max_ms = 600 * SEC;
  fopen_with(&o);
  add("http://ra.test/a");
  add("http://ra.test/b");
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  kr_outcome_t out = {.kind = KR_OUTCOME_RETRY, .status = 503, .retry_after_ms = 2 * SEC};
  const char *u = url_of_curi(c);
  assert_int_equal(kr_frontier_finished(F, c, &out, NULL, 0, now()), 0);
  assert_true(row_of(u).next_at == now() + 2 * SEC);
  adv(0);
  c = next();
  assert_non_null(c);
  out.retry_after_ms = 30 * 86400 * SEC; /* a month: capped */
  u = url_of_curi(c);
  assert_int_equal(kr_frontier_finished(F, c, &out, NULL, 0, now()), 0);
  assert_true(row_of(u).next_at == now() + 600 * SEC);
  out.retry_after_ms = 0; /* none: retry-delay */
  adv(2 * SEC);
  c = next();
  assert_non_null(c);
  u = url_of_curi(c);
  assert_int_equal(kr_frontier_finished(F, c, &out, NULL, 0, now()), 0);
  assert_true(row_of(u).next_at == now() + 3600 * SEC);
  valid();
}

/* Add links until the store begins a drain (bounded), running the loop
 * so checkpoint jobs end; the store is draining on return. */
static void fill_until_drain(uv_loop_t *loop, kr_store_t *st) {
  int n = 0, rounds = 0;
  while (kr_store_writable(st) && rounds++ < 2000) {
    kr_link_t l[50];
    char urls[50][96];
    for (int i = 0; i < 50; i++, n++) {
      snprintf(urls[i], sizeof(urls[i]), "http://w%d.test/some/longer/path/%d", n % 97, n);
      l[i] = (kr_link_t){.url = urls[i], .url_len = strlen(urls[i]), .hop_path = "L", .hop_len = 1};
    }
    assert_int_equal(kr_frontier_add_batch(F, l, 50, now(), NULL), 0);
    assert_int_equal(kr_frontier_turn(F, now()), 0);
    uv_run(loop, UV_RUN_NOWAIT);
  }
  assert_false(kr_store_writable(st));
}

/* A frontier on its own loop (1 MiB WAL threshold, commits of 50) with
 * one URI added and committed, its store draining. */
static kr_store_t *open_draining(uv_loop_t *loop, const char *url) {
  uv_loop_init(loop);
  kr_timers_close(&timers, NULL);
  kr_timers_init(&timers, loop, &clk);
  kr_frontier_opts_t o = fixed_delay(0);
  o.wal_checkpoint_mib = 1;
  o.commit_updates = 50;
  fopen_with(&o);
  kr_store_t *st = kr_frontier_store(F);
  add(url);
  kr_frontier_commit(F);
  fill_until_drain(loop, st);
  return st;
}

/* Close the frontier and the loop its timers run on (open_draining()). */
static void close_draining(uv_loop_t *loop) {
  kr_frontier_close(F);
  F = NULL;
  kr_timers_close(&timers, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(loop), 0);
}

/* The one text value of sql, read from the state DB by a connection of
 * its own, is want. */
static void file_row_is(const char *sql, const char *want) {
  char path[600];
  snprintf(path, sizeof path, "%s/kria.db", sdir);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(q, 0), want);
  sqlite3_finalize(q);
  sqlite3_close(db);
}

/* The store's other writes during a drain (WARC originals, the digest
 * index, robots.txt rows, hints, meta) begin no transaction: they are kept,
 * read back by the gets of the same keys, and written in the first
 * transaction after the drain, which restarts the WAL. Without that, one
 * such write per drain kept the WAL growing for ever under load. */
static void store_writes_kept_during_drain(void **state) {
  (void)state;
  uv_loop_t loop;
  kr_store_t *st = open_draining(&loop, "http://kept.test/a");
  assert_false(kr_store_in_tx(st));
  kr_store_stats_t s0 = *kr_store_stats(st);
  const char *u = "http://kept.test/a";
  uint64_t fp = kr_fp(u, strlen(u));
  uint8_t d[20];
  memset(d, 0x5a, sizeof d);
  const char *rid = "<urn:uuid:11111111-2222-4333-8444-555555555555>";
  assert_int_equal(kr_store_original_put(st, fp, d, 20, fp, 7000, rid), 0);
  assert_int_equal(kr_store_digest_put(st, d, 20, fp, 7000), 1);
  kr_store_robots_t rr = {.expires = 99000, .status = 200, .body = "User-agent: *", .body_len = 13};
  assert_int_equal(kr_store_robots_put(st, "http://kept.test", 16, &rr), 0);
  assert_int_equal(kr_store_meta_set(st, "kept.key", "v1"), 0);
  assert_int_equal(kr_store_meta_set(st, "kept.key", "v2"), 0);
  assert_true(kr_store_uri_set_hint(st, fp, 0.5) >= 0);
  const kr_store_stats_t *s1 = kr_store_stats(st);
  assert_int_equal(s1->begins, s0.begins);
  assert_int_equal(s1->drains_broken, s0.drains_broken);
  assert_int_equal(s1->writes_kept, s0.writes_kept + 6);
  assert_false(kr_store_in_tx(st));
  /* read back while kept */
  kr_original_t orig;
  assert_int_equal(kr_store_original_get(st, fp, &orig), 1);
  assert_string_equal(orig.rid, rid);
  assert_true(orig.ofp == fp && orig.date == 7000);
  assert_non_null(orig.url);
  assert_string_equal(orig.url, u);
  assert_int_equal(kr_store_original_find(st, d, 20, &orig), 1);
  assert_true(orig.ofp == fp);
  kr_store_digest_t ref;
  assert_int_equal(kr_store_digest_get(st, d, 20, &ref), 1);
  assert_true(ref.fp == fp && ref.date == 7000);
  kr_store_robots_t rb;
  assert_int_equal(kr_store_robots_get(st, "http://kept.test", 16, &rb), 1);
  assert_int_equal(rb.status, 200);
  assert_int_equal(rb.body_len, 13);
  assert_memory_equal(rb.body, "User-agent: *", 13);
  char v[16];
  assert_int_equal(kr_store_meta_get(st, "kept.key", v, sizeof v), 1);
  assert_string_equal(v, "v2");
  assert_int_equal(kr_store_stats(st)->begins, s0.begins); /* reads neither */
  /* the drain ends; the next turn writes them and the WAL starts over */
  for (int k = 0; k < 10000 && !kr_store_writable(st); k++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(kr_store_writable(st));
  uint64_t restarts = kr_store_stats(st)->restarts;
  assert_int_equal(kr_store_maybe_commit(st, now()) >= 0, 1);
  assert_true(kr_store_in_tx(st) || kr_store_stats(st)->commits > s0.commits);
  assert_int_equal(kr_store_commit(st), 0);
  assert_true(kr_store_stats(st)->restarts > restarts);
  assert_int_equal(kr_store_stats(st)->drains_broken, s0.drains_broken);
  assert_int_equal(kr_store_original_get(st, fp, &orig), 1);
  assert_string_equal(orig.rid, rid);
  assert_int_equal(kr_store_meta_get(st, "kept.key", v, sizeof v), 1);
  assert_string_equal(v, "v2");
  close_draining(&loop);
  /* in the file, from another connection */
  file_row_is("SELECT (SELECT count(*) FROM uris WHERE orig_date IS NOT NULL) || ' ' ||"
              " (SELECT count(*) FROM digests) || ' ' ||"
              " (SELECT status FROM robots WHERE origin = 'http://kept.test')"
              " || ' ' || (SELECT value FROM meta WHERE key = 'kept.key')"
              " || ' ' || (SELECT hint FROM uris WHERE url = 'http://kept.test/a')",
              "1 1 200 v2 0.5");
}

/* Kept writes past their limit (store.c, write_or_keep: 4,096 writes or
 * 8 MiB): the write that finds no room begins a transaction during the
 * drain (breaking it), which writes the kept ones first, in order, then
 * itself; later writes during the drain join it. Nothing is lost, and a
 * read of a key sees its newest value before, at and after the limit. */
static void meta_is(kr_store_t *st, const char *key, const char *want) {
  char v[32];
  if (kr_store_meta_get(st, key, v, sizeof v) != 1) fail_msg("meta %s lost", key);
  assert_string_equal(v, want);
}

static void store_kept_writes_limit(void **state) {
  (void)state;
  uv_loop_t loop;
  kr_store_t *st = open_draining(&loop, "http://kept.test/a");
  assert_false(kr_store_in_tx(st));
  kr_store_stats_t s0 = *kr_store_stats(st);
  /* 4,096 writes kept: every other one to the same key */
  char key[32], val[32];
  for (int i = 0; i < 4096; i++) {
    snprintf(key, sizeof key, i % 2 ? "lim.%d" : "lim.x", i);
    snprintf(val, sizeof val, i % 2 ? "v%d" : "x%d", i);
    assert_int_equal(kr_store_meta_set(st, key, val), 0);
  }
  assert_int_equal(kr_store_stats(st)->writes_kept, s0.writes_kept + 4096);
  assert_int_equal(kr_store_stats(st)->begins, s0.begins);
  assert_false(kr_store_in_tx(st));
  meta_is(st, "lim.x", "x4094");
  meta_is(st, "lim.4095", "v4095");
  /* the 4,097th: no room */
  assert_int_equal(kr_store_meta_set(st, "lim.x", "newest"), 0);
  assert_false(kr_store_writable(st)); /* still draining */
  assert_true(kr_store_in_tx(st));
  assert_int_equal(kr_store_stats(st)->writes_kept, s0.writes_kept + 4096);
  assert_int_equal(kr_store_stats(st)->begins, s0.begins + 1);
  assert_int_equal(kr_store_stats(st)->drains_broken, s0.drains_broken + 1);
  meta_is(st, "lim.x", "newest");
  meta_is(st, "lim.1", "v1");
  meta_is(st, "lim.4095", "v4095");
  assert_int_equal(kr_store_meta_set(st, "lim.1", "w1"), 0); /* joins it */
  assert_int_equal(kr_store_stats(st)->writes_kept, s0.writes_kept + 4096);
  meta_is(st, "lim.1", "w1");
  assert_int_equal(kr_store_commit(st), 0);
  /* 8 MiB: eight values of 1 MiB - 4 KiB are kept, the ninth finds no room */
  for (int k = 0; k < 100000 && !kr_store_writable(st); k++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(kr_store_writable(st));
  fill_until_drain(&loop, st);
  assert_false(kr_store_in_tx(st));
  s0 = *kr_store_stats(st);
  size_t big = (1u << 20) - 4096;
  char *v = malloc(big + 1), *got = malloc(big + 2);
  assert_non_null(v);
  assert_non_null(got);
  for (int i = 0; i < 9; i++) {
    memset(v, 'a' + i, big);
    v[big] = 0;
    snprintf(key, sizeof key, "big.%d", i % 3); /* three keys, each written three times */
    assert_int_equal(kr_store_meta_set(st, key, v), 0);
    assert_int_equal(kr_store_in_tx(st), i == 8);
    assert_int_equal(kr_store_meta_get(st, key, got, big + 2), 1);
    assert_int_equal(strlen(got), big);
    assert_int_equal(got[0], 'a' + i);
  }
  assert_int_equal(kr_store_stats(st)->writes_kept, s0.writes_kept + 8);
  assert_int_equal(kr_store_stats(st)->drains_broken, s0.drains_broken + 1);
  for (int i = 0; i < 3; i++) {
    snprintf(key, sizeof key, "big.%d", i);
    assert_int_equal(kr_store_meta_get(st, key, got, big + 2), 1);
    assert_int_equal(got[0], 'g' + i);
  }
  free(v);
  free(got);
  close_draining(&loop);
  /* in the file, from another connection */
  file_row_is("SELECT (SELECT count(*) FROM meta WHERE key LIKE 'lim.%') || ' ' ||"
              " (SELECT value FROM meta WHERE key = 'lim.x') || ' ' ||"
              " (SELECT value FROM meta WHERE key = 'lim.1') || ' ' ||"
              " (SELECT value FROM meta WHERE key = 'lim.4095') || ' ' ||"
              " (SELECT group_concat(substr(value, 1, 1) || length(value), ',')"
              "  FROM (SELECT value FROM meta WHERE key LIKE 'big.%' ORDER BY key))",
              "2049 newest w1 v4095 g1044480,h1044480,i1044480");
}

/* A frontier with options *op on loop (timers moved onto it from the one
 * without a loop) whose store drains after 1 MiB of WAL; its store. */
static kr_store_t *open_draining_soon_with(uv_loop_t *loop, kr_frontier_opts_t *op) {
  uv_loop_init(loop);
  kr_timers_close(&timers, NULL);
  kr_timers_init(&timers, loop, &clk);
  kr_frontier_opts_t o = *op;
  o.wal_checkpoint_mib = 1;
  o.commit_updates = 50;
  fopen_with(&o);
  return kr_frontier_store(F);
}

static kr_store_t *open_draining_soon(uv_loop_t *loop) {
  kr_frontier_opts_t o = fixed_delay(0);
  return open_draining_soon_with(loop, &o);
}

/* A link's sitemap hint is in its new row, also when the link was held
 * back by a drain (the hint used to be written to the row after the
 * finish, which found no row while the links waited: lost under load). */
static void link_hint_in_new_row(void **state) {
  (void)state;
  uv_loop_t loop;
  kr_store_t *st = open_draining_soon(&loop);
  kr_link_t now_l = {.url = "http://hint.test/now", .url_len = 20, .hop_path = "L",
                     .hop_len = 1, .hint_rate = 1.0 / 3600};
  assert_int_equal(kr_frontier_add(F, &now_l, now()), 1);
  add("http://hint.test/a");
  kr_frontier_commit(F);
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  fill_until_drain(&loop, st);
  kr_link_t held = {.url = "http://hint.test/held", .url_len = 21, .hop_path = "L",
                    .hop_len = 1, .hint_rate = 2.0 / 3600};
  kr_outcome_t ok = {.kind = KR_OUTCOME_SUCCESS, .status = 200, .wait_ms = 5 * SEC};
  assert_int_equal(kr_frontier_finished(F, c, &ok, &held, 1, now()), 0);
  for (int k = 0; k < 10000 && !kr_store_writable(st); k++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(kr_store_writable(st));
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  assert_int_equal(kr_frontier_commit(F), 0);
  assert_true(fabs(row_of("http://hint.test/now").hint_rate * 3600 - 1.0) < 1e-9);
  assert_true(fabs(row_of("http://hint.test/held").hint_rate * 3600 - 2.0) < 1e-9);
  assert_true(row_of("http://hint.test/a").hint_rate == 0);
  close_draining(&loop);
}

/* By IP, a host's address learned while the store holds writes back: the
 * move of its URIs waits, and so does the host — its next URI goes from
 * the address' queue once writes go through, never from the name's own
 * queue meanwhile (under load a held move let the host's seed go first,
 * outside the shared politeness clock). */
static void rekey_waits_for_drain(void **state) {
  (void)state;
  uv_loop_t loop;
  kr_frontier_opts_t o = fixed_delay(0);
  o.queue_assign = KR_QUEUE_BY_IP;
  o.ip_of = late_ip;
  learned = 0;
  kr_store_t *st = open_draining_soon_with(&loop, &o);
  add("http://v.test/1");
  add("http://v.test/2");
  kr_frontier_commit(F);
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  assert_string_equal(c->url, "http://v.test/1");
  kr_hostq_t *hv = c->host;
  fill_until_drain(&loop, st);
  learned = 1;
  kr_outcome_t ok = {.kind = KR_OUTCOME_SUCCESS, .status = 200, .wait_ms = 5 * SEC};
  assert_int_equal(kr_frontier_finished(F, c, &ok, NULL, 0, now()), 0);
  assert_int_equal(kr_frontier_host_rekey(F, hv, "http://v.test/", 14, now()), 0);
  /* the drain lasts: whatever is issued, nothing from v.test's own queue */
  adv(0);
  kr_curi_t *got[512];
  size_t n = 0;
  while (n < 512 && (got[n] = next()) != NULL) {
    assert_ptr_not_equal(got[n]->host, hv);
    n++;
  }
  while (n) kr_frontier_defer(F, got[--n], now());
  for (int k = 0; k < 10000 && !kr_store_writable(st); k++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(kr_store_writable(st));
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  for (int k = 0; k < 100; k++) uv_run(&loop, UV_RUN_NOWAIT);
  adv(0);
  while (n < 512 && (got[n] = next()) != NULL) {
    assert_ptr_not_equal(got[n]->host, hv);
    n++;
  }
  /* moved: v.test's URIs are in the queue of 10.0.0.9, with w*.test's */
  assert_int_equal(row_of("http://v.test/2").host_id,
                   row_of("http://w0.test/some/longer/path/0").host_id);
  assert_int_equal(host("v.test").queued, 0);
  while (n) kr_frontier_defer(F, got[--n], now());
  close_draining(&loop);
}

/* The next URI of host "held.test" (others issued meanwhile are deferred
 * back), or NULL. */
static kr_curi_t *next_held(void) {
  kr_curi_t *others[256], *got = NULL;
  size_t n = 0;
  while (n < 256) {
    kr_curi_t *c = next();
    if (!c) break;
    if (strncmp(c->url, "http://held.test/", 17) == 0) {
      got = c;
      break;
    }
    others[n++] = c;
  }
  while (n) kr_frontier_defer(F, others[--n], now());
  return got;
}

static void held_back_during_drain(void **state) {
  (void)state;
  uv_loop_t loop;
  kr_store_t *st = open_draining_soon(&loop);
  add("http://held.test/a");
  add("http://held.test/a2");
  kr_frontier_commit(F);
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  assert_string_equal(c->url, "http://held.test/a");
  fill_until_drain(&loop, st);
  char u[96];
  assert_true(kr_store_stats(st)->drains >= 1);
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  uint64_t before = s.c.discovered;
  /* Held back: the row and the link wait for the drain, but the slot is
   * free at once — the host goes on with its next URI. */
  kr_outcome_t ok = {.kind = KR_OUTCOME_SUCCESS, .status = 200, .wait_ms = 5 * SEC};
  snprintf(u, sizeof(u), "http://held.test/b");
  kr_link_t lb = {.url = u, .url_len = strlen(u), .hop_path = "L", .hop_len = 1};
  assert_int_equal(kr_frontier_finished(F, c, &ok, &lb, 1, now()), 0);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.held_back, 1);
  assert_int_equal(s.in_flight, 0);
  assert_int_equal(row_of("http://held.test/a").visits, 0); /* not written yet */
  valid(); /* heads and store agree, with the waiting row's new key */
  adv(0);
  c = next_held();
  assert_non_null(c);
  assert_string_equal(c->url, "http://held.test/a2");
  assert_int_equal(kr_frontier_finished(F, c, &ok, NULL, 0, now()), 0);
  valid();
  /* Its wait passes while the drain lasts: "a" is issued again from its
   * waiting row (one visit), not from the stale one in the store. */
  adv(5 * SEC);
  c = next_held();
  assert_non_null(c);
  assert_string_equal(c->url, "http://held.test/a");
  assert_int_equal(c->visits, 1);
  assert_int_equal(row_of("http://held.test/a").visits, 0);
  /* A link asking for "a" sooner arrives while it is in flight: it waits
   * too, and when it is applied "a" has finished with its row still
   * waiting behind it — the finish decides, as for a URI in flight. */
  assert_int_equal(add_at("http://held.test/a", KR_DIRECTIVE_HIGH, 0, KR_LINK_RESCHEDULE, "L"),
                   KR_FRONTIER_HELD);
  assert_int_equal(kr_frontier_finished(F, c, &ok, NULL, 0, now()), 0);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.held_back, 4);
  assert_int_equal(s.in_flight, 0);
  valid();
  size_t added = 9;
  kr_link_t lc = {.url = "http://held.test/c", .url_len = 18};
  assert_int_equal(kr_frontier_add_batch(F, &lc, 1, now(), &added), 0);
  assert_int_equal(added, 0);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.held_back, 5);
  assert_int_equal(s.c.discovered, before);
  /* The drain ends in a loop callback; the next turn applies both. */
  for (int k = 0; k < 10000 && !kr_store_writable(st); k++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(kr_store_writable(st));
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.held_back, 0);
  assert_int_equal(s.in_flight, 0);
  assert_int_equal(s.c.discovered, before + 2);
  assert_int_equal(row_of("http://held.test/a").visits, 2);
  assert_int_equal(row_of("http://held.test/a").directive, KR_DIRECTIVE_NORMAL);
  valid();
  assert_int_equal(row_of("http://held.test/a2").visits, 1);
  row_of("http://held.test/b");
  row_of("http://held.test/c");
  /* The first transaction after the drain wrote a fresh WAL. */
  uint64_t restarts = kr_store_stats(st)->restarts;
  assert_int_equal(kr_frontier_commit(F), 0);
  assert_true(kr_store_stats(st)->restarts > restarts || restarts > 0);
  valid();
  close_draining(&loop);
}

/* While a commit waits for its presync step (the WARC sync running in
 * the background), a completion is held back as during a drain: its row
 * is not written into the waiting transaction (whose sync does not
 * cover its records) and is applied, in its own transaction, after that
 * commit. Closing while a commit waits completes it, the step inline,
 * and writes what was held back. */
static int wait_mode, wait_calls, inline_calls;
static int presync_wait(void *ud, int may_wait) {
  (void)ud;
  wait_calls++;
  if (!may_wait) inline_calls++;
  return may_wait && wait_mode ? KR_STORE_PRESYNC_WAIT : 0;
}

static void held_back_while_commit_waits(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.commit_updates = 1;
  fopen_with(&o);
  kr_store_t *st = kr_frontier_store(F);
  wait_mode = wait_calls = inline_calls = 0;
  kr_store_set_presync(st, presync_wait, NULL);
  add("http://sync.test/a");
  add("http://sync.test/b");
  assert_int_equal(kr_frontier_commit(F), 0);
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  const char *first = strcmp(c->url, "http://sync.test/a") ? "http://sync.test/b"
                                                           : "http://sync.test/a";
  const char *second = first[17] == 'a' ? "http://sync.test/b" : "http://sync.test/a";
  wait_mode = 1;
  finish(c, KR_OUTCOME_SUCCESS, 10);
  assert_int_equal(kr_frontier_turn(F, now()), 0); /* due: the step starts */
  assert_true(kr_store_presync_waiting(st));
  assert_false(kr_store_writable(st));
  int calls = wait_calls;
  adv(0);
  c = next();
  assert_non_null(c);
  assert_string_equal(c->url, second);
  finish(c, KR_OUTCOME_SUCCESS, 10);
  kr_frontier_stats_t s;
  kr_frontier_stats(F, &s);
  assert_int_equal(s.held_back, 1);
  assert_int_equal(row_of(second).visits, 0); /* not in the waiting transaction */
  assert_int_equal(row_of(first).visits, 1);
  valid();
  assert_int_equal(kr_frontier_turn(F, now()), 0); /* still waiting */
  assert_int_equal(wait_calls, calls);
  /* The step is done: the next turn commits without calling it again,
   * then applies the held-back row (a transaction of its own). */
  kr_store_presync_done(st);
  uint64_t commits = kr_store_stats(st)->commits;
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  assert_int_equal(wait_calls, calls);
  assert_false(kr_store_presync_waiting(st));
  assert_true(kr_store_stats(st)->commits == commits + 1);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.held_back, 0);
  assert_int_equal(row_of(second).visits, 1);
  assert_true(kr_store_in_tx(st));
  assert_int_equal(kr_frontier_turn(F, now()), 0); /* its commit waits again */
  assert_true(kr_store_presync_waiting(st));
  valid();
  /* Closing while one waits: committed, its step inline. */
  assert_int_equal(kr_frontier_close(F), 0);
  F = NULL;
  assert_true(inline_calls >= 1);
  wait_mode = 0;
  fopen_with(&o);
  assert_int_equal(row_of(first).visits, 1);
  assert_int_equal(row_of(second).visits, 1);
}

/* Held back past the limit (opts.held_back_limit, 64 MiB by default)
 * while a commit waits for its presync step: past a quarter of it no
 * new fetch is issued; past it the waiting commit completes first, its
 * step inline and without any of the held-back writes (its sync began
 * before them), then everything held back is written at once, in order,
 * and fetches resume. */
static int held_row_at_step = -1; /* the first held-back link's row: 1 in the waiting tx */
static int presync_check_held(void *ud, int may_wait) {
  if (!may_wait) {
    kr_uri_row_t r;
    const char *u = "http://lim.test/p/0";
    held_row_at_step = kr_store_uri_get(ud, kr_fp(u, strlen(u)), &r);
  }
  return presync_wait(ud, may_wait);
}

static void held_back_limit_while_commit_waits(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.commit_updates = 1;
  o.held_back_limit = 64 << 10;
  fopen_with(&o);
  kr_store_t *st = kr_frontier_store(F);
  wait_mode = wait_calls = inline_calls = 0;
  held_row_at_step = -1;
  kr_store_set_presync(st, presync_check_held, st);
  add("http://lim.test/a");
  add("http://lim.test/b");
  assert_int_equal(kr_frontier_commit(F), 0);
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  wait_mode = 1;
  finish(c, KR_OUTCOME_SUCCESS, 10);
  assert_int_equal(kr_frontier_turn(F, now()), 0); /* due: the step starts */
  assert_true(kr_store_presync_waiting(st));
  adv(0);
  inline_calls = 0; /* the commit above ran its step inline */
  held_row_at_step = -1;
  uint64_t commits = kr_store_stats(st)->commits;
  /* links held back up to the limit (each add copies its link) */
  char url[64];
  kr_frontier_stats_t s;
  int n = 0, paused = 0;
  for (; n < 100000; n++) {
    kr_frontier_stats(F, &s);
    if (s.held_back_bytes >= o.held_back_limit) break;
    if (!paused && s.held_back_bytes >= o.held_back_limit / 4) {
      paused = 1;
      assert_null(next()); /* lim.test's other URI is ready, but waits */
    }
    snprintf(url, sizeof url, "http://lim.test/p/%d", n);
    assert_int_equal(add(url), KR_FRONTIER_HELD);
  }
  assert_true(paused);
  assert_true(n > 10 && s.held_back == (uint64_t)n);
  assert_true(kr_store_presync_waiting(st));
  assert_int_equal(inline_calls, 0);
  assert_int_equal(kr_store_stats(st)->commits, commits);
  /* the next write finds the limit reached */
  snprintf(url, sizeof url, "http://lim.test/p/%d", n++);
  assert_int_equal(add(url), 1); /* written at once */
  assert_int_equal(inline_calls, 1);
  assert_int_equal(held_row_at_step, 0); /* none in the waiting commit */
  assert_false(kr_store_presync_waiting(st));
  assert_int_equal(kr_store_stats(st)->commits, commits + 1);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.held_back, 0);
  assert_int_equal(s.held_back_bytes, 0);
  assert_int_equal(s.drains_cut, 1);
  for (int i = 0; i < n; i++) {
    snprintf(url, sizeof url, "http://lim.test/p/%d", i);
    row_of(url);
  }
  valid();
  adv(0);
  c = next(); /* fetches resume */
  assert_non_null(c);
  kr_frontier_defer(F, c, now());
  /* all of it committed */
  wait_mode = 0;
  assert_int_equal(kr_frontier_close(F), 0);
  F = NULL;
  fopen_with(&o);
  kr_frontier_stats(F, &s);
  assert_int_equal(s.c.discovered, (uint64_t)n + 2);
  snprintf(url, sizeof url, "http://lim.test/p/%d", n - 1);
  row_of(url);
  row_of("http://lim.test/p/0");
}

/* Checkpoints that fall behind (a reader pins them here, as a starved
 * checkpoint thread would) let the WAL reach its cap (3 x 1 MiB): from
 * then on kr_frontier_next() issues nothing though hosts are ready, the
 * fetch already running still completes and commits, and the WAL stays
 * near the cap. Once a checkpoint catches up the next turn tells the
 * crawl (on_ready) and fetches resume. */
static void wal_cap_holds_dispatch(void **state) {
  (void)state;
  kr_frontier_opts_t o = fixed_delay(0);
  o.wal_checkpoint_mib = 1;
  o.commit_updates = 50;
  fopen_with(&o);
  kr_store_t *st = kr_frontier_store(F);
  add("http://cap.test/a");
  add("http://other.test/x");
  assert_int_equal(kr_frontier_commit(F), 0);
  adv(0);
  kr_curi_t *c = next();
  assert_non_null(c);
  char url[64];
  snprintf(url, sizeof(url), "%.*s", (int)c->url_len, c->url);
  char path[400];
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  sqlite3 *rd;
  assert_int_equal(sqlite3_open_v2(path, &rd, SQLITE_OPEN_READONLY, kr_store_vfs()), SQLITE_OK);
  assert_int_equal(sqlite3_exec(rd, "BEGIN; SELECT count(*) FROM uris", NULL, NULL, NULL),
                   SQLITE_OK);
  int n = 0, rounds = 0;
  while (!kr_store_wal_held(st) && rounds++ < 4000) {
    kr_link_t l[50];
    char urls[50][96];
    for (int i = 0; i < 50; i++, n++) {
      snprintf(urls[i], sizeof(urls[i]), "http://w%d.test/some/longer/path/%d", n % 97, n);
      l[i] = (kr_link_t){.url = urls[i], .url_len = strlen(urls[i]), .hop_path = "L", .hop_len = 1};
    }
    assert_int_equal(kr_frontier_add_batch(F, l, 50, now(), NULL), 0);
    assert_int_equal(kr_frontier_turn(F, now()), 0);
  }
  assert_true(kr_store_wal_held(st));
  /* Ready hosts, nothing issued. */
  adv(0);
  assert_null(next());
  assert_null(next());
  /* The running fetch completes and commits. */
  finish(c, KR_OUTCOME_SUCCESS, 10);
  assert_int_equal(kr_frontier_commit(F), 0);
  assert_int_equal(row_of(url).visits, 1);
  assert_null(next());
  const kr_store_stats_t *ss = kr_store_stats(st);
  printf("# WAL held at %llu frames, largest %llu\n", (unsigned long long)ss->wal_frames,
         (unsigned long long)ss->wal_frames_max);
  assert_true(ss->wal_frames_max < 768 + 128); /* cap + about one round */
  /* The reader goes; the next turn's checkpoint copies every frame. */
  sqlite3_exec(rd, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(rd);
  int calls = ready_calls;
  assert_int_equal(kr_frontier_turn(F, now()), 0);
  assert_false(kr_store_wal_held(st));
  assert_true(ready_calls > calls);
  c = next();
  assert_non_null(c);
  finish(c, KR_OUTCOME_SUCCESS, 10);
  assert_int_equal(kr_frontier_commit(F), 0);
  assert_true(ss->wal_frames < 256); /* the WAL restarted */
  valid();
}

/* ---- heads ---------------------------------------------------------------- */

/* The heads each host queue keeps in memory (KR_HEADS of them, refilled
 * from the store when they run out) must always be the exact top of the
 * queue: random adds, raises, revivals, issues, every outcome, deferrals
 * and time, with more URIs per host than heads and two slots;
 * kr_frontier_validate compares heads and store after every step, and
 * every issued URI must be the best due one. With a loop, the store also
 * drains now and then (a 1 MiB checkpoint threshold, padded URLs): the
 * completions meanwhile free their slots at once and their rows wait,
 * and the heads must follow the waiting rows' new keys. */
static void heads_walk(uv_loop_t *loop, int steps) {
  kr_frontier_opts_t o = fixed_delay(100);
  o.host_valence = 2;
  if (loop) {
    o.wal_checkpoint_mib = 1;
    o.commit_updates = 20;
  }
  fopen_with(&o);
  kr_store_t *st = kr_frontier_store(F);
  uint64_t rng = 42;
  kr_curi_t *fly[8];
  size_t nfly = 0;
  char url[160];
  int issued = 0, outcomes[5] = {0}, held = 0;
  const char *pad = loop ? "/padding-to-fill-the-wal-faster-padding-to-fill-the-wal" : "";
  for (int step = 0; step < steps; step++) {
    rng = rng * 6364136223846793005u + 1442695040888963407u;
    unsigned r = (unsigned)(rng >> 33);
    unsigned op = r % 100;
    if (op < 30) { /* a link: new or known, sometimes asking for more */
      snprintf(url, sizeof url, "http://h%u.test%s/p%u", (r >> 8) % 3, pad, (r >> 10) % 40);
      int dir = (int)((r >> 16) % 4);
      uint64_t at = (r >> 18) & 1 ? now() + ((r >> 19) % 50) * SEC : 0;
      unsigned flags = (r >> 25) % 3 == 0 ? KR_LINK_RESCHEDULE | KR_LINK_REVIVE : 0;
      assert_true(add_at(url, dir, at, flags, "L") >= 0);
    } else if (op < 65) {
      if (nfly < 8) {
        kr_curi_t *c = next();
        if (c) {
          fly[nfly++] = c;
          issued++;
        }
      }
    } else if (op < 93) {
      if (nfly) {
        size_t i = (r >> 8) % nfly;
        kr_curi_t *c = fly[i];
        fly[i] = fly[--nfly];
        unsigned k = (r >> 12) % 5;
        outcomes[k]++;
        if (!kr_store_writable(st)) held++;
        if (k == 4) {
          kr_frontier_defer(F, c, now());
        } else {
          kr_outcome_kind_t kinds[] = {KR_OUTCOME_SUCCESS, KR_OUTCOME_RETRY,
                                       KR_OUTCOME_FAILED, KR_OUTCOME_DISREGARDED};
          /* links too, so the WAL fills and drains come */
          kr_link_t ls[8];
          char lu[8][160];
          size_t nl = loop ? 8 : 0;
          for (size_t j = 0; j < nl; j++) {
            snprintf(lu[j], sizeof lu[j], "http://h%u.test%s/q%u-%zu", (r >> 4) % 3, pad,
                     step, j);
            ls[j] = (kr_link_t){.url = lu[j], .url_len = strlen(lu[j]), .hop_path = "L",
                                .hop_len = 1};
          }
          kr_outcome_t out = {.kind = kinds[k], .status = 200, .fetch_ms = 5,
                              .bytes = 10, .wait_ms = (1 + (r >> 16) % 30) * SEC};
          assert_int_equal(kr_frontier_finished(F, c, &out, ls, nl, now()), 0);
        }
      }
    } else if (op < 97) {
      adv(((r >> 8) % 3000));
    } else if (op < 99 || !loop) {
      assert_int_equal(kr_frontier_turn(F, now()), 0);
    } else if ((r >> 20) % 3 == 0) {
      uv_run(loop, UV_RUN_NOWAIT); /* a checkpoint job may end, and a drain */
    }
    valid();
  }
  while (nfly) finish(fly[--nfly], KR_OUTCOME_SUCCESS, 1);
  valid();
  assert_true(issued > 150); /* the walk did exercise the heads */
  for (int k = 0; k < 5; k++) assert_true(outcomes[k] > 20);
  if (loop) {
    assert_true(kr_store_stats(st)->drains >= 2);
    fprintf(stderr, "# drains %" PRIu64 ", completions during them %d\n",
            kr_store_stats(st)->drains, held);
    assert_true(held > 20); /* completions did arrive during drains */
    for (int k = 0; k < 10000 && !kr_store_writable(st); k++) uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(kr_frontier_turn(F, now()), 0);
    kr_frontier_stats_t s;
    kr_frontier_stats(F, &s);
    assert_int_equal(s.held_back, 0);
    valid(); /* the counters match the store again */
  }
}

static void heads_follow_the_store(void **state) {
  (void)state;
  heads_walk(NULL, 4000);
}

static void heads_follow_the_store_through_drains(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_timers_close(&timers, NULL); /* the one without a loop */
  kr_timers_init(&timers, &loop, &clk);
  heads_walk(&loop, 8000);
  close_draining(&loop);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(state_derivation),
      T(valence_two_slots),
      T(add_never_later_and_raise),
      T(longest_ready_first),
      T(no_starvation_1000_hosts),
      T(max_connections_cap),
      T(politeness_clamp_and_crawl_delay),
      T(outcomes),
      T(failed_never_when_not_revisited),
      T(backoff_growth_cap_reset),
      T(backoff_gives_up_in_a_snapshot),
      T(failed_with_host_comes_back_with_it),
      T(host_failures_snooze),
      T(prerequisites_gate),
      T(dedupe_in_memory),
      T(commit_boundaries),
      T(recovery_after_crash),
      T(learned_record),
      T(seen_loaded_lazily),
      T(refusals),
      T(snapshot_done),
      T(limits_stop_issuing),
      T(limits_documents_exact),
      T(host_uri_cap),
      T(retire_gone),
      T(retire_gone_never),
      T(retire_unlinked),
      T(limits_per_period),
      T(queue_assignment),
      T(rekey_to_address),
      T(rekey_waits_for_drain),
      T(retry_after_parser),
      T(report),
      T(held_back_during_drain),
      T(link_hint_in_new_row),
      T(store_writes_kept_during_drain),
      T(store_kept_writes_limit),
      T(held_back_while_commit_waits),
      T(held_back_limit_while_commit_waits),
      T(wal_cap_holds_dispatch),
      T(adaptive_fields),
      T(retry_after_on_retry),
      T(heads_follow_the_store),
      T(heads_follow_the_store_through_drains),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
