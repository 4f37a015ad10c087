/*
 * The processor chain (see chain.h): registration and the one-time
 * flattening of processors into phase order, filters, the per-fetch walk
 * with its state machine (start, suspend, resume, finalize exactly once)
 * the per-fetch contexts of the processors, and the stream hooks that
 * pass response headers and the chunks of each level to subscribed
 * processors. Sections: building, contexts, filters, the state machine
 * and the walk, streaming.
 */
#include "chain.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "log.h"

static const char *const phase_names[KR_PHASE__COUNT] = {
    [KR_PHASE_PREFETCH] = "prefetch", [KR_PHASE_FETCH] = "fetch",
    [KR_PHASE_DIGEST] = "digest",     [KR_PHASE_CHANGE] = "change",
    [KR_PHASE_EXTRACT] = "extract",   [KR_PHASE_WRITE] = "write",
    [KR_PHASE_POST] = "post",
};

static const char *const state_names[] = {
    [KR_CHAIN_IDLE] = "idle",
    [KR_CHAIN_RUNNING] = "running",
    [KR_CHAIN_WAITING] = "waiting",
    [KR_CHAIN_DONE] = "done",
};

const char *kr_chain_phase_name(kr_phase_t phase) {
  return (unsigned)phase < KR_PHASE__COUNT ? phase_names[phase] : "?";
}

/* ---- building ------------------------------------------------------------ */

void kr_chain_init(kr_chain_t *c, kr_chain_finalize_fn finalize, void *ud) {
  memset(c, 0, sizeof *c);
  c->finalize = finalize;
  c->ud = ud;
}

int kr_chain_add(kr_chain_t *c, kr_processor_t *p) {
  if (c->built || !p || (unsigned)p->phase >= KR_PHASE__COUNT || (!p->run && !p->on_headers))
    return KR_EINVAL;
  if (c->n == KR_CHAIN_MAX_PROCS) return KR_ETOOBIG;
  c->procs[c->n++] = p;
  return 0;
}

int kr_chain_build(kr_chain_t *c) {
  if (c->built) return KR_EINVAL;
  /* Stable insertion sort by phase: at most 64 entries, once. */
  for (size_t i = 1; i < c->n; i++) {
    kr_processor_t *p = c->procs[i];
    size_t j = i;
    while (j > 0 && c->procs[j - 1]->phase > p->phase) {
      c->procs[j] = c->procs[j - 1];
      j--;
    }
    c->procs[j] = p;
  }
  size_t k = 0;
  for (int ph = 0; ph <= KR_PHASE__COUNT; ph++) {
    while (k < c->n && (int)c->procs[k]->phase < ph) k++;
    c->phase_start[ph] = (uint32_t)k;
  }
  c->phase_start[KR_PHASE__COUNT] = (uint32_t)c->n;
  /* One offset per context definition, shared by its processors. */
  for (size_t i = 0; i < c->n; i++) {
    kr_processor_t *p = c->procs[i];
    p->index = (uint32_t)i;
    if (!p->ctx) continue;
    size_t d = 0;
    while (d < c->n_ctx && c->ctx_defs[d] != p->ctx) d++;
    if (d == c->n_ctx) {
      if (c->n_ctx == KR_CHAIN_MAX_CTX) return KR_ETOOBIG;
      c->ctx_defs[d] = p->ctx;
      c->ctx_offs[d] = (uint32_t)c->ctx_size;
      c->ctx_size += (p->ctx->size + 15) & ~(size_t)15; /* aligned for any member */
      c->n_ctx++;
    }
    p->ctx_off = c->ctx_offs[d];
  }
  c->matcher = kr_config_matcher_new();
  c->built = 1;
  return 0;
}

void kr_chain_free(kr_chain_t *c) {
  KR_BUG_ON(c->in_flight != 0);
  kr_config_matcher_free(c->matcher);
  c->matcher = NULL;
}

/* ---- contexts ----------------------------------------------------------------- */

void kr_chain_fetch_setup(kr_chain_t *c, kr_chain_fetch_t *f) {
  KR_BUG_ON(!c->built);
  f->chain = c;
  f->ctx = c->ctx_size ? kr_xcalloc(1, c->ctx_size) : NULL;
  for (size_t k = 0; k < c->n_ctx; k++)
    if (c->ctx_defs[k]->init) c->ctx_defs[k]->init((char *)f->ctx + c->ctx_offs[k], c->ud);
}

void kr_chain_fetch_recycle(kr_chain_fetch_t *f) {
  kr_chain_t *c = f->chain;
  for (size_t k = 0; k < c->n_ctx; k++)
    if (c->ctx_defs[k]->reset) c->ctx_defs[k]->reset((char *)f->ctx + c->ctx_offs[k], c->ud);
}

size_t kr_chain_fetch_mem(const kr_chain_fetch_t *f) {
  const kr_chain_t *c = f->chain;
  size_t n = c->ctx_size;
  for (size_t k = 0; k < c->n_ctx; k++)
    if (c->ctx_defs[k]->mem) n += c->ctx_defs[k]->mem((const char *)f->ctx + c->ctx_offs[k]);
  return n;
}

void kr_chain_fetch_teardown(kr_chain_fetch_t *f) {
  kr_chain_t *c = f->chain;
  if (!c) return;
  for (size_t k = 0; k < c->n_ctx; k++)
    if (c->ctx_defs[k]->free) c->ctx_defs[k]->free((char *)f->ctx + c->ctx_offs[k], c->ud);
  free(f->ctx);
  f->ctx = NULL;
}

/* ---- filters ----------------------------------------------------------------- */

/* host equals want or ends with "." want, ASCII case-insensitively. */
static int host_matches(kr_slice_t host, const char *want) {
  size_t wn = strlen(want);
  if (host.n < wn) return 0;
  const char *tail = host.p + host.n - wn;
  if (strncasecmp(tail, want, wn) != 0) return 0;
  return host.n == wn || tail[-1] == '.';
}

int kr_chain_filter_match(kr_chain_t *c, const kr_processor_t *p,
                          const kr_chain_fetch_t *f) {
  if (p->host && !host_matches(f->host, p->host)) return 0;
  /* A match that hits the PCRE2 limits counts as no match. */
  if (p->url_re && kr_config_regex_match(c->matcher, p->url_re, f->url, f->url_len) != 1)
    return 0;
  if (p->ctype_re) {
    if (!f->content_type.n) return 0;
    if (kr_config_regex_match(c->matcher, p->ctype_re, f->content_type.p,
                              f->content_type.n) != 1)
      return 0;
  }
  return 1;
}

/* ---- the state machine and the walk -------------------------------------------- */

static void set_state(kr_chain_fetch_t *f, kr_chain_state_t to) {
  KR_LOG(KR_LOG_DEBUG, f->url, "chain: %s -> %s at %u", state_names[f->state],
         state_names[to], f->pos);
  f->state = (uint8_t)to;
}

void kr_chain_fetch_init(kr_chain_t *c, kr_chain_fetch_t *f, const char *url,
                         size_t url_len, kr_slice_t host) {
  KR_BUG_ON(!c->built || (c->ctx_size && (!f->ctx || f->chain != c)));
  void *ctx = f->ctx;
  memset(f, 0, sizeof *f);
  f->ctx = ctx;
  f->chain = c;
  f->url = url;
  f->url_len = url_len;
  f->host = host;
  f->state = KR_CHAIN_IDLE;
}

static void fail(kr_chain_fetch_t *f, int err) {
  if (!f->err) f->err = err;
  uint32_t post = f->chain->phase_start[KR_PHASE_POST];
  if (f->pos < post) f->pos = post;
}

/* The one exit of a fetch. */
static void finalize(kr_chain_fetch_t *f) {
  kr_chain_t *c = f->chain;
  /* Stream state of every processor that saw the headers goes first. */
  uint64_t m = f->headers_mask;
  f->headers_mask = 0;
  memset(f->stream_mask, 0, sizeof f->stream_mask);
  memset(f->holder, 0, sizeof f->holder);
  while (m) {
    int i = __builtin_ctzll(m);
    m &= m - 1;
    kr_processor_t *p = c->procs[i];
    if (p->cleanup) p->cleanup(f, p);
  }
  set_state(f, KR_CHAIN_DONE);
  c->finished++;
  c->in_flight--;
  c->finalize(f, c->ud);
}

/* Run processors from f->pos until one suspends or the array ends. */
static void walk(kr_chain_fetch_t *f) {
  kr_chain_t *c = f->chain;
  uint32_t post = c->phase_start[KR_PHASE_POST];
  while (f->pos < c->n) {
    kr_processor_t *p = c->procs[f->pos];
    if (!p->run || !kr_chain_filter_match(c, p, f)) {
      if (p->run) p->filtered++;
      f->pos++;
      continue;
    }
    p->runs++;
    f->resumed = 0;
    f->in_run = 1;
    int rc = p->run(f, p);
    f->in_run = 0;
    if (rc == KR_PROC_ASYNC) {
      p->async++;
      if (f->resumed) {
        /* Completed before run returned: resume already moved pos. */
        f->resumed = 0;
        continue;
      }
      set_state(f, KR_CHAIN_WAITING);
      return;
    }
    KR_BUG_ON(f->resumed); /* resumed, then claimed it was not async */
    if (rc == KR_PROC_NEXT) {
      f->pos++;
    } else if (rc == KR_PROC_SKIP_TO_POST) {
      f->pos = f->pos < post ? post : f->pos + 1;
    } else if (rc == KR_PROC_SKIP_TO_WRITE) {
      uint32_t write = c->phase_start[KR_PHASE_WRITE];
      f->pos = f->pos < write ? write : f->pos + 1;
    } else if (rc < 0) {
      p->errors++;
      KR_LOG(KR_LOG_DEBUG, f->url, "chain: %s failed: %s", p->name, kr_err_name(rc));
      if (f->pos >= post) {
        if (!f->err) f->err = rc;
        f->pos++;
      } else {
        fail(f, rc);
      }
    } else {
      KR_BUG_ON(1); /* unknown return value */
    }
  }
  finalize(f);
}

void kr_chain_start(kr_chain_fetch_t *f) {
  KR_BUG_ON(f->state != KR_CHAIN_IDLE);
  f->chain->started++;
  f->chain->in_flight++;
  f->pos = 0;
  set_state(f, KR_CHAIN_RUNNING);
  walk(f);
}

/* The processor at f->pos completed its I/O with err. */
static void advance(kr_chain_fetch_t *f, int err) {
  uint32_t post = f->chain->phase_start[KR_PHASE_POST];
  if (err < 0 && f->pos < post) {
    fail(f, err);
  } else {
    if (err < 0 && !f->err) f->err = err;
    f->pos++;
  }
}

void kr_chain_resume(kr_chain_fetch_t *f, int err) {
  if (f->in_run) {
    /* From inside run: note it, walk() continues when run returns. */
    KR_BUG_ON(f->state != KR_CHAIN_RUNNING || f->resumed);
    f->resumed = 1;
    advance(f, err);
    return;
  }
  KR_BUG_ON(f->state != KR_CHAIN_WAITING);
  set_state(f, KR_CHAIN_RUNNING);
  advance(f, err);
  walk(f);
}

/* ---- streaming ------------------------------------------------------------------ */

void kr_chain_headers(kr_chain_fetch_t *f) {
  kr_chain_t *c = f->chain;
  KR_BUG_ON(f->state == KR_CHAIN_DONE || f->state == KR_CHAIN_IDLE);
  for (size_t i = 0; i < c->n; i++) {
    kr_processor_t *p = c->procs[i];
    uint64_t bit = 1ull << i;
    if (!p->on_headers || (f->headers_mask & bit)) continue;
    if (!kr_chain_filter_match(c, p, f)) continue;
    f->headers_mask |= bit;
    unsigned want = (unsigned)p->on_headers(f, p);
    if (!p->on_body) continue;
    for (int l = 0; l < KR_STREAM__COUNT; l++)
      if (want & KR_STREAM_BIT(l)) f->stream_mask[l] |= bit;
  }
}

void kr_chain_body(kr_chain_fetch_t *f, kr_stream_level_t level, const char *p, size_t n) {
  kr_chain_t *c = f->chain;
  uint64_t m = f->stream_mask[level];
  while (m) {
    int i = __builtin_ctzll(m);
    m &= m - 1;
    kr_processor_t *pr = c->procs[i];
    if (pr->on_body(f, pr, level, p, n)) {
      f->stream_mask[level] &= ~(1ull << i);
      if (f->holder[level] == i + 1) f->holder[level] = 0;
    }
  }
}

void kr_chain_hold(kr_chain_fetch_t *f, kr_processor_t *self, kr_stream_level_t level) {
  KR_BUG_ON(!self->held || self->index >= f->chain->n || f->chain->procs[self->index] != self);
  f->holder[level] = (uint8_t)(self->index + 1);
}

int kr_chain_held(kr_chain_fetch_t *f, kr_stream_level_t level, uint64_t from, uint64_t to,
                  kr_slice_t *out) {
  unsigned h = f->holder[level];
  if (!h) return 0;
  kr_processor_t *p = f->chain->procs[h - 1];
  return p->held(f, p, level, from, to, out);
}
