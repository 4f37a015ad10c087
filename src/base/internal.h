/*
 * Private umbrella for src/: container_of, ARRAY_SIZE, KR_BUG_ON and
 * KR_COUNT_IF. Pure modules under include/kria must not include this.
 */
#ifndef KRIA_INTERNAL_H
#define KRIA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/error.h"
#include "kria/mem.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) \
  ((type *)((char *)(ptr)-offsetof(type, member)))

#define KR_UNUSED(x) ((void)(x))
#define KR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KR_MAX(a, b) ((a) > (b) ? (a) : (b))

/* State that must never reach the store or a WARC: stays on in release
 * builds and aborts with the location. */
void kr__bug(const char *file, int line, const char *cond)
    __attribute__((noreturn));
#define KR_BUG_ON(cond) \
  do {                                                  \
    if (__builtin_expect(!!(cond), 0))                  \
      kr__bug(__FILE__, __LINE__, #cond);               \
  } while (0)

/* All n bytes to or from a blocking fd (fdio.c): 0, or -1 on an error
 * (errno) or, reading, the end before n bytes. */
int kr_write_all(int fd, const void *p, size_t n);
int kr_read_all(int fd, void *p, size_t n);

/* Rare events worth showing on the status page: counted, never fatal. */
extern uint64_t kr__rare_events;
#define KR_COUNT_IF(cond) \
  ((cond) ? (kr__rare_events++, 1) : 0)

#endif
