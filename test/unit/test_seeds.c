/*
 * Unit tests for the seeds reader: the format (comments, blank lines,
 * whitespace, CRLF, BOM, bare hosts, trailing comments), canonical
 * dedupe reported once, bad lines with file:line messages, and hostile
 * input (NUL bytes, a 1 MB line, binary, a million lines, the seed and
 * message caps), then files (size cap, missing file, directory).
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

#include "kria/error.h"
#include "kria/seeds.h"
#include "helpers.h"

static int parse(kr_seeds_t *s, const char *text) {
  kr_seeds_init(s);
  return kr_seeds_parse(s, "seeds.txt", text, strlen(text), NULL);
}

static void format(void **state) {
  (void)state;
  const char *text = "\xef\xbb\xbf# a comment\n"
                     "http://example.org/\n"
                     "\n"
                     "   \t \n"
                     "  https://www.example.com/dir/page.html  \r\n"
                     "example.net\n"
                     "example.info:8080/a/b\n"
                     "http://with.comment/  # home page\n"
                     "http://with.fragment/#not-a-comment\n"
                     "HTTPS://UPPER.EXAMPLE/Path\n"
                     "http:no.slashes.example\n"
                     "localhost:8080\n"
                     "http://last.line.without.newline/x";
  kr_seeds_t s;
  assert_int_equal(parse(&s, text), 0);
  static const struct { const char *url; unsigned line, flags; } want[] = {
      {"http://example.org/", 2, 0},
      {"https://www.example.com/dir/page.html", 5, 0},
      {"http://example.net/", 6, KR_SEED_IMPLIED_HTTP | KR_SEED_NO_PATH},
      {"http://example.info:8080/a/b", 7, KR_SEED_IMPLIED_HTTP},
      {"http://with.comment/", 8, 0},
      {"http://with.fragment/", 9, 0},
      {"https://upper.example/Path", 10, 0},
      {"http://no.slashes.example/", 11, KR_SEED_NO_PATH},
      {"http://localhost:8080/", 12, KR_SEED_IMPLIED_HTTP | KR_SEED_NO_PATH},
      {"http://last.line.without.newline/x", 13, 0},
  };
  for (size_t i = 0; i < s.n && i < sizeof want / sizeof want[0]; i++) {
    assert_string_equal(s.v[i].url, want[i].url);
    assert_int_equal(s.v[i].len, strlen(want[i].url));
    assert_int_equal(s.v[i].line, want[i].line);
    assert_int_equal(s.v[i].flags, want[i].flags);
  }
  assert_int_equal(s.n, sizeof want / sizeof want[0]);
  assert_int_equal(s.lines, 13);
  assert_int_equal(s.bad, 0);
  assert_int_equal(s.n_messages, 0);
  kr_seeds_free(&s);
}

static void bad_lines_with_line_numbers(void **state) {
  (void)state;
  const char *text = "http://good.example/\n"       /* 1 */
                     "ftp://files.example/\n"       /* 2 */
                     "http://[::1/\n"               /* 3 */
                     "http://a.example/ junk\n"     /* 4 */
                     "mailto:someone@example.org\n" /* 5 */
                     "http://exa mple.org/\n"       /* 6 */
                     "http://good.example:99999/\n" /* 7 */
                     "http://good2.example/\n";     /* 8 */
  kr_seeds_t s;
  assert_int_equal(parse(&s, text), 0);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.v[1].url, "http://good2.example/");
  assert_int_equal(s.v[1].line, 8);
  assert_int_equal(s.bad, 6);
  static const char *const msgs[] = {
      "seeds.txt:2: unsupported scheme \"ftp\" (only http and https), skipped: "
      "ftp://files.example/",
      "seeds.txt:3: invalid URL, skipped: http://[::1/",
      "seeds.txt:4: text after the URL (a URL has no spaces; comments start with #), skipped: "
      "http://a.example/ junk",
      "seeds.txt:5: unsupported scheme \"mailto\" (only http and https), skipped: "
      "mailto:someone@example.org",
      "seeds.txt:6: text after the URL (a URL has no spaces; comments start with #), skipped: "
      "http://exa mple.org/",
      "seeds.txt:7: invalid URL, skipped: http://good.example:99999/",
  };
  assert_int_equal(s.n_messages, 6);
  for (size_t i = 0; i < 6; i++) assert_string_equal(s.messages[i], msgs[i]);
  kr_seeds_free(&s);
}

/* Hosts a crawl cannot reach are bad lines, never hosts: what a random
 * file given as seeds turns into ("http://(", "qb"). */
static void hosts_that_are_not_host_names(void **state) {
  (void)state;
  const char *text = "http://(/\n"                     /* 1 */
                     "qb\n"                            /* 2: bare, one label */
                     "http://intranet/\n"              /* 3: with a scheme: fine */
                     "http://a..b.example/\n"          /* 4 */
                     "http://x*y.example/\n"           /* 5 */
                     "http://under_score.example/\n"   /* 6: fine */
                     "http://192.0.2.1/\n"             /* 7: fine */
                     "http://[2001:db8::1]/\n"         /* 8: fine */
                     "xn--bcher-kva.example\n"         /* 9: fine */
                     "http://b\xc3\xbc" "cher.example/\n" /* 10: fine, punycode */
                     "localhost\n"                     /* 11: fine */
                     "http://trailing.dot.example./\n" /* 12: fine */
                     "http://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example/\n"
                     "http://.example/\n";             /* 14 */
  kr_seeds_t s;
  assert_int_equal(parse(&s, text), 0);
  static const char *const good[] = {
      "http://intranet/", "http://under_score.example/", "http://192.0.2.1/",
      "http://[2001:db8::1]/", "http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/",
      "http://localhost/", "http://trailing.dot.example./"};
  for (size_t i = 0; i < s.n && i < 8; i++) printf("# seed %zu: %s\n", i, s.v[i].url);
  assert_int_equal(s.duplicates, 1); /* the punycode and the UTF-8 spelling */
  assert_int_equal(s.n, 7);
  for (size_t i = 0, j = 0; i < s.n; i++, j++) {
    if (j == 5) j++; /* the duplicate */
    assert_string_equal(s.v[i].url, good[j]);
  }
  assert_int_equal(s.bad, 6);
  int found = 0;
  for (size_t i = 0; i < s.n_messages; i++) {
    if (strstr(s.messages[i], "seeds.txt:2: not a host name (one label")) found |= 1;
    if (strstr(s.messages[i], "seeds.txt:13: not a host name (a label over 63")) found |= 2;
    if (strstr(s.messages[i], "seeds.txt:5: not a host name (characters")) found |= 4;
  }
  assert_int_equal(found, 7);
  kr_seeds_free(&s);
}

static void duplicates_reported_once(void **state) {
  (void)state;
  const char *text = "http://example.org/\n"
                     "HTTP://EXAMPLE.ORG:80/\n"
                     "example.org\n"
                     "http://example.org/#frag\n"
                     "http://other.example/a/%7Euser\n"
                     "http://other.example/a/~user\n";
  kr_seeds_t s;
  assert_int_equal(parse(&s, text), 0);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.duplicates, 4);
  assert_int_equal(s.bad, 0);
  assert_int_equal(s.n_messages, 2);
  assert_string_equal(s.messages[0], "seeds.txt:2: duplicate of line 1 (http://example.org/), "
                                     "skipped; further duplicates of it are not reported");
  assert_string_equal(s.messages[1], "seeds.txt:6: duplicate of line 5 "
                                     "(http://other.example/a/~user), skipped; further "
                                     "duplicates of it are not reported");
  /* A second parse dedupes against the first. */
  assert_int_equal(kr_seeds_parse(&s, "more.txt", "http://example.org/\nhttp://new.example/\n",
                                  39, NULL), 0);
  assert_int_equal(s.n, 3);
  assert_int_equal(s.n_messages, 2); /* example.org's duplicate was reported already */
  kr_seeds_free(&s);
}

static void canonicalization_options(void **state) {
  (void)state;
  kr_seeds_opts_t o;
  kr_seeds_opts_init(&o);
  o.canon = kr_url_canon_opts_new(KR_URL_CANON_DEFAULT | KR_URL_CANON_STRIP_WWW);
  const char *text = "http://www.example.org/\nhttp://example.org/\n";
  kr_seeds_t s;
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_parse(&s, "x", text, strlen(text), &o), 0);
  assert_int_equal(s.n, 1);
  assert_string_equal(s.v[0].url, "http://example.org/");
  assert_int_equal(s.duplicates, 1);
  kr_seeds_free(&s);
  kr_url_canon_opts_free(o.canon);
}

static void hostile_input(void **state) {
  (void)state;
  kr_seeds_t s;
  /* NUL bytes */
  const char nul[] = "http://a.example/\nhttp://b.exa\0mple/\nhttp://c.example/\n";
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_parse(&s, "n.txt", nul, sizeof nul - 1, NULL), 0);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.bad, 1);
  assert_string_equal(s.messages[0], "n.txt:2: NUL byte in line, skipped: http://b.exa\\x00mple/");
  kr_seeds_free(&s);

  /* A 1 MB line between two good ones. */
  size_t big = 1 << 20;
  char *buf = malloc(big + 64);
  strcpy(buf, "http://a.example/\nhttp://b.example/");
  size_t n = strlen(buf);
  memset(buf + n, 'x', big);
  n += big;
  memcpy(buf + n, "\nhttp://c.example/\n", 19);
  n += 19;
  kr_seeds_init(&s);
  double t0 = th_now_s();
  assert_int_equal(kr_seeds_parse(&s, "big.txt", buf, n, NULL), 0);
  assert_true(th_now_s() - t0 < 1.0);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.messages[0], "big.txt:2: line too long (1048593 bytes, limit 8192), skipped");
  kr_seeds_free(&s);
  free(buf);

  /* Binary: never crashes, bounded messages, counted. */
  size_t bn = 4 << 20;
  unsigned char *bin = malloc(bn);
  unsigned x = 99;
  for (size_t i = 0; i < bn; i++) {
    x = x * 1103515245u + 12345u;
    bin[i] = (unsigned char)(x >> 16);
  }
  kr_seeds_init(&s);
  t0 = th_now_s();
  assert_int_equal(kr_seeds_parse(&s, "bin", (const char *)bin, bn, NULL), 0);
  printf("# 4 MiB of random bytes: %zu lines, %zu bad, %zu seeds in %.2f s\n", s.lines, s.bad,
         s.n, th_now_s() - t0);
  assert_int_equal(s.n, 0); /* junk never becomes a seed (58 did, as hosts "qb", "0.0.0.7") */
  assert_true(s.lines > 10000);
  assert_int_equal(s.n_messages, KR_SEEDS_MAX_MESSAGES);
  /* every bad line has a message, a duplicated URL one */
  assert_true(s.n_messages + s.messages_dropped >= s.bad);
  assert_true(s.n_messages + s.messages_dropped <= s.bad + s.duplicates);
  /* Messages quote the bytes escaped: printable ASCII only. */
  for (size_t i = 0; i < s.n_messages; i++)
    for (const char *p = s.messages[i]; *p; p++) assert_true(*p >= 0x20 && *p < 0x7f);
  kr_seeds_free(&s);
  free(bin);
}

static void a_million_lines(void **state) {
  (void)state;
  size_t lines = 1000000;
  char *buf = malloc(lines * 40);
  size_t n = 0;
  for (size_t i = 0; i < lines; i++) n += (size_t)sprintf(buf + n, "http://h%zu.example/p\n", i % 500000);
  kr_seeds_t s;
  kr_seeds_init(&s);
  double t0 = th_now_s();
  assert_int_equal(kr_seeds_parse(&s, "m.txt", buf, n, NULL), 0);
  double dt = th_now_s() - t0;
  printf("# 1,000,000 lines (500,000 distinct URLs): %.2f s, %.2f us/line\n", dt, dt);
  assert_int_equal(s.lines, lines);
  assert_int_equal(s.n, 500000);
  assert_int_equal(s.duplicates, 500000);
  assert_int_equal(s.n_messages, KR_SEEDS_MAX_MESSAGES);
  assert_int_equal(s.messages_dropped, 500000 - KR_SEEDS_MAX_MESSAGES);
  assert_string_equal(s.v[499999].url, "http://h499999.example/p");
  kr_seeds_free(&s);

  /* The seed cap stops the parse with a message. */
  kr_seeds_opts_t o;
  kr_seeds_opts_init(&o);
  o.max_seeds = 1000;
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_parse(&s, "m.txt", buf, n, &o), KR_ETOOBIG);
  assert_int_equal(s.n, 1000);
  assert_string_equal(s.messages[s.n_messages - 1],
                      "m.txt:1001: more than 1000 seeds; this line and the rest of the input "
                      "are ignored");
  kr_seeds_free(&s);
  free(buf);
}

static void files(void **state) {
  (void)state;
  char dir[] = "/tmp/kria-seeds-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/seeds.txt", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("# seeds\nexample.org\nftp://x/\n", f);
  fclose(f);

  kr_seeds_t s;
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_load(&s, path, NULL), 0);
  assert_int_equal(s.n, 1);
  assert_string_equal(s.v[0].url, "http://example.org/");
  char want[512];
  snprintf(want, sizeof want,
           "%s:3: unsupported scheme \"ftp\" (only http and https), skipped: ftp://x/", path);
  assert_string_equal(s.messages[0], want);
  kr_seeds_free(&s);

  /* Over the size cap. */
  kr_seeds_opts_t o;
  kr_seeds_opts_init(&o);
  o.max_file = 16;
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_load(&s, path, &o), KR_ETOOBIG);
  assert_int_equal(s.n, 0);
  snprintf(want, sizeof want, "%s: file is larger than the limit of 16 bytes", path);
  assert_string_equal(s.messages[0], want);
  kr_seeds_free(&s);

  /* A pipe-like file without a size: read up to the cap. */
  kr_seeds_init(&s);
  o.max_file = 30;
  f = fopen(path, "w");
  fputs("http://a.example/\nhttp://b.example/\n", f); /* 36 bytes */
  fclose(f);
  assert_int_equal(kr_seeds_load(&s, path, &o), KR_ETOOBIG);
  kr_seeds_free(&s);
  o.max_file = 36;
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_load(&s, path, &o), 0);
  assert_int_equal(s.n, 2);
  kr_seeds_free(&s);

  /* Missing file, directory. */
  char missing[300];
  snprintf(missing, sizeof missing, "%s/none.txt", dir);
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_load(&s, missing, NULL), KR_EIO);
  snprintf(want, sizeof want, "%s: cannot open: No such file or directory", missing);
  assert_string_equal(s.messages[0], want);
  kr_seeds_free(&s);
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_load(&s, dir, NULL), KR_EIO);
  snprintf(want, sizeof want, "%s: cannot read: Is a directory", dir);
  assert_string_equal(s.messages[0], want);
  kr_seeds_free(&s);

  /* Empty file and empty buffer. */
  f = fopen(path, "w");
  fclose(f);
  kr_seeds_init(&s);
  assert_int_equal(kr_seeds_load(&s, path, NULL), 0);
  assert_int_equal(s.n, 0);
  assert_int_equal(kr_seeds_parse(&s, "empty", NULL, 0, NULL), 0);
  kr_seeds_free(&s);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(format),
      cmocka_unit_test(bad_lines_with_line_numbers),
      cmocka_unit_test(hosts_that_are_not_host_names),
      cmocka_unit_test(duplicates_reported_once),
      cmocka_unit_test(canonicalization_options),
      cmocka_unit_test(hostile_input),
      cmocka_unit_test(a_million_lines),
      cmocka_unit_test(files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
