/*
 * Bounded growable byte buffers and {ptr,len} slices.
 *
 * A kr_buf_t has a hard maximum set at init: appends past it fail with
 * KR_ETOOBIG and leave the buffer unchanged, so input can never grow one
 * without bound. The data is always NUL-terminated (not counted in len)
 * so it can be handed to libc. Interior pointers are invalidated by any
 * append; keep offsets, not pointers, across appends.
 */
#ifndef KRIA_BUF_H
#define KRIA_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct kr_slice {
  const char *p; /* not NUL-terminated in general */
  size_t n;
} kr_slice_t;

#define KR_SLICE_LIT(s) ((kr_slice_t){(s), sizeof(s) - 1})
static inline kr_slice_t kr_slice(const char *p, size_t n) {
  return (kr_slice_t){p, n};
}
static inline kr_slice_t kr_slice_cstr(const char *s) {
  return (kr_slice_t){s, s ? strlen(s) : 0};
}
/* 1 if the slices hold the same bytes, ASCII case-insensitively. */
int kr_slice_case_eq(kr_slice_t a, kr_slice_t b);
/* 1 if the slices hold the same bytes. */
int kr_slice_eq(kr_slice_t a, kr_slice_t b);
/* Slice without leading and trailing spaces and tabs. */
kr_slice_t kr_slice_trim(kr_slice_t s);

typedef struct kr_buf {
  char *data;  /* NUL-terminated, or NULL while empty and unallocated */
  size_t len;  /* bytes used, excluding the terminator */
  size_t cap;  /* bytes allocated, including the terminator */
  size_t max;  /* hard limit on len */
} kr_buf_t;

void kr_buf_init(kr_buf_t *b, size_t max);
void kr_buf_free(kr_buf_t *b);
/* Forget the contents, keep the allocation. */
static inline void kr_buf_reset(kr_buf_t *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}
/* Make room for n more bytes; KR_ETOOBIG if len + n > max. */
int kr_buf_reserve(kr_buf_t *b, size_t n);
int kr_buf_append(kr_buf_t *b, const void *p, size_t n);
static inline int kr_buf_append_slice(kr_buf_t *b, kr_slice_t s) {
  return kr_buf_append(b, s.p, s.n);
}
static inline int kr_buf_append_str(kr_buf_t *b, const char *s) {
  return kr_buf_append(b, s, strlen(s));
}
/* v in decimal at out, without a NUL (at most KR_U64_DEC_MAX bytes);
 * returns the length. For per-page paths, where snprintf's cost shows. */
#define KR_U64_DEC_MAX 20
size_t kr_u64_dec(char *out, uint64_t v);
int kr_buf_printf(kr_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int kr_buf_vprintf(kr_buf_t *b, const char *fmt, va_list ap);
/* Drop the first n bytes (memmove), for consumed input. */
void kr_buf_consume(kr_buf_t *b, size_t n);

#endif
