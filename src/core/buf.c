/*
 * Bounded buffers and slices (see include/kria/buf.h). Growth doubles the
 * capacity but never past max + 1 (the terminator).
 */
#include "kria/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kria/error.h"
#include "kria/mem.h"

size_t kr_u64_dec(char *out, uint64_t v) {
  char tmp[KR_U64_DEC_MAX], *e = tmp + sizeof tmp, *d = e;
  do *--d = (char)('0' + v % 10); while ((v /= 10) != 0);
  size_t n = (size_t)(e - d);
  memcpy(out, d, n);
  return n;
}

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

int kr_slice_case_eq(kr_slice_t a, kr_slice_t b) {
  if (a.n != b.n) return 0;
  for (size_t i = 0; i < a.n; i++)
    if (lower((unsigned char)a.p[i]) != lower((unsigned char)b.p[i])) return 0;
  return 1;
}

int kr_slice_eq(kr_slice_t a, kr_slice_t b) {
  return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

kr_slice_t kr_slice_trim(kr_slice_t s) {
  while (s.n && (s.p[0] == ' ' || s.p[0] == '\t')) s.p++, s.n--;
  while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t')) s.n--;
  return s;
}

void kr_buf_init(kr_buf_t *b, size_t max) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->max = max;
}

void kr_buf_free(kr_buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

int kr_buf_reserve(kr_buf_t *b, size_t n) {
  if (n > b->max || b->len > b->max - n) return KR_ETOOBIG;
  size_t need = b->len + n + 1;
  if (need <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  if (cap > b->max + 1) cap = b->max + 1;
  b->data = kr_xrealloc(b->data, cap);
  b->cap = cap;
  return 0;
}

int kr_buf_append(kr_buf_t *b, const void *p, size_t n) {
  int rc = kr_buf_reserve(b, n);
  if (rc) return rc;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int kr_buf_vprintf(kr_buf_t *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return KR_EINVAL;
  int rc = kr_buf_reserve(b, (size_t)n);
  if (rc) return rc;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int kr_buf_printf(kr_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = kr_buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

void kr_buf_consume(kr_buf_t *b, size_t n) {
  if (n >= b->len) {
    kr_buf_reset(b);
    return;
  }
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
  b->data[b->len] = '\0';
}
