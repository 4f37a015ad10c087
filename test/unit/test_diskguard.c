/*
 * diskguard.c with a stand-in statvfs: the marks (scaled down on small
 * file systems), the reserve file made, released when the free space
 * falls below the low mark and made again only at the resume mark, the
 * once-per-millisecond rate limit, a failing statvfs taken as "room".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskguard.h"

#define MIB (1ull << 20)

static uint64_t fake_size, fake_avail;
static int fake_fail, looks;

static int fake_statvfs(const char *path, struct statvfs *sv) {
  (void)path;
  looks++;
  if (fake_fail) return -1;
  memset(sv, 0, sizeof *sv);
  sv->f_frsize = 4096;
  sv->f_blocks = fake_size / 4096;
  sv->f_bavail = fake_avail / 4096;
  return 0;
}

static char dir[] = "/tmp/kria-test-diskguard-XXXXXX";
static char reserve[sizeof dir + 32];

static off_t reserve_size(void) {
  struct stat sb;
  return stat(reserve, &sb) == 0 ? sb.st_size : -1;
}

static void guard_cycle(void **state) {
  (void)state;
  fake_size = 160 * MIB;
  fake_avail = 100 * MIB;
  fake_fail = 0;
  kr_diskguard_t *g = kr_diskguard_new(dir, fake_statvfs);
  kr_diskguard_stats_t st;
  kr_diskguard_stats(g, &st);
  assert_true(st.reserve == 8 * MIB && st.low_mark == 4 * MIB && st.resume_mark == 16 * MIB);
  assert_int_equal(reserve_size(), (off_t)(8 * MIB));
  assert_int_equal(kr_diskguard_check(g, 1), 0);
  /* the disk fills: within the same millisecond nothing is looked at */
  fake_avail = 1 * MIB;
  looks = 0;
  assert_int_equal(kr_diskguard_check(g, 1), 0);
  assert_int_equal(looks, 0);
  assert_int_equal(kr_diskguard_check(g, 2), 1);
  assert_int_equal(looks, 1);
  assert_int_equal(reserve_size(), -1); /* released */
  kr_diskguard_stats(g, &st);
  assert_true(st.low && st.lows == 1 && st.reserve == 0 && st.avail == 1 * MIB);
  assert_int_equal(kr_diskguard_check(g, 0), 1); /* stays low */
  /* above the low mark but below the resume mark: still held */
  fake_avail = 10 * MIB;
  assert_int_equal(kr_diskguard_recover(g), 0);
  assert_int_equal(reserve_size(), -1);
  fake_avail = 20 * MIB;
  assert_int_equal(kr_diskguard_recover(g), 1);
  assert_int_equal(reserve_size(), (off_t)(8 * MIB));
  assert_int_equal(kr_diskguard_check(g, 0), 0);
  kr_diskguard_stats(g, &st);
  assert_true(!st.low && st.lows == 1 && st.reserve == 8 * MIB);
  /* a failing statvfs is no reason to hold the crawl */
  fake_fail = 1;
  assert_int_equal(kr_diskguard_check(g, 0), 0);
  kr_diskguard_free(g);
  assert_int_equal(reserve_size(), -1);
}

static void small_file_system(void **state) {
  (void)state;
  fake_fail = 0;
  fake_size = 16 * MIB;
  fake_avail = 12 * MIB;
  kr_diskguard_t *g = kr_diskguard_new(dir, fake_statvfs);
  kr_diskguard_stats_t st;
  kr_diskguard_stats(g, &st);
  assert_true(st.reserve == 1 * MIB && st.low_mark == 512 * 1024 &&
              st.resume_mark == 2 * MIB);
  assert_int_equal(reserve_size(), (off_t)(1 * MIB));
  fake_avail = 600 * 1024;
  assert_int_equal(kr_diskguard_check(g, 0), 0);
  fake_avail = 100 * 1024;
  assert_int_equal(kr_diskguard_check(g, 0), 1);
  kr_diskguard_free(g);
  /* too little room at start: no reserve, the first look goes low */
  fake_avail = 1 * MIB;
  g = kr_diskguard_new(dir, fake_statvfs);
  assert_int_equal(reserve_size(), -1);
  fake_avail = 100 * 1024;
  assert_int_equal(kr_diskguard_check(g, 0), 1);
  kr_diskguard_free(g);
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  snprintf(reserve, sizeof reserve, "%s/kria.reserve", dir);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(guard_cycle),
      cmocka_unit_test(small_file_system),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  unlink(reserve);
  rmdir(dir);
  return rc;
}
