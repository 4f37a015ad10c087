/*
 * Per-fetch arena: headers, URLs and links of one fetch live here and are
 * all released at once when the fetch ends. Allocations are 16-byte
 * aligned and never freed singly. A cap bounds the total so hostile input
 * cannot grow an arena without limit: past it, kr_arena_alloc returns
 * NULL (the only allocator in kria that may), and callers turn that into
 * KR_ETOOBIG for the fetch.
 */
#ifndef KRIA_ARENA_H
#define KRIA_ARENA_H

#include <stddef.h>

typedef struct kr_arena_block kr_arena_block_t;

typedef struct kr_arena {
  kr_arena_block_t *head; /* newest block first */
  size_t block_size;      /* default size of new blocks */
  size_t used;            /* bytes handed out, for the cap */
  size_t cap;             /* 0 = unlimited */
} kr_arena_t;

void kr_arena_init(kr_arena_t *a, size_t block_size, size_t cap);
void *kr_arena_alloc(kr_arena_t *a, size_t n);
char *kr_arena_strndup(kr_arena_t *a, const char *s, size_t n);
/* Release everything but the first block, for reuse by the next fetch. */
void kr_arena_reset(kr_arena_t *a);
void kr_arena_free(kr_arena_t *a);

#endif
