/*
 * Aborting allocators (see include/kria/mem.h). The abort message goes to
 * stderr without allocating.
 */
#include "kria/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *oom_prefix = "";

void kr_mem_set_oom_prefix(const char *prefix) { oom_prefix = prefix ? prefix : ""; }

static void oom(size_t n) {
  char msg[96];
  int len = snprintf(msg, sizeof msg, "%skria: fatal: out of memory allocating %zu bytes\n",
                     oom_prefix, n);
  if (len > 0) {
    ssize_t w = write(2, msg, (size_t)len);
    (void)w;
  }
  abort();
}

void *kr_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) oom(n);
  return p;
}

void *kr_xcalloc(size_t nmemb, size_t size) {
  void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
  if (!p) oom(nmemb * size);
  return p;
}

void *kr_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) oom(n);
  return q;
}

char *kr_xstrndup(const char *s, size_t n) {
  char *p = kr_xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *kr_xstrdup(const char *s) { return kr_xstrndup(s, strlen(s)); }

char *kr_xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) oom(0);
  char *p = kr_xmalloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}
