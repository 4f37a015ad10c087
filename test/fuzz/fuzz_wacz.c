/*
 * libFuzzer harness for the page titles of `kria wacz`
 * (kr__wacz_http_title): the input is the start of an HTTP response as a
 * WARC stores it (head, then a body perhaps chunked, gzip- or
 * deflate-coded, cut anywhere).
 *
 * Invariants, beyond ASan/UBSan:
 *  - the result is 0 or 1, the same twice, and 1 exactly when a title
 *    came out;
 *  - a title is at most KR_WACZ_TITLE_MAX bytes, NUL-terminated at its
 *    length, and collapsed as document.title is: no leading, trailing or
 *    doubled ASCII white space, no tab, CR, LF or FF;
 *  - a title never ends inside a UTF-8 sequence (the cap cuts before
 *    one; an incomplete one at the end of the text is dropped).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kria/buf.h"
#include "wacz.h"

static int waczfz_is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  kr_buf_t a, b;
  kr_buf_init(&a, KR_WACZ_TITLE_MAX);
  kr_buf_init(&b, KR_WACZ_TITLE_MAX);
  int r1 = kr__wacz_http_title((const char *)data, size, &a);
  int r2 = kr__wacz_http_title((const char *)data, size, &b);
  FUZZ_CHECK(r1 == 0 || r1 == 1);
  FUZZ_CHECK(r1 == r2 && a.len == b.len && (!a.len || !memcmp(a.data, b.data, a.len)));
  FUZZ_CHECK(r1 == (a.len > 0));
  if (r1) {
    FUZZ_CHECK(a.len <= KR_WACZ_TITLE_MAX && a.data[a.len] == '\0');
    FUZZ_CHECK(a.data[0] != ' ' && a.data[a.len - 1] != ' ');
    for (size_t i = 0; i < a.len; i++) {
      FUZZ_CHECK(a.data[i] == ' ' || !waczfz_is_space(a.data[i]));
      FUZZ_CHECK(!(a.data[i] == ' ' && i + 1 < a.len && a.data[i + 1] == ' '));
    }
    /* the last lead byte has all its continuation bytes */
    size_t s = a.len;
    while (s > 0 && ((unsigned char)a.data[s - 1] & 0xc0) == 0x80) s--;
    if (s > 0 && (unsigned char)a.data[s - 1] >= 0xc0) {
      unsigned char c = (unsigned char)a.data[s - 1];
      size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
      FUZZ_CHECK(a.len - (s - 1) >= want);
    }
  }
  kr_buf_free(&a);
  kr_buf_free(&b);
  return 0;
}
