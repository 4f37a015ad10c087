/*
 * Unit tests for the config module: unit parsers, every error path with
 * its line number, per-host override resolution up the domain chain,
 * [wait] stacks (configured and Figure 12's), -o overrides, hostile
 * input, and config/kria.conf against the schema.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kria/config.h"
#include "kria/error.h"

/* ---- helpers ------------------------------------------------------------ */

static const char *top_dir(void) {
  const char *t = getenv("KRIA_TOP");
  return t && *t ? t : ".";
}

static kr_config_t *load(const char *text, int *rc) {
  kr_config_t *cfg = kr_config_new();
  int r = kr_config_load_string(cfg, "t.conf", text, strlen(text));
  if (rc) *rc = r;
  return cfg;
}

/* Load and finish, expecting no error. */
static kr_config_t *load_ok(const char *text) {
  kr_config_t *cfg = load(text, NULL);
  int rc = kr_config_finish(cfg);
  for (size_t i = 0; i < kr_config_error_count(cfg); i++)
    print_error("unexpected: %s\n", kr_config_error(cfg, i));
  assert_int_equal(kr_config_error_total(cfg), 0);
  assert_int_equal(rc, 0);
  return cfg;
}

static int has_error(const kr_config_t *cfg, const char *needle) {
  for (size_t i = 0; i < kr_config_error_count(cfg); i++)
    if (strstr(kr_config_error(cfg, i), needle)) return 1;
  return 0;
}

static void expect_error(kr_config_t *cfg, const char *needle) {
  if (!has_error(cfg, needle)) {
    print_error("no error containing \"%s\"; have:\n", needle);
    for (size_t i = 0; i < kr_config_error_count(cfg); i++)
      print_error("  %s\n", kr_config_error(cfg, i));
    fail();
  }
}

/* One bad line: load text, expect KR_ECONFIG and exactly one error
 * containing needle. */
static void one_error(const char *text, const char *needle) {
  int rc;
  kr_config_t *cfg = load(text, &rc);
  if (rc == 0) rc = kr_config_finish(cfg);
  assert_int_equal(rc, KR_ECONFIG);
  expect_error(cfg, needle);
  if (kr_config_error_total(cfg) != 1) {
    for (size_t i = 0; i < kr_config_error_count(cfg); i++)
      print_error("  %s\n", kr_config_error(cfg, i));
  }
  assert_int_equal(kr_config_error_total(cfg), 1);
  kr_config_free(cfg);
}

static char *fmt_key(const kr_config_view_t *v, kr_cfg_key_t k) {
  static char out[4096];
  kr_buf_t b;
  kr_buf_init(&b, sizeof out - 1);
  assert_int_equal(kr_config_format(v, k, &b), 0);
  snprintf(out, sizeof out, "%s", b.data ? b.data : "");
  kr_buf_free(&b);
  return out;
}

/* ---- unit parsers ----------------------------------------------------------- */

static void durations_parse_with_units(void **state) {
  (void)state;
  static const struct { const char *in; int64_t ms; } ok[] = {
      {"0", 0},           {"0s", 0},          {"1ms", 1},         {"30s", 30000},
      {"1m", 60000},      {"1h30m", 5400000}, {"2d", 172800000},  {"1m1ms", 60001},
      {"1d1h1m1s1ms", 90061001}, {"300s", 300000}, {"9223372036854775807ms", INT64_MAX},
      {"106751991167d", 106751991167LL * 86400000},
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    int64_t ms = -1;
    assert_int_equal(kr_config_parse_duration(ok[i].in, strlen(ok[i].in), &ms), 0);
    assert_int_equal(ms, ok[i].ms);
  }
  static const char *const bad[] = {"", "30", "1x", "-1s", "+1s", "1.5s", "s", "1h 30m",
                                     "1S", "ms", "1msx", "5 s", "0x10s", "1hm"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int64_t ms;
    assert_int_equal(kr_config_parse_duration(bad[i], strlen(bad[i]), &ms), KR_EINVAL);
  }
  static const char *const big[] = {"9223372036854775808ms", "106751991168d",
                                     "106751991167d1d", "99999999999999999999999s",
                                     "9223372036854776s"};
  for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
    int64_t ms;
    assert_int_equal(kr_config_parse_duration(big[i], strlen(big[i]), &ms), KR_ETOOBIG);
  }
  /* the length bounds the parse: "30s" cut to "30" has no unit */
  int64_t ms;
  assert_int_equal(kr_config_parse_duration("30s", 2, &ms), KR_EINVAL);
}

static void durations_format_round_trip(void **state) {
  (void)state;
  char buf[64];
  static const struct { int64_t ms; const char *out; } cases[] = {
      {0, "0"}, {90000, "1m30s"}, {300000, "5m"}, {2419200000LL, "28d"}, {1, "1ms"},
      {90061001, "1d1h1m1s1ms"}, {200000, "3m20s"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kr_config_format_duration(cases[i].ms, buf, sizeof buf);
    assert_string_equal(buf, cases[i].out);
  }
  for (int64_t ms = 1; ms < INT64_MAX / 7; ms = ms * 7 + 3) {
    int64_t back;
    kr_config_format_duration(ms, buf, sizeof buf);
    assert_int_equal(kr_config_parse_duration(buf, strlen(buf), &back), 0);
    assert_int_equal(back, ms);
  }
  kr_config_format_duration(INT64_MAX, buf, sizeof buf);
  int64_t back;
  assert_int_equal(kr_config_parse_duration(buf, strlen(buf), &back), 0);
  assert_int_equal(back, INT64_MAX);
}

static void sizes_parse_with_units(void **state) {
  (void)state;
  static const struct { const char *in; uint64_t b; } ok[] = {
      {"0", 0},          {"512", 512},         {"512B", 512},       {"500KiB", 512000},
      {"1k", 1000},      {"1K", 1000},         {"1kB", 1000},       {"1 MiB", 1048576},
      {"2G", 2000000000}, {"1TiB", 1ull << 40}, {"16777215TiB", 16777215ull << 40},
      {"18446744073709551615", UINT64_MAX},
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    uint64_t b = 1;
    assert_int_equal(kr_config_parse_size(ok[i].in, strlen(ok[i].in), &b), 0);
    assert_true(b == ok[i].b);
  }
  static const char *const bad[] = {"", "1.5MiB", "1kib", "MiB", "-1", "1 X", "1mb", " 1",
                                     "1KiBB", "0x10"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint64_t b;
    assert_int_equal(kr_config_parse_size(bad[i], strlen(bad[i]), &b), KR_EINVAL);
  }
  uint64_t b;
  assert_int_equal(kr_config_parse_size("18446744073709551616", 20, &b), KR_ETOOBIG);
  assert_int_equal(kr_config_parse_size("16777216TiB", 11, &b), KR_ETOOBIG);
  assert_int_equal(kr_config_parse_size("18446744073709552T", 18, &b), KR_ETOOBIG);

  char buf[64];
  static const struct { uint64_t b; const char *out; } fmt[] = {
      {0, "0"}, {512000, "500KiB"}, {1000, "1k"}, {1500, "1500"}, {1ull << 40, "1TiB"},
      {3000000, "3M"}, {65536, "64KiB"},
  };
  for (size_t i = 0; i < sizeof fmt / sizeof *fmt; i++) {
    kr_config_format_size(fmt[i].b, buf, sizeof buf);
    assert_string_equal(buf, fmt[i].out);
  }
}

/* A size that fits uint64 but not the config's int64, and values outside
 * a key's range, are errors naming the key and the range. */
static void numbers_out_of_range(void **state) {
  (void)state;
  one_error("[limits]\nmax-bytes-download = 16777215TiB\n",
            "t.conf:2: limits.max-bytes-download: '16777215TiB' is too large");
  one_error("[limits]\nmax-bytes-download = 1025TiB\n",
            "t.conf:2: limits.max-bytes-download: '1025TiB' is out of range 0..1024TiB");
  one_error("[http]\n\ntimeout-connect = 11m\n",
            "t.conf:3: http.timeout-connect: '11m' is out of range 10ms..10m");
  one_error("[http]\ntimeout-connect = 9ms\n", "out of range 10ms..10m");
  one_error("[politeness]\nhost-valence = 65\n",
            "t.conf:2: politeness.host-valence: '65' is out of range 1..64");
  one_error("[politeness]\nmax-retries = 99999999999999999999\n", "is too large");
  one_error("[politeness]\ndelay-factor = 1000.5\n", "out of range 0..1000");
  one_error("[politeness]\ndelay-factor = -1\n", "out of range 0..1000");
  one_error("[politeness]\ndelay-factor = 1e999\n", "is too large");
  one_error("[politeness]\ndelay-factor = nan\n", "bad number 'nan'");
  one_error("[politeness]\ndelay-factor = 0x10\n", "bad number");
  one_error("[robots]\nmax-size = 499KiB\n", "out of range 500KiB..64MiB");
  one_error("[wait \"x\"]\nchanged-factor = 0.5\n", "wait.x.changed-factor: '0.5' is out of range 1..1000");
  one_error("[limits]\nmax-document-download = 1e3\n", "bad integer '1e3'");
  kr_config_t *cfg = load_ok("[politeness]\ndelay-factor = 2.5e0\nmax-retries = +7\n");
  assert_true(kr_config_float(kr_config_global(cfg), KR_CFG_POLITENESS_DELAY_FACTOR) == 2.5);
  assert_int_equal(kr_config_int(kr_config_global(cfg), KR_CFG_POLITENESS_MAX_RETRIES), 7);
  kr_config_free(cfg);
}

/* ---- errors with line numbers ------------------------------------------------- */

static void every_error_path_has_its_line(void **state) {
  (void)state;
  one_error("[nope]\n", "t.conf:1: unknown section [nope]");
  one_error("[http]\nfoo = 1\n", "t.conf:2: unknown key 'foo' in [http]");
  one_error("[http]\nmin-delay = 1s\n",
            "t.conf:2: unknown key 'min-delay' in [http] (it belongs in [politeness])");
  one_error("name = x\n[crawl]\n", "t.conf:1: key outside of any section");
  one_error("[crawl]\nrevisit\n", "t.conf:2: expected 'key = value', got 'revisit'");
  one_error("[crawl]\n = x\n", "t.conf:2: missing key name");
  one_error("[http\n", "t.conf:1: bad section header '[http'");
  one_error("[http] x\n", "bad section header");
  one_error("[host \"a]\n", "bad section header");
  one_error("[wait]\n", "t.conf:1: [wait] needs a name: [wait \"NAME\"]");
  one_error("[host]\n", "[host] needs a name");
  one_error("[crawl \"x\"]\n", "t.conf:1: [crawl] takes no name");
  one_error("[wait \"a.b\"]\n", "t.conf:1: bad wait name 'a.b'");
  one_error("[wait \"a\"]\n[wait \"a\"]\n", "t.conf:2: [wait \"a\"] is already defined at t.conf:1");
  one_error("[wait \"a\"]\nfoo = 1\n", "t.conf:2: unknown key 'foo' in [wait \"a\"]");
  one_error("[crawl]\nrevisit = maybe\n", "t.conf:2: crawl.revisit: bad boolean 'maybe'");
  one_error("[http]\ntls-verify = sometimes\n",
            "t.conf:2: http.tls-verify: bad value 'sometimes' (one of: record, require, off)");
  one_error("[http]\ntimeout-idle = 30\n",
            "t.conf:2: http.timeout-idle: duration '30' needs a unit (ms, s, m, h, d)");
  one_error("[http]\ntimeout-idle = soon\n", "http.timeout-idle: bad duration 'soon'");
  one_error("[http]\nmax-header-bytes = 12 parsecs\n", "t.conf:2: http.max-header-bytes: bad size");
  one_error("[crawl]\nrevisit = true\nrevisit = false\n",
            "t.conf:3: crawl.revisit: duplicate key (first set at line 2)");
  one_error("[scope]\ninclude = ^https?://(example\\.org/\n",
            "t.conf:2: scope.include: bad regex '^https?://(example\\x5c.org/' at offset 24: "
            "missing closing parenthesis");
  one_error("[wait \"w\"]\ncontent-type = [a-\n", "t.conf:2: wait.w.content-type: bad regex");
  one_error("[scope]\ninclude = \\xff(\n", "bad regex");
  one_error("[crawl]\nname = a b\n", "t.conf:2: crawl.name: bad value 'a b'");
  one_error("[crawl]\nstate-dir =\n", "crawl.state-dir: bad value '': must not be empty");
  one_error("[crawl]\ncontact-url = ftp://x\n", "crawl.contact-url: bad value 'ftp://x'");
  one_error("[crawl]\nuser-agent = caf\xc3\xa9\n", "use printable ASCII only");
  one_error("[dns]\nservers = 1.1.1.1, example.com\n",
            "t.conf:2: dns.servers: bad item 'example.com': expected an IP address");
  one_error("[dns]\nservers = 1.1.1.1,,8.8.8.8\n", "empty item in list");
  one_error("[dns]\nservers = 1.1.1.1:70000\n", "bad item");
  one_error("[scope]\nsurt-prefixes = org,example\n", "scope.surt-prefixes: bad item");
  one_error("[robots]\nagent = kria/1.0\n", "robots.agent: bad value 'kria/1.0'");
  one_error("[status]\nlisten = localhost:80\n", "status.listen: bad value");
  one_error("[status]\ntoken = short\n", "status.token: bad value");
  one_error("[host \"ex ample.org\"]\n", "t.conf:1: bad host 'ex ample.org'");
  one_error("[host \"b\xc3\xbc" "cher.de\"]\n", "(xn--...)");
  one_error("[host \"a..b\"]\n", "labels must have 1 to 63 bytes");
  one_error("[host \"1.2.3.999\"]\n", "neither a host name nor an IP address");
  one_error("[host \"x.org\"]\nhttp.max-connections = 5\n",
            "t.conf:2: http.max-connections cannot be overridden per host");
  /* the address policy: CIDRs checked item by item, never per host */
  one_error("[http]\nallow-addresses = 10.0.0.0/8, 10.1.0.0/8\n",
            "t.conf:2: http.allow-addresses: bad item '10.1.0.0/8': '10.1.0.0/8' has address bits "
            "set past the prefix length");
  one_error("[http]\n\ndeny-addresses = 169.254.169.254/33\n",
            "t.conf:3: http.deny-addresses: bad item '169.254.169.254/33'");
  one_error("[http]\ndeny-addresses = fe80::1%eth0\n", "is not an IPv4 or IPv6 address");
  one_error("[http]\nallow-addresses = localhost\n", "bad item 'localhost'");
  one_error("[http]\nallow-private-addresses = sometimes\n",
            "t.conf:2: http.allow-private-addresses: bad boolean");
  one_error("[host \"x.org\"]\nhttp.allow-private-addresses = true\n",
            "t.conf:2: http.allow-private-addresses cannot be overridden per host");
  one_error("[host \"x.org\"]\nhttp.allow-addresses = 10.0.0.0/8\n",
            "t.conf:2: http.allow-addresses cannot be overridden per host");
  one_error("[host \"x.org\"]\nhttp.deny-addresses = 10.0.0.0/8\n",
            "t.conf:2: http.deny-addresses cannot be overridden per host");
  one_error("[host \"x.org\"]\nmin-delay = 5s\n", "t.conf:2: 'min-delay' should be section.key");
  one_error("[host \"x.org\"]\npoliteness.nope = 5s\n", "unknown key 'nope' in [politeness]");
  one_error("[host \"x.org\"]\nfoo.bar = 5s\n", "t.conf:2: unknown section in 'foo.bar'");
  one_error("[host \"x.org\"]\nwait.text = 5s\n", "is not wait.NAME.key");
  one_error("[host \"x.org\"]\npoliteness.min-delay = 1s\npoliteness.min-delay = 1s\n",
            "t.conf:3: politeness.min-delay: duplicate key (first set at line 2)");
  one_error("[host \"x.org\"]\npoliteness.min-delay = 1\n", "duration '1' needs a unit");
  /* reported by kr_config_finish, still with the line of the override */
  one_error("\n[host \"x.org\"]\nwait.nope.min-wait = 1h\n",
            "t.conf:3: wait.nope.min-wait: no [wait \"nope\"] section (defined: text, image, default)");
  /* keys of a rejected section are skipped, not reported again */
  one_error("[nonsense]\na = 1\nb = 2\n", "unknown section");
  one_error("[wait \"a\"]\n[wait \"a\"]\ninitial-wait = x\n", "already defined");
}

static void cross_key_checks(void **state) {
  (void)state;
  one_error("[politeness]\nmin-delay = 6s\n",
            "t.conf:2: politeness.min-delay (6s) is greater than politeness.max-delay (5s)");
  one_error("[politeness]\nmax-delay = 1s\n",
            "t.conf:2: politeness.min-delay (2s) is greater than politeness.max-delay (1s)");
  one_error("[dns]\nmin-ttl = 2d\n", "dns.min-ttl (2d) is greater than dns.max-ttl (1d)");
  one_error("[wait \"a\"]\nmin-wait = 30d\n",
            "t.conf:2: min-wait (30d) of [wait \"a\"] is greater than its max-wait (28d)");
  one_error("[host \"x.org\"]\npoliteness.min-delay = 10s\n",
            "t.conf:2: politeness.min-delay (10s) is greater than politeness.max-delay (5s) for [host \"x.org\"]");
  one_error("[host \"x.org\"]\nwait.text.max-wait = 10s\n",
            "t.conf:2: min-wait (20s) of [wait \"text\"] is greater than its max-wait (10s) for [host \"x.org\"]");
  /* a parent's bad override is reported once, not again for each child */
  one_error("[host \"org\"]\npoliteness.min-delay = 10s\n[host \"x.org\"]\nrobots.obey = false\n",
            "for [host \"org\"]");
  /* a child section may repair what its parent set */
  kr_config_t *cfg = load_ok("[host \"org\"]\npoliteness.max-delay = 20s\n"
                             "[host \"x.org\"]\npoliteness.min-delay = 10s\n");
  kr_config_free(cfg);
  one_error("[status]\nlisten = 0.0.0.0:8080\n",
            "t.conf:2: status.listen 0.0.0.0:8080 is not a loopback address, so status.token must be set");
  cfg = load_ok("[status]\nlisten = 0.0.0.0:8080\ntoken = 0123456789abcdef\n");
  kr_config_free(cfg);
  /* a WebSub callback: an http(s) URL with a host, and the status server on */
  one_error("[status]\nlisten = 127.0.0.1:0\n[websub]\ncallback = ftp://h/websub\n",
            "websub.callback: bad value 'ftp://h/websub'");
  one_error("[status]\nlisten = 127.0.0.1:0\n[websub]\ncallback = http:///websub\n",
            "websub.callback: bad value");
  one_error("[status]\nlisten = 127.0.0.1:0\n[websub]\ncallback = http://h/websub?x=1\n",
            "websub.callback: bad value");
  one_error("[websub]\ncallback = http://h:8080/websub\n",
            "t.conf:2: websub.callback needs the status server (status.listen)");
  cfg = load_ok("[status]\nlisten = 127.0.0.1:0\n[websub]\ncallback = https://h.example/websub\n");
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_WEBSUB_CALLBACK),
                      "https://h.example/websub");
  kr_config_free(cfg);
  cfg = load_ok("[status]\nlisten = [::1]:0\n");
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_STATUS_LISTEN), "[::1]:0");
  kr_config_free(cfg);
}

static void all_errors_reported_not_just_the_first(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/test/unit/fixtures/config/errors.conf", top_dir());
  kr_config_t *cfg = kr_config_new();
  assert_int_equal(kr_config_load_file(cfg, path), KR_ECONFIG);
  char want[9][1200];
  static const char *const tail[] = {
      "3: http.timeout-connect: duration '5' needs a unit",
      "4: http.max-body-bytes: bad size '12 parsecs'",
      "5: http.tls-verify: bad value 'sometimes'",
      "8: politeness.host-valence: '0' is out of range 1..64",
      "10: politeness.min-delay: duplicate key (first set at line 9)",
      "11: unknown key 'timeout-idle' in [politeness] (it belongs in [http])",
      "14: scope.include: bad regex",
      "15: unknown section [nonsense]",
      "18: http.max-connections cannot be overridden per host",
  };
  for (int i = 0; i < 9; i++) {
    snprintf(want[i], sizeof want[i], "%s:%s", path, tail[i]);
    expect_error(cfg, want[i]);
    /* in file order */
    assert_non_null(strstr(kr_config_error(cfg, (size_t)i), want[i]));
  }
  assert_int_equal(kr_config_error_total(cfg), 9);
  kr_config_free(cfg);

  /* the list is capped; the count is not */
  kr_buf_t b;
  kr_buf_init(&b, 1 << 20);
  kr_buf_append_str(&b, "[http]\n");
  for (int i = 0; i < 200; i++) kr_buf_printf(&b, "bogus%d = 1\n", i);
  cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(cfg, "big", b.data, b.len), KR_ECONFIG);
  assert_int_equal(kr_config_error_count(cfg), KR_CONFIG_MAX_ERRORS);
  assert_int_equal(kr_config_error_total(cfg), 200);
  assert_non_null(strstr(kr_config_error(cfg, 0), "big:2: unknown key 'bogus0'"));
  assert_non_null(strstr(kr_config_error(cfg, KR_CONFIG_MAX_ERRORS - 1), "big:51: "));
  assert_null(kr_config_error(cfg, KR_CONFIG_MAX_ERRORS));
  kr_config_free(cfg);
  kr_buf_free(&b);
}

static void files_that_cannot_be_read(void **state) {
  (void)state;
  kr_config_t *cfg = kr_config_new();
  assert_int_equal(kr_config_load_file(cfg, "/nonexistent/kria.conf"), KR_ECONFIG);
  expect_error(cfg, "/nonexistent/kria.conf: cannot read: No such file or directory");
  assert_int_equal(kr_config_load_file(cfg, "/"), KR_ECONFIG);
  expect_error(cfg, "/: cannot read: Is a directory");
  kr_config_free(cfg);

  /* a string over the size cap is refused before parsing */
  size_t n = KR_CONFIG_MAX_FILE + 1;
  char *big = malloc(n);
  assert_non_null(big);
  memset(big, '#', n);
  cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(cfg, "huge", big, n), KR_ECONFIG);
  expect_error(cfg, "huge: larger than 16777216 bytes");
  kr_config_free(cfg);

  /* and so is a file: write one just over the cap */
  char path[] = "/tmp/kria-config-test-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, big, n), (ssize_t)n);
  close(fd);
  cfg = kr_config_new();
  assert_int_equal(kr_config_load_file(cfg, path), KR_ECONFIG);
  expect_error(cfg, "larger than 16777216 bytes");
  kr_config_free(cfg);
  unlink(path);
  free(big);
}

/* ---- values ----------------------------------------------------------------- */

static void ukwa_fixture_loads(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/test/unit/fixtures/config/ukwa.conf", top_dir());
  kr_config_t *cfg = kr_config_new();
  assert_int_equal(kr_config_load_file(cfg, path), 0);
  assert_int_equal(kr_config_finish(cfg), 0);
  const kr_config_view_t *g = kr_config_global(cfg);
  assert_string_equal(kr_config_str(g, KR_CFG_CRAWL_NAME), "ukwa-demo");
  /* the UK Web Archive's own User-Agent has this shape */
  assert_string_equal(kr_config_user_agent(cfg),
                      "Mozilla/5.0 (compatible; kria/0.1.0 +http://www.webarchive.org.uk/)");
  assert_true(kr_config_float(g, KR_CFG_POLITENESS_DELAY_FACTOR) == 5.0);
  assert_int_equal(kr_config_ms(g, KR_CFG_ROBOTS_EXPIRY), 3600000);
  assert_int_equal(kr_config_list_len(g, KR_CFG_ROBOTS_EXEMPT), 2);
  assert_string_equal(kr_config_list_item(g, KR_CFG_ROBOTS_EXEMPT, 1), "^/(layout|css|style)/");
  const pcre2_code *re = kr_config_list_regex(g, KR_CFG_ROBOTS_EXEMPT, 1);
  assert_int_equal(kr_config_regex_match(NULL, re, "/css/site.css", 13), 1);
  assert_int_equal(kr_config_regex_match(NULL, re, "/about/", 7), 0);
  assert_true(kr_config_size(g, KR_CFG_LIMITS_MAX_BYTES_DOWNLOAD) == 10ull << 30);
  assert_int_equal(kr_config_int(g, KR_CFG_LIMITS_MAX_DOCUMENT_DOWNLOAD), 100000);
  assert_int_equal(kr_config_line(g, KR_CFG_LIMITS_MAX_DOCUMENT_DOWNLOAD), 25);
  assert_int_equal(kr_config_line(g, KR_CFG_HTTP_TIMEOUT_CONNECT), 0);
  const kr_config_view_t *bl = kr_config_view(cfg, "www.bl.uk", 9);
  assert_int_equal(kr_config_ms(bl, KR_CFG_POLITENESS_MIN_DELAY), 3000);
  assert_string_equal(kr_config_view_host(bl), "bl.uk");
  kr_config_free(cfg);

  /* without a contact: as written; without parentheses: appended */
  cfg = load_ok("[crawl]\nuser-agent = kria\ncontact-url = mailto:ops@example.org\n");
  assert_string_equal(kr_config_user_agent(cfg), "kria (+mailto:ops@example.org)");
  kr_config_free(cfg);
  cfg = load_ok("");
  assert_string_equal(kr_config_user_agent(cfg), "Mozilla/5.0 (compatible; kria/0.1.0)");
  kr_config_free(cfg);
}

static void crlf_bom_and_no_final_newline(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/test/unit/fixtures/config/crlf.conf", top_dir());
  kr_config_t *cfg = kr_config_new();
  assert_int_equal(kr_config_load_file(cfg, path), 0);
  assert_int_equal(kr_config_finish(cfg), 0);
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_CRAWL_NAME), "crlf");
  assert_int_equal(kr_config_ms(kr_config_global(cfg), KR_CFG_HTTP_TIMEOUT_CONNECT), 3000);
  assert_int_equal(kr_config_line(kr_config_global(cfg), KR_CFG_HTTP_TIMEOUT_CONNECT), 5);
  kr_config_free(cfg);

  cfg = load_ok("\xef\xbb\xbf[crawl]\nname = bom");
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_CRAWL_NAME), "bom");
  kr_config_free(cfg);

  /* comments are whole lines: a " ;" or " #" inside a value is data */
  cfg = load_ok("; first\n# second\n[scope]\n  # indented comment\ninclude = ^a ;b #c$\n"
                "[crawl]\n\tname\t=\tx\n");
  assert_string_equal(kr_config_list_item(kr_config_global(cfg), KR_CFG_SCOPE_INCLUDE, 0),
                      "^a ;b #c$");
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_CRAWL_NAME), "x");
  kr_config_free(cfg);

  /* "key: value" is inih's alternative form */
  cfg = load_ok("[crawl]\nname: colon\n");
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_CRAWL_NAME), "colon");
  kr_config_free(cfg);
}

static void lists_append_clear_and_cap(void **state) {
  (void)state;
  kr_config_t *cfg = load_ok("[dns]\nservers = 1.1.1.1, 8.8.8.8:53\nservers = [2001:db8::1]:53\n"
                             "servers = ::1\n[scope]\nexclude = \\.(jpg|png)$\nexclude = /cal/\n");
  const kr_config_view_t *g = kr_config_global(cfg);
  assert_int_equal(kr_config_list_len(g, KR_CFG_DNS_SERVERS), 4);
  assert_string_equal(kr_config_list_item(g, KR_CFG_DNS_SERVERS, 1), "8.8.8.8:53");
  assert_string_equal(kr_config_list_item(g, KR_CFG_DNS_SERVERS, 2), "[2001:db8::1]:53");
  assert_null(kr_config_list_item(g, KR_CFG_DNS_SERVERS, 4));
  assert_string_equal(fmt_key(g, KR_CFG_DNS_SERVERS), "1.1.1.1, 8.8.8.8:53, [2001:db8::1]:53, ::1");
  assert_int_equal(kr_config_list_len(g, KR_CFG_SCOPE_EXCLUDE), 2);
  /* a regex list is not split at commas */
  kr_config_free(cfg);
  cfg = load_ok("[scope]\nexclude = ^a{1,3}$\n");
  assert_int_equal(kr_config_list_len(kr_config_global(cfg), KR_CFG_SCOPE_EXCLUDE), 1);
  assert_int_equal(kr_config_regex_match(NULL, kr_config_list_regex(kr_config_global(cfg),
                                                              KR_CFG_SCOPE_EXCLUDE, 0), "aa", 2), 1);
  kr_config_free(cfg);
  /* an empty value clears */
  cfg = load_ok("[dns]\nservers = 1.1.1.1\nservers =\nservers = 9.9.9.9\n");
  assert_int_equal(kr_config_list_len(kr_config_global(cfg), KR_CFG_DNS_SERVERS), 1);
  assert_string_equal(kr_config_list_item(kr_config_global(cfg), KR_CFG_DNS_SERVERS, 0), "9.9.9.9");
  kr_config_free(cfg);

  /* at most KR_CONFIG_MAX_LIST items, over several lines or in one */
  kr_buf_t b;
  kr_buf_init(&b, 1 << 20);
  kr_buf_append_str(&b, "[scope]\n");
  for (unsigned i = 0; i <= KR_CONFIG_MAX_LIST; i++) kr_buf_printf(&b, "exclude = ^/x%u$\n", i);
  int rc;
  cfg = load(b.data, &rc);
  assert_int_equal(rc, KR_ECONFIG);
  char want[64];
  snprintf(want, sizeof want, "t.conf:%u: scope.exclude: more than 1024 items", KR_CONFIG_MAX_LIST + 2);
  expect_error(cfg, want);
  assert_int_equal(kr_config_error_total(cfg), 1);
  kr_config_free(cfg);
  kr_buf_reset(&b);
  kr_buf_append_str(&b, "[scope]\nsurt-prefixes = (a");
  for (unsigned i = 0; i < KR_CONFIG_MAX_LIST; i++) kr_buf_append_str(&b, ",(a");
  kr_buf_append_str(&b, "\n");
  one_error(b.data, "t.conf:2: scope.surt-prefixes: more than 1024 items");
  kr_buf_free(&b);
}

static void enums_getters_and_schema(void **state) {
  (void)state;
  static const struct { kr_cfg_key_t key; int idx; const char *name; } e[] = {
      {KR_CFG_DNS_FAMILY, KR_CFG_FAMILY_ANY, "any"},
      {KR_CFG_DNS_FAMILY, KR_CFG_FAMILY_IPV4, "ipv4"},
      {KR_CFG_DNS_FAMILY, KR_CFG_FAMILY_IPV6, "ipv6"},
      {KR_CFG_HTTP_TLS_VERIFY, KR_CFG_TLS_RECORD, "record"},
      {KR_CFG_HTTP_TLS_VERIFY, KR_CFG_TLS_REQUIRE, "require"},
      {KR_CFG_HTTP_TLS_VERIFY, KR_CFG_TLS_OFF, "off"},
      {KR_CFG_POLITENESS_QUEUE_ASSIGNMENT, KR_CFG_QUEUE_BY_HOST, "host"},
      {KR_CFG_POLITENESS_QUEUE_ASSIGNMENT, KR_CFG_QUEUE_BY_DOMAIN, "domain"},
      {KR_CFG_POLITENESS_QUEUE_ASSIGNMENT, KR_CFG_QUEUE_BY_IP, "ip"},
      {KR_CFG_SCOPE_MODE, KR_CFG_SCOPE_HOST, "host"},
      {KR_CFG_SCOPE_MODE, KR_CFG_SCOPE_DOMAIN, "domain"},
      {KR_CFG_SCOPE_MODE, KR_CFG_SCOPE_PATH, "path"},
      {KR_CFG_SCOPE_MODE, KR_CFG_SCOPE_SURT, "surt"},
      {KR_CFG_ADAPTIVE_MIDFETCH_SCHEME, KR_CFG_VSCHEME_TIMESTAMP, "timestamp"},
      {KR_CFG_ADAPTIVE_MIDFETCH_SCHEME, KR_CFG_VSCHEME_ETAG, "etag"},
      {KR_CFG_ADAPTIVE_MIDFETCH_SCHEME, KR_CFG_VSCHEME_BOTH, "both"},
      {KR_CFG_ADAPTIVE_MIDFETCH_SCHEME, KR_CFG_VSCHEME_EITHER, "either"},
      {KR_CFG_ADAPTIVE_ETAG_COMPARE, KR_CFG_ETAG_EXACT, "exact"},
      {KR_CFG_ADAPTIVE_ETAG_COMPARE, KR_CFG_ETAG_STRONG, "strong"},
      {KR_CFG_ADAPTIVE_ETAG_COMPARE, KR_CFG_ETAG_WEAK, "weak"},
      {KR_CFG_WARC_COMPRESS, KR_CFG_WARC_GZIP, "gzip"},
      {KR_CFG_WARC_COMPRESS, KR_CFG_WARC_NONE, "none"},
      {KR_CFG_WARC_DURABILITY, KR_CFG_DURABILITY_NONE, "none"},
      {KR_CFG_WARC_DURABILITY, KR_CFG_DURABILITY_BATCH, "batch"},
      {KR_CFG_WARC_DURABILITY, KR_CFG_DURABILITY_RECORD, "record"},
      {KR_CFG_WARC_WRITE_VOLATILE, KR_CFG_VOLATILE_FULL, "full"},
      {KR_CFG_WARC_WRITE_VOLATILE, KR_CFG_VOLATILE_SKIP, "skip"},
      {KR_CFG_WARC_CHUNKED, KR_CFG_CHUNKED_KEEP, "keep"},
      {KR_CFG_WARC_CHUNKED, KR_CFG_CHUNKED_DECHUNK, "dechunk"},
      {KR_CFG_ADAPTIVE_OBJECTIVE, KR_CFG_OBJECTIVE_VERSIONS, "versions"},
      {KR_CFG_ADAPTIVE_OBJECTIVE, KR_CFG_OBJECTIVE_FRESHNESS, "freshness"},
      {KR_CFG_ADAPTIVE_OBJECTIVE, KR_CFG_OBJECTIVE_HARMONIC, "harmonic"},
  };
  for (size_t i = 0; i < sizeof e / sizeof *e; i++) {
    kr_slice_t c = kr_config_enum_choice(e[i].key, e[i].idx);
    assert_true(kr_slice_eq(c, kr_slice_cstr(e[i].name)));
  }
  assert_null(kr_config_enum_choice(KR_CFG_DNS_FAMILY, 3).p);
  assert_null(kr_config_enum_choice(KR_CFG_HTTP_TIMEOUT_IDLE, 0).p);

  kr_config_t *cfg = load_ok("[dns]\nfamily = ipv6\n[http]\ntls-verify = off\n"
                             "[politeness]\nqueue-assignment = ip\n[scope]\nmode = surt\n"
                             "[wait \"a\"]\npolicy = poisson\n");
  const kr_config_view_t *g = kr_config_global(cfg);
  assert_int_equal(kr_config_enum(g, KR_CFG_DNS_FAMILY), KR_CFG_FAMILY_IPV6);
  assert_int_equal(kr_config_enum(g, KR_CFG_HTTP_TLS_VERIFY), KR_CFG_TLS_OFF);
  assert_string_equal(kr_config_str(g, KR_CFG_HTTP_TLS_VERIFY), "off");
  assert_int_equal(kr_config_enum(g, KR_CFG_POLITENESS_QUEUE_ASSIGNMENT), KR_CFG_QUEUE_BY_IP);
  assert_int_equal(kr_config_enum(g, KR_CFG_SCOPE_MODE), KR_CFG_SCOPE_SURT);
  assert_int_equal(kr_config_wait(g, 0)->policy, KR_CFG_POLICY_POISSON);
  assert_string_equal(kr_config_str(g, KR_CFG_CRAWL_LOG_LEVEL), "notice");
  kr_config_free(cfg);

  assert_int_equal(kr_config_key_find("http.timeout-connect"), KR_CFG_HTTP_TIMEOUT_CONNECT);
  assert_int_equal(kr_config_key_find("http.nope"), -1);
  assert_int_equal(kr_config_key_find("nodot"), -1);
  assert_string_equal(kr_config_key_section(KR_CFG_ROBOTS_EXEMPT), "robots");
  assert_int_equal(kr_config_key_type(KR_CFG_ROBOTS_EXEMPT), KR_CFG_T_REGEX_LIST);
  assert_true(kr_config_key_flags(KR_CFG_ROBOTS_EXEMPT) & KR_CFG_HOST);
  assert_false(kr_config_key_flags(KR_CFG_HTTP_MAX_CONNECTIONS) & KR_CFG_HOST);
  /* the documented defaults of issues 2 and 3 */
  cfg = load_ok("");
  g = kr_config_global(cfg);
  assert_true(kr_config_float(g, KR_CFG_POLITENESS_DELAY_FACTOR) == 5.0);
  assert_int_equal(kr_config_ms(g, KR_CFG_POLITENESS_MIN_DELAY), 2000);
  assert_int_equal(kr_config_ms(g, KR_CFG_POLITENESS_MAX_DELAY), 5000);
  assert_int_equal(kr_config_ms(g, KR_CFG_POLITENESS_RESPECT_CRAWL_DELAY_UP_TO), 300000);
  assert_int_equal(kr_config_int(g, KR_CFG_POLITENESS_HOST_VALENCE), 1);
  assert_int_equal(kr_config_ms(g, KR_CFG_POLITENESS_RETRY_DELAY), 900000);
  assert_int_equal(kr_config_int(g, KR_CFG_POLITENESS_MAX_RETRIES), 30);
  assert_true(kr_config_bool(g, KR_CFG_POLITENESS_REVISIT_FAILED));
  assert_int_equal(kr_config_int(g, KR_CFG_HTTP_MAX_CONNECTIONS), 4096);
  assert_int_equal(kr_config_ms(g, KR_CFG_ROBOTS_EXPIRY), 3600000);
  assert_int_equal(kr_config_size(g, KR_CFG_ROBOTS_MAX_SIZE), 500 * 1024);
  assert_int_equal(kr_config_enum(g, KR_CFG_HTTP_TLS_VERIFY), KR_CFG_TLS_RECORD);
  assert_true(kr_config_bool(g, KR_CFG_HTTP_CONDITIONAL_REQUESTS));
  /* issue 7: private addresses refused unless the operator says so */
  assert_false(kr_config_bool(g, KR_CFG_HTTP_ALLOW_PRIVATE_ADDRESSES));
  assert_int_equal(kr_config_list_len(g, KR_CFG_HTTP_ALLOW_ADDRESSES), 0);
  assert_int_equal(kr_config_list_len(g, KR_CFG_HTTP_DENY_ADDRESSES), 0);
  kr_config_free(cfg);
  cfg = load_ok("[http]\nallow-private-addresses = yes\nallow-addresses = 10.0.0.0/8, ::1\n"
                "allow-addresses = [fd00::]/8\ndeny-addresses = 127.0.0.2\n");
  g = kr_config_global(cfg);
  assert_true(kr_config_bool(g, KR_CFG_HTTP_ALLOW_PRIVATE_ADDRESSES));
  assert_int_equal(kr_config_list_len(g, KR_CFG_HTTP_ALLOW_ADDRESSES), 3);
  assert_string_equal(kr_config_list_item(g, KR_CFG_HTTP_ALLOW_ADDRESSES, 2), "[fd00::]/8");
  assert_int_equal(kr_config_list_len(g, KR_CFG_HTTP_DENY_ADDRESSES), 1);
  kr_config_free(cfg);
}

/* ---- per-host overrides ------------------------------------------------------- */

static void overrides_resolve_up_the_domain_chain(void **state) {
  (void)state;
  kr_config_t *cfg = load_ok(
      "[politeness]\nmin-delay = 1s\n"
      "[robots]\nexempt = ^/global/\n"
      "[host \"org\"]\npoliteness.host-valence = 3\n"
      "[host \"example.org\"]\npoliteness.min-delay = 3s\npoliteness.max-delay = 20s\n"
      "robots.exempt = ^/images/\nrobots.exempt = ^/css/\n"
      "[host \"b.example.org\"]\npoliteness.min-delay = 11s\n"
      "[host \"a.b.example.org\"]\nhttp.timeout-connect = 1s\nwait.text.min-wait = 1h\n"
      "[host \"192.0.2.1\"]\nhttp.tls-verify = off\n"
      "[host \"[2001:DB8::1]\"]\nhttp.tls-verify = require\n"
      "[host \"example.org\"]\nhttp.max-ratio = 7\n" /* reopened: merged */);
  const kr_config_view_t *g = kr_config_global(cfg);
  const kr_config_view_t *v = kr_config_view(cfg, "a.b.example.org", 15);
  assert_string_equal(kr_config_view_host(v), "a.b.example.org");
  assert_int_equal(kr_config_ms(v, KR_CFG_HTTP_TIMEOUT_CONNECT), 1000);      /* own */
  assert_int_equal(kr_config_ms(v, KR_CFG_POLITENESS_MIN_DELAY), 11000);     /* b.example.org */
  assert_int_equal(kr_config_ms(v, KR_CFG_POLITENESS_MAX_DELAY), 20000);     /* example.org */
  assert_int_equal(kr_config_int(v, KR_CFG_HTTP_MAX_RATIO), 7);              /* example.org */
  assert_int_equal(kr_config_int(v, KR_CFG_POLITENESS_HOST_VALENCE), 3);     /* org */
  assert_int_equal(kr_config_ms(v, KR_CFG_HTTP_TIMEOUT_IDLE), 30000);        /* global */
  assert_int_equal(kr_config_list_len(v, KR_CFG_ROBOTS_EXEMPT), 2);          /* replaced */
  assert_string_equal(kr_config_list_item(v, KR_CFG_ROBOTS_EXEMPT, 0), "^/images/");
  assert_int_equal(kr_config_line(v, KR_CFG_POLITENESS_MIN_DELAY), 13);
  assert_int_equal(kr_config_wait(v, 0)->min_wait_ms, 3600000);
  assert_int_equal(kr_config_wait(g, 0)->min_wait_ms, 20000); /* global untouched */
  assert_int_equal(kr_config_wait(v, 1)->min_wait_ms, 200000);

  /* the global view is untouched */
  assert_int_equal(kr_config_ms(g, KR_CFG_POLITENESS_MIN_DELAY), 1000);
  assert_int_equal(kr_config_int(g, KR_CFG_POLITENESS_HOST_VALENCE), 1);
  assert_int_equal(kr_config_list_len(g, KR_CFG_ROBOTS_EXEMPT), 1);
  assert_null(kr_config_view_host(g));

  /* resolved once: same pointer for the same host and for every host
   * whose most specific section is the same */
  assert_ptr_equal(kr_config_view(cfg, "a.b.example.org", 15), v);
  assert_ptr_equal(kr_config_view(cfg, "x.a.b.example.org", 17), v);
  assert_ptr_equal(kr_config_view(cfg, "A.B.Example.ORG.", 16), v);
  const kr_config_view_t *c = kr_config_view(cfg, "c.example.org", 13);
  assert_ptr_equal(kr_config_view(cfg, "example.org", 11), c);
  assert_string_equal(kr_config_view_host(c), "example.org");
  assert_int_equal(kr_config_ms(c, KR_CFG_POLITENESS_MIN_DELAY), 3000);
  assert_int_equal(kr_config_int(c, KR_CFG_POLITENESS_HOST_VALENCE), 3);
  assert_int_equal(kr_config_wait(c, 0)->min_wait_ms, 20000);

  /* label boundaries only: notexample.org is under org, not example.org */
  const kr_config_view_t *n = kr_config_view(cfg, "notexample.org", 14);
  assert_string_equal(kr_config_view_host(n), "org");
  assert_int_equal(kr_config_ms(n, KR_CFG_POLITENESS_MIN_DELAY), 1000);
  assert_int_equal(kr_config_int(n, KR_CFG_POLITENESS_HOST_VALENCE), 3);

  assert_ptr_equal(kr_config_view(cfg, "example.net", 11), g);
  assert_ptr_equal(kr_config_view(cfg, "", 0), g);
  assert_ptr_equal(kr_config_view(cfg, ".", 1), g);
  assert_ptr_equal(kr_config_view(cfg, "org.", 4), kr_config_view(cfg, "org", 3));

  /* IP literals match only their own section */
  const kr_config_view_t *ip = kr_config_view(cfg, "192.0.2.1", 9);
  assert_int_equal(kr_config_enum(ip, KR_CFG_HTTP_TLS_VERIFY), KR_CFG_TLS_OFF);
  assert_ptr_equal(kr_config_view(cfg, "10.192.0.2.1", 12), g);
  assert_ptr_equal(kr_config_view(cfg, "0.2.1", 5), g);
  const kr_config_view_t *v6 = kr_config_view(cfg, "[2001:db8::1]", 13);
  assert_int_equal(kr_config_enum(v6, KR_CFG_HTTP_TLS_VERIFY), KR_CFG_TLS_REQUIRE);
  assert_ptr_equal(kr_config_view(cfg, "2001:db8::1", 11), v6);
  kr_config_free(cfg);
}

/* Host names longer than inih's 49-byte section buffer keep every byte. */
static void long_host_names_are_not_cut(void **state) {
  (void)state;
  char host[254], text[600];
  for (int i = 0; i < 253; i++) host[i] = (i % 50 == 49) ? '.' : 'a' + (i % 26);
  host[253] = '\0';
  snprintf(text, sizeof text, "[host \"%s\"]\npoliteness.min-delay = 4s\n", host);
  kr_config_t *cfg = load_ok(text);
  const kr_config_view_t *v = kr_config_view(cfg, host, 253);
  assert_string_equal(kr_config_view_host(v), host);
  assert_int_equal(kr_config_ms(v, KR_CFG_POLITENESS_MIN_DELAY), 4000);
  /* a host that shares the first 49 bytes is not that section */
  char other[254];
  memcpy(other, host, 254);
  other[200] = 'z' == other[200] ? 'y' : 'z';
  assert_ptr_equal(kr_config_view(cfg, other, 253), kr_config_global(cfg));
  kr_config_free(cfg);
  snprintf(text, sizeof text, "[host \"%sx\"]\n", host);
  one_error(text, "host name must have 1 to 253 bytes");
}

/* ---- wait evaluators ------------------------------------------------------------ */

static void default_wait_evaluators_are_figure_12(void **state) {
  (void)state;
  kr_config_t *cfg = load_ok("[crawl]\nname = x\n");
  const kr_config_view_t *g = kr_config_global(cfg);
  assert_int_equal(kr_config_wait_count(g), 3);
  static const struct { const char *name, *re; int64_t initial, min; } fig12[] = {
      {"text", "^text/.*$", 20000, 20000},
      {"image", "^image/.*$", 200000, 200000},
      {"default", "", 1000000, 1000000},
  };
  for (size_t i = 0; i < 3; i++) {
    const kr_cfg_wait_t *w = kr_config_wait(g, i);
    assert_string_equal(w->name, fig12[i].name);
    assert_string_equal(w->content_type_src, fig12[i].re);
    assert_true((w->content_type == NULL) == (fig12[i].re[0] == '\0'));
    assert_int_equal(w->initial_wait_ms, fig12[i].initial);
    assert_int_equal(w->min_wait_ms, fig12[i].min);
    assert_int_equal(w->max_wait_ms, 2419200000LL);
    assert_int_equal(w->default_wait_ms, 259200000LL);
    assert_true(w->changed_factor == 1.5 && w->unchanged_factor == 1.5);
    assert_int_equal(w->use_overdue_time, 0);
    /* the policy is not the thesis' (multiplicative) but poisson */
    assert_int_equal(w->policy, KR_CFG_POLICY_POISSON);
  }
  assert_null(kr_config_wait(g, 3));
  assert_string_equal(kr_config_wait_match(g, NULL, "text/html; charset=utf-8", 24)->name, "text");
  assert_string_equal(kr_config_wait_match(g, NULL, "image/png", 9)->name, "image");
  assert_string_equal(kr_config_wait_match(g, NULL, "application/pdf", 15)->name, "default");
  assert_string_equal(kr_config_wait_match(g, NULL, "", 0)->name, "default");
  assert_string_equal(kr_config_wait_match(g, NULL, NULL, 0)->name, "default");
  /* the length is honoured: "image/png" cut to "imag" is not an image */
  assert_string_equal(kr_config_wait_match(g, NULL, "image/png", 4)->name, "default");
  kr_config_free(cfg);
}

/* The defaults follow the measurements (bench/RESULTS.md, "## adaptive"):
 * poisson for every evaluator, built-in or configured without a policy
 * key, with informed priors (they win every simulated world and, since
 * the demo site dates its pages honestly, tie the real crawl with fewer
 * fetches: "Informed priors by default"); the thesis' policy and the
 * evaluator's initial-wait for every new URI are one key away, per
 * evaluator, per host or with -o. */
static void defaults_are_poisson(void **state) {
  (void)state;
  kr_config_t *cfg = load_ok("");
  const kr_config_view_t *g = kr_config_global(cfg);
  assert_int_equal(kr_config_bool(g, KR_CFG_ADAPTIVE_INFORMED_PRIORS), 1);
  assert_string_equal(kr_config_key_default(KR_CFG_ADAPTIVE_INFORMED_PRIORS), "true");
  /* a host's view without overrides has them too */
  assert_int_equal(kr_config_bool(kr_config_view(cfg, "example.org", 11),
                                  KR_CFG_ADAPTIVE_INFORMED_PRIORS), 1);
  assert_string_equal(kr_config_wait_key_default(KR_CFG_WAIT_POLICY), "poisson");
  for (size_t i = 0; i < kr_config_wait_count(g); i++)
    assert_int_equal(kr_config_wait(g, i)->policy, KR_CFG_POLICY_POISSON);
  kr_config_free(cfg);

  /* a configured evaluator without the key; the thesis' policy set in one
   * evaluator, for one host, and with -o */
  cfg = kr_config_new();
  static const char text[] = "[wait \"html\"]\ncontent-type = ^text/html\n"
                             "[wait \"thesis\"]\npolicy = multiplicative\n"
                             "[wait \"rest\"]\n"
                             "[host \"old.example\"]\nwait.html.policy = multiplicative\n"
                             "adaptive.informed-priors = false\n";
  assert_int_equal(kr_config_load_string(cfg, "t.conf", text, sizeof text - 1), 0);
  assert_int_equal(kr_config_set(cfg, "wait.rest.policy=multiplicative"), 0);
  assert_int_equal(kr_config_finish(cfg), 0);
  g = kr_config_global(cfg);
  assert_int_equal(kr_config_bool(g, KR_CFG_ADAPTIVE_INFORMED_PRIORS), 1);
  assert_int_equal(kr_config_wait(g, 0)->policy, KR_CFG_POLICY_POISSON);
  assert_int_equal(kr_config_wait(g, 1)->policy, KR_CFG_POLICY_MULTIPLICATIVE);
  assert_int_equal(kr_config_wait(g, 2)->policy, KR_CFG_POLICY_MULTIPLICATIVE);
  const kr_config_view_t *h = kr_config_view(cfg, "www.old.example", 15);
  assert_int_equal(kr_config_wait(h, 0)->policy, KR_CFG_POLICY_MULTIPLICATIVE);
  assert_int_equal(kr_config_bool(h, KR_CFG_ADAPTIVE_INFORMED_PRIORS), 0);
  kr_config_free(cfg);

  /* off for the whole crawl: one -o */
  cfg = kr_config_new();
  assert_int_equal(kr_config_set(cfg, "adaptive.informed-priors=false"), 0);
  assert_int_equal(kr_config_finish(cfg), 0);
  assert_int_equal(kr_config_bool(kr_config_global(cfg), KR_CFG_ADAPTIVE_INFORMED_PRIORS), 0);
  kr_config_free(cfg);
}

static void wait_sections_keep_file_order(void **state) {
  (void)state;
  kr_config_t *cfg = load_ok("[wait \"html\"]\ncontent-type = ^text/html\ninitial-wait = 1h\n"
                             "[crawl]\nname = between\n"
                             "[wait \"pdf\"]\ncontent-type = (?i)^application/pdf\n"
                             "use-overdue-time = yes\n"
                             "[wait \"text\"]\ncontent-type = ^text/\nmin-wait = 1d\nmax-wait = 365d\n");
  const kr_config_view_t *g = kr_config_global(cfg);
  assert_int_equal(kr_config_wait_count(g), 3);
  assert_string_equal(kr_config_wait(g, 0)->name, "html");
  assert_string_equal(kr_config_wait(g, 1)->name, "pdf");
  assert_string_equal(kr_config_wait(g, 2)->name, "text");
  assert_int_equal(kr_config_wait(g, 0)->initial_wait_ms, 3600000);
  assert_int_equal(kr_config_wait(g, 0)->min_wait_ms, 1000000); /* schema default */
  assert_int_equal(kr_config_wait(g, 1)->use_overdue_time, 1);
  assert_int_equal(kr_config_wait(g, 2)->max_wait_ms, 365LL * 86400000);
  /* most specific first: text/html goes to html although text matches */
  assert_string_equal(kr_config_wait_match(g, NULL, "text/html", 9)->name, "html");
  assert_string_equal(kr_config_wait_match(g, NULL, "text/plain", 10)->name, "text");
  assert_string_equal(kr_config_wait_match(g, NULL, "APPLICATION/PDF", 15)->name, "pdf");
  /* no catch-all configured, so nothing handles images: the built-in stack
   * was replaced, and the caller falls back on crawl.default-wait */
  assert_null(kr_config_wait_match(g, NULL, "image/png", 9));
  kr_buf_t b;
  kr_buf_init(&b, 100);
  assert_int_equal(kr_config_format_wait(g, 1, KR_CFG_WAIT_CONTENT_TYPE, &b), 0);
  assert_string_equal(b.data, "(?i)^application/pdf");
  kr_buf_reset(&b);
  assert_int_equal(kr_config_format_wait(g, 0, KR_CFG_WAIT_POLICY, &b), 0);
  assert_string_equal(b.data, "poisson"); /* not set: the schema's default */
  kr_buf_free(&b);
  kr_config_free(cfg);

  /* a second file adds to the stack after the first file's sections */
  cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(cfg, "a", "[wait \"one\"]\n", 13), 0);
  assert_int_equal(kr_config_load_string(cfg, "b", "[wait \"two\"]\n", 13), 0);
  assert_int_equal(kr_config_load_string(cfg, "c", "[wait \"one\"]\n", 13), KR_ECONFIG);
  expect_error(cfg, "c:1: [wait \"one\"] is already defined at a:1");
  kr_config_free(cfg);

  /* a catastrophic content-type pattern hits the match limit, not the CPU */
  cfg = load_ok("[wait \"slow\"]\ncontent-type = ^(a+)+$\n[wait \"rest\"]\n");
  char subject[64];
  memset(subject, 'a', sizeof subject);
  subject[63] = 'b';
  assert_int_equal(kr_config_regex_match(NULL, kr_config_wait(kr_config_global(cfg), 0)->content_type,
                                         subject, sizeof subject),
                   KR_ETOOBIG);
  assert_string_equal(kr_config_wait_match(kr_config_global(cfg), NULL, subject, sizeof subject)->name,
                      "rest");
  /* a reused matcher gives the same answers, also after hitting a limit */
  kr_config_matcher_t *m = kr_config_matcher_new();
  const pcre2_code *slow = kr_config_wait(kr_config_global(cfg), 0)->content_type;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(kr_config_regex_match(m, slow, subject, sizeof subject), KR_ETOOBIG);
    assert_int_equal(kr_config_regex_match(m, slow, "aaa", 3), 1);
    assert_int_equal(kr_config_regex_match(m, slow, "aab", 3), 0);
    assert_string_equal(kr_config_wait_match(kr_config_global(cfg), m, "aa", 2)->name, "slow");
  }
  /* non-ASCII but valid UTF-8 still matches (the UTF check runs) */
  assert_int_equal(kr_config_regex_match(m, slow, "a\xc3\xa9", 3), 0);
  kr_config_matcher_free(m);
  kr_config_matcher_free(NULL);
  /* a subject that is not UTF-8 does not match */
  assert_int_equal(kr_config_regex_match(NULL, kr_config_wait(kr_config_global(cfg), 0)->content_type,
                                         "a\xff", 2), 0);
  kr_config_free(cfg);
}

/* ---- -o overrides ------------------------------------------------------------------ */

static void command_line_overrides(void **state) {
  (void)state;
  kr_config_t *cfg = load("[http]\ntimeout-connect = 20s\n[dns]\nservers = 1.1.1.1\n", NULL);
  assert_int_equal(kr_config_set(cfg, "http.timeout-connect=5s"), 0);
  assert_int_equal(kr_config_set(cfg, " http.timeout-idle = 1m "), 0);
  assert_int_equal(kr_config_set(cfg, "http.timeout-idle=2m"), 0); /* last wins */
  assert_int_equal(kr_config_set(cfg, "dns.servers=8.8.8.8"), 0);  /* replaces the file's */
  assert_int_equal(kr_config_set(cfg, "dns.servers=9.9.9.9"), 0);  /* then appends */
  assert_int_equal(kr_config_set(cfg, "wait.text.min-wait=1m"), 0);
  assert_int_equal(kr_config_set(cfg, "crawl.user-agent=a=b (x)"), 0); /* first '=' splits */
  /* the same validation as a file */
  assert_int_equal(kr_config_set(cfg, "http.timeout-connect=5"), KR_ECONFIG);
  expect_error(cfg, "-o: http.timeout-connect: duration '5' needs a unit");
  assert_int_equal(kr_config_set(cfg, "http.nope=1"), KR_ECONFIG);
  expect_error(cfg, "-o: unknown key 'nope' in [http]");
  assert_int_equal(kr_config_set(cfg, "nope.key=1"), KR_ECONFIG);
  expect_error(cfg, "-o: unknown section in 'nope.key'");
  assert_int_equal(kr_config_set(cfg, "timeout=1s"), KR_ECONFIG);
  expect_error(cfg, "-o: 'timeout' should be section.key=value");
  assert_int_equal(kr_config_set(cfg, "http.timeout-connect"), KR_ECONFIG);
  expect_error(cfg, "-o: expected section.key=value, got 'http.timeout-connect'");
  assert_int_equal(kr_config_set(cfg, "=5s"), KR_ECONFIG);
  assert_int_equal(kr_config_set(cfg, "wait.nope.min-wait=1m"), KR_ECONFIG);
  expect_error(cfg, "-o: wait.nope.min-wait: no [wait \"nope\"] section (defined: text, image, default)");
  assert_int_equal(kr_config_set(cfg, "crawl.name=a\x01"), KR_ECONFIG);
  expect_error(cfg, "-o: crawl.name: control character 0x01 in value");
  assert_int_equal(kr_config_error_total(cfg), 8);
  /* files come before -o */
  assert_int_equal(kr_config_load_string(cfg, "late", "", 0), KR_EINVAL);

  assert_int_equal(kr_config_finish(cfg), 0); /* the earlier errors were returned already */
  const kr_config_view_t *g = kr_config_global(cfg);
  assert_int_equal(kr_config_ms(g, KR_CFG_HTTP_TIMEOUT_CONNECT), 5000);
  assert_int_equal(kr_config_line(g, KR_CFG_HTTP_TIMEOUT_CONNECT), -1);
  assert_int_equal(kr_config_ms(g, KR_CFG_HTTP_TIMEOUT_IDLE), 120000);
  assert_string_equal(fmt_key(g, KR_CFG_DNS_SERVERS), "8.8.8.8, 9.9.9.9");
  assert_int_equal(kr_config_wait(g, 0)->min_wait_ms, 60000);
  assert_string_equal(kr_config_str(g, KR_CFG_CRAWL_USER_AGENT), "a=b (x)");
  /* frozen */
  assert_int_equal(kr_config_set(cfg, "http.timeout-connect=6s"), KR_EINVAL);
  assert_int_equal(kr_config_load_string(cfg, "x", "", 0), KR_EINVAL);
  kr_config_free(cfg);

  /* a cross-key error made by -o is reported as such */
  cfg = kr_config_new();
  assert_int_equal(kr_config_set(cfg, "politeness.min-delay=9s"), 0);
  assert_int_equal(kr_config_finish(cfg), KR_ECONFIG);
  expect_error(cfg, "-o: politeness.min-delay (9s) is greater than politeness.max-delay (5s)");
  kr_config_free(cfg);

  /* a later file replaces an earlier one's values without "duplicate" */
  cfg = kr_config_new();
  static const char fa[] = "[crawl]\nname = a\n[scope]\nexclude = x\n";
  static const char fb[] = "[crawl]\nname = b\n[scope]\nexclude = y\n";
  assert_int_equal(kr_config_load_string(cfg, "a", fa, sizeof fa - 1), 0);
  assert_int_equal(kr_config_load_string(cfg, "b", fb, sizeof fb - 1), 0);
  assert_int_equal(kr_config_finish(cfg), 0);
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_CRAWL_NAME), "b");
  assert_string_equal(fmt_key(kr_config_global(cfg), KR_CFG_SCOPE_EXCLUDE), "y");
  kr_config_free(cfg);
}

/* ---- hostile input --------------------------------------------------------------------- */

static void hostile_lines(void **state) {
  (void)state;
  /* a huge line is one error, and the lines after it keep their numbers */
  kr_buf_t b;
  kr_buf_init(&b, 1 << 22);
  kr_buf_append_str(&b, "[crawl]\nname = ");
  for (int i = 0; i < 100000; i++) kr_buf_append_str(&b, "x");
  kr_buf_append_str(&b, "\nname = after\nrevisit = nope\n");
  int rc;
  kr_config_t *cfg = load(b.data, &rc);
  assert_int_equal(rc, KR_ECONFIG);
  expect_error(cfg, "t.conf:2: line longer than 8192 bytes");
  expect_error(cfg, "t.conf:4: crawl.revisit: bad boolean 'nope'");
  assert_int_equal(kr_config_error_total(cfg), 2);
  assert_int_equal(kr_config_finish(cfg), 0);
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_CRAWL_NAME), "after");
  kr_config_free(cfg);

  /* a huge section header does not leak its keys into the previous section */
  kr_buf_reset(&b);
  kr_buf_append_str(&b, "[crawl]\n[host \"");
  for (int i = 0; i < 9000; i++) kr_buf_append_str(&b, "a");
  kr_buf_append_str(&b, "\"]\nname = x\n");
  cfg = load(b.data, &rc);
  assert_int_equal(rc, KR_ECONFIG);
  assert_int_equal(kr_config_error_total(cfg), 1);
  kr_config_free(cfg);

  /* the longest line allowed, a long regex, is read whole (inih's own
   * buffer would cut it at 200 bytes) */
  kr_buf_reset(&b);
  kr_buf_append_str(&b, "[scope]\ninclude = ^");
  while (b.len < 8 + KR_CONFIG_MAX_LINE - 1) kr_buf_append_str(&b, "a");
  kr_buf_append_str(&b, "$\n[crawl]\nname = y\n");
  cfg = load_ok(b.data);
  const char *item = kr_config_list_item(kr_config_global(cfg), KR_CFG_SCOPE_INCLUDE, 0);
  assert_int_equal(strlen(item), KR_CONFIG_MAX_LINE - strlen("include = "));
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_CRAWL_NAME), "y");
  kr_config_free(cfg);

  /* NUL bytes and control characters */
  static const char nul[] = "[crawl]\nname = a\0b\nrevisit = false\n";
  cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(cfg, "t.conf", nul, sizeof nul - 1), KR_ECONFIG);
  expect_error(cfg, "t.conf:2: NUL byte in line");
  assert_int_equal(kr_config_error_total(cfg), 1);
  assert_int_equal(kr_config_finish(cfg), 0);
  assert_string_equal(kr_config_str(kr_config_global(cfg), KR_CFG_CRAWL_NAME), "kria");
  assert_false(kr_config_bool(kr_config_global(cfg), KR_CFG_CRAWL_REVISIT));
  kr_config_free(cfg);
  one_error("[crawl]\nuser-agent = a\rInjected: yes\n", "t.conf:2: control character 0x0d in line");
  one_error("[crawl]\nname = \x1b[31m\n", "control character 0x1b");
  one_error("[cr\x7f]\n", "t.conf:1: control character 0x7f");
  kr_buf_free(&b);
}

static void hostile_section_counts(void **state) {
  (void)state;
  kr_buf_t b;
  kr_buf_init(&b, KR_CONFIG_MAX_FILE);
  for (int i = 0; i < 100000; i++)
    kr_buf_printf(&b, "[host \"h%d.example.org\"]\npoliteness.min-delay = %ds\n", i, i % 5);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc;
  kr_config_t *cfg = load(b.data, &rc);
  assert_int_equal(rc, KR_ECONFIG);
  expect_error(cfg, "t.conf:131073: more than 65536 [host] sections; the rest are ignored");
  assert_int_equal(kr_config_error_total(cfg), 1);
  assert_int_equal(kr_config_finish(cfg), 0);
  const kr_config_view_t *v = kr_config_view(cfg, "h65535.example.org", 18);
  assert_int_equal(kr_config_ms(v, KR_CFG_POLITENESS_MIN_DELAY), 65535 % 5 * 1000);
  assert_ptr_equal(kr_config_view(cfg, "h65536.example.org", 18), kr_config_global(cfg));
  for (int i = 0; i < 65536; i += 97) {
    char h[32];
    int n = snprintf(h, sizeof h, "www.h%d.example.org", i);
    assert_int_equal(kr_config_ms(kr_config_view(cfg, h, (size_t)n), KR_CFG_POLITENESS_MIN_DELAY),
                     i % 5 * 1000);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  print_message("# 100,000 [host] sections: loaded, finished and 676 views in %.3f s\n", s);
  assert_true(s < 10.0);
  kr_config_free(cfg);

  kr_buf_reset(&b);
  for (int i = 0; i < 100000; i++) kr_buf_printf(&b, "[wait \"w%d\"]\n", i);
  cfg = load(b.data, &rc);
  assert_int_equal(rc, KR_ECONFIG);
  expect_error(cfg, "t.conf:65: more than 64 [wait] sections");
  assert_int_equal(kr_config_error_total(cfg), 1);
  assert_int_equal(kr_config_finish(cfg), 0);
  assert_int_equal(kr_config_wait_count(kr_config_global(cfg)), 64);
  kr_config_free(cfg);

  /* compiled patterns are capped: each costs time and JIT memory */
  kr_buf_reset(&b);
  for (unsigned i = 0; i < KR_CONFIG_MAX_REGEXES + 5; i++)
    kr_buf_printf(&b, "[host \"h%u.org\"]\nscope.exclude = ^/x%u$\n", i, i);
  cfg = load(b.data, &rc);
  assert_int_equal(rc, KR_ECONFIG);
  char want[128];
  snprintf(want, sizeof want, "t.conf:%u: scope.exclude: more than %u patterns",
           2 * KR_CONFIG_MAX_REGEXES + 2, KR_CONFIG_MAX_REGEXES);
  expect_error(cfg, want);
  assert_int_equal(kr_config_error_total(cfg), 5);
  kr_config_free(cfg);

  /* reopening a plain section 100,000 times is fine */
  kr_buf_reset(&b);
  for (int i = 0; i < 100000; i++) kr_buf_append_str(&b, "[crawl]\n");
  cfg = load_ok(b.data);
  kr_config_free(cfg);
  kr_buf_free(&b);
}

/* Random bytes and mutations of a valid file: an error or success, never
 * a crash, leak (under ASan) or hang. Fixed seed, bounded count. */
static void hostile_random_input(void **state) {
  (void)state;
  static const char base[] = "[crawl]\nname = x\n[host \"a.b\"]\npoliteness.min-delay = 3s\n"
                             "[wait \"w\"]\ncontent-type = ^t\n[scope]\ninclude = (a|b)\n";
  static const char alphabet[] = "[]\"=:.#; \n\r\t\0\xff" "abcdehstwxz019";
  unsigned seed = 12345;
  char buf[sizeof base + 64];
  for (int iter = 0; iter < 3000; iter++) {
    size_t n;
    if (iter % 2) {
      n = sizeof base - 1;
      memcpy(buf, base, n);
      for (int k = 0; k < 1 + iter % 5; k++) {
        seed = seed * 1103515245 + 12345;
        buf[(seed >> 8) % n] = alphabet[(seed >> 20) % (sizeof alphabet - 1)];
      }
    } else {
      seed = seed * 1103515245 + 12345;
      n = (seed >> 8) % sizeof buf;
      for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245 + 12345;
        buf[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
      }
    }
    kr_config_t *cfg = kr_config_new();
    int rc = kr_config_load_string(cfg, "fuzz", buf, n);
    assert_true(rc == 0 || rc == KR_ECONFIG);
    assert_true((rc == 0) == (kr_config_error_total(cfg) == 0));
    rc = kr_config_finish(cfg);
    assert_true(rc == 0 || rc == KR_ECONFIG);
    for (size_t i = 0; i < kr_config_error_count(cfg); i++)
      assert_true(strncmp(kr_config_error(cfg, i), "fuzz:", 5) == 0);
    (void)kr_config_view(cfg, "x.a.b", 5);
    kr_config_free(cfg);
  }
}

/* ---- config/kria.conf against the schema ---------------------------------------------------- */

/* 1 if the comment block right above line index li of lines holds "# doc". */
static int doc_above(char **lines, int li, const char *doc) {
  char want[512];
  snprintf(want, sizeof want, "# %s", doc);
  for (int j = li - 1; j >= 0 && lines[j][0] == '#'; j--)
    if (strcmp(lines[j], want) == 0) return 1;
  return 0;
}

static void kria_conf_documents_every_key(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/config/kria.conf", top_dir());
  kr_config_t *cfg = kr_config_new();
  int rc = kr_config_load_file(cfg, path);
  for (size_t i = 0; i < kr_config_error_count(cfg); i++)
    print_error("%s\n", kr_config_error(cfg, i));
  assert_int_equal(rc, 0); /* nothing unknown, nothing duplicated, all valid */
  assert_int_equal(kr_config_finish(cfg), 0);
  kr_config_t *def = kr_config_new();
  assert_int_equal(kr_config_finish(def), 0);
  const kr_config_view_t *g = kr_config_global(cfg), *d = kr_config_global(def);

  /* every key is set in the file, to its default */
  for (int k = 0; k < KR_CFG__COUNT; k++) {
    if (kr_config_line(g, (kr_cfg_key_t)k) <= 0)
      print_error("config/kria.conf lacks %s.%s\n", kr_config_key_section(k), kr_config_key_name(k));
    assert_true(kr_config_line(g, (kr_cfg_key_t)k) > 0);
    char a[4096];
    snprintf(a, sizeof a, "%s", fmt_key(g, (kr_cfg_key_t)k));
    if (strcmp(a, fmt_key(d, (kr_cfg_key_t)k)) != 0)
      print_error("config/kria.conf: %s.%s = %s, default %s\n", kr_config_key_section(k),
                  kr_config_key_name(k), a, fmt_key(d, (kr_cfg_key_t)k));
    assert_string_equal(a, fmt_key(d, (kr_cfg_key_t)k));
  }
  /* the wait sections are the built-in stack, key for key */
  assert_int_equal(kr_config_wait_count(g), kr_config_wait_count(d));
  for (size_t i = 0; i < kr_config_wait_count(g); i++)
    for (int k = 0; k < KR_CFG_WAIT__COUNT; k++) {
      kr_buf_t a, b;
      kr_buf_init(&a, 1024);
      kr_buf_init(&b, 1024);
      kr_config_format_wait(g, i, (kr_cfg_wait_key_t)k, &a);
      kr_config_format_wait(d, i, (kr_cfg_wait_key_t)k, &b);
      assert_string_equal(a.data ? a.data : "", b.data ? b.data : "");
      kr_buf_free(&a);
      kr_buf_free(&b);
    }
  /* no live [host] section: the example stays a comment */
  assert_ptr_equal(kr_config_view(cfg, "example.org", 11), g);
  kr_config_free(def);
  kr_config_free(cfg);

  /* each key line has its doc line in the comment block above it, and each
   * wait key appears in every [wait] section (documented in the first) */
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char *lines[2000];
  int n = 0;
  char line[1024];
  while (n < 2000 && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    lines[n++] = strdup(line);
  }
  fclose(f);
  int seen[KR_CFG__COUNT] = {0}, wait_seen[KR_CFG_WAIT__COUNT] = {0};
  char section[64] = "";
  int nwait_sections = 0;
  for (int i = 0; i < n; i++) {
    if (lines[i][0] == '[') {
      snprintf(section, sizeof section, "%s", lines[i] + 1);
      section[strcspn(section, " ]")] = '\0';
      if (strcmp(section, "wait") == 0) nwait_sections++;
      continue;
    }
    if (!lines[i][0] || lines[i][0] == '#') continue;
    char key[128];
    size_t kl = strcspn(lines[i], " =");
    snprintf(key, sizeof key, "%.*s", (int)kl, lines[i]);
    if (strcmp(section, "wait") == 0) {
      int k;
      for (k = 0; k < KR_CFG_WAIT__COUNT; k++)
        if (strcmp(kr_config_wait_key_name(k), key) == 0) break;
      assert_true(k < KR_CFG_WAIT__COUNT);
      if (nwait_sections == 1) {
        if (!doc_above(lines, i, kr_config_wait_key_doc(k)))
          print_error("kria.conf:%d: wait key %s lacks its doc line\n", i + 1, key);
        assert_true(doc_above(lines, i, kr_config_wait_key_doc(k)));
      }
      wait_seen[k]++;
      continue;
    }
    char dotted[200];
    snprintf(dotted, sizeof dotted, "%s.%s", section, key);
    int k = kr_config_key_find(dotted);
    assert_true(k >= 0);
    if (!doc_above(lines, i, kr_config_key_doc(k)))
      print_error("kria.conf:%d: %s lacks its doc line \"# %s\"\n", i + 1, dotted, kr_config_key_doc(k));
    assert_true(doc_above(lines, i, kr_config_key_doc(k)));
    seen[k]++;
  }
  for (int k = 0; k < KR_CFG__COUNT; k++) assert_int_equal(seen[k], 1);
  assert_true(nwait_sections >= 1);
  for (int k = 0; k < KR_CFG_WAIT__COUNT; k++) assert_int_equal(wait_seen[k], nwait_sections);
  for (int i = 0; i < n; i++) free(lines[i]);
}

/* Every default and every range bound in the schema parses as its type
 * (kr_config_new asserts the defaults; this also covers formatting). */
static void schema_defaults_round_trip(void **state) {
  (void)state;
  kr_config_t *cfg = load_ok("");
  const kr_config_view_t *g = kr_config_global(cfg);
  for (int k = 0; k < KR_CFG__COUNT; k++) {
    enum kr_cfg_type t = kr_config_key_type(k);
    if (t == KR_CFG_T_REGEX_LIST || t == KR_CFG_T_LIST) continue;
    /* format the default, set it back with -o on a fresh config: same */
    char text[4400];
    snprintf(text, sizeof text, "%s.%s=%s", kr_config_key_section(k), kr_config_key_name(k),
             fmt_key(g, (kr_cfg_key_t)k));
    kr_config_t *c2 = kr_config_new();
    if (kr_config_set(c2, text) != 0) print_error("%s: %s\n", text, kr_config_error(c2, 0));
    assert_int_equal(kr_config_error_total(c2), 0);
    assert_int_equal(kr_config_finish(c2), 0);
    char a[4096];
    snprintf(a, sizeof a, "%s", fmt_key(kr_config_global(c2), (kr_cfg_key_t)k));
    assert_string_equal(a, fmt_key(g, (kr_cfg_key_t)k));
    kr_config_free(c2);
  }
  kr_config_free(cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(durations_parse_with_units),
      cmocka_unit_test(durations_format_round_trip),
      cmocka_unit_test(sizes_parse_with_units),
      cmocka_unit_test(numbers_out_of_range),
      cmocka_unit_test(every_error_path_has_its_line),
      cmocka_unit_test(cross_key_checks),
      cmocka_unit_test(all_errors_reported_not_just_the_first),
      cmocka_unit_test(files_that_cannot_be_read),
      cmocka_unit_test(ukwa_fixture_loads),
      cmocka_unit_test(crlf_bom_and_no_final_newline),
      cmocka_unit_test(lists_append_clear_and_cap),
      cmocka_unit_test(enums_getters_and_schema),
      cmocka_unit_test(overrides_resolve_up_the_domain_chain),
      cmocka_unit_test(long_host_names_are_not_cut),
      cmocka_unit_test(default_wait_evaluators_are_figure_12),
      cmocka_unit_test(defaults_are_poisson),
      cmocka_unit_test(wait_sections_keep_file_order),
      cmocka_unit_test(command_line_overrides),
      cmocka_unit_test(hostile_lines),
      cmocka_unit_test(hostile_section_counts),
      cmocka_unit_test(hostile_random_input),
      cmocka_unit_test(kria_conf_documents_every_key),
      cmocka_unit_test(schema_defaults_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
