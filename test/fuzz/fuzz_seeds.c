/*
 * libFuzzer harness for the seeds-file reader. Byte 0: a small seed cap
 * (bit 0: 3), a small line cap (bit 1: 64 bytes), canonicalization flags
 * (bits 2-5), the session-id strip rules (bit 6). The rest is the file.
 *
 * Invariants, beyond ASan/UBSan:
 *  - the parse returns 0, or KR_ETOOBIG only when max_seeds was reached;
 *    at most max_seeds seeds and KR_SEEDS_MAX_MESSAGES messages are kept,
 *    every message reads "seeds.txt:LINE: ..." with LINE a line of the
 *    file; seeds + bad + duplicate lines <= lines read;
 *  - every seed is an http(s) URL already in canonical form
 *    (canon(parse(seed)) == seed), NUL-terminated at len, its line within
 *    the file, and no two seeds are equal;
 *  - parsing the same text again into the same list adds no seed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kria/error.h"
#include "kria/seeds.h"
#include "kria/url.h"

#define SEEDSFZ_NAME "seeds.txt"

static kr_url_canon_opts_t *seedsfz_opts[32];

static int seedsfz_cmp(const void *a, const void *b) {
  const kr_seed_t *x = *(const kr_seed_t *const *)a, *y = *(const kr_seed_t *const *)b;
  return strcmp(x->url, y->url);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned mode = data[0];
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  unsigned oi = (mode >> 2) & 31;
  if (!seedsfz_opts[oi]) {
    seedsfz_opts[oi] = kr_url_canon_opts_new(oi & 15);
    if (oi & 16) FUZZ_CHECK(kr_url_canon_opts_add_ruleset(seedsfz_opts[oi], "session-ids") == 0);
  }
  kr_seeds_opts_t o;
  kr_seeds_opts_init(&o);
  if (mode & 1) o.max_seeds = 3;
  if (mode & 2) o.max_line = 64;
  o.canon = seedsfz_opts[oi];

  kr_seeds_t s;
  kr_seeds_init(&s);
  int rc = kr_seeds_parse(&s, SEEDSFZ_NAME, text, len, &o);
  FUZZ_CHECK(rc == 0 || rc == KR_ETOOBIG);
  FUZZ_CHECK(s.n <= o.max_seeds);
  if (rc == KR_ETOOBIG) FUZZ_CHECK(s.n == o.max_seeds);
  FUZZ_CHECK(s.n + s.bad + s.duplicates <= s.lines);
  FUZZ_CHECK(s.n_messages <= KR_SEEDS_MAX_MESSAGES);
  for (size_t i = 0; i < s.n_messages; i++) {
    const char *m = s.messages[i];
    FUZZ_CHECK(strncmp(m, SEEDSFZ_NAME ":", sizeof SEEDSFZ_NAME) == 0);
    char *end;
    unsigned long line = strtoul(m + sizeof SEEDSFZ_NAME, &end, 10);
    FUZZ_CHECK(end != m + sizeof SEEDSFZ_NAME && *end == ':');
    FUZZ_CHECK(line >= 1 && line <= s.lines + 1);
  }

  kr_buf_t c;
  kr_buf_init(&c, 1 << 20);
  kr_seed_t **sorted = malloc((s.n ? s.n : 1) * sizeof *sorted);
  for (size_t i = 0; i < s.n; i++) {
    const kr_seed_t *seed = &s.v[i];
    FUZZ_CHECK(seed->url && strlen(seed->url) == seed->len);
    FUZZ_CHECK(strncmp(seed->url, "http://", 7) == 0 || strncmp(seed->url, "https://", 8) == 0);
    FUZZ_CHECK(seed->line >= 1 && seed->line <= s.lines);
    kr_buf_reset(&c);
    FUZZ_CHECK(kr_url_canon_str(seed->url, seed->len, NULL, o.canon, &c) == 0);
    FUZZ_CHECK(c.len == seed->len && memcmp(c.data, seed->url, c.len) == 0);
    sorted[i] = &s.v[i];
  }
  qsort(sorted, s.n, sizeof *sorted, seedsfz_cmp);
  for (size_t i = 1; i < s.n; i++) FUZZ_CHECK(strcmp(sorted[i - 1]->url, sorted[i]->url) != 0);
  free(sorted);
  kr_buf_free(&c);

  if (rc == 0) {
    size_t n = s.n;
    FUZZ_CHECK(kr_seeds_parse(&s, SEEDSFZ_NAME, text, len, &o) == 0);
    FUZZ_CHECK(s.n == n);
  }
  kr_seeds_free(&s);
  return 0;
}
