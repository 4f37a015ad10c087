/* The WARC files' durability as the store sees it: what a presync step
 * writes (how far the open WARC files were synced) commits with the rows
 * of that commit, in the same transaction, and is gone with them after a
 * kill. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kria/error.h"
#include "kria/fp.h"
#include "log.h"
#include "store.h"

static char tmpdir[256];
static char sdir[300];

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(p);
}

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/kria-test-warcsync-XXXXXX");
  if (!mkdtemp(tmpdir)) return -1;
  snprintf(sdir, sizeof sdir, "%s/state", tmpdir);
  kr_log_level = KR_LOG_ERROR;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

static kr_store_t *open_ok(void) {
  kr_store_t *st = NULL;
  char err[512];
  if (kr_store_open(sdir, NULL, &st, err, sizeof err)) fail_msg("open: %s", err);
  return st;
}

static kr_uri_row_t row(const char *url, int64_t host) {
  kr_uri_row_t r;
  memset(&r, 0, sizeof r);
  r.url = url;
  r.url_len = strlen(url);
  r.fp = kr_fp(url, r.url_len);
  r.host_id = host;
  r.next_at = 1;
  r.first_seen = 1000;
  r.hop_path = "L";
  r.hop_len = 1;
  return r;
}

static kr_store_t *meta_st;
static char meta_value[32];
static int presync_calls;
static void on_presync_meta(void *ud) {
  (void)ud;
  presync_calls++;
  assert_int_equal(kr_store_meta_set(meta_st, "warc.synced", meta_value), 0);
}

static void presync_meta_commits_with_the_rows(void **state) {
  (void)state;
  kr_store_t *st = open_ok();
  meta_st = st;
  presync_calls = 0;
  kr_store_set_presync(st, on_presync_meta, NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "m", 1, &h), 0);
  snprintf(meta_value, sizeof meta_value, "100 a.warc.gz.open");
  uint64_t commits = kr_store_stats(st)->commits;
  assert_int_equal(kr_store_commit(st), 0);
  assert_int_equal(presync_calls, 1);
  assert_true(kr_store_stats(st)->commits == commits + 1); /* one, not two */
  assert_false(kr_store_in_tx(st));
  kr_uri_row_t a = row("http://m/a", h);
  assert_true(kr_store_uri_insert(st, &a) >= 0);
  snprintf(meta_value, sizeof meta_value, "200 a.warc.gz.open");
  assert_int_equal(kr_store_commit(st), 0);
  kr_uri_row_t b = row("http://m/b", h);
  assert_true(kr_store_uri_insert(st, &b) >= 0);
  kr_store_abandon(st); /* kill -9 before the next commit */
  st = open_ok();
  char v[64];
  assert_int_equal(kr_store_meta_get(st, "warc.synced", v, sizeof v), 1);
  assert_string_equal(v, "200 a.warc.gz.open");
  uint64_t n;
  assert_int_equal(kr_store_count_uris(st, &n), 0);
  assert_int_equal(n, 1);
  kr_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(presync_meta_commits_with_the_rows, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
