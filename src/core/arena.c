/*
 * Bump arena (see include/kria/arena.h). Blocks are a singly linked list,
 * newest first; a request larger than the block size gets a block of its
 * own so one big header cannot waste the rest of a block.
 */
#include "kria/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kria/mem.h"

struct kr_arena_block {
  kr_arena_block_t *next;
  size_t size; /* usable bytes in data[] */
  size_t off;  /* next free byte */
  _Alignas(16) unsigned char data[];
};

void kr_arena_init(kr_arena_t *a, size_t block_size, size_t cap) {
  a->head = NULL;
  a->block_size = block_size ? block_size : 4096;
  a->used = 0;
  a->cap = cap;
}

void *kr_arena_alloc(kr_arena_t *a, size_t n) {
  size_t need = (n + 15) & ~(size_t)15;
  if (need < n) return NULL;
  if (a->cap && (need > a->cap || a->used > a->cap - need)) return NULL;
  kr_arena_block_t *b = a->head;
  if (!b || b->size - b->off < need) {
    size_t size = need > a->block_size ? need : a->block_size;
    b = kr_xmalloc(sizeof *b + size);
    b->size = size;
    b->off = 0;
    /* An oversized block goes second so the current block keeps serving. */
    if (a->head && size > a->block_size) {
      b->next = a->head->next;
      a->head->next = b;
    } else {
      b->next = a->head;
      a->head = b;
    }
  }
  void *p = b->data + b->off;
  b->off += need;
  a->used += need;
  return p;
}

char *kr_arena_strndup(kr_arena_t *a, const char *s, size_t n) {
  if (n == SIZE_MAX) return NULL;
  char *p = kr_arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void kr_arena_reset(kr_arena_t *a) {
  kr_arena_block_t *keep = NULL;
  for (kr_arena_block_t *b = a->head, *next; b; b = next) {
    next = b->next;
    if (!keep && b->size == a->block_size) {
      keep = b;
      continue;
    }
    free(b);
  }
  if (keep) {
    keep->next = NULL;
    keep->off = 0;
  }
  a->head = keep;
  a->used = 0;
}

void kr_arena_free(kr_arena_t *a) {
  for (kr_arena_block_t *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  a->head = NULL;
  a->used = 0;
}
