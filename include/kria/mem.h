/*
 * Allocation that never returns NULL: out of memory aborts the process.
 * That is safe only because every buffer fed by input has a hard maximum
 * (see buf.h), so no server can drive an uncapped allocation.
 */
#ifndef KRIA_MEM_H
#define KRIA_MEM_H

#include <stddef.h>

void *kr_xmalloc(size_t n);
void *kr_xcalloc(size_t nmemb, size_t size);
void *kr_xrealloc(void *p, size_t n);
char *kr_xstrdup(const char *s);
char *kr_xstrndup(const char *s, size_t n);
/* Like asprintf, aborting on failure. */
char *kr_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What goes before the out-of-memory message ("<2>" when stderr is the
 * journal): set once at start by the log (src/base/log.c), the only
 * process-wide setting of the pure modules. Static string, or NULL. */
void kr_mem_set_oom_prefix(const char *prefix);

#endif
