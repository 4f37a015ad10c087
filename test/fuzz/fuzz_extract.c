/*
 * libFuzzer harness for the HTML and CSS link extractors. The first input
 * byte picks the extractor, small caps (or the defaults) and a chunk size;
 * the rest is the document. Invariants: the links (kind, context, URL in
 * order) are identical whether the document is fed whole or in chunks; no
 * URL is longer than max_value; no more than max_links are delivered; and
 * ASan/UBSan see nothing.
 *
 *   test/fuzz/run.sh extract     (or: make fuzz FUZZ_SECONDS=N)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kria/extract.h"

typedef struct ex_run {
  uint64_t hash, links;
  size_t max_value;
} ex_run_t;

static uint64_t ex_fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

static int ex_on_link(void *ud, const kr_extract_link_t *l) {
  ex_run_t *r = ud;
  FUZZ_CHECK(l->url.n <= r->max_value);
  FUZZ_CHECK(!l->url.n || l->url.p);
  char k = (char)l->kind;
  r->hash = ex_fnv(r->hash, &k, 1);
  r->hash = ex_fnv(r->hash, l->context, strlen(l->context) + 1);
  r->hash = ex_fnv(r->hash, l->url.p, l->url.n);
  r->hash = ex_fnv(r->hash, "\n", 1);
  r->links++;
  return 0;
}

static ex_run_t ex_run(int css, const kr_extract_opts_t *o, const uint8_t *p, size_t n,
                 size_t chunk) {
  ex_run_t r = {0xcbf29ce484222325ull, 0, o->max_value};
  if (css) {
    kr_css_extractor_t *x = kr_extract_css_new(o, ex_on_link, &r);
    for (size_t i = 0; i < n; i += chunk)
      kr_extract_css_feed(x, p + i, n - i < chunk ? n - i : chunk);
    kr_extract_css_finish(x);
    FUZZ_CHECK(kr_extract_css_stats(x)->links == r.links);
    kr_extract_css_free(x);
  } else {
    kr_html_extractor_t *x = kr_extract_html_new(o, ex_on_link, &r);
    for (size_t i = 0; i < n; i += chunk)
      kr_extract_html_feed(x, p + i, n - i < chunk ? n - i : chunk);
    kr_extract_html_finish(x);
    FUZZ_CHECK(kr_extract_html_stats(x)->links == r.links);
    kr_extract_html_free(x);
  }
  FUZZ_CHECK(r.links <= o->max_links);
  return r;
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  data++, size--;
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  if (mode & 2) {
    o.max_value = 16 + (mode >> 4);
    o.max_links = 1 + (mode >> 5);
  }
  if (mode & 4) o.flags |= KR_EXTRACT_HTTP_ONLY;
  if (mode & 8) o.flags |= KR_EXTRACT_FORMS;
  size_t chunk = 1 + (size_t)(mode >> 3) % 7;
  int css = mode & 1;
  ex_run_t whole = ex_run(css, &o, data, size, size ? size : 1);
  ex_run_t parts = ex_run(css, &o, data, size, chunk);
  FUZZ_CHECK(whole.hash == parts.hash && whole.links == parts.links);
  return 0;
}
