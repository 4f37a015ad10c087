/*
 * Fuzz regressions: every input under test/fuzz/regress/<target>/ (each
 * one a minimised crash or invariant failure a fuzzer once found) and
 * every seed under test/fuzz/corpus/<target>/ is replayed through the
 * same entry point libFuzzer calls, here built without libFuzzer (and
 * under ASan/UBSan with SANITIZE=1). The harnesses are included whole,
 * each with its entry point renamed, so their invariants fail the test
 * through cmocka instead of abort(). So `make check` guards every crash
 * ever found, and the harnesses themselves cannot rot between fuzz runs.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *fuzz_current = "(none)";

#define FUZZ_FAIL(msg) fail_msg("%s: %s", fuzz_current, (msg))

#define FUZZ_ENTRY fuzz_url_entry
#include "../fuzz/fuzz_url.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_robots_entry
#include "../fuzz/fuzz_robots.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_extract_entry
#include "../fuzz/fuzz_extract.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_inflate_entry
#include "../fuzz/fuzz_inflate.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_config_entry
#include "../fuzz/fuzz_config.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_hoststate_entry
#include "../fuzz/fuzz_hoststate.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_http_entry
#include "../fuzz/fuzz_http.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_warc_entry
#include "../fuzz/fuzz_warc.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_seeds_entry
#include "../fuzz/fuzz_seeds.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_wacz_entry
#include "../fuzz/fuzz_wacz.c"
#undef FUZZ_ENTRY

typedef int fuzz_entry_fn(const uint8_t *data, size_t size);

static const char *top_dir(void) {
  const char *t = getenv("KRIA_TOP");
  return t && *t ? t : ".";
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file of test/fuzz/<kind>/<target>/ in name order;
 * the number replayed (0 when the directory does not exist). */
static size_t replay_dir(const char *kind, const char *target, fuzz_entry_fn *entry) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/test/fuzz/%s/%s", top_dir(), kind, target);
  DIR *d = opendir(dir);
  if (!d) return 0;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      names = realloc(names, cap * sizeof *names);
      assert_non_null(names);
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, name_cmp);
  size_t done = 0;
  char path[4096 + 256];
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(len >= 0 && len <= (1L << 20));
    /* Exactly the input's size, as libFuzzer hands it over, so ASan sees
     * a read past the end. */
    uint8_t *buf = malloc(len ? (size_t)len : 1);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    fuzz_current = path;
    assert_int_equal(entry(buf, (size_t)len), 0);
    free(buf);
    done++;
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  fuzz_current = "(none)";
  return done;
}

static void replay(const char *target, fuzz_entry_fn *entry, size_t min_seeds) {
  size_t r = replay_dir("regress", target, entry);
  size_t c = replay_dir("corpus", target, entry);
  printf("# %s: %zu regression inputs, %zu seeds replayed\n", target, r, c);
  /* The corpus must be there (KRIA_TOP points at the checkout). */
  assert_true(c >= min_seeds);
}

static void test_url(void **state) {
  replay("url", fuzz_url_entry, 100);
  for (unsigned i = 0; i < 16; i++)
    for (unsigned k = 0; k < 4; k++) kr_url_canon_opts_free(url_opts[i][k]);
  for (unsigned i = 0; i < 4; i++) kr_url_free(url_base_urls[i]);
  memset(url_opts, 0, sizeof url_opts);
  memset(url_base_urls, 0, sizeof url_base_urls);
}

static void test_robots(void **state) { replay("robots", fuzz_robots_entry, 100); }

static void test_extract(void **state) { replay("extract", fuzz_extract_entry, 1); }

static void test_inflate(void **state) {
  replay("inflate", fuzz_inflate_entry, 10);
  for (unsigned i = 0; i < 4; i++) kr_inflate_free(infl_reused[i]);
  memset(infl_reused, 0, sizeof infl_reused);
}

static void test_config(void **state) { replay("config", fuzz_config_entry, 5); }

static void test_hoststate(void **state) { replay("hoststate", fuzz_hoststate_entry, 5); }

static void test_warc(void **state) { replay("warc", fuzz_warc_entry, 5); }

static void test_seeds(void **state) {
  replay("seeds", fuzz_seeds_entry, 5);
  for (unsigned i = 0; i < 32; i++) kr_url_canon_opts_free(seedsfz_opts[i]);
  memset(seedsfz_opts, 0, sizeof seedsfz_opts);
}

static void test_wacz(void **state) { replay("wacz", fuzz_wacz_entry, 5); }

static void test_http(void **state) {
  replay("http", fuzz_http_entry, 10);
  fuzz_http_cleanup();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_url),     cmocka_unit_test(test_robots),
      cmocka_unit_test(test_extract), cmocka_unit_test(test_inflate),
      cmocka_unit_test(test_config),  cmocka_unit_test(test_http),
      cmocka_unit_test(test_warc),    cmocka_unit_test(test_seeds),
      cmocka_unit_test(test_wacz),    cmocka_unit_test(test_hoststate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
