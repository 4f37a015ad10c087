/*
 * libFuzzer harness for the HTML and CSS link extractors. The first input
 * byte picks the extractor, small caps (or the defaults) and a chunk size;
 * the rest is the document. Invariants: the links (kind, context, URL in
 * order) are identical whether the document is fed whole or in chunks; no
 * URL is longer than max_value; no more than max_links are delivered; and
 * ASan/UBSan see nothing.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *     test/fuzz/fuzz_extract.c src/extract_html.c src/extract_css.c src/buf.c \
 *     src/mem.c -o /tmp/fuzz_extract
 *   /tmp/fuzz_extract -dict=test/fuzz/extract.dict test/fuzz/corpus/extract
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kria/extract.h"

typedef struct run {
  uint64_t hash, links;
  size_t max_value;
} run_t;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

static int on_link(void *ud, const kr_extract_link_t *l) {
  run_t *r = ud;
  if (l->url.n > r->max_value) abort();
  if (l->url.n && !l->url.p) abort();
  char k = (char)l->kind;
  r->hash = fnv(r->hash, &k, 1);
  r->hash = fnv(r->hash, l->context, strlen(l->context) + 1);
  r->hash = fnv(r->hash, l->url.p, l->url.n);
  r->hash = fnv(r->hash, "\n", 1);
  r->links++;
  return 0;
}

static run_t run(int css, const kr_extract_opts_t *o, const uint8_t *p, size_t n,
                 size_t chunk) {
  run_t r = {0xcbf29ce484222325ull, 0, o->max_value};
  if (css) {
    kr_css_extractor_t *x = kr_extract_css_new(o, on_link, &r);
    for (size_t i = 0; i < n; i += chunk)
      kr_extract_css_feed(x, p + i, n - i < chunk ? n - i : chunk);
    kr_extract_css_finish(x);
    if (kr_extract_css_stats(x)->links != r.links) abort();
    kr_extract_css_free(x);
  } else {
    kr_html_extractor_t *x = kr_extract_html_new(o, on_link, &r);
    for (size_t i = 0; i < n; i += chunk)
      kr_extract_html_feed(x, p + i, n - i < chunk ? n - i : chunk);
    kr_extract_html_finish(x);
    if (kr_extract_html_stats(x)->links != r.links) abort();
    kr_extract_html_free(x);
  }
  if (r.links > o->max_links) abort();
  return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
  run_t whole = run(css, &o, data, size, size ? size : 1);
  run_t parts = run(css, &o, data, size, chunk);
  if (whole.hash != parts.hash || whole.links != parts.links) abort();
  return 0;
}
